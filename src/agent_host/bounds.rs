//! What a plan and the agent's announcement allow a result block to state
//! (docs/agent.md, "What the host trusts"): checked at the block's `result`
//! line, before any of its lines is kept, and on each of its lines as it
//! arrives. The block's own consistency (counts that add up, a tail largest
//! first) is [`super::block`]'s and [`Distribution::check`]'s; here are the
//! facts a block cannot check against itself:
//!
//! - the interval it echoes is the plan's, as its probe is paced
//!   ([`Paced`]; a multi-period probe: its variant's period);
//! - its CPU is one the plan measures on, its tail samples' CPUs ones the
//!   target announced;
//! - its periods (samples + overruns) fit the plan's duration at that
//!   interval, its tail samples and per-second slots lie within the run,
//!   each tail sample is its own (one per sequence number);
//! - no samples, no extremes; a Σx² the sum and the extremes can make
//!   (saturated is refused: σ would be made up);
//! - its buckets are the recorder's (docs/agent.md, "result block").
//!
//! [`Distribution::check`]: crate::measure::distribution::Distribution::check

use crate::measure::recorder::HIGHEST_NS;
use crate::measure::Paced;
use crate::model::TailSample;

use super::block::Block;
use super::reader::MAX_TARGET_CPUS;

/// What the plan allows one result block to announce, checked at its
/// `result` line before any of its lines is kept: the host's memory for a
/// block is then bounded by the plan, whatever the agent sends.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The `tail` the plan asked (`tail_k` at most this).
    pub(crate) tail: u64,
    /// The plan's `worst`.
    pub(crate) worst: u64,
    /// The plan's duration: per-second slots at most duration / width + 2.
    pub(crate) duration_ns: u64,
    /// The plan's `-i`.
    pub(crate) interval_ns: u64,
    /// A multi-period probe's periods (its variants), else empty.
    pub(crate) periods_ns: Vec<u64>,
    /// What paces the probe's events.
    pub(crate) paced: Paced,
    /// The CPUs the plan measures on (a block's `cpu` is one of them, or `-`).
    pub(crate) cpus: Vec<usize>,
    /// The CPUs the target announced (`hello cpus`; 0: it did not say).
    pub(crate) announced_cpus: usize,
}

/// What a block's lines must lie within, fixed at its `result` line.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Span {
    /// The latest a sample can be taken, in ns since its variant started.
    end_ns: u64,
    /// The periods the block counts (samples + overruns): sequence numbers lie below.
    periods: u64,
    /// CPU numbers lie below this.
    cpus: u64,
}

impl Limits {
    /// The per-second slots a block of `width_s`-second slots may hold.
    pub(crate) fn seconds(&self, width_s: u64) -> u64 {
        (self.duration_ns / 1_000_000_000) / width_s.max(1) + 2
    }

    /// The limits of plan-wide `setup n=-` lines: a block of nothing.
    pub(crate) fn plan_wide() -> Limits {
        Limits { tail: 0, worst: 0, duration_ns: 0, interval_ns: 0, periods_ns: Vec::new(), paced: Paced::Unpaced, cpus: Vec::new(), announced_cpus: 0 }
    }

    /// A timer's plan of `duration_ns` at `interval_ns` on CPUs 0..64 (tests).
    #[cfg(test)]
    pub(crate) fn timer(tail: u64, worst: u64, duration_ns: u64, interval_ns: u64) -> Limits {
        Limits { tail, worst, duration_ns, interval_ns, periods_ns: Vec::new(), paced: Paced::Interval, cpus: (0..64).collect(), announced_cpus: 0 }
    }

    /// The most periods (samples + overruns) a block paced at `interval_ns`
    /// can count in the plan's duration. A variant measures for its share
    /// of the duration, one event per interval at most (a timer's are
    /// exactly share / interval: docs/agent.md, `overruns`); the margin of
    /// 2 takes a loop that starts with an event rather than a pause and the
    /// rounding of the share. An unpaced probe's events follow one another:
    /// at most one per nanosecond (a sample spans two clock reads).
    fn periods(&self, interval_ns: u64) -> u64 {
        match interval_ns {
            0 => self.duration_ns.saturating_add(2),
            iv => (self.duration_ns / iv).saturating_add(2),
        }
    }

