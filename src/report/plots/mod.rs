//! The report's plots, as SVG strings drawn with `plotters` (SVG backend).
//!
//! Why plotters: it is the maintained Rust plotting crate made for exactly
//! these charts (line series, log axes, legends), and its SVG backend needs
//! no fonts, no system libraries and no JavaScript: each plot is a plain
//! `<svg>` element that the HTML report inlines (so it works offline and
//! prints), and that `--plots DIR` writes as a file for papers. Text is
//! emitted as SVG `<text>` and laid out by the viewer.
//!
//! Plots (seed 000's figures and the OSADL "latency plot"):
//! - `timeline`: latency over time, per-second min / mean / max per thread
//!   (log latency axis; a partial second as markers);
//! - `histogram`: counts per latency bin on a log scale, log latency axis,
//!   one line per CPU;
//! - `exceedance`: P(latency > x) on a log scale, per thread and merged — the
//!   tail, where real-time systems differ;
//! - `phases`: the merged exceedance curve of every phase of a probe;
//! - `systems`, `systems-histogram`: the same entry on every system compared;
//! - `pwcet`: the observed exceedance curve with the fitted GPD tail and the
//!   estimates at 1e-6 and 1e-9 with their intervals.
//!
//! Every plot is 1100×460 with its legend in a column right of the data,
//! tick and legend text 16 units (plotters writes 13 px) high: about 13 px in the HTML report at
//! 1280 px, where plots take the page's full width.

mod charts;
mod draw;
mod throughput;
mod windows;

use crate::analysis::compare::EntryKey;
use crate::analysis::compare::Row as CompareRow;
use crate::analysis::summary::{Analysis, EntryAnalysis, RunAnalysis};
use crate::model::Bucket;

use charts::{exceedance_chart, histogram_chart, pwcet_chart, timeline_chart};
pub(crate) use draw::slug;
use draw::us;
pub(crate) use throughput::thread_metric_plots;
pub(crate) use windows::windows_plot;

/// One plot.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    /// File-name-safe id, unique in the report (`run1-timer-idle-exceedance`).
    pub(crate) id: String,
    /// `timeline`, `histogram`, `exceedance`, `phases`, `systems`, `systems-histogram`, `pwcet`.
    pub(crate) kind: &'static str,
    pub(crate) title: String,
    /// Which run it belongs to (index), or `None` for comparison plots.
    pub(crate) run: Option<usize>,
    pub(crate) svg: String,
}

fn who(e: &EntryAnalysis) -> String {
    match (e.thread, e.cpu) {
        (Some(t), Some(c)) => format!("thread {t} (cpu {c})"),
        (Some(t), None) => format!("thread {t}"),
        _ => "all threads".into(),
    }
}

/// Every plot of the report, in display order: per run, each entry's
/// plots and the per-phase overlays; the Thread-Metric bars; with two or
/// more runs, each compared entry on every system.
pub(crate) fn plots(a: &Analysis) -> Vec<Plot> {
    let mut out = Vec::new();
    // With --deadline every latency plot draws it.
    let dl = a.options.deadline.map(|d| us(d.0 as f64));
    for (ri, r) in a.runs.iter().enumerate() {
        let keys: Vec<EntryKey> = crate::units::first_seen(r.entries.iter().map(|e| e.key()));
        for k in &keys {
            out.extend(entry_plots(ri, r, k, dl));
        }
        out.extend(phase_overlays(ri, r, &keys, dl));
    }
    out.extend(thread_metric_plots(a));
    if a.runs.len() >= 2 {
        for row in &a.comparison.rows {
            out.extend(system_plots(a, row, dl));
        }
    }
    out
}

