//! `rtscope monitor`'s metrics in the Prometheus text exposition format
//! (version 0.0.4), for `/metrics` and node_exporter's textfile collector.
//! Names follow Prometheus' conventions: base unit seconds, `_total` on
//! counters, an `_info` gauge of 1 for the build and host, and low label
//! cardinality — `probe`, `variant`, `phase`, `cpu` only (no run ids).
//!
//! - `rtscope_latency_seconds` — classic histogram (`_bucket{le}`, `_sum`,
//!   `_count`) over every window so far; buckets from 1 µs to 100 ms. A
//!   window's bucket `[lo, hi]` counts under the first bound ≥ `hi`, so a
//!   `le` count never includes a sample above its bound.
//! - `rtscope_latency_window_max_seconds` — gauge: the last closed window's max.
//! - `rtscope_overruns_total` — counter: missed periods.
//! - `rtscope_periods_total` — counter: periods (samples + missed periods).
//!   A deadline miss is a late sample or a missed period, so the misses of a
//!   deadline D that is one of the bucket bounds are
//!   `(rtscope_latency_seconds_count − rtscope_latency_seconds_bucket{le="D"})
//!   + rtscope_overruns_total`, and the miss ratio divides them by
//!   `rtscope_periods_total` (docs/report.md).
//! - `rtscope_windows_total` — counter: windows closed.
//! - `rtscope_info{version,kernel,preempt_model,host}` — 1.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::Window;

/// Bucket upper bounds in ns: 1 µs … 100 ms in 1-2-5 steps.
pub(crate) const BOUNDS_NS: [u64; 16] =
    [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000, 100_000_000];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    probe: String,
    variant: String,
    phase: String,
    cpu: String,
}

#[derive(Debug, Default, Clone)]
struct Series {
    /// Per bound (not cumulative), then the count above the last bound.
    counts: [u64; BOUNDS_NS.len() + 1],
    count: u64,
    sum_ns: f64,
    window_max_ns: u64,
    overruns: u64,
}

/// Everything `/metrics` shows, updated as windows close.
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    info: [(String, String); 4],
    series: BTreeMap<Key, Series>,
    windows: u64,
}

impl Metrics {
    pub(crate) fn new(version: &str, kernel: &str, preempt_model: &str, host: &str) -> Metrics {
        Metrics {
            info: [
                ("version".into(), version.into()),
                ("kernel".into(), kernel.into()),
                ("preempt_model".into(), preempt_model.into()),
                ("host".into(), host.into()),
            ],
            series: BTreeMap::new(),
            windows: 0,
        }
    }

    /// Fold one closed window in: its per-thread entries (the merged ones
    /// would count every sample twice; Prometheus sums over `cpu` itself).
    pub(crate) fn add_window(&mut self, windows: &[Window]) {
        self.windows += 1;
        for w in windows.iter().filter(|w| w.thread.is_some()) {
            let key = Key {
                probe: w.probe.clone(),
                variant: w.variant.clone().unwrap_or_default(),
                phase: w.phase.clone(),
                cpu: w.cpu.map(|c| c.to_string()).unwrap_or_else(|| "any".into()),
            };
            let s = self.series.entry(key).or_default();
            for b in &w.histogram {
                let i = BOUNDS_NS.iter().position(|&le| b.hi_ns.0 <= le).unwrap_or(BOUNDS_NS.len());
                s.counts[i] += b.count;
            }
            s.count += w.samples;
            s.sum_ns += w.sum_ns;
            s.window_max_ns = w.max_ns.0;
            s.overruns += w.overruns;
        }
    }

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut o = String::new();
        let labels = |k: &Key| {
            let mut l = format!("probe=\"{}\",phase=\"{}\",cpu=\"{}\"", esc(&k.probe), esc(&k.phase), esc(&k.cpu));
            if !k.variant.is_empty() {
                l.push_str(&format!(",variant=\"{}\"", esc(&k.variant)));
            }
            l
        };
        let _ = writeln!(o, "# HELP rtscope_info rtscope build and the measured host; always 1.");
        let _ = writeln!(o, "# TYPE rtscope_info gauge");
        let info: Vec<String> = self.info.iter().map(|(k, v)| format!("{k}=\"{}\"", esc(v))).collect();
        let _ = writeln!(o, "rtscope_info{{{}}} 1", info.join(","));
        let _ = writeln!(o, "# HELP rtscope_windows_total Monitor windows closed.");
        let _ = writeln!(o, "# TYPE rtscope_windows_total counter");
        let _ = writeln!(o, "rtscope_windows_total {}", self.windows);
        if self.series.is_empty() {
            return o;
        }
        let _ = writeln!(o, "# HELP rtscope_latency_seconds Latency of every sample since the monitor started (observed time minus due time).");
        let _ = writeln!(o, "# TYPE rtscope_latency_seconds histogram");
        for (k, s) in &self.series {
            let l = labels(k);
            let mut cum = 0u64;
            for (i, le) in BOUNDS_NS.iter().enumerate() {
                cum += s.counts[i];
                let _ = writeln!(o, "rtscope_latency_seconds_bucket{{{l},le=\"{}\"}} {cum}", secs(*le as f64));
            }
            let _ = writeln!(o, "rtscope_latency_seconds_bucket{{{l},le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(o, "rtscope_latency_seconds_sum{{{l}}} {}", secs(s.sum_ns));
            let _ = writeln!(o, "rtscope_latency_seconds_count{{{l}}} {}", s.count);
        }
        let _ = writeln!(o, "# HELP rtscope_latency_window_max_seconds Largest latency of the last closed window.");
        let _ = writeln!(o, "# TYPE rtscope_latency_window_max_seconds gauge");
        for (k, s) in &self.series {
            let _ = writeln!(o, "rtscope_latency_window_max_seconds{{{}}} {}", labels(k), secs(s.window_max_ns as f64));
        }
        let _ = writeln!(o, "# HELP rtscope_overruns_total Periods missed (the event came a whole period late or later): each is a deadline miss.");
        let _ = writeln!(o, "# TYPE rtscope_overruns_total counter");
        for (k, s) in &self.series {
            let _ = writeln!(o, "rtscope_overruns_total{{{}}} {}", labels(k), s.overruns);
        }
        let _ = writeln!(
            o,
            "# HELP rtscope_periods_total Periods (samples + missed periods). Misses of deadline D: (latency count - bucket le=D) + overruns; miss ratio: misses / periods."
        );
        let _ = writeln!(o, "# TYPE rtscope_periods_total counter");
        for (k, s) in &self.series {
            let _ = writeln!(o, "rtscope_periods_total{{{}}} {}", labels(k), s.count.saturating_add(s.overruns));
        }
        o
    }
}

