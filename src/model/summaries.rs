//! Probe-specific summaries carried in a result entry beside its
//! distribution: signed statistics, kernel tracer counters, osnoise
//! interference, page faults, OS noise totals and Thread-Metric throughput.
//! Each combines over the threads of one variant (`combine`: the one `merge` is the distribution's, checked).

use serde::{Deserialize, Serialize};

use super::*;

/// Signed summary of an entry whose unsigned fields cannot carry the sign:
/// either its histogram holds magnitudes (the period error: actual
/// start-to-start interval minus the nominal one), or (`clamped`) an
/// imported source had negative latencies (early wake-ups in Xenomai,
/// RTAI) that the unsigned min/mean/max clamp to 0.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct SignedStats {
    pub samples: u64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    /// True: the entry's `min_ns`/`mean_ns`/`max_ns` are these values
    /// clamped at 0, so readers show these instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clamped: bool,
}

impl SignedStats {
    /// Combine two summaries exactly (mean weighted by samples).
    pub fn combine(self, o: SignedStats) -> SignedStats {
        if self.samples == 0 {
            return o;
        }
        if o.samples == 0 {
            return self;
        }
        let n = self.samples + o.samples;
        SignedStats {
            samples: n,
            min_ns: self.min_ns.min(o.min_ns),
            max_ns: self.max_ns.max(o.max_ns),
            mean_ns: (self.mean_ns * self.samples as f64 + o.mean_ns * o.samples as f64) / n as f64,
            clamped: self.clamped || o.clamped,
        }
    }
}

/// A kernel tracer run behind a probe entry: the tracer, where it ran (a
/// tracefs instance of rtscope's own, or the top level for `hwlat`, which
/// the kernel allows nowhere else), the settings rtscope wrote, and what the
/// ring buffer lost. `lost_events` counts the `[LOST N EVENTS]` the reader
/// was told of, `overrun` the ring buffer's own overrun counter of the
/// measured CPUs (per_cpu/cpuN/stats), `missing` the samples whose
/// activation number never arrived (timerlat numbers each CPU's
/// activations). The merged entry sums them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TracerStats {
    pub tracer: String,
    pub instance: String,
    pub settings: std::collections::BTreeMap<String, String>,
    pub lost_events: u64,
    pub overrun: u64,
    pub missing: u64,
}

impl TracerStats {
    pub fn combine(&self, o: &TracerStats) -> TracerStats {
        TracerStats { lost_events: self.lost_events + o.lost_events, overrun: self.overrun + o.overrun, missing: self.missing + o.missing, ..self.clone() }
    }
}

/// The osnoise tracer's interference counters, summed over the periods of
/// an entry: hardware noise (a gap with nothing the kernel can name: SMIs,
/// the hypervisor), NMIs, IRQs, softirqs and threads that ran on the CPU.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Interference {
    pub hw: u64,
    pub nmi: u64,
    pub irq: u64,
    pub softirq: u64,
    pub thread: u64,
}

impl Interference {
    pub fn combine(self, o: Interference) -> Interference {
        Interference { hw: self.hw + o.hw, nmi: self.nmi + o.nmi, irq: self.irq + o.irq, softirq: self.softirq + o.softirq, thread: self.thread + o.thread }
    }
}

/// Page faults taken by measuring threads while they measured: minor (the
/// page was in memory but not mapped) and major (it had to be read from
/// disk). Both are 0 when every page the loop touches was resident and
/// locked before the start barrier.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Faults {
    pub minor: u64,
    pub major: u64,
}

impl Faults {
    pub fn combine(self, o: Faults) -> Faults {
        Faults { minor: self.minor + o.minor, major: self.major + o.major }
    }
    /// The sum of two threads' counts; a thread without counts adds nothing.
    pub fn sum(a: Option<Faults>, b: Option<Faults>) -> Option<Faults> {
        match (a, b) {
            (Some(x), Some(y)) => Some(x.combine(y)),
            (x, y) => x.or(y),
        }
    }
}

