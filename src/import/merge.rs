//! The merged entry of an imported probe/variant ([`Merge`]): its members
//! folded one by one through the one distribution type
//! ([`Distribution::merge`], checked as a native or agent merge is), and
//! what an imported file has beside it — the members' moments as floats,
//! pooled at the end ([`MomentRuns`]: runs of equal moments, so 1.5 M pairs
//! of an IPC log cost little), whether their overruns, samples and σ are
//! known, their signed summaries. `build.rs` makes the entries and hands
//! each to its group's merge (`Building`).

use super::read::ParseError;
use crate::measure::distribution::Distribution;
use crate::model::{Bucket, ProbeResult, SignedStats};
use crate::stats;

/// A series or entry as an error names it: probe, variant and thread.
pub(super) fn named(probe: &str, variant: Option<&str>, thread: Option<usize>) -> String {
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
pub(super) fn distribution_of(r: &ProbeResult) -> Distribution {
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
            Some(acc) => SignedStats::combine(acc, signed),
            None => signed,
        });
        Ok(())
    }

    /// A probe/variant has a merged entry when it has several members or
    /// its member is a thread's.
    pub(super) fn wanted(&self) -> bool {
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
    use std::collections::BTreeMap;

    use super::*;
    use crate::import::build::{finish_series, Series};
    use crate::model::Nanos;

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
