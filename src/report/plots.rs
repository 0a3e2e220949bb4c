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
//! - `timeline`: latency over time, per-second min / mean / max per thread;
//! - `histogram`: counts per latency bin on a log scale, one line per CPU;
//! - `exceedance`: P(latency > x) on a log scale, per thread and merged — the
//!   tail, where real-time systems differ;
//! - `phases`: the merged exceedance curve of every phase of a probe;
//! - `systems`, `systems-histogram`: the same entry on every system compared;
//! - `pwcet`: the observed exceedance curve with the fitted GPD tail and the
//!   estimates at 1e-6 and 1e-9 with their intervals.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::compare::EntryKey;
use crate::analysis::percentiles::{exceedance, rebin};
use crate::analysis::summary::{Analysis, EntryAnalysis};
use crate::model::{Bucket, Nanos};

const W: u32 = 900;
const H: u32 = 420;
/// Exceedance curves keep at most this many points (plots, not data).
const MAX_POINTS: usize = 1500;

/// One plot.
#[derive(Debug, Clone)]
pub struct Plot {
    /// File-name-safe id, unique in the report (`run1-timer-idle-exceedance`).
    pub id: String,
    /// `timeline`, `histogram`, `exceedance`, `phases`, `systems`, `systems-histogram`, `pwcet`.
    pub kind: &'static str,
    pub title: String,
    /// Which run it belongs to (index), or `None` for comparison plots.
    pub run: Option<usize>,
    pub svg: String,
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult) -> String {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H)).into_drawing_area();
        let ok = root.fill(&WHITE).is_ok() && draw(&root).is_ok() && root.present().is_ok();
        if !ok {
            let _ = root.draw(&Text::new("plot could not be drawn", (20, 20), ("sans-serif", 14).into_font()));
        }
    }
    s
}

pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// Exceedance points with y > 0, thinned to [`MAX_POINTS`].
fn exceedance_points(hist: &[Bucket]) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> =
        exceedance(hist).into_iter().filter(|p| p.1 > 0.0).map(|(x, y)| (us(x.0 as f64), y)).collect();
    thin(pts)
}

fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    let step = pts.len().div_ceil(MAX_POINTS);
    let last = *pts.last().unwrap();
    let mut out: Vec<(f64, f64)> = pts.into_iter().step_by(step).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// Exceedance curves, one per (label, histogram). When the curves span
/// more than a factor 50 in latency (systems or phases orders of magnitude
/// apart, seed 000's RTAI vs stock Linux), the latency axis is logarithmic
/// (drawn as log10 of µs with labels in µs) so every curve stays visible.
fn exceedance_chart(title: &str, series: &[(String, &[Bucket])], bold_last: bool) -> String {
    let mut curves: Vec<(String, Vec<(f64, f64)>)> =
        series.iter().map(|(l, h)| (l.clone(), exceedance_points(h))).collect();
    let xs = || curves.iter().flat_map(|c| c.1.iter().map(|p| p.0)).filter(|x| *x > 0.0);
    let (lo, hi) = (xs().fold(f64::MAX, f64::min), xs().fold(0.0, f64::max));
    let log_x = hi > 0.0 && lo < f64::MAX && hi / lo > 50.0;
    let (xmin, xmax) = if log_x {
        for c in curves.iter_mut() {
            c.1 = c.1.iter().filter(|p| p.0 > 0.0).map(|p| (p.0.log10(), p.1)).collect();
        }
        (lo.log10().floor(), hi.log10() + 0.05)
    } else {
        (0.0, hi.max(0.001) * 1.05)
    };
    let ymin = curves.iter().flat_map(|c| c.1.iter().map(|p| p.1)).fold(1.0, f64::min).min(0.1) / 2.0;
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(xmin..xmax, (ymin..1.0f64).log_scale())?;
        let fmt_x = move |v: &f64| -> String {
            if log_x {
                let x = 10f64.powf(*v);
                if x >= 10.0 { format!("{x:.0}") } else { format!("{x:.2}") }
            } else {
                format!("{v:.1}")
            }
        };
        chart
            .configure_mesh()
            .x_label_formatter(&fmt_x)
            .x_desc(if log_x { "latency (µs, log scale)" } else { "latency (µs)" })
            .y_desc("P(latency > x)")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        let n = curves.len();
        for (i, (label, pts)) in curves.into_iter().enumerate() {
            let c = colour(i);
            let width = if bold_last && i + 1 == n { 3 } else { 1 };
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(width)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })
}

