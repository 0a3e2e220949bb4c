//! `cyclictest-hist`: the histogram text cyclictest prints with `-h N`
//! (`--histogram`, `--histofall`, or into `--histfile`).
//!
//! ```text
//! # Histogram
//! 000000 000000 000000          <- value (µs), then one count per thread
//! 000007 000033 000260             (--histofall adds a total column)
//! # Total: 000001984 000001996    <- counts inside the histogram
//! # Min Latencies: 00003 00006
//! # Avg Latencies: 00022 00014
//! # Max Latencies: 11093 04005
//! # Histogram Overflows: 00016 00004
//! # Histogram Overflow at cycle number:
//! # Thread 0: 00052 00364 ...
//! ```
//! Samples per thread = Total + Overflows; the overflows become one bucket
//! from the histogram limit (its row count) up to the thread's max. Other
//! lines (cyclictest's live status lines, `# /dev/cpu_dma_latency ...`) are
//! ignored, but the footer must be complete: a missing `# Max Latencies`
//! line means a truncated file.

use super::format::{Format, Spec, Systems};
use super::{uint, us_to_ns, Hist, Line, ParseError, Parsed, Series};
use crate::model::{Bucket, Nanos};

/// cyclictest -h/--histogram (or --histfile) text.
pub(crate) const FORMAT: Format = Format(&Spec {
    // Cut short: the `# Max Latencies` footer is at the end of the file.
    fallback: |s| s.text().lines().any(|l| super::strip_ansi(l.trim()) == "# Histogram"),
    ..Spec::text(
        "cyclictest-hist",
        "cyclictest -h/--histogram (or --histfile) text",
        |s| s.lines().any(|l| l.starts_with("# Histogram")) && s.lines().any(|l| l.starts_with("# Max Latencies")),
        |input, _| parse_lines(input).map(Systems::one),
    )
});

fn footer_values(rest: &str, line: usize, what: &str) -> Result<Vec<u64>, ParseError> {
    rest.split_whitespace().map(|t| uint(t, line, what)).collect()
}

/// Read line by line: each histogram row is added to its column's
/// [`Hist`] at once, so memory does not grow with the number of rows.
pub(crate) fn parse_lines(lines: &mut dyn Iterator<Item = Line>) -> Result<Parsed, ParseError> {
    let mut cols: Vec<Hist> = Vec::new();
    let mut first_row: Option<usize> = None;
    let mut limit_us = 0u64;
    let mut in_hist = false;
    let (mut total, mut min, mut avg, mut max, mut over) = (None, None, None, None, None);
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = super::strip_ansi(&raw);
        let l = l.trim();
        if l.starts_with("# Histogram Overflow at") || l.starts_with("# Thread") {
            continue;
        }
        if l == "# Histogram" {
            in_hist = true;
            continue;
        }
        let footer = [
            ("# Total:", &mut total),
            ("# Min Latencies:", &mut min),
            ("# Avg Latencies:", &mut avg),
            ("# Max Latencies:", &mut max),
            ("# Histogram Overflows:", &mut over),
        ];
        let matched = footer_line(l, n, footer)?;
        in_hist &= !matched;
        if matched || l.is_empty() || l.starts_with('#') || !in_hist {
            continue;
        }
        let value = add_row(l, n, &mut cols, first_row)?;
        first_row.get_or_insert(n);
        limit_us = limit_us.max(value.saturating_add(1));
    }
    let need = |x: Option<(usize, Vec<u64>)>, name: &str| {
        x.ok_or_else(|| ParseError::file(format!("no \"# {name}:\" line; expected the complete output of cyclictest -h (truncated file?)")))
    };
    let (min_line, min) = need(min, "Min Latencies")?;
    let (_, max) = need(max, "Max Latencies")?;
    let (_, avg) = need(avg, "Avg Latencies")?;
    let (_, total) = need(total, "Total")?;
    let (_, over) = need(over, "Histogram Overflows")?;
    let threads = min.len();
    if threads == 0 {
        return Err(ParseError::at(min_line, "# Min Latencies: has no values; expected one per thread"));
    }
    for (name, v) in [("Max Latencies", &max), ("Avg Latencies", &avg), ("Total", &total), ("Histogram Overflows", &over)] {
        // --histofall adds a total column to some footer lines.
        if v.len() != threads && v.len() != threads + 1 {
            return Err(ParseError::file(format!("# {name}: has {} values but # Min Latencies: has {threads}; expected one per thread", v.len())));
        }
    }
    let Some(first_row) = first_row else {
        return Err(ParseError::file("no histogram rows after \"# Histogram\"; expected cyclictest -h output"));
    };
    if cols.len() != threads && cols.len() != threads + 1 {
        return Err(ParseError::at(first_row, format!("{} counts on this row; expected {threads} (one per thread)", cols.len())));
    }
    let footer = Footer { total, min, avg, max, over };
    let mut p = Parsed { tool: "cyclictest".into(), ..Parsed::default() };
    let mut overflow_total = 0;
    let mut folded = Vec::new();
    for (t, hist) in cols.into_iter().take(threads).enumerate() {
        let (series, overflows) = thread_series(t, hist, &footer, limit_us, &mut folded)?;
        overflow_total += overflows;
        p.series.push(series);
    }
    p.fidelity.push("µs resolution; the average is printed as whole µs".into());
    p.fidelity.extend(super::fold::distinct(folded));
    if overflow_total > 0 {
        p.fidelity.push(format!("histogram truncated at {limit_us} µs, {overflow_total} overflows: they are one bucket from {limit_us} µs up to the max"));
    }
    p.fidelity.push("no host, date, period or CPU in this format; no per-second series".into());
    Ok(p)
}

