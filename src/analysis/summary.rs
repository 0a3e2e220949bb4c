//! The analysis of one or more results: what every renderer reads.
//!
//! [`analyse`] turns runs into an [`Analysis`]: for each run its host, its
//! warnings (with advice) and one [`EntryAnalysis`] per result entry
//! (per thread and merged, per probe/phase/variant) with percentiles
//! recomputed from the histogram, mean and σ, deadline misses and the
//! statistical worst case; and, when several runs are given, their
//! [`Comparison`]. The renderers are pure functions of it.

use serde::Serialize;

use crate::analysis::compare::{self, Comparison, EntryKey};
use crate::analysis::deadline::{self, DeadlineMisses};
use crate::analysis::evt::{self, Pwcet};
use crate::analysis::percentiles::{self, Percentile};
use crate::analysis::warnings;
use crate::error::BadInput;
use crate::model::{Host, Nanos, Plan, ProbeResult, Run};

/// Default width of the bin tables (seed 001 used 5 000 ns).
pub(crate) const DEFAULT_BIN_NS: u64 = 5_000;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Options {
    pub(crate) deadline: Option<Nanos>,
    pub(crate) bin_width: Nanos,
    /// Fit the statistical worst case (per entry; the costliest step).
    pub(crate) pwcet: bool,
    /// How entries of several runs are put side by side.
    pub(crate) pairing: compare::Pairing,
}

impl Default for Options {
    fn default() -> Options {
        Options { deadline: None, bin_width: Nanos(DEFAULT_BIN_NS), pwcet: true, pairing: compare::Pairing::default() }
    }
}

/// One analysed result entry. It borrows its result (no histogram is
/// copied) and reads as it: `e.samples`, `e.histogram` are the result's
/// (`Deref`); what the analysis adds is beside it.
#[derive(Debug, Clone)]
pub(crate) struct EntryAnalysis<'r> {
    pub(crate) result: &'r ProbeResult,
    /// Recomputed from the histogram (empty when the distribution is unknown).
    pub(crate) percentiles: Vec<Percentile>,
    pub(crate) deadline: Option<DeadlineMisses>,
    pub(crate) pwcet: Option<Pwcet>,
}

impl std::ops::Deref for EntryAnalysis<'_> {
    type Target = ProbeResult;
    fn deref(&self) -> &ProbeResult {
        self.result
    }
}

/// The report JSON's entry: the result's summary fields (its histogram, per
/// second series and tail are in the result file, not repeated here), then
/// what the analysis adds.
impl Serialize for EntryAnalysis<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let r = self.result;
        let mut m = s.serialize_struct("EntryAnalysis", 15)?;
        m.serialize_field("probe", &r.probe)?;
        m.serialize_field("phase", &r.phase)?;
        m.serialize_field("variant", &r.variant)?;
        m.serialize_field("thread", &r.thread)?;
        m.serialize_field("cpu", &r.cpu)?;
        m.serialize_field("interval_ns", &r.interval_ns)?;
        m.serialize_field("samples", &r.samples)?;
        m.serialize_field("overruns", &r.overruns)?;
        if r.overruns_known {
            m.skip_field("overruns_known")?;
        } else {
            m.serialize_field("overruns_known", &false)?;
        }
        m.serialize_field("min_ns", &r.min_ns)?;
        m.serialize_field("max_ns", &r.max_ns)?;
        m.serialize_field("mean_ns", &r.mean_ns)?;
        m.serialize_field("stddev_ns", &r.stddev())?;
        m.serialize_field("percentiles", &self.percentiles)?;
        m.serialize_field("deadline", &self.deadline)?;
        m.serialize_field("pwcet", &self.pwcet)?;
        m.end()
    }
}

impl EntryAnalysis<'_> {
    pub(crate) fn key(&self) -> EntryKey {
        EntryKey { probe: self.probe.clone(), phase: self.phase.clone(), variant: self.variant.clone() }
    }
    pub(crate) fn percentile(&self, label: &str) -> Option<Nanos> {
        self.percentiles.iter().find(|p| p.label == label).map(|p| p.value_ns)
    }
    /// The percentile with its bound, for display (`Percentile::shown`).
    pub(crate) fn percentile_bound(&self, label: &str) -> Option<&Percentile> {
        self.percentiles.iter().find(|p| p.label == label)
    }
    /// "all" or the thread number.
    pub(crate) fn thread_label(&self) -> String {
        self.thread.map(|t| t.to_string()).unwrap_or_else(|| "all".into())
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunAnalysis<'r> {
    /// The system's name in tables (host + kernel, or `--name`).
    pub(crate) name: String,
    /// Where the result came from (a file path).
    pub(crate) source: String,
    pub(crate) started_at: String,
    pub(crate) finished_at: String,
    pub(crate) interrupted: bool,
    pub(crate) host: &'r Host,
    pub(crate) plan: &'r Plan,
    pub(crate) realtime_ok: bool,
    pub(crate) warnings: Vec<String>,
    /// The idle check of each phase it covers ([`warnings::other_work`]);
    /// left out of report JSON when it covers none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) other_work: Vec<warnings::OtherWork>,
    pub(crate) entries: Vec<EntryAnalysis<'r>>,
    /// The run itself (the trace attribution is rendered from it).
    #[serde(skip)]
    pub(crate) run: &'r crate::model::Run,
    /// The Rhealstone table (empty unless some phase has three of its six
    /// components).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) rhealstone: Vec<crate::analysis::suites::RhealstonePhase>,
    /// The Thread-Metric rows (empty without `throughput` entries).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) thread_metric: Vec<crate::analysis::suites::ThreadMetricRow>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Analysis<'r> {
    pub(crate) tool_version: String,
    pub(crate) options: Options,
    pub(crate) runs: Vec<RunAnalysis<'r>>,
    /// The runs side by side (with one run: its bin tables only).
    pub(crate) comparison: Comparison,
}

