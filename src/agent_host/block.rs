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
mod tests;
