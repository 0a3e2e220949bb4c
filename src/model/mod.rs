//! The result model: what one `rtscope run` produced, as serde types.
//!
//! This is schema v1, documented field by field in `docs/schema.md`. Every
//! other part of rtscope (store, analysis, reports, importers) reads these
//! types, never the probes' internals. Latencies are [`Nanos`] (`u64`
//! nanoseconds) everywhere; there is no global µs/ns switch as in cyclictest.
//!
//! Rule: fields may be added freely (readers use `#[serde(default)]`);
//! renaming or changing the meaning of one bumps [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};

/// The version of the JSON result schema written by this build.
pub const SCHEMA_VERSION: u32 = 1;

pub mod doctor;
pub mod suites;
pub mod trace;

pub use crate::units::Nanos;
pub use doctor::{Evidence, Finding, Severity};
pub use trace::{Culprit, TracePlan, TraceSummary, TraceWindow};

/// One complete run: what was asked (plan), where (host), how the real-time
/// set-up went, and every probe's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Run {
    pub schema_version: u32,
    pub tool: Tool,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub finished_at: String,
    /// True when SIGINT/SIGTERM ended the run early; results hold what was taken.
    pub interrupted: bool,
    /// Phase the run was in when interrupted, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_in: Option<String>,
    /// `false` in every write made while the run still measures; the last
    /// write leaves it out (absent = finished). A file that still says
    /// `false` comes from a run that was killed (SIGKILL, a crash, power
    /// loss): it holds only the probe runs written before that.
    #[serde(default = "finished", skip_serializing_if = "is_finished")]
    pub complete: bool,
    pub command_line: Vec<String>,
    pub host: Host,
    pub plan: Plan,
    pub realtime_setup: RealtimeSetup,
    pub calibration: Calibration,
    #[serde(default)]
    pub warnings: Vec<String>,
    pub results: Vec<ProbeResult>,
    /// What threshold tracing did (absent when it was not asked for or not available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
    /// One entry per load phase run (or started), in order: its loads, their
    /// exact commands and the evidence that they ran. See docs/schema.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseRecord>,
    /// The scenario file or preset the run came from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioRecord>,
    /// Set for `rtscope monitor` runs: how the windows were cut and where
    /// they are (the history's `windows` table, under `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<MonitorRecord>,
    /// Set when `rtscope import` converted this run from another tool's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<ImportedFrom>,
    /// What the source could not give, in words: resolution, truncation,
    /// estimated fields ("summary only: percentiles unknown", ...). Empty for
    /// native runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity: Vec<String>,
    /// Set when rtscope-agent measured the run on another system
    /// (`rtscope run --target`): which agent, over which transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRecord>,
}

/// Who measured a `--target` run: the agent's announcement and the way
/// rtscope reached it (docs/agent.md, docs/schema.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentRecord {
    /// The agent's version (`hello agent=`).
    pub version: String,
    /// The line protocol's version (1).
    pub protocol: u32,
    /// exec, tcp or serial.
    pub transport: String,
    /// The `--target` as given (`exec:./rtscope-agent`, `tcp:board:5927`, ...).
    pub target: String,
    /// The target's uname sysname and machine (`Linux`, `aarch64`).
    pub os: String,
    pub arch: String,
    /// The clock the agent measures with and its resolution (clock_getres).
    pub clock: String,
    pub clock_resolution_ns: Nanos,
    /// `ok` or `failed:REASON`: whether the agent locked its memory.
    #[serde(default)]
    pub mlock: String,
}

/// The largest value a count or time may have: the history database
/// stores them as signed 64-bit integers (292 years in ns).
pub const MAX_STORED: u64 = i64::MAX as u64;

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

