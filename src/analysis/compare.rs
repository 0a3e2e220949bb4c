//! Comparison between systems (`rtscope compare A B [C ...]`, and the
//! multi-result `rtscope report`).
//!
//! Rows are the probe/phase/variant entries found in the inputs (their
//! merged, all-threads entries); columns are the systems. Each cell has
//! p50, p99, p99.9, max, mean ± σ and overruns, and — for every system after
//! the first — the ratios to the first ("B/A") and a two-sample
//! Kolmogorov–Smirnov test between the two distributions, computed from the
//! histograms. Entries missing from some inputs stay in the table with
//! empty cells and are listed in `unmatched`, so results with different
//! probes or phases compare as far as they match instead of failing.
//!
//! The seed-000 sentences ("max under `mixed`: B is 3.2× higher than A") and
//! the seed-001 bin tables (one row per fixed-width bin, one count column
//! per system) are built here too; renderers only lay them out.
//!
//! KS from histograms: both CDFs are evaluated at every bucket top of either
//! histogram. Buckets of results written by rtscope share one layout, so
//! this is the exact KS statistic of the bucketed data. With millions of
//! samples even a tiny difference is "distinguishable"; D itself (the
//! largest gap between the CDFs, 0–1) says how large it is.
//!
//! Bounds stay bounds: a percentile in a wide bucket (an import's overflow
//! bucket) is kept in the cell's `bounds` with its range, and its ratio to
//! the first is the range the two ranges allow (`Ratios::ranges`); the
//! renderers show both as ranges, never as a measured value. Missed periods
//! a source cannot count are `overruns_known: false` in the cell.

use serde::Serialize;

use crate::analysis::percentiles::{bounded, from_histogram, Percentile};
use crate::error::BadInput;
use crate::stats;
use crate::model::{Bucket, Nanos, ProbeResult, Run};

/// Level of the two-sample test.
pub const ALPHA: f64 = 0.01;

/// Smallest KS distance called a material difference. With tens of
/// thousands of samples a KS test finds any difference "significant"
/// (two back-to-back idle runs on one VM: D = 0.10, p < 1e-10), so the
/// verdict is on the effect size D — the largest gap between the two
/// CDFs, i.e. the share of samples that moved across some latency: 0.2
/// means a fifth of them. Below it a distinguishable difference is
/// "small". The tails are judged by the percentile ratios, not by D.
pub const MATERIAL_D: f64 = 0.2;

/// probe / phase / variant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryKey {
    pub probe: String,
    pub phase: String,
    pub variant: Option<String>,
}

impl EntryKey {
    pub fn of(r: &ProbeResult) -> EntryKey {
        EntryKey { probe: r.probe.clone(), phase: r.phase.clone(), variant: r.variant.clone() }
    }
    /// `timer/idle` or `timer[250us]/idle`.
    pub fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}[{}]/{}", self.probe, v, self.phase),
            None => format!("{}/{}", self.probe, self.phase),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Ratios {
    /// Percentile ratios are `None` where either side has no known
    /// distribution (a summary-only import: see `ProbeResult::distribution_known`).
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p99_9: Option<f64>,
    pub max: f64,
    pub mean: f64,
    /// Ops per second, this system / the first (`throughput` entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<f64>,
    /// The percentile ratios where either side is a bound: the range the
    /// two ranges allow, by label ("p99"); the plain ratio above is then
    /// only the ratio of the ranges' tops and must not be shown alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<RatioRange>,
}

/// A ratio of bounds: this system's percentile over the first's lies in
/// `[lo, hi]`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RatioRange {
    pub label: &'static str,
    pub lo: f64,
    pub hi: f64,
}

impl Ratios {
    /// The range of the ratio of percentile `label`, when either side is a bound.
    pub fn range(&self, label: &str) -> Option<&RatioRange> {
        self.ranges.iter().find(|r| r.label == label)
    }
}

