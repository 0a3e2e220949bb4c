//! One system's cell of a comparison row: its percentiles (with their
//! bounds), max, mean ± σ, overruns and ops per second, and for every system
//! after the first the ratios to the first and a two-sample
//! Kolmogorov–Smirnov test between the two distributions.
//!
//! KS from histograms: both CDFs are evaluated at every bucket top of either
//! histogram. Buckets of results written by rtscope share one layout, so
//! this is the exact KS statistic of the bucketed data. With millions of
//! samples even a tiny difference is "distinguishable"; D itself (the
//! largest gap between the CDFs, 0–1) says how large it is.
//!
//! Histograms of different resolutions (cyclictest's whole microseconds
//! against the agent's nanoseconds) are compared at the coarser one: the
//! CDFs are evaluated only at the coarser histogram's bucket tops, where
//! both have counted the same samples. Evaluated at the fine tops too, the
//! test sees the rounding: two runs whose percentiles agree within 1–5 %
//! read D = 0.64 (issue 49). `KsTest::at_ns` says when this was done.
//!
//! Bounds stay bounds: a percentile in a wide bucket (an import's overflow
//! bucket) is kept in the cell's `bounds` with its range, and its ratio to
//! the first is the range the two ranges allow (`Ratios::ranges`).

use serde::Serialize;

use super::{ALPHA, MATERIAL_D};
use crate::analysis::percentiles::{bounded, from_histogram, Percentile};
use crate::model::{Bucket, Nanos, ProbeResult};
use crate::stats;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Ratios {
    /// Percentile ratios are `None` where either side has no known
    /// distribution (a summary-only import: see `ProbeResult::distribution_known`).
    pub(crate) p50: Option<f64>,
    pub(crate) p99: Option<f64>,
    pub(crate) p99_9: Option<f64>,
    pub(crate) max: f64,
    /// `None` (null) where either mean is negative (a signed probe's): a
    /// ratio of two negative means, or of a negative and a positive one,
    /// says nothing about which system is later.
    pub(crate) mean: Option<f64>,
    /// Ops per second, this system / the first (`throughput` entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ops: Option<f64>,
    /// The percentile ratios where either side is a bound: the range the
    /// two ranges allow, by label ("p99"); the plain ratio above is then
    /// only the ratio of the ranges' tops and must not be shown alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ranges: Vec<RatioRange>,
}

/// A ratio of bounds: this system's percentile over the first's lies in
/// `[lo, hi]`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct RatioRange {
    pub(crate) label: &'static str,
    pub(crate) lo: f64,
    pub(crate) hi: f64,
}

