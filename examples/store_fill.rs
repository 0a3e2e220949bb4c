//! Fills a history database with copies of one result, for
//! `bench/store-history`: N runs spread over H hosts (`board-00`, …), one
//! minute apart, saved through the same `store::Store` that `rtscope run`
//! and `rtscope import` use (one transaction per run).
//!
//! Usage: cargo run --release --example store_fill -- DB RESULT.json N H
//! (DB: an SQLite path or a postgresql:// URL)

use std::path::Path;

use rtscope::store::{Location, Store};

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 5 {
        anyhow::bail!("usage: store_fill DB RESULT.json N HOSTS");
    }
    let (n, hosts): (usize, usize) = (a[3].parse()?, a[4].parse()?);
    let mut store = Store::open(&Location::resolve(Some(Path::new(&a[1])))?)?;
    let text = std::fs::read_to_string(&a[2])?;
    let base: rtscope::model::Run = serde_json::from_str(&text)?;
    let t0 = time::OffsetDateTime::parse("2026-01-01T00:00:00Z", &time::format_description::well_known::Rfc3339)?;
    let start = std::time::Instant::now();
    for i in 0..n {
        let mut run = base.clone();
        run.host.hostname = format!("board-{:02}", i % hosts);
        run.started_at = rtscope::units::rfc3339(t0 + time::Duration::minutes(i as i64));
        let json = serde_json::to_string(&run)?;
        store.save(&run, &json, "native")?;
    }
    eprintln!("saved {n} runs in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}
