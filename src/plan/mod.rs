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
pub(crate) mod overrides;
pub(crate) mod probes;

use std::path::PathBuf;

use crate::measure::ProbeRun;
use crate::model::{Nanos, Plan};

pub(crate) use experiment::{Experiment, ProbeEntry, Table};

/// A validated experiment: what to measure, how, where.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    pub(crate) probes: Vec<String>,
    pub(crate) phases: Vec<String>,
    /// The probe run every entry starts from: the plan's default duration
    /// and period, its threads, CPUs, policy and priority, worst K and
    /// probe options (variant selection included). [`RunPlan::probe_run`]
    /// gives each entry a copy with its own duration and period; the trace
    /// threshold is taken from `trace` there (None here).
    pub(crate) measuring: ProbeRun,
    pub(crate) dma_latency: bool,
    pub(crate) trace: Option<crate::trace::TracePlan>,
}

/// Where a run's probes happen: what the one plan builder
/// (`cli::plan::build`) decides differently for a run on this system and
/// one on a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Site {
    /// On this system: CPUs, probes and variants checked against it.
    Here,
    /// On another system, by rtscope-agent (`--target`): what only the
    /// agent's announcement can settle (its probes' variants, its CPUs for
    /// `-a` and `-t`) is kept as asked and checked in the session; no
    /// /dev/cpu_dma_latency hold and no tracing here.
    Agent,
}

/// Where and how to report.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The result file (decided before the run starts).
    pub(crate) path: PathBuf,
    pub(crate) quiet: bool,
    /// The unit the end of the run shows latencies in (`--ns`).
    pub(crate) unit: crate::units::Unit,
}

impl RunPlan {
    /// The CPUs measuring threads actually run on (threads take `cpus`
    /// round-robin, so fewer threads than CPUs use only the first ones).
    pub(crate) fn measured_cpus(&self) -> Vec<usize> {
        self.measuring.cpus.iter().take(self.measuring.threads.max(1)).copied().collect()
    }

    /// What the probe of `entry` is told: this plan's threads, CPUs and
    /// priority, at the entry's duration (or its warm-up's) and period.
    pub(crate) fn probe_run(&self, entry: &ProbeEntry, warmup: bool) -> ProbeRun {
        let mut run = self.measuring.clone();
        if !entry.periods_ns.is_empty() {
            run.probe.periods_ns = entry.periods_ns.clone();
        }
        run.duration_ns = if warmup { entry.warmup_ns } else { entry.duration_ns };
        run.interval_ns = entry.interval_ns;
        run.trace_threshold_ns = if warmup { None } else { self.trace.as_ref().map(|t| t.threshold_ns.0) };
        run
    }

    pub(crate) fn to_model(&self) -> Plan {
        let m = &self.measuring;
        let mut p = Plan::new(self.probes.clone(), self.phases.clone(), Nanos(m.duration_ns), Nanos(m.interval_ns));
        p.priority = m.priority;
        p.policy = m.policy.name().to_string();
        p.threads = m.threads;
        p.cpus = m.cpus.clone();
        p.dma_latency = self.dma_latency;
        p.worst_k = m.worst_k;
        p.trace = self.trace.clone();
        // The one type: the plan records the options its probes were given.
        p.probe_options = m.probe.clone();
        p
    }
}
