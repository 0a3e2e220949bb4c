//! Thread-Metric's bar charts: ops per second per test, per run (series =
//! phases) and across systems.

use plotters::prelude::*;

use super::draw::*;
use super::Plot;
use crate::analysis::summary::Analysis;

/// Thread-Metric's result as bars: ops per second per test (log scale), one
/// bar per series (phases of a run, or systems), grouped by test.
pub(crate) fn throughput_bars(title: &str, tests: &[String], series: &[(String, Vec<Option<f64>>)]) -> String {
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
pub(crate) fn thread_metric_plots(a: &Analysis) -> Vec<Plot> {
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
        let tests: Vec<String> =
            rows.iter().map(|r| format!("{} {}", r.key.variant.as_deref().unwrap_or(crate::report::blocks::NOT_APPLICABLE), r.key.phase)).collect();
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
