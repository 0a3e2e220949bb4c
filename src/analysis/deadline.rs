//! Deadline misses (`--deadline 100us`): how many periods missed the
//! deadline, their ratio, and what that means per hour at the measured rate.
//!
//! A miss is a period whose work did not start by the deadline: either a
//! *late sample* (latency strictly greater than the deadline; a latency
//! equal to it met it) or a *missed period* (an overrun: the wake-up came a
//! whole period late or later, so that period got no sample at all). The
//! ratio is misses per period, periods = samples + missed periods. Both
//! parts are kept apart (`late_samples`, `missed_periods`) so a report can
//! show them.
//!
//! Late samples are counted exactly whenever they can be: the result's tail
//! holds the largest samples exactly, so if every sample over the deadline
//! is in the tail (the tail reaches down to the deadline, or holds every
//! sample) the count comes from it. Otherwise it comes from the histogram,
//! which is exact unless the deadline falls inside a bucket (above 2048 ns
//! buckets are 0.1 % wide; an import's overflow bucket can be much wider);
//! then the count is a range `[late_samples, late_samples_upper]`.
//!
//! Missed periods a source cannot count (cyclictest, rtla: see
//! `ProbeResult::overruns_known`) are unknown: `missed_periods` is `None`,
//! the misses and the ratio are then lower bounds (`complete` false) and a
//! verdict must not pass on them.
//!
//! Per hour: with p = misses / periods and r periods per second (the
//! measured sample rate from the per-second slots, scaled by periods /
//! samples), the expected misses in an hour are p·r·3600 and the
//! probability of at least one is 1 − (1 − p)^(r·3600). With no miss
//! observed, p is reported as its 95 % upper bound 3/n ("rule of three",
//! Hanley & Lippman-Hand 1983, JAMA 249:1743) instead of 0.
//!
//! What a run with no miss supports ([`DeadlineMisses::supports`]): a miss
//! probability per period below ≈ 3/N at 95 % — and, since a short run's
//! per-hour bound is a true but useless "≤ 1", how long a run without a
//! miss must be to support fewer than one miss per hour on average
//! (p < 1/(r·3600), so N ≥ 3·r·3600 periods: three hours at any rate).

use serde::Serialize;

use crate::model::{Nanos, ProbeResult};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct DeadlineMisses {
    pub(crate) deadline_ns: Nanos,
    pub(crate) samples: u64,
    /// Samples + missed periods (a lower bound when those are unknown).
    pub(crate) periods: u64,
    /// Samples over the deadline (a lower bound when `exact` is false).
    pub(crate) late_samples: u64,
    /// Upper bound of `late_samples`; equal to it when `exact`.
    pub(crate) late_samples_upper: u64,
    /// Missed periods (overruns); `None` when the source cannot count them.
    pub(crate) missed_periods: Option<u64>,
    /// Misses: late samples + missed periods (lower bounds when `exact` or
    /// `complete` is false).
    pub(crate) misses: u64,
    /// Upper bound of the count when only the late samples are uncertain;
    /// equals `misses` when `exact`. Meaningless when not `complete`.
    pub(crate) misses_upper: u64,
    /// The late-sample count is exact (no bucket straddles the deadline).
    pub(crate) exact: bool,
    /// Missed periods are known: false means every count and ratio here is
    /// a lower bound with no upper bound.
    pub(crate) complete: bool,
    /// misses / periods (a lower bound unless `exact` and `complete`).
    pub(crate) ratio: f64,
    /// Measured periods per second (0 when unknown).
    pub(crate) rate_hz: f64,
    /// Expected misses per hour at the measured rate.
    pub(crate) per_hour_expected: f64,
    /// Probability of at least one miss in an hour; when no miss was
    /// observed, its 95 % upper bound (see `zero_observed`).
    pub(crate) per_hour_probability: f64,
    /// No miss observed: `per_hour_probability` is an upper bound.
    pub(crate) zero_observed: bool,
}

impl DeadlineMisses {
    /// The largest ratio the counts allow: `None` when missed periods are
    /// unknown (nothing bounds the ratio from above).
    pub(crate) fn ratio_upper(&self) -> Option<f64> {
        self.complete.then(|| crate::stats::miss_ratio(self.misses_upper, self.periods))
    }

