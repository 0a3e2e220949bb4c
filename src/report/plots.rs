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

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::compare::EntryKey;
use crate::analysis::percentiles::{exceedance, rebin};
use crate::analysis::summary::{Analysis, EntryAnalysis};
use crate::model::{Bucket, Nanos};

/// Plot size in SVG units; the HTML report shows plots at the page's full
/// width (about 1:1 at 1280 px), so text sizes below are about pixels.
const W: u32 = 1100;
const H: u32 = 460;
/// The legend's column, right of the plotting area (never over the data).
const LEGEND_W: u32 = 240;
/// Tick labels and legend text.
const TEXT: u32 = 16;
/// Axis descriptions.
const DESC: u32 = 17;
/// Plot titles.
const CAPTION: u32 = 20;
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
            let _ = root.draw(&Text::new("plot could not be drawn", (20, 20), ("sans-serif", TEXT).into_font()));
        }
    }
    s
}

/// How a series looks, for its line and its legend entry.
#[derive(Clone)]
struct Look {
    label: String,
    colour: RGBAColor,
    width: u32,
    /// Dashed line (e.g. the per-second minimum).
    dashed: bool,
    /// Drawn as separate hollow markers, not a line.
    marker: bool,
}

impl Look {
    fn line(label: impl Into<String>, colour: RGBColor, width: u32) -> Look {
        Look { label: label.into(), colour: colour.to_rgba(), width, dashed: false, marker: false }
    }
    fn style(&self) -> ShapeStyle {
        self.colour.stroke_width(self.width)
    }
}

/// A plot with its legend in a column of its own at the right: the chart is
/// drawn by `draw` into the left part, the legend entries `looks` (line or
/// marker sample, then the label) into the right part.
fn svg_with_legend(looks: &[Look], draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult) -> String {
    svg(|root| {
        let (plot, side) = root.split_horizontally(W - LEGEND_W);
        draw(&plot)?;
        let step = if looks.is_empty() { 24 } else { ((H as i32 - 70) / looks.len() as i32).clamp(12, 24) };
        for (i, l) in looks.iter().enumerate() {
            let y = 56 + i as i32 * step;
            if l.marker {
                side.draw(&Circle::new((20, y), 4, l.colour.stroke_width(2)))?;
            } else if l.dashed {
                for x in [4, 16, 28] {
                    side.draw(&PathElement::new(vec![(x, y), (x + 7, y)], l.colour.stroke_width(l.width.max(2))))?;
                }
            } else {
                side.draw(&PathElement::new(vec![(4, y), (35, y)], l.colour.stroke_width(l.width.max(2))))?;
            }
            side.draw(&Text::new(l.label.clone(), (42, y - TEXT as i32 / 2 - 1), ("sans-serif", TEXT).into_font()))?;
        }
        Ok(())
    })
}

/// The chart builder every plot starts from: title, margins, label areas.
fn builder<'a, 'b>(area: &'a DrawingArea<SVGBackend<'b>, Shift>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", CAPTION)).margin(12).x_label_area_size(48).y_label_area_size(72);
    b
}

/// The draw series call of a look: a line, a dashed line or markers.
fn draw_look<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<DB, Cartesian2d<X, Y>>,
    look: &Look,
    pts: Vec<(f64, f64)>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let st = look.style();
    if look.marker {
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, st)))?;
    } else if look.dashed {
        chart.draw_series(DashedLineSeries::new(pts, 6, 4, st))?;
    } else {
        chart.draw_series(LineSeries::new(pts, st))?;
    }
    Ok(())
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

