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
//! a variant combines the threads' blocks exactly as `Recorder::merge` does:
//! counts and sums add, buckets of equal bounds add, tails are re-ranked and
//! cut to the smallest capacity, per-second slots of equal start add.

use std::collections::BTreeMap;

use crate::measure::distribution::{per_thread_and_merged, rank, Distribution, Member, Second};
use crate::model::{Bucket, Nanos, ProbeResult, SetupStep, SignedStats, TailSample};

use super::proto::{tuples, Line};
use crate::import::Series;

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
    // What the header announced, checked at `end`.
    want_hist: u64,
    want_tail: u64,
    want_sec: u64,
    want_setup: u64,
    want_notes: u64,
}

impl Block {
    /// From a `result` line.
    pub(crate) fn start(l: &Line) -> Result<Block, String> {
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
                    return Err(bad());
                }
                let count: u64 = xs[0].parse().map_err(|_| bad())?;
                let min: i64 = xs[1].parse().map_err(|_| bad())?;
                let max: i64 = xs[2].parse().map_err(|_| bad())?;
                let sum: i128 = xs[3].parse().map_err(|_| bad())?;
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
        let b = Block {
            n: l.num("n")?,
            s,
            sum: l.num128("sum")?,
            sumsq: l.num128("sumsq")?,
            tail: Vec::new(),
            tail_k: l.num("tail_k")? as usize,
            worst: l.num("worst")? as usize,
            sec: BTreeMap::new(),
            setup: Vec::new(),
            error: l.get("error").map(str::to_string),
            note: None,
            want_notes: l.get("notes").map_or(Ok(0), |_| l.num("notes"))?,
            want_hist: l.num("hist")?,
            want_tail: l.num("tail")?,
            want_sec: l.num("sec")?,
            want_setup: l.num("setup")?,
        };
        if b.s.samples > 0 && b.s.min_ns > b.s.max_ns {
            return Err(format!("min_ns {} is above max_ns {}", b.s.min_ns, b.s.max_ns));
        }
        Ok(b)
    }

    /// Take one `setup`, `hist`, `tail` or `sec` line of this block.
    pub(crate) fn add(&mut self, l: &Line) -> Result<(), String> {
        match l.kind.as_str() {
            "setup" => {
                let outcome = match l.req("outcome")? {
                    "ok" => crate::model::Outcome::Ok,
                    "failed" => crate::model::Outcome::Failed,
                    "skipped" => crate::model::Outcome::Skipped,
                    o => return Err(format!("outcome={o} is not ok, failed or skipped")),
                };
                self.setup.push(SetupStep::new(l.req("step")?, outcome, l.get("detail").unwrap_or("")));
            }
            "hist" => {
                for t in tuples("b", l.req("b")?, 3, &[])? {
                    let (lo, hi, count) = (small(t[0])?, small(t[1])?, small(t[2])?);
                    if lo > hi {
                        return Err(format!("bucket {lo}:{hi} is reversed"));
                    }
                    if self.s.buckets.last().is_some_and(|p| p.hi_ns.0 >= lo) {
                        return Err(format!("bucket {lo}:{hi} does not follow the one before it (buckets ascend, without overlap)"));
                    }
                    self.s.buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count });
                }
            }
            "tail" => {
                let thread = self.s.thread.unwrap_or(0);
                for t in tuples("s", l.req("s")?, 4, &[3])? {
                    let cpu = match t[3] {
                        Some(c) => small(Some(c))? as usize,
                        None => self.s.cpu.unwrap_or(0),
                    };
                    self.tail.push(TailSample(Nanos(small(t[0])?), Nanos(small(t[1])?), small(t[2])?, thread, cpu));
                }
            }
            "sec" => {
                for t in tuples("s", l.req("s")?, 5, &[])? {
                    let at = small(t[0])?;
                    if self.sec.insert(at, (small(t[1])?, small(t[2])?, small(t[3])?, t[4].unwrap_or(0))).is_some() {
                        return Err(format!("per-second slot {at} is sent twice"));
                    }
                }
            }
            "note" => {
                if self.note.is_some() {
                    return Err("a second note line in one block".into());
                }
                self.note = Some(l.req("text")?.to_string());
            }
            k => return Err(format!("a {k} line inside result block n={}", self.n)),
        }
        Ok(())
    }

    /// At `end`: every announced line arrived, and the block holds what
    /// every result entry holds ([`Distribution::check`]).
    pub(crate) fn finish(&self) -> Result<(), String> {
        let got = [
            ("hist", self.s.buckets.len() as u64, self.want_hist),
            ("tail", self.tail.len() as u64, self.want_tail),
            ("sec", self.sec.len() as u64, self.want_sec),
            ("setup", self.setup.len() as u64, self.want_setup),
            ("notes", u64::from(self.note.is_some()), self.want_notes),
        ];
        for (what, have, want) in got {
            if have != want {
                return Err(format!("result n={} announced {what}={want} but {have} arrived", self.n));
            }
        }
        self.distribution().check(&format!("result n={}", self.n))
    }

    /// What the block measured, as the one distribution type (merged and
    /// made into entries as a native thread's recorder is).
    pub(crate) fn distribution(&self) -> Distribution {
        let mut tail = self.tail.clone();
        tail.sort_by(rank);
        Distribution {
            samples: self.s.samples,
            overruns: self.s.overruns,
            min_ns: if self.s.samples == 0 { 0 } else { self.s.min_ns },
            max_ns: self.s.max_ns,
            sum: self.sum,
            sumsq: self.sumsq,
            buckets: self.s.buckets.clone(),
            tail,
            tail_k: self.tail_k,
            worst: self.worst,
            seconds: self.sec.iter().map(|(t, s)| (*t, Second { count: s.0, min: s.1, max: s.2, sum: s.3 })).collect(),
            width_s: self.s.per_second_width_s,
        }
    }
}

/// A number that must fit the history's 64-bit integers.
fn small(v: Option<u128>) -> Result<u64, String> {
    let v = v.unwrap_or(0);
    u64::try_from(v).ok().filter(|x| *x <= crate::model::MAX_STORED).ok_or_else(|| format!("{v} is beyond the largest value a result holds"))
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
            // The signed summaries merge as before; a block's note is its
            // entry's, and the merged entry takes its first block's.
            r.extras.signed = g.members.iter().filter_map(|&i| of[i].s.signed).reduce(|a, b| a.merge(b));
            r.extras.note = of[g.members[0]].note.clone();
            out.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .with("hist", values.len())
            .with("tail", values.len())
            .with("tail_k", 8)
            .with("worst", 2)
            .with("sec", 1)
            .with("width_s", 1)
            .with("setup", 0)
            .with("stopped", 0);
        let mut b = Block::start(&l).unwrap();
        let mut sorted = values.to_vec();
        sorted.sort();
        let hist: Vec<String> = sorted.iter().map(|v| format!("{v}:{v}:1")).collect();
        b.add(&Line::new("hist").with("b", hist.join(","))).unwrap();
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
                .with("interval_ns", 1000)
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
            let mut b = Block::start(&l).unwrap();
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
        assert!(b.finish().unwrap_err().contains("sum to 2"));
        let mut b = block(0, &[10, 20]);
        assert!(b.add(&Line::new("hist").with("b", "5:5:1")).unwrap_err().contains("does not follow"));
        assert!(b.add(&Line::new("sec").with("s", "0:1:1:1:1")).unwrap_err().contains("twice"));
        assert!(b.add(&Line::new("hist").with("b", "90:80:1")).unwrap_err().contains("reversed"));
    }
}
