//! One agent result block (`result`, `setup`, `hist`, `tail`, `sec`, `end`:
//! docs/agent.md) as it arrives, checked against its own header, and the
//! result entries made from it.
//!
//! The agent sends exact sums (count, Σx, Σx², min, max) and the histogram
//! in the native recorder's geometry, so an entry is stored as sent: the
//! buckets unchanged, mean and σ from the sums ([`Moments::from_sums`], as
//! the native recorder), percentiles from the buckets by nearest rank
//! ([`bucket_percentile`]: the top of the bucket, clamped to the exact min
//! and max, which is what the native recorder reports). The merged entry of
//! a variant combines the threads' blocks through the one checked `Distribution::merge`:
//! counts and sums add, buckets of equal bounds add, tails are re-ranked and
//! cut to the smallest capacity, per-second slots of equal start add.

use std::collections::BTreeMap;

use crate::measure::distribution::{moments_hold, per_thread_and_merged, Distribution, Member, Second};
use crate::model::{Bucket, Extras, Nanos, ProbeResult, SetupStep, SignedStats, TailSample};

pub(crate) use super::bounds::Limits;
use super::bounds::{self, small, Span};
use super::console::foreign;
use super::proto::{tuples, Line};
use crate::import::Series;

/// Histogram buckets a recorder can have: the native geometry (lowest 1,
/// highest 2^47 ns, 3 significant digits, docs/agent.md) has 2 048 exact
/// buckets below 2 048 ns and 1 024 per power of two from 2^11 to 2^47.
pub(crate) const MAX_BUCKETS: u64 = 2048 + 37 * 1024;

/// Set-up lines one block may hold (the agent sends at most 6 per thread).
pub(crate) const MAX_SETUP: u64 = 16;

/// Why a line of a block is refused, which decides the advice: a line that
/// does not parse as its kind (`Malformed`: a key missing, not a number; a
/// link that garbles lines, or a protocol mismatch) or well-formed lines
/// whose content no measurement can have made (`Invariant`: the agent's
/// build or port is wrong; the text names the invariant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    Malformed(String),
    Invariant(String),
}

impl From<String> for Refusal {
    fn from(e: String) -> Self {
        Refusal::Malformed(e)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed(e) | Refusal::Invariant(e) => f.write_str(e),
        }
    }
}

fn broken(e: String) -> Refusal {
    Refusal::Invariant(e)
}

/// A result block of one thread (or, merged, of a variant).
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub(crate) n: u64,
    /// What the block states of its series, in the type every importer
    /// reads into: probe, variant, thread, CPU, interval, the exact counts,
    /// min and max, the buckets, the signed stats and the per-second width.
    /// The fields an importer estimates (mean, σ) stay unset: the agent
    /// sends exact sums instead.
    pub(crate) s: Series,
    pub(crate) sum: u128,
    pub(crate) sumsq: u128,
    /// (latency, at, seq, thread, cpu), largest first.
    pub(crate) tail: Vec<TailSample>,
    pub(crate) tail_k: usize,
    pub(crate) worst: usize,
    /// Start → (count, min, max, sum).
    pub(crate) sec: BTreeMap<u64, (u64, u64, u64, u128)>,
    pub(crate) setup: Vec<SetupStep>,
    pub(crate) error: Option<String>,
    /// The native entry's `note` (a `note` line).
    pub(crate) note: Option<String>,
    /// `late_starts` (timer loops): of `overruns`, the periods already due
    /// when the loop was about to sleep.
    pub(crate) late_starts: Option<u64>,
    // What the header announced, checked at `end`.
    want_hist: u64,
    want_tail: u64,
    want_sec: u64,
    want_setup: u64,
    want_notes: u64,
    /// What its lines lie within (the plan's, fixed at `result`).
    span: Span,
}