/// A ratio as shown: `1.10`, or for a ratio of bounds `0.02–50.3`.
pub fn fmt_ratio_shown(r: f64, range: Option<&RatioRange>) -> String {
    match range {
        Some(g) => format!("{}–{}", fmt_ratio(g.lo), fmt_ratio(g.hi)),
        None => fmt_ratio(r),
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KsTest {
    pub d: f64,
    pub p: f64,
    /// p < [`ALPHA`]: the two distributions differ.
    pub distinguishable: bool,
}

impl KsTest {
    /// Distinguishable and at least [`MATERIAL_D`] apart: a difference
    /// large enough to matter.
    pub fn material(&self) -> bool {
        self.distinguishable && self.d >= MATERIAL_D
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub samples: u64,
    pub overruns: u64,
    /// False when the source cannot count missed periods: `overruns` is unknown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overruns_unknown: bool,
    /// p50, p99, p99.9 that are bounds (wide buckets), with their range:
    /// show these with `Percentile::shown`, not the plain `*_ns` value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<Percentile>,
    /// `None` for a summary-only import, whose percentiles are unknown.
    pub p50_ns: Option<Nanos>,
    pub p99_ns: Option<Nanos>,
    pub p99_9_ns: Option<Nanos>,
    pub max_ns: Nanos,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    /// `throughput` entries: ops per second over the whole intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_s: Option<f64>,
    /// This system / the first (absent for the first, or when it lacks the entry).
    pub ratio_to_first: Option<Ratios>,
    pub ks_vs_first: Option<KsTest>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub key: EntryKey,
    /// One per system, in input order; `None` where the system lacks the entry.
    pub cells: Vec<Option<Cell>>,
    /// The phase of each system's entry (rows may pair different phases):
    /// what the overlay plots draw. Not in the JSON (the key says it).
    #[serde(skip)]
    pub phases: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BinRow {
    pub lo_ns: Nanos,
    /// Exclusive upper edge.
    pub hi_ns: Nanos,
    pub counts: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BinTable {
    pub key: EntryKey,
    pub width_ns: Nanos,
    /// Bins where at least one system has a sample, ascending.
    pub rows: Vec<BinRow>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub systems: Vec<String>,
    /// How the inputs are named and which rows pair different phases.
    pub notes: Vec<String>,
    pub rows: Vec<Row>,
    /// One per entry and further system, seed-000 style.
    pub sentences: Vec<String>,
    pub bin_tables: Vec<BinTable>,
    /// Entries present in every input.
    pub matched: Vec<EntryKey>,
    /// Entries missing from some input, with the systems that have them.
    pub unmatched: Vec<(EntryKey, Vec<String>)>,
}

impl Comparison {
    /// The rows of `throughput` entries (Thread-Metric): those with ops per
    /// second in some cell.
    pub fn throughput_rows(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.cells.iter().flatten().any(|x| x.ops_per_s.is_some())).collect()
    }
}

/// The merged entry of every probe/phase/variant, in the run's order. A run
/// with one thread per entry and no merged entry (imported files) uses the
/// thread entry.
pub fn merged_entries(run: &Run) -> Vec<&ProbeResult> {
    crate::model::merged_or_sole(&run.results, |r| r)
}

/// Percentile `q` of an entry; `None` when its distribution is unknown (a
/// summary-only import's one [min, max] bucket is not a distribution).
fn p(r: &ProbeResult, q: f64) -> Option<Nanos> {
    if !r.distribution_known() {
        return None;
    }
    from_histogram(&r.histogram, q, r.min_ns, r.max_ns)
}

fn ratio_of(a: Option<Nanos>, b: Option<Nanos>) -> Option<f64> {
    Some(ratio(a?.0 as f64, b?.0 as f64))
}

fn ratio(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        b / a
    }
}

/// Two-sample KS between two histograms.
pub fn ks_histograms(a: &[Bucket], b: &[Bucket]) -> KsTest {
    let na: u64 = a.iter().map(|x| x.count).sum();
    let nb: u64 = b.iter().map(|x| x.count).sum();
    if na == 0 || nb == 0 {
        return KsTest { d: 0.0, p: 1.0, distinguishable: false };
    }
    let (mut i, mut j, mut ca, mut cb, mut d) = (0usize, 0usize, 0u64, 0u64, 0.0f64);
    while i < a.len() || j < b.len() {
        let x = match (a.get(i), b.get(j)) {
            (Some(p), Some(q)) => p.hi_ns.min(q.hi_ns),
            (Some(p), None) => p.hi_ns,
            (None, Some(q)) => q.hi_ns,
            (None, None) => break,
        };
        while i < a.len() && a[i].hi_ns <= x {
            ca += a[i].count;
            i += 1;
        }
        while j < b.len() && b[j].hi_ns <= x {
            cb += b[j].count;
            j += 1;
        }
        d = d.max((ca as f64 / na as f64 - cb as f64 / nb as f64).abs());
    }
    let pv = stats::ks_pvalue(d, na as f64, nb as f64);
    KsTest { d, p: pv, distinguishable: pv < ALPHA }
}

/// Percentile `q` of an entry with its bound; `None` as for [`p`].
fn pb(r: &ProbeResult, q: f64) -> Option<Percentile> {
    if !r.distribution_known() {
        return None;
    }
    bounded(&r.histogram, q, r.min_ns, r.max_ns)
}

/// The range of b/a when either is a bound (`None` when both are values
/// or either is unknown).
fn ratio_range(a: Option<&Percentile>, b: Option<&Percentile>) -> Option<(f64, f64)> {
    let (a, b) = (a?, b?);
    if !a.is_bound() && !b.is_bound() {
        return None;
    }
    let lo = |p: &Percentile| p.lower_ns.unwrap_or(p.value_ns).0 as f64;
    let hi = |p: &Percentile| p.value_ns.0 as f64;
    Some((ratio(hi(a), lo(b)), ratio(lo(a), hi(b))))
}

fn cell(r: &ProbeResult, first: Option<&ProbeResult>) -> Cell {
    let (p50, p99, p999) = (p(r, 50.0), p(r, 99.0), p(r, 99.9));
    const QS: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")];
    let mine: Vec<Option<Percentile>> = QS.iter().map(|(q, _)| pb(r, *q)).collect();
    let ratio_to_first = first.map(|a| Ratios {
        p50: ratio_of(p(a, 50.0), p50),
        p99: ratio_of(p(a, 99.0), p99),
        p99_9: ratio_of(p(a, 99.9), p999),
        max: ratio(a.max_ns.0 as f64, r.max_ns.0 as f64),
        mean: ratio(a.shown_mean_ns(), r.shown_mean_ns()),
        ops: match (ops_per_s(a), ops_per_s(r)) {
            (Some(x), Some(y)) => Some(ratio(x, y)),
            _ => None,
        },
        ranges: QS
            .iter()
            .zip(&mine)
            .filter_map(|((q, label), m)| {
                ratio_range(pb(a, *q).as_ref(), m.as_ref()).map(|(lo, hi)| RatioRange { label, lo: lo.min(hi), hi: lo.max(hi) })
            })
            .collect(),
    });
    Cell {
        samples: r.samples,
        overruns: r.overruns,
        overruns_unknown: !r.overruns_known,
        bounds: mine.into_iter().flatten().filter(|p| p.is_bound()).collect(),
        p50_ns: p50,
        p99_ns: p99,
        p99_9_ns: p999,
        max_ns: r.max_ns,
        mean_ns: r.shown_mean_ns(),
        stddev_ns: r.stddev_ns,
        ops_per_s: ops_per_s(r),
        ratio_to_first,
        ks_vs_first: first
            .filter(|a| a.distribution_known() && r.distribution_known())
            .map(|a| ks_histograms(&a.histogram, &r.histogram)),
    }
}

/// Ops per second of a `throughput` entry (intervals of different lengths
/// compare: a published 30 s count against a 2 s one).
pub fn ops_per_s(r: &ProbeResult) -> Option<f64> {
    r.throughput.as_ref()?.ops_per_s()
}

/// "= 0.012", "= 3.1e-7", "< 1e-300" (a p-value below what f64 holds).
pub fn fmt_p(p: f64) -> String {
    if p <= 1e-300 {
        "< 1e-300".into()
    } else if p < 0.001 {
        format!("= {p:.1e}")
    } else {
        format!("= {p:.3}")
    }
}

/// "3.2× higher", "3.2× lower", "the same".
pub fn ratio_words(r: f64) -> String {
    if !r.is_finite() {
        "infinitely higher (the first is 0)".into()
    } else if (r - 1.0).abs() < 0.005 {
        "the same as".into()
    } else if r > 1.0 {
        format!("{}× higher than", fmt_ratio(r))
    } else if r > 0.0 {
        format!("{}× lower than", fmt_ratio(1.0 / r))
    } else {
        "0, against".into()
    }
}

/// Two significant digits below 100, whole numbers above ("320000").
pub fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{:.0}", r)
    } else if r >= 10.0 {
        format!("{:.1}", r)
    } else {
        format!("{:.2}", r)
    }
}

/// How entries of different runs are put in one row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchBy {
    /// By probe, variant and phase; then, per probe, the one loaded
    /// (non-idle) phase each run has and the others lack are paired.
    #[default]
    Auto,
    /// Only entries of the same phase name.
    Phase,
    /// By probe and variant, the phases in their order in each run.
    Probe,
}

