//! The report's content as layout-free blocks (headings, tables, text,
//! lists), built from the [`Analysis`] only. The term, Markdown and HTML
//! renderers lay the same blocks out, so the tables read the same in every
//! format; each renderer is `layout(blocks(analysis))`.
//!
//! Latencies are shown in µs with one decimal (or in ns with `--ns`); ratios
//! as "B/A" with two significant digits below 10.

mod compare_tables;
mod monitor;
mod run_end;
mod run_tables;
mod suites;

use crate::analysis::summary::{Analysis, RunAnalysis};

/// The unit of every latency a report shows (in `units`, the leaf, so the
/// plan's output choice holds it too).
pub(crate) use crate::units::Unit;
pub(crate) use compare_tables::{bin_table, compare_table, throughput_compare_table};
pub(crate) use monitor::{missing_note, monitor_windows};
pub(crate) use run_end::{end_of_run, EndOfRun};
use run_tables::verdict_blocks;
pub(crate) use run_tables::{
    deadline_verdict, deadline_verdicts, doctor_table, fmt_prob, pwcet_refusals, pwcet_table, split_deadline, summary_of, summary_table, trace_blocks,
    worst_table, SummaryColumns,
};
pub(crate) use suites::{fmt_count, rhealstone_table, thread_metric_table};

/// How a cell should stand out where the renderer can show it (colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    Plain,
    /// Better than the first system / a passed check.
    Good,
    /// Worse than the first system / a miss / a refusal.
    Bad,
    Dim,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) tone: Tone,
}

