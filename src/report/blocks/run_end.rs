//! The end of a run as blocks: what `rtscope run` prints when it is done
//! (natively and with `--target`) and what `show` prints of a stored run's
//! results. The summary table first; on a native run the max-rate table,
//! the noise lines and the preset's table with the load evidence; with
//! `--deadline` the miss lines; on a native run last the trace block
//! `report` shows too. One terminal walk (`report::term::render_blocks`)
//! lays them out.

use super::{deadline_verdict, fmt_prob, summary_of, trace_blocks, Block, SummaryColumns, Table, Unit};
use crate::model::{Nanos, Run};

/// What the end of a run shows besides the summary table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndOfRun {
    /// µs, or ns with `--ns`.
    pub(crate) unit: Unit,
    /// `--deadline`: the miss lines, and PASS/FAIL in the verdict table.
    pub(crate) deadline: Option<Nanos>,
    /// A native run's further parts, with the table its scenario or preset
    /// asks for (`table = ...`) and the width of a bin of `table = "bins"`
    /// in ns. `None` for a run on a target and for `show`: the summary (and
    /// the deadline lines) alone, as they have always printed.
    pub(crate) preset: Option<(crate::plan::Table, u64)>,
}

/// The blocks of the end of `run`, in the order they print.
pub(crate) fn end_of_run(run: &Run, e: &EndOfRun) -> Vec<Block> {
    // A run of throughput probes alone (Thread-Metric) has no latency row:
    // its own table follows, and a header over nothing is not shown (as in `report`).
    let summary = run_summary(run, e.unit);
    let mut out = if summary.rows.is_empty() { Vec::new() } else { vec![Block::Table(summary)] };
    if let Some((table, bin_ns)) = e.preset {
        out.extend(crate::report::maxrate::blocks(run, e.unit));
        out.extend(crate::report::noise::blocks(run));
        out.extend(crate::report::presets::blocks(run, table, bin_ns, e.unit, e.deadline));
    }
    if let Some(d) = e.deadline {
        out.extend(deadline_lines(run, d, e.unit));
    }
    if e.preset.is_some() {
        let trace = trace_blocks(run, 5);
        if !trace.is_empty() {
            // Laid out as `report` lays it out on its own.
            out.push(Block::Part(trace));
        }
    }
    out
}

/// The end-of-run summary table: the table `report` shows, with the columns
/// of the end of a run ([`SummaryColumns::RUN_END`]): one row per measuring
/// thread and one merged row per probe/phase/variant. No statistical worst
/// case is fitted.
fn run_summary(run: &Run, u: Unit) -> Table {
    let opts = crate::analysis::summary::Options { pwcet: false, ..Default::default() };
    let entries: Vec<_> = run.results.iter().map(|r| crate::analysis::summary::entry(r, &opts, None)).collect();
    summary_of(&entries, u, SummaryColumns::RUN_END)
}

/// The end-of-run deadline summary (`rtscope run --deadline`): one line per
/// merged entry with the misses (late samples and missed periods), their
/// ratio per period and the per-hour probability, in the table's unit; then
/// the verdict lines `report --deadline` gives. None without a result.
fn deadline_lines(run: &Run, deadline: Nanos, u: Unit) -> Option<Block> {
    let mut out = String::new();
    let mut verdicts = Vec::new();
    let dl = format!("{} {}", u.fmt(deadline.0 as f64), u.name());
    for r in crate::model::merged_or_sole(&run.results, |r| r) {
        let m = crate::analysis::deadline::misses(r, deadline);
        let label = crate::analysis::compare::EntryKey::of(r).label();
        verdicts.push(deadline_verdict(&label, &m, u));
        let mut per_hour = fmt_prob(m.per_hour_probability);
        if m.zero_observed && m.per_hour_probability >= 0.5 {
            // True and useless: say why (the verdict line says how long a run needs).
            per_hour.push_str(" (the run is too short to bound it)");
        }
        out.push_str(&format!(
            "deadline {dl}, {}{} ({}): {} (miss ratio {}); P(at least one miss per hour) {}{per_hour} at {:.0} periods/s\n",
            r.probe,
            r.variant.as_ref().map(|v| format!("[{v}]")).unwrap_or_default(),
            r.phase,
            m.sentence(&dl),
            m.ratio_shown(),
            if m.zero_observed { "≤ " } else { "" },
            m.rate_hz
        ));
    }
    for (_, line) in verdicts {
        out.push_str(&line);
        out.push('\n');
    }
    (!out.is_empty()).then_some(Block::Pre(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden() -> Run {
        serde_json::from_str(include_str!("../../../tests/fixtures/golden/result-v1.json")).unwrap()
    }

    /// The golden result's end of a run as the six text renderers printed
    /// it before they became blocks (the files were written by them): the
    /// summary, the load evidence, the deadline lines and the trace part
    /// after them with no blank line; and on a target, in ns, the summary
    /// and the deadline lines alone. Byte for byte.
    #[test]
    fn the_end_of_a_run_prints_as_the_text_renderers_did() {
        let run = golden();
        let native = EndOfRun { unit: Unit::Us, deadline: Some(Nanos(50_000)), preset: Some((crate::plan::Table::Verdict, 5_000)) };
        let text = crate::report::term::render_blocks(&end_of_run(&run, &native), false, None);
        assert_eq!(text, include_str!("../../../tests/fixtures/golden/end-of-run-us-deadline-verdict.txt"));
        let target = EndOfRun { unit: Unit::Ns, deadline: Some(Nanos(1)), preset: None };
        let text = crate::report::term::render_blocks(&end_of_run(&run, &target), false, None);
        assert_eq!(text, include_str!("../../../tests/fixtures/golden/end-of-run-ns-target.txt"));
    }

    /// The kinds only the end of a run has, in the other formats: a caption
    /// in bold or a caption paragraph, lines in a code block or `<pre>`, a
    /// part in line.
    #[test]
    fn captions_lines_and_parts_in_markdown_and_html() {
        let blocks = vec![
            Block::Caption("max sustainable rate (maxrate)".into()),
            Block::Pre("\nnoise (idle, other): 3 gaps\n  a <note>\n".into()),
            Block::Part(vec![Block::Heading(3, "What held the CPU (trace)".into())]),
        ];
        assert_eq!(
            crate::report::md::render_blocks("t", &blocks),
            "# t\n\n**max sustainable rate (maxrate)**\n\n```\nnoise (idle, other): 3 gaps\n  a <note>\n```\n\n### What held the CPU (trace)\n"
        );
        assert_eq!(
            crate::report::html::render_blocks(&blocks),
            "<p class=\"caption\">max sustainable rate (maxrate)</p>\n<pre>noise (idle, other): 3 gaps\n  a &lt;note&gt;</pre>\n<h4>What held the CPU (trace)</h4>\n"
        );
    }
}
