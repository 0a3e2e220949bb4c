//! The statistical worst case (probabilistic WCET, "pWCET") by extreme value
//! theory: peaks over threshold (POT) with a generalized Pareto (GPD) fit.
//!
//! # Method
//!
//! Pickands–Balkema–de Haan: above a high threshold u, the excesses
//! Y = X − u of an i.i.d. series are approximately GPD(ξ, σ), with
//! P(Y > y) = (1 + ξ·y/σ)^(−1/ξ) (exponential when ξ = 0). With ζ_u the
//! fraction of samples above u, the latency exceeded with probability p per
//! sample (the "return level") is
//! x_p = u + σ/ξ·((p/ζ_u)^(−ξ) − 1)   (u + σ·ln(ζ_u/p) when ξ = 0);
//! see Coles, *An Introduction to Statistical Modeling of Extreme Values*
//! (Springer 2001), §4.3.
//!
//! - **Data**: the result's tail (`ProbeResult::tail`, the largest samples
//!   kept exactly by the recorder, with time and thread).
//! - **Threshold** (fixed high quantile with a minimum of exceedances): the
//!   threshold is the (m+1)-th largest sample with
//!   m = min([`MAX_EXCEEDANCES`], 5 % of the samples, tail length − 1);
//!   excesses are the samples strictly above it. Fewer than
//!   [`MIN_EXCEEDANCES`] excesses: refused (tail too short). Why fixed: a
//!   mean-excess-plot choice needs a person looking at the plot; a fixed
//!   count of 1000 keeps the fit's variance low and, at 5 % at most, the
//!   threshold is always in the tail.
//! - **Fit**: maximum likelihood by Grimshaw's reduction to a one-dimensional
//!   search (Grimshaw 1993, "Computing maximum likelihood estimates for the
//!   generalized Pareto distribution", Technometrics 35(2):185–191): with
//!   θ = ξ/σ, the likelihood is maximised in ξ in closed form,
//!   ξ(θ) = mean(ln(1 + θ·y)), leaving the profile
//!   ℓ(θ) = −m·(ln(ξ(θ)/θ) + ξ(θ) + 1), which we maximise by a grid then
//!   golden-section search. ξ is restricted to ≥ −1, where the MLE exists.
//! - **Confidence interval**: parametric bootstrap ([`BOOTSTRAP`] samples of
//!   m excesses drawn from the fitted GPD, each refitted; 95 % percentile
//!   interval, Efron & Tibshirani 1993 ch. 13), seeded, so a report is
//!   reproducible.
//!
//! # Guardrails (each at the 1 % level; a failure refuses the estimate)
//!
//! - **Independence**: Ljung–Box portmanteau test (Ljung & Box 1978,
//!   Biometrika 65:297) on the excesses in time order, h = min(10, m/5) lags.
//! - **Stationarity** (checked first: a drift also correlates the series,
//!   and "it drifts" is the better advice), two checks between the two
//!   halves of the run (split
//!   at the per-second slot where half of the samples were taken): the
//!   number of excesses in the first half against its binomial expectation
//!   (a drifting series puts its peaks in one half), and a two-sample
//!   Kolmogorov–Smirnov test between the excesses of the two halves.
//!
//! When any check fails, or the tail is too short, [`pwcet`] says why and
//! gives no estimate. The observed maximum is always given beside it.

use serde::Serialize;

use crate::model::{Nanos, ProbeResult};
use crate::stats::{self, SplitMix64};

/// Excesses used at most.
pub(crate) const MAX_EXCEEDANCES: usize = 1000;
/// Excesses needed at least.
pub(crate) const MIN_EXCEEDANCES: usize = 100;
/// The threshold is at or above the 95th percentile.
pub(crate) const MAX_EXCEEDANCE_FRACTION: f64 = 0.05;
/// Exceedance probabilities per sample the estimate is given at.
pub(crate) const PROBABILITIES: [f64; 2] = [1e-6, 1e-9];
/// Bootstrap resamples for the confidence interval.
pub(crate) const BOOTSTRAP: usize = 100;
/// Level of every guardrail test.
pub(crate) const ALPHA: f64 = 0.01;
/// A fitted shape at or above this has infinite variance: no bounded
/// worst case can be extrapolated from the tail.
pub(crate) const HEAVY_XI: f64 = 0.5;
/// The largest extrapolation shown, as a multiple of the observed maximum:
/// beyond it the estimate rests on the fit alone and is refused as unreliable.
pub(crate) const MAX_EXTRAPOLATION: f64 = 10.0;
const SEED: u64 = 0x7274_7363_6f70_6531; // "rtscope1"

