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
//! Files by role: `pairing` (which entries share a row), `cell` (one
//! system's numbers, ratios and the KS test), `text` (sentences and number
//! words), `names` (system names); this file holds the comparison's types
//! and assembles it row by row.
//!
//! Bounds stay bounds: a percentile in a wide bucket (an import's overflow
//! bucket) is kept in the cell's `bounds` with its range, and its ratio to
//! the first is the range the two ranges allow (`Ratios::ranges`); the
//! renderers show both as ranges, never as a measured value. Missed periods
//! a source cannot count are `overruns_known: false` in the cell.

use serde::Serialize;

use crate::error::BadInput;
use crate::model::{Bucket, Nanos, ProbeResult, Run};

mod cell;
mod names;
mod pairing;
mod text;

pub(crate) use cell::Cell;
pub(crate) use names::system_names;
pub(crate) use pairing::{pair, MatchBy, Pairing};
pub(crate) use text::{fmt_ratio, fmt_ratio_shown};

use cell::cell;
pub(crate) use names::same_system_note;

/// Level of the two-sample test.
pub(crate) const ALPHA: f64 = 0.01;

/// Smallest KS distance called a material difference. With tens of
/// thousands of samples a KS test finds any difference "significant"
/// (two back-to-back idle runs on one VM: D = 0.10, p < 1e-10), so the
/// verdict is on the effect size D — the largest gap between the two
/// CDFs, i.e. the share of samples that moved across some latency: 0.2
/// means a fifth of them. Below it a distinguishable difference is
/// "small". The tails are judged by the percentile ratios, not by D.
pub(crate) const MATERIAL_D: f64 = 0.2;

/// probe / phase / variant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct EntryKey {
    pub(crate) probe: String,
    pub(crate) phase: String,
    pub(crate) variant: Option<String>,
}

