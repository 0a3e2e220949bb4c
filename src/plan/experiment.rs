//! The experiment around the probes: load phases, the probe runs inside each
//! phase (a probe at one period, with its warm-up), settle time, load
//! placement, the total cap and the table printed at the end.

use serde::Deserialize;

use crate::load::{LoadOptions, PhaseSpec};
use crate::model::ScenarioRecord;

/// How a run's results are printed at the end, in the shape of a source
/// experiment's table (the report layer's preset tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Table {
    /// rtscope's summary table only.
    #[default]
    Summary,
    /// Summary, then one line per phase (max, p99.9, overruns): PASS/FAIL
    /// against `--deadline`, a plain summary without one.
    Verdict,
    /// Seed 001: counts per fixed-width latency bin, one column per phase.
    Bins,
    /// Seed 004: max and avg ± σ per probe, idle vs loaded.
    MaxAvgSd,
    /// Seed 002: one row per period, per probe and phase.
    PerPeriod,
    /// Seed 000: idle-vs-load rows, worst case first, with the ratio to idle.
    IdleVsLoad,
    /// Rhealstone: the six components' means per phase and the composite.
    Rhealstone,
    /// Thread-Metric: ops per interval of each test, per phase.
    ThreadMetric,
}

/// One probe run inside each phase: a probe at one period.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProbeEntry {
    /// The probe's name (without a `:variant` selector).
    pub(crate) probe: String,
    pub(crate) interval_ns: u64,
    /// The probe's own periods (`periodic`, `maxrate`: one variant per
    /// period, like `--periods`); empty = the probe's default.
    pub(crate) periods_ns: Vec<u64>,
    pub(crate) duration_ns: u64,
    /// Measured and thrown away before the run that counts.
    pub(crate) warmup_ns: u64,
}

/// The whole experiment beyond the per-probe [`super::RunPlan`]:
/// phases with their loads, probe runs, settle time, load placement, caps
/// and how to print.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Experiment {
    pub(crate) phases: Vec<PhaseSpec>,
    pub(crate) entries: Vec<ProbeEntry>,
    pub(crate) settle_ns: u64,
    pub(crate) load: LoadOptions,
    pub(crate) max_total_ns: u64,
    pub(crate) table: Table,
    /// Bin width of `Table::Bins`.
    pub(crate) bin_ns: u64,
    pub(crate) scenario: Option<ScenarioRecord>,
    /// What the plan left out of the scenario and why, said before it runs
    /// (e.g. the probes that do not run under `--policy deadline`).
    pub(crate) notes: Vec<String>,
}

impl Experiment {
    /// Planned length of one phase: settle (when it has loads) + every
    /// probe run with its warm-up.
    pub(crate) fn phase_ns(&self, phase: &PhaseSpec) -> u64 {
        let settle = if phase.loads.is_empty() { 0 } else { self.settle_ns };
        settle + self.entries.iter().map(|e| e.warmup_ns + e.duration_ns).sum::<u64>()
    }

    /// Planned length of the whole run.
    pub(crate) fn total_ns(&self) -> u64 {
        self.phases.iter().map(|p| self.phase_ns(p)).sum()
    }
}
