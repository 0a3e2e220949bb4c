//! Folding what a source holds into what a result keeps, in bounded
//! memory: histograms ([`Hist`], folded to 3 significant digits past
//! [`Hist::RAW_LIMIT`] buckets), per-second series ([`Seconds`], at most
//! [`Seconds::MAX_SLOTS`] slots), disjoint buckets ([`normalise_buckets`])
//! and the percentiles stored from them ([`percentiles`]).

use std::collections::BTreeMap;

use super::read::ParseError;
use crate::model::{Bucket, Nanos, SecondStats};
use crate::stats;

/// A histogram being read: the source's buckets as they are while there are
/// at most [`Hist::RAW_LIMIT`] distinct ones (every file a tool prints for
/// a normal run), beyond that folded to 3 significant digits — each bucket
/// no wider than 1/1024 of its value or than the source's own bucket, as
/// rtscope's recorder keeps them — so a 200 MB histogram costs kilobytes,
/// not gigabytes. Counts are never lost; only ranges get coarser, and
/// [`Hist::folded`] says so for the fidelity note.
///
/// A file of many series (columns, threads) shares [`Hist::FILE_BUCKETS`]:
/// [`Hist::sharing`] gives each series its part, and when 3 significant
/// digits still leave more buckets than that, the buckets are folded
/// coarser (each at most 1/512, 1/256, … of its value wide) until they fit,
/// so 2 000 columns cost what one does. [`Hist::note`] says how coarse.
#[derive(Debug)]
pub(crate) struct Hist {
    raw: Vec<Bucket>,
    folded: Option<BTreeMap<(u64, u64), u64>>,
    total: u64,
    overflow: bool,
    /// Distinct buckets kept before folding (and, when `hard`, after).
    limit: usize,
    /// A folded bucket is at most `value >> shift` wide (10: 1/1024).
    shift: u32,
    /// Fold coarser when the folded buckets exceed `limit`.
    hard: bool,
}

impl Default for Hist {
    fn default() -> Hist {
        Hist { raw: Vec::new(), folded: None, total: 0, overflow: false, limit: Hist::RAW_LIMIT, shift: 10, hard: false }
    }
}

impl Hist {
    /// Distinct buckets kept exactly before folding starts.
    pub(crate) const RAW_LIMIT: usize = 20_000;

    /// The buckets all the series of one file keep together at most, when
    /// it has many ([`Hist::sharing`]): 500 000 buckets are 12 MB.
    pub(crate) const FILE_BUCKETS: usize = 500_000;

    /// Fewest buckets a series keeps however many share the file (folding
    /// to `value` wide gives about one per power of two: 64 at most).
    pub(crate) const MIN_BUCKETS: usize = 64;

    /// The most histograms one file may hold at once (7 812): each keeps
    /// up to [`Hist::MIN_BUCKETS`] of the file's [`Hist::FILE_BUCKETS`].
    pub(crate) const MAX_SERIES: usize = Hist::FILE_BUCKETS / Hist::MIN_BUCKETS;

    /// An error on line `line` when a file has more than
    /// [`Hist::MAX_SERIES`] histogram columns (`what`: "columns").
    pub(crate) fn check_series(series: usize, line: usize, what: &str) -> Result<(), ParseError> {
        if series <= Hist::MAX_SERIES {
            return Ok(());
        }
        Err(ParseError::at(
            line,
            format!(
                "more than {} {what}: rtscope keeps at most {} histograms of one file (each keeps at least {} of the file's {} buckets); split the file by columns",
                Hist::MAX_SERIES,
                Hist::MAX_SERIES,
                Hist::MIN_BUCKETS,
                Hist::FILE_BUCKETS
            ),
        ))
    }

    pub(crate) fn new() -> Hist {
        Hist::default()
    }

    /// A histogram that is one of `series` in a file: at most
    /// [`Hist::FILE_BUCKETS`] / `series` buckets (never fewer than
    /// [`Hist::MIN_BUCKETS`], never more than [`Hist::new`] keeps raw).
    pub(crate) fn sharing(series: usize) -> Hist {
        let limit = (Hist::FILE_BUCKETS / series.max(1)).clamp(Hist::MIN_BUCKETS, Hist::RAW_LIMIT);
        Hist { limit, hard: series > Hist::FILE_BUCKETS / Hist::RAW_LIMIT, ..Hist::default() }
    }

