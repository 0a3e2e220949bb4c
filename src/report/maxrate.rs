//! The max-rate table printed after the summary when `maxrate` ran (seed
//! 001's "max interrupt rate" table): one row per phase and period from the
//! merged entries: period, samples, overruns, missed-period ratio
//! (overruns / (samples + overruns): the share of periods that got no sample,
//! not a deadline miss ratio — that needs a deadline, see `--deadline`), p99,
//! max.

use super::blocks::{Block, Table, Unit};
use super::term::pct;
use crate::model::Run;

/// The table under its caption, or nothing when no `maxrate` result is in
/// the run.
pub(crate) fn blocks(run: &Run, u: Unit) -> Vec<Block> {
    let unit = u.name();
    let rows: Vec<Vec<String>> = run
        .results
        .iter()
        .filter(|r| r.thread.is_none() && crate::measure::is(&r.probe, |i| i.rate_search))
        .map(|r| {
            vec![
                r.phase.clone(),
                r.variant.clone().unwrap_or_default(),
                format!("{:.0}", 1e9 / r.interval_ns.0.max(1) as f64),
                r.samples.to_string(),
                r.overruns.to_string(),
                format!("{:.2} %", 100.0 * crate::stats::miss_ratio(r.overruns, r.periods())),
                pct(r, "99", u),
                u.fmt(r.max_ns.0 as f64),
            ]
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let header: Vec<String> = ["phase", "period", "rate(Hz)", "samples", "overruns", "missed periods"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("p99({unit})"), format!("max({unit})")])
        .collect();
    vec![Block::Caption("max sustainable rate (maxrate)".into()), Block::Table(Table::plain(header, 2, rows))]
}
