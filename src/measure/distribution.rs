//! One distribution type for every source of samples: what a native
//! [`Recorder`](super::recorder::Recorder) measured, what an agent's result
//! block states (src/agent_host/block.rs), merged the one way and made into a
//! result entry the one way.
//!
//! A [`Distribution`] holds the exact parts of a series of samples: count,
//! overruns, min, max, Σx and Σx² (u128), the histogram buckets, the tail (the
//! largest samples, largest first, at most `tail_k`) and the per-second slots.
//! [`Distribution::merge`] combines two with checked arithmetic: a count or
//! sum that would overflow (or pass what a result can hold) is an error
//! naming the source, never a wrap. [`Distribution::check`] states the
//! invariants every stored entry satisfies, in one place:
//!
//! - the histogram counts (and the per-second counts, when there are any)
//!   sum to `samples`, which fits the history's integers;
//! - min ≤ mean ≤ max (exactly: `min·n ≤ Σx ≤ max·n`) and, unless Σx² is
//!   absent or saturated, min² ≤ mean square ≤ max² ([`moments_hold`]); the
//!   buckets ascend without overlap and reach min and max;
//! - every per-second slot holds samples, its min ≤ max within [min, max],
//!   its Σx a mean within its own min and max;
//! - the tail is sorted largest first ([`rank`]), holds at most `tail_k`
//!   samples, each within [min, max];
//! - every percentile lies within [min, max].
//!
//! These are the only checks of a stored entry: native recorders, agent
//! blocks (src/agent_host/block.rs checks only that the lines its header
//! announced arrived) and imported results (src/import/build.rs: each
//! series and each merged entry) are held to the same ones. An imported
//! series differs in two ways the type says: its Σx and Σx² are unknown
//! (the file gives a float mean and σ, pooled by the importer:
//! [`Distribution::sums_unknown`]), and a file with only min/mean/max has
//! no histogram ([`Distribution::summary_only`]: one bucket, its range).
//!
//! [`per_thread_and_merged`] is the one grouping: one entry per member, then
//! one merged entry per variant, in the order first seen.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Display;

use crate::model::{Bucket, Nanos, ProbeResult, SecondStats, Tail, TailSample, WorstSample, MAX_STORED};
use crate::stats::{bucket_percentile, Moments, PERCENTILES};

/// One per-second slot: count, min, max and Σx of its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Second {
    pub(crate) count: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) sum: u128,
}

/// The exact parts of one series of samples. See the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Distribution {
    pub(crate) samples: u64,
    pub(crate) overruns: u64,
    /// 0 when there are no samples.
    pub(crate) min_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) sum: u128,
    /// Σx², for σ only: it saturates (as the recorder's does) rather than fail.
    pub(crate) sumsq: u128,
    /// Non-empty buckets, lowest first.
    pub(crate) buckets: Vec<Bucket>,
    /// The largest samples in [`rank`] order, at most `tail_k`.
    pub(crate) tail: Vec<TailSample>,
    pub(crate) tail_k: usize,
    /// How many of the tail the entry's `worst` lists.
    pub(crate) worst: usize,
    /// Slot start (s) → slot.
    pub(crate) seconds: BTreeMap<u64, Second>,
    /// Width of a per-second slot, in s (at least 1).
    pub(crate) width_s: u64,
    /// The buckets are only the range (one bucket [min, max]): the source
    /// gave min, mean and max, no histogram (rt-tests' IPC tools), so the
    /// percentiles are unknown; merged, the range of every part.
    pub(crate) summary_only: bool,
    /// Σx and Σx² are not known (an imported series: its mean and σ are the
    /// file's, as floats): the moments are neither checked nor made here;
    /// the importer pools the members' own (src/import/build.rs).
    pub(crate) sums_unknown: bool,
}