    /// Make this one of `series` sharing the file, as [`Hist::sharing`]
    /// (for a parser that learns the number of series after the first row).
    /// Buckets already kept are folded to the new share at once.
    pub(crate) fn set_sharing(&mut self, series: usize) {
        let s = Hist::sharing(series);
        (self.limit, self.hard) = (s.limit, s.hard);
        if self.folded.is_none() && self.raw.len() > self.limit {
            self.fold_raw();
        }
        self.coarsen_to_limit();
    }

    /// From raw buckets to folded ones (at `shift`).
    fn fold_raw(&mut self) {
        let mut map = BTreeMap::new();
        for b in std::mem::take(&mut self.raw) {
            *map.entry(fold(b.lo_ns.0, b.hi_ns.0, self.shift)).or_insert(0u64) += b.count;
        }
        self.folded = Some(map);
    }

    /// Add `count` samples in `[lo, hi]` (ns, inclusive); empty ones are skipped.
    pub(crate) fn add(&mut self, lo: u64, hi: u64, count: u64) {
        if count == 0 {
            return;
        }
        match self.total.checked_add(count) {
            Some(t) => self.total = t,
            None => self.overflow = true,
        }
        let shift = self.shift;
        match &mut self.folded {
            Some(map) => *map.entry(fold(lo, hi, shift)).or_insert(0) += count,
            None => {
                self.raw.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count });
                if self.raw.len() > self.limit {
                    self.fold_raw();
                }
            }
        }
        self.coarsen_to_limit();
    }

    /// While a `hard` histogram's folded buckets exceed its limit, fold
    /// them once more at half the precision (a coarser block holds whole
    /// finer ones: widths are powers of two times the source's, aligned).
    fn coarsen_to_limit(&mut self) {
        let Some(map) = &mut self.folded else { return };
        while self.hard && map.len() > self.limit && self.shift > 0 {
            self.shift -= 1;
            let old = std::mem::take(map);
            for ((lo, hi), c) in old {
                *map.entry(fold(lo, hi, self.shift)).or_insert(0) += c;
            }
        }
    }

    /// The sum of the counts; `None` when it overflows 64 bits.
    pub(crate) fn total(&self) -> Option<u64> {
        (!self.overflow).then_some(self.total)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.total == 0 && !self.overflow
    }

    /// True when the source had more buckets than kept and they were folded.
    pub(crate) fn folded(&self) -> bool {
        self.folded.is_some()
    }

    /// The fidelity note of `what` when its buckets were folded: 3
    /// significant digits ([`folded_note`]), or coarser to share the file.
    pub(crate) fn note(&self, what: &str) -> Option<String> {
        match self.folded {
            None => None,
            Some(_) if self.shift == 10 => Some(folded_note(what)),
            Some(_) => Some(format!(
                "{what}: one of many series sharing {} histogram buckets: kept in at most {} buckets, each at most 1/{} of its value wide",
                Hist::FILE_BUCKETS,
                self.limit,
                1u64 << self.shift
            )),
        }
    }

    /// The top of the highest bucket kept (`None` when empty).
    pub(crate) fn top(&self) -> Option<u64> {
        match &self.folded {
            Some(map) => map.keys().map(|k| k.1).max(),
            None => self.raw.iter().map(|b| b.hi_ns.0).max(),
        }
    }

    pub(crate) fn into_buckets(self) -> Vec<Bucket> {
        match self.folded {
            Some(map) => map.into_iter().map(|((lo, hi), count)| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count }).collect(),
            None => self.raw,
        }
    }
}

/// The notes of `notes` once each, in first-seen order (the columns of a
/// file folded alike give one note).
pub(crate) fn distinct(notes: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    notes.into_iter().filter(|n| seen.insert(n.clone())).collect()
}