/// OS-noise totals of the `noise` probe: every gap above `threshold_ns`
/// between two consecutive clock reads of the busy loop is a sample.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct NoiseStats {
    pub threshold_ns: Nanos,
    /// Wall time the busy loop(s) ran, summed over threads.
    pub loop_ns: Nanos,
    /// Sum of all gaps above the threshold, summed over threads.
    pub total_noise_ns: Nanos,
    /// 100 × (1 − total_noise / loop time).
    pub available_pct: f64,
}

impl NoiseStats {
    pub fn new(threshold_ns: u64, loop_ns: u64, total_noise_ns: u64) -> NoiseStats {
        let available_pct = if loop_ns == 0 { 0.0 } else { 100.0 * (1.0 - total_noise_ns as f64 / loop_ns as f64) };
        NoiseStats { threshold_ns: Nanos(threshold_ns), loop_ns: Nanos(loop_ns), total_noise_ns: Nanos(total_noise_ns), available_pct }
    }
    pub fn combine(self, o: NoiseStats) -> NoiseStats {
        NoiseStats::new(self.threshold_ns.0, self.loop_ns.0 + o.loop_ns.0, self.total_noise_ns.0 + o.total_noise_ns.0)
    }
}

/// Operations counted by the `throughput` probe (Thread-Metric's result):
/// `per_interval[k]` ops completed in the k-th interval of `interval_ns`;
/// `ops` is their sum (only whole intervals count).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    pub ops: u64,
    pub interval_ns: Nanos,
    pub per_interval: Vec<u64>,
}

impl Throughput {
    /// Mean ops per interval (0 without intervals).
    pub fn mean(&self) -> f64 {
        if self.per_interval.is_empty() {
            0.0
        } else {
            self.ops as f64 / self.per_interval.len() as f64
        }
    }
    /// (max − min) / mean of the per-interval counts, in % (Thread-Metric's
    /// check that intervals agree); 0 with fewer than two intervals.
    pub fn spread_pct(&self) -> f64 {
        let m = self.mean();
        match (self.per_interval.iter().max(), self.per_interval.iter().min()) {
            (Some(&hi), Some(&lo)) if self.per_interval.len() > 1 && m > 0.0 => 100.0 * (hi - lo) as f64 / m,
            _ => 0.0,
        }
    }
    /// Ops per second over the whole intervals (what compares across
    /// interval lengths); `None` without intervals.
    pub fn ops_per_s(&self) -> Option<f64> {
        let secs = self.per_interval.len() as f64 * self.interval_ns.as_secs_f64();
        (secs > 0.0).then(|| self.ops as f64 / secs)
    }
    /// Sum of two threads' counts, interval by interval.
    pub fn combine(&self, o: &Throughput) -> Throughput {
        let n = self.per_interval.len().max(o.per_interval.len());
        let per_interval: Vec<u64> = (0..n).map(|k| self.per_interval.get(k).copied().unwrap_or(0) + o.per_interval.get(k).copied().unwrap_or(0)).collect();
        Throughput { ops: self.ops + o.ops, interval_ns: self.interval_ns, per_interval }
    }
}

#[cfg(test)]
mod probe_extra_tests {
    use super::*;

    #[test]
    fn signed_stats_merge_weights_the_mean() {
        let a = SignedStats { samples: 3, min_ns: -5, max_ns: 7, mean_ns: 1.0, clamped: false };
        let b = SignedStats { samples: 1, min_ns: -9, max_ns: 2, mean_ns: -3.0, clamped: false };
        let m = a.combine(b);
        assert_eq!((m.samples, m.min_ns, m.max_ns), (4, -9, 7));
        assert!((m.mean_ns - 0.0).abs() < 1e-9);
        let empty = SignedStats { samples: 0, min_ns: 0, max_ns: 0, mean_ns: 0.0, clamped: false };
        assert_eq!(empty.combine(b), b);
    }

    #[test]
    fn noise_available_share() {
        let n = NoiseStats::new(1000, 1_000_000_000, 50_000_000).combine(NoiseStats::new(1000, 1_000_000_000, 0));
        assert_eq!(n.total_noise_ns, Nanos(50_000_000));
        assert!((n.available_pct - 97.5).abs() < 1e-9);
    }
}