/// Log-count histogram (OSADL latency plot), one line per (label, histogram).
/// Bins are fixed-width (a "nice" width giving ≤ ~400 bins, at least 1 µs);
/// empty bins are drawn on the axis.
fn histogram_chart(title: &str, series: &[(String, &[Bucket])]) -> String {
    let max_ns = series.iter().filter_map(|(_, h)| h.last().map(|b| b.hi_ns.0)).max().unwrap_or(1);
    let width = nice_width(max_ns / 400).max(1000);
    let lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, h)| {
            let bins = rebin(h, Nanos(width));
            let kmax = max_ns / width;
            let mut pts = Vec::with_capacity(kmax as usize + 1);
            let mut it = bins.iter().peekable();
            for k in 0..=kmax {
                let c = match it.peek() {
                    Some((bk, c)) if *bk == k => {
                        let c = *c;
                        it.next();
                        c
                    }
                    _ => 0,
                };
                pts.push((us((k * width) as f64 + width as f64 / 2.0), (c as f64).max(0.5)));
            }
            (l.clone(), pts)
        })
        .collect();
    let ymax = lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)).fold(1.0, f64::max) * 2.0;
    let xmax = us(max_ns as f64) * 1.05 + us(width as f64);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xmax, (0.5f64..ymax).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(format!("latency (µs), bins of {} µs", width as f64 / 1000.0))
            .y_desc("samples")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        for (i, (label, pts)) in lines.into_iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(1)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })
}

/// 1, 2 or 5 × 10^k, at least `x`.
fn nice_width(x: u64) -> u64 {
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if m * p >= x {
                return m * p;
            }
        }
        p *= 10;
    }
}

/// Per-second min / mean / max per thread.
fn timeline_chart(title: &str, entries: &[&EntryAnalysis]) -> String {
    let tmax = entries
        .iter()
        .flat_map(|e| e.per_second.iter().map(move |s| (s.t_s + e.per_second_width_s.max(1)) as f64))
        .fold(1.0, f64::max);
    let ymax = entries.iter().flat_map(|e| e.per_second.iter().map(|s| us(s.max_ns.0 as f64))).fold(0.001, f64::max)
        * 1.1;
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..tmax, 0f64..ymax)?;
        chart.configure_mesh().x_desc("time (s)").y_desc("latency (µs)").draw()?;
        for (i, e) in entries.iter().enumerate() {
            let c = colour(i);
            let half = e.per_second_width_s.max(1) as f64 / 2.0;
            let who = match e.thread {
                Some(t) => format!("thread {t}"),
                None => "all threads".into(),
            };
            let pts = |f: &dyn Fn(&crate::model::SecondStats) -> f64| -> Vec<(f64, f64)> {
                e.per_second.iter().map(|s| (s.t_s as f64 + half, f(s))).collect()
            };
            chart
                .draw_series(LineSeries::new(pts(&|s| us(s.max_ns.0 as f64)), c.stroke_width(2)))?
                .label(format!("{who} max"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            let cm = c.mix(0.6);
            chart
                .draw_series(LineSeries::new(pts(&|s| us(s.mean_ns)), cm.stroke_width(1)))?
                .label(format!("{who} mean"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], cm.stroke_width(1)));
            let cl = c.mix(0.3);
            chart
                .draw_series(LineSeries::new(pts(&|s| us(s.min_ns.0 as f64)), cl.stroke_width(1)))?
                .label(format!("{who} min"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], cl.stroke_width(1)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    })
}

