//! The one definition of each statistic rtscope reports, used by the
//! recorder, the importers, the store and the analysis alike:
//!
//! - [`PERCENTILES`]: the percentiles every result carries, with their JSON
//!   key (`"99.9"`) and report label (`"p99.9"`) side by side.
//! - [`nearest_rank`] and [`bucket_percentile`]: a percentile is the value
//!   of rank ⌈q·n/100⌉, read from a histogram as the top of the bucket
//!   holding that rank, clamped to the exact [min, max].
//!   [`bucket_percentile_bounds`] gives the whole range that bucket allows:
//!   when the bucket is wide ([`is_wide`]: an import's overflow bucket, a
//!   coarse bins-csv row) the percentile is a bound, not a value, and every
//!   report shows it as one (`≥ X` or `X–Y`).
//! - [`Moments`]: mean and standard deviation. σ is the population standard
//!   deviation, √(Σ(x−μ)²/n) — what the recorder computes from its sums and
//!   what cyclictest-like tools print; an importer that must estimate σ from
//!   bucket midpoints uses the same convention, and merged entries pool
//!   per-thread moments exactly under it.
//! - [`miss_ratio`]: deadline misses per period (a miss is a late sample or
//!   a missed period; periods = samples + missed periods), and
//!   [`fmt_ratio_value`], the one way a ratio is printed.
//! - The tail probabilities, the Kolmogorov–Smirnov test and a seeded random
//!   number generator used by the comparison and the statistical worst case.
//!
//! Each is the textbook method, cited where it is defined; they are here
//! rather than in a statistics crate because rtscope needs only these few and
//! each is a dozen lines that the tests below check against known values.

use crate::model::{Bucket, Nanos};

/// One reported percentile: its key in a result's `percentiles_ns`, its label
/// in reports and its quantile in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantile {
    pub key: &'static str,
    pub(crate) label: &'static str,
    pub q: f64,
}

/// The percentiles every result carries and every report shows, in order.
pub const PERCENTILES: [Quantile; 6] = [
    Quantile { key: "50", label: "p50", q: 50.0 },
    Quantile { key: "90", label: "p90", q: 90.0 },
    Quantile { key: "99", label: "p99", q: 99.0 },
    Quantile { key: "99.9", label: "p99.9", q: 99.9 },
    Quantile { key: "99.99", label: "p99.99", q: 99.99 },
    Quantile { key: "99.999", label: "p99.999", q: 99.999 },
];

/// The nearest rank ⌈q·n/100⌉ of percentile `q` (0–100) among `n` samples,
/// in 1..=n. The product is taken with a relative tolerance so that e.g.
/// 99.9 % of 1000 is rank 999, not 1000 through floating-point error.
pub(crate) fn nearest_rank(q: f64, n: u64) -> u64 {
    let r = q.clamp(0.0, 100.0) * n as f64 / 100.0;
    ((r - r * 1e-12).ceil() as u64).clamp(1, n)
}

/// Percentile `q` (0–100) by nearest rank from histogram buckets in
/// ascending order: the top of the bucket holding the rank, clamped to the
/// exact `[min, max]`. `None` for an empty histogram.
pub fn bucket_percentile(hist: &[Bucket], q: f64, min: Nanos, max: Nanos) -> Option<Nanos> {
    let n = hist.iter().fold(0u64, |a, b| a.saturating_add(b.count));
    if n == 0 {
        return None;
    }
    let rank = nearest_rank(q, n);
    let mut seen = 0u64;
    for b in hist {
        seen = seen.saturating_add(b.count);
        if seen >= rank {
            return Some(Nanos(b.hi_ns.0.clamp(min.0, max.0.max(min.0))));
        }
    }
    Some(max)
}

