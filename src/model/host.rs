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