/// `--match` and `--phases A=B,...` (phase A of the first input is compared
/// with phase B of the others).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pairing {
    pub by: MatchBy,
    pub phases: Vec<(String, String)>,
}

/// One row of the comparison: which entry of each run (an index into
/// that run's merged entries) it holds.
struct Slotted {
    key: (String, Option<String>, String),
    cells: Vec<Option<usize>>,
}

/// Put the merged entries of every run into rows, as `pairing` says; the
/// notes say which rows hold entries of different phases and why.
fn pair(per_run: &[Vec<&ProbeResult>], systems: &[String], pairing: &Pairing) -> Result<(Vec<Slotted>, Vec<String>), BadInput> {
    let n = per_run.len();
    for (a, b) in &pairing.phases {
        if !per_run[0].iter().any(|r| &r.phase == a) {
            let have: Vec<&str> = phases_of(&per_run[0]);
            return Err(BadInput(format!(
                "--phases {a}={b}: the first input ({}) has no phase '{a}' (it has: {}); name a phase of the first input left of '='",
                systems[0],
                have.join(", ")
            )));
        }
        if !per_run[1..].iter().any(|rs| rs.iter().any(|r| &r.phase == b)) {
            return Err(BadInput(format!(
                "--phases {a}={b}: no input after the first has a phase '{b}'; name a phase of the other inputs right of '='"
            )));
        }
    }
    // The phase an entry is matched under: --phases maps B of the others to A.
    let eff = |i: usize, r: &ProbeResult| -> String {
        if i > 0 {
            if let Some((a, _)) = pairing.phases.iter().find(|(_, b)| b == &r.phase) {
                return a.clone();
            }
        }
        r.phase.clone()
    };
    let pv = |r: &ProbeResult| (r.probe.clone(), r.variant.clone());
    // slot[i][j]: the row key of entry j of run i.
    let mut slot: Vec<Vec<String>> = (0..n).map(|i| per_run[i].iter().map(|r| eff(i, r)).collect()).collect();
    let mut why = "";
    let mut head: Vec<String> = Vec::new();
    // Inputs of one phase each (`run --load idle` against `run --load cpu`)
    // have nothing to pair by phase name: by default they pair by probe,
    // and the note above the table says so.
    let by = match single_phases(per_run) {
        Some(ph) if pairing.by == MatchBy::Auto && pairing.phases.is_empty() && ph.iter().any(|p| p != &ph[0]) => {
            head.push(format!("paired by probe: {} (each input has one phase; --match phase keeps them apart)", ph.join(" ↔ ")));
            MatchBy::Probe
        }
        _ => pairing.by,
    };
    match by {
        MatchBy::Phase => {}
        MatchBy::Probe => {
            why = if pairing.by == MatchBy::Probe { "by their order under --match probe" } else { "each input has one phase" };
            for i in 0..n {
                for j in 0..per_run[i].len() {
                    let k = per_run[i][..j].iter().filter(|r| pv(r) == pv(per_run[i][j])).count();
                    slot[i][j] = format!("#{k}");
                }
            }
            // Every run with the probe must have it in as many phases.
            let seen: Vec<(String, Option<String>)> = crate::units::first_seen(per_run.iter().flatten().map(|r| pv(r)));
            for k in &seen {
                let counts: Vec<(usize, Vec<&str>)> = (0..n)
                    .map(|i| {
                        let ph: Vec<&str> = per_run[i].iter().filter(|r| &pv(r) == k).map(|r| r.phase.as_str()).collect();
                        (i, ph)
                    })
                    .filter(|(_, ph)| !ph.is_empty())
                    .collect();
                if counts.iter().any(|(_, ph)| ph.len() != counts[0].1.len()) {
                    let list: Vec<String> = counts.iter().map(|(i, ph)| format!("{} has {} ({})", systems[*i], ph.len(), ph.join(", "))).collect();
                    return Err(BadInput(format!(
                        "--match probe: {} is in a different number of phases per input: {}; pair the phases by name with --phases FIRST=OTHER,...",
                        k.0,
                        list.join("; ")
                    )));
                }
            }
        }
        MatchBy::Auto => {
            why = "the one loaded phase of each that the others lack (--match phase keeps them apart, --phases FIRST=OTHER chooses)";
            let keys: Vec<(String, Option<String>)> = crate::units::first_seen(per_run.iter().flatten().map(|r| pv(r)));
            for k in &keys {
                // Per run: the entries of this probe whose phase not every run has.
                let left: Vec<Vec<usize>> = (0..n)
                    .map(|i| {
                        (0..per_run[i].len())
                            .filter(|&j| &pv(per_run[i][j]) == k && slot[i][j] != "idle")
                            .filter(|&j| !(0..n).all(|o| (0..per_run[o].len()).any(|m| pv(per_run[o][m]) == *k && slot[o][m] == slot[i][j])))
                            .collect()
                    })
                    .collect();
                if left.iter().all(|l| l.len() == 1) {
                    for (i, l) in left.iter().enumerate() {
                        slot[i][l[0]] = "\u{0}paired".into();
                    }
                }
            }
        }
    }
    let mut rows: Vec<Slotted> = Vec::new();
    for i in 0..n {
        for (j, r) in per_run[i].iter().enumerate() {
            let key = (r.probe.clone(), r.variant.clone(), slot[i][j].clone());
            match rows.iter_mut().find(|x| x.key == key) {
                Some(row) => row.cells[i] = Some(j),
                None => {
                    let mut cells = vec![None; n];
                    cells[i] = Some(j);
                    rows.push(Slotted { key, cells });
                }
            }
        }
    }
    // Pairing by probe for one-phase inputs: the one note above says it for every row.
    let per_row = head.is_empty();
    let mut notes = head;
    for row in rows.iter().filter(|_| per_row) {
        let phases: Vec<(usize, &str)> = row.cells.iter().enumerate().filter_map(|(i, c)| c.map(|j| (i, per_run[i][j].phase.as_str()))).collect();
        if phases.iter().any(|(_, p)| *p != phases[0].1) {
            let list: Vec<String> = phases.iter().map(|(i, p)| format!("'{p}' of {}", systems[*i])).collect();
            let reason = if pairing.phases.iter().any(|(a, b)| phases.iter().any(|(_, p)| p == a) && phases.iter().any(|(_, p)| p == b)) {
                "as --phases says"
            } else {
                why
            };
            notes.push(format!("{}: phase {} compared: {reason}", row.key.0, list.join(" with ")));
        }
    }
    Ok((rows, notes))
}