/// Widest bucket (ns) read as a value rather than a bound, absolute part:
/// cyclictest's and rtla's 1 µs rows are values at their resolution.
pub(crate) const WIDE_ABS_NS: u64 = 1_000;
/// Widest bucket read as a value, relative part: rtscope's own buckets are
/// 0.1 % wide above 2048 ns.
pub(crate) const WIDE_REL: f64 = 0.01;

/// True when the range `[lo, hi]` a bucket allows is too wide to be read as
/// one value: wider than both [`WIDE_ABS_NS`] and [`WIDE_REL`] of `lo`.
pub(crate) fn is_wide(lo: Nanos, hi: Nanos) -> bool {
    let w = hi.0.saturating_sub(lo.0);
    w > WIDE_ABS_NS && w as f64 > WIDE_REL * lo.0 as f64
}

/// Percentile `q` as the range `(lo, hi)` its bucket allows, clamped to the
/// exact `[min, max]`; `hi` is [`bucket_percentile`]'s value. The range is
/// a bound to show as such when [`is_wide`]. `None` for an empty histogram.
pub(crate) fn bucket_percentile_bounds(hist: &[Bucket], q: f64, min: Nanos, max: Nanos) -> Option<(Nanos, Nanos)> {
    let n = hist.iter().fold(0u64, |a, b| a.saturating_add(b.count));
    if n == 0 {
        return None;
    }
    let rank = nearest_rank(q, n);
    let top = max.0.max(min.0);
    let mut seen = 0u64;
    for b in hist {
        seen = seen.saturating_add(b.count);
        if seen >= rank {
            let hi = b.hi_ns.0.clamp(min.0, top);
            let lo = b.lo_ns.0.clamp(min.0, hi);
            return Some((Nanos(lo), Nanos(hi)));
        }
    }
    Some((max, max))
}

/// A ratio (a miss ratio, a bound of one) for people: `0`, `0.0254`,
/// `1.54e-5` — three significant digits, plain down to 0.001, e-notation
/// below; never `0.000e0`.
pub(crate) fn fmt_ratio_value(r: f64) -> String {
    if r == 0.0 {
        "0".into()
    } else if !r.is_finite() {
        format!("{r}")
    } else if r.abs() >= 1e-3 {
        let decimals = (2 - r.abs().log10().floor() as i32).max(0) as usize;
        let s = format!("{r:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        let s = format!("{r:.2e}");
        // "1.50e-5" → "1.5e-5"
        match s.split_once('e') {
            Some((m, e)) if m.contains('.') => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            _ => s,
        }
    }
}

/// Mean and population standard deviation of `n` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Moments {
    pub(crate) n: u64,
    pub(crate) mean: f64,
    pub(crate) sd: f64,
}

impl Moments {
    /// From the running sums a recorder keeps: n, Σx and Σx².
    pub(crate) fn from_sums(n: u64, sum: f64, sum_sq: f64) -> Moments {
        if n == 0 {
            return Moments { n, mean: 0.0, sd: 0.0 };
        }
        let mean = sum / n as f64;
        let var = (sum_sq / n as f64 - mean * mean).max(0.0);
        Moments { n, mean, sd: var.sqrt() }
    }

    /// Estimated from histogram buckets, each sample taken at its bucket's
    /// midpoint (for sources that give a histogram but no σ).
    pub(crate) fn from_buckets(hist: &[Bucket]) -> Moments {
        let n = hist.iter().fold(0u64, |a, b| a.saturating_add(b.count));
        if n == 0 {
            return Moments { n, mean: 0.0, sd: 0.0 };
        }
        let mid = |b: &Bucket| (b.lo_ns.0 as f64 + b.hi_ns.0 as f64) / 2.0;
        let mean = hist.iter().map(|b| mid(b) * b.count as f64).sum::<f64>() / n as f64;
        let var = hist.iter().map(|b| (mid(b) - mean).powi(2) * b.count as f64).sum::<f64>() / n as f64;
        Moments { n, mean, sd: var.sqrt() }
    }

