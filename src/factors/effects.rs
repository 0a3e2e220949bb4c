//! Effects of factors, estimated from interleaved rounds: pure functions of
//! the measured values, no I/O.
//!
//! **Data.** One metric (p99 of `timer/idle`, say) of every cell in every
//! round: `values[round][cell]`, `None` where a run lacks it. A cell is a
//! level index per factor ([`super::design::Design`]).
//!
//! **Main effect** of level `L` of factor `f` against its first level (the
//! baseline): the cells that differ *only* in `f` are paired (baseline,
//! `L`); within one round, the effect is the mean over those pairs of the
//! difference — of the logarithms for latencies (so the effect is a ratio,
//! reported as a percentage: −40 % is 0.6×), of the values themselves for
//! a miss ratio (percentage points; it can be 0). In a full factorial this
//! is the classical main effect averaged over the other factors' levels; in
//! a one-factor-at-a-time design it is the one pair. Pairing within a round
//! is what interleaving buys: the host's drift and bursts hit both sides
//! of a pair alike.
//!
//! **Interval** over rounds (rounds are the independent units): the mean of
//! the per-round effects with a percentile bootstrap over rounds
//! ([`BOOTSTRAP`] resamples, fixed seed, so the analysis is reproducible).
//! A plain percentile bootstrap is too narrow with few rounds (it ignores
//! the n−1 and the t distribution); the α of its percentiles is *expanded*
//! as Hesterberg proposes (T. Hesterberg, "What teachers should know about
//! the bootstrap", The American Statistician 69(4), 2015, §5.2):
//! α' = 2·Φ(−√(n/(n−1))·t_{α/2, n−1}), which for normal data gives the
//! t interval's width and keeps the bootstrap's asymmetry for skewed data.
//! Even so no bootstrap reaches past the rounds' own range, which with 5
//! rounds is too narrow for 99 %: the interval used is the wider of this
//! one and Student's t interval ([`interval`]).
//!
//! **Material** is the rule `compare` uses (docs/report.md), a test *and*
//! an effect size: the interval at compare's level (1 − [`ALPHA`] = 99 %)
//! excludes no effect, *and* the effect is at least [`MATERIAL_RATIO`]
//! (×1.2 or ×1/1.2; for a miss ratio a fifth of the larger level's ratio),
//! compare's "a fifth of the samples moved" read as "a fifth of the
//! latency". An effect the rounds can tell from zero but smaller is
//! "small"; one they cannot is "none seen". The shown interval is 95 %.

use serde::Serialize;

use crate::analysis::compare::ALPHA;

/// Bootstrap resamples per interval.
pub(crate) const BOOTSTRAP: usize = 4000;
/// Smallest ratio (or its inverse) called material.
pub(crate) const MATERIAL_RATIO: f64 = 1.2;
/// The level of the interval shown.
pub(crate) const SHOWN_LEVEL: f64 = 0.95;

/// How a metric's effect is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scale {
    /// Latencies: differences of logarithms, shown as a percentage change.
    Log,
    /// A miss ratio: differences, shown in percentage points.
    Linear,
}

/// A verdict as compare words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Material,
    Small,
    NoneSeen,
}

impl Verdict {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Material => "material",
            Verdict::Small => "small",
            Verdict::NoneSeen => "none seen",
        }
    }
}

/// One estimated effect, on the metric's own scale.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Estimate {
    /// Log scale: the ratio − 1 (−0.4 is −40 %); linear: the difference.
    pub(crate) effect: f64,
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    /// The interval at compare's level (99 %) that decides "material".
    pub(crate) test_lo: f64,
    pub(crate) test_hi: f64,
    /// Rounds that had every cell the effect needs.
    pub(crate) rounds: usize,
    pub(crate) verdict: Verdict,
}

