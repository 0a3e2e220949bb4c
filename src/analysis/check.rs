//! The CI gate (`rtscope check`): bounds on the merged entries of one or
//! more results, absolute (`--max`, `--p99`, `--p99.9`, `--overruns`,
//! `--miss-ratio`) or relative to a baseline (`--baseline --ratio X`: worse
//! than X × the baseline fails), over several runs either "any run worse
//! fails" or, with `--majority`, "at least half worse fails" (the rule of
//! Linaro's rt-tests test definitions).
//!
//! One [`Case`] per entry (probe/phase/variant) and bound, with the value of
//! every run. A value the input does not have (a percentile of a
//! summary-only import, an entry a run lacks, the missed periods of a
//! cyclictest import) fails its case with the reason: a gate never passes on
//! missing data. Runs on a kernel without PREEMPT_RT get a note: a latency
//! bound met there holds for that run, not in general.
//!
//! Bounds are judged as bounds. A measured value is a range
//! [`Measured`]`{lower, upper}`: a percentile in a wide bucket (an import's
//! overflow bucket) lies anywhere in it, a miss ratio whose missed periods
//! are unknown has no upper end. A case passes only when the upper end is
//! within the limit; it fails when the lower end is over it, and it fails
//! with the reason "could hide a failure" when the limit falls inside the
//! range. A baseline's value that is a bound counts at its lower end (the
//! tightest limit it allows).
//!
//! Entries pair as `compare` pairs them ([`crate::analysis::compare::pair`]):
//! by phase name, and inputs of one phase each (a run of `idle` against a
//! baseline of `guest:cpu:1`) by probe; `--match` and `--phases` choose.
//! The baseline takes part in the pairing as a further input, so its entry
//! for a case is the one compare would put beside it. Rows that pair
//! different phases are said in the notes, above the verdict.
//!
//! `--miss-ratio` is misses per period: a miss is a sample over `--deadline`
//! or a missed period (an overrun); `--deadline` alone means no miss is
//! allowed (`--miss-ratio 0`).

use serde::Serialize;

use crate::analysis::compare::{merged_entries, pair, EntryKey, Pairing};
use crate::analysis::{deadline, percentiles};
use crate::error::BadInput;
use crate::model::{Nanos, ProbeResult, Run};

/// What a bound is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Metric {
    #[serde(rename = "max")]
    Max,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
    #[serde(rename = "overruns")]
    Overruns,
    #[serde(rename = "miss-ratio")]
    MissRatio,
    /// `migrate`'s priority-order violations (its entries only).
    #[serde(rename = "violations")]
    Violations,
    /// The run measured its whole plan (not interrupted): checked for every
    /// run, whatever the bounds.
    #[serde(rename = "complete")]
    Complete,
}

impl Metric {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Max => "max",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Overruns => "overruns",
            Metric::MissRatio => "miss-ratio",
            Metric::Violations => "violations",
            Metric::Complete => "complete",
        }
    }
    /// "us" for latencies (values are reported in µs), "" for counts and ratios.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Metric::Max | Metric::P99 | Metric::P999 => "us",
            _ => "",
        }
    }
    /// The value of this metric for `r` in report units (µs for
    /// latencies), or why there is none.
    fn value(self, r: &ProbeResult, deadline: Option<Nanos>) -> Result<Measured, String> {
        let pct = |q: f64| -> Result<Measured, String> {
            if !r.distribution_known() {
                return Err(format!("{} unknown: the input has no distribution (a summary-only import)", self.name()));
            }
            let p = percentiles::bounded(&r.histogram, q, r.min_ns, r.max_ns).ok_or_else(|| format!("{} unknown: no samples", self.name()))?;
            Ok(Measured { lower: p.lower_ns.unwrap_or(p.value_ns).as_micros_f64(), upper: Some(p.value_ns.as_micros_f64()) })
        };
        match self {
            Metric::Max if r.samples == 0 => Err("max unknown: no samples".into()),
            Metric::Max => Ok(Measured::exact(r.max_ns.as_micros_f64())),
            Metric::P99 => pct(99.0),
            Metric::P999 => pct(99.9),
            Metric::Overruns => match r.known_overruns() {
                Some(o) => Ok(Measured::exact(o as f64)),
                None => Err("overruns unknown: the input's source does not count missed periods".into()),
            },
            Metric::Violations => r
                .extras
                .violations
                .as_ref()
                .map(|v| Measured::exact(v.count as f64))
                .ok_or_else(|| "violations unknown: the entry has no violation count".into()),
            Metric::Complete => Err("complete is a property of the run, not of an entry".into()),
            Metric::MissRatio => {
                let d = deadline.ok_or("miss-ratio needs --deadline")?;
                let m = deadline::misses(r, d);
                if m.periods == 0 {
                    return Err("miss-ratio unknown: no samples".into());
                }
                // Where the histogram cannot tell (a bucket across the
                // deadline), the upper bound decides; with missed periods
                // unknown there is none.
                Ok(Measured { lower: m.ratio, upper: m.ratio_upper() })
            }
        }
    }
}