/// The deadline's look: a black dashed line, named in the legend.
fn deadline_look(dl_us: f64) -> Look {
    let v = if dl_us >= 10.0 { format!("{dl_us:.0}") } else { format!("{dl_us:.1}") };
    Look { dashed: true, ..Look::line(format!("deadline {v} µs"), RGBColor(0, 0, 0), 2) }
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
fn exceedance_chart(title: &str, series: &[(String, &[Bucket])], bold_last: bool, deadline: Option<f64>) -> String {
    let mut curves: Vec<(String, Vec<(f64, f64)>)> =
        series.iter().map(|(l, h)| (l.clone(), exceedance_points(h))).collect();
    // The deadline (µs) is on the axis even when every sample is far below it.
    let xs = || curves.iter().flat_map(|c| c.1.iter().map(|p| p.0)).chain(deadline).filter(|x| *x > 0.0);
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
    let n = curves.len();
    let looks: Vec<Look> =
        curves.iter().enumerate().map(|(i, (l, _))| Look::line(l.clone(), colour(i), if bold_last && i + 1 == n { 3 } else { 2 })).collect();
    let mut legend = looks.clone();
    legend.extend(deadline.map(deadline_look));
    svg_with_legend(&legend, |root| {
        let mut chart = builder(root, title).build_cartesian_2d(xmin..xmax, (ymin..1.0f64).log_scale())?;
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
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", DESC))
            .x_label_formatter(&fmt_x)
            .x_desc(if log_x { "latency (µs, log scale)" } else { "latency (µs)" })
            .y_desc("P(latency > x)")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        for (look, (_, pts)) in looks.iter().zip(curves) {
            draw_look(&mut chart, look, pts)?;
        }
        if let Some(d) = deadline.filter(|d| *d > 0.0) {
            let x = if log_x { d.log10() } else { d };
            draw_look(&mut chart, &deadline_look(d), vec![(x, ymin), (x, 1.0)])?;
        }
        Ok(())
    })
}

/// Log-count histogram (OSADL latency plot), one line per (label, histogram).
/// Bins are fixed-width (a "nice" width giving ≤ ~400 bins, at least 1 µs);
/// empty bins are drawn on the axis.
fn histogram_chart(title: &str, series: &[(String, &[Bucket])], deadline: Option<f64>) -> String {
    let max_ns = series.iter().filter_map(|(_, h)| h.last().map(|b| b.hi_ns.0)).max().unwrap_or(1);
    let min_ns = series.iter().filter_map(|(_, h)| h.first().map(|b| b.lo_ns.0)).min().unwrap_or(0);
    let width = nice_width(max_ns / 400).max(1000);
    // From the bin below the smallest sample to the one above the largest:
    // empty bins are drawn on the axis, nothing left of the data.
    let (k0, kmax) = ((min_ns / width).saturating_sub(1), max_ns / width + 1);
    let lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, h)| {
            let bins = rebin(h, Nanos(width));
            let mut pts = Vec::with_capacity((kmax - k0) as usize + 1);
            let mut it = bins.iter().peekable();
            for k in k0..=kmax {
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
    // Log latency axis: the bulk (a few µs) and the spikes (ms) both get
    // room, where a linear axis squeezes the bulk into its left edge.
    let dl = deadline.filter(|d| *d > 0.0);
    let xmin = (us((k0 * width) as f64 + width as f64 / 2.0) / 1.2).min(dl.map_or(f64::MAX, |d| d / 1.2));
    let xmax = (us(((kmax + 1) * width) as f64) * 1.2).max(dl.map_or(0.0, |d| d * 1.2));
    let looks: Vec<Look> = lines.iter().enumerate().map(|(i, (l, _))| Look::line(l.clone(), colour(i), 2)).collect();
    let mut legend = looks.clone();
    legend.extend(dl.map(deadline_look));
    svg_with_legend(&legend, |root| {
        let mut chart = builder(root, title).build_cartesian_2d((xmin..xmax).log_scale(), (0.5f64..ymax).log_scale())?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", DESC))
            .x_desc(format!("latency (µs, log scale), bins of {} µs", width as f64 / 1000.0))
            .x_label_formatter(&|v| if *v >= 10.0 { format!("{v:.0}") } else { format!("{v:.1}") })
            .y_desc("samples")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        for (look, (_, pts)) in looks.iter().zip(lines) {
            draw_look(&mut chart, look, pts)?;
        }
        if let Some(d) = dl {
            draw_look(&mut chart, &deadline_look(d), vec![(d, 0.5), (d, ymax)])?;
        }
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

/// Per-second min / mean / max per thread. A second holding less than half
/// the typical count of samples (the run's last, partial second; a second
/// cut by an interrupt) is drawn as hollow markers, not joined to the line,
/// so its lower max does not read as the latency dropping.
fn timeline_chart(title: &str, entries: &[&EntryAnalysis], deadline: Option<f64>) -> String {
    let dl = deadline.filter(|d| *d > 0.0);
    let tmax = entries
        .iter()
        .flat_map(|e| e.per_second.iter().map(move |s| (s.t_s + e.per_second_width_s.max(1)) as f64))
        .fold(1.0, f64::max);
    // Log latency axis: min, mean and max stay apart even when spikes are
    // 100× the typical latency (a linear axis flattens min and mean).
    let ymax = entries.iter().flat_map(|e| e.per_second.iter().map(|s| us(s.max_ns.0 as f64))).fold(dl.unwrap_or(0.001), f64::max)
        * 1.5;
    let ymin = entries.iter().flat_map(|e| e.per_second.iter().map(|s| us(s.min_ns.0 as f64))).filter(|v| *v > 0.0).fold(ymax, f64::min)
        .min(dl.unwrap_or(f64::MAX))
        / 1.5;
    // The typical count of each entry, found once (a sort per slot made the
    // chart quadratic in the slots: 85 s for 40 000, issue 36 item 8).
    let medians: Vec<u64> = entries
        .iter()
        .map(|e| {
            let mut counts: Vec<u64> = e.per_second.iter().map(|x| x.count).collect();
            counts.sort_unstable();
            counts.get(counts.len() / 2).copied().unwrap_or(0)
        })
        .collect();
    let partial = |i: usize, s: &crate::model::SecondStats| -> bool { s.count * 2 < medians[i] };
    let any_partial = entries.iter().enumerate().any(|(i, e)| e.per_second.iter().any(|s| partial(i, s)));
    let mut looks: Vec<Look> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let who = match e.thread {
            Some(t) => format!("thread {t}"),
            None => "all threads".into(),
        };
        let c = colour(i);
        looks.push(Look::line(format!("{who} max"), c, 2));
        looks.push(Look { colour: c.mix(0.7), ..Look::line(format!("{who} mean"), c, 2) });
        looks.push(Look { dashed: true, ..Look::line(format!("{who} min"), c, 2) });
    }
    let mut legend = looks.clone();
    if any_partial {
        legend.push(Look { marker: true, ..Look::line("partial second", RGBColor(90, 90, 90), 2) });
    }
    legend.extend(dl.map(deadline_look));
    svg_with_legend(&legend, |root| {
        let mut chart = builder(root, title).build_cartesian_2d(0f64..tmax, (ymin.min(ymax / 2.0)..ymax).log_scale())?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", DESC))
            .x_desc("time (s)")
            .y_desc("latency (µs, log scale)")
            .y_label_formatter(&|v| if *v >= 10.0 { format!("{v:.0}") } else { format!("{v:.1}") })
            .draw()?;
        for (i, e) in entries.iter().enumerate() {
            let half = e.per_second_width_s.max(1) as f64 / 2.0;
            let (full, cut): (Vec<&crate::model::SecondStats>, Vec<&crate::model::SecondStats>) = e.per_second.iter().partition(|s| !partial(i, s));
            type Get = fn(&crate::model::SecondStats) -> f64;
            let gets: [Get; 3] = [|s| us(s.max_ns.0 as f64), |s| us(s.mean_ns), |s| us(s.min_ns.0 as f64)];
            for (j, get) in gets.iter().enumerate() {
                let look = &looks[i * 3 + j];
                draw_look(&mut chart, look, full.iter().map(|s| (s.t_s as f64 + half, get(s))).collect())?;
                let marker = Look { marker: true, ..look.clone() };
                draw_look(&mut chart, &marker, cut.iter().map(|s| (s.t_s as f64 + half, get(s))).collect())?;
            }
        }
        if let Some(d) = dl {
            draw_look(&mut chart, &deadline_look(d), vec![(0.0, d), (tmax, d)])?;
        }
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
    let looks = [
        Look::line("observed", colour(0), 2),
        Look::line(format!("GPD tail (ξ = {:.3})", est.fit.xi), colour(1), 2),
        Look::line("estimate, 95 % CI", RGBColor(0, 0, 0), 2),
        Look { dashed: true, ..Look::line("observed max", colour(2), 2) },
    ];
    Some(svg_with_legend(&looks, |root| {
        let mut chart = builder(root, title).build_cartesian_2d(0f64..xmax, (ymin..1.0f64).log_scale())?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", DESC))
            .x_desc("latency (µs)")
            .y_desc("P(latency > x) per sample")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        draw_look(&mut chart, &looks[0], obs)?;
        draw_look(&mut chart, &looks[1], fitted)?;
        for l in &est.levels {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(us(l.ci_low_ns), l.p), (us(l.ci_high_ns), l.p)],
                BLACK.stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Circle::new((us(l.estimate_ns), l.p), 4, BLACK.filled())))?;
        }
        draw_look(&mut chart, &looks[3], vec![(us(e.max_ns.0 as f64), ymin), (us(e.max_ns.0 as f64), 1.0)])?;
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
    // With --deadline every latency plot draws it.
    let dl = a.options.deadline.map(|d| us(d.0 as f64));
    for (ri, r) in a.runs.iter().enumerate() {
        let rid = format!("run{}", ri + 1);
        let keys: Vec<EntryKey> = crate::units::first_seen(r.entries.iter().map(|e| e.key()));
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
                svg: timeline_chart(&format!("{}: per-second min / mean / max", k.label()), &per_thread, dl),
            });
            let hs: Vec<(String, &[Bucket])> = per_thread.iter().map(|e| (who(e), e.histogram.as_slice())).collect();
            out.push(Plot {
                id: format!("{base}-histogram"),
                kind: "histogram",
                title: format!("{name}: latency histogram per CPU"),
                run: Some(ri),
                svg: histogram_chart(&format!("{}: histogram (log counts)", k.label()), &hs, dl),
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
                svg: exceedance_chart(&format!("{}: P(latency > x)", k.label()), &xs, merged.is_some(), dl),
            });
            if let Some(m) = crate::model::merged_of_group(&group, |e| e.result) {
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
        let pv: Vec<(String, Option<String>)> = crate::units::first_seen(keys.iter().map(|k| (k.probe.clone(), k.variant.clone())));
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
                svg: exceedance_chart(&format!("{label}: P(latency > x) per phase"), &xs, false, dl),
            });
        }
    }
    out.extend(thread_metric_plots(a));
    if a.runs.len() >= 2 {
        for row in &a.comparison.rows {
            let k = &row.key;
            // Each system's entry of the row, in the phase it was paired
            // under (phases differ when the comparison pairs by probe).
            let per: Vec<(String, &EntryAnalysis)> = a
                .runs
                .iter()
                .zip(&row.phases)
                .filter_map(|(r, phase)| {
                    let phase = phase.as_ref()?;
                    merged_of(&r.entries)
                        .into_iter()
                        .find(|e| e.probe == k.probe && e.variant == k.variant && &e.phase == phase)
                        .map(|e| (r.name.clone(), e))
                })
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
                svg: exceedance_chart(&format!("{}: P(latency > x) per system", k.label()), &xs, false, dl),
            });
            out.push(Plot {
                id: format!("compare-{}-systems-histogram", slug(&k.label())),
                kind: "systems-histogram",
                title: format!("{}: systems compared (histogram)", k.label()),
                run: None,
                svg: histogram_chart(&format!("{}: histogram per system (log counts)", k.label()), &xs, dl),
            });
        }
    }
    out
}

