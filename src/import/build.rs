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
use crate::measure::distribution::Distribution;
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
    // The invariants every stored entry meets (its per-second means are
    // the file's floats: checked by the parsers that read them).
    distribution_of(&r).check(&what).map_err(ParseError::file)?;
    Ok(r)
}

fn series_name(s: &Series) -> String {
    named(&s.probe, s.variant.as_deref(), s.thread)
}

/// A series or entry as an error names it: probe, variant and thread.
fn named(probe: &str, variant: Option<&str>, thread: Option<usize>) -> String {
    let mut n = probe.to_string();
    if let Some(v) = variant {
        n.push_str(&format!(" ({v})"));
    }
    if let Some(t) = thread {
        n.push_str(&format!(" thread {t}"));
    }
    n
}

/// The merged entry of one probe/variant, accumulated member by member:
/// counts, extremes and buckets through the one distribution type
/// ([`Distribution::merge`]: checked counts, buckets fused where members'
/// grids overlap, one range when a member is summary-only), checked and made
/// into the entry as a native or agent merge is ([`Distribution::check`],
/// [`Distribution::to_result`]). What an imported file has that those do
/// not is kept beside: the members' moments (the files give mean and σ as
/// floats, pooled at the end), whether their overruns, samples and σ are
/// known, and their signed summaries.
pub(crate) struct Merge {
    first: ProbeResult,
    members: usize,
    any_thread: bool,
    dist: Distribution,
    overruns_known: bool,
    /// Runs of equal moments, each with its count (1.5 M pairs of one
    /// IPC log mostly have the same ones; when they all differ, 16 B each).
    moments: MomentRuns,
    samples_unknown: bool,
    /// A member whose σ is unknown (`ProbeResult::stddev`).
    stddev_unknown: bool,
    signed: Option<SignedStats>,
    any_signed: bool,
}

/// An imported entry as the one distribution type: its counts, extremes
/// and buckets (its range when it has no percentiles), its sums unknown.
fn distribution_of(r: &ProbeResult) -> Distribution {
    let summary_only = r.percentiles_ns.is_empty();
    let range = || vec![Bucket { lo_ns: r.min_ns, hi_ns: r.max_ns, count: r.samples }];
    Distribution {
        samples: r.samples,
        overruns: r.overruns,
        min_ns: r.min_ns.0,
        max_ns: r.max_ns.0,
        buckets: if summary_only { range() } else { r.histogram.clone() },
        width_s: 1,
        summary_only,
        sums_unknown: true,
        ..Distribution::default()
    }
}

impl Merge {
    /// A merge whose first member is `r` (its probe, phase, variant and
    /// period name the merged entry).
    pub(crate) fn of(r: &ProbeResult) -> Result<Merge, ParseError> {
        let first = ProbeResult::new(r.probe.clone(), r.phase.clone(), r.variant.clone(), None, None, r.interval_ns);
        let mut m = Merge {
            first,
            members: 0,
            any_thread: false,
            dist: Distribution { sums_unknown: true, width_s: 1, ..Distribution::default() },
            overruns_known: true,
            moments: MomentRuns::default(),
            samples_unknown: false,
            stddev_unknown: false,
            signed: None,
            any_signed: false,
        };
        m.add(r)?;
        Ok(m)
    }

    /// Fold in member `r`; a count that would pass what a result holds is
    /// an error naming the member.
    pub(crate) fn add(&mut self, r: &ProbeResult) -> Result<(), ParseError> {
        // Named only when an error says it (1.5 M pairs of an IPC log merge here).
        let source = Merging(r, self.members + 1);
        self.dist.merge(&distribution_of(r), &source).map_err(ParseError::file)?;
        self.members += 1;
        self.any_thread |= r.thread.is_some();
        self.overruns_known &= r.overruns_known;
        self.moments.push(stats::Moments { n: r.samples, mean: r.mean_ns, sd: r.stddev_ns });
        self.stddev_unknown |= r.stddev().is_none();
        self.samples_unknown |= r.extras.samples_unknown;
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
        Ok(())
    }

