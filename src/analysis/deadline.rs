//! Deadline misses (`--deadline 100us`): how many samples were over the
//! deadline, their ratio, and what that means per hour at the measured rate.
//!
//! A sample is a miss when its latency is strictly greater than the
//! deadline (a latency equal to the deadline met it).
//!
//! Counting is exact whenever it can be: the result's tail holds the largest
//! samples exactly, so if every sample over the deadline is in the tail
//! (the tail reaches down to the deadline, or holds every sample) the count
//! comes from it. Otherwise it comes from the histogram, which is exact
//! unless the deadline falls inside a bucket (above 2048 ns buckets are 0.1 %
//! wide); then the count is given as a range `[misses, misses_upper]`.
//!
//! Per hour: with p = misses / samples and r samples per second (measured
//! from the per-second slots), the expected misses in an hour are p·r·3600
//! and the probability of at least one is 1 − (1 − p)^(r·3600). With no
//! miss observed, p is reported as its 95 % upper bound 3/n ("rule of
//! three", Hanley & Lippman-Hand 1983, JAMA 249:1743) instead of 0.

use serde::Serialize;

use crate::model::{Nanos, ProbeResult};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeadlineMisses {
    pub deadline_ns: Nanos,
    pub samples: u64,
    /// Samples over the deadline (a lower bound when `exact` is false).
    pub misses: u64,
    /// Upper bound of the count; equals `misses` when `exact`.
    pub misses_upper: u64,
    pub exact: bool,
    /// misses / samples.
    pub ratio: f64,
    /// Measured samples per second (0 when unknown).
    pub rate_hz: f64,
    /// Expected misses per hour at the measured rate.
    pub per_hour_expected: f64,
    /// Probability of at least one miss in an hour; when no miss was
    /// observed, its 95 % upper bound (see `zero_observed`).
    pub per_hour_probability: f64,
    /// No miss observed: `per_hour_probability` is an upper bound.
    pub zero_observed: bool,
}

/// Samples per second: counts of the complete per-second slots over their
/// time (the last slot is usually partial and is left out); falls back to
/// the nominal rate 1/interval, or 0 when neither is known.
pub fn measured_rate_hz(r: &ProbeResult) -> f64 {
    let ps = &r.per_second;
    if ps.len() >= 2 {
        let last = ps[ps.len() - 1].t_s;
        let count: u64 = ps[..ps.len() - 1].iter().map(|s| s.count).sum();
        if last > 0 {
            return count as f64 / last as f64;
        }
    }
    if r.interval_ns.0 > 0 {
        return 1e9 / r.interval_ns.0 as f64;
    }
    0.0
}

/// The deadline misses of one result entry.
pub fn misses(r: &ProbeResult, deadline: Nanos) -> DeadlineMisses {
    let d = deadline.0;
    let tail = &r.tail.samples;
    let tail_covers = !tail.is_empty()
        && ((tail.len() as u64) >= r.samples || tail.last().is_some_and(|s| s.latency().0 <= d));
    let (lo, hi) = if tail_covers {
        let n = tail.iter().filter(|s| s.latency().0 > d).count() as u64;
        (n, n)
    } else {
        let mut lo = 0u64;
        let mut straddle = 0u64;
        for b in &r.histogram {
            if b.lo_ns.0 > d {
                lo += b.count;
            } else if b.hi_ns.0 > d {
                straddle += b.count;
            }
        }
        // The exact max decides the top bucket when it straddles.
        if straddle > 0 && r.max_ns.0 <= d {
            straddle = 0;
        }
        (lo, lo + straddle)
    };
    let n = r.samples;
    let rate = measured_rate_hz(r);
    let zero = hi == 0;
    let p = if n == 0 {
        0.0
    } else if zero {
        (3.0 / n as f64).min(1.0)
    } else {
        crate::stats::miss_ratio(lo, n)
    };
    let per_hour_n = rate * 3600.0;
    DeadlineMisses {
        deadline_ns: deadline,
        samples: n,
        misses: lo,
        misses_upper: hi,
        exact: lo == hi,
        ratio: crate::stats::miss_ratio(lo, n),
        rate_hz: rate,
        per_hour_expected: if zero { 0.0 } else { p * per_hour_n },
        // 1 − (1 − p)^N computed as −expm1(N·ln1p(−p)) to stay exact for tiny p.
        per_hour_probability: if p >= 1.0 { 1.0 } else { -(per_hour_n * (-p).ln_1p()).exp_m1() },
        zero_observed: zero,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Recorder;

    fn result(values: &[u64], interval_ns: u64) -> ProbeResult {
        let mut r = Recorder::new(0, values.len() as u64 * interval_ns + 1, 4);
        for (i, v) in values.iter().enumerate() {
            r.record(*v, i as u64 * interval_ns, i as u64);
        }
        r.to_result("timer", "idle", None, Some(0), Some(0), interval_ns)
    }

    #[test]
    fn counts_are_exact_from_the_tail() {
        // 40 000 samples at 1 kHz; 37 over 100 µs; the value equal to the
        // deadline is not a miss.
        let mut v: Vec<u64> = (0..40_000u64).map(|i| 20_000 + (i * 37) % 50_000).collect();
        for i in 0..37 {
            v[i * 1000 + 3] = 100_001 + i as u64 * 7_777;
        }
        v[5] = 100_000;
        let r = result(&v, 1_000_000);
        let m = misses(&r, Nanos(100_000));
        assert_eq!((m.misses, m.misses_upper, m.exact), (37, 37, true));
        assert!((m.ratio - 37.0 / 40_000.0).abs() < 1e-15);
        assert!((m.rate_hz - 1000.0).abs() < 1e-9, "{}", m.rate_hz);
        assert!((m.per_hour_expected - 37.0 / 40_000.0 * 3_600_000.0).abs() < 1e-6);
        assert!(m.per_hour_probability > 0.999999);
    }

    #[test]
    fn histogram_count_when_the_tail_does_not_reach_down() {
        // 30 000 samples over the deadline: more than the tail keeps.
        let v: Vec<u64> = (0..50_000u64).map(|i| if i % 5 < 3 { 1500 } else { 900 }).collect();
        let r = result(&v, 1_000_000);
        let m = misses(&r, Nanos(1000));
        assert_eq!((m.misses, m.exact), (30_000, true));
        // A deadline inside a 0.1 %-wide bucket gives a range.
        let v: Vec<u64> = (0..30_000u64).map(|i| 4_000_000 + i % 3_000).collect();
        let r = result(&v, 1_000_000);
        let m = misses(&r, Nanos(4_001_000));
        assert!(m.misses <= 19_990 && m.misses_upper >= 19_990 && !m.exact, "{m:?}");
    }

    #[test]
    fn zero_misses_give_the_rule_of_three_bound() {
        let v: Vec<u64> = vec![50_000; 3000];
        let r = result(&v, 1_000_000);
        let m = misses(&r, Nanos(100_000));
        assert_eq!(m.misses, 0);
        assert!(m.zero_observed);
        // p ≤ 3/3000 = 1e-3 per sample, 3.6e6 samples per hour → ≈ 1.
        assert!(m.per_hour_probability > 0.99);
        assert_eq!(m.per_hour_expected, 0.0);
    }
}