/// The tail's order, a total one so that any grouping sorts alike: largest
/// first; among equals the earlier sample (lower seq), then as the
/// recorder's heap ranks the rest (later time, higher CPU, higher thread
/// first), so a cut keeps what a recorder's own tail keeps.
pub(crate) fn rank(a: &TailSample, b: &TailSample) -> Ordering {
    b.0.cmp(&a.0).then(a.2.cmp(&b.2)).then(b.1.cmp(&a.1)).then(b.4.cmp(&a.4)).then(b.3.cmp(&a.3))
}

fn add(a: u64, b: u64, what: &str, source: &dyn Display) -> Result<u64, String> {
    a.checked_add(b).filter(|s| *s <= MAX_STORED).ok_or_else(|| format!("{source}: {what} {a} + {b} pass the largest value a result holds ({MAX_STORED})"))
}

impl Distribution {
    /// Fold `o` (named `source` in an error) into this one: counts and sums
    /// add (checked), min and max combine, buckets add where they overlap
    /// ([`merge_buckets`]; a summary-only part makes the merge one range),
    /// tails are re-ranked and cut to the smaller capacity (with k the
    /// smallest, every sample of the union's top k is in its own part's top
    /// k, so the merged tail stays exact), per-second slots of equal start add.
    pub(crate) fn merge(&mut self, o: &Distribution, source: &dyn Display) -> Result<(), String> {
        if self.seconds.is_empty() {
            self.width_s = o.width_s;
        } else if !o.seconds.is_empty() && o.width_s != self.width_s {
            return Err(format!("{source}: per-second slots of {} s cannot merge with slots of {} s", o.width_s, self.width_s));
        }
        let samples = add(self.samples, o.samples, "samples", source)?;
        let overruns = add(self.overruns, o.overruns, "overruns", source)?;
        let sum = self.sum.checked_add(o.sum).ok_or_else(|| format!("{source}: the sum of the samples overflows 128 bits"))?;
        // A summary-only part makes the merge one range (set below).
        let summary_only = self.summary_only || o.summary_only;
        let buckets = if summary_only { Vec::new() } else { merge_buckets(&self.buckets, &o.buckets, source)? };
        let mut seconds = self.seconds.clone();
        for (t, s) in &o.seconds {
            let e = seconds.entry(*t).or_insert(Second { count: 0, min: u64::MAX, max: 0, sum: 0 });
            e.count = add(e.count, s.count, "per-second counts", source)?;
            e.sum = e.sum.checked_add(s.sum).ok_or_else(|| format!("{source}: a per-second sum overflows 128 bits"))?;
            (e.min, e.max) = (e.min.min(s.min), e.max.max(s.max));
        }
        self.min_ns = match (self.samples, o.samples) {
            (0, _) => o.min_ns,
            (_, 0) => self.min_ns,
            _ => self.min_ns.min(o.min_ns),
        };
        self.max_ns = self.max_ns.max(o.max_ns);
        (self.samples, self.overruns, self.sum) = (samples, overruns, sum);
        self.sumsq = self.sumsq.saturating_add(o.sumsq);
        self.summary_only = summary_only;
        self.sums_unknown |= o.sums_unknown;
        self.buckets = if summary_only { vec![Bucket { lo_ns: Nanos(self.min_ns), hi_ns: Nanos(self.max_ns), count: samples }] } else { buckets };
        self.seconds = seconds;
        self.tail_k = self.tail_k.min(o.tail_k);
        self.tail.extend(o.tail.iter().copied());
        self.tail.sort_by(rank);
        self.tail.truncate(self.tail_k);
        Ok(())
    }