/// A fitted GPD.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct GpdFit {
    /// Shape ξ: > 0 heavy tail, 0 exponential, < 0 bounded tail.
    pub(crate) xi: f64,
    /// Scale σ, in ns.
    pub(crate) sigma: f64,
    pub(crate) n: usize,
    pub(crate) log_likelihood: f64,
}

impl GpdFit {
    /// P(Y > y) for an excess y ≥ 0.
    #[cfg(test)]
    pub(crate) fn survival(&self, y: f64) -> f64 {
        if self.xi.abs() < 1e-12 {
            (-y / self.sigma).exp()
        } else {
            let t = 1.0 + self.xi * y / self.sigma;
            if t <= 0.0 {
                0.0
            } else {
                t.powf(-1.0 / self.xi)
            }
        }
    }

    /// The excess exceeded with probability `q` (0 < q ≤ 1).
    pub(crate) fn excess_quantile(&self, q: f64) -> f64 {
        if self.xi.abs() < 1e-12 {
            -self.sigma * q.ln()
        } else {
            self.sigma / self.xi * (q.powf(-self.xi) - 1.0)
        }
    }
}

/// Profile log-likelihood at θ and the ξ maximising it (Grimshaw 1993).
fn profile(theta: f64, y: &[f64], ymax: f64, mean: f64) -> Option<(f64, f64)> {
    let n = y.len() as f64;
    if (theta * ymax).abs() < 1e-9 {
        return Some((-n * (mean.ln() + 1.0), 0.0));
    }
    if 1.0 + theta * ymax <= 0.0 {
        return None;
    }
    let s: f64 = y.iter().map(|&v| (theta * v).ln_1p()).sum();
    let xi = s / n;
    let sigma = xi / theta;
    // `!(sigma > 0.0)` on purpose: it also rejects NaN.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if xi < -1.0 || !(sigma > 0.0) || !sigma.is_finite() {
        return None;
    }
    Some((-n * (sigma.ln() + xi + 1.0), xi))
}

/// Maximum-likelihood GPD fit of excesses `y` (all > 0). `None` when the
/// data cannot be fitted (fewer than 3 values, all equal).
pub(crate) fn fit_gpd(y: &[f64]) -> Option<GpdFit> {
    fit_gpd_grid(y, 30, 60)
}

/// The fit with `neg` grid points for θ < 0 and `pos` for θ > 0. The
/// bootstrap refits use a coarser grid than the estimate: they start from
/// data drawn from a known smooth GPD, where the profile has one maximum.
fn fit_gpd_grid(y: &[f64], neg: usize, pos: usize) -> Option<GpdFit> {
    if y.len() < 3 {
        return None;
    }
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let ymax = y.iter().copied().fold(f64::MIN, f64::max);
    let ymin = y.iter().copied().fold(f64::MAX, f64::min);
    // `!(mean > 0.0)` on purpose: it also rejects NaN.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(mean > 0.0) || ymax <= ymin {
        return None;
    }
    // Search in s = θ·mean (scale-free). θ > −1/ymax; s up to 50 covers
    // ξ far beyond 1.
    let s_lo = -mean / ymax;
    let mut grid: Vec<f64> = (1..neg).map(|i| s_lo * (1.0 - i as f64 / neg as f64)).collect();
    grid.push(0.0);
    grid.extend((0..pos).map(|j| 1e-3 * (5e4f64).powf(j as f64 / (pos - 1) as f64)));
    grid.insert(0, s_lo * (1.0 - 1e-6));
    let f = |s: f64| profile(s / mean, y, ymax, mean).map(|p| p.0).unwrap_or(f64::NEG_INFINITY);
    let vals: Vec<f64> = grid.iter().map(|&s| f(s)).collect();
    let (best, _) = vals.iter().enumerate().fold((0usize, f64::NEG_INFINITY), |acc, (i, &v)| if v > acc.1 { (i, v) } else { acc });
    if !vals[best].is_finite() {
        return None;
    }
    // Golden-section search between the best grid point's neighbours.
    let (mut a, mut b) = (grid[best.saturating_sub(1)], grid[(best + 1).min(grid.len() - 1)]);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
        if (b - a).abs() < 1e-8 * (1.0 + a.abs()) {
            break;
        }
    }
    let mut s_best = if fc >= fd { c } else { d };
    if f(s_best) < vals[best] {
        s_best = grid[best];
    }
    let theta = s_best / mean;
    let (ll, xi) = profile(theta, y, ymax, mean)?;
    let sigma = if xi == 0.0 { mean } else { xi / theta };
    Some(GpdFit { xi, sigma, n: y.len(), log_likelihood: ll })
}

