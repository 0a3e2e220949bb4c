//! Building results from what a parser read: the intermediate [`Parsed`]
//! (one system) and [`Series`] (one thread, CPU column or task pair) every
//! format produces, and [`build_run`], which checks each series, turns it
//! into a [`ProbeResult`], adds one merged entry per probe/variant
//! ([`Merge`]) and wraps them in a schema v1 [`Run`] with `imported_from`
//! and `fidelity` notes (the rules in the module doc of `crate::import`).
//! [`Building`] gives the same run entry by entry, for saving and printing
//! in memory that does not grow with the number of entries.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

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
            let merged: Vec<ProbeResult> =
                std::mem::take(&mut self.groups).into_iter().filter(|(_, m)| m.wanted()).map(|(_, m)| m.finish()).collect();
            self.merged = Some(merged.into_iter());
            return self.next();
        };
        let probe = self.probe.clone().unwrap_or_else(|| s.probe.clone());
        let group = (probe, s.variant.clone());
        let r = match finish_series(s, &group.0, &self.phase) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        match self.groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, m)) => m.add(&r),
            None => self.groups.push((group, Merge::of(&r))),
        }
        Some(Ok(r))
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
    let groups: Vec<(&str, Option<&str>)> =
        crate::units::first_seen(series.groups.iter().map(|(p, v)| (ctx.probe.as_deref().unwrap_or(p), v.as_deref())));
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
    let from = ImportedFrom {
        format: ctx.format.name().into(),
        tool: tool_named,
        file_sha256: ctx.file_sha256.clone(),
        file: ctx.file.clone(),
        system,
    };
    let mut run = Run::imported(Tool::new(p.tool.clone(), p.tool_version.clone()), from, host, plan, Vec::new(), (started_at, finished_at));
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

/// The merged entry of one probe/variant, accumulated member by member:
/// what the merge needs of each member is kept (its moments, its buckets
/// folded in as they come), never the member itself.
pub(crate) struct Merge {
    first: ProbeResult,
    members: usize,
    any_thread: bool,
    samples: u64,
    overruns: u64,
    overruns_known: bool,
    min: u64,
    max: u64,
    /// Runs of equal moments, each with its count (1.5 M pairs of one
    /// IPC log mostly have the same ones; when they all differ, 16 B each).
    moments: MomentRuns,
    summary_only: bool,
    /// Every member's buckets, normalised whenever they double (merging
    /// overlapping ranges gives the same buckets in any grouping).
    buckets: Vec<Bucket>,
    normalised: usize,
    samples_unknown: bool,
    /// A member whose σ is unknown (`ProbeResult::stddev`).
    stddev_unknown: bool,
    signed: Option<SignedStats>,
    any_signed: bool,
}

impl Merge {
    /// A merge whose first member is `r` (its probe, phase, variant and
    /// period name the merged entry).
    pub(crate) fn of(r: &ProbeResult) -> Merge {
        let first = ProbeResult::new(r.probe.clone(), r.phase.clone(), r.variant.clone(), None, None, r.interval_ns);
        let mut m = Merge {
            first,
            members: 0,
            any_thread: false,
            samples: 0,
            overruns: 0,
            overruns_known: true,
            min: u64::MAX,
            max: 0,
            moments: MomentRuns::default(),
            summary_only: false,
            buckets: Vec::new(),
            normalised: 0,
            samples_unknown: false,
            stddev_unknown: false,
            signed: None,
            any_signed: false,
        };
        m.add(r);
        m
    }

    pub(crate) fn add(&mut self, r: &ProbeResult) {
        self.members += 1;
        self.any_thread |= r.thread.is_some();
        self.samples = self.samples.saturating_add(r.samples);
        self.overruns = self.overruns.saturating_add(r.overruns);
        self.overruns_known &= r.overruns_known;
        self.min = self.min.min(r.min_ns.0);
        self.max = self.max.max(r.max_ns.0);
        self.moments.push(stats::Moments { n: r.samples, mean: r.mean_ns, sd: r.stddev_ns });
        self.stddev_unknown |= r.stddev().is_none();
        self.samples_unknown |= r.extras.samples_unknown;
        self.summary_only |= r.percentiles_ns.is_empty();
        if self.summary_only {
            self.buckets = Vec::new();
        } else {
            self.buckets.extend_from_slice(&r.histogram);
            if self.buckets.len() > 2 * self.normalised + 4096 {
                self.buckets = normalise_buckets(std::mem::take(&mut self.buckets));
                self.normalised = self.buckets.len();
            }
        }
        // Signed summaries merge when any part has one; a part without one
        // had no negative value, so its unsigned min/mean/max are its signed ones.
        self.any_signed |= r.extras.signed.is_some();
        let signed = r.extras.signed.unwrap_or(SignedStats {
            samples: r.samples,
            min_ns: r.min_ns.0 as i64,
            max_ns: r.max_ns.0 as i64,
            mean_ns: r.mean_ns,
            clamped: false,
        });
        self.signed = Some(match self.signed {
            Some(acc) => SignedStats::merge(acc, signed),
            None => signed,
        });
    }