impl Run {
    /// The invariants docs/schema.md states for every result entry: counts
    /// and times fit the history's 64-bit integers, `min_ns ≤ max_ns`
    /// when there are samples, histogram buckets have `lo ≤ hi` and ascend
    /// without overlap, and — for rtscope's own runs — the buckets hold
    /// every sample. The error names the field (`results[3].min_ns`) and
    /// what is wrong.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, r) in self.results.iter().enumerate() {
            let at = |f: &str| format!("results[{i}].{f}");
            for (f, v) in [("samples", r.samples), ("overruns", r.overruns), ("min_ns", r.min_ns.0), ("max_ns", r.max_ns.0)] {
                if v > MAX_STORED {
                    return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", at(f)));
                }
            }
            if let Some(t) = &r.throughput {
                let most = t.per_interval.iter().copied().max().unwrap_or(0);
                for (f, v) in [("throughput.ops", t.ops), ("throughput.interval_ns", t.interval_ns.0), ("throughput.per_interval[]", most)] {
                    if v > MAX_STORED {
                        return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", at(f)));
                    }
                }
            }
            if r.samples > 0 && r.min_ns > r.max_ns {
                return Err(format!("{} {} is above max_ns {}", at("min_ns"), r.min_ns.0, r.max_ns.0));
            }
            let mut prev_hi: Option<u64> = None;
            let mut total: u64 = 0;
            for (k, b) in r.histogram.iter().enumerate() {
                let bf = |f: &str| format!("{}[{k}].{f}", at("histogram"));
                for (f, v) in [("lo_ns", b.lo_ns.0), ("hi_ns", b.hi_ns.0), ("count", b.count)] {
                    if v > MAX_STORED {
                        return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", bf(f)));
                    }
                }
                if b.lo_ns > b.hi_ns {
                    return Err(format!("{} {} is above hi_ns {} (a reversed bucket)", bf("lo_ns"), b.lo_ns.0, b.hi_ns.0));
                }
                if prev_hi.is_some_and(|h| b.lo_ns.0 < h) {
                    return Err(format!("{} {} overlaps the bucket before it (buckets ascend)", bf("lo_ns"), b.lo_ns.0));
                }
                prev_hi = Some(b.hi_ns.0);
                total = total.saturating_add(b.count);
            }
            if self.imported_from.is_none() && !r.histogram.is_empty() && total != r.samples {
                return Err(format!("{} hold {total} samples but {} is {}", at("histogram"), at("samples"), r.samples));
            }
        }
        Ok(())
    }
}

fn finished() -> bool {
    true
}

fn is_finished(complete: &bool) -> bool {
    *complete
}

impl Run {
    /// A run of this build of rtscope, started at `started_at` (RFC 3339):
    /// no results, phases or warnings yet, not interrupted, its set-up not
    /// done yet (the runner fills them as the run goes).
    pub fn native(command_line: Vec<String>, host: Host, plan: Plan, calibration: Calibration, started_at: String) -> Run {
        Run {
            schema_version: SCHEMA_VERSION,
            tool: Tool { name: "rtscope".into(), version: env!("CARGO_PKG_VERSION").into() },
            finished_at: started_at.clone(),
            started_at,
            interrupted: false,
            interrupted_in: None,
            complete: true,
            command_line,
            host,
            plan,
            realtime_setup: RealtimeSetup::default(),
            calibration,
            warnings: Vec::new(),
            results: Vec::new(),
            trace: None,
            phases: Vec::new(),
            scenario: None,
            monitor: None,
            imported_from: None,
            fidelity: Vec::new(),
            agent: None,
        }
    }

    /// A run measured by rtscope-agent on another system: as [`Run::native`]
    /// (this rtscope drove it and keeps it), `host` the target's fingerprint,
    /// `agent` who measured and how it was reached.
    pub fn by_agent(command_line: Vec<String>, host: Host, plan: Plan, calibration: Calibration, started_at: String, agent: AgentRecord) -> Run {
        Run { agent: Some(agent), ..Run::native(command_line, host, plan, calibration, started_at) }
    }