    /// The invariants of the module docs; the error names `what` and the
    /// first that fails.
    pub(crate) fn check(&self, what: &str) -> Result<(), String> {
        let n = self.samples;
        if n > MAX_STORED {
            return Err(format!("{what}: samples={n} is beyond the largest value a result holds"));
        }
        let total = self.buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.count));
        if total != Some(n) {
            return Err(format!("{what}: histogram counts sum to {}, samples={n}", total.map_or("more than 2^64".into(), |t| t.to_string())));
        }
        let secs = self.seconds.values().try_fold(0u64, |a, s| a.checked_add(s.count));
        if !self.seconds.is_empty() && secs != Some(n) {
            return Err(format!("{what}: per-second counts sum to {}, samples={n}", secs.map_or("more than 2^64".into(), |t| t.to_string())));
        }
        for w in self.buckets.windows(2) {
            if w[1].lo_ns <= w[0].hi_ns {
                return Err(format!(
                    "{what}: bucket {}:{} does not follow {}:{} (buckets ascend, without overlap)",
                    w[1].lo_ns.0, w[1].hi_ns.0, w[0].lo_ns.0, w[0].hi_ns.0
                ));
            }
        }
        if let Some(b) = self.buckets.iter().find(|b| b.lo_ns > b.hi_ns) {
            return Err(format!("{what}: bucket {}:{} is reversed", b.lo_ns.0, b.hi_ns.0));
        }
        if n > 0 {
            let (min, max) = (self.min_ns, self.max_ns);
            if min > max {
                return Err(format!("{what}: min_ns {min} is above max_ns {max}"));
            }
            if self.buckets.first().is_some_and(|b| b.lo_ns.0 > min) {
                return Err(format!("{what}: min_ns {min} lies below the lowest bucket"));
            }
            if self.buckets.last().is_some_and(|b| b.hi_ns.0 < max) {
                return Err(format!("{what}: max_ns {max} lies above the highest bucket"));
            }
            for p in PERCENTILES {
                if let Some(v) = bucket_percentile(&self.buckets, p.q, Nanos(min), Nanos(max)).filter(|v| v.0 < min || v.0 > max) {
                    return Err(format!("{what}: p{} = {} lies outside [min_ns {min}, max_ns {max}]", p.key, v.0));
                }
            }
        }
        // min ≤ mean ≤ max and min² ≤ mean square ≤ max², exactly.
        if !self.sums_unknown {
            moments_hold(n, self.sum, self.sumsq, self.min_ns, self.max_ns).map_err(|e| format!("{what}: {e}"))?;
        }
        for (t, s) in &self.seconds {
            let inside = s.count > 0 && s.min <= s.max && s.min >= self.min_ns && s.max <= self.max_ns;
            if !inside || moments_hold(s.count, s.sum, 0, s.min, s.max).is_err() {
                return Err(format!(
                    "{what}: per-second slot {t} s (count {}, min {}, max {}, sum {}) does not fit the samples (min_ns {}, max_ns {})",
                    s.count, s.min, s.max, s.sum, self.min_ns, self.max_ns
                ));
            }
        }
        if self.tail.len() > self.tail_k {
            return Err(format!("{what}: {} tail samples where tail_k={}", self.tail.len(), self.tail_k));
        }
        if self.tail.windows(2).any(|w| rank(&w[0], &w[1]) == Ordering::Greater) {
            return Err(format!("{what}: the tail samples are not largest first (earlier sequence first among equal latencies)"));
        }
        if let Some(t) = self.tail.iter().find(|t| t.0 .0 > self.max_ns || t.0 .0 < self.min_ns) {
            return Err(format!("{what}: tail sample {} ns lies outside [min_ns {}, max_ns {}]", t.0 .0, self.min_ns, self.max_ns));
        }
        Ok(())
    }

    /// The result entry, through the model's constructor: mean and σ from the
    /// sums (0, unknown, when [`Distribution::sums_unknown`]), percentiles
    /// from the buckets by nearest rank (the top of the bucket, clamped to
    /// the exact min and max; none when summary-only), `worst` a prefix of
    /// the tail.
    pub(crate) fn to_result(
        &self,
        probe: &str,
        phase: &str,
        variant: Option<String>,
        thread: Option<usize>,
        cpu: Option<usize>,
        interval_ns: u64,
    ) -> ProbeResult {
        let mut r = ProbeResult::new(probe, phase, variant, thread, cpu, Nanos(interval_ns));
        let n = self.samples;
        let m = Moments::from_sums(n, self.sum as f64, self.sumsq as f64);
        let (min, max) = (Nanos(if n == 0 { 0 } else { self.min_ns }), Nanos(self.max_ns));
        r.samples = n;
        r.overruns = self.overruns;
        r.min_ns = min;
        r.max_ns = max;
        (r.mean_ns, r.stddev_ns) = if self.sums_unknown { (0.0, 0.0) } else { (m.mean, m.sd) };
        r.percentiles_ns = if n == 0 || self.summary_only {
            BTreeMap::new()
        } else {
            PERCENTILES.iter().filter_map(|p| bucket_percentile(&self.buckets, p.q, min, max).map(|v| (p.key.to_string(), v))).collect()
        };
        r.histogram = self.buckets.clone();
        r.worst =
            self.tail.iter().take(self.worst).map(|t| WorstSample { latency_ns: t.0, at_ns: t.1, cpu: t.4, seq: t.2, thread: t.3, trace: None }).collect();
        r.per_second = self
            .seconds
            .iter()
            .map(|(t, s)| SecondStats { t_s: *t, count: s.count, min_ns: Nanos(s.min), mean_ns: s.sum as f64 / s.count.max(1) as f64, max_ns: Nanos(s.max) })
            .collect();
        r.per_second_width_s = self.width_s.max(1);
        r.tail = Tail { k: self.tail_k, samples: self.tail.clone() };
        r
    }
}

