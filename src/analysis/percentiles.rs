//! Percentiles and distribution views computed from a result's histogram
//! alone, so that any stored or imported result (which may carry only
//! buckets) is analysed the same way as a fresh one.
//!
//! The definition is the one of `stats::bucket_percentile`, which the
//! recorder uses too: nearest rank ⌈q·n/100⌉, reported as the top of the
//! bucket holding that rank and clamped to the exact [min, max]. On a fresh
//! result, [`from_histogram`] therefore returns exactly what
//! `Recorder::percentile` wrote into `percentiles_ns` (a unit test checks it).
//!
//! A percentile whose bucket is wide (an import's overflow bucket, a coarse
//! bins-csv row: `stats::is_wide`) is a bound: [`Percentile::lower_ns`]
//! holds the bottom of the range it may be in, and [`Percentile::shown`] is
//! the one way every renderer prints it: `≥ X` when the range reaches the
//! max, `X–Y` otherwise. [`bounded`] gives the same for any entry.
//!
//! Also here: fixed-width re-binning (the seed-001 bin tables, the OSADL
//! latency plot) and the exceedance curve P(X > x) used by the plots.

use serde::Serialize;

use crate::model::{Bucket, Nanos};
use crate::stats::{self, PERCENTILES};

/// Percentile `q` (0–100) by nearest rank from non-empty buckets that
/// sum to the sample count. `None` for an empty histogram.
pub(crate) fn from_histogram(hist: &[Bucket], q: f64, min: Nanos, max: Nanos) -> Option<Nanos> {
    stats::bucket_percentile(hist, q, min, max)
}

/// One reported percentile.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Percentile {
    pub(crate) label: &'static str,
    pub(crate) q: f64,
    /// The value (the top of its bucket, clamped to the max); when
    /// `lower_ns` is set, the upper end of the range it may be in.
    pub(crate) value_ns: Nanos,
    /// Set when the percentile is a bound: its bucket is wide and the true
    /// percentile lies anywhere in `[lower_ns, value_ns]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lower_ns: Option<Nanos>,
    /// The bound reaches the entry's max: shown `≥ lower`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) open: bool,
}

impl Percentile {
    /// True when this is a bound, not a value.
    pub(crate) fn is_bound(&self) -> bool {
        self.lower_ns.is_some()
    }
    /// The one way a percentile is printed, latencies by `f`: `12.0`, or for
    /// a bound `≥ 10.0` (its range reaches the max: all that is known is
    /// the bottom) or `10.0–15.0`.
    pub(crate) fn shown(&self, f: impl Fn(Nanos) -> String) -> String {
        match self.lower_ns {
            None => f(self.value_ns),
            Some(lo) if self.open => format!("≥ {}", f(lo)),
            Some(lo) => format!("{}–{}", f(lo), f(self.value_ns)),
        }
    }
}

/// Percentile `q` of a histogram with its bound (see the module doc).
pub(crate) fn bounded(hist: &[Bucket], q: f64, min: Nanos, max: Nanos) -> Option<Percentile> {
    let label = PERCENTILES.iter().find(|p| p.q == q).map(|p| p.label).unwrap_or("p");
    stats::bucket_percentile_bounds(hist, q, min, max).map(|(lo, hi)| {
        let wide = stats::is_wide(lo, hi);
        Percentile { label, q, value_ns: hi, lower_ns: wide.then_some(lo), open: wide && hi >= max }
    })
}

/// All [`PERCENTILES`] of a histogram (empty when it is).
pub(crate) fn reported(hist: &[Bucket], min: Nanos, max: Nanos) -> Vec<Percentile> {
    PERCENTILES.iter().filter_map(|p| bounded(hist, p.q, min, max)).collect()
}

/// Counts in fixed half-open bins `[k·w, (k+1)·w)`, as `(k, count)` for
/// non-empty bins, ascending. A histogram bucket is counted in the bin
/// holding its top (an entry's last bucket reaches its exact max, so the max
/// lands in its own bin, and no sample is shown below the bucket it is in):
/// below 2048 ns buckets are single nanoseconds, so this is exact; above, a
/// bucket is 0.1 % wide and can straddle a bin edge by at most that, read
/// upwards. Counts sum exactly to the samples.
pub(crate) fn rebin(hist: &[Bucket], width: Nanos) -> Vec<(u64, u64)> {
    let w = width.0.max(1);
    let mut out: Vec<(u64, u64)> = Vec::new();
    for b in hist {
        let k = b.hi_ns.0 / w;
        match out.last_mut() {
            Some((lk, c)) if *lk == k => *c += b.count,
            _ => out.push((k, b.count)),
        }
    }
    out
}