    /// The miss count as shown: `12`, `10–14` (a bucket across the
    /// deadline), `≥ 12` (missed periods unknown).
    pub(crate) fn misses_shown(&self) -> String {
        if !self.complete {
            format!("≥ {}", self.misses)
        } else if self.exact {
            self.misses.to_string()
        } else {
            format!("{}–{}", self.misses, self.misses_upper)
        }
    }

    /// The misses cell of a table: as [`Self::misses_shown`], split as
    /// `late+missed` when periods were missed (`499+2498`), or
    /// `≥ 12 (+? missed)` when missed periods are unknown.
    pub(crate) fn misses_cell(&self) -> String {
        match self.missed_periods {
            None => format!("≥ {} (+? missed)", self.late_samples),
            Some(0) => self.misses_shown(),
            Some(m) => format!("{}+{m}", self.late_shown()),
        }
    }

    /// The late samples as shown: `12` or `10–14`.
    pub(crate) fn late_shown(&self) -> String {
        if self.exact {
            self.late_samples.to_string()
        } else {
            format!("{}–{}", self.late_samples, self.late_samples_upper)
        }
    }

    /// The missed periods as shown: a count or "unknown".
    pub(crate) fn missed_shown(&self) -> String {
        self.missed_periods.map(|m| m.to_string()).unwrap_or_else(|| "unknown".into())
    }

    /// The ratio as shown (see [`crate::stats::fmt_ratio_value`]), with `≥`
    /// when it is only a lower bound.
    pub(crate) fn ratio_shown(&self) -> String {
        let v = crate::stats::fmt_ratio_value(self.ratio);
        match self.ratio_upper() {
            None => format!("≥ {v}"),
            Some(u) if u > self.ratio => format!("{v}–{}", crate::stats::fmt_ratio_value(u)),
            Some(_) => v,
        }
    }

    /// With no miss in N periods (and missed periods counted): what the run
    /// supports and the run a claim per hour needs, e.g. "0 misses in 60000
    /// periods: the miss probability per period is below ≈ 3/N = 5.0e-5 (95
    /// %); fewer than one miss per hour on average needs ≥ 10800000 periods
    /// without a miss (3.0 h at 1000 periods/s)". `None` otherwise.
    pub(crate) fn supports(&self) -> Option<String> {
        if !self.zero_observed || !self.complete || self.periods == 0 {
            return None;
        }
        let n = self.periods;
        let mut s =
            format!("0 misses in {n} periods: the miss probability per period is below ≈ 3/N = {} (95 %)", crate::stats::fmt_ratio_value(3.0 / n as f64));
        if self.rate_hz > 0.0 {
            let need = (3.0 * self.rate_hz * 3600.0).ceil() as u64;
            if need > n {
                s.push_str(&format!(
                    "; fewer than one miss per hour on average needs ≥ {need} periods without a miss (3.0 h at {:.0} periods/s)",
                    self.rate_hz
                ));
            } else {
                s.push_str("; this is fewer than one miss per hour on average at the measured rate");
            }
        }
        Some(s)
    }

    /// One sentence: `3 of 200000 periods missed the 200 µs deadline (2 late
    /// samples, 1 missed period)`, in the caller's deadline wording.
    pub(crate) fn sentence(&self, deadline: &str) -> String {
        format!(
            "{} of {}{} periods missed the {deadline} deadline ({} late sample(s), {} missed period(s))",
            self.misses_shown(),
            if self.complete { "" } else { "≥ " },
            self.periods,
            self.late_shown(),
            self.missed_shown()
        )
    }
}

