//! The benchmark suites' tables: Rhealstone (Kar & Porter 1989) and
//! Thread-Metric, in the shapes their papers publish.

use super::{Table, Unit, UNKNOWN};

/// "12 345 678" (thousands apart, as published Thread-Metric tables).
pub(crate) fn fmt_count(x: f64) -> String {
    let s = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(ch);
    }
    out
}

/// The Rhealstone table of a run, in the suite's shape: one row per
/// component (the paper's order), one column per phase with the mean time,
/// then the composite figure (Rhealstones per second) per phase; the entry
/// each component was measured with is named.
pub(crate) fn rhealstone_table(phases: &[crate::analysis::suites::RhealstonePhase], u: Unit) -> Option<Table> {
    use crate::model::suites::RHEALSTONE;
    if phases.is_empty() {
        return None;
    }
    let mut header = vec!["component".to_string(), "measured as".to_string()];
    header.extend(phases.iter().map(|p| format!("{} mean ({})", p.phase, u.name())));
    let mut rows: Vec<Vec<String>> = RHEALSTONE
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let entry = phases.iter().find_map(|p| p.components[k].as_ref().map(|x| x.entry.clone()));
            let mut row = vec![c.metric.to_string(), entry.unwrap_or_else(|| UNKNOWN.into())];
            row.extend(phases.iter().map(|p| p.components[k].as_ref().map(|x| u.fmt(x.mean_ns)).unwrap_or_else(|| UNKNOWN.into())));
            row
        })
        .collect();
    let mut composite = vec!["Rhealstones per second".to_string(), "1 / mean of the six".to_string()];
    composite.extend(phases.iter().map(|p| p.per_second.map(fmt_count).unwrap_or_else(|| UNKNOWN.into())));
    rows.push(composite);
    Some(Table::plain(header, 2, rows))
}

/// The Thread-Metric table of a run: one row per test (the suite's order)
/// and phase: ops per interval (mean), intervals, spread, ops per second.
pub(crate) fn thread_metric_table(rows: &[crate::analysis::suites::ThreadMetricRow]) -> Option<Table> {
    if rows.is_empty() {
        return None;
    }
    let header = ["test", "phase", "ops / interval", "interval", "intervals", "spread %", "ops / s"].map(String::from).to_vec();
    let rows = rows
        .iter()
        .map(|t| {
            vec![
                t.test.to_string(),
                t.phase.clone(),
                fmt_count(t.mean_per_interval),
                crate::units::fmt_ns(t.interval_ns.0),
                t.intervals.to_string(),
                format!("{:.1}", t.spread_pct),
                fmt_count(t.ops_per_s),
            ]
        })
        .collect();
    Some(Table::plain(header, 2, rows))
}
