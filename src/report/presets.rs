//! Tables in the shape of the source experiments, printed after the summary
//! when a scenario or preset asks for one (`table = ...`), plus the load
//! evidence of each phase, as report blocks (tables, and lines laid out in
//! advance as [`Block::Pre`]). Pure functions of the result model.
//!
//! - `verdict` (preset quick): one line per phase: max, p99.9, overruns.
//! - `bins` (seed 001): sample counts per fixed-width latency bin (5 000 ns
//!   in the source), one column per phase; the timer probe's only when it ran. A histogram bucket is counted in
//!   the bin holding its lower bound; rtscope's buckets are at most 0.1 % wide,
//!   so at most a few ns of a bin boundary are ambiguous.
//! - `max-avg-sd` (seed 004): per probe and period, max and avg ± σ for each
//!   phase, idle first.
//! - `per-period` (seed 002): one row per period, probe and phase.
//! - `idle-vs-load` (seed 000): one row per phase, worst case (max) first,
//!   with its ratio to the idle phase's max.
//!
//! Only the merged rows (all measuring threads of a probe) are used.

use crate::model::{Nanos, ProbeResult, Run};
use crate::plan::Table;
use crate::report::blocks::{Block, Table as BlockTable, Unit, UNKNOWN};
use crate::report::term::pct;
use crate::units::fmt_ns;

/// The table `table` asks for, then the load evidence (none when the run
/// had no loads and the table is the plain summary).
pub(crate) fn blocks(run: &Run, table: Table, bin_ns: u64, u: Unit, deadline: Option<Nanos>) -> Vec<Block> {
    let mut s = match table {
        Table::Summary => Vec::new(),
        Table::Verdict => verdict(run, u, deadline).into_iter().collect(),
        Table::Bins => bins(run, bin_ns),
        Table::MaxAvgSd => max_avg_sd(run, u).into_iter().collect(),
        Table::PerPeriod => per_period(run, u).into_iter().collect(),
        Table::IdleVsLoad => idle_vs_load(run, u),
        Table::Rhealstone => suite("Rhealstone (Kar & Porter 1989)", crate::report::blocks::rhealstone_table(&crate::analysis::suites::rhealstone(run), u)),
        Table::ThreadMetric => suite("Thread-Metric", crate::report::blocks::thread_metric_table(&crate::analysis::suites::thread_metric(run))),
    };
    s.extend(load_evidence(run));
    s
}

/// A suite's table under its title, or a line saying the run has none of it.
fn suite(title: &str, t: Option<BlockTable>) -> Vec<Block> {
    match t {
        Some(t) => vec![Block::Caption(title.into()), Block::Table(t)],
        None => vec![Block::Pre(format!("\n{title}: no entry of the suite in this run\n"))],
    }
}

fn merged(run: &Run) -> impl Iterator<Item = &ProbeResult> {
    run.results.iter().filter(|r| r.thread.is_none())
}

/// (probe, variant, period) groups in the order they first appear.
fn groups(run: &Run) -> Vec<(String, Option<String>, Nanos)> {
    let g = crate::units::first_seen(merged(run).map(|r| (r.probe.clone(), r.variant.clone(), r.interval_ns)));
    g
}

fn find<'a>(run: &'a Run, g: &(String, Option<String>, Nanos), phase: &str) -> Option<&'a ProbeResult> {
    merged(run).find(|r| r.probe == g.0 && r.variant == g.1 && r.interval_ns == g.2 && r.phase == phase)
}

fn label(g: &(String, Option<String>, Nanos)) -> String {
    match &g.1 {
        Some(v) => format!("{} {} @{}", g.0, v, fmt_ns(g.2 .0)),
        None => format!("{} @{}", g.0, fmt_ns(g.2 .0)),
    }
}

/// p99.9, or [`UNKNOWN`] for a result without percentiles (summary-only imports).
fn p999(r: &ProbeResult, u: Unit) -> String {
    pct(r, "99.9", u)
}

/// A table from a header row and rows: first column left-aligned, the
/// others right-aligned; none without a header row.
fn grid(rows: &[Vec<String>]) -> Option<Block> {
    rows.split_first().map(|(header, rest)| Block::Table(BlockTable::plain(header.clone(), 1, rest.to_vec())))
}

/// Lines as a preformatted block; none when there are none.
fn pre(lines: String) -> Option<Block> {
    (!lines.is_empty()).then_some(Block::Pre(lines))
}