/// The merged entry of each probe/phase/variant (or the only entry).
pub fn merged_of<'a, 'r>(entries: &'a [EntryAnalysis<'r>]) -> Vec<&'a EntryAnalysis<'r>> {
    crate::model::merged_or_sole(entries, |e| e.result)
}

/// A monitor run's windows over time (OSADL's long-term plot): per probe,
/// variant and phase, the max and the p99 of each window merged over
/// threads, log latency axis; time in minutes, hours or days since the
/// first window. `None` when no merged window has samples.
pub fn windows_plot(id: &str, label: &str, windows: &[crate::model::Window]) -> Option<Plot> {
    use time::format_description::well_known::Rfc3339;
    let at = |w: &crate::model::Window| time::OffsetDateTime::parse(&w.started_at, &Rfc3339).ok().map(|t| t.unix_timestamp() as f64);
    let merged: Vec<(&crate::model::Window, f64)> =
        windows.iter().filter(|w| w.thread.is_none() && w.samples > 0).filter_map(|w| at(w).map(|t| (w, t))).collect();
    let t0 = merged.iter().map(|(_, t)| *t).fold(f64::INFINITY, f64::min);
    let t1 = merged.iter().map(|(w, t)| t + w.duration_ns.0 as f64 / 1e9).fold(f64::NEG_INFINITY, f64::max);
    if merged.is_empty() || !t0.is_finite() {
        return None;
    }
    let span = (t1 - t0).max(1.0);
    let (per, unit) = if span < 2.0 * 3600.0 {
        (60.0, "minutes")
    } else if span < 72.0 * 3600.0 {
        (3600.0, "hours")
    } else {
        (86400.0, "days")
    };
    // Per group: (x, max µs, p99 µs) of each window.
    type Series = Vec<(f64, f64, f64)>;
    let mut groups: Vec<(String, Series)> = Vec::new();
    for (w, t) in &merged {
        let key = format!("{}{} {}", w.probe, w.variant.as_ref().map(|v| format!(":{v}")).unwrap_or_default(), w.phase);
        let x = (t + w.duration_ns.0 as f64 / 2e9 - t0) / per;
        let pt = (x, us(w.max_ns.0 as f64).max(0.001), us(w.p99_ns.0 as f64).max(0.001));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(pt),
            None => groups.push((key, vec![pt])),
        }
    }
    let ymax = merged.iter().map(|(w, _)| us(w.max_ns.0 as f64)).fold(0.001, f64::max) * 1.5;
    let ymin = merged.iter().map(|(w, _)| us(w.p99_ns.0 as f64)).filter(|v| *v > 0.0).fold(ymax, f64::min) / 1.5;
    let mut looks = Vec::new();
    for (i, (k, _)) in groups.iter().enumerate() {
        looks.push(Look::line(format!("{k} max"), colour(i), 2));
        looks.push(Look { dashed: true, ..Look::line(format!("{k} p99"), colour(i), 2) });
    }
    let xmax = span / per;
    let title = format!("{label}: max and p99 per window");
    let svg = svg_with_legend(&looks, |root| {
        let mut chart = builder(root, &title).build_cartesian_2d(0f64..xmax, (ymin.min(ymax / 2.0)..ymax).log_scale())?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", DESC))
            .x_desc(format!("time since the first window ({unit})"))
            .y_desc("latency (µs, log scale)")
            .y_label_formatter(&|v| if *v >= 10.0 { format!("{v:.0}") } else { format!("{v:.1}") })
            .draw()?;
        for (i, (_, pts)) in groups.iter().enumerate() {
            // One window alone is a point, not a line: markers then.
            let one = pts.len() == 1;
            let max = Look { marker: one, ..looks[i * 2].clone() };
            let p99 = Look { marker: one, ..looks[i * 2 + 1].clone() };
            draw_look(&mut chart, &max, pts.iter().map(|p| (p.0, p.1)).collect())?;
            draw_look(&mut chart, &p99, pts.iter().map(|p| (p.0, p.2)).collect())?;
        }
        Ok(())
    });
    Some(Plot { id: format!("{}-windows", slug(id)), kind: "windows", title, run: None, svg })
}

