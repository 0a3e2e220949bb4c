//! Building results from what a parser read: the intermediate [`Parsed`]
//! (one system) and [`Series`] (one thread, CPU column or task pair) every
//! format produces, and [`build_run`], which checks each series, turns it
//! into a [`ProbeResult`], adds one merged entry per probe/variant
//! ([`merge_results`]) and wraps them in a schema v1 [`Run`] with
//! `imported_from` and `fidelity` notes (the rules in the module doc of
//! `crate::import`).

use std::collections::BTreeMap;

use super::fold::{normalise_buckets, percentiles};
use super::format::Format;
use super::read::ParseError;
use crate::model::{Bucket, Host, ImportedFrom, Nanos, Plan, ProbeResult, Run, SecondStats, SignedStats, Tool};
use crate::stats;

/// One measured series (a thread, a CPU column, a task pair) as read from
/// the source, before it becomes a [`ProbeResult`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Series {
    pub probe: String,
    pub(crate) variant: Option<String>,
    pub(crate) thread: Option<usize>,
    pub(crate) cpu: Option<usize>,
    pub(crate) interval_ns: u64,
    pub(crate) samples: u64,
    pub(crate) overruns: u64,
    /// The source cannot count missed periods (cyclictest, rtla, ...):
    /// `overruns` is then unknown, not 0 (see `ProbeResult::overruns_known`).
    pub(crate) overruns_unknown: bool,
    pub(crate) min_ns: u64,
    pub(crate) max_ns: u64,
    /// From the source when it reports one; else estimated from the buckets.
    pub(crate) mean_ns: Option<f64>,
    pub(crate) stddev_ns: Option<f64>,
    /// Empty = the source has only a summary (see the module doc).
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) per_second: Vec<SecondStats>,
    /// Width of one `per_second` slot in s (0 is taken as 1).
    pub(crate) per_second_width_s: u64,
    /// The signed min/mean/max when the source has negative latencies
    /// (early wake-ups): the unsigned fields clamp them to 0.
    pub(crate) signed: Option<SignedStats>,
    /// Operation counts (Thread-Metric results).
    pub(crate) throughput: Option<crate::model::Throughput>,
    /// The source cannot know the count: `samples` is a lower bound.
    pub(crate) samples_unknown: bool,
}

/// A parsed source file: one system's series plus what the file says about
/// where and how it ran.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// e.g. "cyclictest".
    pub(crate) tool: String,
    /// As the file states it, "" if it does not.
    pub(crate) tool_version: String,
    /// Host or system name found in the file (`--name` overrides).
    pub(crate) system: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) realtime: Option<bool>,
    /// RFC 3339 UTC, when the file records it.
    pub(crate) started_at: Option<String>,
    pub(crate) finished_at: Option<String>,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) command_line: Vec<String>,
    pub(crate) series: Vec<Series>,
    pub(crate) fidelity: Vec<String>,
}

/// How the command wants the runs labelled.
#[derive(Debug, Clone)]
pub struct Context {
    pub format: Format,
    /// The file as named on the command line.
    pub file: String,
    pub file_sha256: String,
    /// File stem: the system name of last resort.
    pub file_stem: String,
    /// The file's modification time (RFC 3339), used when the file records no date.
    pub file_mtime: String,
    pub phase: String,
    pub probe: Option<String>,
    pub name: Option<String>,
}