    /// The moments of the union of disjoint groups: pooled variance
    /// Σ nᵢ(σᵢ² + (μᵢ − μ)²) / N, exact for population σ.
    /// The groups are given as runs of equal ones, each with its count
    /// (1.5 M pairs of an IPC log mostly have the same moments): the sums
    /// are those of every group, added in their order. Two passes (the
    /// mean, then the variance around it), so the runs come as an iterator
    /// that is cloned for each; the caller may keep them in any form.
    pub(crate) fn pooled(runs: impl Iterator<Item = (Moments, u64)> + Clone) -> Moments {
        let parts = || runs.clone().flat_map(|(p, k)| std::iter::repeat_n(p, k as usize));
        let n = parts().fold(0u64, |a, p| a.saturating_add(p.n));
        let w = n.max(1) as f64;
        let mean = parts().map(|p| p.mean * p.n as f64).sum::<f64>() / w;
        let var = parts().map(|p| p.n as f64 * (p.sd.powi(2) + (p.mean - mean).powi(2))).sum::<f64>() / w;
        Moments { n, mean, sd: var.sqrt() }
    }
}

/// Misses per period (0 when there are none): a miss is a sample over the
/// deadline or a missed period, and periods = samples + missed periods.
/// maxrate's "missed-period ratio" is the same function of missed periods.
pub(crate) fn miss_ratio(misses: u64, periods: u64) -> f64 {
    if periods == 0 {
        0.0
    } else {
        misses as f64 / periods as f64
    }
}

/// Complementary error function, erfc(x), with fractional error < 1.2e-7
/// everywhere (Chebyshev fit; Press et al., *Numerical Recipes in C*, 2nd
/// ed., §6.2, `erfcc`).
pub(crate) fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// P(Z > z) for a standard normal Z.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// P(X > x) for X ~ χ²(k), by the Wilson–Hilferty cube-root normal
/// approximation (Wilson & Hilferty 1931), accurate to a few 1e-3 in the
/// tail for k ≥ 3, which is all a 1 % test needs.
pub(crate) fn chi2_sf(x: f64, k: usize) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let k = k as f64;
    let h = 2.0 / (9.0 * k);
    let z = ((x / k).cbrt() - (1.0 - h)) / h.sqrt();
    normal_sf(z)
}

