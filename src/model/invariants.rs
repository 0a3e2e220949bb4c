//! The invariants docs/schema.md states for every result entry, checked
//! by [`Run::check_invariants`] before a result is stored or written.

use super::*;

/// The largest value a count or time may have: the history database
/// stores them as signed 64-bit integers (292 years in ns).
pub const MAX_STORED: u64 = i64::MAX as u64;

impl Run {
    /// The invariants docs/schema.md states for every result entry: counts
    /// and times fit the history's 64-bit integers, `min_ns ≤ max_ns`
    /// when there are samples, histogram buckets have `lo ≤ hi` and ascend
    /// without overlap, and — for rtscope's own runs — the buckets hold
    /// every sample. The error names the field (`results[3].min_ns`) and
    /// what is wrong.
    pub fn check_invariants(&self) -> Result<(), String> {
        let imported = self.imported_from.is_some();
        self.results.iter().enumerate().try_for_each(|(i, r)| check_entry(i, r, imported))
    }
}

/// The invariants of entry `i` of a run (see [`Run::check_invariants`];
/// `imported`: the run has `imported_from`), for a run checked entry by
/// entry as it is built.
pub(crate) fn check_entry(i: usize, r: &ProbeResult, imported: bool) -> Result<(), String> {
    let at = |f: &str| format!("results[{i}].{f}");
    for (f, v) in [("samples", r.samples), ("overruns", r.overruns), ("min_ns", r.min_ns.0), ("max_ns", r.max_ns.0)] {
        if v > MAX_STORED {
            return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", at(f)));
        }
    }
    if let Some(t) = &r.extras.throughput {
        let most = t.per_interval.iter().copied().max().unwrap_or(0);
        for (f, v) in [("throughput.ops", t.ops), ("throughput.interval_ns", t.interval_ns.0), ("throughput.per_interval[]", most)] {
            if v > MAX_STORED {
                return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", at(f)));
            }
        }
    }
    if r.samples > 0 && r.min_ns > r.max_ns {
        return Err(format!("{} {} is above max_ns {}", at("min_ns"), r.min_ns.0, r.max_ns.0));
    }
    let mut prev_hi: Option<u64> = None;
    let mut total: u64 = 0;
    for (k, b) in r.histogram.iter().enumerate() {
        let bf = |f: &str| format!("{}[{k}].{f}", at("histogram"));
        for (f, v) in [("lo_ns", b.lo_ns.0), ("hi_ns", b.hi_ns.0), ("count", b.count)] {
            if v > MAX_STORED {
                return Err(format!("{} is {v}, beyond the largest value a result holds ({MAX_STORED})", bf(f)));
            }
        }
        if b.lo_ns > b.hi_ns {
            return Err(format!("{} {} is above hi_ns {} (a reversed bucket)", bf("lo_ns"), b.lo_ns.0, b.hi_ns.0));
        }
        if prev_hi.is_some_and(|h| b.lo_ns.0 < h) {
            return Err(format!("{} {} overlaps the bucket before it (buckets ascend)", bf("lo_ns"), b.lo_ns.0));
        }
        prev_hi = Some(b.hi_ns.0);
        total = total.saturating_add(b.count);
    }
    if !imported && !r.histogram.is_empty() && total != r.samples {
        return Err(format!("{} hold {total} samples but {} is {}", at("histogram"), at("samples"), r.samples));
    }
    Ok(())
}