    /// Who measured it, as the history's `source` column says for a run of
    /// rtscope's own format: "rtscope-agent" when the agent did (on another
    /// system), "native" when this rtscope did. Imports name their format.
    pub fn source(&self) -> &'static str {
        if self.agent.is_some() {
            "rtscope-agent"
        } else {
            "native"
        }
    }

    /// A run converted from another tool's output (`tool`, the file in
    /// `from`). Its real-time set-up and clock are not known: the set-up is one
    /// skipped step saying so and the calibration is 0 ns of an unknown clock.
    pub fn imported(tool: Tool, from: ImportedFrom, host: Host, plan: Plan, results: Vec<ProbeResult>, times: (String, String)) -> Run {
        let (started_at, finished_at) = times;
        let named = if tool.version.is_empty() { tool.name.clone() } else { format!("{} {}", tool.name, tool.version) };
        Run {
            schema_version: SCHEMA_VERSION,
            realtime_setup: RealtimeSetup {
                ok: false,
                steps: vec![SetupStep::skipped(
                    "import",
                    format!("real-time set-up of the source run is not recorded by {}", tool.name),
                )],
            },
            calibration: Calibration {
                clock_read_ns: Nanos(0),
                clock_read_min_ns: Nanos(0),
                clock: format!("unknown (imported from {named})"),
            },
            started_at,
            finished_at,
            interrupted: false,
            interrupted_in: None,
            complete: true,
            command_line: Vec::new(),
            host,
            plan,
            warnings: Vec::new(),
            results,
            trace: None,
            phases: Vec::new(),
            scenario: None,
            monitor: None,
            imported_from: Some(from),
            fidelity: Vec::new(),
            agent: None,
            tool,
        }
    }
}

impl Tool {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Tool {
        Tool { name: name.into(), version: version.into() }
    }
}

impl Calibration {
    /// The measured cost of a clock read (median and smallest) of `clock`.
    pub fn new(clock_read_ns: Nanos, clock_read_min_ns: Nanos, clock: impl Into<String>) -> Calibration {
        Calibration { clock_read_ns, clock_read_min_ns, clock: clock.into() }
    }
}

impl Plan {
    /// A plan of `probes` over load `phases`, each probe run measuring for
    /// `duration_ns` at `interval_ns`. What it does not say is unknown: no
    /// priority (0), policy "unknown", no threads or CPUs, no DMA latency
    /// hold, no worst samples, no tracing, default probe options — set the
    /// fields the plan knows.
    pub fn new(probes: Vec<String>, phases: Vec<String>, duration_ns: Nanos, interval_ns: Nanos) -> Plan {
        Plan {
            probes,
            phases,
            duration_ns,
            interval_ns,
            priority: 0,
            policy: "unknown".into(),
            threads: 0,
            cpus: Vec::new(),
            dma_latency: false,
            worst_k: 0,
            trace: None,
            probe_options: ProbeOptions::default(),
        }
    }
}

/// Where an imported run came from (see `src/import/`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ImportedFrom {
    /// Importer format name, e.g. "cyclictest-json", "bins-csv".
    pub format: String,
    /// The tool that wrote the file, with its version when the file says it.
    pub tool: String,
    /// SHA-256 of the imported file's bytes, lowercase hex.
    pub file_sha256: String,
    /// The file name as given to `rtscope import`.
    #[serde(default)]
    pub file: String,
    /// The system the numbers belong to (`--name`, a bins-csv column, or the host name in the file).
    #[serde(default)]
    pub system: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// The host fingerprint stored with every run (rule 6: any two results can be
/// compared, any result can be rerun).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    /// PREEMPT_RT kernel: /sys/kernel/realtime == 1 or "PREEMPT_RT" in uname -v.
    pub realtime: bool,
    /// none / voluntary / full / lazy / rt / unknown.
    pub preempt_model: String,
    /// Where `preempt_model` was read from.
    #[serde(default)]
    pub preempt_model_source: String,
    pub cmdline: String,
    pub cpu_model: String,
    pub cpus_online: Vec<usize>,
    pub isolcpus: String,
    pub nohz_full: String,
    pub clocksource: String,
    /// cpufreq governor per CPU ("" where cpufreq is not exposed).
    pub governors: Vec<CpuValue>,
    pub cpuidle_states: Vec<IdleState>,
    /// "on", "off", "forceoff", "notsupported" or "unknown".
    pub smt: String,
    #[serde(default)]
    pub virtualized: bool,
    /// `rtscope doctor` findings for the measured CPUs (docs/schema.md, "doctor").
    #[serde(default)]
    pub doctor: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuValue {
    pub cpu: usize,
    pub value: String,
}

/// One cpuidle state (as seen on CPU 0; states are uniform in practice).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IdleState {
    pub name: String,
    pub exit_latency_us: u64,
    pub disabled: bool,
}