/// Draw one GPD excess from a uniform `u` in (0, 1) (inversion).
pub(crate) fn gpd_draw(xi: f64, sigma: f64, u: f64) -> f64 {
    GpdFit { xi, sigma, n: 0, log_likelihood: 0.0 }.excess_quantile(u)
}

/// Ljung–Box Q over `lags` lags and its p-value (χ² with `lags` degrees).
pub(crate) fn ljung_box(x: &[f64], lags: usize) -> (f64, f64) {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let c0: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    if c0 == 0.0 || lags == 0 || n <= lags {
        return (0.0, 1.0);
    }
    let mut q = 0.0;
    for k in 1..=lags {
        let ck: f64 = (k..n).map(|i| (x[i] - mean) * (x[i - k] - mean)).sum();
        let rho = ck / c0;
        q += rho * rho / (n - k) as f64;
    }
    q *= (n * (n + 2)) as f64;
    (q, stats::chi2_sf(q, lags))
}

/// One return level with its bootstrap interval, in ns.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ReturnLevel {
    /// Exceedance probability per sample.
    pub(crate) p: f64,
    pub(crate) estimate_ns: f64,
    pub(crate) ci_low_ns: f64,
    pub(crate) ci_high_ns: f64,
}

/// What the guardrails measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Checks {
    pub(crate) ljung_box_q: f64,
    pub(crate) ljung_box_lags: usize,
    pub(crate) ljung_box_p: f64,
    /// Excesses in the first half of the run, and the count expected there.
    pub(crate) first_half_excesses: usize,
    pub(crate) first_half_expected: f64,
    pub(crate) halves_balance_p: f64,
    /// KS between the excesses of the two halves (absent when a half has < 10).
    pub(crate) halves_ks_d: Option<f64>,
    pub(crate) halves_ks_p: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct PwcetEstimate {
    pub(crate) threshold_ns: Nanos,
    pub(crate) excesses: usize,
    pub(crate) samples: u64,
    pub(crate) fit: GpdFit,
    pub(crate) levels: Vec<ReturnLevel>,
    pub(crate) checks: Checks,
    pub(crate) observed_max_ns: Nanos,
}

/// The statistical worst case of one entry, or why there is none.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum Pwcet {
    Estimate(PwcetEstimate),
    Refused { reason: String, observed_max_ns: Nanos },
}

impl Pwcet {
    pub(crate) fn estimate(&self) -> Option<&PwcetEstimate> {
        match self {
            Pwcet::Estimate(e) => Some(e),
            Pwcet::Refused { .. } => None,
        }
    }
}

/// Return level for probability `p` given threshold, fit and ζ_u.
pub(crate) fn return_level(u: f64, fit: &GpdFit, zeta: f64, p: f64) -> f64 {
    u + fit.excess_quantile((p / zeta).min(1.0))
}

/// The pWCET of one result entry (see the module docs for the method);
/// `imported_from` is the run's source tool when it was imported; `here`:
/// measured on this host (`rtscope doctor` audits it), false for a target's.
pub(crate) fn pwcet(r: &ProbeResult, imported_from: Option<&str>, here: bool) -> Pwcet {
    estimate(r, imported_from, here).map_or_else(|reason| Pwcet::Refused { reason, observed_max_ns: r.max_ns }, Pwcet::Estimate)
}

/// One excess over the threshold: when it was taken (ns since the probe
/// started), by which thread, and by how much it exceeds the threshold (ns).
type Excess = (u64, usize, f64);

