//! What a probe is told to do: [`ProbeRun`], the small description of one
//! probe run (how long, at what period, which threads on which CPUs at which
//! priority, the probe-specific [`ProbeSettings`]), and the `--probe
//! NAME:VARIANT` selector syntax ([`split_spec`], [`selects`]).
//!
//! The plan layer above builds a `ProbeRun` for each probe run of
//! an experiment; probes never see the command line or the whole plan.

use std::collections::BTreeMap;

use crate::model::{Nanos, ProbeOptions};
use crate::sys::sched::Policy;

/// Default `--msg-size` (bytes), as the source experiments' 16-byte messages.
pub const DEFAULT_MSG_SIZE: usize = 16;

/// One probe run: the measuring threads' placement, policy and pacing.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    /// How long the probe measures (its variants share it).
    pub duration_ns: u64,
    /// The timer period, or the pause between events of the two-thread probes.
    pub interval_ns: u64,
    pub priority: u8,
    pub policy: Policy,
    /// Measuring threads; CPUs are taken from `cpus` round-robin.
    pub threads: usize,
    pub cpus: Vec<usize>,
    /// Worst samples kept per thread.
    pub worst_k: usize,
    /// Probe-specific options and the variant selection.
    pub probe: ProbeSettings,
    /// `--trace-threshold`, for probes that analyse late samples themselves
    /// (`timerlat`); None in warm-ups.
    pub trace_threshold_ns: Option<u64>,
}

impl ProbeRun {
    /// This run as a warm-up of at least `min_ns`: a shorter warm-up is made
    /// `min_ns` long, with no event count and a Thread-Metric interval that
    /// fits in it (an eighth, one per test), so every probe finishes in about
    /// `min_ns`. Its samples are discarded; it runs the probe's loop once
    /// so that the pages the loop touches are in memory before measuring.
    pub fn warm_up_of_at_least(mut self, min_ns: u64) -> ProbeRun {
        if self.duration_ns < min_ns {
            self.duration_ns = min_ns;
            self.probe.iterations = None;
            self.probe.tm_interval_ns = self.probe.tm_interval_ns.min(min_ns / 8).max(1);
        }
        self
    }
}

/// `sem:mutex` → (`sem`, Some(`mutex`)); `sem` → (`sem`, None).
pub fn split_spec(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once(':') {
        Some((p, v)) => (p.trim(), Some(v.trim())),
        None => (spec.trim(), None),
    }
}

/// True when selector `sel` picks `variant`: equal, or a leading
/// `/`-separated part of it (`mutex` picks `mutex/same-cpu`).
pub fn selects(sel: &str, variant: &str) -> bool {
    variant == sel || (variant.starts_with(sel) && variant[sel.len()..].starts_with('/'))
}

/// Validated probe options, part of the `RunPlan`.
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    /// Selectors per probe; a probe absent here runs every variant.
    pub variants: BTreeMap<String, Vec<String>>,
    /// `--periods` as given; empty = each probe's default.
    pub periods_ns: Vec<u64>,
    pub msg_size: usize,
    pub noise_threshold_ns: u64,
    pub noise_policy: Policy,
    pub iterations: Option<u64>,
    pub back_to_back: bool,
    /// `--sender-priority` (None: one below the plan's priority).
    pub sender_priority: Option<u8>,
    /// `--pi-burst`: the `pi` probe's medium-priority burst.
    pub pi_burst_ns: u64,
    /// `--tm-interval`: the `throughput` probe's counting interval.
    pub tm_interval_ns: u64,
    /// True when -a or -t was given: probes that default to one CPU
    /// (`noise`, `maxrate`) then use the plan's threads and CPUs.
    pub cpus_explicit: bool,
    /// `--dl-runtime` / `--dl-deadline` (None: the defaults of [`ProbeSettings::dl_params`]).
    pub dl_runtime_ns: Option<u64>,
    pub dl_deadline_ns: Option<u64>,
    /// `--chain`: threads in `signal:chain`.
    pub chain: usize,
    /// `migrate`: `--migrate-run`, `--migrate-sleep`, `--migrate-max-err`.
    pub migrate_run_ns: u64,
    pub migrate_sleep_ns: u64,
    pub migrate_max_err_ns: u64,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings {
            variants: BTreeMap::new(),
            periods_ns: Vec::new(),
            msg_size: DEFAULT_MSG_SIZE,
            noise_threshold_ns: 1_000,
            noise_policy: Policy::Other,
            iterations: None,
            back_to_back: false,
            sender_priority: None,
            pi_burst_ns: super::pi::DEFAULT_BURST_NS,
            tm_interval_ns: super::throughput::DEFAULT_INTERVAL_NS,
            cpus_explicit: false,
            dl_runtime_ns: None,
            dl_deadline_ns: None,
            chain: super::chain::DEFAULT_CHAIN,
            migrate_run_ns: super::migrate::DEFAULT_RUN_NS,
            migrate_sleep_ns: super::migrate::DEFAULT_SLEEP_NS,
            migrate_max_err_ns: super::migrate::DEFAULT_MAX_ERR_NS,
        }
    }
}