/// A small, fast, seedable generator (SplitMix64, Steele et al. 2014): for
/// the bootstrap and the run order, where only reproducibility matters.
#[derive(Debug, Clone)]
pub(crate) struct Rng(crate::stats::SplitMix64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(crate::stats::SplitMix64(seed))
    }
    /// The next number of stats' SplitMix64 (the one generator).
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is below 2^-40 for small n.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
    /// Standard normal (Box–Muller), for the tests' synthetic rounds.
    #[cfg(test)]
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = ((self.next_u64() >> 11) as f64) / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Φ, the standard normal CDF, through the complementary error function of
/// Numerical Recipes §6.2 (`erfcc`: a Chebyshev fit, fractional error below
/// 1.2e-7 everywhere, so good in the far tail the expanded α reaches).
pub(crate) fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let erfc = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// Student's t quantile t_{1−a, df} for the two levels used here (a =
/// 0.025 and 0.005): a table to 30 degrees of freedom, then the
/// Cornish–Fisher expansion (Abramowitz & Stegun 26.7.5), good to 1e-3 there.
pub(crate) fn t_quantile(a: f64, df: usize) -> f64 {
    const T975: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
        2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    const T995: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831,
        2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750,
    ];
    let df = df.max(1);
    let table = if (a - 0.025).abs() < 1e-9 {
        Some(&T975)
    } else if (a - 0.005).abs() < 1e-9 {
        Some(&T995)
    } else {
        None
    };
    if let (Some(t), true) = (table, df <= 30) {
        return t[df - 1];
    }
    let z: f64 = if (a - 0.025).abs() < 1e-9 { 1.959_964 } else { 2.575_829 };
    let n = df as f64;
    z + (z.powi(3) + z) / (4.0 * n) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}