/// The steps of [`pwcet`], each refusing with its reason: threshold and
/// excesses, stationarity, independence, fit, bootstrap.
fn estimate(r: &ProbeResult, imported_from: Option<&str>, here: bool) -> Result<PwcetEstimate, String> {
    let n = r.samples;
    let (u, exc) = excesses(r, imported_from)?;
    let y: Vec<f64> = exc.iter().map(|e| e.2).collect();
    let zeta = y.len() as f64 / n as f64;
    // Stationarity first: a drift also correlates the series, and "drifts" is the better advice.
    let halves = stationarity(r, &exc)?;
    let (lb_q, lags, lb_p) = independence(&y)?;
    let fit = checked_fit(&y, u as f64, zeta, r.max_ns, here)?;
    let levels = bootstrap_levels(&fit, y.len(), u, zeta, n)?;
    Ok(PwcetEstimate {
        threshold_ns: Nanos(u),
        excesses: y.len(),
        samples: n,
        fit,
        levels,
        checks: Checks {
            ljung_box_q: lb_q,
            ljung_box_lags: lags,
            ljung_box_p: lb_p,
            first_half_excesses: halves.first,
            first_half_expected: halves.expected,
            halves_balance_p: halves.balance_p,
            halves_ks_d: halves.ks.map(|k| k.0),
            halves_ks_p: halves.ks.map(|k| k.1),
        },
        observed_max_ns: r.max_ns,
    })
}

/// The threshold u and the excesses over it in time order (see the module
/// docs: the (m+1)-th largest tail sample), or why the tail is too short.
fn excesses(r: &ProbeResult, imported_from: Option<&str>) -> Result<(u64, Vec<Excess>), String> {
    let tail = &r.tail.samples;
    if tail.is_empty() {
        // An import cannot be rerun: say what its source lacks instead.
        return Err(match imported_from {
            Some(tool) => format!(
                "no tail samples: imported from {tool}, whose output holds no individual samples; the observed max is the only worst case (a statistical one needs an rtscope run on that system)"
            ),
            None => "no tail samples in this result (written before rtscope kept them); rerun to get a statistical worst case".into(),
        });
    }
    let m = MAX_EXCEEDANCES.min((r.samples as f64 * MAX_EXCEEDANCE_FRACTION) as usize).min(tail.len().saturating_sub(1));
    if m < MIN_EXCEEDANCES {
        return Err(format!(
            "tail too short: {m} samples above the threshold, {MIN_EXCEEDANCES} needed (the run needs at least {} samples)",
            (MIN_EXCEEDANCES as f64 / MAX_EXCEEDANCE_FRACTION) as u64
        ));
    }
    // Tail is sorted largest first: the threshold is the (m+1)-th largest.
    let u = tail[m].latency().0;
    let mut exc: Vec<Excess> = tail[..m].iter().filter(|s| s.latency().0 > u).map(|s| (s.at().0, s.thread(), (s.latency().0 - u) as f64)).collect();
    if exc.len() < MIN_EXCEEDANCES {
        return Err(format!(
            "tail too short: only {} distinct samples above the threshold {} (ties), {MIN_EXCEEDANCES} needed",
            exc.len(),
            crate::units::fmt_time(u as f64)
        ));
    }
    exc.sort_by_key(|e| (e.0, e.1));
    Ok((u, exc))
}

/// What the stationarity checks measured between the two halves of the run.
struct Halves {
    /// Excesses in the first half, and the count expected there.
    first: usize,
    expected: f64,
    balance_p: f64,
    /// KS D and p between the halves' excesses (absent when a half has < 10).
    ks: Option<(f64, f64)>,
}

/// Guardrail 1, stationarity: the excesses in the first half against their
/// binomial expectation, then a KS test between the halves' excesses.
fn stationarity(r: &ProbeResult, exc: &[Excess]) -> Result<Halves, String> {
    let Some((mid_ns, frac)) = half_split(r) else {
        return Err("cannot check stationarity: the run has fewer than two per-second slots".into());
    };
    let (first, second): (Vec<f64>, Vec<f64>) = {
        let (a, b): (Vec<&Excess>, Vec<&Excess>) = exc.iter().partition(|e| e.0 < mid_ns);
        (a.iter().map(|e| e.2).collect(), b.iter().map(|e| e.2).collect())
    };
    let mm = exc.len() as f64;
    let expected = mm * frac;
    let sd = (mm * frac * (1.0 - frac)).sqrt();
    let z = (first.len() as f64 - expected) / sd.max(1e-12);
    let balance_p = 2.0 * stats::normal_sf(z.abs());
    if balance_p < ALPHA {
        return Err(format!(
            "not stationary: {} of {} tail samples fall in the first half of the run where {expected:.0} were expected (p = {balance_p:.2e}); the latency drifts, so no single distribution describes it",
            first.len(),
            exc.len()
        ));
    }
    let ks = if first.len() >= 10 && second.len() >= 10 {
        let (n1, n2) = (first.len() as f64, second.len() as f64);
        let d = stats::ks_statistic(&mut first.clone(), &mut second.clone());
        let p = stats::ks_pvalue(d, n1, n2);
        if p < ALPHA {
            return Err(format!("not stationary: the tail of the first half differs from the second (KS D = {d:.3}, p = {p:.2e})"));
        }
        Some((d, p))
    } else {
        None
    };
    Ok(Halves { first: first.len(), expected, balance_p, ks })
}

