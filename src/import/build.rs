//! Building results from what a parser read: the intermediate [`Parsed`]
//! (one system) and [`Series`] (one thread, CPU column or task pair) every
//! format produces, and [`build_run`], which checks each series, turns it
//! into a [`ProbeResult`], adds one merged entry per probe/variant
//! ([`Merge`], src/import/merge.rs) and wraps them in a schema v1 [`Run`] with `imported_from`
//! and `fidelity` notes (the rules in the module doc of `crate::import`).
//! [`Building`] gives the same run entry by entry, for saving and printing
//! in memory that does not grow with the number of entries.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::fold::{normalise_buckets, percentiles};
use super::format::Format;
use super::merge::{distribution_of, named, Merge};
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
    /// In place of `series`: series built when they are asked for, by a
    /// parser that reads its file again (an IPC log of millions of pairs,
    /// a cyclictest JSON file of 100 000 threads).
    pub(crate) rows: Option<Box<Rows>>,
    pub(crate) fidelity: Vec<String>,
}

/// Series built on demand, each time `open` is called, in the same order
/// every time, with what the run's header needs of them (`shape`) known
/// beforehand: memory for one series at a time, not for all of them.
#[derive(Clone)]
pub(crate) struct Rows {
    pub(crate) shape: Shape,
    pub(crate) open: std::rc::Rc<dyn Fn() -> SeriesIter>,
    /// The run's notes, when only the whole series give them (a folding
    /// that depends on every thread): set by the parser's series once a
    /// building has seen them all (the check, before anything is stored
    /// or printed); until then the parsed notes.
    pub(crate) notes: Option<Rc<RefCell<Option<Vec<String>>>>>,
}

/// Series as they are built, or why one could not be.
pub(crate) type SeriesIter = Box<dyn Iterator<Item = Result<Series, ParseError>>>;

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows").field("shape", &self.shape).finish_non_exhaustive()
    }
}

/// What the run's header needs of the series: their number, CPUs
/// (ascending), first non-zero period, probe/variant groups (in the order
/// first seen, each series' own probe) and whether any cannot count its
/// overruns.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    pub(crate) count: usize,
    pub(crate) cpus: std::collections::BTreeSet<usize>,
    pub(crate) interval_ns: u64,
    pub(crate) groups: Vec<(String, Option<String>)>,
    pub(crate) overruns_unknown: bool,
}

impl Shape {
    /// One more series.
    pub(crate) fn add(&mut self, s: &Series) {
        self.count += 1;
        self.cpus.extend(s.cpu);
        if self.interval_ns == 0 {
            self.interval_ns = s.interval_ns;
        }
        if !self.groups.iter().any(|(p, v)| *p == s.probe && *v == s.variant) {
            self.groups.push((s.probe.clone(), s.variant.clone()));
        }
        self.overruns_unknown |= s.overruns_unknown;
    }

    /// The count of series added.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    fn of(series: &[Series]) -> Shape {
        let groups = crate::units::first_seen(series.iter().map(|s| (s.probe.as_str(), s.variant.as_deref())));
        Shape {
            count: series.len(),
            cpus: series.iter().filter_map(|s| s.cpu).collect(),
            interval_ns: series.iter().map(|s| s.interval_ns).find(|&i| i > 0).unwrap_or(0),
            groups: groups.into_iter().map(|(p, v)| (p.to_string(), v.map(str::to_string))).collect(),
            overruns_unknown: series.iter().any(|s| s.overruns_unknown),
        }
    }
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

/// Build the schema v1 run for one parsed system, whole (see [`Building`]
/// for the same run entry by entry).
pub fn build_run(p: Parsed, ctx: &Context) -> Result<Run, ParseError> {
    if p.rows.as_ref().is_some_and(|r| r.notes.is_some()) {
        // A first building gives the notes only the whole series give.
        Building::borrowed(&p, ctx)?.1.try_for_each(|r| r.map(drop))?;
    }
    let (mut run, entries) = Building::new(p, ctx)?;
    run.results = entries.collect::<Result<_, _>>()?;
    Ok(run)
}

/// One system's entries built one by one, so memory does not grow with
/// their number: one per series as it is taken from the parsed file, then
/// one merged entry (thread = null) per probe/variant, as native runs have,
/// each accumulated by [`Merge`] as its members go by. The constructors
/// give the run without its entries (`results` empty) beside it; the whole
/// run is that with these as `results` ([`build_run`]).
pub(crate) struct Building<'p> {
    series: Box<dyn Iterator<Item = Result<Series, ParseError>> + 'p>,
    probe: Option<String>,
    phase: String,
    /// Per probe/variant, in the order first seen: the merge so far.
    groups: Vec<((String, Option<String>), Merge)>,
    /// The merged entries, once every series is built.
    merged: Option<std::vec::IntoIter<ProbeResult>>,
}

impl<'p> Building<'p> {
    /// Take the series of `p` (their buckets move, never copied).
    /// (Or of its [`Rows`], built as they are taken.)
    pub(crate) fn new(mut p: Parsed, ctx: &Context) -> Result<(Run, Building<'p>), ParseError> {
        if let Some(rows) = &p.rows {
            return Building::of_rows(&p, rows, ctx);
        }
        let series = std::mem::take(&mut p.series);
        let header = header(&p, &Shape::of(&series), ctx)?;
        Ok((header, Building::with(Box::new(series.into_iter().map(Ok)), ctx)))
    }

