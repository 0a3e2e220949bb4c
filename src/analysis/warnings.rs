//! Warnings about a result, as an enum whose `Display` gives the user advice
//! (hyperfine's output/warnings.rs style). Computed from the result model
//! only, so a stored result yields the same warnings when reported later.

use std::fmt;

use crate::model::Run;

#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The real-time set-up failed in at least one step.
    NotRealtime { reasons: Vec<String> },
    /// Periods were missed.
    Overruns { probe: String, phase: String, overruns: u64, samples: u64 },
    /// Run ended by a signal.
    Interrupted { phase: Option<String> },
    /// Running under a hypervisor.
    Virtualized,
    /// /dev/cpu_dma_latency could not be held.
    NoDmaLatency { detail: String },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NotRealtime { reasons } => write!(
                f,
                "not real-time: {}. Latencies include ordinary scheduling delays; run as root or with CAP_SYS_NICE and CAP_IPC_LOCK for a real-time measurement.",
                reasons.join("; ")
            ),
            Warning::Overruns { probe, phase, overruns, samples } => {
                let pct = 100.0 * *overruns as f64 / (*overruns + *samples).max(1) as f64;
                write!(
                    f,
                    "{probe} ({phase}): {overruns} periods missed ({pct:.2} % of all periods). The system could not keep this interval; the worst case is at least one full period late. Use a longer interval or find the cause (rtscope doctor)."
                )
            }
            Warning::Interrupted { phase } => write!(
                f,
                "the run was interrupted{}; the results hold only the samples taken before that.",
                phase.as_ref().map(|p| format!(" during phase '{p}'")).unwrap_or_default()
            ),
            Warning::Virtualized => write!(
                f,
                "running under a hypervisor: latencies include the host's scheduling of this VM; compare only against results from the same VM."
            ),
            Warning::NoDmaLatency { detail } => write!(
                f,
                "could not hold /dev/cpu_dma_latency at 0 ({detail}); deep CPU idle states may add wake-up latency."
            ),
        }
    }
}

/// Every warning that applies to `run`.
pub fn for_run(run: &Run) -> Vec<Warning> {
    let mut out = Vec::new();
    let failed: Vec<String> = run
        .realtime_setup
        .steps
        .iter()
        .filter(|s| s.outcome == "failed" && s.step != "cpu_dma_latency")
        .map(|s| format!("{} failed ({})", s.step, s.detail))
        .collect();
    if !failed.is_empty() {
        out.push(Warning::NotRealtime { reasons: failed });
    } else if run.plan.policy == "other" {
        out.push(Warning::NotRealtime { reasons: vec!["running as SCHED_OTHER because --policy other was asked".into()] });
    }
    if let Some(s) = run.realtime_setup.steps.iter().find(|s| s.step == "cpu_dma_latency" && s.outcome == "failed") {
        out.push(Warning::NoDmaLatency { detail: s.detail.clone() });
    }
    for r in run.results.iter().filter(|r| r.thread.is_none() && r.overruns > 0) {
        out.push(Warning::Overruns {
            probe: r.probe.clone(),
            phase: r.phase.clone(),
            overruns: r.overruns,
            samples: r.samples,
        });
    }
    if run.host.virtualized {
        out.push(Warning::Virtualized);
    }
    if run.interrupted {
        out.push(Warning::Interrupted { phase: run.interrupted_in.clone() });
    }
    out
}