/// The one phase of every input, when each has exactly one.
fn single_phases(per_run: &[Vec<&ProbeResult>]) -> Option<Vec<String>> {
    per_run
        .iter()
        .map(|rs| match phases_of(rs).as_slice() {
            [one] => Some(one.to_string()),
            _ => None,
        })
        .collect()
}

fn phases_of<'a>(rs: &[&'a ProbeResult]) -> Vec<&'a str> {
    crate::units::first_seen(rs.iter().map(|r| r.phase.as_str()))
}

/// A bin's range `(lo, hi)` (hi exclusive) and its count.
pub type BinCount = ((u64, u64), u64);

/// The bins of a histogram at `width`, half-open `[lo, hi)`: a bucket
/// narrower than a bin is counted in the bin holding its top clamped to the
/// exact `max` (as `percentiles::rebin`), so the max lands in the row that
/// holds it and no sample is listed below its bucket; a bucket as wide as a
/// bin or wider (an imported summary, an overflow bucket, a coarse source
/// histogram) keeps its own range, so its count is never shown in a bin it
/// may not be in. Ascending by `lo` within each kind.
pub fn bins_of(hist: &[Bucket], width: Nanos, max: Nanos) -> Vec<BinCount> {
    let w = width.0.max(1);
    let mut out: Vec<BinCount> = Vec::new();
    for b in hist {
        let top = b.hi_ns.0.min(max.0).max(b.lo_ns.0);
        let k = top / w;
        let range = if top - b.lo_ns.0 < w { (k * w, (k + 1) * w) } else { (b.lo_ns.0, top.saturating_add(1)) };
        match out.last_mut() {
            Some((r, c)) if *r == range => *c += b.count,
            _ => out.push((range, b.count)),
        }
    }
    out
}