/// Everything needed to rerun the experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Plan {
    pub probes: Vec<String>,
    pub phases: Vec<String>,
    pub duration_ns: Nanos,
    pub interval_ns: Nanos,
    pub priority: u8,
    /// fifo / rr / other.
    pub policy: String,
    pub threads: usize,
    /// CPUs the measuring threads are pinned to, round-robin.
    pub cpus: Vec<usize>,
    pub dma_latency: bool,
    pub worst_k: usize,
    /// `--trace-threshold` / `--trace-buffer` / `--trace-max`, when tracing was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TracePlan>,
    /// Probe-specific options (absent in files written before they existed).
    #[serde(default)]
    pub probe_options: ProbeOptions,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RealtimeSetup {
    /// True when every step succeeded: the run is real-time.
    pub ok: bool,
    pub steps: Vec<SetupStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupStep {
    /// e.g. "mlockall", "cpu_dma_latency", "sched_fifo[thread 0]", "affinity[thread 0]".
    pub step: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// How one set-up step went; written "ok", "failed", "skipped".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Failed,
    Skipped,
}

impl SetupStep {
    pub fn new(step: impl Into<String>, outcome: Outcome, detail: impl Into<String>) -> SetupStep {
        SetupStep { step: step.into(), outcome, detail: detail.into() }
    }
    pub fn ok(step: impl Into<String>, detail: impl Into<String>) -> SetupStep {
        SetupStep::new(step, Outcome::Ok, detail)
    }
    pub fn failed(step: impl Into<String>, detail: impl Into<String>) -> SetupStep {
        SetupStep::new(step, Outcome::Failed, detail)
    }
    pub fn skipped(step: impl Into<String>, detail: impl Into<String>) -> SetupStep {
        SetupStep::new(step, Outcome::Skipped, detail)
    }
}

impl RealtimeSetup {
    /// The set-up as the steps went: real-time when none failed.
    pub fn from_steps(steps: Vec<SetupStep>) -> RealtimeSetup {
        RealtimeSetup { ok: !steps.iter().any(|s| s.outcome == Outcome::Failed), steps }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// Median cost of one clock_gettime(CLOCK_MONOTONIC) read.
    pub clock_read_ns: Nanos,
    /// Smallest observed cost of one read.
    #[serde(default)]
    pub clock_read_min_ns: Nanos,
    pub clock: String,
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
    /// For the `migrate` probe: the periods in which a higher-priority thread
    /// waited while a lower-priority one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violations: Option<Violations>,
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
    pub fn merge(&self, o: &Violations) -> Violations {
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
            signed: None,
            noise: None,
            throughput: None,
            note: None,
            faults: None,
            tracer: None,
            interference: None,
            samples_unknown: false,
            runtime_overruns: None,
            violations: None,
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
        self.signed.as_ref().filter(|s| s.clamped)
    }

    /// The min a reader should see, in ns: signed where the source had
    /// negative latencies, else `min_ns`.
    pub fn shown_min_ns(&self) -> f64 {
        self.clamped().map_or(self.min_ns.0 as f64, |s| s.min_ns as f64)
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

fn is_zero(n: &Nanos) -> bool {
    n.0 == 0
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

/// One load phase as it ran: when, which loads, and what they did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseRecord {
    pub name: String,
    /// RFC 3339, UTC: when the loads were started.
    pub started_at: String,
    /// RFC 3339, UTC: when the loads were stopped ("" while running).
    #[serde(default)]
    pub finished_at: String,
    /// How long the loads ran before the first probe started.
    pub settle_ns: Nanos,
    /// Every load of the phase (empty for `idle`).
    #[serde(default)]
    pub loads: Vec<LoadRecord>,
    /// System-wide counters over the phase, loads start → loads stop.
    #[serde(default)]
    pub system: SystemEvidence,
    /// False until the loads were stopped and their evidence recorded.
    #[serde(default)]
    pub complete: bool,
}

/// One load of a phase: what was started and the evidence that it ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadRecord {
    /// cpu, memory, io, net, irq, sched, or cmd.
    pub name: String,
    /// builtin, stress-ng or cmd.
    pub engine: String,
    /// The exact command lines started (argv, joined shell-style).
    pub commands: Vec<String>,
    /// CPUs the load was placed on.
    #[serde(default)]
    pub cpus: Vec<usize>,
    pub workers: usize,
    /// Process id of the load process (also its process-group id).
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub evidence: LoadEvidence,
}

/// What the kernel accounted to a load's processes (wait4 rusage of the load
/// process, including every child it reaped) plus the counters the built-in
/// generators keep.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadEvidence {
    /// User + system CPU seconds consumed by the load.
    pub cpu_s: f64,
    pub voluntary_ctxt_switches: u64,
    pub involuntary_ctxt_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Bytes the load wrote to storage (rusage blocks out × 512).
    pub storage_bytes_written: u64,
    /// Counters of the built-in generators (e.g. bytes_written, fsyncs,
    /// packets_sent, messages, wakeups, ops); empty for external commands.
    #[serde(default)]
    pub counters: std::collections::BTreeMap<String, u64>,
    /// How the load process ended: "exit 0", "killed by signal 9", ...
    #[serde(default)]
    pub exit: String,
}

/// System-wide deltas over a phase (from /proc/stat, /proc/vmstat and
/// /sys/class/net/lo/statistics).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SystemEvidence {
    pub duration_ns: Nanos,
    pub interrupts: u64,
    pub context_switches: u64,
    pub page_faults: u64,
    pub loopback_tx_packets: u64,
    pub loopback_tx_bytes: u64,
}

/// Where the experiment's plan came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScenarioRecord {
    /// The scenario's name (a preset's name, or the file's `name`).
    pub name: String,
    /// "preset" or the scenario file's path.
    pub source: String,
    /// The exact scenario text the run followed (TOML).
    pub text: String,
    #[serde(default)]
    pub tags: std::collections::BTreeMap<String, String>,
}