/// A measured value in report units: exact when `lower == upper`; a bound
/// otherwise, `upper` `None` when nothing bounds it from above.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Measured {
    pub(crate) lower: f64,
    pub(crate) upper: Option<f64>,
}

impl Measured {
    pub(crate) fn exact(v: f64) -> Measured {
        Measured { lower: v, upper: Some(v) }
    }
    pub(crate) fn is_bound(&self) -> bool {
        self.upper != Some(self.lower)
    }
    /// The value reported for the case: the upper end when there is one
    /// (the gate is not lenient), else the lower bound.
    pub(crate) fn value(&self) -> f64 {
        self.upper.unwrap_or(self.lower)
    }
    /// As shown: `12.0 us`, `≥ 10.0 us`, `10.0–503.0 us`.
    pub(crate) fn shown(&self, metric: Metric) -> String {
        match self.upper {
            Some(u) if u == self.lower => fmt_value(metric, u),
            Some(u) if metric.unit() == "us" => format!("{:.1}–{}", self.lower, fmt_value(metric, u)),
            Some(u) => format!("{}–{}", fmt_value(metric, self.lower), fmt_value(metric, u)),
            None => format!("≥ {}", fmt_value(metric, self.lower)),
        }
    }
}

/// The gate's settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    /// Absolute bounds, in report units (µs for latencies).
    pub(crate) bounds: Vec<(Metric, f64)>,
    /// `--baseline` runs and `--ratio X`: each latency metric (max, p99.9,
    /// p99) fails when worse than X × the baseline's (the median over the
    /// baseline runs).
    pub(crate) baseline: Option<(Vec<Run>, f64)>,
    pub(crate) majority: bool,
    pub(crate) deadline: Option<Nanos>,
    /// How entries of the inputs (and the baseline) are paired, as `compare`.
    pub(crate) pairing: Pairing,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunValue {
    /// The input (file, run id).
    pub(crate) source: String,
    /// `None` when the input has no such value (see `reason`); for a bound,
    /// its upper end (else its lower end: see `lower`).
    pub(crate) value: Option<f64>,
    /// Set when the value is a bound: the range it may be in (`upper`
    /// null: no upper end, e.g. missed periods unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bound: Option<Measured>,
    pub(crate) limit: Option<f64>,
    pub(crate) passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Case {
    /// `timer/idle/max`, `timer/idle/p99-vs-baseline`: unique in the check.
    pub(crate) name: String,
    pub(crate) entry: EntryKey,
    pub(crate) metric: Metric,
    /// `"bound"` or `"baseline"`.
    pub(crate) kind: &'static str,
    /// The bound (absolute), or the ratio X (baseline).
    pub(crate) bound: f64,
    pub(crate) unit: &'static str,
    pub(crate) runs: Vec<RunValue>,
    /// The one value reported for the case: the run's, else the worst run's
    /// (the median with `--majority`).
    pub(crate) measurement: Option<f64>,
    pub(crate) passed: bool,
    /// One line: what was measured against what.
    pub(crate) message: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckReport {
    pub(crate) schema_version: u32,
    pub(crate) passed: bool,
    /// `any` (a case fails when any run fails it) or `majority`.
    pub(crate) rule: &'static str,
    pub(crate) cases: Vec<Case>,
    /// Runs on kernels without PREEMPT_RT, baselines used.
    pub(crate) notes: Vec<String>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Number for messages: latencies with one decimal, ratios as
/// `stats::fmt_ratio_value` (`0`, `0.02`, `1.54e-5`).
pub(crate) fn fmt_value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Overruns | Metric::Violations | Metric::Complete => format!("{v:.0}"),
        Metric::MissRatio => crate::stats::fmt_ratio_value(v),
        _ => format!("{v:.1} us"),
    }
}

/// "timer/idle, timer/cpu" (or "none"): what an input has, for the message
/// of an entry it lacks.
fn entry_list(entries: &[&ProbeResult]) -> String {
    if entries.is_empty() {
        return "none".into();
    }
    entries.iter().map(|r| EntryKey::of(r).label()).collect::<Vec<_>>().join(", ")
}

/// One bound to check on an entry: the metric, `"bound"` or `"baseline"`,
/// and the bound (absolute) or the ratio X (baseline).
type Spec = (Metric, &'static str, f64);

/// One entry checked: its key (the phases of the checked runs, "A vs B"
/// when it pairs different ones), each run's entry and each baseline run's.
struct Row<'a> {
    key: EntryKey,
    runs: Vec<Option<&'a ProbeResult>>,
    base: Vec<Option<&'a ProbeResult>>,
}

/// The inputs of a check, each run's merged entries found and paired once.
struct Inputs<'a> {
    runs: &'a [(String, Run)],
    gate: &'a Gate,
    merged: Vec<Vec<&'a ProbeResult>>,
    rows: Vec<Row<'a>>,
    /// What the pairing said (rows of different phases and why).
    pairing_notes: Vec<String>,
}

