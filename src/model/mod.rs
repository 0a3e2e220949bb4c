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
pub(crate) mod entries;
pub mod host;
pub mod invariants;
pub mod monitor;
pub mod phases;
pub mod plan;
pub mod result;
pub mod suites;
pub mod summaries;
pub mod trace;

pub use crate::units::Nanos;
pub use doctor::{Evidence, Finding, Severity};
pub use host::*;
pub(crate) use invariants::check_entry;
pub use invariants::MAX_STORED;
pub use monitor::*;
pub use phases::*;
pub use plan::*;
pub use result::*;
pub use summaries::*;
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
    /// Read whole, or entry by entry inside [`entries::read_entries`].
    #[serde(deserialize_with = "entries::results")]
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
    /// The target kernel's tick period (`hello tick_ns`), where the agent's
    /// port knows it: a clock this coarse is the tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ns: Option<Nanos>,
    /// What ends the agent's sleeps (`hello sleep`): `tick` (a wake-up
    /// waits for the kernel's tick), `timer` (a one-shot at the deadline);
    /// empty: not said.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sleep: String,
    /// `ok` or `failed:REASON`: whether the agent locked its memory.
    #[serde(default)]
    pub mlock: String,
    /// This host beside a target that runs on it (an `exec:` emulator, an
    /// agent started here): one record per phase. Empty for a target on
    /// another machine and in results written before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_beside: Vec<HostBeside>,
}

/// The host's CPUs over one phase of a target that runs on this host
/// (issue 49, item 2): other work beside an emulator takes the time the
/// emulated target's clock and interrupts run in, so a phase the target
/// calls idle was not idle here.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostBeside {
    pub phase: String,
    /// Wall time from the phase's first plan sent to its last result read.
    pub duration_ns: Nanos,
    /// The host's online CPUs.
    pub cpus: usize,
    /// Their busy time summed (/proc/stat: all but idle and iowait).
    pub busy_ns: Nanos,
    /// rtscope's own threads (getrusage RUSAGE_SELF).
    pub rtscope_cpu_ns: Nanos,
    /// The target's processes: the exec command's process group (its
    /// shell, the emulator, their helpers; /proc/PID/stat).
    pub target_cpu_ns: Nanos,
}

impl HostBeside {
    /// The share of the host's CPU time, from 0 to 1, that work other than
    /// rtscope and the target took over the phase; None without CPUs or
    /// for a phase shorter than [`MIN_CHECKED_NS`]. Busy time counts in
    /// ticks of USER_HZ and the target's time leaves out its processes that ended unreaped in the phase: an
    /// estimate good to a few ticks, not a measurement.
    pub fn others_share(&self) -> Option<f64> {
        phases::others_share(self.busy_ns.0, self.rtscope_cpu_ns.0.saturating_add(self.target_cpu_ns.0), self.duration_ns.0, self.cpus)
    }
}

fn finished() -> bool {
    true
}

fn is_finished(complete: &bool) -> bool {
    *complete
}

/// A system's real-time kind in one word, as history's RT column and the
/// report's host line say it: `yes` where the host said it runs PREEMPT_RT,
/// `no` where it said not (a native or agent run, an import whose tool
/// reports the kernel's preemption model); `co-kernel` for RTAI and Xenomai
/// results (real-time by construction, whatever the Linux kernel beside
/// them); `unknown` for an import whose tool does not say. `imported_by`:
/// the import's format or tool name, None for rtscope's own runs.
pub fn realtime_word(realtime: bool, imported_by: Option<&str>, preempt: &str) -> &'static str {
    match imported_by {
        _ if realtime => "yes",
        Some(by) if by.contains("xenomai") || by.contains("rtai") => "co-kernel",
        Some(_) if preempt.is_empty() || preempt == "unknown" => "unknown",
        _ => "no",
    }
}

/// Real-time operating systems an agent may name in its `hello os`
/// (issue 64): a run on one is real-time by kind, and every RT column says
/// "RTOS".
pub const RTOS_NAMES: [&str; 8] = ["NuttX", "RTEMS", "Zephyr", "QNX", "VxWorks", "FreeRTOS", "ThreadX", "PikeOS"];

/// Whether `os` (an agent's `hello os`, or a system name that starts with
/// it: "NuttX 12.4.0") is a known RTOS.
pub fn is_rtos(os: &str) -> bool {
    RTOS_NAMES.iter().any(|k| os.starts_with(k))
}

/// A run's real-time word as the history lists say it (`history`'s RT
/// column, `serve`'s runs list and comparison): "RTOS" for a run an agent
/// measured on a known RTOS (`system`: its system's name, "NuttX 12.4.0",
/// which leads the history's kernel column), else [`realtime_word`]
/// (`source`: "native", "rtscope-agent" or the importer's format).
pub fn listed_realtime_word(source: &str, system: &str, realtime: bool, preempt: &str) -> &'static str {
    if source == "rtscope-agent" && is_rtos(system) {
        return "RTOS";
    }
    let imported = source != "native" && source != "rtscope-agent";
    realtime_word(realtime, imported.then_some(source), preempt)
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
    pub fn by_agent(command_line: Vec<String>, mut host: Host, plan: Plan, calibration: Calibration, started_at: String, agent: AgentRecord) -> Run {
        if agent.transport == "exec" {
            host.set_emulated(host::exec_emulation(agent.target.strip_prefix("exec:").unwrap_or(&agent.target)));
        }
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
                steps: vec![SetupStep::skipped("import", format!("real-time set-up of the source run is not recorded by {}", tool.name))],
            },
            calibration: Calibration { clock_read_ns: Nanos(0), clock_read_min_ns: Nanos(0), clock: format!("unknown (imported from {named})") },
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
