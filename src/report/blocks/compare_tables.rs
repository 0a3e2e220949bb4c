//! The tables of a comparison: entry × metric with a ratio column per
//! system, the bin tables, and Thread-Metric's ops per second side by side.

use super::{fmt_count, Cell, Table, Tone, Unit, UNKNOWN};
use crate::analysis::compare::{fmt_ratio, Cell as CmpCell};
use crate::analysis::summary::Analysis;
use crate::model::Nanos;

fn ratio_cell(r: Option<f64>) -> Cell {
    match r {
        None => Cell::tone(UNKNOWN, Tone::Dim),
        Some(r) if !r.is_finite() => Cell::tone("inf", Tone::Bad),
        Some(r) => Cell::tone(
            fmt_ratio(r),
            if r > 1.005 {
                Tone::Bad
            } else if r < 0.995 {
                Tone::Good
            } else {
                Tone::Plain
            },
        ),
    }
}

/// The comparison table: rows entry × metric, one column per system and a
/// "X/first" ratio column after every system but the first.
pub(crate) fn compare_table(a: &Analysis, u: Unit) -> Table {
    let c = &a.comparison;
    let mut header = vec!["entry".to_string(), "metric".to_string()];
    let mut keys = Vec::new();
    for (i, s) in c.systems.iter().enumerate() {
        keys.push((header.len(), format!("#{}", i + 1)));
        header.push(s.clone());
        if i > 0 {
            header.push(ratio_header(&c.systems, i));
        }
    }
    let mut rows = Vec::new();
    type Getter = fn(&CmpCell, Unit) -> String;
    type RatioGetter = fn(&CmpCell) -> Option<f64>;
    let metrics: [(&str, Getter, RatioGetter); 6] = [
        ("p50", |c, u| fmt_known(c, "p50", c.p50_ns, u), |c| c.ratio_to_first.as_ref().and_then(|r| r.p50)),
        ("p99", |c, u| fmt_known(c, "p99", c.p99_ns, u), |c| c.ratio_to_first.as_ref().and_then(|r| r.p99)),
        ("p99.9", |c, u| fmt_known(c, "p99.9", c.p99_9_ns, u), |c| c.ratio_to_first.as_ref().and_then(|r| r.p99_9)),
        ("max", |c, u| u.fmt_n(c.max_ns), |c| c.ratio_to_first.as_ref().map(|r| r.max)),
        (
            "mean±σ",
            |c, u| format!("{}±{}", u.fmt(c.mean_ns), c.stddev_ns.map_or_else(|| UNKNOWN.to_string(), |s| u.fmt(s))),
            |c| c.ratio_to_first.as_ref().and_then(|r| r.mean),
        ),
        ("overruns", |c, _| if c.overruns_unknown { "unknown".into() } else { c.overruns.to_string() }, |_| None),
    ];
    for row in &c.rows {
        for (mi, (m, get, rget)) in metrics.iter().enumerate() {
            let mut cells = vec![
                Cell::plain(if mi == 0 { row.key.label() } else { String::new() }),
                Cell::plain(if *m == "overruns" { m.to_string() } else { format!("{m}({})", u.name()) }),
            ];
            for (i, cell) in row.cells.iter().enumerate() {
                cells.push(match cell {
                    Some(c) => Cell::plain(get(c, u)),
                    None => Cell::tone("missing", Tone::Dim),
                });
                if i > 0 {
                    // A ratio of bounds is a range, never a measured ratio.
                    let range = cell.as_ref().and_then(|c| c.ratio_to_first.as_ref()).and_then(|r| r.range(m)).cloned();
                    cells.push(match range {
                        Some(g) => Cell::tone(crate::analysis::compare::fmt_ratio_shown(g.hi, Some(&g)), Tone::Plain),
                        None => ratio_cell(cell.as_ref().and_then(rget)),
                    });
                }
            }
            rows.push(cells);
        }
        let mut cells = vec![Cell::plain(""), Cell::plain("samples")];
        for (i, cell) in row.cells.iter().enumerate() {
            cells.push(Cell::plain(cell.as_ref().map(|c| c.samples.to_string()).unwrap_or_else(|| UNKNOWN.into())));
            if i > 0 {
                cells.push(match cell.as_ref().and_then(|c| c.ks_vs_first.as_ref()) {
                    Some(t) if t.material() => Cell::tone(format!("KS D={:.3} differ", t.d), Tone::Bad),
                    Some(t) if t.distinguishable => Cell::tone(format!("KS D={:.3} small", t.d), Tone::Plain),
                    Some(t) => Cell::tone(format!("KS D={:.3} same", t.d), Tone::Good),
                    None => Cell::tone(UNKNOWN, Tone::Dim),
                });
            }
        }
        rows.push(cells);
    }
    // Narrow: the systems as keys first; then the ratio columns, the last
    // system's first (its values stay).
    let mut t = Table::new(header, 2, rows).with_keys(keys);
    t.optional = (4..t.header.len()).step_by(2).rev().collect();
    t
}