/// Guardrail 2, independence: Ljung–Box on the excesses in time order;
/// its Q, lags and p.
fn independence(y: &[f64]) -> Result<(f64, usize, f64), String> {
    let lags = (y.len() / 5).min(10);
    let (lb_q, lb_p) = ljung_box(y, lags);
    if lb_p < ALPHA {
        return Err(format!(
            "the tail samples are not independent (Ljung–Box Q = {lb_q:.1} over {lags} lags, p = {lb_p:.2e} < {ALPHA}): peaks come in bursts, so the i.i.d. assumption of the fit does not hold"
        ));
    }
    Ok((lb_q, lags, lb_p))
}

/// The GPD fit of the excesses `y`, refused when it fails, when the tail is
/// heavy, or when the furthest return level is over [`MAX_EXTRAPOLATION`]
/// × the observed `max`.
fn checked_fit(y: &[f64], u: f64, zeta: f64, max: Nanos, here: bool) -> Result<GpdFit, String> {
    let Some(fit) = fit_gpd(y) else {
        return Err("the generalized Pareto fit did not converge (degenerate tail)".into());
    };
    if fit.xi >= HEAVY_XI {
        return Err(format!(
            "heavy tail: the fitted shape ξ = {:.2} is at least {HEAVY_XI} (infinite variance), so no bounded worst case can be \
             estimated; measure longer, on an isolated CPU{}, and look at what causes the spikes{}",
            fit.xi,
            if here { " (rtscope doctor)" } else { "" },
            if here { " (--trace-threshold)" } else { " on the target" }
        ));
    }
    let furthest = return_level(u, &fit, zeta, PROBABILITIES[PROBABILITIES.len() - 1]);
    if furthest > MAX_EXTRAPOLATION * max.0 as f64 {
        return Err(format!(
            "unreliable extrapolation: at p = {:e} the fit gives {}, more than {MAX_EXTRAPOLATION}× the observed max \
             {} (ξ = {:.2}); measure longer so the tail reaches further",
            PROBABILITIES[PROBABILITIES.len() - 1],
            crate::units::fmt_time(furthest),
            crate::units::fmt_time(max.0 as f64),
            fit.xi
        ));
    }
    Ok(fit)
}

/// The return levels at [`PROBABILITIES`] with their parametric bootstrap
/// intervals: [`BOOTSTRAP`] samples of `m` excesses drawn from `fit`, each
/// refitted; seeded from the sample count `n` and the threshold `u`.
fn bootstrap_levels(fit: &GpdFit, m: usize, u: u64, zeta: f64, n: u64) -> Result<Vec<ReturnLevel>, String> {
    let uf = u as f64;
    let mut rng = SplitMix64(SEED ^ n ^ (u << 1));
    let mut boot: Vec<Vec<f64>> = vec![Vec::with_capacity(BOOTSTRAP); PROBABILITIES.len()];
    let mut ys = vec![0.0; m];
    for _ in 0..BOOTSTRAP {
        for v in ys.iter_mut() {
            *v = gpd_draw(fit.xi, fit.sigma, rng.uniform());
        }
        if let Some(bf) = fit_gpd_grid(&ys, 8, 16) {
            for (i, p) in PROBABILITIES.iter().enumerate() {
                boot[i].push(return_level(uf, &bf, zeta, *p));
            }
        }
    }
    if boot[0].len() < BOOTSTRAP / 2 {
        return Err("the bootstrap refits failed; no confidence interval can be given".into());
    }
    Ok(PROBABILITIES
        .iter()
        .zip(boot.iter_mut())
        .map(|(p, b)| {
            b.sort_by(f64::total_cmp);
            let at = |q: f64| b[((q * b.len() as f64).ceil() as usize).clamp(1, b.len()) - 1];
            ReturnLevel { p: *p, estimate_ns: return_level(uf, fit, zeta, *p), ci_low_ns: at(0.025), ci_high_ns: at(0.975) }
        })
        .collect())
}

