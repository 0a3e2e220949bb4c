//! What a probe is told to do: [`ProbeRun`], the small description of one
//! probe run (how long, at what period, which threads on which CPUs at which
//! priority, the plan's probe-specific [`ProbeOptions`]), and the `--probe
//! NAME:VARIANT` selector syntax ([`split_spec`], [`selects`]).
//!
//! The plan layer above builds a `ProbeRun` for each probe run of
//! an experiment; probes never see the command line or the whole plan.

use crate::model::{NoisePolicy, ProbeOptions};
use crate::sys::sched::Policy;

/// Default `--msg-size` (bytes), as the source experiments' 16-byte messages.
pub(crate) const DEFAULT_MSG_SIZE: usize = 16;

/// One probe run: the measuring threads' placement, policy and pacing.
#[derive(Debug, Clone)]
pub(crate) struct ProbeRun {
    /// How long the probe measures (its variants share it).
    pub(crate) duration_ns: u64,
    /// The timer period, or the pause between events of the two-thread probes.
    pub(crate) interval_ns: u64,
    pub(crate) priority: u8,
    pub(crate) policy: Policy,
    /// Measuring threads; CPUs are taken from `cpus` round-robin.
    pub(crate) threads: usize,
    pub(crate) cpus: Vec<usize>,
    /// Worst samples kept per thread.
    pub(crate) worst_k: usize,
    /// Probe-specific options and the variant selection (the plan's own).
    pub(crate) probe: ProbeOptions,
    /// `--trace-threshold`, for probes that analyse late samples themselves
    /// (`timerlat`); None in warm-ups.
    pub(crate) trace_threshold_ns: Option<u64>,
}

impl ProbeRun {
    /// This run as a warm-up of at least `min_ns`: a shorter warm-up is made
    /// `min_ns` long, with no event count and a Thread-Metric interval that
    /// fits in it (an eighth, one per test), so every probe finishes in about
    /// `min_ns`. Its samples are discarded; it runs the probe's loop once
    /// so that the pages the loop touches are in memory before measuring.
    pub(crate) fn warm_up_of_at_least(mut self, min_ns: u64) -> ProbeRun {
        if self.duration_ns < min_ns {
            self.duration_ns = min_ns;
            self.probe.iterations = None;
            self.probe.tm_interval_ns = self.probe.tm_interval_ns.min(min_ns / 8).max(1);
        }
        self
    }
}

/// `sem:mutex` → (`sem`, Some(`mutex`)); `sem` → (`sem`, None).
pub(crate) fn split_spec(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once(':') {
        Some((p, v)) => (p.trim(), Some(v.trim())),
        None => (spec.trim(), None),
    }
}

/// True when selector `sel` picks `variant`: equal, or a leading
/// `/`-separated part of it (`mutex` picks `mutex/same-cpu`).
pub(crate) fn selects(sel: &str, variant: &str) -> bool {
    variant == sel || (variant.starts_with(sel) && variant[sel.len()..].starts_with('/'))
}

impl From<NoisePolicy> for Policy {
    /// The noise probes' policy (not known: SCHED_OTHER, the default).
    fn from(p: NoisePolicy) -> Policy {
        match p {
            NoisePolicy::Unknown | NoisePolicy::Other => Policy::Other,
            NoisePolicy::Fifo => Policy::Fifo,
            NoisePolicy::Rr => Policy::RoundRobin,
        }
    }
}

impl ProbeOptions {
    /// Does `probe` run `variant`?
    pub(crate) fn wants(&self, probe: &str, variant: &str) -> bool {
        match self.variants.get(probe) {
            None => true,
            Some(sels) => sels.iter().any(|s| selects(s, variant)),
        }
    }

    /// The SCHED_DEADLINE reservation of a thread with period `period_ns`:
    /// deadline `--dl-deadline` (default: the period), runtime
    /// `--dl-runtime` (default: 60 % of the deadline, as cyclicdeadline).
    pub(crate) fn dl_params(&self, period_ns: u64) -> crate::sys::sched::DlParams {
        let deadline_ns = self.dl_deadline_ns.unwrap_or(period_ns);
        let runtime_ns = self.dl_runtime_ns.unwrap_or(deadline_ns / 10 * 6);
        crate::sys::sched::DlParams { runtime_ns, deadline_ns, period_ns }
    }

    /// `--periods`, or `default` when not given.
    pub(crate) fn periods_or(&self, default: &[u64]) -> Vec<u64> {
        if self.periods_ns.is_empty() {
            default.to_vec()
        } else {
            self.periods_ns.clone()
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
