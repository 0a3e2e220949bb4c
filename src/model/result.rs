//! The results of one probe/phase/variant ([`ProbeResult`]): counts,
//! histogram ([`Bucket`]), the exact tail ([`Tail`]), worst samples and
//! per-second series, migrate's [`Violations`]; and which entry stands for a
//! group of threads ([`merged_or_sole`]).

use serde::{Deserialize, Serialize};

use super::*;

/// The entries that stand for each probe/phase/variant over all threads,
/// in first-seen order: the one merged over threads, or the group's only
/// entry (a one-thread run records no merged entry). `result` gives an
/// item's result entry, so this serves result entries and analyses of them.
pub fn merged_or_sole<T>(items: &[T], result: impl Fn(&T) -> &ProbeResult) -> Vec<&T> {
    let same = |a: &ProbeResult, b: &ProbeResult| a.probe == b.probe && a.phase == b.phase && a.variant == b.variant;
    let mut out: Vec<&T> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let r = result(x);
        if items[..i].iter().any(|y| same(result(y), r)) {
            continue;
        }
        let group: Vec<&T> = items.iter().filter(|y| same(result(y), r)).collect();
        if let Some(m) = merged_of_group(&group, &result) {
            out.push(m);
        }
    }
    out
}

/// The entry that stands for one probe/phase/variant `group` (its threads'
/// entries and the merged one): the merged entry (no `thread`), or the only
/// entry of a one-thread run; None for several threads without a merged one.
pub fn merged_of_group<'a, T>(group: &[&'a T], result: impl Fn(&T) -> &ProbeResult) -> Option<&'a T> {
    group.iter().find(|y| result(y).thread.is_none()).copied().or(if group.len() == 1 { Some(group[0]) } else { None })
}

/// The results of one probe/phase/variant for one measuring thread, or merged
/// over all threads (`thread` and `cpu` are then null).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProbeResult {
    pub probe: String,
    pub phase: String,
    pub variant: Option<String>,
    pub thread: Option<usize>,
    pub cpu: Option<usize>,
    pub interval_ns: Nanos,
    pub samples: u64,
    /// Missed periods; 0 means "unknown" when `overruns_known` is false.
    pub overruns: u64,
    /// False when the source cannot count missed periods (imports of
    /// cyclictest, rtla, the rt-tests IPC tools, bins-csv): `overruns` is then
    /// unknown, not 0, and a deadline verdict cannot see that part of the
    /// misses. Absent (true) for rtscope's own runs.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub overruns_known: bool,
    pub min_ns: Nanos,
    pub max_ns: Nanos,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    /// Keys "50", "90", "99", "99.9", "99.99", "99.999" (`stats::PERCENTILES`).
    pub percentiles_ns: std::collections::BTreeMap<String, Nanos>,
    /// Non-empty buckets only; counts sum exactly to `samples`.
    pub histogram: Vec<Bucket>,
    /// Worst samples, largest first.
    pub worst: Vec<WorstSample>,
    pub per_second: Vec<SecondStats>,
    /// Width of one `per_second` slot, in seconds (1 unless the run is very long).
    #[serde(default = "one")]
    pub per_second_width_s: u64,
    /// The largest samples, exactly, for the statistical worst case (EVT);
    /// absent in files written before it existed.
    #[serde(default, skip_serializing_if = "Tail::is_empty")]
    pub tail: Tail,
    /// What a probe (or a source) adds beyond the distribution, serialised
    /// in place: its keys follow `tail` in this order, as they always have.
    #[serde(flatten)]
    pub extras: Extras,
}