/// One line per phase and probe run: max, p99.9, overruns. With a deadline
/// the line is a verdict: PASS when no sample was over it and no period was
/// missed, FAIL when a period missed it (a late sample or a missed period,
/// both counted), NO VERDICT when the source cannot count missed periods. Without one there is no bound to judge by: the
/// lines are a summary and say how to get a verdict.
pub(crate) fn verdict(run: &Run, u: Unit, deadline: Option<Nanos>) -> Option<Block> {
    let un = u.name();
    let mut out = String::new();
    for phase in &run.plan.phases {
        for g in groups(run) {
            if let Some(r) = find(run, &g, phase) {
                let numbers = format!(
                    "max {} {un}, p99.9 {} {un}, overruns {} ({} samples)",
                    u.fmt(r.max_ns.0 as f64),
                    p999(r, u),
                    r.known_overruns().map(|o| o.to_string()).unwrap_or_else(|| "unknown".into()),
                    r.samples
                );
                let Some(d) = deadline else {
                    out.push_str(&format!("summary {phase}: {}: {numbers}\n", label(&g)));
                    continue;
                };
                let m = crate::analysis::deadline::misses(r, d);
                let dl = format!("{} {un}", u.fmt(d.0 as f64));
                let judged = if m.misses > 0 {
                    format!("FAIL: {}", m.sentence(&dl))
                } else if !m.complete {
                    format!("NO VERDICT: no late sample, but missed periods are unknown (the source does not count them): {}", m.sentence(&dl))
                } else {
                    format!("PASS: no sample over the {dl} deadline and no missed period")
                };
                out.push_str(&format!("verdict {phase}: {}: {judged}; {numbers}\n", label(&g)));
            }
        }
    }
    if deadline.is_none() && !out.is_empty() {
        out.push_str("no verdict without a bound: give --deadline (e.g. --deadline 100us) for PASS/FAIL per phase\n");
    }
    pre(out)
}

/// Most bins a table shows; the last row then holds everything above.
const MAX_BIN_ROWS: u64 = 20;

/// Seed 001's table: counts per `bin_ns`-wide latency bin, a column per phase.
pub(crate) fn bins(run: &Run, bin_ns: u64) -> Vec<Block> {
    let bin_ns = bin_ns.max(1);
    let mut out = Vec::new();
    // As in the source, the bin table is the timer's (interrupt latency);
    // other probes are in the summary. Without timer results, every probe's.
    let mut gs = groups(run);
    if gs.iter().any(|g| g.0 == "timer") {
        gs.retain(|g| g.0 == "timer");
    }
    for g in gs {
        let cols: Vec<(&String, &ProbeResult)> = run.plan.phases.iter().filter_map(|p| find(run, &g, p).map(|r| (p, r))).collect();
        if cols.is_empty() {
            continue;
        }
        let top = cols.iter().map(|(_, r)| r.max_ns.0 / bin_ns).max().unwrap_or(0);
        let last = top.min(MAX_BIN_ROWS - 1);
        let mut rows = vec![std::iter::once(format!("{} latency (ns)", label(&g))).chain(cols.iter().map(|(p, _)| p.to_string())).collect::<Vec<_>>()];
        for b in 0..=last {
            let name = if b == last && top > last { format!(">= {}", b * bin_ns) } else { format!("{}-{}", b * bin_ns, (b + 1) * bin_ns - 1) };
            let mut row = vec![name];
            for (_, r) in &cols {
                let n: u64 = r
                    .histogram
                    .iter()
                    .filter(|k| {
                        let kb = k.lo_ns.0 / bin_ns;
                        kb == b || (b == last && kb > last)
                    })
                    .map(|k| k.count)
                    .sum();
                row.push(n.to_string());
            }
            rows.push(row);
        }
        let mut total = vec!["total".to_string()];
        total.extend(cols.iter().map(|(_, r)| r.samples.to_string()));
        rows.push(total);
        let mut over = vec!["overruns".to_string()];
        over.extend(cols.iter().map(|(_, r)| r.overruns.to_string()));
        rows.push(over);
        out.extend(grid(&rows));
    }
    out
}

/// Seed 004's table: max and avg ± σ per probe run, phases side by side.
pub(crate) fn max_avg_sd(run: &Run, u: Unit) -> Option<Block> {
    let un = u.name();
    let mut head = vec![format!("({un})")];
    for p in &run.plan.phases {
        head.push(format!("{p} max"));
        head.push(format!("{p} avg ± σ"));
    }
    let mut rows = vec![head];
    for g in groups(run) {
        let mut row = vec![label(&g)];
        for p in &run.plan.phases {
            match find(run, &g, p) {
                Some(r) => {
                    row.push(u.fmt(r.max_ns.0 as f64));
                    row.push(format!("{} ± {}", u.fmt(r.mean_ns), sd(r, u)));
                }
                None => row.extend([UNKNOWN.to_string(), UNKNOWN.to_string()]),
            }
        }
        rows.push(row);
    }
    if rows.len() == 1 {
        return None;
    }
    grid(&rows)
}