/// Check `runs` (each with its source label) against `gate`. Bad input: a
/// `--phases` pair naming a phase no input has, `--match probe` over
/// inputs with different numbers of phases.
pub(crate) fn check(runs: &[(String, Run)], gate: &Gate) -> Result<CheckReport, BadInput> {
    let merged: Vec<Vec<&ProbeResult>> = runs.iter().map(|(_, run)| merged_entries(run)).collect();
    let base_runs: &[Run] = gate.baseline.as_ref().map(|(b, _)| b.as_slice()).unwrap_or(&[]);
    let n = runs.len();
    let mut all = merged.clone();
    all.extend(base_runs.iter().map(merged_entries));
    let mut names: Vec<String> = runs.iter().map(|(s, _)| s.clone()).collect();
    names.extend((0..base_runs.len()).map(|i| if base_runs.len() == 1 { "the baseline".to_string() } else { format!("baseline run {}", i + 1) }));
    let (slotted, pairing_notes) = pair(&all, &names, &gate.pairing)?;
    let rows = slotted
        .iter()
        .filter(|s| s.cells[..n].iter().any(Option::is_some))
        .map(|s| {
            let at = |i: usize| s.cells[i].map(|j| all[i][j]);
            let phases = crate::units::first_seen((0..n).filter_map(at).map(|r| r.phase.as_str()));
            Row {
                key: EntryKey { probe: s.key.0.clone(), phase: phases.join(" vs "), variant: s.key.1.clone() },
                runs: (0..n).map(at).collect(),
                base: (n..all.len()).map(at).collect(),
            }
        })
        .collect();
    let inputs = Inputs { runs, gate, merged, rows, pairing_notes };
    let mut cases: Vec<Case> = inputs.rows.iter().flat_map(|row| inputs.specs(&row.key).into_iter().map(|spec| inputs.case(row, spec))).collect();
    cases.extend(interrupted_cases(runs));
    let notes = inputs.notes(cases.is_empty());
    let passed = !cases.is_empty() && cases.iter().all(|c| c.passed);
    Ok(CheckReport { schema_version: 1, passed, rule: if gate.majority { "majority" } else { "any" }, cases, notes })
}

