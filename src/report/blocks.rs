//! The report's content as layout-free blocks (headings, tables, text,
//! lists), built from the [`Analysis`] only. The term, Markdown and HTML
//! renderers lay the same blocks out, so the tables read the same in every
//! format; each renderer is `layout(blocks(analysis))`.
//!
//! Latencies are shown in µs with one decimal (or in ns with `--ns`); ratios
//! as "B/A" with two significant digits below 10.

use crate::analysis::compare::{fmt_ratio, Cell as CmpCell};
use crate::analysis::evt::Pwcet;
use crate::analysis::summary::{Analysis, EntryAnalysis, RunAnalysis};
use crate::model::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Us,
    Ns,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Us => "us",
            Unit::Ns => "ns",
        }
    }
    pub fn fmt(self, ns: f64) -> String {
        match self {
            Unit::Us => format!("{:.1}", ns / 1000.0),
            Unit::Ns => format!("{:.0}", ns),
        }
    }
    pub fn fmt_n(self, ns: Nanos) -> String {
        self.fmt(ns.0 as f64)
    }
}

/// How a cell should stand out where the renderer can show it (colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    /// Better than the first system / a passed check.
    Good,
    /// Worse than the first system / a miss / a refusal.
    Bad,
    Dim,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub tone: Tone,
}

impl Cell {
    pub fn plain(s: impl Into<String>) -> Cell {
        Cell { text: s.into(), tone: Tone::Plain }
    }
    pub fn tone(s: impl Into<String>, tone: Tone) -> Cell {
        Cell { text: s.into(), tone }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    /// Columns before this index are left-aligned (labels), the rest right-aligned.
    pub label_cols: usize,
    pub rows: Vec<Vec<Cell>>,
    /// Columns a narrow layout (an 80-column terminal) may leave out, the
    /// first first; the others are always shown.
    pub optional: Vec<usize>,
}

impl Table {
    /// A table of plain cells: `header`, then `rows`; the first `label_cols`
    /// columns left-aligned.
    pub fn plain(header: Vec<String>, label_cols: usize, rows: Vec<Vec<String>>) -> Table {
        Table::new(header, label_cols, rows.into_iter().map(|r| r.into_iter().map(Cell::plain).collect()).collect())
    }
    /// A table of which every column is always shown.
    pub fn new(header: Vec<String>, label_cols: usize, rows: Vec<Vec<Cell>>) -> Table {
        Table { header, label_cols, rows, optional: Vec::new() }
    }
    /// The columns named `names` (header text without a trailing "(unit)") may be left out
    /// in a narrow layout, in that order.
    pub fn optional(mut self, names: &[&str]) -> Table {
        let base = |h: &str| h.strip_suffix(')').and_then(|x| x.rsplit_once('(')).map(|(b, _)| b).unwrap_or(h).to_string();
        self.optional = names.iter().filter_map(|n| self.header.iter().position(|h| base(h) == *n)).collect();
        self
    }
}

/// What every table shows for a value it does not have (a percentile an
/// imported summary-only result lacks, a phase a run did not have).
pub const UNKNOWN: &str = "-";

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Level 1 (report), 2 (run / comparison), 3 (section).
    Heading(u8, String),
    Text(String),
    List(Vec<String>),
    Table(Table),
}

fn entry_label(e: &EntryAnalysis) -> Vec<Cell> {
    vec![
        Cell::plain(e.probe.clone()),
        Cell::plain(e.variant.clone().unwrap_or_else(|| "-".into())),
        Cell::plain(e.phase.clone()),
        Cell::plain(e.thread_label()),
        Cell::plain(e.cpu.map(|c| c.to_string()).unwrap_or_else(|| "-".into())),
    ]
}

fn p(e: &EntryAnalysis, label: &str, u: Unit) -> String {
    e.percentile_bound(label).map(|p| p.shown(|v| u.fmt_n(v))).unwrap_or_else(|| "-".into())
}

