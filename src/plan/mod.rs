//! The plan layer: a validated experiment, ready to execute.
//!
//! [`RunPlan`] says what to measure and how (probes, threads, CPUs, policy,
//! priority, durations, tracing, probe settings); [`Experiment`] adds the
//! load phases and the probe runs inside each phase (from a scenario file, a
//! preset or the command line); [`Output`] says where the result goes.
//! The face (`cli`) builds them from the command line and `scenario` from
//! TOML; the runner executes them, handing each probe only the
//! [`ProbeRun`] it needs ([`RunPlan::probe_run`]).

pub(crate) mod experiment;
pub(crate) mod probes;

use std::path::PathBuf;

use crate::measure::ProbeRun;
use crate::model::{Nanos, Plan, ProbeOptions};
use crate::sys::sched::Policy;

pub(crate) use experiment::{Experiment, ProbeEntry, Table};

/// A validated experiment: what to measure, how, where.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    pub(crate) probes: Vec<String>,
    pub(crate) phases: Vec<String>,
    pub(crate) duration_ns: u64,
    pub(crate) interval_ns: u64,
    pub(crate) priority: u8,
    pub(crate) policy: Policy,
    pub(crate) threads: usize,
    pub(crate) cpus: Vec<usize>,
    pub(crate) dma_latency: bool,
    pub(crate) worst_k: usize,
    pub(crate) trace: Option<crate::trace::TracePlan>,
    /// Probe-specific options and variant selection (`--probe NAME:VARIANT`).
    pub(crate) probe: ProbeOptions,
}

/// Where and how to report.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The result file (decided before the run starts).
    pub(crate) path: PathBuf,
    pub(crate) quiet: bool,
    pub(crate) ns: bool,
}

impl RunPlan {
    /// The CPUs measuring threads actually run on (threads take `cpus`
    /// round-robin, so fewer threads than CPUs use only the first ones).
    pub(crate) fn measured_cpus(&self) -> Vec<usize> {
        self.cpus.iter().take(self.threads.max(1)).copied().collect()
    }

    /// What the probe of `entry` is told: this plan's threads, CPUs and
    /// priority, at the entry's duration (or its warm-up's) and period.
    pub(crate) fn probe_run(&self, entry: &ProbeEntry, warmup: bool) -> ProbeRun {
        let mut probe = self.probe.clone();
        if !entry.periods_ns.is_empty() {
            probe.periods_ns = entry.periods_ns.clone();
        }
        ProbeRun {
            duration_ns: if warmup { entry.warmup_ns } else { entry.duration_ns },
            interval_ns: entry.interval_ns,
            priority: self.priority,
            policy: self.policy,
            threads: self.threads,
            cpus: self.cpus.clone(),
            worst_k: self.worst_k,
            probe,
            trace_threshold_ns: if warmup { None } else { self.trace.as_ref().map(|t| t.threshold_ns.0) },
        }
    }

    pub(crate) fn to_model(&self) -> Plan {
        let mut p = Plan::new(self.probes.clone(), self.phases.clone(), Nanos(self.duration_ns), Nanos(self.interval_ns));
        p.priority = self.priority;
        p.policy = self.policy.name().to_string();
        p.threads = self.threads;
        p.cpus = self.cpus.clone();
        p.dma_latency = self.dma_latency;
        p.worst_k = self.worst_k;
        p.trace = self.trace.clone();
        // The one type: the plan records the options its probes were given.
        p.probe_options = self.probe.clone();
        p
    }
}