/// What a monitor run was: its windows are rows of the history's
/// `windows` table under `id`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MonitorRecord {
    /// Unique per monitor run: "HOST/STARTED_AT/PID".
    pub id: String,
    pub window_ns: Nanos,
    /// Phase cycle as given (`idle:5m`, ...); empty: one phase throughout.
    #[serde(default)]
    pub cycle: Vec<String>,
    /// Windows closed (and stored).
    pub windows: u64,
}

/// One closed window of a monitor run, for one probe/variant/thread (or
/// merged over threads: `thread` and `cpu` null).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Window {
    /// 0, 1, ... in the order the windows closed.
    pub index: u64,
    /// RFC 3339, UTC: when the window's measurement started.
    pub started_at: String,
    pub duration_ns: Nanos,
    pub phase: String,
    pub probe: String,
    pub variant: Option<String>,
    pub thread: Option<usize>,
    pub cpu: Option<usize>,
    pub samples: u64,
    pub overruns: u64,
    pub min_ns: Nanos,
    pub p50_ns: Nanos,
    pub p99_ns: Nanos,
    pub max_ns: Nanos,
    pub sum_ns: f64,
    /// The window's histogram (for Prometheus' buckets); not stored.
    #[serde(skip)]
    pub histogram: Vec<Bucket>,
}

/// Signed summary of an entry whose unsigned fields cannot carry the sign:
/// either its histogram holds magnitudes (the period error: actual
/// start-to-start interval minus the nominal one), or (`clamped`) an
/// imported source had negative latencies (early wake-ups in Xenomai,
/// RTAI) that the unsigned min/mean/max clamp to 0.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct SignedStats {
    pub samples: u64,
    pub min_ns: i64,
    pub max_ns: i64,
    pub mean_ns: f64,
    /// True: the entry's `min_ns`/`mean_ns`/`max_ns` are these values
    /// clamped at 0, so readers show these instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clamped: bool,
}

impl SignedStats {
    /// Combine two summaries exactly (mean weighted by samples).
    pub fn merge(self, o: SignedStats) -> SignedStats {
        if self.samples == 0 {
            return o;
        }
        if o.samples == 0 {
            return self;
        }
        let n = self.samples + o.samples;
        SignedStats {
            samples: n,
            min_ns: self.min_ns.min(o.min_ns),
            max_ns: self.max_ns.max(o.max_ns),
            mean_ns: (self.mean_ns * self.samples as f64 + o.mean_ns * o.samples as f64) / n as f64,
            clamped: self.clamped || o.clamped,
        }
    }
}