/// The Kolmogorov distribution's survival function Q(λ) =
/// 2 Σ_{j≥1} (−1)^{j−1} e^{−2 j² λ²}: the asymptotic p-value of a KS
/// statistic D with effective size n_e is Q((√n_e + 0.12 + 0.11/√n_e)·D)
/// (Press et al., *Numerical Recipes*, §14.3, `probks`/`kstwo`).
pub(crate) fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for j in 1..=100 {
        let term = sign * (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// p-value of a two-sample KS statistic `d` between samples of sizes n1, n2.
pub(crate) fn ks_pvalue(d: f64, n1: f64, n2: f64) -> f64 {
    if n1 <= 0.0 || n2 <= 0.0 {
        return 1.0;
    }
    let ne = n1 * n2 / (n1 + n2);
    let s = ne.sqrt();
    kolmogorov_q((s + 0.12 + 0.11 / s) * d)
}

/// Two-sample KS statistic D = sup |F_a − F_b| of two plain samples
/// (sorted in place).
pub(crate) fn ks_statistic(a: &mut [f64], b: &mut [f64]) -> f64 {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny seeded generator, so that
/// bootstrap intervals are reproducible from one report to the next.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in the open interval (0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: u64, hi: u64, count: u64) -> Bucket {
        Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count }
    }

    #[test]
    fn nearest_rank_is_the_ceiling_without_float_error() {
        assert_eq!(nearest_rank(99.9, 1000), 999);
        assert_eq!(nearest_rank(50.0, 1), 1);
        assert_eq!(nearest_rank(0.0, 10), 1);
        assert_eq!(nearest_rank(100.0, 10), 10);
        assert_eq!(nearest_rank(41.0, 10), 5);
    }

    #[test]
    fn bucket_percentiles_by_hand() {
        // 10 samples: 4 at 100, 3 at 200, 2 at 300, 1 at 1000.
        let h = [b(100, 100, 4), b(200, 200, 3), b(300, 300, 2), b(1000, 1000, 1)];
        let p = |q| bucket_percentile(&h, q, Nanos(100), Nanos(1000)).unwrap().0;
        assert_eq!((p(40.0), p(41.0), p(90.0), p(90.1), p(99.999)), (100, 200, 300, 1000, 1000));
        assert!(bucket_percentile(&[], 50.0, Nanos(0), Nanos(0)).is_none());
        // The max bucket's top is clamped to the exact max.
        assert_eq!(bucket_percentile(&[b(1000, 1999, 5), b(2000, 2999, 5)], 99.0, Nanos(1000), Nanos(2500)), Some(Nanos(2500)));
        // The keys and labels are one list.
        assert!(PERCENTILES.iter().all(|p| p.label == format!("p{}", p.key) && p.key.parse::<f64>().unwrap() == p.q));
    }

    #[test]
    fn percentile_bounds_mark_wide_buckets() {
        // cyclictest -h10: 1 738 samples in 1 µs rows up to 10 µs, 1 262
        // overflows in one bucket [10 µs, 503 µs].
        let h = [b(4_000, 4_999, 500), b(9_000, 9_999, 1_238), b(10_000, 503_000, 1_262)];
        let (min, max) = (Nanos(4_000), Nanos(503_000));
        let (lo, hi) = bucket_percentile_bounds(&h, 99.0, min, max).unwrap();
        assert_eq!((lo, hi), (Nanos(10_000), Nanos(503_000)));
        assert!(is_wide(lo, hi), "the overflow bucket is a bound");
        assert_eq!(Some(hi), bucket_percentile(&h, 99.0, min, max), "the value is the bucket_percentile");
        // p50 sits in a 1 µs row: a value, not a bound.
        let (lo, hi) = bucket_percentile_bounds(&h, 50.0, min, max).unwrap();
        assert_eq!((lo, hi), (Nanos(9_000), Nanos(9_999)));
        assert!(!is_wide(lo, hi));
        // rtscope's 0.1 %-wide buckets are values.
        assert!(!is_wide(Nanos(6_299_000), Nanos(6_305_000)));
        // Clamped to [min, max]: a wide bucket that the exact max narrows is a value.
        assert_eq!(bucket_percentile_bounds(&[b(1_000, 9_000, 3)], 50.0, Nanos(1_200), Nanos(1_500)), Some((Nanos(1_200), Nanos(1_500))));
        assert!(bucket_percentile_bounds(&[], 50.0, Nanos(0), Nanos(0)).is_none());
    }

    #[test]
    fn ratios_print_readably() {
        assert_eq!(fmt_ratio_value(0.0), "0");
        assert_eq!(fmt_ratio_value(0.02), "0.02");
        assert_eq!(fmt_ratio_value(0.025_4), "0.0254");
        assert_eq!(fmt_ratio_value(1.0), "1");
        assert_eq!(fmt_ratio_value(1.539e-5), "1.54e-5");
        assert_eq!(fmt_ratio_value(1.5e-5), "1.5e-5");
        assert_eq!(fmt_ratio_value(1e-6), "1e-6");
    }

    #[test]
    fn moments_are_population_moments_and_pool_exactly() {
        let xs = [1.0f64, 2.0, 3.0, 4.0, 10.0];
        let m = Moments::from_sums(5, xs.iter().sum(), xs.iter().map(|x| x * x).sum());
        assert!((m.mean - 4.0).abs() < 1e-12);
        assert!((m.sd - (50.0f64 / 5.0).sqrt()).abs() < 1e-12, "σ divides by n: {}", m.sd);
        assert_eq!(Moments::from_sums(0, 0.0, 0.0), Moments { n: 0, mean: 0.0, sd: 0.0 });
        let one = Moments::from_buckets(&[b(100, 100, 1)]);
        assert_eq!((one.mean, one.sd), (100.0, 0.0));
        let h = Moments::from_buckets(&[b(1, 1, 1), b(2, 2, 1), b(3, 3, 1), b(4, 4, 1), b(10, 10, 1)]);
        assert!((h.sd - m.sd).abs() < 1e-12, "buckets and sums agree");
        let part = |v: &[f64]| Moments::from_sums(v.len() as u64, v.iter().sum(), v.iter().map(|x| x * x).sum());
        let p = Moments::pooled([(part(&xs[..2]), 1), (part(&xs[2..]), 1)].into_iter());
        assert_eq!(p.n, 5);
        assert!((p.mean - m.mean).abs() < 1e-12 && (p.sd - m.sd).abs() < 1e-9);
        // A run of k equal groups is those k groups, to the bit.
        let (a, c) = (part(&xs[..1]), part(&xs[1..]));
        let runs = Moments::pooled([(a, 3), (c, 1), (a, 2)].into_iter());
        let each = Moments::pooled([(a, 1), (a, 1), (a, 1), (c, 1), (a, 1), (a, 1)].into_iter());
        assert_eq!((runs.n, runs.mean.to_bits(), runs.sd.to_bits()), (each.n, each.mean.to_bits(), each.sd.to_bits()));
        assert_eq!(runs.n, 3 + 4 + 2);
    }

    #[test]
    fn miss_ratio_of_nothing_is_zero() {
        assert_eq!(miss_ratio(0, 0), 0.0);
        // Per period: 499 late samples + 2 498 missed periods of 47 766 + 2 498.
        assert!((miss_ratio(499 + 2_498, 47_766 + 2_498) - 0.059_625).abs() < 1e-6);
        assert_eq!(miss_ratio(1, 4), 0.25);
        // Missed periods over all periods (maxrate): 10 missed, 90 kept.
        assert_eq!(miss_ratio(10, 100), 0.1);
        assert_eq!(miss_ratio(5, 5), 1.0);
    }

    #[test]
    fn normal_tail_matches_tables() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(2.575_829) - 0.005).abs() < 1e-6);
        assert!((normal_sf(-1.0) - 0.841_344_7).abs() < 1e-6);
    }

    #[test]
    fn chi2_tail_matches_tables() {
        // χ²(10) 0.99 quantile 23.209; χ²(20) 0.95 quantile 31.410.
        assert!((chi2_sf(23.209, 10) - 0.01).abs() < 0.002, "{}", chi2_sf(23.209, 10));
        assert!((chi2_sf(31.410, 20) - 0.05).abs() < 0.003);
    }

    #[test]
    fn kolmogorov_matches_known_points() {
        // Q(1.358) = 0.05, Q(1.628) = 0.01 (the classic critical values).
        assert!((kolmogorov_q(1.358) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_q(1.628) - 0.01).abs() < 1e-3);
    }

    #[test]
    fn ks_statistic_by_hand() {
        let mut a = vec![1.0, 2.0, 3.0, 4.0];
        let mut b = vec![3.0, 4.0, 5.0, 6.0];
        // After 2: F_a = 0.5, F_b = 0; after 4: 1 vs 0.5 → D = 0.5.
        assert!((ks_statistic(&mut a, &mut b) - 0.5).abs() < 1e-12);
        let mut c = vec![1.0, 2.0];
        let mut d = vec![1.0, 2.0];
        assert_eq!(ks_statistic(&mut c, &mut d), 0.0);
    }

    #[test]
    fn splitmix_is_uniform_enough() {
        let mut r = SplitMix64(42);
        let n = 100_000;
        let mean = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005);
    }
}