/// The union of two bucket lists, each ascending without overlap: buckets
/// that overlap (or share an end) fuse into one with their counts added
/// (checked, named `source`), so parts on one grid (a recorder's, an
/// agent's) add bucket by bucket and parts on different grids (imported
/// files) keep every sample inside a bucket that holds it. The result does
/// not depend on the order the parts are merged in: its buckets are the
/// connected pieces of the union of every part's buckets.
pub(crate) fn merge_buckets(a: &[Bucket], b: &[Bucket], source: &dyn Display) -> Result<Vec<Bucket>, String> {
    let mut out: Vec<Bucket> = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let take_a = j == b.len() || (i < a.len() && (a[i].lo_ns, a[i].hi_ns) <= (b[j].lo_ns, b[j].hi_ns));
        let x = if take_a { a[i] } else { b[j] };
        (i, j) = if take_a { (i + 1, j) } else { (i, j + 1) };
        if x.count == 0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if x.lo_ns <= last.hi_ns => {
                last.hi_ns = last.hi_ns.max(x.hi_ns);
                last.count = add(last.count, x.count, "bucket counts", source)?;
            }
            _ => out.push(x),
        }
    }
    Ok(out)
}

/// The sums of `n` samples within [`min`, `max`] can be what they say:
/// `n·min ≤ sum ≤ n·max` (so min ≤ mean ≤ max), and, unless `sumsq` is 0
/// (not given) or saturated at 2^128−1 (as the recorder saturates it),
/// `n·min² ≤ sumsq ≤ n·max²`. The one check of a distribution's moments
/// against its extremes (exact integers, no rounding): a whole
/// distribution's and each per-second slot's ([`Distribution::check`]), and
/// an agent's `result` line before its block is read (src/agent_host/block.rs).
pub(crate) fn moments_hold(n: u64, sum: u128, sumsq: u128, min: u64, max: u64) -> Result<(), String> {
    let n128 = u128::from(n);
    if n == 0 {
        return if sum == 0 && sumsq == 0 { Ok(()) } else { Err(format!("sum={sum} sumsq={sumsq} with no samples")) };
    }
    let (lo, hi) = (n128 * u128::from(min), n128 * u128::from(max));
    if sum < lo || sum > hi {
        return Err(format!("sum={sum} of {n} samples in {min}..{max} ns: a mean outside [min, max]"));
    }
    if sumsq != 0 && sumsq != u128::MAX {
        let sq = |v: u64| u128::from(v).checked_mul(u128::from(v)).and_then(|x| x.checked_mul(n128));
        let below = sq(min).is_none_or(|lo| sumsq < lo);
        let above = sq(max).is_some_and(|hi| sumsq > hi);
        if below || above {
            return Err(format!("sumsq={sumsq} of {n} samples in {min}..{max} ns: a mean square outside [min², max²]"));
        }
    }
    Ok(())
}