    /// The `interval_ns` a block of `variant` echoes is the plan's.
    fn interval(&self, variant: Option<&str>, suffix: Option<&str>, iv: u64) -> Result<(), String> {
        let (ok, want) = if !self.periods_ns.is_empty() {
            // A multi-period probe: its variant's period (named as natively, `10ms`).
            let base = variant.map(|v| suffix.and_then(|s| v.strip_suffix(s)).unwrap_or(v));
            let named = self.periods_ns.iter().find(|p| base == Some(crate::units::fmt_ns(**p).as_str()));
            let list = self.periods_ns.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            match named {
                Some(p) => (iv == *p, format!("{p}, the period of its variant")),
                None => (self.periods_ns.contains(&iv), format!("one of the plan's periods_ns={list}")),
            }
        } else {
            match self.paced {
                Paced::Interval => (iv == self.interval_ns, format!("the plan's interval_ns={} (-i), echoed exactly", self.interval_ns)),
                Paced::AtLeastInterval => (iv >= self.interval_ns, format!("at least the plan's interval_ns={} (the probe's pace)", self.interval_ns)),
                Paced::Unpaced => (iv == 0, "0 (the probe has no pause between events)".to_string()),
            }
        };
        if ok {
            Ok(())
        } else {
            Err(format!("interval_ns={iv}: expected {want}"))
        }
    }
}

/// The header of a block (`result` line) against the plan: its interval,
/// its CPU, its periods, its extremes and its sums. `Ok` is what its
/// later lines must lie within.
pub(crate) fn header(lim: &Limits, h: &Header) -> Result<Span, String> {
    let at = format!("result n={}", h.n);
    lim.interval(h.variant, h.suffix, h.interval_ns).map_err(|e| format!("{at}: {e}"))?;
    if let Some(c) = h.cpu.filter(|c| !lim.cpus.contains(c)) {
        let plan = crate::units::cpu_list_str(&lim.cpus);
        let announced = if lim.announced_cpus > 0 { format!(" (the target announced cpus={})", lim.announced_cpus) } else { String::new() };
        return Err(format!("{at}: cpu={c} where the plan measures on CPUs {plan}{announced}; a thread's CPU is one of the plan's, or - if it was not pinned"));
    }
    let most = lim.periods(h.interval_ns);
    let periods = h.samples.checked_add(h.overruns).filter(|p| *p <= most);
    let Some(periods) = periods else {
        return Err(format!(
            "{at}: samples={} + overruns={} periods where a plan of {} at interval_ns={} allows at most {most} (one per interval, +2)",
            h.samples,
            h.overruns,
            crate::units::fmt_ns(lim.duration_ns),
            h.interval_ns
        ));
    };
    if h.samples == 0 && (h.min_ns, h.max_ns) != (0, 0) {
        return Err(format!("{at}: samples=0 with min_ns={} max_ns={}: no samples have no extremes (0 and 0)", h.min_ns, h.max_ns));
    }
    sums(h.samples, h.sum, h.sumsq, h.min_ns, h.max_ns).map_err(|e| format!("{at}: {e}"))?;
    let end_ns = lim.duration_ns.saturating_add(h.interval_ns).saturating_add(h.max_ns).saturating_add(stalled_ns(h.interval_ns));
    let cpus = if lim.announced_cpus > 0 { lim.announced_cpus as u64 } else { MAX_TARGET_CPUS };
    Ok(Span { end_ns, periods, cpus })
}

/// How long after the end of its share a sample can still be taken,
/// besides its own latency and one interval (a timer's last period is due
/// by the end: its sample is at most max_ns late). A pair probe's or
/// `switch`'s thread may be held off after its last check of the end by a
/// preemption its sample does not measure (the other thread's); the
/// agent's stall watch bounds that: no count for max(5 s, 50 intervals),
/// then 1 s before it gives up and sends what was measured (docs/agent.md,
/// "Stall").
fn stalled_ns(interval_ns: u64) -> u64 {
    const STALL_NS: u64 = 5_000_000_000;
    const GIVE_UP_NS: u64 = 1_000_000_000;
    STALL_NS.max(interval_ns.saturating_mul(50)).saturating_add(GIVE_UP_NS)
}

/// A number that must fit the history's 64-bit integers.
pub(crate) fn small(v: Option<u128>) -> Result<u64, String> {
    let v = v.unwrap_or(0);
    u64::try_from(v).ok().filter(|x| *x <= crate::model::MAX_STORED).ok_or_else(|| format!("{v} is beyond the largest value a result holds"))
}