/// One entry's plots (the threads of a probe/phase/variant of run `ri`):
/// timeline, histogram per CPU, exceedance per thread and merged, and the
/// statistical worst case when there is one.
fn entry_plots(ri: usize, r: &RunAnalysis, k: &EntryKey, dl: Option<f64>) -> Vec<Plot> {
    let group: Vec<&EntryAnalysis> = r.entries.iter().filter(|e| &e.key() == k).collect();
    let threads: Vec<&EntryAnalysis> = group.iter().filter(|e| e.thread.is_some()).copied().collect();
    let merged = group.iter().find(|e| e.thread.is_none()).copied();
    let per_thread: Vec<&EntryAnalysis> = if threads.is_empty() { group.clone() } else { threads };
    let base = format!("run{}-{}", ri + 1, slug(&k.label()));
    let name = format!("{} — {}", r.name, k.label());
    let plot =
        |kind: &'static str, title: &str, svg: String| Plot { id: format!("{base}-{kind}"), kind, title: format!("{name}: {title}"), run: Some(ri), svg };
    let mut out = vec![plot("timeline", "latency over time", timeline_chart(&format!("{}: per-second min / mean / max", k.label()), &per_thread, dl))];
    let hs: Vec<(String, &[Bucket])> = per_thread.iter().map(|e| (who(e), e.histogram.as_slice())).collect();
    out.push(plot("histogram", "latency histogram per CPU", histogram_chart(&format!("{}: histogram (log counts)", k.label()), &hs, dl)));
    let mut xs: Vec<(String, &[Bucket])> = hs;
    if let Some(m) = merged {
        xs.push(("all threads".into(), m.histogram.as_slice()));
    }
    out.push(plot("exceedance", "exceedance (tail)", exceedance_chart(&format!("{}: P(latency > x)", k.label()), &xs, merged.is_some(), dl)));
    if let Some(m) = crate::model::merged_of_group(&group, |e| e.result) {
        if let Some(s) = pwcet_chart(&format!("{}: statistical worst case", k.label()), m) {
            out.push(plot("pwcet", "statistical worst case", s));
        }
    }
    out
}

/// Per probe/variant of run `ri` measured in two or more phases: the merged
/// exceedance curve of every phase.
fn phase_overlays(ri: usize, r: &RunAnalysis, keys: &[EntryKey], dl: Option<f64>) -> Vec<Plot> {
    let pv: Vec<(String, Option<String>)> = crate::units::first_seen(keys.iter().map(|k| (k.probe.clone(), k.variant.clone())));
    let mut out = Vec::new();
    for (probe, variant) in pv {
        let phases: Vec<&EntryAnalysis> = merged_of(&r.entries).into_iter().filter(|e| e.probe == probe && e.variant == variant).collect();
        if phases.len() < 2 {
            continue;
        }
        let label = match &variant {
            Some(v) => format!("{probe}[{v}]"),
            None => probe.clone(),
        };
        let xs: Vec<(String, &[Bucket])> = phases.iter().map(|e| (e.phase.clone(), e.histogram.as_slice())).collect();
        out.push(Plot {
            id: format!("run{}-{}-phases", ri + 1, slug(&label)),
            kind: "phases",
            title: format!("{} — {label}: phases compared", r.name),
            run: Some(ri),
            svg: exceedance_chart(&format!("{label}: P(latency > x) per phase"), &xs, false, dl),
        });
    }
    out
}

/// One comparison row on every system that has it: the tail and the
/// histogram overlaid; nothing when fewer than two systems have it.
fn system_plots(a: &Analysis, row: &CompareRow, dl: Option<f64>) -> Vec<Plot> {
    let k = &row.key;
    // Each system's entry of the row, in the phase it was paired
    // under (phases differ when the comparison pairs by probe).
    let per: Vec<(String, &EntryAnalysis)> = a
        .runs
        .iter()
        .zip(&row.phases)
        .filter_map(|(r, phase)| {
            let phase = phase.as_ref()?;
            merged_of(&r.entries).into_iter().find(|e| e.probe == k.probe && e.variant == k.variant && &e.phase == phase).map(|e| (r.name.clone(), e))
        })
        .collect();
    if per.len() < 2 {
        return Vec::new();
    }
    let xs: Vec<(String, &[Bucket])> = per.iter().map(|(n, e)| (n.clone(), e.histogram.as_slice())).collect();
    vec![
        Plot {
            id: format!("compare-{}-systems", slug(&k.label())),
            kind: "systems",
            title: format!("{}: systems compared (tail)", k.label()),
            run: None,
            svg: exceedance_chart(&format!("{}: P(latency > x) per system", k.label()), &xs, false, dl),
        },
        Plot {
            id: format!("compare-{}-systems-histogram", slug(&k.label())),
            kind: "systems-histogram",
            title: format!("{}: systems compared (histogram)", k.label()),
            run: None,
            svg: histogram_chart(&format!("{}: histogram per system (log counts)", k.label()), &xs, dl),
        },
    ]
}

/// The merged entry of each probe/phase/variant (or the only entry).
pub(crate) fn merged_of<'a, 'r>(entries: &'a [EntryAnalysis<'r>]) -> Vec<&'a EntryAnalysis<'r>> {
    crate::model::merged_or_sole(entries, |e| e.result)
}