/// One member of a grouping: a thread's (or block's) distribution and what
/// names its entry.
pub(crate) struct Member<'a> {
    pub(crate) variant: Option<&'a str>,
    pub(crate) thread: usize,
    pub(crate) cpu: Option<usize>,
    pub(crate) interval_ns: u64,
    pub(crate) dist: Distribution,
    /// How an error names it ("thread 3", "result n=2").
    pub(crate) source: String,
}

/// An entry of [`per_thread_and_merged`] and the members it is made of
/// (one for a thread's entry; the variant's all for the merged one).
pub(crate) struct Grouped {
    pub(crate) result: ProbeResult,
    pub(crate) members: Vec<usize>,
}

/// Per-member entries plus one merged entry per variant (thread and CPU
/// null), variants in the order first seen; every entry checked
/// ([`Distribution::check`]) before it is handed back.
pub(crate) fn per_thread_and_merged(probe: &str, phase: &str, members: &[Member<'_>]) -> Result<Vec<Grouped>, String> {
    let mut out = Vec::new();
    for v in crate::units::first_seen(members.iter().map(|m| m.variant)) {
        let group: Vec<usize> = (0..members.len()).filter(|&i| members[i].variant == v).collect();
        let first = &members[group[0]];
        let mut merged = Distribution { tail_k: first.dist.tail_k, worst: first.dist.worst, ..Distribution::default() };
        for &i in &group {
            let m = &members[i];
            m.dist.check(&m.source)?;
            merged.merge(&m.dist, &m.source)?;
            out.push(Grouped { result: m.dist.to_result(probe, phase, v.map(str::to_string), Some(m.thread), m.cpu, m.interval_ns), members: vec![i] });
        }
        merged.check(&format!("{probe} {phase}{}: the merged entry", v.map(|v| format!(" ({v})")).unwrap_or_default()))?;
        out.push(Grouped { result: merged.to_result(probe, phase, v.map(str::to_string), None, None, first.interval_ns), members: group });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Recorder;
    use proptest::prelude::*;

    fn recorded(thread: usize, values: &[u64]) -> Recorder {
        // Pinned to a CPU of its own: a recorder otherwise stamps each sample
        // with the CPU the test thread is on, which migrates between the two
        // recordings of the same values under load.
        let mut r = Recorder::with_tail(thread, 3_000_000_000, 4, 16).of_cpu(thread);
        for (i, v) in values.iter().enumerate() {
            r.record(*v, i as u64 * 7_000_000, i as u64);
        }
        r
    }

    fn member(thread: usize, dist: Distribution) -> Member<'static> {
        Member { variant: None, thread, cpu: Some(thread), interval_ns: 1000, dist, source: format!("thread {thread}") }
    }

    proptest! {
        /// Merging the threads' distributions through the one type gives
        /// the entry of one recorder that recorded every sample.
        #[test]
        fn merging_equals_recording_everything_in_one(parts in prop::collection::vec(prop::collection::vec(0u64..5_000_000, 1..60), 1..5)) {
            let members: Vec<Member> = parts.iter().enumerate().map(|(t, p)| member(t, recorded(t, p).distribution())).collect();
            let entries = per_thread_and_merged("t", "idle", &members).unwrap();
            let merged = &entries.last().unwrap().result;
            // Monitor's windows: the parts folded one by one.
            let mut one = recorded(0, &parts[0]).distribution();
            for (t, p) in parts.iter().enumerate().skip(1) {
                one.merge(&recorded(t, p).distribution(), &"a part").unwrap();
            }
            let all: Vec<u64> = parts.concat();
            let mut whole = Recorder::with_tail(0, 3_000_000_000, 4, 16);
            for (i, v) in all.iter().enumerate() {
                whole.record(*v, i as u64, i as u64);
            }
            let w = whole.to_result("t", "idle", None, None, None, 1000);
            prop_assert_eq!(merged.samples, all.len() as u64);
            prop_assert_eq!(&merged.histogram, &w.histogram);
            prop_assert_eq!(&merged.percentiles_ns, &w.percentiles_ns);
            prop_assert_eq!((merged.min_ns, merged.max_ns), (w.min_ns, w.max_ns));
            prop_assert!((merged.mean_ns - w.mean_ns).abs() <= 1e-9 * w.mean_ns.max(1.0));
            let lat = |r: &ProbeResult| r.tail.samples.iter().map(|s| s.0).collect::<Vec<_>>();
            prop_assert_eq!(lat(merged), lat(&w));
            prop_assert_eq!(merged.per_second.iter().map(|s| s.count).sum::<u64>(), all.len() as u64);
            // And the fold agrees.
            let json = |r: &ProbeResult| serde_json::to_value(r).unwrap();
            prop_assert_eq!(json(merged), json(&one.to_result("t", "idle", None, None, None, 1000)));
        }
    }

    #[test]
    fn an_overflowing_merge_is_an_error_naming_its_source() {
        // Three agent blocks of 2^63−1 samples of 100 ns: the sum wrapped to
        // fewer samples than one, with a mean of 300 ns.
        let n = i64::MAX as u64;
        let block = |t: usize| Distribution {
            samples: n,
            min_ns: 100,
            max_ns: 100,
            sum: 100 * n as u128,
            buckets: vec![Bucket { lo_ns: Nanos(100), hi_ns: Nanos(100), count: n }],
            tail_k: 1,
            tail: vec![TailSample(Nanos(100), Nanos(0), 0, t, 0)],
            width_s: 1,
            ..Distribution::default()
        };
        let members: Vec<Member> = (0..3).map(|t| member(t, block(t))).collect();
        let e = per_thread_and_merged("t", "idle", &members).err().unwrap();
        assert!(e.starts_with("thread 1: samples") && e.contains("largest value a result holds"), "{e}");
        assert!(block(0).check("one").is_ok());
    }

    #[test]
    fn broken_invariants_are_refused() {
        let good = recorded(0, &[10, 20, 30]).distribution();
        good.check("x").unwrap();
        let bad = |f: &dyn Fn(&mut Distribution), want: &str| {
            let mut d = good.clone();
            f(&mut d);
            let e = d.check("x").unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad(&|d| d.samples = 4, "histogram counts sum to 3");
        bad(&|d| d.sum = u128::MAX, "mean outside");
        bad(&|d| d.tail.reverse(), "not largest first");
        bad(&|d| d.tail_k = 1, "tail_k=1");
        bad(&|d| d.tail[0].0 = Nanos(99_999), "lies outside [min_ns 10, max_ns 30]");
        bad(
            &|d| {
                d.seconds.clear();
                d.seconds.insert(0, Second { count: 1, min: 10, max: 10, sum: 10 });
            },
            "per-second counts",
        );
        bad(&|d| d.min_ns = 40, "above max_ns");
        // Checks Block::finish ran on its own before (issue 47): now the
        // one type's, so a native, an agent's or an imported result meets them.
        bad(&|d| d.tail.last_mut().unwrap().0 = Nanos(5), "lies outside [min_ns 10");
        bad(&|d| d.sumsq = 10, "mean square outside");
        bad(
            &|d| {
                d.seconds.clear();
                d.seconds.insert(0, Second { count: 3, min: 1, max: 30, sum: 60 });
            },
            "per-second slot 0 s",
        );
        bad(
            &|d| {
                d.seconds.clear();
                d.seconds.insert(0, Second { count: 3, min: 10, max: 30, sum: 300 });
            },
            "does not fit",
        );
    }
}