/// The recorder's buckets of `values` as a `hist` line's `b=` (tests).
#[cfg(test)]
pub(crate) fn buckets(values: &[u64]) -> String {
    let mut b: std::collections::BTreeMap<(u64, u64), u64> = std::collections::BTreeMap::new();
    for v in values {
        *b.entry(bucket_of(*v)).or_default() += 1;
    }
    b.iter().map(|((lo, hi), c)| format!("{lo}:{hi}:{c}")).collect::<Vec<_>>().join(",")
}

/// What [`header`] reads of a `result` line.
pub(crate) struct Header<'a> {
    pub(crate) n: u64,
    pub(crate) variant: Option<&'a str>,
    /// The probe's second series' suffix (`/period-error`), if it has one.
    pub(crate) suffix: Option<&'a str>,
    pub(crate) cpu: Option<usize>,
    pub(crate) interval_ns: u64,
    pub(crate) samples: u64,
    pub(crate) overruns: u64,
    pub(crate) min_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) sum: u128,
    pub(crate) sumsq: u128,
}

impl Header<'_> {
    /// What block `b`'s `result` line stated.
    pub(crate) fn of(b: &Block) -> Header<'_> {
        Header {
            n: b.n,
            variant: b.s.variant.as_deref(),
            suffix: crate::measure::info(&b.s.probe).and_then(|i| i.series_suffix),
            cpu: b.s.cpu,
            interval_ns: b.s.interval_ns,
            samples: b.s.samples,
            overruns: b.s.overruns,
            min_ns: b.s.min_ns,
            max_ns: b.s.max_ns,
            sum: b.sum,
            sumsq: b.sumsq,
        }
    }
}

/// Σx and Σx² that `n` samples in [min, max] can make, exactly. The
/// extremes are samples themselves: taken out, the other n − 2 (or none)
/// lie in [min, max], so their sum `s` and sum of squares `q` hold
/// `k·min ≤ s ≤ k·max`, `min·s ≤ q ≤ (min + max)·s − k·min·max` (each x²
/// lies between min·x and (min + max)·x − min·max) and `s² ≤ k·q` (a
/// variance is not negative); one other sample (k = 1) is s, so q = s². A Σx² at 2^128−1 is
/// saturated: σ cannot be made from it, so it is refused (no run within a
/// plan's bounds saturates it: that takes 2^55 samples of 100 s each).
fn sums(n: u64, sum: u128, sumsq: u128, min: u64, max: u64) -> Result<(), String> {
    if n == 0 {
        return if sum == 0 && sumsq == 0 { Ok(()) } else { Err(format!("sum={sum} sumsq={sumsq} with samples=0 (both are 0)")) };
    }
    if sumsq == u128::MAX {
        return Err(format!("sumsq={sumsq} is saturated (2^128−1): σ cannot be computed from it; {n} samples of at most {max} ns never reach it"));
    }
    let (lo, hi) = (u128::from(min), u128::from(max));
    let (k, s, q) = if n == 1 {
        (0, sum.checked_sub(lo).filter(|_| min == max), sumsq.checked_sub(lo * lo))
    } else {
        (u128::from(n - 2), sum.checked_sub(lo).and_then(|s| s.checked_sub(hi)), sumsq.checked_sub(lo * lo).and_then(|q| q.checked_sub(hi * hi)))
    };
    let rest = |s: u128, q: u128| {
        let spread = match (s.checked_mul(s), k.checked_mul(q)) {
            (Some(s2), Some(kq)) => s2 <= kq,
            (None, Some(_)) => false,
            (_, None) => true,
        };
        // Each x in [min, max] has x² ≤ (min + max)·x − min·max.
        let most = match ((lo + hi).checked_mul(s), k.checked_mul(lo).and_then(|a| a.checked_mul(hi))) {
            (Some(a), Some(b)) => q <= a.saturating_sub(b),
            _ => true,
        };
        // One other sample is s itself.
        let one = k != 1 || q == s * s;
        k.checked_mul(lo).is_some_and(|a| s >= a)
            && k.checked_mul(hi).is_none_or(|b| s <= b)
            && lo.checked_mul(s).is_some_and(|a| q >= a)
            && most
            && spread
            && one
    };
    match (s, q) {
        (Some(s), Some(q)) if rest(s, q) => Ok(()),
        _ => Err(format!(
            "sum={sum} sumsq={sumsq} of {n} samples in {min}..{max} ns: not sums such samples make (min and max among them, the others in [min, max])"
        )),
    }
}