/// Build the schema v1 run for one parsed system. Each series becomes its
/// entry as it is taken from `p` (its buckets move, never copied).
pub fn build_run(mut p: Parsed, ctx: &Context) -> Result<Run, ParseError> {
    let system = ctx.name.clone().or(p.system.clone()).unwrap_or_else(|| ctx.file_stem.clone());
    let mut fidelity = p.fidelity.clone();
    if p.series.iter().any(|s| s.overruns_unknown) {
        fidelity.push(format!(
            "missed periods (overruns) unknown: {} does not count them; a deadline verdict sees only the late samples",
            if p.tool.is_empty() { "the source" } else { p.tool.as_str() }
        ));
    }
    let started_at = match &p.started_at {
        Some(s) => s.clone(),
        None => {
            fidelity.push("start time unknown: started_at is the imported file's modification time".into());
            ctx.file_mtime.clone()
        }
    };
    let finished_at = p.finished_at.clone().unwrap_or_else(|| started_at.clone());
    if p.series.is_empty() {
        return Err(ParseError::file("the file holds no measurements"));
    }
    let mut cpus: Vec<usize> = p.series.iter().filter_map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let interval = p.series.iter().map(|s| s.interval_ns).find(|&i| i > 0).unwrap_or(0);
    let threads = p.series.len();
    let mut results = Vec::with_capacity(threads + 1);
    let mut groups: Vec<(String, Option<String>)> = Vec::new();
    for s in std::mem::take(&mut p.series) {
        let probe = ctx.probe.clone().unwrap_or_else(|| s.probe.clone());
        let group = (probe, s.variant.clone());
        let r = finish_series(s, &group.0, &ctx.phase)?;
        if !groups.contains(&group) {
            groups.push(group);
        }
        results.push(r);
    }
    // One merged entry (thread = null) per probe/variant, as native runs have.
    let mut merged = Vec::new();
    for (probe, variant) in &groups {
        let members: Vec<&ProbeResult> = results.iter().filter(|r| &r.probe == probe && &r.variant == variant).collect();
        if members.len() > 1 || members.iter().any(|r| r.thread.is_some()) {
            merged.push(merge_results(&members));
        }
    }
    results.extend(merged);

    let mut probes: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    probes.dedup();
    let tool_named = if p.tool_version.is_empty() { p.tool.clone() } else { format!("{} {}", p.tool, p.tool_version) };
    let host = Host {
        hostname: system.clone(),
        kernel_release: p.kernel.clone().unwrap_or_default(),
        realtime: p.realtime.unwrap_or(false),
        preempt_model: "unknown".into(),
        preempt_model_source: format!("not recorded by {}", p.tool),
        smt: "unknown".into(),
        cpus_online: cpus.clone(),
        ..Host::default()
    };
    let mut plan = Plan::new(probes, vec![ctx.phase.clone()], Nanos(p.duration_ns.unwrap_or(0)), Nanos(interval));
    plan.threads = threads;
    plan.cpus = cpus;
    let from = ImportedFrom {
        format: ctx.format.name().into(),
        tool: tool_named,
        file_sha256: ctx.file_sha256.clone(),
        file: ctx.file.clone(),
        system,
    };
    let mut run =
        Run::imported(Tool::new(p.tool.clone(), p.tool_version.clone()), from, host, plan, results, (started_at, finished_at));
    run.command_line = p.command_line.clone();
    run.fidelity = fidelity;
    Ok(run)
}

/// Validate one series and turn it into a result.
fn finish_series(s: Series, probe: &str, phase: &str) -> Result<ProbeResult, ParseError> {
    let what = series_name(&s);
    if s.samples == 0 {
        return Err(ParseError::file(format!("{what}: no samples")));
    }
    if s.min_ns > s.max_ns {
        return Err(ParseError::file(format!("{what}: min {} ns is above max {} ns", s.min_ns, s.max_ns)));
    }
    let summary_only = s.buckets.is_empty();
    let mut buckets = if summary_only {
        vec![Bucket { lo_ns: Nanos(s.min_ns), hi_ns: Nanos(s.max_ns), count: s.samples }]
    } else {
        normalise_buckets(s.buckets)
    };
    let total = buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.count));
    match total {
        Some(t) if t == s.samples => {}
        Some(t) => {
            return Err(ParseError::file(format!(
                "{what}: histogram counts sum to {t} but the file reports {} samples",
                s.samples
            )))
        }
        None => return Err(ParseError::file(format!("{what}: histogram counts overflow a 64-bit sum"))),
    }
    if buckets.is_empty() {
        return Err(ParseError::file(format!("{what}: empty histogram")));
    }
    // min/max are exact in every source; make the outer buckets reach them.
    let first = buckets[0];
    let last = buckets[buckets.len() - 1];
    if s.min_ns > first.hi_ns.0 {
        return Err(ParseError::file(format!(
            "{what}: min {} ns lies above the lowest non-empty histogram bucket [{}, {}] ns",
            s.min_ns, first.lo_ns.0, first.hi_ns.0
        )));
    }
    if s.max_ns < last.lo_ns.0 {
        return Err(ParseError::file(format!(
            "{what}: max {} ns lies below the highest non-empty histogram bucket [{}, {}] ns",
            s.max_ns, last.lo_ns.0, last.hi_ns.0
        )));
    }
    buckets[0].lo_ns = Nanos(first.lo_ns.0.min(s.min_ns));
    let n = buckets.len();
    buckets[n - 1].hi_ns = Nanos(last.hi_ns.0.max(s.max_ns));
    let est = stats::Moments::from_buckets(&buckets);
    let (est_mean, est_sd) = (est.mean, est.sd);
    let percentiles_ns = if summary_only { BTreeMap::new() } else { percentiles(&buckets, s.samples, s.min_ns, s.max_ns) };
    let mut r = ProbeResult::new(probe, phase, s.variant.clone(), s.thread, s.cpu, Nanos(s.interval_ns));
    r.samples = s.samples;
    r.overruns = s.overruns;
    r.overruns_known = !s.overruns_unknown;
    r.min_ns = Nanos(s.min_ns);
    r.max_ns = Nanos(s.max_ns);
    r.mean_ns = s.mean_ns.filter(|m| m.is_finite()).unwrap_or(est_mean);
    r.stddev_ns = s.stddev_ns.filter(|m| m.is_finite()).unwrap_or(if summary_only { 0.0 } else { est_sd });
    r.percentiles_ns = percentiles_ns;
    r.histogram = buckets;
    r.per_second = s.per_second;
    r.per_second_width_s = s.per_second_width_s.max(1);
    r.extras.signed = s.signed;
    r.extras.throughput = s.throughput;
    r.extras.samples_unknown = s.samples_unknown;
    Ok(r)
}