impl Block {
    /// From a `result` line: what it announces bounded by `lim` and by its
    /// own sample count.
    pub(crate) fn start(l: &Line, lim: &Limits) -> Result<Block, Refusal> {
        let variant = match l.req("variant")? {
            "-" => None,
            v => Some(v.to_string()),
        };
        let signed = match l.get("signed") {
            None => None,
            Some(s) => {
                let xs: Vec<&str> = s.split(':').collect();
                let bad = || format!("signed={s} is not COUNT:MIN:MAX:SUM");
                if xs.len() != 4 {
                    return Err(bad().into());
                }
                let count: u64 = xs[0].parse().map_err(|_| bad())?;
                let min: i64 = xs[1].parse().map_err(|_| bad())?;
                let max: i64 = xs[2].parse().map_err(|_| bad())?;
                let sum: i128 = xs[3].parse().map_err(|_| bad())?;
                if min > max && count > 0 {
                    return Err(broken(format!("signed={s}: its minimum is above its maximum")));
                }
                let lo = i128::from(min).checked_mul(i128::from(count));
                let hi = i128::from(max).checked_mul(i128::from(count));
                if count > 0 && !(lo.is_some_and(|lo| sum >= lo) && hi.is_some_and(|hi| sum <= hi)) {
                    return Err(broken(format!("signed={s}: a sum its count, minimum and maximum cannot make")));
                }
                let mean_ns = if count == 0 { 0.0 } else { sum as f64 / count as f64 };
                Some(SignedStats { samples: count, min_ns: min, max_ns: max, mean_ns, clamped: false })
            }
        };
        let s = Series {
            probe: l.req("probe")?.to_string(),
            variant,
            thread: Some(l.num("thread")? as usize),
            cpu: l.opt_num("cpu")?.map(|c| c as usize),
            interval_ns: l.num("interval_ns")?,
            samples: l.num("samples")?,
            overruns: l.num("overruns")?,
            min_ns: l.num("min_ns")?,
            max_ns: l.num("max_ns")?,
            per_second_width_s: l.num("width_s")?.max(1),
            signed,
            ..Series::default()
        };
        let mut b = Block {
            n: l.num("n")?,
            s,
            sum: l.num128("sum")?,
            sumsq: l.num128("sumsq")?,
            tail: Vec::new(),
            tail_k: l.num("tail_k")? as usize,
            worst: l.num("worst")? as usize,
            sec: BTreeMap::new(),
            setup: Vec::new(),
            error: l.get("error").map(foreign),
            note: None,
            late_starts: l.get("late_starts").map(|_| l.num("late_starts")).transpose()?,
            want_notes: l.get("notes").map_or(Ok(0), |_| l.num("notes"))?,
            want_hist: l.num("hist")?,
            want_tail: l.num("tail")?,
            want_sec: l.num("sec")?,
            want_setup: l.num("setup")?,
            span: Span::default(),
        };
        if let Some(late) = b.late_starts.filter(|&late| late > b.s.overruns) {
            return Err(broken(format!("late_starts {late} above overruns {} (a late start is a missed period)", b.s.overruns)));
        }
        if b.s.samples > 0 && b.s.min_ns > b.s.max_ns {
            return Err(broken(format!("min_ns {} is above max_ns {}", b.s.min_ns, b.s.max_ns)));
        }
        b.within(lim).map_err(broken)?;
        moments_hold(b.s.samples, b.sum, b.sumsq, b.s.min_ns, b.s.max_ns).map_err(broken)?;
        b.span = bounds::header(lim, &bounds::Header::of(&b)).map_err(broken)?;
        Ok(b)
    }

    /// The counts the `result` line announces, within what the plan and
    /// the block's own samples allow (before any memory is spent on them).
    fn within(&self, lim: &Limits) -> Result<(), String> {
        let n = self.s.samples;
        let most = [
            ("tail_k", self.tail_k as u64, lim.tail, "the plan's tail"),
            ("worst", self.worst as u64, lim.worst, "the plan's worst"),
            ("tail", self.want_tail, (self.tail_k as u64).min(n), "tail_k and samples"),
            ("hist", self.want_hist, MAX_BUCKETS.min(n), "the recorder's buckets and samples"),
            ("sec", self.want_sec, lim.seconds(self.s.per_second_width_s).min(n), "the plan's seconds and samples"),
            ("setup", self.want_setup, MAX_SETUP, "the set-up steps of a thread"),
            ("notes", self.want_notes, 1, "one note"),
        ];
        for (key, v, max, what) in most {
            if v > max {
                return Err(format!("result n={}: {key}={v} is more than {what} allow ({max})", self.n));
            }
        }
        if let Some(sg) = self.s.signed.filter(|sg| sg.samples > n) {
            return Err(format!("result n={}: signed counts {} samples of {n}", self.n, sg.samples));
        }
        Ok(())
    }