impl EntryKey {
    pub(crate) fn of(r: &ProbeResult) -> EntryKey {
        EntryKey { probe: r.probe.clone(), phase: r.phase.clone(), variant: r.variant.clone() }
    }
    /// `timer/idle` or `timer[250us]/idle`.
    pub(crate) fn label(&self) -> String {
        match &self.variant {
            Some(v) => format!("{}[{}]/{}", self.probe, v, self.phase),
            None => format!("{}/{}", self.probe, self.phase),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Row {
    pub(crate) key: EntryKey,
    /// One per system, in input order; `None` where the system lacks the entry.
    pub(crate) cells: Vec<Option<Cell>>,
    /// The phase of each system's entry (rows may pair different phases):
    /// what the overlay plots draw. Not in the JSON (the key says it).
    #[serde(skip)]
    pub(crate) phases: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct BinRow {
    pub(crate) lo_ns: Nanos,
    /// Exclusive upper edge.
    pub(crate) hi_ns: Nanos,
    pub(crate) counts: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct BinTable {
    pub(crate) key: EntryKey,
    pub(crate) width_ns: Nanos,
    /// Bins where at least one system has a sample, ascending.
    pub(crate) rows: Vec<BinRow>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Comparison {
    pub(crate) systems: Vec<String>,
    /// How the inputs are named and which rows pair different phases.
    pub(crate) notes: Vec<String>,
    pub(crate) rows: Vec<Row>,
    /// One per entry and further system, seed-000 style.
    pub(crate) sentences: Vec<String>,
    pub(crate) bin_tables: Vec<BinTable>,
    /// Entries present in every input.
    pub(crate) matched: Vec<EntryKey>,
    /// Entries missing from some input, with the systems that have them.
    pub(crate) unmatched: Vec<(EntryKey, Vec<String>)>,
}

impl Comparison {
    /// The rows of `throughput` entries (Thread-Metric): those with ops per
    /// second in some cell.
    pub(crate) fn throughput_rows(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.cells.iter().flatten().any(|x| x.ops_per_s.is_some())).collect()
    }
}

/// The merged entry of every probe/phase/variant, in the run's order. A run
/// with one thread per entry and no merged entry (imported files) uses the
/// thread entry.
pub(crate) fn merged_entries(run: &Run) -> Vec<&ProbeResult> {
    crate::model::merged_or_sole(&run.results, |r| r)
}

/// A bin's range `(lo, hi)` (hi exclusive) and its count.
pub(crate) type BinCount = ((u64, u64), u64);

/// The bins of a histogram at `width`, half-open `[lo, hi)`: a bucket
/// narrower than a bin is counted in the bin holding its top clamped to the
/// exact `max` (as `percentiles::rebin`), so the max lands in the row that
/// holds it and no sample is listed below its bucket; a bucket as wide as a
/// bin or wider (an imported summary, an overflow bucket, a coarse source
/// histogram) keeps its own range, so its count is never shown in a bin it
/// may not be in. Ascending by `lo` within each kind.
pub(crate) fn bins_of(hist: &[Bucket], width: Nanos, max: Nanos) -> Vec<BinCount> {
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
pub(crate) fn compare(runs: &[&Run], systems: &[String], bin_width: Nanos, pairing: &Pairing) -> Result<Comparison, BadInput> {
    let per_run: Vec<Vec<&ProbeResult>> = runs.iter().map(|r| merged_entries(r)).collect();
    let (slotted, mut notes) = pair(&per_run, systems, pairing)?;
    if let Some(n) = names::emulation_note(runs, systems) {
        notes.insert(0, n);
    }
    let mut comparison = Comparison {
        systems: systems.to_vec(),
        notes,
        rows: Vec::new(),
        sentences: Vec::new(),
        bin_tables: Vec::new(),
        matched: Vec::new(),
        unmatched: Vec::new(),
    };
    for s in &slotted {
        let entries: Vec<Option<&ProbeResult>> = s.cells.iter().enumerate().map(|(i, c)| c.map(|j| per_run[i][j])).collect();
        comparison.add_row(&s.key.0, &s.key.1, &entries, bin_width);
    }
    Ok(comparison)
}

impl Comparison {
    /// Add the row of `probe`/`variant` holding `entries` (one per system):
    /// its cells, whether every system has it, its sentences and bin table.
    fn add_row(&mut self, probe: &str, variant: &Option<String>, entries: &[Option<&ProbeResult>], bin_width: Nanos) {
        // The row's phase: the one phase, or "A vs B" for paired phases.
        let phases: Vec<&str> = crate::units::first_seen(entries.iter().flatten().map(|r| r.phase.as_str()));
        let k = EntryKey { probe: probe.to_string(), phase: phases.join(" vs "), variant: variant.clone() };
        let first = entries[0];
        let cells: Vec<Option<Cell>> = entries.iter().enumerate().map(|(i, e)| e.map(|r| cell(r, if i == 0 { None } else { first }))).collect();
        let have: Vec<String> = (0..entries.len()).filter(|&i| cells[i].is_some()).map(|i| self.systems[i].clone()).collect();
        if have.len() == entries.len() {
            self.matched.push(k.clone());
        } else {
            self.unmatched.push((k.clone(), have));
        }
        for (i, c) in cells.iter().enumerate().skip(1) {
            if let Some(at) = c.as_ref().and_then(|c| c.ks_vs_first.as_ref()).and_then(|t| t.at_ns) {
                let note = format!(
                    "{}: {} and {} have different resolutions; the KS test compares them at the coarser one, {} us",
                    k.label(),
                    self.systems[0],
                    self.systems[i],
                    at.as_micros_f64()
                );
                self.notes.push(note);
            }
            if let Some(line) = c.as_ref().and_then(|c| text::sentence(&k, c, &self.systems[i], &self.systems[0])) {
                self.sentences.push(line);
            }
        }
        self.bin_tables.push(bin_table(&k, entries, bin_width));
        let phases = entries.iter().map(|e| e.map(|r| r.phase.clone())).collect();
        self.rows.push(Row { key: k, cells, phases });
    }
}

/// The bin table of row `k`: one row per bin any system has a sample in,
/// one count per system (`None` where the system lacks the entry).
fn bin_table(k: &EntryKey, entries: &[Option<&ProbeResult>], bin_width: Nanos) -> BinTable {
    let binned: Vec<Option<Vec<BinCount>>> = entries.iter().map(|e| e.map(|r| bins_of(&r.histogram, bin_width, r.max_ns))).collect();
    let mut ranges: Vec<(u64, u64)> = binned.iter().flatten().flat_map(|v| v.iter().map(|b| b.0)).collect();
    ranges.sort_unstable();
    ranges.dedup();
    let rows = ranges
        .iter()
        .map(|&(lo, hi)| BinRow {
            lo_ns: Nanos(lo),
            hi_ns: Nanos(hi),
            counts: binned.iter().map(|v| v.as_ref().map(|v| v.iter().find(|x| x.0 == (lo, hi)).map(|x| x.1).unwrap_or(0))).collect(),
        })
        .collect();
    BinTable { key: k.clone(), width_ns: Nanos(bin_width.0.max(1)), rows }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
