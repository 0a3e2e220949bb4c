//! The per-thread sample recorder: where every probe's hot loop writes.
//!
//! A [`Recorder`] is allocated and touched before the start barrier; after it,
//! [`Recorder::record`] does no allocation, no locking, no formatting and no
//! I/O (rule 5). It keeps:
//!
//! - a lossless histogram in nanoseconds (see [`HIGHEST_NS`] for why
//!   `hdrhistogram` with 3 significant digits),
//! - exact count, min, max, sum and sum of squares,
//! - the tail: the largest samples exactly (at least [`TAIL_K`], with time,
//!   CPU and sequence number) for the statistical worst case (EVT, see
//!   `analysis::evt`); the worst K of the result are a view of it, not a
//!   second structure,
//! - per-second min/mean/max/count over the whole run, in a buffer sized from
//!   the planned duration (bounded memory),
//! - an overrun counter (rule 3: a missed period is counted, never skipped).
//!
//! A recorder gives its samples as the one distribution type
//! ([`Recorder::distribution`]), whose checked merge combines per-thread
//! results into the merged entry of a probe (and monitor's windows into its
//! overall entries) exactly: counts add, min/max/sums combine, tails are
//! re-ranked, per-second slots add.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;

use super::distribution::{rank, Distribution, Second};
use crate::model::{Bucket, Nanos, ProbeResult, TailSample};

/// Top of the histogram's exact range: 2^47 ns, about 39 hours.
///
/// Why hdrhistogram with 3 significant digits: recording is O(1) (a shift, a
/// mask and an add into a preallocated array), values below 2048 ns are kept
/// to the nanosecond and every larger value to within 0.1 %, so the buckets
/// stay fine where real-time latencies live (µs) and still exact-counted up to
/// hours. The array is ~300 KiB per thread, allocated before the barrier.
/// A value above this is recorded in the top bucket (never dropped) and the
/// exact maximum is kept separately, so no sample is ever lost (rule 4).
pub(crate) const HIGHEST_NS: u64 = 1 << 47;
const SIGNIFICANT_DIGITS: u8 = 3;

/// How many of the largest samples each recorder keeps exactly (at least;
/// `--worst K` above this raises it).
///
/// Why 1 088 (1 024 + 64): the peaks-over-threshold fit uses at most a
/// thousand exceedances and the sample above which they lie (see
/// `analysis::evt`), so 1 001 serve it at any run length; the rest is room.
/// A fixed cap keeps a thread's memory the same whatever the run's length
/// (34 KiB, allocated and touched before the start barrier; the former cap
/// of 10 000 made a 60 s run's resident set 7 % larger than a 10 s run's),
/// and keeps the hot path
/// O(1) for every sample that does not enter: entering is one comparison
/// with the heap's root, and only an entering sample pays the O(log K) push.
pub(crate) const TAIL_K: usize = 1_088;

/// What the live view (a non-RT thread) may read while a probe runs.
#[derive(Debug, Default)]
pub struct Live {
    pub(crate) samples: AtomicU64,
    pub(crate) overruns: AtomicU64,
    pub(crate) max_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Worst {
    latency: u64,
    // Earlier samples rank higher among equal latencies (Reverse in the heap).
    seq_rev: Reverse<u64>,
    at: u64,
    cpu: u32,
    thread: u32,
}

/// Per-thread preallocated sample store. See the module docs.
#[derive(Debug)]
pub struct Recorder {
    hist: Histogram<u64>,
    count: u64,
    overruns: u64,
    /// Of `overruns`, the periods a timer loop found already due when it was
    /// about to sleep (`None`: not a timer loop): see [`Recorder::add_late_starts`].
    late_starts: Option<u64>,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
    worst_k: usize,
    tail_k: usize,
    // Min-heap of the tail_k largest samples: the root is the smallest kept.
    // The result's `worst` list is the top worst_k of it.
    tail: BinaryHeap<Reverse<Worst>>,
    slot_width_ns: u64,
    slots: Vec<Slot>,
    thread: usize,
    /// The CPU the samples are of, when it is not the recording thread's
    /// (the tracer probes record other CPUs' samples from one reader).
    cpu: Option<u32>,
    live: Arc<Live>,
}

impl Recorder {
    /// A recorder for one measuring thread whose run lasts about `duration_ns`.
    /// Per-second slots cover the duration plus a margin; a very long run
    /// (over a day) widens the slots so the buffer stays under ~100 000 slots.
    pub fn new(thread: usize, duration_ns: u64, worst_k: usize) -> Recorder {
        Recorder::with_tail(thread, duration_ns, worst_k, TAIL_K)
    }

