//! The tables of one run: the summary (and its deadline half), the
//! deadline verdicts, the worst samples, the doctor findings, the
//! statistical worst case, and what held the CPU (trace).

use super::{Block, Cell, Table, Tone, Unit, NOT_APPLICABLE, UNKNOWN};
use crate::analysis::evt::Pwcet;
use crate::analysis::summary::{EntryAnalysis, RunAnalysis};

pub(super) fn entry_label(e: &EntryAnalysis) -> Vec<Cell> {
    vec![
        Cell::plain(e.probe.clone()),
        Cell::plain(e.variant.clone().unwrap_or_else(|| NOT_APPLICABLE.into())),
        Cell::plain(e.phase.clone()),
        Cell::plain(e.thread_label()),
        Cell::plain(e.cpu.map(|c| c.to_string()).unwrap_or_else(|| NOT_APPLICABLE.into())),
    ]
}

fn p(e: &EntryAnalysis, label: &str, u: Unit) -> String {
    e.percentile_bound(label).map(|p| p.shown(|v| u.fmt_n(v))).unwrap_or_else(|| UNKNOWN.into())
}

/// The columns a summary table shows: always probe, variant, phase,
/// thread, cpu, samples, overruns, min, mean±σ, p50, p99, p99.9 and max; the
/// rest, and how a count the source could not know is worded, differ by view.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SummaryColumns {
    /// p99.99 between p99.9 and max.
    pub(crate) p99_99: bool,
    /// The deadline's misses, miss ratio and P(miss)/h.
    pub(crate) deadline: bool,
    /// Overruns a source could not count shown "unknown" (else as stored).
    pub(crate) unknown_overruns: bool,
    /// Samples a source could not count shown "unknown (≥N)" (else N).
    pub(crate) unknown_samples: bool,
    /// Columns before this one are left-aligned.
    pub(crate) label_cols: usize,
}

impl SummaryColumns {
    /// `rtscope report` and its pages: p99.99, unknown overruns marked, the
    /// deadline columns with `--deadline`; labels through cpu.
    pub(crate) fn report(deadline: bool) -> SummaryColumns {
        SummaryColumns { p99_99: true, deadline, unknown_overruns: true, unknown_samples: false, label_cols: 5 }
    }

    /// The end of `rtscope run`: up to p99.9, samples a source could not
    /// count marked (the deadline has lines of its own); labels through phase.
    pub(crate) const RUN_END: SummaryColumns = SummaryColumns { p99_99: false, deadline: false, unknown_overruns: false, unknown_samples: true, label_cols: 3 };
}

/// The summary table of one run, as `report` shows it.
pub(crate) fn summary_table(run: &RunAnalysis, u: Unit, with_deadline: bool) -> Table {
    summary_of(&run.entries, u, SummaryColumns::report(with_deadline))
}

/// The summary table of `entries` with the columns `cols`. Throughput
/// entries (Thread-Metric) are left out: they have their own table (ops,
/// not latencies).
pub(crate) fn summary_of(entries: &[EntryAnalysis], u: Unit, cols: SummaryColumns) -> Table {
    let un = u.name();
    let mut header: Vec<String> = ["probe", "variant", "phase", "thread", "cpu", "samples", "overruns"].iter().map(|s| s.to_string()).collect();
    let percentiles: &[&str] = if cols.p99_99 { &["p50", "p99", "p99.9", "p99.99"] } else { &["p50", "p99", "p99.9"] };
    header.extend(["min", "mean±σ"].iter().chain(percentiles).chain(&["max"]).map(|s| format!("{s}({un})")));
    if cols.deadline {
        header.extend(["misses", "miss ratio", "P(miss)/h"].iter().map(|s| s.to_string()));
    }
    let rows = entries
        .iter()
        .filter(|e| e.extras.throughput.is_none())
        .map(|e| {
            let mut row = entry_label(e);
            row.push(Cell::plain(if cols.unknown_samples && e.extras.samples_unknown { format!("unknown (≥{})", e.samples) } else { e.samples.to_string() }));
            row.push(match e.known_overruns() {
                Some(o) => Cell::tone(o.to_string(), if o > 0 { Tone::Bad } else { Tone::Plain }),
                None if cols.unknown_overruns => Cell::tone("unknown", Tone::Dim),
                None => Cell::plain(e.overruns.to_string()),
            });
            // An empty block (no sample) has no min, mean or max: a dash, never 0.0.
            let empty = e.samples == 0;
            row.push(Cell::plain(if empty { NOT_APPLICABLE.to_string() } else { u.fmt(e.shown_min_ns()) }));
            row.push(Cell::plain(if empty {
                NOT_APPLICABLE.to_string()
            } else {
                format!("{}±{}", u.fmt(e.shown_mean_ns()), e.stddev().map_or_else(|| UNKNOWN.to_string(), |s| u.fmt(s)))
            }));
            for l in percentiles {
                row.push(Cell::plain(p(e, l, u)));
            }
            row.push(Cell::plain(if empty { NOT_APPLICABLE.to_string() } else { u.fmt_n(e.max_ns) }));
            if cols.deadline {
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
                    None => row.extend((0..3).map(|_| Cell::plain(NOT_APPLICABLE))),
                }
            }
            row
        })
        .collect();
    // Narrow: the cyclictest columns stay (probe, phase, thread, samples,
    // overruns, p50, p99, p99.9, max). The deadline columns are never left
    // out: [`split_deadline`] puts them in a table of their own.
    // The variant stays where one is named: without it `sem` posix and
    // sysv (or `pi` none and inherit) read as identical rows.
    let optional: &[&str] = if entries.iter().any(|e| e.variant.is_some()) { &SUMMARY_OPTIONAL[1..] } else { &SUMMARY_OPTIONAL };
    Table::new(header, cols.label_cols, rows).optional(optional)
}