/// Compare `runs` (named `systems`), with bin tables of `bin_width`,
/// pairing entries as `pairing` says.
pub fn compare(runs: &[&Run], systems: &[String], bin_width: Nanos, pairing: &Pairing) -> Result<Comparison, BadInput> {
    let per_run: Vec<Vec<&ProbeResult>> = runs.iter().map(|r| merged_entries(r)).collect();
    let (slotted, mut notes) = pair(&per_run, systems, pairing)?;
    if let Some(n) = same_system_note(runs, systems) {
        notes.insert(0, n);
    }
    let mut rows = Vec::new();
    let mut sentences = Vec::new();
    let mut bin_tables = Vec::new();
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for s in &slotted {
        let entry = |i: usize| s.cells[i].map(|j| per_run[i][j]);
        // The row's phase: the one phase, or "A vs B" for paired phases.
        let mut phases: Vec<&str> = Vec::new();
        for i in 0..runs.len() {
            if let Some(r) = entry(i) {
                if !phases.contains(&r.phase.as_str()) {
                    phases.push(&r.phase);
                }
            }
        }
        let k = EntryKey { probe: s.key.0.clone(), phase: phases.join(" vs "), variant: s.key.1.clone() };
        let first = entry(0);
        let cells: Vec<Option<Cell>> = (0..runs.len()).map(|i| entry(i).map(|r| cell(r, if i == 0 { None } else { first }))).collect();
        let have: Vec<String> = (0..runs.len()).filter(|&i| cells[i].is_some()).map(|i| systems[i].clone()).collect();
        if have.len() == runs.len() {
            matched.push(k.clone());
        } else {
            unmatched.push((k.clone(), have));
        }
        for (i, c) in cells.iter().enumerate().skip(1) {
            if let Some(ops) = c.as_ref().and_then(|c| c.ratio_to_first.as_ref()).and_then(|rt| rt.ops) {
                // A throughput entry: ops per second, not latency, is the result.
                sentences.push(format!(
                    "ops per second under `{}` ({} {}): {} completes {}× as many as {}.",
                    k.phase,
                    k.probe,
                    k.variant.as_deref().unwrap_or("-"),
                    systems[i],
                    fmt_ratio(ops),
                    systems[0],
                ));
                continue;
            }
            if let Some(rt) = c.as_ref().and_then(|c| c.ratio_to_first.as_ref()) {
                let ks = c.as_ref().and_then(|c| c.ks_vs_first.as_ref());
                let dist = match ks {
                    Some(t) if t.material() => format!("; the distributions differ (KS D = {:.3}, p {})", t.d, fmt_p(t.p)),
                    Some(t) if t.distinguishable => {
                        format!("; the distributions differ only a little (KS D = {:.3} < {MATERIAL_D}, p {})", t.d, fmt_p(t.p))
                    }
                    Some(t) => format!("; the distributions are not distinguishable (KS D = {:.3}, p = {:.2})", t.d, t.p),
                    None => String::new(),
                };
                sentences.push(format!(
                    "max under `{}` ({}): {} is {} {}{}{}.",
                    k.phase,
                    match &k.variant {
                        Some(v) => format!("{} {v}", k.probe),
                        None => k.probe.clone(),
                    },
                    systems[i],
                    ratio_words(rt.max),
                    systems[0],
                    match (rt.range("p99"), rt.p99) {
                        (Some(g), _) => format!(
                            " (p99: a bound, {}× to {}× {}'s)",
                            fmt_ratio(g.lo),
                            fmt_ratio(g.hi),
                            systems[0]
                        ),
                        (None, Some(x)) => format!(" (p99: {} {})", ratio_words(x), systems[0]),
                        (None, None) => String::new(),
                    },
                    dist
                ));
            }
        }
        // Bin table.
        let binned: Vec<Option<Vec<BinCount>>> = (0..runs.len()).map(|i| entry(i).map(|r| bins_of(&r.histogram, bin_width, r.max_ns))).collect();
        let mut ranges: Vec<(u64, u64)> = binned.iter().flatten().flat_map(|v| v.iter().map(|b| b.0)).collect();
        ranges.sort_unstable();
        ranges.dedup();
        let rows_b = ranges
            .iter()
            .map(|&(lo, hi)| BinRow {
                lo_ns: Nanos(lo),
                hi_ns: Nanos(hi),
                counts: binned.iter().map(|v| v.as_ref().map(|v| v.iter().find(|x| x.0 == (lo, hi)).map(|x| x.1).unwrap_or(0))).collect(),
            })
            .collect();
        bin_tables.push(BinTable { key: k.clone(), width_ns: Nanos(bin_width.0.max(1)), rows: rows_b });
        let phases = (0..runs.len()).map(|i| entry(i).map(|r| r.phase.clone())).collect();
        rows.push(Row { key: k, cells, phases });
    }
    Ok(Comparison { systems: systems.to_vec(), notes, rows, sentences, bin_tables, matched, unmatched })
}