/// Analyse one entry of a run measured on this host.
pub(crate) fn entry<'r>(r: &'r ProbeResult, opts: &Options, imported_from: Option<&str>) -> EntryAnalysis<'r> {
    entry_at(r, opts, imported_from, true)
}

/// Analyse one entry; `here`: measured on this host, not on a target (no
/// advice that audits this host for another system).
fn entry_at<'r>(r: &'r ProbeResult, opts: &Options, imported_from: Option<&str>, here: bool) -> EntryAnalysis<'r> {
    EntryAnalysis {
        result: r,
        // A summary-only import's one [min, max] bucket is not a distribution:
        // its percentiles are unknown, not all equal to the max.
        percentiles: if r.distribution_known() { percentiles::reported(&r.histogram, r.min_ns, r.max_ns) } else { Vec::new() },
        deadline: opts.deadline.map(|d| deadline::misses(r, d)),
        // A throughput entry's samples are intervals, not events: no tail to fit.
        pwcet: if opts.pwcet && r.samples > 0 && r.extras.throughput.is_none() { Some(evt::pwcet(r, imported_from, here)) } else { None },
    }
}

/// `f` over `items` on up to `available_parallelism` threads, in order.
/// The statistical worst case (a bootstrap of GPD fits) is the costly part
/// of the analysis and every entry is independent. A chunk whose thread
/// the system refuses (RLIMIT_NPROC) is done on this thread.
fn par_map<'a, T: Sync, U: Send>(items: &'a [T], f: impl Fn(&'a T) -> U + Sync) -> Vec<U> {
    let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(items.len().max(1));
    if n <= 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(n);
    let f = &f;
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(chunk)
            .map(|c| std::thread::Builder::new().name("rtscope-analysis".into()).spawn_scoped(s, move || c.iter().map(f).collect::<Vec<U>>()).map_err(|_| c))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| match p {
                Ok(h) => h.join().expect("analysis thread panicked"),
                Err(c) => c.iter().map(f).collect(),
            })
            .collect()
    })
}

/// Analyse `runs` (each with its source, e.g. the file path). `names`
/// overrides the system names, in order. Errors: a `--phases` pair or a
/// `--match probe` the inputs do not allow (exit 2, named).
pub(crate) fn analyse<'r>(runs: &'r [(String, Run)], names: &[String], opts: &Options) -> Result<Analysis<'r>, BadInput> {
    let refs: Vec<&Run> = runs.iter().map(|(_, r)| r).collect();
    let sources: Vec<String> = runs.iter().map(|(s, _)| s.clone()).collect();
    let systems = compare::system_names(&refs, &sources, names);
    let out: Vec<RunAnalysis> = runs
        .iter()
        .zip(systems.iter())
        .map(|((source, run), name)| RunAnalysis {
            name: name.clone(),
            source: source.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            interrupted: run.interrupted,
            host: &run.host,
            plan: &run.plan,
            realtime_ok: run.realtime_setup.ok,
            warnings: warnings::for_run(run).iter().map(|w| w.to_string()).collect(),
            other_work: warnings::other_work(run),
            entries: par_map(&run.results, |r| entry_at(r, opts, run.imported_from.as_ref().map(|i| i.tool.as_str()), run.agent.is_none())),
            run,
            rhealstone: crate::analysis::suites::rhealstone(run),
            thread_metric: crate::analysis::suites::thread_metric(run),
        })
        .collect();
    let mut comparison = compare::compare(&refs, &systems, opts.bin_width, &opts.pairing)?;
    // Only names rtscope chose are "named by their source": `--name` is the user's.
    if names.is_empty() {
        if let Some(n) = compare::same_system_note(&refs, &systems) {
            comparison.notes.insert(0, n);
        }
    }
    Ok(Analysis { tool_version: env!("CARGO_PKG_VERSION").into(), options: opts.clone(), runs: out, comparison })
}