impl ProbeSettings {
    /// Does `probe` run `variant`?
    pub fn wants(&self, probe: &str, variant: &str) -> bool {
        match self.variants.get(probe) {
            None => true,
            Some(sels) => sels.iter().any(|s| selects(s, variant)),
        }
    }

    /// The SCHED_DEADLINE reservation of a thread with period `period_ns`:
    /// deadline `--dl-deadline` (default: the period), runtime
    /// `--dl-runtime` (default: 60 % of the deadline, as cyclicdeadline).
    pub fn dl_params(&self, period_ns: u64) -> crate::sys::sched::DlParams {
        let deadline_ns = self.dl_deadline_ns.unwrap_or(period_ns);
        let runtime_ns = self.dl_runtime_ns.unwrap_or(deadline_ns / 10 * 6);
        crate::sys::sched::DlParams { runtime_ns, deadline_ns, period_ns }
    }

    /// `--periods`, or `default` when not given.
    pub fn periods_or(&self, default: &[u64]) -> Vec<u64> {
        if self.periods_ns.is_empty() {
            default.to_vec()
        } else {
            self.periods_ns.clone()
        }
    }

    pub fn to_model(&self) -> ProbeOptions {
        ProbeOptions {
            variants: self.variants.clone(),
            periods_ns: self.periods_ns.iter().map(|&p| Nanos(p)).collect(),
            msg_size: self.msg_size,
            noise_threshold_ns: Nanos(self.noise_threshold_ns),
            noise_policy: self.noise_policy.name().to_string(),
            iterations: self.iterations.unwrap_or(0),
            back_to_back: self.back_to_back,
            sender_priority: self.sender_priority.unwrap_or(0),
            pi_burst_ns: Nanos(self.pi_burst_ns),
            tm_interval_ns: Nanos(self.tm_interval_ns),
            dl_runtime_ns: self.dl_runtime_ns.map(Nanos),
            dl_deadline_ns: self.dl_deadline_ns.map(Nanos),
            // Recorded by `RunPlan::to_model` when the plan runs the probe.
            chain: 0,
            migrate_run_ns: Nanos(0),
            migrate_sleep_ns: Nanos(0),
            migrate_max_err_ns: Nanos(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_whole_parts_only() {
        assert!(selects("mutex", "mutex/same-cpu"));
        assert!(selects("mutex/same-cpu", "mutex/same-cpu"));
        assert!(!selects("mutex/same", "mutex/same-cpu"));
        assert!(!selects("mut", "mutex/same-cpu"));
        assert!(!selects("posix", "mutex/same-cpu"));
        assert_eq!(split_spec("sem:mutex"), ("sem", Some("mutex")));
        assert_eq!(split_spec("timer"), ("timer", None));
    }
}