/// A histogram bucket `lo:hi` of a block whose largest sample is `max`:
/// one of the recorder's (lowest 1, highest 2^47 ns, 3 significant
/// digits): below 2048 ns a value's own, above it 2^(⌊log₂ lo⌋−10) wide
/// and aligned; the bucket of 2^47 reaches up to `max` (values above it
/// count there).
pub(crate) fn bucket(lo: u64, hi: u64, max: u64) -> Result<(), String> {
    let (want_lo, want_hi) = bucket_of(lo);
    let top = lo == HIGHEST_NS && hi == want_hi.max(max);
    if want_lo == lo && (hi == want_hi || top) && lo <= HIGHEST_NS {
        return Ok(());
    }
    Err(format!("bucket {lo}:{hi} is not one of the recorder's (the bucket of {lo} ns is {want_lo}:{want_hi}; docs/agent.md, \"result block\")"))
}

/// The recorder's bucket holding `v` (below 2^47): (lo, hi).
pub(crate) fn bucket_of(v: u64) -> (u64, u64) {
    if v < 2048 {
        return (v, v);
    }
    let w = 1u64 << (63 - v.leading_zeros() - 10);
    let lo = v - v % w;
    (lo, lo + w - 1)
}

/// One tail sample of a block against its span: taken within the run, a
/// sequence number below its periods, a CPU the target has.
pub(crate) fn tail_sample(s: &TailSample, span: &Span) -> Result<(), String> {
    let TailSample(lat, at, seq, _, cpu) = *s;
    if at.0 > span.end_ns {
        return Err(format!(
            "tail sample {}:{}:{seq}: taken at {} ns, after the run's end ({} ns: the plan's duration, an interval, max_ns and the stall watch's 6 s)",
            lat.0, at.0, at.0, span.end_ns
        ));
    }
    if seq >= span.periods {
        return Err(format!("tail sample {}:{}:{seq}: sequence number {seq} of a block of {} periods (samples + overruns)", lat.0, at.0, span.periods));
    }
    if cpu as u64 >= span.cpus {
        return Err(format!("tail sample {}:{}:{seq}: CPU {cpu} of a target with {} CPUs", lat.0, at.0, span.cpus));
    }
    Ok(())
}

/// One per-second slot starting at `t` s of `width_s`-second slots.
pub(crate) fn slot(t: u64, width_s: u64, span: &Span) -> Result<(), String> {
    if !t.is_multiple_of(width_s.max(1)) {
        return Err(format!("per-second slot {t} s is not a multiple of width_s={width_s}"));
    }
    if u128::from(t) * 1_000_000_000 > u128::from(span.end_ns) {
        return Err(format!(
            "per-second slot {t} s starts after the run's end ({} ns: the plan's duration, an interval, max_ns and the stall watch's 6 s)",
            span.end_ns
        ));
    }
    Ok(())
}