/// The optional parts of a result entry: the statistics some probes add
/// (signed error, noise, operations, kernel tracer counts, interference,
/// runtime overruns, violations), page faults, a note, and whether the
/// source could count its samples. A probe fills them on its thread's
/// outcome, [`Extras::combine`] combines the threads' for the merged entry,
/// and the entry owns them ([`ProbeResult::extras`]): a new statistic is a
/// field here and its line in `combine`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Extras {
    /// For samples that are |x| of a signed quantity (the `periodic` probe's
    /// "PERIOD/period-error" entries): the signed min, max and mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed: Option<SignedStats>,
    /// For the `noise` probe: total noise time and the share of the CPU left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseStats>,
    /// For the `throughput` probe (Thread-Metric): operations completed per
    /// interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// What this entry means when the numbers alone could mislead (e.g. which
    /// scheduling policy the noise loop ran under and what that implies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Page faults of the measuring threads from the start barrier to their
    /// end (getrusage(RUSAGE_THREAD)); the merged entry sums its threads.
    /// Absent in imported results and in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// For the kernel-tracer probes (`timerlat`, `osnoise`, `hwlat`): what
    /// the tracer was set to and what it lost (never dropped silently).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<TracerStats>,
    /// For the `osnoise` probe: the interference the tracer counted, by class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
    /// The source could not know how many samples there were (an RTAI
    /// `display` log without its period): `samples` is a lower bound (one
    /// per window) and readers show the count as unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub samples_unknown: bool,
    /// Under `--policy deadline`: the periods in which the task used up its
    /// SCHED_DEADLINE runtime (the kernel's SIGXCPU, SCHED_FLAG_DL_OVERRUN);
    /// beside `overruns`, the periods missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_overruns: Option<u64>,
    /// For `timer` and `periodic` (native and agent): of `overruns`, the
    /// periods already due when the loop was about to sleep — it had no time
    /// to sleep, so there was no wake-up to measure (a "latency" of 0.1 µs
    /// would be the clock read, not the system). Counted as missed periods,
    /// never as samples; `samples + overruns` = periods still holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_starts: Option<u64>,
    /// For the `migrate` probe: the periods in which a higher-priority thread
    /// waited while a lower-priority one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<Violations>,
}

impl Extras {
    /// The extras of one variant's threads combined for its merged entry:
    /// statistics merge by their own rules, counts add, the first note is kept.
    pub fn combine(&self, o: &Extras) -> Extras {
        fn both<T: Copy>(a: Option<T>, b: Option<T>, f: impl Fn(T, T) -> T) -> Option<T> {
            match (a, b) {
                (Some(x), Some(y)) => Some(f(x, y)),
                (x, y) => x.or(y),
            }
        }
        fn both_ref<T: Clone>(a: &Option<T>, b: &Option<T>, f: impl Fn(&T, &T) -> T) -> Option<T> {
            match (a, b) {
                (Some(x), Some(y)) => Some(f(x, y)),
                (x, y) => x.clone().or_else(|| y.clone()),
            }
        }
        Extras {
            signed: both(self.signed, o.signed, |a, b| a.combine(b)),
            noise: both(self.noise, o.noise, |a, b| a.combine(b)),
            throughput: both_ref(&self.throughput, &o.throughput, Throughput::combine),
            note: self.note.clone().or_else(|| o.note.clone()),
            faults: Faults::sum(self.faults, o.faults),
            tracer: both_ref(&self.tracer, &o.tracer, TracerStats::combine),
            interference: both(self.interference, o.interference, |a, b| a.combine(b)),
            samples_unknown: self.samples_unknown || o.samples_unknown,
            runtime_overruns: both(self.runtime_overruns, o.runtime_overruns, |a, b| a + b),
            late_starts: both(self.late_starts, o.late_starts, |a, b| a + b),
            violations: both_ref(&self.violations, &o.violations, Violations::combine),
        }
    }
}

/// The `migrate` probe's priority-order violations (rt-migrate-test's
/// check): `count` periods, the first [`Violations::KEEP`] of them listed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Violations {
    /// Periods with at least one violation.
    pub count: u64,
    /// Periods checked.
    pub periods: u64,
    /// The allowed start difference (rt-migrate-test's `--maxerr`).
    pub max_err_ns: Nanos,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<Violation>,
}

impl Violations {
    /// At most this many violations are listed (all are counted).
    pub const KEEP: usize = 100;
    pub fn combine(&self, o: &Violations) -> Violations {
        let mut list = self.list.clone();
        list.extend(o.list.iter().cloned());
        list.sort_by_key(|v| v.at_ns.0);
        list.truncate(Self::KEEP);
        Violations { count: self.count + o.count, periods: self.periods.max(o.periods), max_err_ns: self.max_err_ns, list }
    }
}

/// One period in which the higher-priority thread `high_*` started `wait_ns`
/// after the lower-priority thread `low_*` had started running.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Violation {
    /// The period's release, from the probe's start.
    pub at_ns: Nanos,
    pub period: u64,
    pub high_priority: u8,
    pub high_cpu: Option<usize>,
    pub low_priority: u8,
    pub low_cpu: Option<usize>,
    pub wait_ns: Nanos,
}

/// The largest samples of one thread (or of the merged entry), kept exactly:
/// every sample greater than the smallest kept one is in `samples`. At most
/// `k` are kept; fewer than `k` means every sample of the entry is here.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Tail {
    /// Capacity the recorder used.
    pub k: usize,
    /// Largest first; each `[latency_ns, at_ns, seq, thread, cpu]`.
    pub samples: Vec<TailSample>,
}

