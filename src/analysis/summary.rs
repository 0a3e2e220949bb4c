//! The analysis of one or more results: what every renderer reads.
//!
//! [`analyse`] turns runs into an [`Analysis`]: for each run its host, its
//! warnings (with advice) and one [`EntryAnalysis`] per result entry
//! (per thread and merged, per probe/phase/variant) with percentiles
//! recomputed from the histogram, mean and σ, deadline misses and the
//! statistical worst case; and, when several runs are given, their
//! [`Comparison`]. Renderers (`crate::report`) are pure functions of it.

use serde::Serialize;

use crate::analysis::compare::{self, Comparison, EntryKey};
use crate::analysis::deadline::{self, DeadlineMisses};
use crate::analysis::evt::{self, Pwcet};
use crate::analysis::percentiles::{self, Percentile};
use crate::analysis::warnings;
use crate::model::{Bucket, Host, Nanos, Plan, ProbeResult, Run, SecondStats};

/// Default width of the bin tables (seed 001 used 5 000 ns).
pub const DEFAULT_BIN_NS: u64 = 5_000;

#[derive(Debug, Clone, Serialize)]
pub struct Options {
    pub deadline: Option<Nanos>,
    pub bin_width: Nanos,
    /// Fit the statistical worst case (per entry; the costliest step).
    pub pwcet: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { deadline: None, bin_width: Nanos(DEFAULT_BIN_NS), pwcet: true }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EntryAnalysis {
    pub probe: String,
    pub phase: String,
    pub variant: Option<String>,
    /// `None` for the merged (all threads) entry.
    pub thread: Option<usize>,
    pub cpu: Option<usize>,
    pub interval_ns: Nanos,
    pub samples: u64,
    pub overruns: u64,
    pub min_ns: Nanos,
    pub max_ns: Nanos,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub percentiles: Vec<Percentile>,
    pub deadline: Option<DeadlineMisses>,
    pub pwcet: Option<Pwcet>,
    /// For the plots and CSV; left out of the JSON report (the result file has it).
    #[serde(skip)]
    pub histogram: Vec<Bucket>,
    #[serde(skip)]
    pub per_second: Vec<SecondStats>,
    #[serde(skip)]
    pub per_second_width_s: u64,
}

impl EntryAnalysis {
    pub fn key(&self) -> EntryKey {
        EntryKey { probe: self.probe.clone(), phase: self.phase.clone(), variant: self.variant.clone() }
    }
    pub fn percentile(&self, label: &str) -> Option<Nanos> {
        self.percentiles.iter().find(|p| p.label == label).map(|p| p.value_ns)
    }
    /// "all" or the thread number.
    pub fn thread_label(&self) -> String {
        self.thread.map(|t| t.to_string()).unwrap_or_else(|| "all".into())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunAnalysis {
    /// The system's name in tables (host + kernel, or `--name`).
    pub name: String,
    /// Where the result came from (a file path).
    pub source: String,
    pub started_at: String,
    pub finished_at: String,
    pub interrupted: bool,
    pub host: Host,
    pub plan: Plan,
    pub realtime_ok: bool,
    pub warnings: Vec<String>,
    pub entries: Vec<EntryAnalysis>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub tool_version: String,
    pub options: Options,
    pub runs: Vec<RunAnalysis>,
    /// The runs side by side (with one run: its bin tables only).
    pub comparison: Comparison,
}

/// Analyse one entry.
pub fn entry(r: &ProbeResult, opts: &Options) -> EntryAnalysis {
    EntryAnalysis {
        probe: r.probe.clone(),
        phase: r.phase.clone(),
        variant: r.variant.clone(),
        thread: r.thread,
        cpu: r.cpu,
        interval_ns: r.interval_ns,
        samples: r.samples,
        overruns: r.overruns,
        min_ns: r.min_ns,
        max_ns: r.max_ns,
        mean_ns: r.mean_ns,
        stddev_ns: r.stddev_ns,
        percentiles: percentiles::reported(&r.histogram, r.min_ns, r.max_ns),
        deadline: opts.deadline.map(|d| deadline::misses(r, d)),
        pwcet: if opts.pwcet && r.samples > 0 { Some(evt::pwcet(r)) } else { None },
        histogram: r.histogram.clone(),
        per_second: r.per_second.clone(),
        per_second_width_s: r.per_second_width_s,
    }
}

/// `f` over `items` on up to `available_parallelism` threads, in order.
/// The statistical worst case (a bootstrap of GPD fits) is the costly part
/// of the analysis and every entry is independent.
fn par_map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(items.len().max(1));
    if n <= 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(n);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items.chunks(chunk).map(|c| s.spawn(move || c.iter().map(f).collect::<Vec<U>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("analysis thread panicked")).collect()
    })
}

/// Analyse `runs` (each with its source, e.g. the file path). `names`
/// overrides the system names, in order.
pub fn analyse(runs: &[(String, Run)], names: &[String], opts: &Options) -> Analysis {
    let refs: Vec<&Run> = runs.iter().map(|(_, r)| r).collect();
    let systems = compare::system_names(&refs, names);
    let out: Vec<RunAnalysis> = runs
        .iter()
        .zip(systems.iter())
        .map(|((source, run), name)| RunAnalysis {
            name: name.clone(),
            source: source.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            interrupted: run.interrupted,
            host: run.host.clone(),
            plan: run.plan.clone(),
            realtime_ok: run.realtime_setup.ok,
            warnings: warnings::for_run(run).iter().map(|w| w.to_string()).collect(),
            entries: par_map(&run.results, |r| entry(r, opts)),
        })
        .collect();
    let comparison = compare::compare(&refs, &systems, opts.bin_width);
    Analysis { tool_version: env!("CARGO_PKG_VERSION").into(), options: opts.clone(), runs: out, comparison }
}