    /// Take one `setup`, `hist`, `tail` or `sec` line of this block.
    pub(crate) fn add(&mut self, l: &Line) -> Result<(), Refusal> {
        match l.kind.as_str() {
            "setup" => {
                if self.setup.len() as u64 >= self.want_setup {
                    return Err(broken(format!("more setup lines than setup={} announced", self.want_setup)));
                }
                let outcome = match l.req("outcome")? {
                    "ok" => crate::model::Outcome::Ok,
                    "failed" => crate::model::Outcome::Failed,
                    "skipped" => crate::model::Outcome::Skipped,
                    o => return Err(format!("outcome={o} is not ok, failed or skipped").into()),
                };
                self.setup.push(SetupStep::new(foreign(l.req("step")?), outcome, foreign(l.get("detail").unwrap_or(""))));
            }
            "hist" => {
                for t in tuples("b", l.req("b")?, 3, &[])? {
                    if self.s.buckets.len() as u64 >= self.want_hist {
                        return Err(broken(format!("more buckets than hist={} announced", self.want_hist)));
                    }
                    let (lo, hi, count) = (small(t[0])?, small(t[1])?, small(t[2])?);
                    if lo > hi {
                        return Err(broken(format!("bucket {lo}:{hi} is reversed")));
                    }
                    bounds::bucket(lo, hi, self.s.max_ns).map_err(broken)?;
                    if self.s.buckets.last().is_some_and(|p| p.hi_ns.0 >= lo) {
                        return Err(broken(format!("bucket {lo}:{hi} does not follow the one before it (buckets ascend, without overlap)")));
                    }
                    self.s.buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count });
                }
            }
            "tail" => {
                let thread = self.s.thread.unwrap_or(0);
                for t in tuples("s", l.req("s")?, 4, &[3])? {
                    if self.tail.len() as u64 >= self.want_tail {
                        return Err(broken(format!("more tail samples than tail={} announced", self.want_tail)));
                    }
                    let cpu = match t[3] {
                        Some(c) => small(Some(c))? as usize,
                        None => self.s.cpu.unwrap_or(0),
                    };
                    let s = TailSample(Nanos(small(t[0])?), Nanos(small(t[1])?), small(t[2])?, thread, cpu);
                    bounds::tail_sample(&s, &self.span).map_err(broken)?;
                    self.tail.push(s);
                }
            }
            "sec" => {
                for t in tuples("s", l.req("s")?, 5, &[])? {
                    if self.sec.len() as u64 >= self.want_sec {
                        return Err(broken(format!("more per-second slots than sec={} announced", self.want_sec)));
                    }
                    let at = small(t[0])?;
                    bounds::slot(at, self.s.per_second_width_s, &self.span).map_err(broken)?;
                    if self.sec.insert(at, (small(t[1])?, small(t[2])?, small(t[3])?, t[4].unwrap_or(0))).is_some() {
                        return Err(broken(format!("per-second slot {at} is sent twice")));
                    }
                }
            }
            "note" => {
                if self.note.is_some() {
                    return Err(broken("a second note line in one block".into()));
                }
                self.note = Some(foreign(l.req("text")?));
            }
            k => return Err(format!("a {k} line inside result block n={}", self.n).into()),
        }
        Ok(())
    }

    /// At `end`: every announced line arrived, and the block holds what
    /// every result entry holds: the checks are [`Distribution::check`]'s
    /// alone, the one type's for native, agent and imported results.
    pub(crate) fn finish(&self) -> Result<(), Refusal> {
        let got = [
            ("hist", self.s.buckets.len() as u64, self.want_hist),
            ("tail", self.tail.len() as u64, self.want_tail),
            ("sec", self.sec.len() as u64, self.want_sec),
            ("setup", self.setup.len() as u64, self.want_setup),
            ("notes", u64::from(self.note.is_some()), self.want_notes),
        ];
        for (what, have, want) in got {
            if have != want {
                return Err(broken(format!("result n={} announced {what}={want} but {have} arrived", self.n)));
            }
        }
        bounds::distinct(&self.tail).map_err(|e| broken(format!("result n={}: {e}", self.n)))?;
        self.distribution().check(&format!("result n={}", self.n)).map_err(broken)
    }

    /// What the block measured, as the one distribution type (merged and
    /// made into entries as a native thread's recorder is). The tail as
    /// sent: [`Distribution::check`] refuses one that is not in rank order.
    pub(crate) fn distribution(&self) -> Distribution {
        Distribution {
            samples: self.s.samples,
            overruns: self.s.overruns,
            min_ns: if self.s.samples == 0 { 0 } else { self.s.min_ns },
            max_ns: self.s.max_ns,
            sum: self.sum,
            sumsq: self.sumsq,
            buckets: self.s.buckets.clone(),
            tail: self.tail.clone(),
            tail_k: self.tail_k,
            worst: self.worst,
            seconds: self.sec.iter().map(|(t, s)| (*t, Second { count: s.0, min: s.1, max: s.2, sum: s.3 })).collect(),
            width_s: self.s.per_second_width_s,
            ..Distribution::default()
        }
    }
}