/// The summary table of one run.
pub fn summary_table(run: &RunAnalysis, u: Unit, with_deadline: bool) -> Table {
    let un = u.name();
    let mut header: Vec<String> = ["probe", "variant", "phase", "thread", "cpu", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(["min", "mean±σ", "p50", "p99", "p99.9", "p99.99", "max"].iter().map(|s| format!("{s}({un})")));
    if with_deadline {
        header.extend(["misses", "miss ratio", "P(miss)/h"].iter().map(|s| s.to_string()));
    }
    // Throughput entries (Thread-Metric) have their own table: ops, not latencies.
    let rows = run
        .entries
        .iter()
        .filter(|e| e.throughput.is_none())
        .map(|e| {
            let mut row = entry_label(e);
            row.push(Cell::plain(e.samples.to_string()));
            row.push(match e.known_overruns() {
                Some(o) => Cell::tone(o.to_string(), if o > 0 { Tone::Bad } else { Tone::Plain }),
                None => Cell::tone("unknown", Tone::Dim),
            });
            row.push(Cell::plain(u.fmt(e.shown_min_ns())));
            row.push(Cell::plain(format!("{}±{}", u.fmt(e.shown_mean_ns()), u.fmt(e.stddev_ns))));
            for l in ["p50", "p99", "p99.9", "p99.99"] {
                row.push(Cell::plain(p(e, l, u)));
            }
            row.push(Cell::plain(u.fmt_n(e.max_ns)));
            if with_deadline {
                match &e.deadline {
                    Some(d) => {
                        let bad = if d.misses_upper > 0 {
                            Tone::Bad
                        } else if !d.complete {
                            Tone::Plain
                        } else {
                            Tone::Good
                        };
                        row.push(Cell::tone(d.misses_cell(), bad));
                        row.push(Cell::tone(d.ratio_shown(), bad));
                        row.push(Cell::tone(
                            if d.rate_hz <= 0.0 {
                                // No period and no per-second series (an import): no rate.
                                "unknown".into()
                            } else if d.zero_observed {
                                format!("≤{}", fmt_prob(d.per_hour_probability))
                            } else {
                                fmt_prob(d.per_hour_probability)
                            },
                            bad,
                        ));
                    }
                    None => row.extend((0..3).map(|_| Cell::plain("-"))),
                }
            }
            row
        })
        .collect();
    // Narrow: the cyclictest columns stay (probe, phase, thread, samples,
    // overruns, p50, p99, p99.9, max). The deadline columns are never left
    // out: [`split_deadline`] puts them in a table of their own.
    Table::new(header, 5, rows).optional(&SUMMARY_OPTIONAL)
}

/// The summary's columns a narrow layout may leave out, in that order.
const SUMMARY_OPTIONAL: [&str; 5] = ["variant", "cpu", "p99.99", "min", "mean±σ"];

/// A summary table with deadline columns cut in two: the latencies (every
/// column up to `max`), and the deadline view — the entry's labels,
/// samples, overruns and every column after `max` (what `--deadline` asked
/// for), of which only `variant` and `cpu` may be left out. Each fits an
/// 80-column terminal and a 1280 px page; no asked-for column is dropped.
pub fn split_deadline(t: &Table) -> (Table, Table) {
    let max = t.header.iter().position(|h| h.starts_with("max(")).unwrap_or(t.header.len() - 1);
    let take = |cols: &[usize]| -> (Vec<String>, Vec<Vec<Cell>>) {
        (cols.iter().map(|&c| t.header[c].clone()).collect(), t.rows.iter().map(|r| cols.iter().filter_map(|&c| r.get(c).cloned()).collect()).collect())
    };
    let (h, r) = take(&(0..=max).collect::<Vec<_>>());
    let latencies = Table::new(h, t.label_cols, r).optional(&SUMMARY_OPTIONAL);
    let mut cols: Vec<usize> = (0..t.label_cols).collect();
    cols.extend(t.header.iter().position(|h| h == "samples"));
    cols.extend(t.header.iter().position(|h| h == "overruns"));
    cols.extend(max + 1..t.header.len());
    let (h, r) = take(&cols);
    (latencies, Table::new(h, t.label_cols, r).optional(&["variant", "cpu"]))
}

/// The deadline verdict of one entry, as `run --deadline` and `report
/// --deadline` print it: PASS when no sample was over the deadline and no
/// period was missed (a missed period is a miss), else FAIL and why.
/// Returns (passed, line).
pub fn deadline_verdict(label: &str, m: &crate::analysis::deadline::DeadlineMisses, u: Unit) -> (bool, String) {
    let dl = format!("{} {}", u.fmt_n(m.deadline_ns), u.name());
    match m.missed_periods {
        Some(0) if m.late_samples_upper == 0 => {
            (true, format!("PASS {label}: no sample over the {dl} deadline and no period missed ({} periods)", m.periods))
        }
        // A count the source cannot know: never a PASS.
        None if m.late_samples_upper == 0 => (
            false,
            format!("NO VERDICT {label}: no sample over the {dl} deadline, but the source cannot count missed periods ({} samples)", m.samples),
        ),
        _ => (false, format!("FAIL {label}: {}", m.sentence(&dl))),
    }
}

/// The verdict of every merged entry of a run with a deadline, worst
/// first line: "verdict: FAIL (1 of 2 entries)", then one line per entry.
pub fn deadline_verdicts(run: &RunAnalysis, u: Unit) -> Vec<(bool, String)> {
    crate::report::plots::merged_of(&run.entries)
        .into_iter()
        .filter_map(|e| e.deadline.as_ref().map(|d| deadline_verdict(&e.key().label(), d, u)))
        .collect()
}

/// The verdict blocks of a run: a line saying PASS or FAIL overall, then
/// one item per entry.
fn verdict_blocks(run: &RunAnalysis, u: Unit) -> Vec<Block> {
    let v = deadline_verdicts(run, u);
    if v.is_empty() {
        return Vec::new();
    }
    let failed = v.iter().filter(|(ok, _)| !ok).count();
    vec![
        Block::Text(if failed == 0 {
            format!("verdict: PASS (all {} entries met the deadline)", v.len())
        } else {
            format!("verdict: FAIL ({failed} of {} entries missed the deadline)", v.len())
        }),
        Block::List(v.into_iter().map(|(_, l)| l).collect()),
    ]
}

/// "What held the CPU": the trace attribution of the worst samples, the
/// same block `run` prints at its end and the terminal report shows.
pub fn trace_blocks(run: &crate::model::Run, max_samples: usize) -> Vec<Block> {
    let text = crate::trace::report::culprits_text(run, max_samples);
    let mut lines = text.lines();
    let Some(first) = lines.next() else { return Vec::new() };
    let mut out = vec![Block::Heading(3, "What held the CPU (trace)".into()), Block::Text(first.trim_start_matches("trace: ").to_string())];
    let items: Vec<String> = lines.map(|l| l.trim().to_string()).collect();
    if !items.is_empty() {
        out.push(Block::List(items));
    }
    out
}

/// A probability for tables: "1", "0.63", "2.1e-5".
pub fn fmt_prob(p: f64) -> String {
    if p >= 0.9995 {
        "1".into()
    } else if p >= 0.01 {
        format!("{p:.2}")
    } else if p == 0.0 {
        "0".into()
    } else {
        format!("{p:.1e}")
    }
}

/// Why the statistical worst case was refused, one line per refused entry.
pub fn pwcet_refusals(run: &RunAnalysis) -> Vec<String> {
    run.entries
        .iter()
        .filter_map(|e| match &e.pwcet {
            Some(Pwcet::Refused { reason, .. }) => Some(format!(
                "{} thread {}: no estimate: {reason}",
                e.key().label(),
                e.thread_label()
            )),
            _ => None,
        })
        .collect()
}

/// The worst samples of each entry merged over threads (every thread's
/// own worst are among them; a one-thread entry is its own merge), up to
/// `per_entry` each: when, where, and
/// with `--trace-threshold` what held the CPU (longest culprits first).
pub fn worst_table(run: &RunAnalysis, u: Unit, per_entry: usize) -> Option<Table> {
    let un = u.name();
    let header: Vec<String> = ["probe", "variant", "phase", "thread", "cpu", "seq", "at(s)"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("latency({un})"), "what held the CPU (trace)".to_string()])
        .collect();
    let mut rows = Vec::new();
    for e in crate::report::plots::merged_of(&run.entries) {
        for w in e.worst.iter().take(per_entry) {
            let trace = match &w.trace {
                None => "-".to_string(),
                Some(t) => {
                    let top: Vec<String> = t.culprits.iter().take(3).map(crate::trace::report::culprit).collect();
                    format!(
                        "{}{}",
                        if top.is_empty() { "no events".to_string() } else { top.join(", ") },
                        if t.complete { "" } else { " (trace incomplete)" }
                    )
                }
            };
            rows.push(vec![
                Cell::plain(e.probe.clone()),
                Cell::plain(e.variant.clone().unwrap_or_else(|| "-".into())),
                Cell::plain(e.phase.clone()),
                Cell::plain(w.thread.to_string()),
                Cell::plain(w.cpu.to_string()),
                Cell::plain(w.seq.to_string()),
                Cell::plain(format!("{:.3}", w.at_ns.0 as f64 / 1e9)),
                Cell::plain(u.fmt_n(w.latency_ns)),
                Cell::plain(trace),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table::new(header, 7, rows))
}

/// The doctor findings stored with the run (the audit of the measured
/// CPUs before it started), worst first.
pub fn doctor_table(run: &RunAnalysis) -> Option<Table> {
    let mut f: Vec<&crate::model::Finding> = run.host.doctor.iter().collect();
    if f.is_empty() {
        return None;
    }
    f.sort_by_key(|x| std::cmp::Reverse(x.severity));
    let rows = f
        .iter()
        .map(|x| {
            let tone = match x.severity {
                crate::model::Severity::Bad | crate::model::Severity::Warn => Tone::Bad,
                crate::model::Severity::Ok => Tone::Good,
                crate::model::Severity::Info => Tone::Plain,
            };
            vec![
                Cell::tone(x.severity.as_str(), tone),
                Cell::plain(x.id.clone()),
                Cell::plain(x.title.clone()),
                Cell::plain(x.fix.clone().unwrap_or_else(|| "-".into())),
            ]
        })
        .collect();
    Some(Table::new(["severity", "check", "finding", "fix"].map(String::from).to_vec(), 4, rows))
}

/// The statistical worst case of every entry of one run.
pub fn pwcet_table(run: &RunAnalysis, u: Unit) -> Option<Table> {
    let un = u.name();
    let rows: Vec<Vec<Cell>> = run
        .entries
        .iter()
        .filter_map(|e| e.pwcet.as_ref().map(|pw| (e, pw)))
        .map(|(e, pw)| {
            let mut row = entry_label(e);
            match pw {
                Pwcet::Estimate(est) => {
                    row.push(Cell::plain(u.fmt_n(est.threshold_ns)));
                    row.push(Cell::plain(est.excesses.to_string()));
                    row.push(Cell::plain(format!("{:.3}", est.fit.xi)));
                    for l in &est.levels {
                        row.push(Cell::plain(format!(
                            "{} [{}, {}]",
                            u.fmt(l.estimate_ns),
                            u.fmt(l.ci_low_ns),
                            u.fmt(l.ci_high_ns)
                        )));
                    }
                    row.push(Cell::plain(u.fmt_n(est.observed_max_ns)));
                    row.push(Cell::tone("fit", Tone::Good));
                }
                Pwcet::Refused { observed_max_ns, .. } => {
                    row.extend((0..5).map(|_| Cell::tone("-", Tone::Dim)));
                    row.push(Cell::plain(u.fmt_n(*observed_max_ns)));
                    row.push(Cell::tone("no estimate", Tone::Bad));
                }
            }
            row
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut header: Vec<String> =
        ["probe", "variant", "phase", "thread", "cpu"].iter().map(|s| s.to_string()).collect();
    header.push(format!("threshold({un})"));
    header.push("excesses".into());
    header.push("ξ".into());
    header.push(format!("p=1e-6 [95% CI]({un})"));
    header.push(format!("p=1e-9 [95% CI]({un})"));
    header.push(format!("observed max({un})"));
    header.push("status".into());
    Some(Table::new(header, 5, rows).optional(&["variant", "cpu", "threshold", "excesses", "ξ", "status", "p=1e-6 [95% CI]", "thread"]))
}

fn ratio_cell(r: Option<f64>) -> Cell {
    match r {
        None => Cell::tone("-", Tone::Dim),
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
pub fn compare_table(a: &Analysis, u: Unit) -> Table {
    let c = &a.comparison;
    let mut header = vec!["entry".to_string(), "metric".to_string()];
    for (i, s) in c.systems.iter().enumerate() {
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
        ("mean±σ", |c, u| format!("{}±{}", u.fmt(c.mean_ns), u.fmt(c.stddev_ns)), |c| {
            c.ratio_to_first.as_ref().map(|r| r.mean)
        }),
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
            cells.push(Cell::plain(cell.as_ref().map(|c| c.samples.to_string()).unwrap_or_else(|| "-".into())));
            if i > 0 {
                cells.push(match cell.as_ref().and_then(|c| c.ks_vs_first.as_ref()) {
                    Some(t) if t.material() => Cell::tone(format!("KS D={:.3} differ", t.d), Tone::Bad),
                    Some(t) if t.distinguishable => Cell::tone(format!("KS D={:.3} small", t.d), Tone::Plain),
                    Some(t) => Cell::tone(format!("KS D={:.3} same", t.d), Tone::Good),
                    None => Cell::tone("-", Tone::Dim),
                });
            }
        }
        rows.push(cells);
    }
    Table::new(header, 2, rows)
}

/// A percentile, or "-" where the source gave none (summary-only import);
/// a bound (`≥ X`) where its bucket is wide.
fn fmt_known(c: &CmpCell, label: &str, v: Option<Nanos>, u: Unit) -> String {
    match c.bounds.iter().find(|p| p.label == label) {
        Some(p) => p.shown(|v| u.fmt_n(v)),
        None => v.map(|v| u.fmt_n(v)).unwrap_or_else(|| "-".into()),
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
pub fn bin_table(a: &Analysis, index: usize, u: Unit) -> Table {
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
                None => Cell::tone("-", Tone::Dim),
            }));
            row
        })
        .collect();
    Table::new(header, 1, rows)
}

fn host_line(r: &RunAnalysis) -> String {
    let h = &r.host;
    format!(
        "{} · kernel {} ({}, preempt {}) · {} · {} CPUs online · clocksource {} · {}{}{}",
        h.hostname,
        h.kernel_release,
        if h.realtime { "PREEMPT_RT" } else { "not RT" },
        h.preempt_model,
        h.cpu_model,
        h.cpus_online.len(),
        h.clocksource,
        r.started_at,
        if h.virtualized { " · virtualized" } else { "" },
        if r.interrupted { " · interrupted" } else { "" },
    )
}

/// All blocks of the report, in order.
pub fn blocks(a: &Analysis, u: Unit, bins: bool) -> Vec<Block> {
    let mut out = Vec::new();
    let with_deadline = a.options.deadline.is_some();
    for r in &a.runs {
        out.push(Block::Heading(2, r.name.clone()));
        out.push(Block::Text(format!("{} — {}", r.source, host_line(r))));
        let summary = summary_table(r, u, with_deadline);
        if !summary.rows.is_empty() {
            match a.options.deadline {
                Some(d) => {
                    let (latencies, deadline) = split_deadline(&summary);
                    out.push(Block::Table(latencies));
                    out.push(Block::Heading(3, format!("Deadline {} {}", u.fmt_n(d), u.name())));
                    out.push(Block::Text(
                        "A sample over the deadline or a missed period is a miss (shown late+missed when periods were missed); miss ratio = misses / periods (samples + missed periods); P(miss)/h is the probability of at least one miss in an hour at the measured rate (≤: no miss seen, 95 % upper bound; ≥: missed periods unknown).".into(),
                    ));
                    out.push(Block::Table(deadline));
                    out.extend(verdict_blocks(r, u));
                }
                None => out.push(Block::Table(summary)),
            }
        }
        out.extend(trace_blocks(r.run, 5));
        if !r.warnings.is_empty() {
            out.push(Block::Heading(3, "Warnings".into()));
            out.push(Block::List(r.warnings.clone()));
        }
        if let Some(t) = rhealstone_table(&r.rhealstone, u) {
            out.push(Block::Heading(3, "Rhealstone (Kar & Porter 1989)".into()));
            out.push(Block::Table(t));
        }
        if let Some(t) = thread_metric_table(&r.thread_metric) {
            out.push(Block::Heading(3, "Thread-Metric".into()));
            out.push(Block::Table(t));
        }
        if let Some(t) = pwcet_table(r, u) {
            out.push(Block::Heading(3, "Statistical worst case (peaks over threshold, GPD fit)".into()));
            out.push(Block::Text(
                "Latency exceeded with probability p per sample, 95 % bootstrap interval; given only when the tail is long enough, independent (Ljung–Box) and stationary (halves of the run agree). The observed max is always shown.".into(),
            ));
            out.push(Block::Table(t));
            let refused = pwcet_refusals(r);
            if !refused.is_empty() {
                out.push(Block::List(refused));
            }
        }
    }
    out.extend(compare_blocks(a, u, bins));
    out
}

/// The comparison (with two or more systems) and, with `bins`, the bin
/// tables.
pub fn compare_blocks(a: &Analysis, u: Unit, bins: bool) -> Vec<Block> {
    let mut out = Vec::new();
    let c = &a.comparison;
    if c.systems.len() >= 2 {
        out.push(Block::Heading(2, format!("Comparison: {}", c.systems.join(" vs "))));
        if !c.notes.is_empty() {
            out.push(Block::List(c.notes.clone()));
        }
        out.push(Block::Table(compare_table(a, u)));
        if let Some(t) = throughput_compare_table(a) {
            out.push(Block::Heading(3, "Throughput (Thread-Metric): ops per second".into()));
            out.push(Block::Table(t));
        }
        if !c.sentences.is_empty() {
            out.push(Block::List(c.sentences.clone()));
        }
        if !c.unmatched.is_empty() {
            out.push(Block::Heading(3, "Not in every input".into()));
            out.push(Block::List(
                c.unmatched.iter().map(|(k, have)| format!("{}: only in {}", k.label(), have.join(", "))).collect(),
            ));
        }
    }
    for (i, t) in c.bin_tables.iter().enumerate().filter(|_| bins) {
        out.push(Block::Heading(3, format!("Bins of {} {}: {}", u.fmt_n(t.width_ns), u.name(), t.key.label())));
        out.push(Block::Table(bin_table(a, i, u)));
    }
    out
}

/// The windows of a monitor run (`rtscope report` on one): per phase, how
/// many windows, the worst window's max (and when), the median window max,
/// samples and overruns; then the last few windows. The full series is
/// `rtscope history --windows ID`.
pub fn monitor_windows(label: &str, m: &crate::model::MonitorRecord, windows: &[crate::model::Window], u: Unit) -> Vec<Block> {
    let un = u.name();
    let merged: Vec<&crate::model::Window> = windows.iter().filter(|w| w.thread.is_none()).collect();
    let mut out = vec![
        Block::Heading(2, format!("Monitor windows: {label}")),
        Block::Text(format!(
            "{} windows of {} stored (`rtscope history --windows` lists every one); per phase and probe:",
            m.windows,
            crate::units::fmt_ns(m.window_ns.0)
        )),
    ];
    let keys: Vec<(String, String)> = crate::units::first_seen(merged.iter().map(|w| (w.phase.clone(), w.probe.clone())));
    let header: Vec<String> = ["phase", "probe", "windows", "samples", "overruns"]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("median max({un})"), format!("worst max({un})"), "worst window".to_string()])
        .collect();
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|(phase, probe)| {
            let ws: Vec<&&crate::model::Window> = merged.iter().filter(|w| &w.phase == phase && &w.probe == probe).collect();
            let mut maxes: Vec<u64> = ws.iter().map(|w| w.max_ns.0).collect();
            maxes.sort_unstable();
            let median = maxes[(maxes.len() - 1) / 2];
            let worst = ws.iter().max_by_key(|w| w.max_ns.0).expect("a group has a window");
            vec![
                phase.clone(),
                probe.clone(),
                ws.len().to_string(),
                ws.iter().map(|w| w.samples).sum::<u64>().to_string(),
                ws.iter().map(|w| w.overruns).sum::<u64>().to_string(),
                u.fmt_n(crate::model::Nanos(median)),
                u.fmt_n(worst.max_ns),
                format!("#{} at {}", worst.index, worst.started_at),
            ]
        })
        .collect();
    out.push(Block::Table(Table::plain(header, 2, rows)));
    let last: Vec<&&crate::model::Window> = merged.iter().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    if !last.is_empty() {
        out.push(Block::Text("The last windows:".into()));
        let header: Vec<String> = ["window", "started", "phase", "probe", "samples"]
            .iter()
            .map(|s| s.to_string())
            .chain(["p50", "p99", "max"].iter().map(|s| format!("{s}({un})")))
            .collect();
        let rows = last
            .iter()
            .map(|w| {
                vec![
                    w.index.to_string(),
                    w.started_at.clone(),
                    w.phase.clone(),
                    w.probe.clone(),
                    w.samples.to_string(),
                    u.fmt_n(w.p50_ns),
                    u.fmt_n(w.p99_ns),
                    u.fmt_n(w.max_ns),
                ]
            })
            .collect();
        out.push(Block::Table(Table::plain(header, 4, rows)));
    }
    out
}

/// "12 345 678" (thousands apart, as published Thread-Metric tables).
pub fn fmt_count(x: f64) -> String {
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
pub fn rhealstone_table(phases: &[crate::analysis::suites::RhealstonePhase], u: Unit) -> Option<Table> {
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
pub fn thread_metric_table(rows: &[crate::analysis::suites::ThreadMetricRow]) -> Option<Table> {
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

/// The comparison's throughput rows (Thread-Metric): ops per second per
/// system and each system's ratio to the first; `None` without any.
pub fn throughput_compare_table(a: &Analysis) -> Option<Table> {
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