/// The summary's columns a narrow layout may leave out, in that order
/// (the variant only where no entry has one; the thread last of all).
const SUMMARY_OPTIONAL: [&str; 6] = ["variant", "cpu", "p99.99", "min", "mean±σ", "thread"];

/// A summary table with deadline columns cut in two: the latencies (every
/// column up to `max`), and the deadline view — the entry's labels,
/// samples, overruns and every column after `max` (what `--deadline` asked
/// for), of which only `variant` and `cpu` may be left out. Each fits an
/// 80-column terminal and a 1280 px page; no asked-for column is dropped.
pub(crate) fn split_deadline(t: &Table) -> (Table, Table) {
    let max = t.header.iter().position(|h| h.starts_with("max(")).unwrap_or(t.header.len() - 1);
    let take = |cols: &[usize]| -> (Vec<String>, Vec<Vec<Cell>>) {
        (cols.iter().map(|&c| t.header[c].clone()).collect(), t.rows.iter().map(|r| cols.iter().filter_map(|&c| r.get(c).cloned()).collect()).collect())
    };
    let (h, r) = take(&(0..=max).collect::<Vec<_>>());
    let named = t.rows.iter().any(|r| r.get(1).is_some_and(|c| c.text != NOT_APPLICABLE));
    let latencies = Table::new(h, t.label_cols, r).optional(if named { &SUMMARY_OPTIONAL[1..] } else { &SUMMARY_OPTIONAL });
    let mut cols: Vec<usize> = (0..t.label_cols).collect();
    cols.extend(t.header.iter().position(|h| h == "samples"));
    cols.extend(t.header.iter().position(|h| h == "overruns"));
    cols.extend(max + 1..t.header.len());
    let (h, r) = take(&cols);
    (latencies, Table::new(h, t.label_cols, r).optional(if named { &["cpu", "thread"] } else { &["variant", "cpu", "thread"] }))
}

/// The deadline verdict of one entry, as `run --deadline` and `report
/// --deadline` print it: PASS when no sample was over the deadline and no
/// period was missed (a missed period is a miss), else FAIL and why.
/// Returns (passed, line).
pub(crate) fn deadline_verdict(label: &str, m: &crate::analysis::deadline::DeadlineMisses, u: Unit) -> (bool, String) {
    let dl = format!("{} {}", u.fmt_n(m.deadline_ns), u.name());
    match m.missed_periods {
        Some(0) if m.late_samples_upper == 0 => {
            let supports = m.supports().map(|x| format!("; {x}")).unwrap_or_default();
            (true, format!("PASS {label}: no sample over the {dl} deadline and no period missed ({} periods){supports}", m.periods))
        }
        // A count the source cannot know: never a PASS.
        None if m.late_samples_upper == 0 => {
            (false, format!("NO VERDICT {label}: no sample over the {dl} deadline, but the source cannot count missed periods ({} samples)", m.samples))
        }
        _ => (false, format!("FAIL {label}: {}", m.sentence(&dl))),
    }
}

/// The verdict of every merged entry of a run with a deadline, worst
/// first line: "verdict: FAIL (1 of 2 entries)", then one line per entry.
pub(crate) fn deadline_verdicts(run: &RunAnalysis, u: Unit) -> Vec<(bool, String)> {
    crate::report::plots::merged_of(&run.entries).into_iter().filter_map(|e| e.deadline.as_ref().map(|d| deadline_verdict(&e.key().label(), d, u))).collect()
}

/// The verdict blocks of a run: a line saying PASS or FAIL overall, then
/// one item per entry.
pub(super) fn verdict_blocks(run: &RunAnalysis, u: Unit) -> Vec<Block> {
    let v = deadline_verdicts(run, u);
    if v.is_empty() {
        return Vec::new();
    }
    let failed = v.iter().filter(|(ok, _)| !ok).count();
    let mut out = vec![Block::Text(if failed == 0 {
        format!("verdict: PASS (all {} entries met the deadline)", v.len())
    } else {
        format!("verdict: FAIL ({failed} of {} entries missed the deadline)", v.len())
    })];
    if failed > 0 {
        // run and report exit 0 whatever the verdict: say which command gates.
        out.push(Block::Text("this command exits 0 on a FAIL: the gate is `rtscope check --deadline` (exit 3)".into()));
    }
    out.push(Block::List(v.into_iter().map(|(_, l)| l).collect()));
    out
}