/// The exceedance curve: for each bucket top x, P(X > x) = (samples above
/// the bucket) / n, plus the starting point (min, 1). The last bucket gives
/// 0, which log-scale plots drop; they end at 1/n at the next-to-last point.
pub(crate) fn exceedance(hist: &[Bucket]) -> Vec<(Nanos, f64)> {
    let n: u64 = hist.iter().map(|b| b.count).sum();
    if n == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(hist.len() + 1);
    out.push((hist[0].lo_ns, 1.0));
    let mut seen = 0u64;
    for b in hist {
        seen += b.count;
        out.push((b.hi_ns, (n - seen) as f64 / n as f64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Recorder;

    fn b(lo: u64, hi: u64, count: u64) -> Bucket {
        Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count }
    }

    #[test]
    fn hand_computed_histogram() {
        // 10 samples: 4 at 100, 3 at 200, 2 at 300, 1 at 1000.
        let h = [b(100, 100, 4), b(200, 200, 3), b(300, 300, 2), b(1000, 1000, 1)];
        let p = |q| from_histogram(&h, q, Nanos(100), Nanos(1000)).unwrap().0;
        assert_eq!(p(10.0), 100); // rank 1
        assert_eq!(p(40.0), 100); // rank 4
        assert_eq!(p(41.0), 200); // rank ⌈4.1⌉ = 5
        assert_eq!(p(50.0), 200); // rank 5
        assert_eq!(p(70.0), 200); // rank 7
        assert_eq!(p(90.0), 300); // rank 9
        assert_eq!(p(90.1), 1000); // rank 10
        assert_eq!(p(99.999), 1000);
        assert!(from_histogram(&[], 50.0, Nanos(0), Nanos(0)).is_none());
    }

    #[test]
    fn wide_buckets_report_their_top_clamped_to_max() {
        let h = [b(1000, 1999, 5), b(2000, 2999, 5)];
        assert_eq!(from_histogram(&h, 50.0, Nanos(1100), Nanos(2500)), Some(Nanos(1999)));
        assert_eq!(from_histogram(&h, 99.0, Nanos(1100), Nanos(2500)), Some(Nanos(2500)));
    }

    #[test]
    fn same_as_the_recorder_on_a_fresh_result() {
        let mut r = Recorder::new(0, 1_000_000_000, 4);
        let mut x = 12345u64;
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = 500 + (x >> 33) % 200_000 + if i % 997 == 0 { 3_000_000 } else { 0 };
            r.record(v, i * 10_000, i);
        }
        let res = r.to_result("t", "idle", None, Some(0), Some(0), 1);
        for crate::stats::Quantile { key, q, .. } in crate::stats::PERCENTILES {
            assert_eq!(from_histogram(&res.histogram, q, res.min_ns, res.max_ns), Some(res.percentiles_ns[key]), "p{key}");
        }
    }

    #[test]
    fn rebin_keeps_every_sample() {
        let h = [b(100, 100, 4), b(4999, 4999, 1), b(5000, 5000, 2), b(12000, 12009, 3)];
        assert_eq!(rebin(&h, Nanos(5000)), vec![(0, 5), (1, 2), (2, 3)]);
        // A bucket across a bin edge is read upwards: its top's bin.
        assert_eq!(rebin(&[b(6_297_000, 6_303_100, 1)], Nanos(50_000)), vec![(126, 1)]);
    }

    #[test]
    fn wide_buckets_are_bounds() {
        // cyclictest -h10 with 1 262 of 3 000 over: p99 is ≥ 10 µs, not the max.
        let h = [b(4_000, 4_999, 500), b(9_000, 9_999, 1_238), b(10_000, 503_000, 1_262)];
        let ps = reported(&h, Nanos(4_000), Nanos(503_000));
        let get = |l: &str| ps.iter().find(|p| p.label == l).unwrap().clone();
        let us = |n: Nanos| format!("{:.1}", n.0 as f64 / 1000.0);
        assert_eq!(get("p50").shown(us), "10.0");
        assert!(!get("p50").is_bound());
        assert_eq!(get("p99").shown(us), "≥ 10.0");
        assert_eq!((get("p99").lower_ns, get("p99").value_ns), (Some(Nanos(10_000)), Nanos(503_000)));
        // A wide bucket below the max is a closed range.
        let h = [b(0, 4_999, 10), b(5_000, 9_999, 10), b(10_000, 10_000, 1)];
        let ps = reported(&h, Nanos(0), Nanos(10_000));
        assert_eq!(ps.iter().find(|p| p.label == "p50").unwrap().shown(us), "5.0–10.0");
    }

    #[test]
    fn exceedance_by_hand() {
        let h = [b(100, 100, 4), b(200, 200, 3), b(300, 300, 2), b(1000, 1000, 1)];
        let e = exceedance(&h);
        let ys: Vec<f64> = e.iter().map(|p| p.1).collect();
        assert_eq!(ys, vec![1.0, 0.6, 0.3, 0.1, 0.0]);
        assert_eq!(e[3].0, Nanos(300));
    }
}