    /// A probe/variant has a merged entry when it has several members or
    /// its member is a thread's.
    fn wanted(&self) -> bool {
        self.members > 1 || self.any_thread
    }

    pub(crate) fn finish(self) -> ProbeResult {
        let (samples, min, max) = (self.samples, self.min, self.max);
        let pooled = stats::Moments::pooled(self.moments.iter());
        let histogram = if self.summary_only {
            vec![Bucket { lo_ns: Nanos(min), hi_ns: Nanos(max), count: samples }]
        } else {
            normalise_buckets(self.buckets)
        };
        let percentiles_ns = if self.summary_only { BTreeMap::new() } else { percentiles(&histogram, samples, min, max) };
        let mut r = self.first;
        r.samples = samples;
        r.overruns = self.overruns;
        r.overruns_known = self.overruns_known;
        r.min_ns = Nanos(min);
        r.max_ns = Nanos(max);
        r.mean_ns = pooled.mean;
        // A part's unknown σ (0) would pool into a σ too small: unknown (0).
        r.stddev_ns = if self.stddev_unknown { 0.0 } else { pooled.sd };
        r.percentiles_ns = percentiles_ns;
        r.histogram = histogram;
        r.extras.samples_unknown = self.samples_unknown;
        r.extras.signed = if self.any_signed { self.signed } else { None };
        r
    }
}

/// A merge's runs of equal moments (equal to the bit: n, mean and σ), in
/// the order of its members. A run is 16 B, its mean and n; the rarer parts
/// sit beside, by run index: the σ of the runs whose σ is not 0.0 (the IPC
/// tools print none; -0.0 is kept here, as it is not 0.0 to the bit), and
/// the count of the runs of more than one member. 1.5 M pairs of an IPC
/// log whose moments all differ cost half what a 32 B (moments, count)
/// per run did.
#[derive(Default)]
struct MomentRuns {
    runs: Vec<(f64, u64)>,
    /// (run index, σ), ascending, for σ not 0.0.
    sds: Vec<(usize, f64)>,
    /// (run index, count), ascending, for counts over 1.
    counts: Vec<(usize, u64)>,
}

impl MomentRuns {
    /// Adds a member: one more in the last run when its moments are that
    /// run's, or a new run.
    fn push(&mut self, m: stats::Moments) {
        if let Some(&(mean, n)) = self.runs.last() {
            let i = self.runs.len() - 1;
            let sd = match self.sds.last() {
                Some(&(j, sd)) if j == i => sd,
                _ => 0.0,
            };
            if n == m.n && mean.to_bits() == m.mean.to_bits() && sd.to_bits() == m.sd.to_bits() {
                match self.counts.last_mut() {
                    Some((j, k)) if *j == i => *k += 1,
                    _ => self.counts.push((i, 2)),
                }
                return;
            }
        }
        if m.sd.to_bits() != 0.0f64.to_bits() {
            self.sds.push((self.runs.len(), m.sd));
        }
        self.runs.push((m.mean, m.n));
    }

    /// The runs as (moments, count), in order.
    fn iter(&self) -> MomentRunsIter<'_> {
        MomentRunsIter { runs: self.runs.iter().enumerate(), sds: &self.sds, counts: &self.counts }
    }
}

/// [`MomentRuns::iter`]: walks the runs and the two sparse lists together.
#[derive(Clone)]
struct MomentRunsIter<'a> {
    runs: std::iter::Enumerate<std::slice::Iter<'a, (f64, u64)>>,
    sds: &'a [(usize, f64)],
    counts: &'a [(usize, u64)],
}