/// Observed exceedance with the fitted tail and the estimates.
fn pwcet_chart(title: &str, e: &EntryAnalysis) -> Option<String> {
    let est = e.pwcet.as_ref()?.estimate()?.clone();
    let obs = exceedance_points(&e.histogram);
    let zeta = est.excesses as f64 / est.samples as f64;
    let u = est.threshold_ns.0 as f64;
    let pmin = est.levels.iter().map(|l| l.p).fold(1.0, f64::min);
    let xhi = est.levels.iter().map(|l| l.ci_high_ns.max(l.estimate_ns)).fold(e.max_ns.0 as f64, f64::max);
    let fitted: Vec<(f64, f64)> = (0..=200)
        .map(|i| {
            // Log-spaced probabilities from ζ down to pmin.
            let p = zeta * (pmin / zeta).powf(i as f64 / 200.0);
            (us(u + est.fit.excess_quantile(p / zeta)), p)
        })
        .collect();
    let xmax = us(xhi) * 1.05;
    let ymin = pmin / 3.0;
    Some(svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..xmax, (ymin..1.0f64).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("latency (µs)")
            .y_desc("P(latency > x) per sample")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        let c0 = colour(0);
        chart
            .draw_series(LineSeries::new(obs, c0.stroke_width(2)))?
            .label("observed")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c0.stroke_width(2)));
        let c1 = colour(1);
        chart
            .draw_series(LineSeries::new(fitted, c1.stroke_width(2)))?
            .label(format!("GPD tail (ξ = {:.3})", est.fit.xi))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c1.stroke_width(2)));
        for l in &est.levels {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(us(l.ci_low_ns), l.p), (us(l.ci_high_ns), l.p)],
                BLACK.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Circle::new((us(l.estimate_ns), l.p), 4, BLACK.filled())))?;
        }
        let cm = colour(2);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(us(e.max_ns.0 as f64), ymin), (us(e.max_ns.0 as f64), 1.0)],
                cm.stroke_width(1),
            )))?
            .label("observed max")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], cm.stroke_width(1)));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        Ok(())
    }))
}

fn who(e: &EntryAnalysis) -> String {
    match (e.thread, e.cpu) {
        (Some(t), Some(c)) => format!("thread {t} (cpu {c})"),
        (Some(t), None) => format!("thread {t}"),
        _ => "all threads".into(),
    }
}

