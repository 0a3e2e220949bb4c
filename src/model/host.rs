//! Where and how a run ran: the host fingerprint ([`Host`]), the real-time
//! set-up steps ([`RealtimeSetup`], [`SetupStep`]) and the clock
//! [`Calibration`].

use serde::{Deserialize, Serialize};

use super::*;

impl Calibration {
    /// The measured cost of a clock read (median and smallest) of `clock`.
    pub fn new(clock_read_ns: Nanos, clock_read_min_ns: Nanos, clock: impl Into<String>) -> Calibration {
        Calibration { clock_read_ns, clock_read_min_ns, clock: clock.into() }
    }
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
    /// Ran under an instruction-set emulator (QEMU TCG): the figures rank
    /// kernels on the emulator, they are not the latencies of a board.
    /// Absent (false) in results written before rtscope said it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulated: bool,
    /// Why `emulated` is true (the evidence read), empty when it is false.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub emulated_by: String,
    /// `rtscope doctor` findings for the measured CPUs (docs/schema.md, "doctor").
    #[serde(default)]
    pub doctor: Vec<Finding>,
}

impl Host {
    /// Mark the host as emulated, `by` saying how it is known.
    pub fn set_emulated(&mut self, by: Option<String>) {
        if let Some(by) = by {
            self.emulated = true;
            self.virtualized = true;
            self.emulated_by = by;
        }
    }
}

/// A target reached by running `command` (`--target exec:COMMAND`) is
/// emulated when the command boots QEMU without a hardware accelerator:
/// `qemu-system-*` or the kernel lab (`lab/kernel-lab`, whose default is
/// TCG) with no `-enable-kvm` / `-accel kvm|hvf|whpx` / `--accel kvm`.
/// Returns the evidence, or None.
pub fn exec_emulation(command: &str) -> Option<String> {
    let words: Vec<&str> = command_words(command).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let runner = words.iter().map(|w| base(w)).find(|b| b.starts_with("qemu-system-") || b == "kernel-lab")?;
    let hw = ["kvm", "hvf", "whpx", "xen", "nvmm"];
    let accel_hw = |v: &str| v.split([',', '=', ':']).any(|p| hw.contains(&p));
    let accelerated = words.iter().enumerate().any(|(i, w)| {
        *w == "-enable-kvm"
            || *w == "--enable-kvm"
            || (matches!(*w, "-accel" | "--accel" | "-machine" | "-M") && words.get(i + 1).is_some_and(|v| accel_hw(v)))
            || w.strip_prefix("--accel=").is_some_and(accel_hw)
            || (w.contains("accel=") && accel_hw(w))
    });
    (!accelerated).then(|| format!("the target command runs {runner} without a hardware accelerator (QEMU TCG)"))
}

/// Whether the exec target's `command` runs its emulator on a virtual
/// clock that counts instructions (QEMU `-icount`, the kernel lab's
/// `--icount`): the guest's latencies are then its own code paths, whatever
/// the host's load (docs/kernel-lab.md, "Two clocks").
pub fn exec_virtual_clock(command: &str) -> bool {
    command_words(command).any(|w| w == "--icount" || w == "-icount" || w.starts_with("--icount=") || w.starts_with("-icount="))
}

/// The words of an exec target's shell command, quotes dropped.
fn command_words(command: &str) -> impl Iterator<Item = &str> {
    command.split(|c: char| c.is_whitespace() || c == '\'' || c == '"').filter(|w| !w.is_empty())
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
    /// `probe:variant` of an agent's failed step `refused[probe:variant]`:
    /// a variant it refused at run time, its siblings measured
    /// (docs/agent.md, "Variants refused at run time"). Not a set-up of the
    /// measuring threads: the run stays real-time.
    pub fn refused_variant(&self) -> Option<&str> {
        if self.outcome != Outcome::Failed {
            return None;
        }
        self.step.strip_prefix("refused[")?.strip_suffix(']').filter(|w| w.contains(':'))
    }
}

impl RealtimeSetup {
    /// The set-up as the steps went: real-time when none failed.
    pub fn from_steps(steps: Vec<SetupStep>) -> RealtimeSetup {
        RealtimeSetup { ok: !steps.iter().any(|s| s.outcome == Outcome::Failed && s.refused_variant().is_none()), steps }
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
