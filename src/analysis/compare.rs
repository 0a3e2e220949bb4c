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

use serde::Serialize;

use crate::analysis::percentiles::{from_histogram, rebin};
use crate::stats;
use crate::model::{Bucket, Nanos, ProbeResult, Run};

/// Level of the two-sample test.
pub const ALPHA: f64 = 0.01;

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
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KsTest {
    pub d: f64,
    pub p: f64,
    /// p < [`ALPHA`]: the two distributions differ.
    pub distinguishable: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub samples: u64,
    pub overruns: u64,
    /// `None` for a summary-only import, whose percentiles are unknown.
    pub p50_ns: Option<Nanos>,
    pub p99_ns: Option<Nanos>,
    pub p99_9_ns: Option<Nanos>,
    pub max_ns: Nanos,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    /// This system / the first (absent for the first, or when it lacks the entry).
    pub ratio_to_first: Option<Ratios>,
    pub ks_vs_first: Option<KsTest>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub key: EntryKey,
    /// One per system, in input order; `None` where the system lacks the entry.
    pub cells: Vec<Option<Cell>>,
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
    pub rows: Vec<Row>,
    /// One per entry and further system, seed-000 style.
    pub sentences: Vec<String>,
    pub bin_tables: Vec<BinTable>,
    /// Entries present in every input.
    pub matched: Vec<EntryKey>,
    /// Entries missing from some input, with the systems that have them.
    pub unmatched: Vec<(EntryKey, Vec<String>)>,
}

/// The merged entry of every probe/phase/variant, in the run's order. A run
/// with one thread per entry and no merged entry (imported files) uses the
/// thread entry.
pub fn merged_entries(run: &Run) -> Vec<&ProbeResult> {
    let mut keys: Vec<EntryKey> = Vec::new();
    for r in &run.results {
        let k = EntryKey::of(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.iter()
        .filter_map(|k| {
            let all: Vec<&ProbeResult> = run.results.iter().filter(|r| &EntryKey::of(r) == k).collect();
            all.iter().find(|r| r.thread.is_none()).copied().or(if all.len() == 1 { Some(all[0]) } else { None })
        })
        .collect()
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

fn cell(r: &ProbeResult, first: Option<&ProbeResult>) -> Cell {
    let (p50, p99, p999) = (p(r, 50.0), p(r, 99.0), p(r, 99.9));
    let ratio_to_first = first.map(|a| Ratios {
        p50: ratio_of(p(a, 50.0), p50),
        p99: ratio_of(p(a, 99.0), p99),
        p99_9: ratio_of(p(a, 99.9), p999),
        max: ratio(a.max_ns.0 as f64, r.max_ns.0 as f64),
        mean: ratio(a.mean_ns, r.mean_ns),
    });
    Cell {
        samples: r.samples,
        overruns: r.overruns,
        p50_ns: p50,
        p99_ns: p99,
        p99_9_ns: p999,
        max_ns: r.max_ns,
        mean_ns: r.mean_ns,
        stddev_ns: r.stddev_ns,
        ratio_to_first,
        ks_vs_first: first
            .filter(|a| a.distribution_known() && r.distribution_known())
            .map(|a| ks_histograms(&a.histogram, &r.histogram)),
    }
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

/// Compare `runs` (named `systems`), with bin tables of `bin_width`.
pub fn compare(runs: &[&Run], systems: &[String], bin_width: Nanos) -> Comparison {
    let per_run: Vec<Vec<&ProbeResult>> = runs.iter().map(|r| merged_entries(r)).collect();
    let mut keys: Vec<EntryKey> = Vec::new();
    for entries in &per_run {
        for e in entries {
            let k = EntryKey::of(e);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let find = |i: usize, k: &EntryKey| per_run[i].iter().find(|r| &EntryKey::of(r) == k).copied();
    let mut rows = Vec::new();
    let mut sentences = Vec::new();
    let mut bin_tables = Vec::new();
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for k in &keys {
        let first = find(0, k);
        let cells: Vec<Option<Cell>> = (0..runs.len())
            .map(|i| find(i, k).map(|r| cell(r, if i == 0 { None } else { first })))
            .collect();
        let have: Vec<String> = (0..runs.len()).filter(|&i| cells[i].is_some()).map(|i| systems[i].clone()).collect();
        if have.len() == runs.len() {
            matched.push(k.clone());
        } else {
            unmatched.push((k.clone(), have));
        }
        for (i, c) in cells.iter().enumerate().skip(1) {
            if let Some(rt) = c.as_ref().and_then(|c| c.ratio_to_first.as_ref()) {
                let ks = c.as_ref().and_then(|c| c.ks_vs_first.as_ref());
                let dist = match ks {
                    Some(t) if t.distinguishable => format!("; the distributions differ (KS D = {:.3}, p {})", t.d, fmt_p(t.p)),
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
                    rt.p99.map(|x| format!(" (p99: {} {})", ratio_words(x), systems[0])).unwrap_or_default(),
                    dist
                ));
            }
        }
        // Bin table.
        let binned: Vec<Option<Vec<(u64, u64)>>> =
            (0..runs.len()).map(|i| find(i, k).map(|r| rebin(&r.histogram, bin_width))).collect();
        let mut bins: Vec<u64> = binned.iter().flatten().flat_map(|v| v.iter().map(|b| b.0)).collect();
        bins.sort_unstable();
        bins.dedup();
        let w = bin_width.0.max(1);
        let rows_b = bins
            .iter()
            .map(|&b| BinRow {
                lo_ns: Nanos(b * w),
                hi_ns: Nanos((b + 1) * w),
                counts: binned
                    .iter()
                    .map(|v| v.as_ref().map(|v| v.iter().find(|x| x.0 == b).map(|x| x.1).unwrap_or(0)))
                    .collect(),
            })
            .collect();
        bin_tables.push(BinTable { key: k.clone(), width_ns: Nanos(w), rows: rows_b });
        rows.push(Row { key: k.clone(), cells });
    }
    Comparison { systems: systems.to_vec(), rows, sentences, bin_tables, matched, unmatched }
}

/// Default system names: "hostname kernel_release"; duplicates get " #2", …
pub fn system_names(runs: &[&Run], given: &[String]) -> Vec<String> {
    let mut out: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| given.get(i).cloned().unwrap_or_else(|| format!("{} {}", r.host.hostname, r.host.kernel_release).trim().to_string()))
        .collect();
    let base = out.clone();
    for i in 0..out.len() {
        if base.iter().filter(|x| **x == base[i]).count() > 1 {
            let k = base[..=i].iter().filter(|x| **x == base[i]).count();
            out[i] = format!("{} #{k}", base[i]);
        }
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
    fn words() {
        assert_eq!(ratio_words(3.2), "3.20× higher than");
        assert_eq!(ratio_words(1.0 / 320_000.0), "320000× lower than");
        assert_eq!(ratio_words(1.001), "the same as");
    }
}