impl Tail {
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// One tail sample, written as the JSON array
/// `[latency_ns, at_ns, seq, thread, cpu]` to keep 10 000 of them compact.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct TailSample(pub Nanos, pub Nanos, pub u64, pub usize, pub usize);

impl TailSample {
    pub fn latency(&self) -> Nanos {
        self.0
    }
    /// Time since the probe started.
    pub fn at(&self) -> Nanos {
        self.1
    }
    /// Sequence number within its thread.
    pub fn seq(&self) -> u64 {
        self.2
    }
    pub fn thread(&self) -> usize {
        self.3
    }
    pub fn cpu(&self) -> usize {
        self.4
    }
}

impl ProbeResult {
    /// The entry of `probe` in `phase` (`variant`; `thread` and `cpu` `None`
    /// for the merged entry) at `interval_ns`, with no samples yet: the
    /// caller fills what it measured.
    pub fn new(
        probe: impl Into<String>,
        phase: impl Into<String>,
        variant: Option<String>,
        thread: Option<usize>,
        cpu: Option<usize>,
        interval_ns: Nanos,
    ) -> ProbeResult {
        ProbeResult {
            probe: probe.into(),
            phase: phase.into(),
            variant,
            thread,
            cpu,
            interval_ns,
            samples: 0,
            overruns: 0,
            overruns_known: true,
            min_ns: Nanos(0),
            max_ns: Nanos(0),
            mean_ns: 0.0,
            stddev_ns: 0.0,
            percentiles_ns: std::collections::BTreeMap::new(),
            histogram: Vec::new(),
            worst: Vec::new(),
            per_second: Vec::new(),
            per_second_width_s: 1,
            tail: Tail::default(),
            extras: Extras::default(),
        }
    }

    /// False for imported summary-only results (rt-tests IPC tools, RTAI,
    /// ...): their `percentiles_ns` is empty although they have samples, and
    /// their histogram is one `[min, max]` bucket that must not be read as a
    /// distribution. Percentiles, KS tests and tail statistics need this true.
    pub fn distribution_known(&self) -> bool {
        self.samples == 0 || !self.percentiles_ns.is_empty()
    }

    /// Missed periods, `None` when the source cannot count them
    /// (see `overruns_known`): shown as "unknown", never as 0.
    pub fn known_overruns(&self) -> Option<u64> {
        self.overruns_known.then_some(self.overruns)
    }

    /// Periods the entry covered: samples + missed periods (a lower bound
    /// when the missed periods are unknown).
    pub fn periods(&self) -> u64 {
        self.samples.saturating_add(self.overruns)
    }

    /// The signed summary of an entry whose unsigned min/mean/max clamp
    /// negative latencies to 0 (see [`SignedStats::clamped`]).
    pub fn clamped(&self) -> Option<&SignedStats> {
        self.extras.signed.as_ref().filter(|s| s.clamped)
    }

    /// The min a reader should see, in ns: signed where the source had
    /// negative latencies, else `min_ns`.
    pub fn shown_min_ns(&self) -> f64 {
        self.clamped().map_or(self.min_ns.0 as f64, |s| s.min_ns as f64)
    }

    /// The standard deviation, `None` where the source did not give it
    /// (stored as 0, docs/schema.md "Imports"): a σ of 0 is only true when
    /// every sample is the same (min = max), so 0 beside a wider range is
    /// unknown, shown as unknown and never as `±0.0`.
    pub fn stddev(&self) -> Option<f64> {
        (self.stddev_ns > 0.0 || self.max_ns <= self.min_ns).then_some(self.stddev_ns)
    }

    /// The mean a reader should see, in ns (signed, as [`Self::shown_min_ns`]).
    pub fn shown_mean_ns(&self) -> f64 {
        self.clamped().map_or(self.mean_ns, |s| s.mean_ns)
    }
}

fn one() -> u64 {
    1
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One histogram bucket: every sample in `[lo_ns, hi_ns]` (both inclusive).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Bucket {
    pub lo_ns: Nanos,
    pub hi_ns: Nanos,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorstSample {
    pub latency_ns: Nanos,
    /// Time since the probe started, when the sample was taken.
    pub at_ns: Nanos,
    pub cpu: usize,
    /// Sequence number of the sample within its thread (0-based).
    pub seq: u64,
    /// Which measuring thread took it (useful in merged entries).
    #[serde(default)]
    pub thread: usize,
    /// What held the CPU from due time to wake-up (`--trace-threshold` snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceWindow>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct SecondStats {
    pub t_s: u64,
    pub count: u64,
    pub min_ns: Nanos,
    pub mean_ns: f64,
    pub max_ns: Nanos,
}