/// Per-thread entries plus one merged entry per variant, in arrival order,
/// through the grouping native runs use ([`per_thread_and_merged`]); a
/// block that breaks the invariants, or blocks whose merge overflows, are
/// refused (the error names the block).
pub(crate) fn results_of(blocks: &[Block], phase: &str) -> Result<Vec<ProbeResult>, String> {
    let mut out = Vec::new();
    for probe in crate::units::first_seen(blocks.iter().map(|b| b.s.probe.as_str())) {
        let of: Vec<&Block> = blocks.iter().filter(|b| b.s.probe == probe).collect();
        let members: Vec<Member> = of
            .iter()
            .map(|b| Member {
                variant: b.s.variant.as_deref(),
                thread: b.s.thread.unwrap_or(0),
                cpu: b.s.cpu,
                interval_ns: b.s.interval_ns,
                dist: b.distribution(),
                source: format!("result n={}", b.n),
            })
            .collect();
        for g in per_thread_and_merged(probe, phase, &members)? {
            let mut r = g.result;
            // What a block carries beside its distribution (its signed
            // summary, its note), combined for the merged entry by the rule
            // a native run's threads use (`Extras::combine`).
            let extras = |b: &Block| Extras { signed: b.s.signed, note: b.note.clone(), late_starts: b.late_starts, ..Extras::default() };
            r.extras = g.members.iter().map(|&i| extras(of[i])).reduce(|a, b| a.combine(&b)).unwrap_or_default();
            out.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::bounds::buckets;
    use super::*;
    use proptest::prelude::*;

    fn block(thread: usize, values: &[u64]) -> Block {
        let l = Line::new("result")
            .with("n", thread)
            .with("probe", "timer")
            .with("variant", "-")
            .with("thread", thread)
            .with("cpu", thread)
            .with("interval_ns", 1000)
            .with("samples", values.len())
            .with("overruns", 1)
            .with("min_ns", values.iter().min().unwrap())
            .with("max_ns", values.iter().max().unwrap())
            .with("sum", values.iter().sum::<u64>())
            .with("sumsq", values.iter().map(|v| (*v as u128) * (*v as u128)).sum::<u128>())
            .with("hist", buckets(values).split(',').count())
            .with("tail", values.len())
            .with("tail_k", 8)
            .with("worst", 2)
            .with("sec", 1)
            .with("width_s", 1)
            .with("setup", 0)
            .with("stopped", 0);
        let mut b = Block::start(&l, &Limits::timer(8, 2, 1_000_000_000, 1000)).unwrap();
        let mut sorted = values.to_vec();
        sorted.sort();
        b.add(&Line::new("hist").with("b", buckets(&sorted))).unwrap();
        let tail: Vec<String> = sorted.iter().rev().enumerate().map(|(i, v)| format!("{v}:{i}:{i}:{thread}")).collect();
        b.add(&Line::new("tail").with("s", tail.join(","))).unwrap();
        let sum: u64 = values.iter().sum();
        b.add(&Line::new("sec").with("s", format!("0:{}:{}:{}:{sum}", values.len(), sorted[0], sorted[sorted.len() - 1]))).unwrap();
        b.finish().unwrap();
        b
    }

    #[test]
    fn entries_per_thread_and_merged() {
        let rs = results_of(&[block(0, &[10, 30, 20]), block(1, &[5, 40])], "idle").unwrap();
        assert_eq!(rs.len(), 3);
        let m = &rs[2];
        assert_eq!((m.thread, m.samples, m.overruns, m.min_ns.0, m.max_ns.0), (None, 5, 2, 5, 40));
        assert_eq!(m.histogram.iter().map(|b| b.count).sum::<u64>(), 5);
        assert!((m.mean_ns - 21.0).abs() < 1e-9);
        assert_eq!(m.percentiles_ns["50"], Nanos(20));
        assert_eq!(m.worst.iter().map(|w| w.latency_ns.0).collect::<Vec<_>>(), [40, 30]);
        assert_eq!((m.per_second[0].count, m.per_second[0].min_ns.0, m.per_second[0].max_ns.0), (5, 5, 40));
        assert_eq!(rs[0].percentiles_ns["99"], Nanos(30));
    }

    proptest! {
        /// Agent blocks merged through the one type give the entry of one
        /// block that holds every sample: counts, buckets, percentiles,
        /// extremes, mean, the tail's latencies and the per-second counts
        /// (distinct values: the helper writes one bucket per value).
        #[test]
        fn merging_blocks_equals_one_block_of_everything(
            values in proptest::collection::btree_set(1u64..5_000_000, 1..=8),
            cuts in proptest::collection::vec(0usize..8, 0..3),
        ) {
            let all: Vec<u64> = values.into_iter().collect();
            let mut at: Vec<usize> = cuts.into_iter().map(|c| c % all.len()).chain([0, all.len()]).collect();
            at.sort();
            at.dedup();
            let blocks: Vec<Block> = at.windows(2).enumerate().map(|(t, w)| block(t, &all[w[0]..w[1]])).collect();
            let merged = results_of(&blocks, "idle").unwrap().pop().unwrap();
            let one = results_of(&[block(0, &all)], "idle").unwrap().remove(0);
            prop_assert_eq!(merged.samples, one.samples);
            prop_assert_eq!(&merged.histogram, &one.histogram);
            prop_assert_eq!(&merged.percentiles_ns, &one.percentiles_ns);
            prop_assert_eq!((merged.min_ns, merged.max_ns), (one.min_ns, one.max_ns));
            prop_assert!((merged.mean_ns - one.mean_ns).abs() <= 1e-9 * one.mean_ns);
            let lat = |r: &ProbeResult| r.tail.samples.iter().map(|s| s.0).collect::<Vec<_>>();
            prop_assert_eq!(lat(&merged), lat(&one));
            prop_assert_eq!(merged.per_second.iter().map(|s| s.count).collect::<Vec<_>>(), one.per_second.iter().map(|s| s.count).collect::<Vec<_>>());
            prop_assert_eq!(merged.overruns, blocks.len() as u64, "one overrun per block");
        }
    }

    /// Three blocks of 2^63−1 samples of 100 ns merged (unchecked `+=`) to
    /// fewer samples than one, with a mean of 300 ns: refused, naming the block.
    #[test]
    fn blocks_whose_merge_overflows_are_refused() {
        let n = crate::model::MAX_STORED;
        let big = |t: u64| {
            let l = Line::new("result")
                .with("n", t)
                .with("probe", "timer")
                .with("variant", "-")
                .with("thread", t)
                .with("cpu", 0)
                .with("interval_ns", 1)
                .with("samples", n)
                .with("overruns", 0)
                .with("min_ns", 100)
                .with("max_ns", 100)
                .with("sum", 100 * n as u128)
                .with("sumsq", 10_000 * n as u128)
                .with("hist", 1)
                .with("tail", 1)
                .with("tail_k", 1)
                .with("worst", 1)
                .with("sec", 0)
                .with("width_s", 1)
                .with("setup", 0);
            // A plan long enough for 2^63−1 samples at 1 ns (no agent plan is).
            let mut b = Block::start(&l, &Limits::timer(8, 2, u64::MAX, 1)).unwrap();
            b.add(&Line::new("hist").with("b", format!("100:100:{n}"))).unwrap();
            b.add(&Line::new("tail").with("s", "100:0:0:0")).unwrap();
            b.finish().unwrap();
            b
        };
        let e = results_of(&[big(0), big(1), big(2)], "idle").unwrap_err();
        assert!(e.starts_with("result n=1: samples"), "{e}");
        assert_eq!(results_of(&[big(0)], "idle").unwrap()[1].samples, n, "one block alone is whole");
    }

    #[test]
    fn a_block_that_disagrees_with_its_header_is_refused() {
        let mut b = block(0, &[10, 20]);
        b.s.samples = 3;
        assert!(b.finish().unwrap_err().to_string().contains("sum to 2"));
        let mut b = block(0, &[10, 20]);
        assert!(b.add(&Line::new("hist").with("b", "30:30:1")).unwrap_err().to_string().contains("more buckets than hist=2"));
        (b.want_hist, b.want_sec) = (10, 10);
        assert!(b.add(&Line::new("hist").with("b", "5:5:1")).unwrap_err().to_string().contains("does not follow"));
        assert!(b.add(&Line::new("sec").with("s", "0:1:1:1:1")).unwrap_err().to_string().contains("twice"));
        assert!(b.add(&Line::new("hist").with("b", "90:80:1")).unwrap_err().to_string().contains("reversed"));
    }

    /// The lines of one honest block: its header, then its buckets, tail and
    /// per-second slots, and `end`.
    fn honest_lines(thread: usize, values: &[u64], width_s: u64) -> Vec<Line> {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let tail: Vec<u64> = sorted.iter().rev().take(8).copied().collect();
        let mut sec: BTreeMap<u64, (u64, u64, u64, u128)> = BTreeMap::new();
        for (i, v) in values.iter().enumerate() {
            let t = (i as u64 % 4) * width_s;
            let e = sec.entry(t).or_insert((0, u64::MAX, 0, 0));
            *e = (e.0 + 1, e.1.min(*v), e.2.max(*v), e.3 + u128::from(*v));
        }
        let header = Line::new("result")
            .with("n", thread)
            .with("probe", "timer")
            .with("variant", "-")
            .with("thread", thread)
            .with("cpu", thread % 2)
            .with("interval_ns", 1000)
            .with("samples", values.len())
            .with("overruns", 0)
            .with("min_ns", sorted[0])
            .with("max_ns", sorted[sorted.len() - 1])
            .with("sum", values.iter().map(|v| u128::from(*v)).sum::<u128>())
            .with("sumsq", values.iter().map(|v| u128::from(*v) * u128::from(*v)).sum::<u128>())
            .with("hist", buckets(values).split(',').count())
            .with("tail", tail.len())
            .with("tail_k", 8)
            .with("worst", 2)
            .with("sec", sec.len())
            .with("width_s", width_s)
            .with("setup", 0);
        let mut lines = vec![header];
        lines.push(Line::new("hist").with("b", buckets(&sorted)));
        lines.push(Line::new("tail").with("s", tail.iter().enumerate().map(|(i, v)| format!("{v}:{i}:{i}:{}", thread % 2)).collect::<Vec<_>>().join(",")));
        lines.push(Line::new("sec").with("s", sec.iter().map(|(t, (c, lo, hi, sum))| format!("{t}:{c}:{lo}:{hi}:{sum}")).collect::<Vec<_>>().join(",")));
        lines.push(Line::new("end"));
        lines
    }

    /// What an adversary does to honest lines (their checksums stay valid:
    /// the link is not the adversary, the agent is).
    #[derive(Debug, Clone)]
    enum Change {
        /// Set field `key` (by index) of line `line` to `value`.
        Field {
            line: usize,
            key: usize,
            value: u128,
        },
        /// Replace the `nth` number inside a tuple field with `value`.
        Tuple {
            line: usize,
            nth: usize,
            value: u128,
        },
        Drop {
            line: usize,
        },
        Repeat {
            line: usize,
        },
        Swap {
            a: usize,
            b: usize,
        },
    }

    fn edge() -> impl Strategy<Value = u128> {
        prop_oneof![
            0u128..4,
            (0u128..10_000),
            Just(u128::from(u64::MAX)),
            Just(u128::from(u64::MAX) + 1),
            Just(1u128 << 63),
            Just((1u128 << 63) - 1),
            Just(u128::MAX),
            any::<u64>().prop_map(u128::from),
        ]
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (0usize..40, 0usize..20, edge()).prop_map(|(line, key, value)| Change::Field { line, key, value }),
            (0usize..40, 0usize..40, edge()).prop_map(|(line, nth, value)| Change::Tuple { line, nth, value }),
            (0usize..40).prop_map(|line| Change::Drop { line }),
            (0usize..40).prop_map(|line| Change::Repeat { line }),
            (0usize..40, 0usize..40).prop_map(|(a, b)| Change::Swap { a, b }),
        ]
    }

    fn apply(lines: &mut Vec<Line>, c: &Change) {
        if lines.is_empty() {
            return;
        }
        let n = lines.len();
        match *c {
            Change::Field { line, key, value } => {
                let l = &mut lines[line % n];
                if !l.fields.is_empty() {
                    let k = key % l.fields.len();
                    l.fields[k].1 = value.to_string();
                }
            }
            Change::Tuple { line, nth, value } => {
                let l = &mut lines[line % n];
                if let Some((_, v)) = l.fields.iter_mut().find(|(k, _)| k == "b" || k == "s") {
                    let mut out = String::new();
                    for (count, part) in v.split_inclusive([':', ',']).enumerate() {
                        let (num, sep) = part.split_at(part.len() - usize::from(part.ends_with([':', ','])));
                        if count == nth {
                            out.push_str(&value.to_string());
                        } else {
                            out.push_str(num);
                        }
                        out.push_str(sep);
                    }
                    *v = out;
                }
            }
            Change::Drop { line } => {
                lines.remove(line % n);
            }
            Change::Repeat { line } => {
                let l = lines[line % n].clone();
                lines.insert(line % n, l);
            }
            Change::Swap { a, b } => lines.swap(a % n, b % n),
        }
    }

    /// As the session takes blocks: `result` starts one, `end` finishes it;
    /// the first refusal ends the run, keeping the blocks finished before.
    fn take(lines: &[Line], lim: &Limits) -> Vec<Block> {
        let mut done = Vec::new();
        let mut open: Option<Block> = None;
        for l in lines {
            let step = match (l.kind.as_str(), open.as_mut()) {
                ("result", None) => Block::start(l, lim).map(|b| open = Some(b)),
                ("result", Some(_)) => Err(Refusal::Malformed("a result inside a result".into())),
                ("end", Some(b)) => b.finish().map(|()| done.push(open.take().unwrap())),
                ("end", None) => Err(Refusal::Malformed("end outside a block".into())),
                (_, Some(b)) => b.add(l),
                (_, None) => Err(Refusal::Malformed("a line outside a block".into())),
            };
            if step.is_err() {
                break;
            }
            if let Some(b) = open.as_ref() {
                // Memory is bounded by the plan before it is spent.
                assert!(b.s.buckets.len() as u64 <= MAX_BUCKETS.min(b.s.samples));
                assert!(b.tail.len() <= b.tail_k && b.tail_k as u64 <= lim.tail);
                assert!(b.sec.len() as u64 <= lim.seconds(b.s.per_second_width_s).min(b.s.samples));
                assert!(b.setup.len() as u64 <= MAX_SETUP);
            }
        }
        done
    }

    /// The invariants of a stored entry, checked here without the one type
    /// (whose checks are what is under test).
    fn holds(r: &ProbeResult, lim: &Limits) -> Result<(), String> {
        let (lo, hi) = (r.min_ns.0, r.max_ns.0);
        let hist: u64 = r.histogram.iter().map(|b| b.count).sum();
        if hist != r.samples {
            return Err(format!("histogram sums to {hist} of {} samples", r.samples));
        }
        for w in r.histogram.windows(2) {
            if w[0].hi_ns >= w[1].lo_ns {
                return Err("buckets overlap or descend".into());
            }
        }
        if r.per_second.iter().map(|s| s.count).sum::<u64>() != r.samples {
            return Err("per-second counts do not sum to the samples".into());
        }
        if r.samples == 0 {
            return Ok(());
        }
        if lo > hi || !(lo as f64..=hi as f64).contains(&r.mean_ns) || !r.stddev_ns.is_finite() || r.stddev_ns < 0.0 {
            return Err(format!("min {lo} max {hi} mean {} sd {}", r.mean_ns, r.stddev_ns));
        }
        if r.histogram.iter().any(|b| b.count > 0 && (b.hi_ns.0 < lo || b.lo_ns.0 > hi)) {
            return Err("a bucket outside [min, max]".into());
        }
        if r.percentiles_ns.values().any(|p| p.0 < lo || p.0 > hi) {
            return Err(format!("a percentile outside [{lo}, {hi}]: {:?}", r.percentiles_ns));
        }
        if r.per_second.iter().any(|s| s.count == 0 || s.min_ns > s.max_ns || s.min_ns.0 < lo || s.max_ns.0 > hi) {
            return Err("a per-second slot outside [min, max]".into());
        }
        let tail: Vec<u64> = r.tail.samples.iter().map(|t| t.0 .0).collect();
        if tail.iter().any(|t| *t < lo || *t > hi) || tail.windows(2).any(|w| w[0] < w[1]) || tail.len() as u64 > lim.tail.max(1) * 64 {
            return Err(format!("tail {tail:?} in [{lo}, {hi}]"));
        }
        if r.worst.iter().any(|w| w.latency_ns.0 < lo || w.latency_ns.0 > hi) || r.worst.len() as u64 > lim.worst.max(1) * 64 {
            return Err("a worst sample outside [min, max]".into());
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Hostile block sequences (honest blocks an adversarial agent
        /// changed, with valid checksums): never a panic, memory bounded by
        /// the plan while lines arrive, and what is stored holds every
        /// invariant of a result.
        #[test]
        fn hostile_blocks_store_nothing_broken(
            threads in proptest::collection::vec(proptest::collection::btree_set(1u64..5_000_000, 1..24), 1..4),
            width in 1u64..3,
            changes in proptest::collection::vec(change(), 0..6),
        ) {
            let lim = Limits::timer(8, 2, 10_000_000_000, 1000);
            let mut lines = Vec::new();
            for (t, values) in threads.iter().enumerate() {
                let values: Vec<u64> = values.iter().copied().collect();
                lines.extend(honest_lines(t, &values, width));
            }
            if changes.is_empty() {
                // Honest blocks are all taken.
                proptest::prop_assert_eq!(take(&lines, &lim).len(), threads.len());
            }
            for c in &changes {
                apply(&mut lines, c);
            }
            let blocks = take(&lines, &lim);
            if let Ok(results) = results_of(&blocks, "idle") {
                for r in &results {
                    if let Err(e) = holds(r, &lim) {
                        proptest::prop_assert!(false, "{e}: stored from {changes:?}");
                    }
                }
            }
        }
    }
}