fn series_name(s: &Series) -> String {
    let mut n = s.probe.clone();
    if let Some(v) = &s.variant {
        n.push_str(&format!(" ({v})"));
    }
    if let Some(t) = s.thread {
        n.push_str(&format!(" thread {t}"));
    }
    n
}

/// Merge per-thread results into one entry with `thread`/`cpu` null.
pub(crate) fn merge_results(parts: &[&ProbeResult]) -> ProbeResult {
    let first = parts[0];
    let samples: u64 = parts.iter().map(|r| r.samples).fold(0u64, |a, b| a.saturating_add(b));
    let min = parts.iter().map(|r| r.min_ns.0).min().unwrap_or(0);
    let max = parts.iter().map(|r| r.max_ns.0).max().unwrap_or(0);
    let pooled = stats::Moments::pooled(
        &parts.iter().map(|r| stats::Moments { n: r.samples, mean: r.mean_ns, sd: r.stddev_ns }).collect::<Vec<_>>(),
    );
    let summary_only = parts.iter().any(|r| r.percentiles_ns.is_empty());
    let histogram = if summary_only {
        vec![Bucket { lo_ns: Nanos(min), hi_ns: Nanos(max), count: samples }]
    } else {
        normalise_buckets(parts.iter().flat_map(|r| r.histogram.iter().copied()).collect())
    };
    let percentiles_ns = if summary_only { BTreeMap::new() } else { percentiles(&histogram, samples, min, max) };
    let mut r = ProbeResult::new(first.probe.clone(), first.phase.clone(), first.variant.clone(), None, None, first.interval_ns);
    r.samples = samples;
    r.overruns = parts.iter().map(|r| r.overruns).fold(0u64, |a, b| a.saturating_add(b));
    r.overruns_known = parts.iter().all(|r| r.overruns_known);
    r.min_ns = Nanos(min);
    r.max_ns = Nanos(max);
    r.mean_ns = pooled.mean;
    r.stddev_ns = pooled.sd;
    r.percentiles_ns = percentiles_ns;
    r.histogram = histogram;
    r.extras.samples_unknown = parts.iter().any(|p| p.extras.samples_unknown);
    // Signed summaries merge when any part has one; a part without one had
    // no negative value, so its unsigned min/mean/max are its signed ones.
    if parts.iter().any(|p| p.extras.signed.is_some()) {
        r.extras.signed = parts
            .iter()
            .map(|p| {
                p.extras.signed.unwrap_or(SignedStats {
                    samples: p.samples,
                    min_ns: p.min_ns.0 as i64,
                    max_ns: p.max_ns.0 as i64,
                    mean_ns: p.mean_ns,
                    clamped: false,
                })
            })
            .reduce(SignedStats::merge);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_only_series_have_no_known_distribution() {
        let s = Series { probe: "sem".into(), samples: 10, min_ns: 3000, max_ns: 9000, mean_ns: Some(4000.0), ..Series::default() };
        let r = finish_series(s.clone(), "sem", "idle").unwrap();
        assert!(!r.distribution_known());
        assert!(r.percentiles_ns.is_empty());
        assert_eq!(r.histogram, vec![Bucket { lo_ns: Nanos(3000), hi_ns: Nanos(9000), count: 10 }]);
        let b = Bucket { lo_ns: Nanos(3000), hi_ns: Nanos(3999), count: 10 };
        let h = Series { buckets: vec![b], max_ns: 3500, ..s };
        let r = finish_series(h, "sem", "idle").unwrap();
        assert!(r.distribution_known());
        assert_eq!(r.percentiles_ns["50"], Nanos(3500), "top of the bucket, clamped to the max");
    }

    #[test]
    fn counts_that_disagree_with_samples_are_refused() {
        let b = Bucket { lo_ns: Nanos(0), hi_ns: Nanos(999), count: 9 };
        let s = Series { probe: "t".into(), samples: 10, min_ns: 0, max_ns: 999, buckets: vec![b], ..Series::default() };
        assert!(finish_series(s, "t", "idle").unwrap_err().msg.contains("sum to 9"));
    }
}
