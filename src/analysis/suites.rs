//! The classic suites' tables from a run's entries (`model::suites` says
//! which entry stands for what):
//!
//! - Rhealstone (Kar & Porter, 1989), for runs with at least three of its
//!   components in a phase: per phase, the six components' mean
//!   times, and the composite figure as the paper defines it: with the six
//!   means t1..t6 in seconds, Rhealstones per second = 1 / ((t1 + … + t6) / 6).
//!   The composite is given only when all six are present; the components
//!   are always shown beside it, since one slow component dominates it.
//! - Thread-Metric: per phase and test, the ops per interval (mean over the
//!   intervals), the number and length of intervals, the spread between
//!   intervals ((max − min) / mean) and ops per second, which is what
//!   compares across interval lengths.

use serde::Serialize;

use crate::model::suites::{Component, RHEALSTONE, THREAD_METRIC};
use crate::model::{Nanos, ProbeResult, Run};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct RhealstoneCell {
    pub(crate) metric: &'static str,
    /// `probe[variant]` of the entry used.
    pub(crate) entry: String,
    pub(crate) mean_ns: f64,
    pub(crate) max_ns: Nanos,
    pub(crate) samples: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct RhealstonePhase {
    pub(crate) phase: String,
    /// One per component, in the paper's order; `None` where the run lacks it.
    pub(crate) components: Vec<Option<RhealstoneCell>>,
    /// Rhealstones per second, when all six are present.
    pub(crate) per_second: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ThreadMetricRow {
    pub(crate) test: &'static str,
    pub(crate) phase: String,
    pub(crate) ops: u64,
    pub(crate) intervals: usize,
    pub(crate) interval_ns: Nanos,
    pub(crate) mean_per_interval: f64,
    pub(crate) spread_pct: f64,
    pub(crate) ops_per_s: f64,
}

/// Merged entries (a thread entry where it is the only one).
fn entries(run: &Run) -> Vec<&ProbeResult> {
    crate::analysis::compare::merged_entries(run)
}

fn find<'a>(es: &[&'a ProbeResult], c: &Component, phase: &str) -> Option<&'a ProbeResult> {
    let mine = |r: &&&ProbeResult| r.probe == c.probe && r.phase == phase;
    if c.variants.is_empty() {
        return es.iter().filter(mine).find(|r| r.variant.is_none()).or_else(|| es.iter().find(mine)).copied();
    }
    c.variants.iter().find_map(|v| es.iter().filter(mine).find(|r| r.variant.as_deref() == Some(v)).copied())
}

fn phases(run: &Run, es: &[&ProbeResult]) -> Vec<String> {
    let mut out: Vec<String> = run.plan.phases.clone();
    for r in es {
        if !out.contains(&r.phase) {
            out.push(r.phase.clone());
        }
    }
    out
}

/// Components a phase must have for the run to get a Rhealstone table: half
/// of the six, so a run of one or two probes that happen to be components
/// (a plain timer run) shows none.
pub(crate) const MIN_COMPONENTS: usize = 3;

/// The Rhealstone table, one row per phase that has a component; empty
/// unless some phase has at least [`MIN_COMPONENTS`].
pub(crate) fn rhealstone(run: &Run) -> Vec<RhealstonePhase> {
    let es = entries(run);
    let mut out = Vec::new();
    for phase in phases(run, &es) {
        let components: Vec<Option<RhealstoneCell>> = RHEALSTONE
            .iter()
            .map(|c| {
                find(&es, c, &phase).filter(|r| r.samples > 0).map(|r| RhealstoneCell {
                    metric: c.metric,
                    entry: match &r.variant {
                        Some(v) => format!("{}[{v}]", r.probe),
                        None => r.probe.clone(),
                    },
                    mean_ns: r.shown_mean_ns(),
                    max_ns: r.max_ns,
                    samples: r.samples,
                })
            })
            .collect();
        if components.iter().all(Option::is_none) {
            continue;
        }
        let per_second = composite(&components);
        out.push(RhealstonePhase { phase, components, per_second });
    }
    if !out.iter().any(|p| p.components.iter().flatten().count() >= MIN_COMPONENTS) {
        out.clear();
    }
    out
}

/// 1 / mean of the six component times in seconds (Kar & Porter's
/// objective Rhealstone figure); `None` unless all six are there.
pub(crate) fn composite(components: &[Option<RhealstoneCell>]) -> Option<f64> {
    if components.len() != RHEALSTONE.len() || components.iter().any(Option::is_none) {
        return None;
    }
    let mean_s = components.iter().flatten().map(|c| c.mean_ns / 1e9).sum::<f64>() / components.len() as f64;
    (mean_s > 0.0).then(|| 1.0 / mean_s)
}

/// The Thread-Metric rows (test order, then phase); empty without
/// `throughput` entries.
pub(crate) fn thread_metric(run: &Run) -> Vec<ThreadMetricRow> {
    let es = entries(run);
    let mut out = Vec::new();
    for phase in phases(run, &es) {
        for (test, variant) in THREAD_METRIC {
            let Some(r) =
                es.iter().find(|r| crate::measure::is(&r.probe, |i| i.counts_operations) && r.phase == phase && r.variant.as_deref() == Some(variant))
            else {
                continue;
            };
            let Some(t) = &r.extras.throughput else { continue };
            out.push(ThreadMetricRow {
                test,
                phase: phase.clone(),
                ops: t.ops,
                intervals: t.per_interval.len(),
                interval_ns: t.interval_ns,
                mean_per_interval: t.mean(),
                spread_pct: t.spread_pct(),
                ops_per_s: t.ops_per_s().unwrap_or(0.0),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mean_ns: f64) -> Option<RhealstoneCell> {
        Some(RhealstoneCell { metric: "x", entry: "x".into(), mean_ns, max_ns: Nanos(0), samples: 1 })
    }

    #[test]
    fn composite_is_one_over_the_mean_time() {
        // Means 1..6 µs: mean 3.5 µs → 285 714.3 Rhealstones per second.
        let c: Vec<_> = (1..=6).map(|k| cell(k as f64 * 1000.0)).collect();
        let r = composite(&c).unwrap();
        assert!((r - 1.0 / 3.5e-6).abs() < 1e-6, "{r}");
        let mut missing = c.clone();
        missing[2] = None;
        assert_eq!(composite(&missing), None);
    }
}