/// A kernel tracer run behind a probe entry: the tracer, where it ran (a
/// tracefs instance of rtscope's own, or the top level for `hwlat`, which
/// the kernel allows nowhere else), the settings rtscope wrote, and what the
/// ring buffer lost. `lost_events` counts the `[LOST N EVENTS]` the reader
/// was told of, `overrun` the ring buffer's own overrun counter of the
/// measured CPUs (per_cpu/cpuN/stats), `missing` the samples whose
/// activation number never arrived (timerlat numbers each CPU's
/// activations). The merged entry sums them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TracerStats {
    pub tracer: String,
    pub instance: String,
    pub settings: std::collections::BTreeMap<String, String>,
    pub lost_events: u64,
    pub overrun: u64,
    pub missing: u64,
}

impl TracerStats {
    pub fn merge(&self, o: &TracerStats) -> TracerStats {
        TracerStats {
            lost_events: self.lost_events + o.lost_events,
            overrun: self.overrun + o.overrun,
            missing: self.missing + o.missing,
            ..self.clone()
        }
    }
}

/// The osnoise tracer's interference counters, summed over the periods of
/// an entry: hardware noise (a gap with nothing the kernel can name: SMIs,
/// the hypervisor), NMIs, IRQs, softirqs and threads that ran on the CPU.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Interference {
    pub hw: u64,
    pub nmi: u64,
    pub irq: u64,
    pub softirq: u64,
    pub thread: u64,
}

impl Interference {
    pub fn merge(self, o: Interference) -> Interference {
        Interference {
            hw: self.hw + o.hw,
            nmi: self.nmi + o.nmi,
            irq: self.irq + o.irq,
            softirq: self.softirq + o.softirq,
            thread: self.thread + o.thread,
        }
    }
}

/// Page faults taken by measuring threads while they measured: minor (the
/// page was in memory but not mapped) and major (it had to be read from
/// disk). Both are 0 when every page the loop touches was resident and
/// locked before the start barrier.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Faults {
    pub minor: u64,
    pub major: u64,
}

impl Faults {
    pub fn merge(self, o: Faults) -> Faults {
        Faults { minor: self.minor + o.minor, major: self.major + o.major }
    }
    /// The sum of two threads' counts; a thread without counts adds nothing.
    pub fn sum(a: Option<Faults>, b: Option<Faults>) -> Option<Faults> {
        match (a, b) {
            (Some(x), Some(y)) => Some(x.merge(y)),
            (x, y) => x.or(y),
        }
    }
}

/// OS-noise totals of the `noise` probe: every gap above `threshold_ns`
/// between two consecutive clock reads of the busy loop is a sample.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct NoiseStats {
    pub threshold_ns: Nanos,
    /// Wall time the busy loop(s) ran, summed over threads.
    pub loop_ns: Nanos,
    /// Sum of all gaps above the threshold, summed over threads.
    pub total_noise_ns: Nanos,
    /// 100 × (1 − total_noise / loop time).
    pub available_pct: f64,
}

impl NoiseStats {
    pub fn new(threshold_ns: u64, loop_ns: u64, total_noise_ns: u64) -> NoiseStats {
        let available_pct = if loop_ns == 0 { 0.0 } else { 100.0 * (1.0 - total_noise_ns as f64 / loop_ns as f64) };
        NoiseStats { threshold_ns: Nanos(threshold_ns), loop_ns: Nanos(loop_ns), total_noise_ns: Nanos(total_noise_ns), available_pct }
    }
    pub fn merge(self, o: NoiseStats) -> NoiseStats {
        NoiseStats::new(self.threshold_ns.0, self.loop_ns.0 + o.loop_ns.0, self.total_noise_ns.0 + o.total_noise_ns.0)
    }
}

/// Operations counted by the `throughput` probe (Thread-Metric's result):
/// `per_interval[k]` ops completed in the k-th interval of `interval_ns`;
/// `ops` is their sum (only whole intervals count).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    pub ops: u64,
    pub interval_ns: Nanos,
    pub per_interval: Vec<u64>,
}