/// Thread-Metric's result as bars: ops per second per test (log scale), one
/// bar per series (phases of a run, or systems), grouped by test.
pub fn throughput_bars(title: &str, tests: &[String], series: &[(String, Vec<Option<f64>>)]) -> String {
    let looks: Vec<Look> = series.iter().enumerate().map(|(i, (n, _))| Look::line(n.clone(), colour(i), 8)).collect();
    let vals = || series.iter().flat_map(|(_, v)| v.iter().flatten().copied()).filter(|v| *v > 0.0);
    let ymax = vals().fold(1.0f64, f64::max) * 2.0;
    let ymin = (vals().fold(f64::INFINITY, f64::min) / 2.0).clamp(0.1, ymax / 4.0);
    let n = tests.len().max(1) as f64;
    let width = 0.8 / series.len().max(1) as f64;
    svg_with_legend(&looks, |root| {
        let mut chart = builder(root, title).build_cartesian_2d(0f64..n, (ymin..ymax).log_scale())?;
        let names = tests.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(tests.len() * 2 + 1)
            .label_style(("sans-serif", TEXT - 3))
            .axis_desc_style(("sans-serif", DESC))
            .x_label_formatter(&|x| {
                let k = x.floor();
                if (x - k - 0.5).abs() < 0.05 {
                    names.get(k as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("ops per second (log scale)")
            .y_label_formatter(&|v| fmt_short(*v))
            .draw()?;
        for (j, (_, v)) in series.iter().enumerate() {
            let c = colour(j);
            chart.draw_series(v.iter().enumerate().filter_map(|(k, x)| {
                let x = (*x)?;
                let left = k as f64 + 0.1 + j as f64 * width;
                Some(Rectangle::new([(left, ymin), (left + width * 0.9, x.max(ymin))], c.filled()))
            }))?;
        }
        Ok(())
    })
}

/// 1.2k, 3.4M, 5.6G.
fn fmt_short(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// The Thread-Metric bar charts: one per run with `throughput` entries
/// (series = phases), and with two or more runs one comparing them (series
/// = systems, phase by phase as the comparison pairs them).
pub fn thread_metric_plots(a: &Analysis) -> Vec<Plot> {
    use crate::model::suites::THREAD_METRIC;
    let mut out = Vec::new();
    for (ri, r) in a.runs.iter().enumerate() {
        // The tests this run has, in the suite's order, labelled by variant.
        let tests: Vec<(&str, &str)> = THREAD_METRIC.iter().copied().filter(|(name, _)| r.thread_metric.iter().any(|t| t.test == *name)).collect();
        if tests.is_empty() {
            continue;
        }
        let phases: Vec<&str> = crate::units::first_seen(r.thread_metric.iter().map(|t| t.phase.as_str()));
        let series: Vec<(String, Vec<Option<f64>>)> = phases
            .iter()
            .map(|p| {
                let v = tests.iter().map(|(name, _)| r.thread_metric.iter().find(|t| t.test == *name && t.phase == *p).map(|t| t.ops_per_s)).collect();
                (p.to_string(), v)
            })
            .collect();
        let labels: Vec<String> = tests.iter().map(|(_, v)| v.to_string()).collect();
        out.push(Plot {
            id: format!("run{}-thread-metric", ri + 1),
            kind: "thread-metric",
            title: format!("{} — Thread-Metric: ops per second", r.name),
            run: Some(ri),
            svg: throughput_bars("Thread-Metric: ops per second per test", &labels, &series),
        });
    }
    let c = &a.comparison;
    let rows = c.throughput_rows();
    if c.systems.len() >= 2 && !rows.is_empty() {
        let tests: Vec<String> = rows.iter().map(|r| format!("{} {}", r.key.variant.as_deref().unwrap_or("-"), r.key.phase)).collect();
        let series = c
            .systems
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), rows.iter().map(|r| r.cells[i].as_ref().and_then(|x| x.ops_per_s)).collect()))
            .collect::<Vec<_>>();
        out.push(Plot {
            id: "compare-thread-metric".into(),
            kind: "thread-metric",
            title: "Thread-Metric: systems compared (ops per second)".into(),
            run: None,
            svg: throughput_bars("Thread-Metric: ops per second per test and system", &tests, &series),
        });
    }
    out
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