/// The tail holds each sample once: one per sequence number.
pub(crate) fn distinct(tail: &[TailSample]) -> Result<(), String> {
    let mut seqs: Vec<u64> = tail.iter().map(|t| t.2).collect();
    seqs.sort_unstable();
    match seqs.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(format!("two tail samples with sequence number {} (a sample enters the tail once)", w[0])),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_the_recorders() {
        use crate::measure::recorder::Recorder;
        let mut r = Recorder::new(0, 1_000_000_000, 8);
        let values = [1u64, 2047, 2048, 2049, 4095, 4096, 1_000_003, 123_456_789, HIGHEST_NS - 1, HIGHEST_NS, HIGHEST_NS + 12_345];
        for (i, v) in values.iter().enumerate() {
            r.record(*v, i as u64, i as u64);
        }
        let max = *values.iter().max().unwrap();
        for b in r.buckets() {
            assert_eq!(bucket(b.lo_ns.0, b.hi_ns.0, max), Ok(()), "{b:?}");
            if b.lo_ns.0 < HIGHEST_NS {
                assert_eq!(bucket_of(b.lo_ns.0), (b.lo_ns.0, b.hi_ns.0));
                assert_eq!(bucket_of(b.hi_ns.0), (b.lo_ns.0, b.hi_ns.0));
            }
        }
        assert!(bucket(1, 1 << 47, max).unwrap_err().contains("the bucket of 1 ns is 1:1"));
        assert!(bucket(2048, 2048, max).is_err());
        assert!(bucket(2049, 2050, max).is_err(), "not aligned");
        assert!(bucket(HIGHEST_NS * 2, HIGHEST_NS * 2 + 1, u64::MAX).is_err(), "above the top bucket");
    }

    #[test]
    fn sums_of_squares_the_samples_can_make() {
        // 10, 20, 30: Σx 60, Σx² 1400; with 10 and 30 the third is 20.
        assert_eq!(sums(3, 60, 1400, 10, 30), Ok(()));
        assert!(sums(3, 60, u128::MAX, 10, 30).unwrap_err().contains("saturated"));
        assert!(sums(3, 60, 1399, 10, 30).is_err());
        assert!(sums(3, 60, 1401, 10, 30).is_err());
        assert!(sums(3, 30, 1000, 10, 30).is_err(), "the extremes alone sum to 40");
        // 10, 20, 20, 30 and 10, 15, 25, 30 (Σx 80): Σx² 1400..1450 as the middle two spread.
        assert_eq!(sums(4, 80, 1800, 10, 30), Ok(()));
        assert_eq!(sums(4, 80, 1850, 10, 30), Ok(()));
        assert!(sums(4, 80, 1799, 10, 30).is_err(), "the middle two below their mean square");
        assert!(sums(4, 80, 2001, 10, 30).is_err());
        assert!(sums(0, 0, 1, 0, 0).is_err());
        // One sample: Σx = min = max, Σx² = x², exactly.
        assert_eq!(sums(1, 7, 49, 7, 7), Ok(()));
        assert!(sums(1, 7, 50, 7, 7).is_err());
        assert!(sums(1, 7, 49, 7, 8).is_err());
        // Large honest sums: 2^40 samples of 2^40 ns.
        let (n, x) = (1u64 << 40, 1u64 << 40);
        assert_eq!(sums(n, u128::from(n) * u128::from(x), u128::from(n) * u128::from(x) * u128::from(x), x, x), Ok(()));
    }

    fn lim() -> Limits {
        Limits {
            tail: 8,
            worst: 2,
            duration_ns: 1_000_000_000,
            interval_ns: 1_000_000,
            periods_ns: Vec::new(),
            paced: Paced::Interval,
            cpus: vec![0, 1],
            announced_cpus: 2,
        }
    }

    fn head(samples: u64, overruns: u64) -> Header<'static> {
        Header {
            n: 0,
            variant: None,
            suffix: None,
            cpu: Some(0),
            interval_ns: 1_000_000,
            samples,
            overruns,
            min_ns: 5,
            max_ns: 5,
            sum: 5 * u128::from(samples),
            sumsq: 25 * u128::from(samples),
        }
    }

    #[test]
    fn periods_fit_the_plan() {
        assert!(header(&lim(), &head(1000, 0)).is_ok());
        assert!(header(&lim(), &head(990, 12)).is_ok(), "the margin");
        assert!(header(&lim(), &head(1000, 3)).unwrap_err().contains("at most 1002"));
        assert!(header(&lim(), &head(1, u64::MAX)).is_err(), "an overflowing sum");
        let mut l = lim();
        l.paced = Paced::Unpaced;
        let h = Header { interval_ns: 0, ..head(2_000_000, 0) };
        assert!(header(&l, &h).is_ok(), "unpaced: one per ns at most");
    }

    #[test]
    fn the_interval_is_echoed() {
        for iv in [0, 5, 999_999, 1_000_001] {
            let e = header(&lim(), &Header { interval_ns: iv, ..head(1, 0) }).unwrap_err();
            assert!(e.contains(&format!("interval_ns={iv}: expected the plan's interval_ns=1000000 (-i), echoed exactly")), "{e}");
        }
        let mut l = lim();
        l.periods_ns = vec![10_000_000, 30_000_000];
        let of = |v: &'static str, iv: u64| Header { variant: Some(v), suffix: Some("/period-error"), interval_ns: iv, ..head(1, 0) };
        assert!(header(&l, &of("10ms", 10_000_000)).is_ok());
        assert!(header(&l, &of("30ms/period-error", 30_000_000)).is_ok());
        assert!(header(&l, &of("30ms", 10_000_000)).unwrap_err().contains("30000000, the period of its variant"));
        l.periods_ns.clear();
        l.paced = Paced::AtLeastInterval;
        assert!(header(&l, &Header { interval_ns: 2_200_000, ..head(1, 0) }).is_ok());
        assert!(header(&l, &Header { interval_ns: 1_000, ..head(1, 0) }).is_err());
    }
}