impl Throughput {
    /// Mean ops per interval (0 without intervals).
    pub fn mean(&self) -> f64 {
        if self.per_interval.is_empty() {
            0.0
        } else {
            self.ops as f64 / self.per_interval.len() as f64
        }
    }
    /// (max − min) / mean of the per-interval counts, in % (Thread-Metric's
    /// check that intervals agree); 0 with fewer than two intervals.
    pub fn spread_pct(&self) -> f64 {
        let m = self.mean();
        match (self.per_interval.iter().max(), self.per_interval.iter().min()) {
            (Some(&hi), Some(&lo)) if self.per_interval.len() > 1 && m > 0.0 => 100.0 * (hi - lo) as f64 / m,
            _ => 0.0,
        }
    }
    /// Ops per second over the whole intervals (what compares across
    /// interval lengths); `None` without intervals.
    pub fn ops_per_s(&self) -> Option<f64> {
        let secs = self.per_interval.len() as f64 * self.interval_ns.as_secs_f64();
        (secs > 0.0).then(|| self.ops as f64 / secs)
    }
    /// Sum of two threads' counts, interval by interval.
    pub fn merge(&self, o: &Throughput) -> Throughput {
        let n = self.per_interval.len().max(o.per_interval.len());
        let per_interval: Vec<u64> =
            (0..n).map(|k| self.per_interval.get(k).copied().unwrap_or(0) + o.per_interval.get(k).copied().unwrap_or(0)).collect();
        Throughput { ops: self.ops + o.ops, interval_ns: self.interval_ns, per_interval }
    }
}

/// Probe-specific options of the plan (`rtscope run` flags of `ProbeOpts`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProbeOptions {
    /// Variants chosen per probe with `--probe NAME:VARIANT`; a probe absent
    /// here runs every variant.
    #[serde(default)]
    pub variants: std::collections::BTreeMap<String, Vec<String>>,
    /// `--periods` as given (empty: each probe's default).
    #[serde(default)]
    pub periods_ns: Vec<Nanos>,
    #[serde(default)]
    pub msg_size: usize,
    #[serde(default)]
    pub noise_threshold_ns: Nanos,
    /// other / fifo / rr.
    #[serde(default)]
    pub noise_policy: String,
    /// `--iterations`: events per variant (0: until the duration ends).
    #[serde(default)]
    pub iterations: u64,
    #[serde(default)]
    pub back_to_back: bool,
    /// `--sender-priority` (0: one below the plan's priority).
    #[serde(default)]
    pub sender_priority: u8,
    /// `--pi-burst`: the `pi` probe's medium-priority burst (0 in files
    /// written before it existed, and then not written back).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pi_burst_ns: Nanos,
    /// `--tm-interval`: the `throughput` probe's counting interval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tm_interval_ns: Nanos,
    /// `--policy deadline`: `--dl-runtime` and `--dl-deadline` as given
    /// (absent: the defaults, 60 % of the deadline and the period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_runtime_ns: Option<Nanos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_deadline_ns: Option<Nanos>,
    /// `signal:chain`: threads in the chain (0 in files before it existed).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub chain: usize,
    /// `migrate`: busy time per period, pause between periods, allowed
    /// start difference (0 in files before they existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migrate_run_ns: Nanos,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migrate_sleep_ns: Nanos,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub migrate_max_err_ns: Nanos,
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod probe_extra_tests {
    use super::*;

    #[test]
    fn signed_stats_merge_weights_the_mean() {
        let a = SignedStats { samples: 3, min_ns: -5, max_ns: 7, mean_ns: 1.0, clamped: false };
        let b = SignedStats { samples: 1, min_ns: -9, max_ns: 2, mean_ns: -3.0, clamped: false };
        let m = a.merge(b);
        assert_eq!((m.samples, m.min_ns, m.max_ns), (4, -9, 7));
        assert!((m.mean_ns - 0.0).abs() < 1e-9);
        let empty = SignedStats { samples: 0, min_ns: 0, max_ns: 0, mean_ns: 0.0, clamped: false };
        assert_eq!(empty.merge(b), b);
    }

    #[test]
    fn noise_available_share() {
        let n = NoiseStats::new(1000, 1_000_000_000, 50_000_000).merge(NoiseStats::new(1000, 1_000_000_000, 0));
        assert_eq!(n.total_noise_ns, Nanos(50_000_000));
        assert!((n.available_pct - 97.5).abs() < 1e-9);
    }
}