/// ns as seconds, exactly as many digits as needed (1e-6 for 1 µs).
fn secs(ns: f64) -> String {
    format!("{}", ns / 1e9)
}

/// A label value escaped as the format requires (backslash, quote, newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bucket, Nanos};

    fn w(thread: Option<usize>, buckets: &[(u64, u64, u64)], max: u64) -> Window {
        let n = buckets.iter().map(|b| b.2).sum();
        Window {
            index: 0,
            started_at: "2026-11-23T00:00:00Z".into(),
            duration_ns: Nanos(1_000_000_000),
            phase: "idle".into(),
            probe: "timer".into(),
            variant: None,
            thread,
            cpu: thread,
            samples: n,
            overruns: 2,
            min_ns: Nanos(buckets[0].0),
            p50_ns: Nanos(0),
            p99_ns: Nanos(0),
            max_ns: Nanos(max),
            sum_ns: 1000.0 * n as f64,
            histogram: buckets.iter().map(|&(lo, hi, count)| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count }).collect(),
        }
    }

    #[test]
    fn buckets_are_cumulative_and_never_count_above_their_bound() {
        let mut m = Metrics::new("0.1.0", "6.1.0-rt", "PREEMPT_RT", "board \"a\"");
        // 3 samples ≤ 1 µs, 1 in [1500, 1600], 1 straddling 2 µs ([1990, 2010] → le 5 µs), 1 above 100 ms.
        m.add_window(&[w(Some(0), &[(900, 1000, 3), (1500, 1600, 1), (1990, 2010, 1), (200_000_000, 200_000_100, 1)], 200_000_100)]);
        m.add_window(&[w(None, &[(900, 1000, 99)], 1000)]); // merged: ignored
        let t = m.render();
        assert!(t.contains("rtscope_latency_seconds_bucket{probe=\"timer\",phase=\"idle\",cpu=\"0\",le=\"0.000001\"} 3"), "{t}");
        assert!(t.contains("le=\"0.000002\"} 4"), "{t}");
        assert!(t.contains("le=\"0.000005\"} 5"), "{t}");
        assert!(t.contains("le=\"0.1\"} 5"), "{t}");
        assert!(t.contains("le=\"+Inf\"} 6"), "{t}");
        assert!(t.contains("rtscope_latency_seconds_count{probe=\"timer\",phase=\"idle\",cpu=\"0\"} 6"), "{t}");
        assert!(t.contains("rtscope_latency_window_max_seconds{probe=\"timer\",phase=\"idle\",cpu=\"0\"} 0.2000001"), "{t}");
        assert!(t.contains("rtscope_overruns_total{probe=\"timer\",phase=\"idle\",cpu=\"0\"} 2"), "{t}");
        // Periods = 6 samples + 2 missed periods: the miss ratio's denominator.
        assert!(t.contains("rtscope_periods_total{probe=\"timer\",phase=\"idle\",cpu=\"0\"} 8"), "{t}");
        assert!(t.contains("host=\"board \\\"a\\\"\""), "label values are escaped: {t}");
        assert!(t.contains("rtscope_windows_total 2"), "{t}");
    }
}