    /// As [`Recorder::new`], keeping the `tail_k` largest samples (at least
    /// `worst_k`); see [`tail_capacity`] for sizing it from the plan.
    pub(crate) fn with_tail(thread: usize, duration_ns: u64, worst_k: usize, tail_k: usize) -> Recorder {
        let hist = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("static histogram bounds are valid");
        let secs = duration_ns.div_ceil(1_000_000_000).max(1);
        let width_s = secs.div_ceil(100_000).max(1);
        let n_slots = (secs / width_s + 2) as usize;
        let mut slots = vec![Slot::default(); n_slots];
        // Touch every page now, not in the hot loop.
        for s in slots.iter_mut() {
            s.min = u64::MAX;
        }
        let worst_k = worst_k.max(1);
        let tail_k = tail_k.max(worst_k);
        // Allocate and touch the heap's storage now: a Vec written to its
        // capacity, cleared, becomes the heap without reallocating.
        let mut store = vec![Reverse(Worst { latency: 0, seq_rev: Reverse(0), at: 0, cpu: 0, thread: 0 }); tail_k + 1];
        store.clear();
        let tail = BinaryHeap::from(store);
        let mut r = Recorder {
            hist,
            count: 0,
            overruns: 0,
            late_starts: None,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            worst_k,
            tail_k,
            tail,
            slot_width_ns: width_s * 1_000_000_000,
            slots,
            thread,
            cpu: None,
            live: Arc::new(Live::default()),
        };
        r.prefault();
        r
    }

    /// Write to every page of the histogram so no page fault happens later.
    fn prefault(&mut self) {
        // Recording then resetting touches the counts array page by page:
        // one value per 2^k bucket walks every sub-bucket array.
        let mut v = 1u64;
        while v < HIGHEST_NS {
            for step in [0u64, v / 4, v / 2, 3 * v / 4] {
                let _ = self.hist.record(v + step);
            }
            v <<= 1;
        }
        self.hist.reset();
        // Walk the tail's push and pop once: their code and the heap's pages
        // are then in memory (and locked) before the loop needs them.
        for i in 0..=self.tail_k as u64 {
            self.push_tail(i, 0, i);
        }
        self.tail.clear();
    }

    /// Shared handle for the live view.
    /// Samples recorded from now on are of `cpu` (not the recording thread's).
    pub(crate) fn of_cpu(mut self, cpu: usize) -> Recorder {
        self.cpu = Some(cpu as u32);
        self
    }

    pub fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }

    /// Record one latency sample taken `at_ns` after the probe started; `seq`
    /// is the sample's sequence number in this thread. Hot path: O(1) except
    /// when the sample enters the tail (O(log K)).
    #[inline]
    pub fn record(&mut self, latency_ns: u64, at_ns: u64, seq: u64) {
        self.hist.saturating_record(latency_ns.min(HIGHEST_NS));
        self.count += 1;
        if latency_ns < self.min {
            self.min = latency_ns;
        }
        if latency_ns > self.max {
            self.max = latency_ns;
            self.live.max_ns.store(latency_ns, Ordering::Relaxed);
        }
        self.sum += latency_ns as u128;
        self.sum_sq = self.sum_sq.saturating_add((latency_ns as u128) * (latency_ns as u128));

        let idx = ((at_ns / self.slot_width_ns) as usize).min(self.slots.len() - 1);
        let s = &mut self.slots[idx];
        s.count += 1;
        s.sum += latency_ns as u128;
        if latency_ns < s.min {
            s.min = latency_ns;
        }
        if latency_ns > s.max {
            s.max = latency_ns;
        }

        let enters = self.tail.len() < self.tail_k || self.tail.peek().is_some_and(|r| latency_ns > r.0.latency);
        if enters {
            self.push_tail(latency_ns, at_ns, seq);
        }
        self.live.samples.store(self.count, Ordering::Relaxed);
    }

    #[cold]
    fn push_tail(&mut self, latency: u64, at: u64, seq: u64) {
        let cpu = self.cpu.unwrap_or_else(|| crate::sys::sched::current_cpu().unwrap_or(0) as u32);
        let w = Reverse(Worst { latency, seq_rev: Reverse(seq), at, cpu, thread: self.thread as u32 });
        if self.tail.len() < self.tail_k {
            // Capacity is tail_k + 1, so this push never reallocates.
            self.tail.push(w);
        } else if let Some(mut smallest) = self.tail.peek_mut() {
            // Full: the new sample replaces the smallest kept one (it only
            // gets here when larger), one sift-down instead of a push and a pop.
            *smallest = w;
        }
    }