impl Inputs<'_> {
    /// The bounds that apply to entry `k`: the absolute ones (violations only
    /// where the probe counts them), then max, p99.9 and p99 against the baseline.
    fn specs(&self, k: &EntryKey) -> Vec<Spec> {
        let mut specs: Vec<Spec> = self.gate.bounds.iter().map(|(m, b)| (*m, "bound", *b)).collect();
        if let Some((_, x)) = &self.gate.baseline {
            for m in [Metric::Max, Metric::P999, Metric::P99] {
                specs.push((m, "baseline", *x));
            }
        }
        specs.retain(|(metric, _, _)| *metric != Metric::Violations || crate::measure::is(&k.probe, |i| i.counts_violations));
        specs
    }

    /// The limit of a case: the bound, or X × the baseline's median value.
    fn limit(&self, row: &Row, (metric, kind, bound): Spec) -> Result<f64, String> {
        match (kind, &self.gate.baseline) {
            ("baseline", Some((_, x))) => {
                // A baseline bound counts at its lower end: the tightest limit.
                let vals: Vec<f64> = row.base.iter().flatten().filter_map(|r| metric.value(r, self.gate.deadline).ok()).map(|m| m.lower).collect();
                median(vals).map(|v| v * x).ok_or_else(|| {
                    let has: Vec<String> =
                        self.gate.baseline.iter().flat_map(|(b, _)| b.iter()).flat_map(merged_entries).map(|r| EntryKey::of(r).label()).collect();
                    format!(
                        "the baseline has no {} for {} (it has: {}; pair them with --match probe or --phases)",
                        metric.name(),
                        row.key.label(),
                        if has.is_empty() { "none".into() } else { crate::units::first_seen(has.into_iter()).join(", ") }
                    )
                })
            }
            _ => Ok(bound),
        }
    }

    /// The case of entry `k` and `spec`: every run's value against the limit.
    fn case(&self, row: &Row, spec: Spec) -> Case {
        let (metric, kind, bound) = spec;
        let k = &row.key;
        let limit = self.limit(row, spec);
        let values: Vec<RunValue> = self
            .runs
            .iter()
            .zip(&self.merged)
            .zip(&row.runs)
            .map(|(((source, _), entries), entry)| {
                let v = match entry {
                    Some(r) => metric.value(r, self.gate.deadline),
                    None => Err(format!("no entry {} in this input (it has: {})", k.label(), entry_list(entries))),
                };
                run_value(source, metric, &v, &limit)
            })
            .collect();
        let majority = self.gate.majority;
        let failed = values.iter().filter(|v| !v.passed).count();
        let passed = if majority { failed * 2 < values.len() } else { failed == 0 };
        let known: Vec<f64> = values.iter().filter_map(|v| v.value).collect();
        let measurement = if majority { median(known) } else { known.iter().copied().fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x)))) };
        let entry_name = format!("{}/{}", k.probe, k.phase) + &k.variant.as_ref().map(|v| format!("/{v}")).unwrap_or_default();
        let name = if kind == "baseline" { format!("{entry_name}/{}-vs-baseline", metric.name()) } else { format!("{entry_name}/{}", metric.name()) };
        let message = case_message(k, spec, &limit, &values, majority);
        Case { name, entry: k.clone(), metric, kind, bound, unit: metric.unit(), runs: values, measurement, passed, message }
    }

    /// Notes: no case checked, runs without PREEMPT_RT under a latency bound, the baseline used.
    fn notes(&self, no_case: bool) -> Vec<String> {
        let gate = self.gate;
        let mut notes = self.pairing_notes.clone();
        if no_case {
            notes.push(format!(
                "no case was checked: the inputs have no entry the given bounds apply to (entries: {})",
                self.merged.iter().map(|e| entry_list(e)).collect::<Vec<_>>().join("; ")
            ));
        }
        let latency_bound = gate.baseline.is_some() || gate.bounds.iter().any(|(m, _)| m.unit() == "us" || *m == Metric::MissRatio);
        for (source, run) in self.runs {
            if run.host.emulated {
                notes.push(format!(
                    "{source} ran emulated ({}): its figures rank kernels on the emulator, they are not board latencies; a pass says nothing about a board",
                    run.host.emulated_by
                ));
            }
            for w in crate::analysis::warnings::busy_idle(run) {
                notes.push(format!("{source}: {w}"));
            }
            let rtos = run.agent.as_ref().filter(|a| crate::model::is_rtos(&a.os));
            if let (true, Some(a)) = (latency_bound, rtos) {
                notes.push(format!(
                    "{source} ran on {} (RTOS, measured by rtscope-agent {}): its latency bound is the system's and its build's (tick, priorities, options); a pass holds for this build and this load",
                    run.host.kernel_release, a.version
                ));
            } else if latency_bound && !run.host.realtime {
                notes.push(format!(
                    "{source} ran on kernel {} without PREEMPT_RT (preempt {}): its latency has no bound in general; a pass holds for this run and its load only",
                    run.host.kernel_release, run.host.preempt_model
                ));
            }
        }
        if let Some((base, x)) = &gate.baseline {
            notes.push(format!("baseline: {} run(s), the median of each value; a run fails when over {x} × it", base.len()));
        }
        notes
    }
}