/// "all inputs ran on HOST KERNEL" when the inputs are named by their
/// source because host and kernel are the same.
fn same_system_note(runs: &[&Run], systems: &[String]) -> Option<String> {
    let base = |r: &Run| default_name(r);
    if runs.len() >= 2 && runs.iter().all(|r| base(r) == base(runs[0])) && !systems.iter().any(|s| s.starts_with(&base(runs[0]))) {
        Some(format!("every input ran on {}: they are named by their source", base(runs[0])))
    } else {
        None
    }
}

fn default_name(r: &Run) -> String {
    format!("{} {}", r.host.hostname, r.host.kernel_release).trim().to_string()
}

/// System names: `given` (--name) in order, else "hostname kernel_release".
/// Where several inputs would get the same name, they are told apart by
/// their source (file name, stored run id), else their start time; when
/// every input has the same host and kernel, the source alone names them.
pub fn system_names(runs: &[&Run], sources: &[String], given: &[String]) -> Vec<String> {
    let base: Vec<String> = runs.iter().enumerate().map(|(i, r)| given.get(i).cloned().unwrap_or_else(|| default_name(r))).collect();
    let short_source = |s: &str| -> String {
        // A file path: its name without `.json` and without the `rtscope-`
        // of default result names (`rtscope-20261123T100528Z.json` reads
        // `20261123T100528Z`); a stored run ("#12 (@tag)"): as is.
        if s.starts_with('#') {
            return s.to_string();
        }
        let name = std::path::Path::new(s).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| s.to_string());
        let stem = name.strip_suffix(".json").filter(|x| !x.is_empty()).unwrap_or(&name);
        stem.strip_prefix("rtscope-").filter(|x| !x.is_empty()).unwrap_or(stem).to_string()
    };
    let all_same = given.is_empty() && base.len() >= 2 && base.iter().all(|b| *b == base[0]);
    let mut out = base.clone();
    for i in 0..out.len() {
        let dups: Vec<usize> = (0..base.len()).filter(|&j| base[j] == base[i]).collect();
        if dups.len() < 2 {
            continue;
        }
        let by_source: Vec<String> = dups.iter().map(|&j| short_source(&sources[j])).collect();
        let by_start: Vec<String> = dups.iter().map(|&j| runs[j].started_at.clone()).collect();
        let distinct = |v: &[String]| v.iter().enumerate().all(|(a, x)| v[a + 1..].iter().all(|y| y != x));
        let pos = dups.iter().position(|&j| j == i).unwrap_or(0);
        let tag = if distinct(&by_source) {
            Some(by_source[pos].clone())
        } else if distinct(&by_start) {
            Some(by_start[pos].clone())
        } else {
            None
        };
        out[i] = match tag {
            Some(t) if all_same => t,
            Some(t) => format!("{} ({t})", base[i]),
            None => format!("{} #{}", base[i], pos + 1),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: u64, count: u64) -> Bucket {
        Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(lo), count }
    }

    #[test]
    fn ks_of_identical_and_disjoint_histograms() {
        let a = [b(10, 50), b(20, 50)];
        let t = ks_histograms(&a, &a);
        assert_eq!(t.d, 0.0);
        assert!(!t.distinguishable);
        let c = [b(30, 50), b(40, 50)];
        let t = ks_histograms(&a, &c);
        assert_eq!(t.d, 1.0);
        assert!(t.distinguishable);
        // Half shifted: after 10 F_a = .5, F_d = 0; after 20: 1 vs .5; D = .5.
        let d = [b(20, 50), b(30, 50)];
        assert!((ks_histograms(&a, &d).d - 0.5).abs() < 1e-12);
    }

    #[test]
    fn bins_are_half_open_and_the_max_lands_in_its_row() {
        // A 0.1 %-wide bucket across the 6300 µs edge holding a max of
        // 6303.1 µs: listed in [6300, 6350), not in [6250, 6300).
        let h = [Bucket { lo_ns: Nanos(6_297_500), hi_ns: Nanos(6_303_800), count: 2 }];
        assert_eq!(bins_of(&h, Nanos(50_000), Nanos(6_303_100)), vec![((6_300_000, 6_350_000), 2)]);
        // The same bucket with a max below the edge stays below it.
        assert_eq!(bins_of(&h, Nanos(50_000), Nanos(6_299_000)), vec![((6_250_000, 6_300_000), 2)]);
        // An overflow bucket wider than a bin keeps its own range, up to the max.
        let h = [Bucket { lo_ns: Nanos(10_000), hi_ns: Nanos(503_000), count: 1262 }];
        assert_eq!(bins_of(&h, Nanos(50_000), Nanos(503_000)), vec![((10_000, 503_001), 1262)]);
    }

    #[test]
    fn words() {
        assert_eq!(ratio_words(3.2), "3.20× higher than");
        assert_eq!(ratio_words(1.0 / 320_000.0), "320000× lower than");
        assert_eq!(ratio_words(1.001), "the same as");
    }
}