impl Iterator for MomentRunsIter<'_> {
    type Item = (stats::Moments, u64);

    fn next(&mut self) -> Option<(stats::Moments, u64)> {
        let (i, &(mean, n)) = self.runs.next()?;
        let sd = match self.sds.split_first() {
            Some((&(j, sd), rest)) if j == i => {
                self.sds = rest;
                sd
            }
            _ => 0.0,
        };
        let k = match self.counts.split_first() {
            Some((&(j, k), rest)) if j == i => {
                self.counts = rest;
                k
            }
            _ => 1,
        };
        Some((stats::Moments { n, mean, sd }, k))
    }
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

    #[test]
    fn merged_moments_are_those_of_every_member_to_the_bit() {
        let m = |n: u64, mean: f64, sd: f64| stats::Moments { n, mean, sd };
        let (a, b, c) = (m(1000, 5000.5, 0.0), m(1000, 5001.25, 0.0), m(2000, 4999.0, 12.5));
        let (d, e) = (m(1000, 5000.5, -0.0), m(3, 1e9 / 3.0, 0.0));
        // Equal runs, distinct ones, a σ in the middle, -0.0 (not a's 0.0 to the bit).
        let members = [a, a, a, b, c, c, d, d, a, e];
        let member = |x: &stats::Moments| {
            let mut r = ProbeResult::new("pair", "idle", None, Some(0), None, Nanos(100_000));
            (r.samples, r.mean_ns, r.stddev_ns) = (x.n, x.mean, x.sd);
            // A σ of 0 is a member whose samples are all equal (else its σ is unknown).
            (r.min_ns, r.max_ns) = if x.sd > 0.0 { (Nanos(1), Nanos(9)) } else { (Nanos(5000), Nanos(5000)) };
            r
        };
        let mut merge = Merge::of(&member(&members[0]));
        members[1..].iter().for_each(|x| merge.add(&member(x)));
        let bits = |(x, k): (stats::Moments, u64)| (x.n, x.mean.to_bits(), x.sd.to_bits(), k);
        let runs: Vec<_> = merge.moments.iter().map(bits).collect();
        let want: Vec<_> = [(a, 3), (b, 1), (c, 2), (d, 2), (a, 1), (e, 1)].into_iter().map(bits).collect();
        assert_eq!(runs, want);
        assert_eq!(merge.moments.runs.len(), 6);
        assert_eq!(merge.moments.sds.iter().map(|&(i, sd)| (i, sd.to_bits())).collect::<Vec<_>>(), [(2, 12.5f64.to_bits()), (3, (-0.0f64).to_bits())]);
        assert_eq!(merge.moments.counts, [(0, 3), (2, 2), (3, 2)]);
        let plain = stats::Moments::pooled(members.iter().map(|&x| (x, 1)));
        let r = merge.finish();
        assert_eq!(r.samples, 3 * 1000 + 1000 + 2 * 2000 + 2 * 1000 + 1000 + 3);
        assert_eq!((r.mean_ns.to_bits(), r.stddev_ns.to_bits()), (plain.mean.to_bits(), plain.sd.to_bits()));
        assert!(r.stddev_ns > 12.5 && r.stddev_ns.is_finite(), "σ pools the spread of the means too: {}", r.stddev_ns);
    }

    /// A member whose σ the tool did not give (0 beside min < max: pmqtest's
    /// pairs) makes the merged σ unknown, not the spread of the means alone.
    #[test]
    fn an_unknown_member_sigma_leaves_the_merged_sigma_unknown() {
        let member = |mean: f64, sd: f64| {
            let mut r = ProbeResult::new("pair", "idle", None, Some(0), None, Nanos(100_000));
            (r.samples, r.mean_ns, r.stddev_ns, r.min_ns, r.max_ns) = (100, mean, sd, Nanos(1_000), Nanos(9_000));
            r
        };
        let mut merge = Merge::of(&member(4_000.0, 500.0));
        merge.add(&member(6_000.0, 700.0));
        assert!(merge.finish().stddev().is_some_and(|s| s > 700.0));
        let mut merge = Merge::of(&member(4_000.0, 500.0));
        merge.add(&member(6_000.0, 0.0));
        let r = merge.finish();
        assert_eq!((r.stddev_ns, r.stddev()), (0.0, None));
    }
}
