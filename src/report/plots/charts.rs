//! The latency charts of a report entry: exceedance (the tail), the
//! histogram per CPU, the per-second timeline and the statistical worst
//! case (observed tail, fitted GPD, estimates with their intervals).

use plotters::prelude::*;

use super::draw::*;
use crate::analysis::percentiles::rebin;
use crate::analysis::summary::EntryAnalysis;
use crate::model::{Bucket, Nanos};

/// Exceedance curves, one per (label, histogram). When the curves span
/// more than a factor 50 in latency (systems or phases orders of magnitude
/// apart, seed 000's RTAI vs stock Linux), the latency axis is logarithmic
/// (drawn as log10 of µs with labels in µs) so every curve stays visible.
pub(super) fn exceedance_chart(title: &str, series: &[(String, &[Bucket])], bold_last: bool, deadline: Option<f64>) -> String {
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = series.iter().map(|(l, h)| (l.clone(), exceedance_points(h))).collect();
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
    let looks: Vec<Look> = curves.iter().enumerate().map(|(i, (l, _))| Look::line(l.clone(), colour(i), if bold_last && i + 1 == n { 3 } else { 2 })).collect();
    let mut legend = looks.clone();
    legend.extend(deadline.map(deadline_look));
    svg_with_legend(&legend, |root| {
        let mut chart = builder(root, title).build_cartesian_2d(xmin..xmax, (ymin..1.0f64).log_scale())?;
        let fmt_x = move |v: &f64| -> String {
            if log_x {
                let x = 10f64.powf(*v);
                if x >= 10.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x:.2}")
                }
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
pub(super) fn histogram_chart(title: &str, series: &[(String, &[Bucket])], deadline: Option<f64>) -> String {
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
pub(super) fn nice_width(x: u64) -> u64 {
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
pub(super) fn timeline_chart(title: &str, entries: &[&EntryAnalysis], deadline: Option<f64>) -> String {
    let dl = deadline.filter(|d| *d > 0.0);
    let tmax = entries.iter().flat_map(|e| e.per_second.iter().map(move |s| (s.t_s + e.per_second_width_s.max(1)) as f64)).fold(1.0, f64::max);
    // Log latency axis: min, mean and max stay apart even when spikes are
    // 100× the typical latency (a linear axis flattens min and mean).
    let ymax = entries.iter().flat_map(|e| e.per_second.iter().map(|s| us(s.max_ns.0 as f64))).fold(dl.unwrap_or(0.001), f64::max) * 1.5;
    let ymin =
        entries.iter().flat_map(|e| e.per_second.iter().map(|s| us(s.min_ns.0 as f64))).filter(|v| *v > 0.0).fold(ymax, f64::min).min(dl.unwrap_or(f64::MAX))
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
pub(super) fn pwcet_chart(title: &str, e: &EntryAnalysis) -> Option<String> {
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
            chart.draw_series(std::iter::once(PathElement::new(vec![(us(l.ci_low_ns), l.p), (us(l.ci_high_ns), l.p)], BLACK.stroke_width(2))))?;
            chart.draw_series(std::iter::once(Circle::new((us(l.estimate_ns), l.p), 4, BLACK.filled())))?;
        }
        draw_look(&mut chart, &looks[3], vec![(us(e.max_ns.0 as f64), ymin), (us(e.max_ns.0 as f64), 1.0)])?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_widths() {
        assert_eq!(nice_width(0), 1);
        assert_eq!(nice_width(3), 5);
        assert_eq!(nice_width(1200), 2000);
        assert_eq!(nice_width(5000), 5000);
    }
}