/// "What held the CPU": the trace attribution of the worst samples, the
/// same block `run` prints at its end and the terminal report shows.
pub(crate) fn trace_blocks(run: &crate::model::Run, max_samples: usize) -> Vec<Block> {
    // Names from the traced system or an imported file, each kept on its line.
    let safe = crate::report::escape::one_line_traces(run);
    let text = crate::trace::report::culprits_text(&safe, max_samples);
    let mut lines = text.lines();
    let Some(first) = lines.next() else { return Vec::new() };
    let mut out = vec![Block::Heading(3, "What held the CPU (trace)".into()), Block::Text(first.trim_start_matches("trace: ").to_string())];
    let mut items: Vec<String> = lines.map(|l| l.trim().to_string()).collect();
    // What the evidence supports doing about it (doctor's fix texts).
    items.extend(crate::doctor::advice::advice(&safe).into_iter().map(|a| format!("advice: {a}")));
    if !items.is_empty() {
        out.push(Block::List(items));
    }
    out
}

/// A probability for tables: "1", "0.63", "2.1e-5".
pub(crate) fn fmt_prob(p: f64) -> String {
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

/// Why the statistical worst case was refused, one line per refused entry,
/// as a list a page shows in red (`class="refused"`); none when every entry
/// has an estimate.
pub(crate) fn pwcet_refusals(run: &RunAnalysis) -> Option<Block> {
    let items: Vec<String> = run
        .entries
        .iter()
        .filter_map(|e| match &e.pwcet {
            Some(Pwcet::Refused { reason, .. }) => Some(format!("{} thread {}: no estimate: {reason}", e.key().label(), e.thread_label())),
            _ => None,
        })
        .collect();
    (!items.is_empty()).then_some(Block::Marked { class: "refused", items })
}

/// The worst samples of each entry merged over threads (every thread's
/// own worst are among them; a one-thread entry is its own merge), up to
/// `per_entry` each: when, where, and
/// with `--trace-threshold` what held the CPU (longest culprits first).
pub(crate) fn worst_table(run: &RunAnalysis, u: Unit, per_entry: usize) -> Option<Table> {
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
                None => NOT_APPLICABLE.to_string(),
                Some(t) => {
                    let t = crate::report::escape::one_line_trace(t);
                    let top: Vec<String> = t.culprits.iter().take(3).map(|c| crate::trace::report::culprit_in(c, &t)).collect();
                    format!("{}{}", if top.is_empty() { "no events".to_string() } else { top.join(", ") }, if t.complete { "" } else { " (trace incomplete)" })
                }
            };
            rows.push(vec![
                Cell::plain(e.probe.clone()),
                Cell::plain(e.variant.clone().unwrap_or_else(|| NOT_APPLICABLE.into())),
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
pub(crate) fn doctor_table(run: &RunAnalysis) -> Option<Table> {
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
                Cell::plain(x.fix.clone().unwrap_or_else(|| NOT_APPLICABLE.into())),
            ]
        })
        .collect();
    Some(Table::new(["severity", "check", "finding", "fix"].map(String::from).to_vec(), 4, rows))
}

/// The statistical worst case of every entry of one run.
pub(crate) fn pwcet_table(run: &RunAnalysis, u: Unit) -> Option<Table> {
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
                        row.push(Cell::plain(format!("{} [{}, {}]", u.fmt(l.estimate_ns), u.fmt(l.ci_low_ns), u.fmt(l.ci_high_ns))));
                    }
                    row.push(Cell::plain(u.fmt_n(est.observed_max_ns)));
                    row.push(Cell::tone("fit", Tone::Good));
                }
                Pwcet::Refused { observed_max_ns, .. } => {
                    row.extend((0..5).map(|_| Cell::tone(NOT_APPLICABLE, Tone::Dim)));
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
    let mut header: Vec<String> = ["probe", "variant", "phase", "thread", "cpu"].iter().map(|s| s.to_string()).collect();
    header.push(format!("threshold({un})"));
    header.push("excesses".into());
    header.push("ξ".into());
    header.push(format!("p=1e-6 [95% CI]({un})"));
    header.push(format!("p=1e-9 [95% CI]({un})"));
    header.push(format!("observed max({un})"));
    header.push("status".into());
    // The variant stays where one is named (issue 64: identical rows otherwise).
    let named = rows.iter().any(|r: &Vec<Cell>| r.get(1).is_some_and(|c| c.text != NOT_APPLICABLE));
    let optional: &[&str] = &["variant", "cpu", "threshold", "excesses", "ξ", "status", "p=1e-6 [95% CI]", "thread"];
    Some(Table::new(header, 5, rows).optional(if named { &optional[1..] } else { optional }))
}