/// A footer line's number and values, once read.
type FooterValues = Option<(usize, Vec<u64>)>;

/// Footer line `n` ("# Total: 1 2 …", …) into its slot; true when it is one.
fn footer_line(l: &str, n: usize, slots: [(&str, &mut FooterValues); 5]) -> Result<bool, ParseError> {
    let mut matched = false;
    for (prefix, slot) in slots {
        if let Some(rest) = l.strip_prefix(prefix) {
            *slot = Some((n, footer_values(rest, n, prefix.trim_start_matches("# ").trim_end_matches(':'))?));
            matched = true;
        }
    }
    Ok(matched)
}

/// Histogram row `n`, "VALUE COUNT COUNT ...": each count into its
/// thread's column (the first row sets how many; they then share the
/// file's buckets). Returns the row's value in µs.
fn add_row(l: &str, n: usize, cols: &mut Vec<Hist>, first_row: Option<usize>) -> Result<u64, ParseError> {
    let mut toks = l.split_whitespace();
    let value = uint(toks.next().unwrap_or(""), n, "histogram row value (µs)")?;
    let lo = us_to_ns(value, n, "histogram row value")?;
    let mut k = 0;
    for t in toks {
        let c = uint(t, n, "histogram count")?;
        if first_row.is_none() {
            Hist::check_series(cols.len() + 1, n, "counts on a row")?;
            cols.push(Hist::new());
        }
        match cols.get_mut(k) {
            Some(h) => h.add(lo, lo + 999, c),
            None => return Err(ParseError::at(n, format!("more than {} counts on this row; line {} has {}", cols.len(), first_row.unwrap_or(n), cols.len()))),
        }
        k += 1;
    }
    if first_row.is_some() && k != cols.len() {
        return Err(ParseError::at(n, format!("{k} counts on this row; line {} has {}", first_row.unwrap_or(n), cols.len())));
    }
    if first_row.is_none() {
        let series = cols.len();
        cols.iter_mut().for_each(|h| h.set_sharing(series));
    }
    Ok(value)
}

/// The footer's per-thread values ("# Total:", "# Min Latencies:", ...).
struct Footer {
    total: Vec<u64>,
    min: Vec<u64>,
    avg: Vec<u64>,
    max: Vec<u64>,
    over: Vec<u64>,
}

/// Thread `t`'s series from its column and the footer; its overflows
/// (past `limit_us`) are one bucket up to the max. Returns it with that count.
fn thread_series(t: usize, hist: Hist, f: &Footer, limit_us: u64, folded: &mut Vec<String>) -> Result<(Series, u64), ParseError> {
    let in_hist = hist.total().ok_or_else(|| ParseError::file(format!("thread {t}: counts overflow a 64-bit sum")))?;
    if in_hist != f.total[t] {
        return Err(ParseError::file(format!("thread {t}: histogram rows sum to {in_hist} but # Total: says {}; expected them equal", f.total[t])));
    }
    folded.extend(hist.note("histogram"));
    let mut buckets = hist.into_buckets();
    let max_ns = us_to_ns(f.max[t], 0, "Max Latencies")?;
    if f.over[t] > 0 {
        let lo = us_to_ns(limit_us, 0, "histogram limit")?;
        if max_ns < lo {
            return Err(ParseError::file(format!("thread {t}: {} overflows but max {} µs is below the histogram limit {limit_us} µs", f.over[t], f.max[t])));
        }
        buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(max_ns), count: f.over[t] });
    }
    let samples = f.total[t].checked_add(f.over[t]).ok_or_else(|| ParseError::file("sample count overflows"))?;
    let series = Series {
        probe: "timer".into(),
        thread: Some(t),
        samples,
        min_ns: us_to_ns(f.min[t], 0, "Min Latencies")?,
        max_ns,
        mean_ns: Some(f.avg[t] as f64 * 1000.0),
        buckets,
        // cyclictest skips missed periods without counting them.
        overruns_unknown: true,
        ..Series::default()
    };
    Ok((series, f.over[t]))
}