/// The time (ns since the probe started) that splits the samples in half,
/// at a per-second slot boundary, and the fraction of samples before it.
fn half_split(r: &ProbeResult) -> Option<(u64, f64)> {
    let ps = &r.per_second;
    let total: u64 = ps.iter().map(|s| s.count).sum();
    if ps.len() < 2 || total == 0 {
        return None;
    }
    let mut cum = 0u64;
    for s in &ps[..ps.len() - 1] {
        cum += s.count;
        if cum * 2 >= total {
            let end = (s.t_s + r.per_second_width_s) * 1_000_000_000;
            return Some((end, cum as f64 / total as f64));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpd_sample(xi: f64, sigma: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64(seed);
        (0..n).map(|_| gpd_draw(xi, sigma, r.uniform())).collect()
    }

    #[test]
    fn heavy_tail_advice_names_doctor_only_for_this_host() {
        // rtscope doctor audits the local host; a target's run gets no such advice (issue 48).
        let y = gpd_sample(0.9, 1000.0, 2000, 7);
        let max = Nanos(y.iter().fold(0.0_f64, |a, b| a.max(*b)) as u64 + 1);
        let here = checked_fit(&y, 0.0, 0.1, max, true).unwrap_err();
        let there = checked_fit(&y, 0.0, 0.1, max, false).unwrap_err();
        assert!(here.starts_with("heavy tail") && here.contains("(rtscope doctor)"), "{here}");
        assert!(there.starts_with("heavy tail") && !there.contains("doctor") && there.contains("on the target"), "{there}");
    }

    #[test]
    fn fit_recovers_known_parameters() {
        for (xi, sigma) in [(0.2, 1000.0), (0.0, 500.0), (-0.2, 3000.0), (0.5, 50.0)] {
            let y = gpd_sample(xi, sigma, 5000, 7);
            let f = fit_gpd(&y).unwrap();
            assert!((f.xi - xi).abs() < 0.06, "ξ {xi}: got {}", f.xi);
            assert!((f.sigma / sigma - 1.0).abs() < 0.08, "σ {sigma}: got {}", f.sigma);
        }
    }

    #[test]
    fn fit_is_the_maximum_of_the_likelihood() {
        // Direct log-likelihood at the fit beats nearby parameter values.
        let y = gpd_sample(0.3, 200.0, 2000, 3);
        let f = fit_gpd(&y).unwrap();
        let ll = |xi: f64, s: f64| -> f64 { y.iter().map(|&v| -s.ln() - (1.0 / xi + 1.0) * (1.0 + xi * v / s).ln()).sum() };
        let best = ll(f.xi, f.sigma);
        assert!((best - f.log_likelihood).abs() < 1e-6 * best.abs());
        for (dx, ds) in [(0.02, 0.0), (-0.02, 0.0), (0.0, 5.0), (0.0, -5.0)] {
            assert!(ll(f.xi + dx, f.sigma + ds) < best);
        }
    }

    #[test]
    fn return_level_inverts_the_survival() {
        let fit = GpdFit { xi: 0.25, sigma: 1000.0, n: 0, log_likelihood: 0.0 };
        let x = return_level(10_000.0, &fit, 0.01, 1e-6);
        // P(X > x) = ζ·S(x − u) must equal p.
        assert!((0.01 * fit.survival(x - 10_000.0) / 1e-6 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn ljung_box_separates_white_noise_from_ar1() {
        let mut r = SplitMix64(11);
        let white: Vec<f64> = (0..1000).map(|_| r.uniform()).collect();
        assert!(ljung_box(&white, 10).1 > 0.01);
        let mut ar = vec![0.0; 1000];
        for i in 1..1000 {
            ar[i] = 0.6 * ar[i - 1] + r.uniform() - 0.5;
        }
        assert!(ljung_box(&ar, 10).1 < 1e-6);
    }
}