impl Cell {
    pub(crate) fn plain(s: impl Into<String>) -> Cell {
        Cell { text: s.into(), tone: Tone::Plain }
    }
    pub(crate) fn tone(s: impl Into<String>, tone: Tone) -> Cell {
        Cell { text: s.into(), tone }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub(crate) header: Vec<String>,
    /// Columns before this index are left-aligned (labels), the rest right-aligned.
    pub(crate) label_cols: usize,
    pub(crate) rows: Vec<Vec<Cell>>,
    /// Columns a narrow layout (an 80-column terminal) may leave out, the
    /// first first; the others are always shown.
    pub(crate) optional: Vec<usize>,
    /// Columns of long text a page may break over lines (the others keep
    /// one line).
    pub(crate) wrap: Vec<usize>,
    /// Columns whose long header a narrow layout may show as a key (a
    /// comparison's systems as `#1`, `#2`: its ratio columns say `#2/#1`),
    /// spelled out under the table.
    pub(crate) keys: Vec<(usize, String)>,
}

impl Table {
    /// A table of plain cells: `header`, then `rows`; the first `label_cols`
    /// columns left-aligned.
    pub(crate) fn plain(header: Vec<String>, label_cols: usize, rows: Vec<Vec<String>>) -> Table {
        Table::new(header, label_cols, rows.into_iter().map(|r| r.into_iter().map(Cell::plain).collect()).collect())
    }
    /// A table of which every column is always shown.
    pub(crate) fn new(header: Vec<String>, label_cols: usize, rows: Vec<Vec<Cell>>) -> Table {
        Table { header, label_cols, rows, optional: Vec::new(), wrap: Vec::new(), keys: Vec::new() }
    }
    /// Column `c` may show as `key` in a narrow layout, for each (c, key).
    pub(crate) fn with_keys(mut self, keys: Vec<(usize, String)>) -> Table {
        self.keys = keys;
        self
    }
    /// Columns `cols` may break over lines on a page.
    pub(crate) fn wrapping(mut self, cols: &[usize]) -> Table {
        self.wrap = cols.to_vec();
        self
    }
    /// The columns named `names` (header text without a trailing "(unit)") may be left out
    /// in a narrow layout, in that order.
    pub(crate) fn optional(mut self, names: &[&str]) -> Table {
        let base = |h: &str| h.strip_suffix(')').and_then(|x| x.rsplit_once('(')).map(|(b, _)| b).unwrap_or(h).to_string();
        self.optional = names.iter().filter_map(|n| self.header.iter().position(|h| base(h) == *n)).collect();
        self
    }
}

/// What every table shows for a value it does not have (a percentile an
/// imported summary-only result lacks, a phase a run did not have).
pub(crate) const UNKNOWN: &str = "-";

/// What every table shows where a value has no meaning: the variant of a
/// probe without variants, the CPU of a row merged over threads, the fix of
/// a finding that needs none, the trace of a sample not traced, the
/// estimate columns of a refused fit. The same dash as [`UNKNOWN`] on the
/// page; a different fact in the code.
pub(crate) const NOT_APPLICABLE: &str = "-";

#[derive(Debug, Clone)]
pub(crate) enum Block {
    /// Level 1 (report), 2 (run / comparison), 3 (section).
    Heading(u8, String),
    Text(String),
    List(Vec<String>),
    /// A list a page marks with `class` (the statistical worst case's
    /// refusals: `"refused"`, in red); the text formats show it as a plain
    /// [`Block::List`].
    Marked {
        class: &'static str,
        items: Vec<String>,
    },
    Table(Table),
    /// Name–value pairs (the host fingerprint and plan).
    Fields(Vec<(String, String)>),
    /// Blocks folded under a one-line summary (a page's `<details>`, of
    /// `class`, unfolded when `open`); the text formats show the summary as a
    /// heading and the blocks under it.
    Folded {
        summary: String,
        class: &'static str,
        open: bool,
        blocks: Vec<Block>,
    },
    /// A chart: only a page shows it; the text formats leave it out.
    Plot(crate::report::plots::Plot),
    /// The title of the table after it at the end of a run ("max
    /// sustainable rate (maxrate)"): a terminal shows it as "title:" after
    /// a blank line, Markdown in bold, a page as a caption paragraph.
    Caption(String),
    /// Lines laid out in advance, one record a line (the deadline, noise,
    /// verdict and load-evidence lines at the end of a run), with the blank
    /// lines they carry: a terminal prints them as they are, never wrapped;
    /// Markdown as a code block, a page as `<pre>`.
    Pre(String),
    /// Blocks a terminal lays out on their own, as if they began the output
    /// (no blank line before their first heading): the end of a run joins
    /// parts laid out apart, as the trace block `report` shows too. The
    /// other formats show the blocks in line.
    Part(Vec<Block>),
}

/// `blocks` as the text formats lay them out: folded blocks unfolded under
/// their summary as a level-3 heading, fields as "name: value" lines, plots
/// left out, marked lists plain, parts kept (their blocks laid out so).
/// What remains is headings, text, lists, tables, captions, preformatted
/// lines and parts.
pub(crate) fn for_text(blocks: &[Block]) -> Vec<Block> {
    let mut out = Vec::new();
    for b in blocks {
        match b {
            Block::Folded { summary, blocks, .. } => {
                out.push(Block::Heading(3, summary.clone()));
                out.extend(for_text(blocks));
            }
            Block::Fields(f) => out.push(Block::Text(f.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\n"))),
            Block::Plot(_) => {}
            Block::Marked { items, .. } => out.push(Block::List(items.clone())),
            Block::Part(blocks) => out.push(Block::Part(for_text(blocks))),
            b => out.push(b.clone()),
        }
    }
    out
}

/// What a miss is, said once for every format that shows a deadline.
pub(crate) const DEADLINE_NOTE: &str = "A sample over the deadline or a missed period is a miss (shown late+missed when periods were missed); miss ratio = misses / periods (samples + missed periods); P(miss)/h is the probability of at least one miss in an hour at the measured rate (≤: no miss seen, 95 % upper bound; ≥: missed periods unknown).";

/// The scheduling model of a target that is not Linux (its agent names
/// the OS): "RTOS" for a known RTOS, "OS, preempt -" for another; `None`
/// for Linux and for runs measured here. Every format says the same.
pub(crate) fn other_os(r: &RunAnalysis) -> Option<String> {
    let os = r.run.agent.as_ref().map(|a| a.os.as_str()).filter(|os| !os.is_empty() && *os != "Linux")?;
    Some(if crate::model::is_rtos(os) { "RTOS".to_string() } else { format!("{os}, preempt -") })
}

/// A run's system in one line. A target that is not Linux (its agent says
/// which OS) is named by its OS and version and shown as an RTOS or by its
/// OS, with `-` for what the agent cannot know; "not RT" is PREEMPT_RT's
/// absence, a Linux word, said only where the host said it
/// ([`crate::model::realtime_word`]: an import from RTAI or Xenomai is a
/// co-kernel, one whose tool does not say is "RT unknown").
fn host_line(r: &RunAnalysis) -> String {
    let h = &r.host;
    if let Some(model) = other_os(r) {
        return format!(
            "{} · {} ({}) · {} · {} CPUs online · {}{}{}",
            if h.hostname.is_empty() { "-" } else { &h.hostname },
            h.kernel_release,
            model,
            if h.cpu_model.is_empty() { "-" } else { &h.cpu_model },
            h.cpus_online.len(),
            r.started_at,
            if h.emulated { " · emulated (QEMU TCG)" } else { "" },
            if r.interrupted { " · interrupted" } else { "" },
        );
    }
    format!(
        "{} · kernel {} ({}, preempt {}) · {} · {} CPUs online · clocksource {} · {}{}{}",
        h.hostname,
        if h.kernel_release.is_empty() { "unknown" } else { &h.kernel_release },
        match crate::model::realtime_word(h.realtime, r.run.imported_from.as_ref().map(|_| r.run.tool.name.as_str()), &h.preempt_model) {
            "yes" => "PREEMPT_RT",
            "no" => "not RT",
            "co-kernel" => "RTAI/Xenomai co-kernel",
            _ => "RT unknown",
        },
        h.preempt_model,
        if h.cpu_model.is_empty() { "cpu unknown" } else { &h.cpu_model },
        h.cpus_online.len(),
        if h.clocksource.is_empty() { "unknown" } else { &h.clocksource },
        r.started_at,
        if h.emulated {
            " · emulated (QEMU TCG)"
        } else if h.virtualized {
            " · virtualized"
        } else {
            ""
        },
        if r.interrupted { " · interrupted" } else { "" },
    )
}

/// All blocks of the report, in order.
pub(crate) fn blocks(a: &Analysis, u: Unit, bins: bool) -> Vec<Block> {
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
                    out.push(Block::Text(DEADLINE_NOTE.into()));
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
            out.extend(pwcet_refusals(r));
        }
    }
    out.extend(compare_blocks(a, u, bins));
    out
}

/// The comparison (with two or more systems) and, with `bins`, the bin
/// tables.
pub(crate) fn compare_blocks(a: &Analysis, u: Unit, bins: bool) -> Vec<Block> {
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
            out.push(Block::List(c.unmatched.iter().map(|(k, have)| format!("{}: only in {}", k.label(), have.join(", "))).collect()));
        }
    }
    if bins {
        out.extend(bin_blocks(a, u));
    }
    out
}

/// Each bin table under its heading (seed 001's tables: counts per bin and
/// system).
pub(crate) fn bin_blocks(a: &Analysis, u: Unit) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, t) in a.comparison.bin_tables.iter().enumerate() {
        out.push(Block::Heading(3, format!("Bins of {} {}: {}", u.fmt_n(t.width_ns), u.name(), t.key.label())));
        out.push(Block::Table(bin_table(a, i, u)));
    }
    out
}