/// Seed 002's table: a row per period (and probe and phase).
pub(crate) fn per_period(run: &Run, u: Unit) -> Option<Block> {
    let un = u.name();
    let mut rows = vec![["period", "probe", "phase", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .chain(["min", "avg", "max", "σ", "jitter"].iter().map(|s| format!("{s}({un})")))
        .collect::<Vec<_>>()];
    let mut gs = groups(run);
    gs.sort_by_key(|g| g.2);
    for g in gs {
        for p in &run.plan.phases {
            if let Some(r) = find(run, &g, p) {
                rows.push(vec![
                    fmt_ns(g.2 .0),
                    match &g.1 {
                        Some(v) => format!("{} {v}", g.0),
                        None => g.0.clone(),
                    },
                    p.clone(),
                    r.samples.to_string(),
                    r.overruns.to_string(),
                    u.fmt(r.min_ns.0 as f64),
                    u.fmt(r.mean_ns),
                    u.fmt(r.max_ns.0 as f64),
                    sd(r, u),
                    u.fmt(r.max_ns.0.saturating_sub(r.min_ns.0) as f64),
                ]);
            }
        }
    }
    if rows.len() == 1 {
        return None;
    }
    grid(&rows)
}

/// Seed 000's table: per probe run, a row per phase, worst case first, with
/// the ratio of each phase's max to the idle phase's.
pub(crate) fn idle_vs_load(run: &Run, u: Unit) -> Vec<Block> {
    let un = u.name();
    let mut out = Vec::new();
    for g in groups(run) {
        let mut rs: Vec<&ProbeResult> = run.plan.phases.iter().filter_map(|p| find(run, &g, p)).collect();
        if rs.is_empty() {
            continue;
        }
        let idle_max = rs.iter().find(|r| r.phase == "idle").map(|r| r.max_ns.0);
        rs.sort_by_key(|r| std::cmp::Reverse(r.max_ns));
        let mut rows =
            vec![vec![label(&g), format!("max({un})"), "x idle".into(), format!("p99.9({un})"), format!("avg({un})"), format!("σ({un})"), "overruns".into()]];
        for r in rs {
            rows.push(vec![
                r.phase.clone(),
                u.fmt(r.max_ns.0 as f64),
                match idle_max {
                    Some(i) if i > 0 => format!("{:.2}", r.max_ns.0 as f64 / i as f64),
                    _ => UNKNOWN.into(),
                },
                p999(r, u),
                u.fmt(r.mean_ns),
                sd(r, u),
                r.overruns.to_string(),
            ]);
        }
        out.extend(grid(&rows));
    }
    out
}

/// One line per load (the evidence that it ran) and one per phase (the
/// system-wide counters; idle's are the baseline).
pub(crate) fn load_evidence(run: &Run) -> Option<Block> {
    let mut out = String::new();
    // Nothing to compare without a loaded phase.
    if run.phases.iter().all(|p| p.loads.is_empty()) {
        return None;
    }
    for p in &run.phases {
        for l in &p.loads {
            // Volumes in human units; other counters as counted.
            let counters: Vec<String> = l
                .evidence
                .counters
                .iter()
                .map(|(k, v)| if k.contains("bytes") { format!("{k} {}", crate::units::fmt_bytes(*v)) } else { format!("{k} {v}") })
                .collect();
            out.push_str(&format!(
                "load {}/{} ({}, {} worker(s)): {:.2} CPU s, {} ctx switches, {} faults{}{}\n",
                p.name,
                l.name,
                l.engine,
                l.workers,
                l.evidence.cpu_s,
                l.evidence.voluntary_ctxt_switches + l.evidence.involuntary_ctxt_switches,
                l.evidence.minor_faults + l.evidence.major_faults,
                if l.evidence.storage_bytes_written > 0 {
                    format!(", {} to storage", crate::units::fmt_bytes(l.evidence.storage_bytes_written))
                } else {
                    String::new()
                },
                if counters.is_empty() { String::new() } else { format!(", {}", counters.join(", ")) }
            ));
        }
        out.push_str(&format!(
            "phase {}: {} interrupts, {} context switches, {} loopback packets over {:.1} s\n",
            p.name,
            p.system.interrupts,
            p.system.context_switches,
            p.system.loopback_tx_packets,
            p.system.duration_ns.as_secs_f64()
        ));
    }
    pre(out)
}

/// σ, or [`UNKNOWN`] where the source did not give it (`ProbeResult::stddev`).
fn sd(r: &crate::model::ProbeResult, u: Unit) -> String {
    r.stddev().map_or_else(|| UNKNOWN.to_string(), |s| u.fmt(s))
}