/// One run's value `v` of `metric` against `limit`: it passes only when the
/// whole range is within the limit; a bound across the limit fails with
/// the reason that it could hide a failure.
fn run_value(source: &str, metric: Metric, v: &Result<Measured, String>, limit: &Result<f64, String>) -> RunValue {
    let bound = |m: &Measured| m.is_bound().then_some(*m);
    match (v, limit) {
        (Ok(m), Ok(l)) => {
            // Passes only when the whole range is within the limit.
            let passed = m.upper.is_some_and(|u| u <= *l);
            let reason = match m.upper {
                _ if passed => None,
                _ if m.lower > *l => None,
                Some(_) => Some(format!("{} is a bound ({}) that could hide a failure", metric.name(), m.shown(metric))),
                None if metric == Metric::MissRatio => {
                    Some(format!("miss-ratio {}: the input's source does not count missed periods, which could hide a failure", m.shown(metric)))
                }
                None => Some(format!("{} {} has no upper bound", metric.name(), m.shown(metric))),
            };
            RunValue { source: source.to_string(), value: Some(m.value()), bound: bound(m), limit: Some(*l), passed, reason }
        }
        (Err(e), _) | (_, Err(e)) => RunValue {
            source: source.to_string(),
            value: v.as_ref().ok().map(|m| m.value()),
            bound: v.as_ref().ok().and_then(bound),
            limit: limit.as_ref().ok().copied(),
            passed: false,
            reason: Some(e.clone()),
        },
    }
}

/// The case's one line: "timer/idle max ≤ 50.0 us: a.json: 12.0 us (1 of 2 runs fail)".
fn case_message(k: &EntryKey, (metric, kind, bound): Spec, limit: &Result<f64, String>, values: &[RunValue], majority: bool) -> String {
    let against = match (limit, kind) {
        (Ok(l), "baseline") => format!("{} ({bound} × baseline)", fmt_value(metric, *l)),
        (Ok(l), _) => fmt_value(metric, *l),
        (Err(e), _) => e.clone(),
    };
    let shown = |v: &RunValue| match (&v.bound, v.value) {
        (Some(m), _) => m.shown(metric),
        (None, Some(x)) => fmt_value(metric, x),
        (None, None) => "-".into(),
    };
    let per_run: Vec<String> = values
        .iter()
        .map(|v| match (&v.reason, v.value) {
            // The reason of a bound already shows its range.
            (Some(r), None) => format!("{}: {r}", v.source),
            (Some(r), Some(_)) if v.bound.is_some() => format!("{}: {r}", v.source),
            (Some(r), Some(_)) => format!("{}: {} ({r})", v.source, shown(v)),
            (None, _) => format!("{}: {}", v.source, shown(v)),
        })
        .collect();
    let failed = values.iter().filter(|v| !v.passed).count();
    let rule = if values.len() > 1 {
        format!(" ({failed} of {} runs fail{})", values.len(), if majority { "; the case fails when at least half do" } else { "" })
    } else {
        String::new()
    };
    format!("{} {} ≤ {against}: {}{rule}", k.label(), metric.name(), per_run.join(", "))
}

/// An interrupted run measured less than its plan: whatever its values,
/// the gate does not pass on it (issue 36: it said PASS, exit 0).
fn interrupted_cases(runs: &[(String, Run)]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (source, _) in runs.iter().filter(|(_, run)| run.interrupted) {
        let message = format!(
            "{source} was interrupted before its plan ended (Ctrl-C, SIGTERM or a lost target): it measured less than planned, so no gate passes on it; rerun it to the end"
        );
        let entry = EntryKey { probe: "run".into(), phase: source.clone(), variant: None };
        let runs =
            vec![RunValue { source: source.clone(), value: Some(0.0), bound: None, limit: Some(1.0), passed: false, reason: Some("interrupted".into()) }];
        cases.push(Case {
            name: "run/complete".into(),
            entry,
            metric: Metric::Complete,
            kind: "bound",
            bound: 1.0,
            unit: "",
            runs,
            measurement: Some(0.0),
            passed: false,
            message,
        });
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