    /// Count `n` missed periods (rule 3).
    #[inline]
    pub(crate) fn add_overruns(&mut self, n: u64) {
        self.overruns += n;
        self.live.overruns.store(self.overruns, Ordering::Relaxed);
    }

    /// Count `n` late starts (timer loops: periods already due when the
    /// loop was about to sleep, so no wake-up to measure; counted in
    /// `overruns` too, so `samples + overruns` = periods still holds).
    /// `0` marks a recorder whose loop counts them.
    #[inline]
    pub(crate) fn add_late_starts(&mut self, n: u64) {
        self.late_starts = Some(self.late_starts.unwrap_or(0) + n);
    }
    /// The late starts counted, `None` where the probe does not count them.
    pub fn late_starts(&self) -> Option<u64> {
        self.late_starts
    }

    pub fn samples(&self) -> u64 {
        self.count
    }
    pub fn overruns(&self) -> u64 {
        self.overruns
    }
    pub fn worst_k(&self) -> usize {
        self.worst_k
    }
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Percentile `q` (0–100) in ns by the nearest-rank definition: the
    /// smallest recorded value such that at least q % of the samples are at or
    /// below it (rank ⌈q·n/100⌉). (Results take theirs from the buckets,
    /// [`Distribution::to_result`]; this checks them in the tests.) Reported as the top of its histogram bucket
    /// (exact below 2048 ns, within 0.1 % above), clamped to the exact [min, max].
    #[cfg(test)]
    pub(crate) fn percentile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = crate::stats::nearest_rank(q, self.count);
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return self.hist.highest_equivalent(v.value_iterated_to()).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Non-empty histogram buckets, lowest first. Counts sum to `samples()`.
    pub fn buckets(&self) -> Vec<Bucket> {
        let mut out = Vec::new();
        for v in self.hist.iter_recorded() {
            let x = v.value_iterated_to();
            let lo = self.hist.lowest_equivalent(x);
            let mut hi = self.hist.highest_equivalent(x);
            // The top bucket also holds saturated values: widen it to the max.
            if hi >= HIGHEST_NS || self.hist.equivalent(x, self.max.min(HIGHEST_NS)) {
                hi = hi.max(self.max);
            }
            out.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count: v.count_at_value() });
        }
        out
    }

    /// What this recorder measured, as the one distribution type every
    /// source merges and reports through ([`Distribution`]).
    pub(crate) fn distribution(&self) -> Distribution {
        let mut tail: Vec<TailSample> =
            self.tail.iter().map(|r| TailSample(Nanos(r.0.latency), Nanos(r.0.at), r.0.seq_rev.0, r.0.thread as usize, r.0.cpu as usize)).collect();
        tail.sort_by(rank);
        let width_s = self.slot_width_ns / 1_000_000_000;
        let seconds = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.count > 0)
            .map(|(i, s)| (i as u64 * width_s, Second { count: s.count, min: s.min, max: s.max, sum: s.sum }))
            .collect();
        Distribution {
            samples: self.count,
            overruns: self.overruns,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            sum: self.sum,
            sumsq: self.sum_sq,
            buckets: self.buckets(),
            tail,
            tail_k: self.tail_k,
            worst: self.worst_k,
            seconds,
            width_s,
            ..Distribution::default()
        }
    }

    /// The merged entry (thread and CPU null) of `recs`, a variant's
    /// threads, as the runner makes it: their distributions folded through
    /// the one checked [`Distribution::merge`]; the error names the thread
    /// whose counts would pass what a result holds. For the examples' and
    /// tests' synthetic runs.
    pub fn merged_result(recs: &[Recorder], probe: &str, phase: &str, interval_ns: u64) -> Result<ProbeResult, String> {
        let Some((first, rest)) = recs.split_first() else { return Ok(Recorder::new(0, 0, 0).to_result(probe, phase, None, None, None, interval_ns)) };
        let mut d = first.distribution();
        for (i, r) in rest.iter().enumerate() {
            d.merge(&r.distribution(), &format_args!("thread {}", i + 1))?;
        }
        Ok(d.to_result(probe, phase, None, None, None, interval_ns))
    }

    /// The summary entry of the result model ([`Distribution::to_result`]).
    pub fn to_result(&self, probe: &str, phase: &str, variant: Option<String>, thread: Option<usize>, cpu: Option<usize>, interval_ns: u64) -> ProbeResult {
        self.distribution().to_result(probe, phase, variant, thread, cpu, interval_ns)
    }
}