    /// Build from a borrowed `p`, each series copied as it is built (a
    /// check pass before the run is stored or printed).
    pub(crate) fn borrowed(p: &'p Parsed, ctx: &Context) -> Result<(Run, Building<'p>), ParseError> {
        if let Some(rows) = &p.rows {
            return Building::of_rows(p, rows, ctx);
        }
        let header = header(p, &Shape::of(&p.series), ctx)?;
        Ok((header, Building::with(Box::new(p.series.iter().cloned().map(Ok)), ctx)))
    }

    /// The run of `p` whose series are its `rows`, built as they are
    /// taken (they borrow nothing of `p`; its header reads their notes).
    fn of_rows(p: &Parsed, rows: &Rows, ctx: &Context) -> Result<(Run, Building<'p>), ParseError> {
        Ok((header(p, &rows.shape, ctx)?, Building::with((rows.open)(), ctx)))
    }

    fn with(series: Box<dyn Iterator<Item = Result<Series, ParseError>> + 'p>, ctx: &Context) -> Building<'p> {
        Building { series, probe: ctx.probe.clone(), phase: ctx.phase.clone(), groups: Vec::new(), merged: None }
    }
}

impl Iterator for Building<'_> {
    type Item = Result<ProbeResult, ParseError>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(m) = &mut self.merged {
            return m.next().map(Ok);
        }
        let s = match self.series.next() {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => return Some(Err(e)),
            None => None,
        };
        let Some(s) = s else {
            let merged: Result<Vec<ProbeResult>, ParseError> =
                std::mem::take(&mut self.groups).into_iter().filter(|(_, m)| m.wanted()).map(|(_, m)| m.finish()).collect();
            match merged {
                Ok(m) => self.merged = Some(m.into_iter()),
                Err(e) => return Some(Err(e)),
            }
            return self.next();
        };
        let probe = self.probe.clone().unwrap_or_else(|| s.probe.clone());
        let group = (probe, s.variant.clone());
        let r = match finish_series(s, &group.0, &self.phase) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let added = match self.groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, m)) => m.add(&r),
            None => Merge::of(&r).map(|m| self.groups.push((group, m))),
        };
        Some(added.map(|()| r))
    }
}

/// The run of `p` without its entries: host, plan, `imported_from` and
/// `fidelity` notes, from what the file says and the series' CPUs,
/// periods and probe/variant groups.
fn header(p: &Parsed, series: &Shape, ctx: &Context) -> Result<Run, ParseError> {
    let system = ctx.name.clone().or(p.system.clone()).unwrap_or_else(|| ctx.file_stem.clone());
    let known = p.rows.as_ref().and_then(|r| r.notes.as_ref()).and_then(|n| n.borrow().clone());
    let mut fidelity = known.unwrap_or_else(|| p.fidelity.clone());
    if series.overruns_unknown {
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
    if series.count == 0 {
        return Err(ParseError::file("the file holds no measurements"));
    }
    let cpus: Vec<usize> = series.cpus.iter().copied().collect();
    let interval = series.interval_ns;
    let groups: Vec<(&str, Option<&str>)> = crate::units::first_seen(series.groups.iter().map(|(p, v)| (ctx.probe.as_deref().unwrap_or(p), v.as_deref())));
    let mut probes: Vec<String> = groups.iter().map(|g| g.0.to_string()).collect();
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
    plan.threads = series.count;
    plan.cpus = cpus;
    let from = ImportedFrom { format: ctx.format.name().into(), tool: tool_named, file_sha256: ctx.file_sha256.clone(), file: ctx.file.clone(), system };
    let mut run = Run::imported(Tool::new(p.tool.clone(), p.tool_version.clone()), from, host, plan, Vec::new(), (started_at, finished_at));
    run.command_line = p.command_line.clone();
    run.fidelity = fidelity;
    Ok(run)
}

/// Validate one series and turn it into a result.
pub(super) fn finish_series(s: Series, probe: &str, phase: &str) -> Result<ProbeResult, ParseError> {
    let what = series_name(&s);
    if s.samples == 0 {
        return Err(ParseError::file(format!("{what}: no samples")));
    }
    if s.min_ns > s.max_ns {
        return Err(ParseError::file(format!("{what}: min {} ns is above max {} ns", s.min_ns, s.max_ns)));
    }
    let summary_only = s.buckets.is_empty();
    let mut buckets =
        if summary_only { vec![Bucket { lo_ns: Nanos(s.min_ns), hi_ns: Nanos(s.max_ns), count: s.samples }] } else { normalise_buckets(s.buckets) };
    let total = buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.count));
    match total {
        Some(t) if t == s.samples => {}
        Some(t) => return Err(ParseError::file(format!("{what}: histogram counts sum to {t} but the file reports {} samples", s.samples))),
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
    // The invariants every stored entry meets (its per-second means are
    // the file's floats: checked by the parsers that read them).
    distribution_of(&r).check(&what).map_err(ParseError::file)?;
    Ok(r)
}

fn series_name(s: &Series) -> String {
    named(&s.probe, s.variant.as_deref(), s.thread)
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