impl Ratios {
    /// The range of the ratio of percentile `label`, when either side is a bound.
    pub(crate) fn range(&self, label: &str) -> Option<&RatioRange> {
        self.ranges.iter().find(|r| r.label == label)
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct KsTest {
    pub(crate) d: f64,
    pub(crate) p: f64,
    /// p < [`ALPHA`]: the two distributions differ.
    pub(crate) distinguishable: bool,
    /// Set when the two histograms' resolutions differ (2× or more): the
    /// coarser one's, at which the test compared them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) at_ns: Option<Nanos>,
}

impl KsTest {
    /// Distinguishable and at least [`MATERIAL_D`] apart: a difference
    /// large enough to matter.
    pub(crate) fn material(&self) -> bool {
        self.distinguishable && self.d >= MATERIAL_D
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Cell {
    pub(crate) samples: u64,
    pub(crate) overruns: u64,
    /// False when the source cannot count missed periods: `overruns` is unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) overruns_unknown: bool,
    /// p50, p99, p99.9 that are bounds (wide buckets), with their range:
    /// show these with `Percentile::shown`, not the plain `*_ns` value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) bounds: Vec<Percentile>,
    /// `None` for a summary-only import, whose percentiles are unknown.
    pub(crate) p50_ns: Option<Nanos>,
    pub(crate) p99_ns: Option<Nanos>,
    pub(crate) p99_9_ns: Option<Nanos>,
    pub(crate) max_ns: Nanos,
    pub(crate) mean_ns: f64,
    /// `None` (null) where the source did not give it (`ProbeResult::stddev`).
    pub(crate) stddev_ns: Option<f64>,
    /// `throughput` entries: ops per second over the whole intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ops_per_s: Option<f64>,
    /// This system / the first (absent for the first, or when it lacks the entry).
    pub(crate) ratio_to_first: Option<Ratios>,
    pub(crate) ks_vs_first: Option<KsTest>,
}

/// Percentile `q` of an entry; `None` when its distribution is unknown (a
/// summary-only import's one [min, max] bucket is not a distribution).
fn p(r: &ProbeResult, q: f64) -> Option<Nanos> {
    if !r.distribution_known() {
        return None;
    }
    from_histogram(&r.histogram, q, r.min_ns, r.max_ns)
}

fn ratio_of(a: Option<Nanos>, b: Option<Nanos>) -> Option<f64> {
    Some(ratio(a?.0 as f64, b?.0 as f64))
}

fn ratio(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        b / a
    }
}

/// Two-sample KS between two histograms (see the module docs).
pub(crate) fn ks_histograms(a: &[Bucket], b: &[Bucket]) -> KsTest {
    let na: u64 = a.iter().map(|x| x.count).sum();
    let nb: u64 = b.iter().map(|x| x.count).sum();
    if na == 0 || nb == 0 {
        return KsTest { d: 0.0, p: 1.0, distinguishable: false, at_ns: None };
    }
    let (ra, rb) = (resolution(a), resolution(b));
    // The coarser histogram's tops are the only points where both CDFs
    // have counted the same samples.
    let (coarse, at_ns) = match (ra, rb) {
        (x, y) if x >= 2 * y.max(1) => (Some(a), Some(Nanos(x))),
        (x, y) if y >= 2 * x.max(1) => (Some(b), Some(Nanos(y))),
        _ => (None, None),
    };
    let (mut i, mut j, mut ca, mut cb, mut d) = (0usize, 0usize, 0u64, 0u64, 0.0f64);
    let mut tops = coarse.map(|c| c.iter().map(|b| b.hi_ns));
    while i < a.len() || j < b.len() {
        let x = match (&mut tops, a.get(i), b.get(j)) {
            (Some(t), _, _) => match t.next() {
                Some(x) => x,
                None => break,
            },
            (None, Some(p), Some(q)) => p.hi_ns.min(q.hi_ns),
            (None, Some(p), None) => p.hi_ns,
            (None, None, Some(q)) => q.hi_ns,
            (None, None, None) => break,
        };
        while i < a.len() && a[i].hi_ns <= x {
            ca += a[i].count;
            i += 1;
        }
        while j < b.len() && b[j].hi_ns <= x {
            cb += b[j].count;
            j += 1;
        }
        d = d.max((ca as f64 / na as f64 - cb as f64 / nb as f64).abs());
    }
    let pv = stats::ks_pvalue(d, na as f64, nb as f64);
    KsTest { d, p: pv, distinguishable: pv < ALPHA, at_ns }
}

/// A histogram's resolution: the width of the bucket holding the median
/// sample (`hi_ns` is inclusive, so a whole-µs bucket is 1000 ns wide).
fn resolution(h: &[Bucket]) -> u64 {
    let n: u64 = h.iter().map(|b| b.count).sum();
    let mut seen = 0;
    for b in h {
        seen += b.count;
        if seen * 2 >= n {
            return b.hi_ns.0.saturating_sub(b.lo_ns.0) + 1;
        }
    }
    1
}

/// Percentile `q` of an entry with its bound; `None` as for [`p`].
fn pb(r: &ProbeResult, q: f64) -> Option<Percentile> {
    if !r.distribution_known() {
        return None;
    }
    bounded(&r.histogram, q, r.min_ns, r.max_ns)
}

/// The range of b/a when either is a bound (`None` when both are values
/// or either is unknown).
fn ratio_range(a: Option<&Percentile>, b: Option<&Percentile>) -> Option<(f64, f64)> {
    let (a, b) = (a?, b?);
    if !a.is_bound() && !b.is_bound() {
        return None;
    }
    let lo = |p: &Percentile| p.lower_ns.unwrap_or(p.value_ns).0 as f64;
    let hi = |p: &Percentile| p.value_ns.0 as f64;
    Some((ratio(hi(a), lo(b)), ratio(lo(a), hi(b))))
}

/// The percentiles a cell shows, with their labels.
const QS: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")];

/// `r` over `a` (the first system's entry); `mine` are `r`'s bounded percentiles at [`QS`].
fn ratios(a: &ProbeResult, r: &ProbeResult, mine: &[Option<Percentile>]) -> Ratios {
    Ratios {
        p50: ratio_of(p(a, 50.0), p(r, 50.0)),
        p99: ratio_of(p(a, 99.0), p(r, 99.0)),
        p99_9: ratio_of(p(a, 99.9), p(r, 99.9)),
        max: ratio(a.max_ns.0 as f64, r.max_ns.0 as f64),
        mean: (a.shown_mean_ns() >= 0.0 && r.shown_mean_ns() >= 0.0).then(|| ratio(a.shown_mean_ns(), r.shown_mean_ns())),
        ops: match (ops_per_s(a), ops_per_s(r)) {
            (Some(x), Some(y)) => Some(ratio(x, y)),
            _ => None,
        },
        ranges: QS
            .iter()
            .zip(mine)
            .filter_map(|((q, label), m)| ratio_range(pb(a, *q).as_ref(), m.as_ref()).map(|(lo, hi)| RatioRange { label, lo: lo.min(hi), hi: lo.max(hi) }))
            .collect(),
    }
}

/// The cell of entry `r`; `first` is the first system's entry of the row
/// (`None` for the first system itself).
pub(super) fn cell(r: &ProbeResult, first: Option<&ProbeResult>) -> Cell {
    let mine: Vec<Option<Percentile>> = QS.iter().map(|(q, _)| pb(r, *q)).collect();
    let ratio_to_first = first.map(|a| ratios(a, r, &mine));
    Cell {
        samples: r.samples,
        overruns: r.overruns,
        overruns_unknown: !r.overruns_known,
        bounds: mine.into_iter().flatten().filter(|p| p.is_bound()).collect(),
        p50_ns: p(r, 50.0),
        p99_ns: p(r, 99.0),
        p99_9_ns: p(r, 99.9),
        max_ns: r.max_ns,
        mean_ns: r.shown_mean_ns(),
        stddev_ns: r.stddev(),
        ops_per_s: ops_per_s(r),
        ratio_to_first,
        ks_vs_first: first.filter(|a| a.distribution_known() && r.distribution_known()).map(|a| ks_histograms(&a.histogram, &r.histogram)),
    }
}

/// Ops per second of a `throughput` entry (intervals of different lengths
/// compare: a published 30 s count against a 2 s one).
pub(crate) fn ops_per_s(r: &ProbeResult) -> Option<f64> {
    r.extras.throughput.as_ref()?.ops_per_s()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: u64, count: u64) -> Bucket {
        Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(lo), count }
    }

    #[test]
    fn ks_of_identical_and_disjoint_histograms() {
        let a = [b(10, 50), b(20, 50)];
        let t = ks_histograms(&a, &a);
        assert_eq!(t.d, 0.0);
        assert!(!t.distinguishable);
        let c = [b(30, 50), b(40, 50)];
        let t = ks_histograms(&a, &c);
        assert_eq!(t.d, 1.0);
        assert!(t.distinguishable);
        // Half shifted: after 10 F_a = .5, F_d = 0; after 20: 1 vs .5; D = .5.
        let d = [b(20, 50), b(30, 50)];
        assert!((ks_histograms(&a, &d).d - 0.5).abs() < 1e-12);
    }

    /// Issue 49 item 7: whole-µs samples against the same values in ns
    /// read D = 0.64 when the CDFs were evaluated at the fine tops too.
    #[test]
    fn ks_at_the_coarser_resolution() {
        // The fine one: 1000 samples spread over 20.000–29.999 µs in 10 ns buckets.
        let fine: Vec<Bucket> = (0..1000u64).map(|k| Bucket { lo_ns: Nanos(20_000 + 10 * k), hi_ns: Nanos(20_009 + 10 * k), count: 1 }).collect();
        // The same samples truncated to whole µs: [20 µs, 21 µs) ... 100 each.
        let coarse: Vec<Bucket> = (20..30u64).map(|u| Bucket { lo_ns: Nanos(u * 1000), hi_ns: Nanos(u * 1000 + 999), count: 100 }).collect();
        let t = ks_histograms(&coarse, &fine);
        assert!(t.d < 1e-12, "{t:?}");
        assert_eq!(t.at_ns, Some(Nanos(1000)));
        assert_eq!(ks_histograms(&fine, &coarse).at_ns, Some(Nanos(1000)));
        // Shifted by 2 µs it still differs (D = 0.2).
        let shifted: Vec<Bucket> = coarse.iter().map(|b| Bucket { lo_ns: Nanos(b.lo_ns.0 + 2000), hi_ns: Nanos(b.hi_ns.0 + 2000), count: b.count }).collect();
        assert!((ks_histograms(&shifted, &fine).d - 0.2).abs() < 1e-9);
        // Same resolutions: no at_ns.
        assert_eq!(ks_histograms(&fine, &fine).at_ns, None);
    }
}