    /// A probe/variant has a merged entry when it has several members or
    /// its member is a thread's.
    fn wanted(&self) -> bool {
        self.members > 1 || self.any_thread
    }

    /// The merged entry, checked as every stored entry is.
    pub(crate) fn finish(self) -> Result<ProbeResult, ParseError> {
        let f = &self.first;
        let what = format!("{} merged", entry_name(f));
        self.dist.check(&what).map_err(ParseError::file)?;
        let mut r = self.dist.to_result(&f.probe, &f.phase, f.variant.clone(), None, None, f.interval_ns.0);
        let pooled = stats::Moments::pooled(self.moments.iter());
        r.overruns_known = self.overruns_known;
        r.mean_ns = pooled.mean;
        // A part's unknown σ (0) would pool into a σ too small: unknown (0).
        r.stddev_ns = if self.stddev_unknown { 0.0 } else { pooled.sd };
        r.extras.samples_unknown = self.samples_unknown;
        r.extras.signed = if self.any_signed { self.signed } else { None };
        Ok(r)
    }
}

/// An entry as an error names it.
fn entry_name(r: &ProbeResult) -> String {
    named(&r.probe, r.variant.as_deref(), r.thread)
}

/// The `n`th member of a merge, as an error of [`Merge::add`] names it.
struct Merging<'a>(&'a ProbeResult, usize);

