//! The end-of-run summary table: one row per measuring thread and one merged
//! row per probe/phase/variant, latencies in µs with one decimal (or ns).

use crate::model::{Nanos, ProbeResult, Run};

/// Format a latency for the table.
pub fn fmt_latency(ns: f64, in_ns: bool) -> String {
    if in_ns {
        format!("{:.0}", ns)
    } else {
        format!("{:.1}", ns / 1000.0)
    }
}

fn pct(r: &ProbeResult, key: &str) -> f64 {
    r.percentiles_ns.get(key).copied().unwrap_or(Nanos(0)).0 as f64
}

/// The summary table as text (no colour, fixed-width columns).
pub fn summary_table(run: &Run, in_ns: bool) -> String {
    let unit = if in_ns { "ns" } else { "us" };
    let header: Vec<String> = ["probe", "variant", "phase", "thread", "cpu", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .chain(["min", "avg", "p50", "p99", "p99.9", "max"].iter().map(|s| format!("{s}({unit})")))
        .collect();
    let mut rows: Vec<Vec<String>> = vec![header];
    for r in &run.results {
        rows.push(vec![
            r.probe.clone(),
            r.variant.clone().unwrap_or_else(|| "-".into()),
            r.phase.clone(),
            r.thread.map(|t| t.to_string()).unwrap_or_else(|| "all".into()),
            r.cpu.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            r.samples.to_string(),
            r.overruns.to_string(),
            fmt_latency(r.min_ns.0 as f64, in_ns),
            fmt_latency(r.mean_ns, in_ns),
            fmt_latency(pct(r, "50"), in_ns),
            fmt_latency(pct(r, "99"), in_ns),
            fmt_latency(pct(r, "99.9"), in_ns),
            fmt_latency(r.max_ns.0 as f64, in_ns),
        ]);
    }
    let ncol = rows[0].len();
    let widths: Vec<usize> = (0..ncol).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| if c < 3 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