/// Every plot of the report, in display order.
pub fn plots(a: &Analysis) -> Vec<Plot> {
    let mut out = Vec::new();
    for (ri, r) in a.runs.iter().enumerate() {
        let rid = format!("run{}", ri + 1);
        let mut keys: Vec<EntryKey> = Vec::new();
        for e in &r.entries {
            if !keys.contains(&e.key()) {
                keys.push(e.key());
            }
        }
        for k in &keys {
            let group: Vec<&EntryAnalysis> = r.entries.iter().filter(|e| &e.key() == k).collect();
            let threads: Vec<&EntryAnalysis> = group.iter().filter(|e| e.thread.is_some()).copied().collect();
            let merged = group.iter().find(|e| e.thread.is_none()).copied();
            let per_thread: Vec<&EntryAnalysis> = if threads.is_empty() { group.clone() } else { threads.clone() };
            let base = format!("{rid}-{}", slug(&k.label()));
            let name = format!("{} — {}", r.name, k.label());
            out.push(Plot {
                id: format!("{base}-timeline"),
                kind: "timeline",
                title: format!("{name}: latency over time"),
                run: Some(ri),
                svg: timeline_chart(&format!("{}: per-second min / mean / max", k.label()), &per_thread),
            });
            let hs: Vec<(String, &[Bucket])> = per_thread.iter().map(|e| (who(e), e.histogram.as_slice())).collect();
            out.push(Plot {
                id: format!("{base}-histogram"),
                kind: "histogram",
                title: format!("{name}: latency histogram per CPU"),
                run: Some(ri),
                svg: histogram_chart(&format!("{}: histogram (log counts)", k.label()), &hs),
            });
            let mut xs: Vec<(String, &[Bucket])> = hs.clone();
            if let Some(m) = merged {
                xs.push(("all threads".into(), m.histogram.as_slice()));
            }
            out.push(Plot {
                id: format!("{base}-exceedance"),
                kind: "exceedance",
                title: format!("{name}: exceedance (tail)"),
                run: Some(ri),
                svg: exceedance_chart(&format!("{}: P(latency > x)", k.label()), &xs, merged.is_some()),
            });
            if let Some(m) = merged.or(if group.len() == 1 { Some(group[0]) } else { None }) {
                if let Some(s) = pwcet_chart(&format!("{}: statistical worst case", k.label()), m) {
                    out.push(Plot {
                        id: format!("{base}-pwcet"),
                        kind: "pwcet",
                        title: format!("{name}: statistical worst case"),
                        run: Some(ri),
                        svg: s,
                    });
                }
            }
        }
        // Per-phase overlays.
        let mut pv: Vec<(String, Option<String>)> = Vec::new();
        for k in &keys {
            let x = (k.probe.clone(), k.variant.clone());
            if !pv.contains(&x) {
                pv.push(x);
            }
        }
        for (probe, variant) in pv {
            let phases: Vec<&EntryAnalysis> = merged_of(&r.entries)
                .into_iter()
                .filter(|e| e.probe == probe && e.variant == variant)
                .collect();
            if phases.len() < 2 {
                continue;
            }
            let label = match &variant {
                Some(v) => format!("{probe}[{v}]"),
                None => probe.clone(),
            };
            let xs: Vec<(String, &[Bucket])> = phases.iter().map(|e| (e.phase.clone(), e.histogram.as_slice())).collect();
            out.push(Plot {
                id: format!("{rid}-{}-phases", slug(&label)),
                kind: "phases",
                title: format!("{} — {label}: phases compared", r.name),
                run: Some(ri),
                svg: exceedance_chart(&format!("{label}: P(latency > x) per phase"), &xs, false),
            });
        }
    }
    if a.runs.len() >= 2 {
        for row in &a.comparison.rows {
            let k = &row.key;
            let per: Vec<(String, &EntryAnalysis)> = a
                .runs
                .iter()
                .filter_map(|r| merged_of(&r.entries).into_iter().find(|e| &e.key() == k).map(|e| (r.name.clone(), e)))
                .collect();
            if per.len() < 2 {
                continue;
            }
            let xs: Vec<(String, &[Bucket])> = per.iter().map(|(n, e)| (n.clone(), e.histogram.as_slice())).collect();
            out.push(Plot {
                id: format!("compare-{}-systems", slug(&k.label())),
                kind: "systems",
                title: format!("{}: systems compared (tail)", k.label()),
                run: None,
                svg: exceedance_chart(&format!("{}: P(latency > x) per system", k.label()), &xs, false),
            });
            out.push(Plot {
                id: format!("compare-{}-systems-histogram", slug(&k.label())),
                kind: "systems-histogram",
                title: format!("{}: systems compared (histogram)", k.label()),
                run: None,
                svg: histogram_chart(&format!("{}: histogram per system (log counts)", k.label()), &xs),
            });
        }
    }
    out
}

/// The merged entry of each probe/phase/variant (or the only entry).
pub fn merged_of<'a, 'r>(entries: &'a [EntryAnalysis<'r>]) -> Vec<&'a EntryAnalysis<'r>> {
    let mut keys: Vec<EntryKey> = Vec::new();
    for e in entries {
        if !keys.contains(&e.key()) {
            keys.push(e.key());
        }
    }
    keys.iter()
        .filter_map(|k| {
            let g: Vec<&EntryAnalysis> = entries.iter().filter(|e| &e.key() == k).collect();
            g.iter().find(|e| e.thread.is_none()).copied().or(if g.len() == 1 { Some(g[0]) } else { None })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("timer[250us]/idle"), "timer-250us-idle");
        assert_eq!(slug("a b/c"), "a-b-c");
    }

    #[test]
    fn nice_widths() {
        assert_eq!(nice_width(0), 1);
        assert_eq!(nice_width(3), 5);
        assert_eq!(nice_width(1200), 2000);
        assert_eq!(nice_width(5000), 5000);
    }

    #[test]
    fn thinning_keeps_the_last_point() {
        let pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0 / (i + 1) as f64)).collect();
        let t = thin(pts);
        assert!(t.len() <= MAX_POINTS + 1);
        assert_eq!(t.last().unwrap().0, 9999.0);
    }
}