/// The folded range holding source bucket `[lo, hi]`: a block of width
/// `w` = the source width doubled while it stays ≤ lo >> shift (10: lo/1024), aligned on
/// multiples of `w`; the source range itself when it does not fit one block
/// (unaligned or wider).
fn fold(lo: u64, hi: u64, shift: u32) -> (u64, u64) {
    let s = hi.saturating_sub(lo).saturating_add(1);
    let mut w = s;
    while w.saturating_mul(2) <= lo >> shift {
        w *= 2;
    }
    let b_lo = lo - lo % w;
    let b_hi = b_lo.saturating_add(w - 1);
    if w == s || hi > b_hi {
        (lo, hi)
    } else {
        (b_lo, b_hi)
    }
}

/// The fidelity note of a series whose histogram was folded.
pub(crate) fn folded_note(what: &str) -> String {
    format!(
        "{what}: more than {} histogram buckets; kept at 3 significant digits (each bucket at most 1/1024 of its value wide), as rtscope's own recorder keeps them",
        Hist::RAW_LIMIT
    )
}

/// A per-second (or per-window) series being read, at most
/// [`Seconds::MAX_SLOTS`] slots: when a long source would exceed them, the
/// slot width doubles and neighbouring slots merge (count-weighted mean,
/// min of mins, max of maxes), as the recorder does for long native runs.
#[derive(Debug)]
pub(crate) struct Seconds {
    source_width: u64,
    width: u64,
    next_t: u64,
    slots: Vec<SecondStats>,
}

fn merge_slot(a: &mut SecondStats, b: &SecondStats) {
    let n = a.count.saturating_add(b.count);
    if n > 0 {
        a.mean_ns = (a.mean_ns * a.count as f64 + b.mean_ns * b.count as f64) / n as f64;
    }
    a.count = n;
    a.min_ns = a.min_ns.min(b.min_ns);
    a.max_ns = a.max_ns.max(b.max_ns);
}

impl Seconds {
    pub(crate) const MAX_SLOTS: usize = 100_000;

    /// The source gives one entry per `width_s` seconds (0 is taken as 1).
    pub(crate) fn new(width_s: u64) -> Seconds {
        let w = width_s.max(1);
        Seconds { source_width: w, width: w, next_t: 0, slots: Vec::new() }
    }

    /// The next entry's values (entries arrive in order, one source width each).
    pub(crate) fn push(&mut self, count: u64, min: u64, mean: f64, max: u64) {
        let t = self.next_t;
        self.next_t = self.next_t.saturating_add(self.source_width);
        let e = SecondStats { t_s: t - t % self.width, count, min_ns: Nanos(min), mean_ns: mean, max_ns: Nanos(max) };
        match self.slots.last_mut() {
            Some(last) if last.t_s == e.t_s => merge_slot(last, &e),
            _ => self.slots.push(e),
        }
        if self.slots.len() > Self::MAX_SLOTS {
            self.width = self.width.saturating_mul(2);
            let old = std::mem::take(&mut self.slots);
            for mut e in old {
                e.t_s -= e.t_s % self.width;
                match self.slots.last_mut() {
                    Some(last) if last.t_s == e.t_s => merge_slot(last, &e),
                    _ => self.slots.push(e),
                }
            }
        }
    }

    /// Entries pushed so far.
    pub(crate) fn entries(&self) -> u64 {
        self.next_t / self.source_width
    }

    /// The slots and their width in seconds.
    pub(crate) fn finish(self) -> (Vec<SecondStats>, u64) {
        (self.slots, self.width)
    }
}

/// Sort buckets, and fuse any that touch or overlap so they are disjoint
/// (counts are kept; only the ranges get coarser).
pub(crate) fn normalise_buckets(mut b: Vec<Bucket>) -> Vec<Bucket> {
    b.retain(|x| x.count > 0);
    b.sort_by_key(|x| (x.lo_ns, x.hi_ns));
    let mut out: Vec<Bucket> = Vec::with_capacity(b.len());
    for x in b {
        match out.last_mut() {
            Some(last) if x.lo_ns <= last.hi_ns => {
                last.hi_ns = last.hi_ns.max(x.hi_ns);
                last.count = last.count.saturating_add(x.count);
            }
            _ => out.push(x),
        }
    }
    out
}