/// The expanded percentile bootstrap interval of the mean of `xs` at level
/// 1 − `alpha` (alpha 0.05 or 0.01); `xs.len() >= 2`.
pub(crate) fn bootstrap_mean_interval(xs: &[f64], alpha: f64, seed: u64) -> (f64, f64) {
    let n = xs.len();
    let t = t_quantile(alpha / 2.0, n - 1);
    let expanded = 2.0 * phi(-(n as f64 / (n as f64 - 1.0)).sqrt() * t);
    let mut rng = Rng::new(seed);
    let mut means: Vec<f64> = (0..BOOTSTRAP)
        .map(|_| {
            let mut s = 0.0;
            for _ in 0..n {
                s += xs[rng.below(n)];
            }
            s / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let i = ((q * BOOTSTRAP as f64).floor() as usize).min(BOOTSTRAP - 1);
        means[i]
    };
    (at(expanded / 2.0), at(1.0 - expanded / 2.0))
}

/// The interval used: the wider of the expanded bootstrap interval and
/// Student's t interval (mean ± t·s/√n). A bootstrap over a handful of
/// rounds cannot reach past the rounds' own range (with 5 rounds that range
/// excludes 0 in 1 of 16 A/A experiments, far above a 99 % level's 1 in
/// 100); the t interval can, and is exact for normal data. Taking both
/// keeps the bootstrap's asymmetry for a skewed metric and the t's width
/// for few rounds.
pub(crate) fn interval(xs: &[f64], alpha: f64, seed: u64) -> (f64, f64) {
    let (blo, bhi) = bootstrap_mean_interval(xs, alpha, seed);
    let n = xs.len() as f64;
    let m = mean(xs);
    let sd = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt();
    let half = t_quantile(alpha / 2.0, xs.len() - 1) * sd / n.sqrt();
    (blo.min(m - half), bhi.max(m + half))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The estimate from per-round differences `d` (log or linear), with
/// `base` the baseline's typical value (for a linear metric's size rule).
pub(crate) fn estimate(d: &[f64], scale: Scale, base_level: f64, other_level: f64, seed: u64) -> Option<Estimate> {
    if d.len() < 2 {
        return None;
    }
    let m = mean(d);
    let (lo, hi) = interval(d, 1.0 - SHOWN_LEVEL, seed);
    let (tlo, thi) = interval(d, ALPHA, seed ^ 0x5555);
    let excludes_zero = tlo > 0.0 || thi < 0.0;
    let big = match scale {
        Scale::Log => m.abs() >= MATERIAL_RATIO.ln(),
        Scale::Linear => {
            let larger = base_level.abs().max(other_level.abs());
            larger > 0.0 && m.abs() >= (1.0 - 1.0 / MATERIAL_RATIO) * larger
        }
    };
    let verdict = match (excludes_zero, big) {
        (true, true) => Verdict::Material,
        (true, false) => Verdict::Small,
        (false, _) => Verdict::NoneSeen,
    };
    let shown = |x: f64| match scale {
        Scale::Log => x.exp() - 1.0,
        Scale::Linear => x,
    };
    Some(Estimate { effect: shown(m), lo: shown(lo), hi: shown(hi), test_lo: shown(tlo), test_hi: shown(thi), rounds: d.len(), verdict })
}

/// How a value enters the differences.
fn tx(v: f64, scale: Scale) -> Option<f64> {
    match scale {
        // A latency of 0 ns (a clamped or coarse value) cannot be a ratio:
        // 1 ns stands in for it.
        Scale::Log => Some(v.max(1.0).ln()),
        Scale::Linear => v.is_finite().then_some(v),
    }
}

/// Per-round main-effect differences of `level` of factor `f` against
/// level 0, from the pairs of cells that differ only in `f`.
pub(crate) fn main_rounds(cells: &[Vec<usize>], values: &[Vec<Option<f64>>], f: usize, level: usize, scale: Scale) -> (Vec<f64>, f64, f64) {
    let pairs: Vec<(usize, usize)> = cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c[f] == 0)
        .filter_map(|(i, c)| {
            let j = cells.iter().position(|o| o[f] == level && o.iter().zip(c).enumerate().all(|(k, (a, b))| k == f || a == b))?;
            Some((i, j))
        })
        .collect();
    let mut d = Vec::new();
    let (mut base, mut other, mut count) = (0.0, 0.0, 0usize);
    for round in values {
        let diffs: Option<Vec<f64>> = pairs
            .iter()
            .map(|&(i, j)| {
                let (a, b) = (round.get(i).copied().flatten()?, round.get(j).copied().flatten()?);
                base += a;
                other += b;
                count += 1;
                Some(tx(b, scale)? - tx(a, scale)?)
            })
            .collect();
        if let Some(diffs) = diffs.filter(|v| !v.is_empty()) {
            d.push(mean(&diffs));
        }
    }
    let n = count.max(1) as f64;
    (d, base / n, other / n)
}

/// Per-round interaction of factors `f` and `g` (their first two levels):
/// how much `f`'s effect changes when `g` goes from its level 0 to 1, from
/// every quadruple of cells that differ only in `f` and `g`.
pub(crate) fn interaction_rounds(cells: &[Vec<usize>], values: &[Vec<Option<f64>>], f: usize, g: usize, scale: Scale) -> Vec<f64> {
    let find = |c: &[usize], fl: usize, gl: usize| {
        cells.iter().position(|o| o[f] == fl && o[g] == gl && o.iter().zip(c).enumerate().all(|(k, (a, b))| k == f || k == g || a == b))
    };
    let quads: Vec<[usize; 4]> =
        cells.iter().filter(|c| c[f] == 0 && c[g] == 0).filter_map(|c| Some([find(c, 0, 0)?, find(c, 1, 0)?, find(c, 0, 1)?, find(c, 1, 1)?])).collect();
    let mut d = Vec::new();
    for round in values {
        let v: Option<Vec<f64>> = quads
            .iter()
            .map(|q| {
                let y = |i: usize| tx(round.get(q[i]).copied().flatten()?, scale);
                Some((y(3)? - y(2)?) - (y(1)? - y(0)?))
            })
            .collect();
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            d.push(mean(&v));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Full factorial cells of factors with these level counts.
    fn cells(levels: &[usize]) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]];
        for &n in levels {
            out = out.into_iter().flat_map(|c: Vec<usize>| (0..n).map(move |l| [c.clone(), vec![l]].concat())).collect();
        }
        out
    }

    /// Synthetic rounds: log y = base + round drift + Σ effects + noise.
    fn rounds(rng: &mut Rng, cells: &[Vec<usize>], effects: &[f64], n: usize, noise: f64) -> Vec<Vec<Option<f64>>> {
        (0..n)
            .map(|_| {
                let drift = rng.normal() * 0.5;
                cells
                    .iter()
                    .map(|c| {
                        let e: f64 = c.iter().zip(effects).map(|(&l, &e)| if l == 1 { e } else { 0.0 }).sum();
                        Some((10.0 + drift + e + noise * rng.normal()).exp())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn phi_and_t() {
        assert!((phi(0.0) - 0.5).abs() < 1e-7);
        assert!((phi(1.959_964) - 0.975).abs() < 1e-6);
        assert!((phi(-3.0) - 0.001_349_9).abs() < 1e-6);
        assert_eq!(t_quantile(0.025, 4), 2.776);
        assert!((t_quantile(0.025, 60) - 2.000).abs() < 2e-3);
        assert!((t_quantile(0.005, 120) - 2.617).abs() < 3e-3);
    }

    #[test]
    fn a_known_effect_is_found_with_its_interval() {
        let c = cells(&[2, 2]);
        let mut rng = Rng::new(7);
        let v = rounds(&mut rng, &c, &[(0.6f64).ln(), 0.0], 8, 0.1);
        let (d, _, _) = main_rounds(&c, &v, 0, 1, Scale::Log);
        let e = estimate(&d, Scale::Log, 1.0, 1.0, 1).unwrap();
        assert!((e.effect + 0.4).abs() < 0.06, "{e:?}");
        assert!(e.lo <= -0.4 && e.hi >= -0.4, "{e:?}");
        assert_eq!(e.verdict, Verdict::Material);
        let (d, _, _) = main_rounds(&c, &v, 1, 1, Scale::Log);
        assert_ne!(estimate(&d, Scale::Log, 1.0, 1.0, 1).unwrap().verdict, Verdict::Material);
    }

    /// The shown 95 % interval covers the true effect at its nominal rate
    /// (within the binomial noise of 400 experiments: ≥ 91 %), with 5 and
    /// with 10 rounds, and is not needlessly wide (≤ 99 %).
    #[test]
    fn the_interval_covers_the_true_effect_at_its_nominal_rate() {
        let c = cells(&[2, 2, 2]);
        for (n, seed) in [(5usize, 11u64), (10, 12)] {
            let mut rng = Rng::new(seed);
            let truth = 0.25f64;
            let mut covered = 0;
            let trials = 400;
            for t in 0..trials {
                let v = rounds(&mut rng, &c, &[truth, -0.1, 0.0], n, 0.3);
                let (d, _, _) = main_rounds(&c, &v, 0, 1, Scale::Log);
                let e = estimate(&d, Scale::Log, 1.0, 1.0, t as u64).unwrap();
                let (lo, hi) = ((1.0 + e.lo).ln(), (1.0 + e.hi).ln());
                if lo <= truth && truth <= hi {
                    covered += 1;
                }
            }
            let rate = covered as f64 / trials as f64;
            assert!((0.91..=0.99).contains(&rate), "{n} rounds: coverage {rate}");
        }
    }

    /// An A/A factor (no effect) is called material in under 5 % of
    /// repeated experiments, also with a noisy tail metric.
    #[test]
    fn an_aa_factor_is_not_material() {
        let c = cells(&[2, 2]);
        let mut rng = Rng::new(99);
        let trials = 500;
        for noise in [0.1, 0.5, 1.0] {
            let material = (0..trials)
                .filter(|&t| {
                    let v = rounds(&mut rng, &c, &[0.0, 0.3], 5, noise);
                    let (d, _, _) = main_rounds(&c, &v, 0, 1, Scale::Log);
                    estimate(&d, Scale::Log, 1.0, 1.0, t as u64).unwrap().verdict == Verdict::Material
                })
                .count();
            assert!((material as f64) < 0.05 * trials as f64, "noise {noise}: {material} of {trials} called material");
        }
    }

    #[test]
    fn interaction_of_two_factors() {
        let c = cells(&[2, 2]);
        let mut rng = Rng::new(3);
        // f's effect only when g is at level 1.
        let v: Vec<Vec<Option<f64>>> = (0..6)
            .map(|_| {
                let drift = rng.normal();
                c.iter().map(|cell| Some((5.0 + drift + if cell == &vec![1, 1] { 0.7 } else { 0.0 } + 0.05 * rng.normal()).exp())).collect()
            })
            .collect();
        let d = interaction_rounds(&c, &v, 0, 1, Scale::Log);
        let e = estimate(&d, Scale::Log, 1.0, 1.0, 5).unwrap();
        assert!((e.effect - (0.7f64.exp() - 1.0)).abs() < 0.15, "{e:?}");
        assert_eq!(e.verdict, Verdict::Material);
    }

    #[test]
    fn a_miss_ratio_is_linear_and_may_be_zero() {
        let c = cells(&[2]);
        let v: Vec<Vec<Option<f64>>> = (0..5).map(|r| vec![Some(0.0), Some(0.01 + 0.001 * r as f64)]).collect();
        let (d, b, o) = main_rounds(&c, &v, 0, 1, Scale::Linear);
        let e = estimate(&d, Scale::Linear, b, o, 2).unwrap();
        assert!((e.effect - 0.012).abs() < 1e-9);
        assert_eq!(e.verdict, Verdict::Material);
        // A missing value drops its round.
        let mut v2 = v.clone();
        v2[0][1] = None;
        assert_eq!(main_rounds(&c, &v2, 0, 1, Scale::Linear).0.len(), 4);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<usize> = (0..20).collect();
        Rng::new(1).shuffle(&mut v);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..20).collect::<Vec<_>>());
        assert_ne!(v, s);
    }
}