impl std::fmt::Display for Merging<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (merging {})", entry_name(self.0), self.1)
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
        let mut merge = Merge::of(&member(&members[0])).unwrap();
        members[1..].iter().for_each(|x| merge.add(&member(x)).unwrap());
        let bits = |(x, k): (stats::Moments, u64)| (x.n, x.mean.to_bits(), x.sd.to_bits(), k);
        let runs: Vec<_> = merge.moments.iter().map(bits).collect();
        let want: Vec<_> = [(a, 3), (b, 1), (c, 2), (d, 2), (a, 1), (e, 1)].into_iter().map(bits).collect();
        assert_eq!(runs, want);
        assert_eq!(merge.moments.runs.len(), 6);
        assert_eq!(merge.moments.sds.iter().map(|&(i, sd)| (i, sd.to_bits())).collect::<Vec<_>>(), [(2, 12.5f64.to_bits()), (3, (-0.0f64).to_bits())]);
        assert_eq!(merge.moments.counts, [(0, 3), (2, 2), (3, 2)]);
        let plain = stats::Moments::pooled(members.iter().map(|&x| (x, 1)));
        let r = merge.finish().unwrap();
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
        let mut merge = Merge::of(&member(4_000.0, 500.0)).unwrap();
        merge.add(&member(6_000.0, 700.0)).unwrap();
        assert!(merge.finish().unwrap().stddev().is_some_and(|s| s > 700.0));
        let mut merge = Merge::of(&member(4_000.0, 500.0)).unwrap();
        merge.add(&member(6_000.0, 0.0)).unwrap();
        let r = merge.finish().unwrap();
        assert_eq!((r.stddev_ns, r.stddev()), (0.0, None));
    }

    /// An imported series of `values` on a grid of `width` ns buckets (a
    /// file's histogram), with the moments a tool would print.
    fn binned(thread: Option<usize>, values: &[u64], width: u64) -> Series {
        let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
        values.iter().for_each(|v| *counts.entry(v / width).or_default() += 1);
        let n = values.len() as f64;
        let mean = values.iter().sum::<u64>() as f64 / n;
        let sd = (values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        Series {
            probe: "timer".into(),
            thread,
            interval_ns: 1000,
            samples: values.len() as u64,
            min_ns: *values.iter().min().unwrap(),
            max_ns: *values.iter().max().unwrap(),
            mean_ns: Some(mean),
            stddev_ns: Some(sd),
            buckets: counts.into_iter().map(|(k, c)| Bucket { lo_ns: Nanos(k * width), hi_ns: Nanos(k * width + width - 1), count: c }).collect(),
            ..Series::default()
        }
    }

    proptest::proptest! {
        /// Imported members merged through the one type give the entry of
        /// one imported series of every sample (the same grid): histogram,
        /// percentiles, count and extremes exactly, the pooled moments to
        /// rounding; summary-only members give the range of them all.
        #[test]
        fn merging_imported_members_equals_importing_everything_in_one(
            parts in proptest::collection::vec(proptest::collection::vec(0u64..200_000, 1..40), 1..5),
            width in proptest::sample::select(vec![1u64, 7, 1000]),
            summary in proptest::bool::ANY,
        ) {
            let member = |t: usize, p: &[u64]| {
                let s = binned(Some(t), p, width);
                finish_series(if summary { Series { buckets: Vec::new(), ..s } } else { s }, "timer", "idle").unwrap()
            };
            let mut merge = Merge::of(&member(0, &parts[0])).unwrap();
            for (t, p) in parts.iter().enumerate().skip(1) {
                merge.add(&member(t, p)).unwrap();
            }
            let merged = merge.finish().unwrap();
            let all = parts.concat();
            let one = member(0, &all);
            proptest::prop_assert_eq!(merged.samples, all.len() as u64);
            proptest::prop_assert_eq!((merged.min_ns, merged.max_ns), (one.min_ns, one.max_ns));
            proptest::prop_assert_eq!(&merged.histogram, &one.histogram);
            proptest::prop_assert_eq!(&merged.percentiles_ns, &one.percentiles_ns);
            proptest::prop_assert_eq!(merged.percentiles_ns.is_empty(), summary);
            proptest::prop_assert!((merged.mean_ns - one.mean_ns).abs() <= 1e-9 * one.mean_ns.max(1.0));
            proptest::prop_assert!((merged.stddev_ns - one.stddev_ns).abs() <= 1e-6 * one.stddev_ns.max(1.0), "{} vs {}", merged.stddev_ns, one.stddev_ns);
        }
    }

    /// Members on different grids (two tools' bin widths) keep every sample
    /// in a bucket that holds it: overlapping buckets fuse, counts add.
    #[test]
    fn members_on_different_grids_fuse_where_they_overlap() {
        let a = finish_series(binned(Some(0), &[1_500, 2_500, 9_100], 1000), "timer", "idle").unwrap();
        let b = finish_series(binned(Some(1), &[1_900, 9_100], 2000), "timer", "idle").unwrap();
        let mut merge = Merge::of(&a).unwrap();
        merge.add(&b).unwrap();
        let r = merge.finish().unwrap();
        let bucket = |lo, hi, count| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count };
        // 1 500 and 1 900 share [0, 1 999] (a's [1 000, 1 999] inside b's
        // [0, 1 999]); a's [2 000, 2 999] only touches it: kept apart.
        assert_eq!(r.histogram, vec![bucket(0, 1_999, 2), bucket(2_000, 2_999, 1), bucket(8_000, 9_999, 2)]);
        assert_eq!((r.samples, r.min_ns, r.max_ns), (5, Nanos(1_500), Nanos(9_100)));
    }

    /// The agent's overflow case, imported: two series whose counts add past
    /// what a result holds are refused naming the entry, never saturated.
    #[test]
    fn an_overflowing_import_merge_is_refused() {
        let big = |t: usize| {
            let n = crate::model::MAX_STORED / 2 + 1;
            let b = Bucket { lo_ns: Nanos(100), hi_ns: Nanos(100), count: n };
            let s = Series { probe: "timer".into(), thread: Some(t), samples: n, min_ns: 100, max_ns: 100, buckets: vec![b], ..Series::default() };
            finish_series(s, "timer", "idle").unwrap()
        };
        let mut merge = Merge::of(&big(0)).unwrap();
        let e = merge.add(&big(1)).unwrap_err().msg;
        assert!(e.starts_with("timer thread 1 (merging 2): samples") && e.contains("largest value a result holds"), "{e}");
    }
}