/// Samples per second: counts of the complete per-second slots over their
/// time (the last slot is usually partial and is left out); falls back to
/// the nominal rate 1/interval, or 0 when neither is known.
pub(crate) fn measured_rate_hz(r: &ProbeResult) -> f64 {
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

/// Samples over `deadline`: `(lower, upper)` bounds of the count.
fn late_samples(r: &ProbeResult, d: u64) -> (u64, u64) {
    let tail = &r.tail.samples;
    let tail_covers = !tail.is_empty() && ((tail.len() as u64) >= r.samples || tail.last().is_some_and(|s| s.latency().0 <= d));
    if tail_covers {
        let n = tail.iter().filter(|s| s.latency().0 > d).count() as u64;
        return (n, n);
    }
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
    // A straddling bucket that reaches the max holds it: the max is one
    // sample over the deadline for sure.
    if straddle > 0 && r.max_ns.0 > d && r.histogram.last().is_some_and(|b| b.lo_ns.0 <= d) {
        return (lo + 1, lo + straddle);
    }
    (lo, lo + straddle)
}

/// The deadline misses of one result entry.
pub(crate) fn misses(r: &ProbeResult, deadline: Nanos) -> DeadlineMisses {
    let (late_lo, late_hi) = late_samples(r, deadline.0);
    let missed = r.known_overruns();
    let over = missed.unwrap_or(0);
    let periods = r.periods();
    let (lo, hi) = (late_lo.saturating_add(over), late_hi.saturating_add(over));
    // Periods per second: the measured sample rate scaled to the periods.
    let sample_rate = measured_rate_hz(r);
    let rate = if r.samples > 0 { sample_rate * periods as f64 / r.samples as f64 } else { sample_rate };
    let zero = hi == 0;
    let p = if periods == 0 {
        0.0
    } else if zero {
        (3.0 / periods as f64).min(1.0)
    } else {
        crate::stats::miss_ratio(lo, periods)
    };
    let per_hour_n = rate * 3600.0;
    DeadlineMisses {
        deadline_ns: deadline,
        samples: r.samples,
        periods,
        late_samples: late_lo,
        late_samples_upper: late_hi,
        missed_periods: missed,
        misses: lo,
        misses_upper: hi,
        exact: late_lo == late_hi,
        complete: missed.is_some(),
        ratio: crate::stats::miss_ratio(lo, periods),
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
    fn missed_periods_are_misses_and_the_ratio_is_per_period() {
        // Issue 31: 47 766 samples, 499 over 200 µs, and 2 498 missed periods.
        let v: Vec<u64> = (0..47_766u64).map(|i| if i % 95 == 7 && i / 95 < 499 { 300_000 } else { 20_000 }).collect();
        let mut r = result(&v, 1_000_000);
        r.overruns = 2_498;
        let m = misses(&r, Nanos(200_000));
        assert_eq!((m.late_samples, m.missed_periods, m.misses, m.periods), (499, Some(2_498), 2_997, 50_264));
        assert!((m.ratio - 2_997.0 / 50_264.0).abs() < 1e-15, "{}", m.ratio);
        assert!(m.complete && m.exact);
        assert_eq!(m.misses_cell(), "499+2498");
        assert!(m.sentence("200.0 us").starts_with("2997 of 50264 periods missed the 200.0 us deadline (499 late sample(s), 2498 missed period(s))"));
        // Periods per second: the sample rate scaled by periods / samples.
        assert!((m.rate_hz - 1000.0 * 50_264.0 / 47_766.0).abs() < 1e-6, "{}", m.rate_hz);
        // A missed period alone is a miss: no late sample, 1 missed period.
        let mut r = result(&vec![20_000; 1000], 1_000_000);
        r.overruns = 1;
        let m = misses(&r, Nanos(200_000));
        assert_eq!((m.misses, m.zero_observed), (1, false));
        // Missed periods unknown (an import): lower bounds, no upper.
        r.overruns = 0;
        r.overruns_known = false;
        let m = misses(&r, Nanos(200_000));
        assert!(!m.complete && m.ratio_upper().is_none());
        assert_eq!((m.missed_shown(), m.misses_shown(), m.ratio_shown()), ("unknown".to_string(), "≥ 0".to_string(), "≥ 0".to_string()));
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
        // Issue 49 item 8: "≤ 1" is true and useless; say what the run
        // supports and how long a run the claim per hour needs.
        let s = m.supports().unwrap();
        assert!(s.starts_with("0 misses in 3000 periods: the miss probability per period is below ≈ 3/N = 0.001 (95 %)"), "{s}");
        assert!(s.ends_with("needs ≥ 10800000 periods without a miss (3.0 h at 1000 periods/s)"), "{s}");
        // A miss seen, or missed periods unknown: nothing to say.
        let mut r = result(&v, 1_000_000);
        r.overruns = 1;
        assert_eq!(misses(&r, Nanos(100_000)).supports(), None);
        r.overruns = 0;
        r.overruns_known = false;
        assert_eq!(misses(&r, Nanos(100_000)).supports(), None);
    }
}