/// The stored percentiles of a histogram of `samples` samples (by
/// [`stats::bucket_percentile`], so exactly what the recorder writes for a
/// native run with the same buckets).
pub(crate) fn percentiles(buckets: &[Bucket], samples: u64, min: u64, max: u64) -> BTreeMap<String, Nanos> {
    if samples == 0 {
        return BTreeMap::new();
    }
    stats::PERCENTILES.iter().map(|p| (p.key.to_string(), stats::bucket_percentile(buckets, p.q, Nanos(min), Nanos(max)).unwrap_or(Nanos(max)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_buckets_fuse_and_keep_counts() {
        let b = |lo, hi, count| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count };
        let out = normalise_buckets(vec![b(3000, 3999, 5), b(100_000, 200_000, 2), b(100_000, 150_000, 1), b(0, 999, 0)]);
        assert_eq!(out, vec![b(3000, 3999, 5), b(100_000, 200_000, 3)]);
    }

    #[test]
    fn percentiles_take_the_top_of_the_rank_bucket() {
        let b = |lo, hi, count| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count };
        // 90 samples in [1000,1999], 10 in [5000,5999]; max 5500.
        let p = percentiles(&[b(1000, 1999, 90), b(5000, 5999, 10)], 100, 1200, 5500);
        assert_eq!(p["50"], Nanos(1999));
        assert_eq!(p["90"], Nanos(1999));
        assert_eq!(p["99"], Nanos(5500)); // clamped to max
    }

    #[test]
    fn a_huge_histogram_is_folded_without_losing_a_sample() {
        let mut h = Hist::new();
        // 1 µs rows up to 100 ms: 100 000 rows, 1 sample each.
        for us in 0..100_000u64 {
            h.add(us * 1000, us * 1000 + 999, 1);
        }
        assert!(h.folded());
        assert_eq!(h.total(), Some(100_000));
        let b = h.into_buckets();
        assert!(b.len() < 25_000, "{} buckets", b.len());
        assert_eq!(b.iter().map(|x| x.count).sum::<u64>(), 100_000);
        for x in &b {
            let width = x.hi_ns.0 - x.lo_ns.0 + 1;
            assert!(width == 1000 || width <= x.lo_ns.0 / 1024, "[{}, {}]", x.lo_ns.0, x.hi_ns.0);
        }
        assert!(b.windows(2).all(|w| w[0].hi_ns < w[1].lo_ns), "disjoint and ascending");
        // Below ~1 ms the 1 µs rows stay as they are.
        assert_eq!((b[3].lo_ns.0, b[3].hi_ns.0), (3000, 3999));
    }

    #[test]
    fn series_sharing_a_file_fold_coarser_and_keep_every_sample() {
        // 2 000 columns share the file: 250 buckets each. 1 µs rows to 50 ms.
        let mut h = Hist::sharing(2000);
        for us in 0..50_000u64 {
            h.add(us * 1000, us * 1000 + 999, 2);
        }
        let note = h.note("column 7").expect("folded");
        assert!(note.contains("at most 250 buckets"), "{note}");
        let b = h.into_buckets();
        assert!(b.len() <= 250, "{} buckets", b.len());
        assert_eq!(b.iter().map(|x| x.count).sum::<u64>(), 100_000);
        assert!(b.windows(2).all(|w| w[0].hi_ns < w[1].lo_ns), "disjoint and ascending");
        // A file of few series keeps the 3-significant-digit rule.
        assert!(!Hist::sharing(4).hard);
    }

    #[test]
    fn long_per_second_series_are_bounded() {
        let mut s = Seconds::new(1);
        for k in 0..250_000u64 {
            s.push(1000, k, k as f64, k + 10);
        }
        assert_eq!(s.entries(), 250_000);
        let (slots, width) = s.finish();
        assert_eq!(width, 4);
        assert!(slots.len() <= Seconds::MAX_SLOTS);
        assert_eq!(slots.iter().map(|x| x.count).sum::<u64>(), 250_000 * 1000);
        assert_eq!((slots[1].t_s, slots[1].min_ns.0, slots[1].max_ns.0), (4, 4, 17));
        assert!((slots[1].mean_ns - 5.5).abs() < 1e-9);
    }
}
