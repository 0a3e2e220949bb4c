//! A monitor run's windows over time (OSADL's long-term plot).

use plotters::prelude::*;

use super::draw::*;
use super::Plot;

/// A monitor run's windows over time (OSADL's long-term plot): per probe,
/// variant and phase, the max and the p99 of each window merged over
/// threads, log latency axis; time in minutes, hours or days since the
/// first window. `None` when no merged window has samples.
pub(crate) fn windows_plot(id: &str, label: &str, windows: &[crate::model::Window]) -> Option<Plot> {
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
