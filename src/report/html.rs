//! HTML renderer: one self-contained file — styles inline, every plot an
//! inline `<svg>` (see `plots` for why plotters' SVG backend), no script,
//! no font, no link to anything — so it opens offline, mails as one
//! attachment and prints. Pure function of the analysis and its plots.
//!
//! Layout per run: host fingerprint and plan, doctor findings (folded),
//! warnings, summary table, the statistical-worst-case panel, then per
//! probe/phase/variant the timeline, histogram, exceedance and pWCET plots,
//! the per-phase overlays, and the worst samples with their trace
//! attribution. `rtscope serve` builds its pages from the same sections
//! ([`runs`], [`comparison`], [`bins`], [`document`]). With
//! several runs: the comparison table, sentences and per-system overlays.
//! Last, the bin tables, folded (`<details>`). Each plot is a `<figure class="plot"
//! data-kind="…">`, which the browser test counts.

use std::fmt::Write;

use crate::analysis::summary::{Analysis, RunAnalysis};
use crate::report::blocks::{self, Block, Table, Tone, Unit};
use crate::report::plots::Plot;

pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

/// A table; its `wrap` columns (long text) may break lines.
fn table(t: &Table) -> String {
    let wrap = &t.wrap;
    let mut s = String::from("<div class=\"tw\"><table><thead><tr>");
    for (c, h) in t.header.iter().enumerate() {
        let _ = write!(s, "<th class=\"{}\">{}</th>", if c < t.label_cols { "l" } else { "r" }, esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        s.push_str("<tr>");
        for (c, x) in r.iter().enumerate() {
            let tone = match x.tone {
                Tone::Plain => "",
                Tone::Good => " good",
                Tone::Bad => " bad",
                Tone::Dim => " dim",
            };
            let side = if c < t.label_cols || wrap.contains(&c) { "l" } else { "r" };
            let w = if wrap.contains(&c) { " wrap" } else { "" };
            let _ = write!(s, "<td class=\"{side}{tone}{w}\">{}</td>", esc(&x.text));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

/// One plot as the report shows it (`<figure class="plot">`).
pub(crate) fn figure(p: &Plot) -> String {
    format!("<figure class=\"plot\" data-kind=\"{}\" id=\"{}\">{}<figcaption>{}</figcaption></figure>\n", p.kind, esc(&p.id), p.svg, esc(&p.title))
}

/// The host fingerprint and the plan, unfolded.
fn host_block(r: &RunAnalysis) -> Block {
    let h = &r.host;
    let gov: Vec<String> = {
        let mut v: Vec<String> = h.governors.iter().map(|g| g.value.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    let idle: Vec<String> =
        h.cpuidle_states.iter().map(|s| format!("{} ({} µs{})", s.name, s.exit_latency_us, if s.disabled { ", disabled" } else { "" })).collect();
    let p = &r.plan;
    // A target that is not Linux: its OS and version, its model as the
    // terminal says it, `-` for what its agent cannot know (issue 48).
    let other = super::blocks::other_os(r);
    let linux = |v: String| if other.is_some() { "-".to_string() } else { v };
    let rows: Vec<(&str, String)> = vec![
        ("hostname", if h.hostname.is_empty() { "-".into() } else { h.hostname.clone() }),
        (if other.is_some() { "system" } else { "kernel" }, format!("{} {}", h.kernel_release, h.kernel_version).trim().to_string()),
        ("PREEMPT_RT", linux(h.realtime.to_string())),
        ("preemption model", other.clone().unwrap_or_else(|| format!("{} ({})", h.preempt_model, h.preempt_model_source))),
        ("CPU", if h.cpu_model.is_empty() { "-".into() } else { h.cpu_model.clone() }),
        ("CPUs online", format!("{:?}", h.cpus_online)),
        ("isolcpus / nohz_full", linux(format!("{} / {}", h.isolcpus, h.nohz_full))),
        ("clocksource", linux(if h.clocksource.is_empty() { "unknown".into() } else { h.clocksource.clone() })),
        ("governors", linux(gov.join(", "))),
        ("cpuidle states", linux(idle.join(", "))),
        ("SMT", linux(h.smt.clone())),
        ("virtualized", linux(h.virtualized.to_string())),
        ("emulated", if h.emulated { format!("yes: {}", h.emulated_by) } else { "no".into() }),
        ("kernel command line", linux(if h.cmdline.is_empty() { "unknown".into() } else { h.cmdline.clone() })),
        ("real-time set-up", if r.realtime_ok { "ok".into() } else { "incomplete (see warnings)".into() }),
        (
            "plan",
            format!(
                "probes {} · phases {} · {} s each · interval {} µs · {} thread(s) on CPUs {:?} · {} prio {}",
                p.probes.join(","),
                p.phases.join(","),
                p.duration_ns.0 as f64 / 1e9,
                p.interval_ns.0 as f64 / 1e3,
                p.threads,
                p.cpus,
                p.policy,
                p.priority
            ),
        ),
        ("started / finished", format!("{} / {}", r.started_at, r.finished_at)),
        ("source", r.source.clone()),
    ];
    Block::Folded {
        summary: "Host fingerprint and plan".into(),
        class: "host",
        open: true,
        blocks: vec![Block::Fields(rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect())],
    }
}

/// The page style, shared with `rtscope serve`'s pages.
pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{border-bottom:2px solid #1f77b4;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.5em}\
.tw{overflow-x:auto}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
th,td{padding:.2em .5em;border-bottom:1px solid #ddd;white-space:nowrap}th{background:#f4f6f8;white-space:normal;vertical-align:bottom}\
td.r,th.r{text-align:right;font-variant-numeric:tabular-nums}td.l,th.l{text-align:left}\
.good{color:#207020}.bad{color:#b01c1c}.dim{color:#999}\
.warn{background:#fff7e0;border-left:4px solid #e0a000;padding:.4em 1em}\
figure.plot{margin:1em 0;border:1px solid #e4e4e4;padding:.5em;background:#fff}figure.plot svg{display:block;width:100%;height:auto}\
figcaption{font-size:.85em;color:#555}details.host table{font-size:.8em}details.host td{white-space:normal}\
details.bins summary,details.doctor summary{cursor:pointer;font-weight:600;margin:1em 0}td.wrap{white-space:normal}\
.refused{color:#b01c1c}";

/// A whole page: `title`, the report style plus `style`, and `body`.
pub(crate) fn document(title: &str, style: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><style>{STYLE}{style}</style></head><body>\n{body}</body></html>\n",
        esc(title)
    )
}

/// The whole report. `plots` are those of [`crate::report::plots::plots`] for `a`.
pub(crate) fn render(a: &Analysis, plots: &[Plot], unit: Unit) -> String {
    let names: Vec<String> = a.runs.iter().map(|r| r.name.clone()).collect();
    let mut s = format!("<h1>rtscope report</h1><p>rtscope {} · {}</p>\n", esc(&a.tool_version), esc(&names.join(" · ")));
    s.push_str(&runs(a, plots, unit));
    s.push_str(&comparison(a, plots, unit));
    s.push_str(&bins(a, unit));
    document(&format!("rtscope report: {}", names.join(" vs ")), "", &s)
}

/// The HTML report as a [`crate::report::Renderer`], with the plots of
/// [`crate::report::plots::plots`] for the analysis it renders.
pub(crate) struct Html<'p> {
    pub(crate) plots: &'p [Plot],
    pub(crate) unit: Unit,
}

impl crate::report::Renderer for Html<'_> {
    fn render(&self, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        Ok(render(a, self.plots, self.unit).into_bytes())
    }
}

/// Worst samples shown per entry in the report (all of them are in the JSON).
const WORST_SHOWN: usize = 5;

/// One section per run: host and plan, doctor findings (folded), warnings,
/// summary, statistical worst case, the run's plots, its worst samples.
pub(crate) fn runs(a: &Analysis, plots: &[Plot], unit: Unit) -> String {
    let mut s = String::new();
    for (ri, r) in a.runs.iter().enumerate() {
        let _ = writeln!(s, "<section class=\"run\" id=\"run{}\"><h2>{}</h2>", ri + 1, esc(&r.name));
        let mut head = vec![host_block(r)];
        head.extend(doctor_block(r));
        s.push_str(&render_blocks(&head));
        if !r.warnings.is_empty() {
            s.push_str("<div class=\"warn\"><strong>Warnings</strong><ul>");
            for w in &r.warnings {
                let _ = write!(s, "<li>{}</li>", esc(w));
            }
            s.push_str("</ul></div>\n");
        }
        s.push_str(&summary(a, ri, unit));
        let mut rest = suite_blocks(r, unit);
        rest.extend(plots.iter().filter(|p| p.run == Some(ri)).cloned().map(Block::Plot));
        rest.extend(worst_blocks(r, unit));
        s.push_str(&render_blocks(&rest));
        s.push_str("</section>\n");
    }
    s
}

/// The doctor findings stored with the run, folded under their counts.
fn doctor_block(r: &RunAnalysis) -> Option<Block> {
    let t = blocks::doctor_table(r)?;
    let n = |sev: crate::model::Severity| r.host.doctor.iter().filter(|f| f.severity == sev).count();
    let summary = format!(
        "Doctor findings before the run: {} bad, {} warn, {} info, {} ok",
        n(crate::model::Severity::Bad),
        n(crate::model::Severity::Warn),
        n(crate::model::Severity::Info),
        n(crate::model::Severity::Ok)
    );
    Some(Block::Folded { summary, class: "doctor", open: false, blocks: vec![Block::Table(t.wrapping(&[2, 3]))] })
}

/// The summary of run `ri`; with a deadline cut in two (so the page fits
/// 1280 px and no asked-for column is cut off), with the verdict.
fn summary(a: &Analysis, ri: usize, unit: Unit) -> String {
    let r = &a.runs[ri];
    let summary = blocks::summary_table(r, unit, a.options.deadline.is_some());
    if summary.rows.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h3>Summary</h3>\n");
    let Some(d) = a.options.deadline else {
        return s + &table(&summary);
    };
    let (latencies, deadline) = blocks::split_deadline(&summary);
    s.push_str(&table(&latencies));
    let verdicts = blocks::deadline_verdicts(r, unit);
    let failed = verdicts.iter().filter(|(ok, _)| !ok).count();
    let _ = write!(
        s,
        "<h3 id=\"run{}-deadline\">Deadline {} {}: <span class=\"{}\">{}</span></h3><p>{}</p>",
        ri + 1,
        unit.fmt_n(d),
        unit.name(),
        if failed == 0 { "good" } else { "bad" },
        if failed == 0 { "PASS".to_string() } else { format!("FAIL ({failed} of {} entries)", verdicts.len()) },
        esc(blocks::DEADLINE_NOTE)
    );
    s.push_str(&table(&deadline));
    s.push_str("<ul class=\"verdict\">");
    for (ok, line) in &verdicts {
        let _ = write!(s, "<li class=\"{}\">{}</li>", if *ok { "good" } else { "bad" }, esc(line));
    }
    s.push_str("</ul>\n");
    s
}

/// Rhealstone, Thread-Metric and the statistical worst case of a run, each
/// under its heading with what it means.
fn suite_blocks(r: &RunAnalysis, unit: Unit) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(t) = blocks::rhealstone_table(&r.rhealstone, unit) {
        out.push(Block::Heading(2, "Rhealstone".into()));
        out.push(Block::Text("Kar & Porter (1989): the mean time of each component per phase; the composite is 1 / (mean of the six, in seconds).".into()));
        out.push(Block::Table(t));
    }
    if let Some(t) = blocks::thread_metric_table(&r.thread_metric) {
        out.push(Block::Heading(2, "Thread-Metric".into()));
        out.push(Block::Text("Operations completed per interval (mean over the intervals), the spread between intervals and ops per second.".into()));
        out.push(Block::Table(t));
    }
    if let Some(t) = blocks::pwcet_table(r, unit) {
        out.push(Block::Heading(2, "Statistical worst case".into()));
        out.push(Block::Text("Peaks over threshold with a generalized Pareto fit (Grimshaw 1993 MLE); the latency exceeded with probability p per sample and its 95 % bootstrap interval. Given only when the tail is long enough, independent (Ljung–Box) and stationary (the halves of the run agree); otherwise the reason is shown. The observed maximum is always shown beside it.".into()));
        out.push(Block::Table(t));
        out.extend(blocks::pwcet_refusals(r));
    }
    out
}

/// The worst samples of each entry, when and where, and what held the CPU
/// when they were traced.
fn worst_blocks(r: &RunAnalysis, unit: Unit) -> Vec<Block> {
    let Some(t) = blocks::worst_table(r, unit, WORST_SHOWN) else { return Vec::new() };
    let traced = r.entries.iter().any(|e| e.worst.iter().any(|w| w.trace.is_some()));
    vec![
        Block::Heading(2, "Worst samples".into()),
        Block::Text(format!(
            "The {WORST_SHOWN} longest latencies of each entry (over all its threads), when and where they were taken{}.",
            if traced {
                ", and what held the CPU from the due time to the wake-up (threshold tracing)"
            } else {
                "; with --trace-threshold the table also says what held the CPU"
            }
        )),
        Block::Table(t.wrapping(&[8])),
    ]
}

/// The comparison of two or more runs (the blocks `rtscope compare`
/// shows: notes on paired phases, the table, the sentences, what is not in
/// every input), then the overlay plots.
pub(crate) fn comparison(a: &Analysis, plots: &[Plot], unit: Unit) -> String {
    if a.comparison.systems.len() < 2 {
        return String::new();
    }
    let mut b = blocks::compare_blocks(a, unit, false);
    b.extend(plots.iter().filter(|p| p.run.is_none()).cloned().map(Block::Plot));
    format!("<section id=\"comparison\">{}</section>\n", render_blocks_at(&b, 0))
}

/// The bin tables (hundreds of rows) folded: the data is there, the page
/// ends with the plots.
pub(crate) fn bins(a: &Analysis, unit: Unit) -> String {
    let c = &a.comparison;
    let rows: usize = c.bin_tables.iter().map(|t| t.rows.len()).sum();
    let summary = format!(
        "{} table(s), {rows} rows of {} {} bins: counts per bin and system",
        c.bin_tables.len(),
        c.bin_tables.first().map(|t| unit.fmt_n(t.width_ns)).unwrap_or_default(),
        unit.name()
    );
    let folded = Block::Folded { summary, class: "bins", open: false, blocks: blocks::bin_blocks(a, unit) };
    format!("<section id=\"bins\"><h2>Bin tables</h2>\n{}</section>\n", render_blocks_at(&[folded], 0))
}

/// Layout-free blocks (`report::blocks`) as HTML inside a section of a
/// page: a level-`n` heading is `<h{n+1}>`.
pub(crate) fn render_blocks(blocks: &[blocks::Block]) -> String {
    render_blocks_at(blocks, 1)
}

/// A list opened by `open` (`<ul>` or `<ul class="…">`), one `<li>` an item.
fn list(s: &mut String, open: &str, items: &[String]) {
    s.push_str(open);
    for x in items {
        let _ = write!(s, "<li>{}</li>", esc(x));
    }
    s.push_str("</ul>\n");
}

/// Layout-free blocks as HTML, a level-`n` heading as `<h{n+shift}>`:
/// headings, paragraphs, lists, tables, name–value tables, folded blocks
/// (`<details>`), plots, captions (`<p class="caption">`), preformatted
/// lines (`<pre>`) and parts (in line).
fn render_blocks_at(blocks: &[blocks::Block], shift: u8) -> String {
    let mut s = String::new();
    for b in blocks {
        match b {
            blocks::Block::Heading(level, t) => {
                let l = (*level).clamp(1, 4) + shift;
                let _ = writeln!(s, "<h{l}>{}</h{l}>", esc(t));
            }
            blocks::Block::Text(t) => {
                let _ = writeln!(s, "<p>{}</p>", esc(t));
            }
            blocks::Block::List(items) => list(&mut s, "<ul>", items),
            blocks::Block::Marked { class, items } => list(&mut s, &format!("<ul class=\"{class}\">"), items),
            blocks::Block::Table(t) => s.push_str(&table(t)),
            blocks::Block::Fields(f) => {
                s.push_str("<table>");
                for (k, v) in f {
                    let _ = write!(s, "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>", esc(k), esc(v));
                }
                s.push_str("</table>");
            }
            blocks::Block::Folded { summary, class, open, blocks } => {
                let _ = write!(s, "<details class=\"{class}\"{}><summary>{}</summary>", if *open { " open" } else { "" }, esc(summary));
                s.push_str(&render_blocks_at(blocks, shift));
                s.push_str("</details>\n");
            }
            blocks::Block::Plot(p) => s.push_str(&figure(p)),
            blocks::Block::Caption(t) => {
                let _ = writeln!(s, "<p class=\"caption\">{}</p>", esc(t));
            }
            blocks::Block::Pre(t) => {
                let _ = writeln!(s, "<pre>{}</pre>", esc(t.trim_matches('\n')));
            }
            blocks::Block::Part(blocks) => s.push_str(&render_blocks_at(blocks, shift)),
        }
    }
    s
}