/// A percentile, or [`UNKNOWN`] where the source gave none (summary-only import);
/// a bound (`≥ X`) where its bucket is wide.
fn fmt_known(c: &CmpCell, label: &str, v: Option<Nanos>, u: Unit) -> String {
    match c.bounds.iter().find(|p| p.label == label) {
        Some(p) => p.shown(|v| u.fmt_n(v)),
        None => v.map(|v| u.fmt_n(v)).unwrap_or_else(|| UNKNOWN.into()),
    }
}

/// The header of system `i`'s ratio column: "B/A" of the systems' first
/// words; where those do not tell the systems apart or are long, "ratio"
/// beside the one other system, else "#i/#1".
fn ratio_header(systems: &[String], i: usize) -> String {
    let short = |s: &str| s.split_whitespace().next().unwrap_or(s).to_string();
    let words: Vec<String> = systems.iter().map(|s| short(s)).collect();
    // Names that tell the systems apart and are short enough for a header.
    if words.iter().enumerate().all(|(a, w)| words[a + 1..].iter().all(|x| x != w)) && words[i].len() + words[0].len() <= 16 {
        format!("{}/{}", words[i], words[0])
    } else if systems.len() == 2 {
        "ratio".into()
    } else {
        format!("#{}/#1", i + 1)
    }
}

/// One bin table (seed 001): one row per bin, one count column per system.
pub(crate) fn bin_table(a: &Analysis, index: usize, u: Unit) -> Table {
    let t = &a.comparison.bin_tables[index];
    let mut header = vec![format!("bin({})", u.name())];
    header.extend(a.comparison.systems.iter().cloned());
    let rows = t
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![Cell::plain(format!("{}-{}", u.fmt_n(r.lo_ns), u.fmt_n(r.hi_ns)))];
            row.extend(r.counts.iter().map(|c| match c {
                Some(c) => Cell::plain(c.to_string()),
                None => Cell::tone(UNKNOWN, Tone::Dim),
            }));
            row
        })
        .collect();
    Table::new(header, 1, rows)
}

/// The comparison's throughput rows (Thread-Metric): ops per second per
/// system and each system's ratio to the first; `None` without any.
pub(crate) fn throughput_compare_table(a: &Analysis) -> Option<Table> {
    let c = &a.comparison;
    let rows = c.throughput_rows();
    if rows.is_empty() || c.systems.len() < 2 {
        return None;
    }
    let mut header = vec!["test".to_string(), "phase".to_string()];
    for (i, s) in c.systems.iter().enumerate() {
        header.push(format!("{s} ops/s"));
        if i > 0 {
            header.push(format!("{s} / {}", c.systems[0]));
        }
    }
    let body = rows
        .iter()
        .map(|row| {
            let mut cells = vec![Cell::plain(row.key.variant.clone().unwrap_or_else(|| row.key.probe.clone())), Cell::plain(row.key.phase.clone())];
            for (i, x) in row.cells.iter().enumerate() {
                cells.push(Cell::plain(x.as_ref().and_then(|x| x.ops_per_s).map(fmt_count).unwrap_or_else(|| UNKNOWN.into())));
                if i > 0 {
                    let r = x.as_ref().and_then(|x| x.ratio_to_first.as_ref()).and_then(|r| r.ops);
                    cells.push(match r {
                        Some(v) => Cell::tone(fmt_ratio(v), if v >= 1.0 { Tone::Good } else { Tone::Bad }),
                        None => Cell::plain(UNKNOWN),
                    });
                }
            }
            cells
        })
        .collect();
    Some(Table::new(header, 2, body))
}