/// Tail capacity for a thread that takes a sample every `interval_ns` for
/// `duration_ns`: the top 10 % of the planned samples (+ 64), at most
/// [`TAIL_K`] — the samples above the 90th percentile, which is where a
/// peaks-over-threshold fit looks. Keeping every sample of a short run would
/// put a heap insert on every sample of the hot loop and grow its working
/// set; with a tenth, a sample that does not enter costs one comparison.
/// Short runs also lock less memory (RLIMIT_MEMLOCK after mlockall).
/// `interval_ns` 0 (no fixed period) gives [`TAIL_K`].
pub(crate) fn tail_capacity(duration_ns: u64, interval_ns: u64) -> usize {
    if interval_ns == 0 {
        return TAIL_K;
    }
    let planned = duration_ns / interval_ns;
    (planned / 10).saturating_add(64).min(TAIL_K as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(values: &[u64]) -> Recorder {
        let mut r = Recorder::new(0, 10_000_000_000, 4);
        for (i, v) in values.iter().enumerate() {
            r.record(*v, i as u64 * 1_000_000, i as u64);
        }
        r
    }

    #[test]
    fn known_inputs_give_known_percentiles() {
        // 1..=1000 ns: exact below 2048 ns, so percentiles are exact ranks.
        let values: Vec<u64> = (1..=1000).collect();
        let r = rec(&values);
        assert_eq!(r.percentile(50.0), 500);
        assert_eq!(r.percentile(90.0), 900);
        assert_eq!(r.percentile(99.0), 990);
        assert_eq!(r.percentile(99.9), 999);
        assert_eq!(r.percentile(100.0), 1000);
        let res = r.to_result("timer", "idle", None, Some(0), Some(0), 1000);
        assert_eq!(res.samples, 1000);
        assert_eq!(res.min_ns, Nanos(1));
        assert_eq!(res.max_ns, Nanos(1000));
        assert!((res.mean_ns - 500.5).abs() < 1e-9);
        // σ of 1..=n is sqrt((n²−1)/12).
        let sigma = ((1000f64 * 1000.0 - 1.0) / 12.0).sqrt();
        assert!((res.stddev_ns - sigma).abs() < 1e-6, "{} vs {}", res.stddev_ns, sigma);
        assert_eq!(res.histogram.iter().map(|b| b.count).sum::<u64>(), 1000);
        assert_eq!(res.histogram.len(), 1000);
    }

    #[test]
    fn large_values_stay_within_tenth_of_a_percent() {
        let r = rec(&[1_000_000, 2_000_000, 3_000_000]);
        let p50 = r.percentile(50.0);
        assert!((p50 as f64 - 2_000_000.0).abs() / 2_000_000.0 < 0.001, "{p50}");
    }

    #[test]
    fn hour_long_values_neither_overflow_nor_vanish() {
        let hour = 3_600_000_000_000u64;
        let day = 24 * hour;
        let r = rec(&[5, hour, day, u64::MAX / 4]);
        let res = r.to_result("timer", "idle", None, None, None, 1000);
        assert_eq!(res.samples, 4);
        assert_eq!(res.max_ns, Nanos(u64::MAX / 4), "max is exact even above the histogram range");
        assert_eq!(res.histogram.iter().map(|b| b.count).sum::<u64>(), 4);
        let top = res.histogram.last().unwrap();
        assert!(top.hi_ns.0 >= u64::MAX / 4, "top bucket reaches the exact max");
        let hb = res.histogram.iter().find(|b| b.lo_ns.0 <= hour && hour <= b.hi_ns.0).unwrap();
        assert_eq!(hb.count, 1);
        assert!(res.mean_ns.is_finite());
    }

    #[test]
    fn worst_keeps_the_k_largest_in_order() {
        let r = rec(&[7, 3, 99, 42, 1, 100, 5, 98, 6]);
        let res = r.to_result("timer", "idle", None, Some(0), Some(0), 1000);
        let w: Vec<u64> = res.worst.iter().map(|w| w.latency_ns.0).collect();
        assert_eq!(w, vec![100, 99, 98, 42]);
        assert_eq!(res.worst[0].seq, 5);
        assert_eq!(res.worst[0].at_ns, Nanos(5_000_000));
        assert_eq!(res.worst[0].latency_ns, res.max_ns);
    }

    #[test]
    fn per_second_slots_split_by_time() {
        let mut r = Recorder::new(0, 3_000_000_000, 4);
        r.record(10, 100, 0);
        r.record(20, 999_999_999, 1);
        r.record(30, 1_000_000_000, 2);
        r.record(40, 2_500_000_000, 3);
        let res = r.to_result("t", "idle", None, None, None, 1);
        let ps: Vec<(u64, u64, u64, u64)> = res.per_second.iter().map(|s| (s.t_s, s.count, s.min_ns.0, s.max_ns.0)).collect();
        assert_eq!(ps, vec![(0, 2, 10, 20), (1, 1, 30, 30), (2, 1, 40, 40)]);
        assert!((res.per_second[0].mean_ns - 15.0).abs() < 1e-9);
    }

    #[test]
    fn empty_recorder_is_well_formed() {
        let r = Recorder::new(0, 1_000_000_000, 4);
        let res = r.to_result("t", "idle", None, None, None, 1);
        assert_eq!(res.samples, 0);
        assert!(res.histogram.is_empty());
        assert!(res.percentiles_ns.is_empty());
        assert_eq!(res.min_ns, Nanos(0));
    }

    #[test]
    fn tail_keeps_every_sample_above_its_smallest() {
        // 25 000 distinct values in scrambled order: the tail must be
        // exactly the TAIL_K largest, largest first, and worst a prefix of it.
        let n = 25_000u64;
        let values: Vec<u64> = (0..n).map(|i| (i * 7919) % n + 1).collect();
        let r = rec(&values);
        let res = r.to_result("t", "idle", None, Some(0), Some(0), 1);
        assert_eq!(res.tail.k, TAIL_K);
        assert_eq!(res.tail.samples.len(), TAIL_K);
        let lat: Vec<u64> = res.tail.samples.iter().map(|s| s.latency().0).collect();
        let want: Vec<u64> = (n - TAIL_K as u64 + 1..=n).rev().collect();
        assert_eq!(lat, want);
        // Time and sequence travel with the value: value v was sample i.
        let top = res.tail.samples[0];
        let i = values.iter().position(|&v| v == n).unwrap() as u64;
        assert_eq!((top.seq(), top.at().0), (i, i * 1_000_000));
        let w: Vec<u64> = res.worst.iter().map(|w| w.latency_ns.0).collect();
        assert_eq!(w, want[..4].to_vec());
    }

    #[test]
    fn tail_capacity_follows_the_plan() {
        assert_eq!(tail_capacity(1_000_000_000, 1_000_000), 100 + 64);
        assert_eq!(tail_capacity(10_000_000_000, 1_000_000), 1000 + 64);
        assert_eq!(tail_capacity(60_000_000_000, 1_000_000), TAIL_K);
        assert_eq!(tail_capacity(1_000_000_000, 0), TAIL_K);
        // A smaller part bounds the merged tail, which stays the exact top k.
        let mut a = Recorder::with_tail(0, 1_000_000_000, 1, 3);
        let mut b = Recorder::with_tail(1, 1_000_000_000, 1, 5);
        for (i, v) in [10u64, 50, 20, 40, 30].iter().enumerate() {
            a.record(*v, i as u64, i as u64);
            b.record(*v + 1, i as u64, i as u64);
        }
        let mut m = a.distribution();
        m.merge(&b.distribution(), &"b").unwrap();
        let res = m.to_result("t", "idle", None, None, None, 1);
        assert_eq!(res.tail.k, 3);
        let lat: Vec<u64> = res.tail.samples.iter().map(|s| s.latency().0).collect();
        assert_eq!(lat, vec![51, 50, 41]);
    }

    #[test]
    fn short_run_tail_holds_every_sample_and_merges() {
        let a = rec(&[5, 1, 9]);
        let b = rec(&[7, 3]);
        let mut a = a.distribution();
        a.merge(&b.distribution(), &"b").unwrap();
        let res = a.to_result("t", "idle", None, None, None, 1);
        let lat: Vec<u64> = res.tail.samples.iter().map(|s| s.latency().0).collect();
        assert_eq!(lat, vec![9, 7, 5, 3, 1]);
    }

    #[test]
    fn tail_round_trips_through_json_and_is_optional() {
        let r = rec(&[4, 8]);
        let res = r.to_result("t", "idle", None, Some(0), Some(0), 1);
        let v = serde_json::to_value(&res).unwrap();
        assert_eq!(v["tail"]["samples"][0], serde_json::json!([8, 1_000_000, 1, 0, res.tail.samples[0].cpu()]));
        let back: ProbeResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back.tail, res.tail);
        let mut old = v;
        old.as_object_mut().unwrap().remove("tail");
        let back: ProbeResult = serde_json::from_value(old).unwrap();
        assert!(back.tail.is_empty());
    }
}
