//! `rtla-timerlat-hist`: the text `rtla timerlat hist` prints.
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)          <- or nanoseconds (ns) with -n
//! # Duration:   0 00:10:00
//! Index   IRQ-000   Thr-000   IRQ-001   Thr-001   (Usr-NNN with -u)
//! 0        276489         0    206089         0   <- bucket start, one count per column
//! over:         0         0         0         0   <- samples past the last bucket
//! count:   ...  min:  ...  avg:  ...  max:  ...
//! ALL:        IRQ       Thr       Usr           <- newer rtla: all-CPU summary (recomputed, so skipped)
//! ```
//! The bucket width is the smallest step between Index rows (1 unless `-b`
//! was given; with `--no-index`/`-z` gaps it is still the smallest step).
//! Columns become series of probe `timerlat`, variant irq/thread/user, one
//! per CPU. A column whose count is 0 (CPU not measured) is skipped.

use super::{float, uint, Hist, Line, ParseError, Parsed, Series};
use crate::model::{Bucket, Nanos};

struct Column {
    variant: &'static str,
    cpu: usize,
    hist: Hist,
    over: Option<u64>,
    count: Option<u64>,
    min: Option<u64>,
    avg: Option<f64>,
    max: Option<u64>,
}

pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_lines(&mut super::Lines::new(text.as_bytes()))
}

/// Read line by line. A row's bucket width is the smallest step between
/// Index values seen so far, so each row is added to its column's [`Hist`]
/// when the next one arrives (the last with the final width): with rtla's
/// contiguous rows that is the bucket width exactly; with `--no-index`/`-z`
/// gaps before the first contiguous pair, those first rows get a wider
/// (still enclosing) range.
pub fn parse_lines(lines: &mut dyn Iterator<Item = Line>) -> Result<Parsed, ParseError> {
    let mut unit_ns = 1000u64;
    let mut duration_ns = None;
    let mut cols: Vec<Column> = Vec::new();
    let mut header_line = 0;
    let mut width: Option<u64> = None;
    let mut pending: Option<(usize, u64, Vec<u64>)> = None;
    let mut last = 0u64;
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(c) = l.strip_prefix('#') {
            let c = c.trim();
            if c.starts_with("Time unit is") {
                unit_ns = if c.contains("nanoseconds") || c.contains("(ns)") { 1 } else { 1000 };
            } else if let Some(d) = c.strip_prefix("Duration:") {
                duration_ns = parse_duration(d);
            }
            continue;
        }
        let mut toks = l.split_whitespace();
        let first = toks.next().unwrap_or("");
        if first == "Index" {
            header_line = n;
            cols.clear();
            (width, pending, last) = (None, None, 0);
            for name in toks {
                let (kind, cpu) = name
                    .split_once('-')
                    .ok_or_else(|| ParseError::at(n, format!("column {name:?}: expected IRQ-NNN, Thr-NNN or Usr-NNN")))?;
                let variant = match kind {
                    "IRQ" => "irq",
                    "Thr" => "thread",
                    "Usr" => "user",
                    _ => return Err(ParseError::at(n, format!("column {name:?}: expected IRQ-NNN, Thr-NNN or Usr-NNN"))),
                };
                let cpu = uint(cpu, n, "CPU number in column header")? as usize;
                cols.push(Column { variant, cpu, hist: Hist::new(), over: None, count: None, min: None, avg: None, max: None });
            }
            if cols.is_empty() {
                return Err(ParseError::at(n, "Index header without columns; expected IRQ-NNN/Thr-NNN columns"));
            }
            continue;
        }
        if first == "ALL:" {
            break; // all-CPU summary of newer rtla: recomputed as the merged entry
        }
        if header_line == 0 {
            continue; // text before the table (rtla prints nothing else we need)
        }
        let vals: Vec<&str> = toks.collect();
        if vals.len() != cols.len() {
            return Err(ParseError::at(n, format!("{} values after {first:?}; expected {} (one per column of the Index line {header_line})", vals.len(), cols.len())));
        }
        match first {
            "over:" | "count:" | "min:" | "max:" => {
                for (c, v) in cols.iter_mut().zip(&vals) {
                    let x = uint(v, n, first)?;
                    match first {
                        "over:" => c.over = Some(x),
                        "count:" => c.count = Some(x),
                        "min:" => c.min = Some(x),
                        _ => c.max = Some(x),
                    }
                }
            }
            "avg:" => {
                for (c, v) in cols.iter_mut().zip(&vals) {
                    c.avg = Some(float(v, n, "avg:")?);
                }
            }
            _ => {
                let idx = uint(first, n, "Index (bucket start)")?;
                let counts = vals.iter().map(|v| uint(v, n, "bucket count")).collect::<Result<Vec<_>, _>>()?;
                if let Some((pn, pidx, _)) = &pending {
                    if idx <= *pidx {
                        return Err(ParseError::at(n, format!("Index {idx} does not follow {pidx} on line {pn}; expected increasing bucket starts")));
                    }
                    width = Some(width.map_or(idx - pidx, |w| w.min(idx - pidx)));
                }
                if let Some((pn, pidx, pcounts)) = pending.replace((n, idx, counts)) {
                    add_row(&mut cols, pn, pidx, &pcounts, width.unwrap_or(1), unit_ns)?;
                }
                last = idx;
            }
        }
    }
    if cols.is_empty() {
        return Err(ParseError::file("no \"Index IRQ-000 Thr-000 ...\" header; expected rtla timerlat hist output"));
    }
    let width = width.unwrap_or(1).max(1);
    if let Some((pn, pidx, pcounts)) = pending.take() {
        add_row(&mut cols, pn, pidx, &pcounts, width, unit_ns)?;
    }
    let scale = |v: u64, what: &str| -> Result<u64, ParseError> {
        v.checked_mul(unit_ns).filter(|&x| x <= i64::MAX as u64).ok_or_else(|| ParseError::file(format!("{what}: {v} is too large")))
    };
    let mut folded = false;
    let mut p = Parsed { tool: "rtla timerlat hist".into(), duration_ns, ..Parsed::default() };
    let mut overflows = 0;
    for c in &mut cols {
        let name = format!("{}-{:03}", c.variant, c.cpu);
        let count = c.count.ok_or_else(|| ParseError::file("no \"count:\" row; expected the summary rows after the histogram (truncated file?)"))?;
        if count == 0 {
            continue;
        }
        let (min, max) = match (c.min, c.max) {
            (Some(a), Some(b)) => (scale(a, &name)?, scale(b, &name)?),
            _ => return Err(ParseError::file("no \"min:\"/\"max:\" rows; expected the summary rows (truncated file?)")),
        };
        folded |= c.hist.folded();
        let mut buckets = std::mem::take(&mut c.hist).into_buckets();
        let over = c.over.unwrap_or(0);
        if over > 0 {
            let lo = scale(last.saturating_add(width), &name)?;
            if max < lo {
                return Err(ParseError::file(format!("{name}: over: {over} but max is below the histogram's end")));
            }
            buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(max), count: over });
            overflows += over;
        }
        p.series.push(Series {
            probe: "timerlat".into(),
            variant: Some(c.variant.to_string()),
            thread: Some(c.cpu),
            cpu: Some(c.cpu),
            samples: count,
            min_ns: min,
            max_ns: max,
            mean_ns: c.avg.map(|a| a * unit_ns as f64),
            buckets,
            ..Series::default()
        });
    }
    if unit_ns == 1000 {
        p.fidelity.push(format!("µs resolution, {width} µs buckets; rtla prints avg as whole µs"));
    }
    if overflows > 0 {
        p.fidelity.push(format!(
            "histogram truncated at {} {}, {overflows} overflows (over: row): one bucket from there up to the max",
            last.saturating_add(width),
            if unit_ns == 1 { "ns" } else { "µs" }
        ));
    }
    if folded {
        p.fidelity.push(super::folded_note("histogram"));
    }
    p.fidelity.push("no host, date or period in this format; no per-second series".into());
    Ok(p)
}

/// One Index row's counts into the columns' histograms, `width` index units wide.
fn add_row(cols: &mut [Column], line: usize, idx: u64, counts: &[u64], width: u64, unit_ns: u64) -> Result<(), ParseError> {
    let too_big = || ParseError::at(line, format!("Index {idx}: too large"));
    let lo = idx.checked_mul(unit_ns).filter(|&x| x <= i64::MAX as u64).ok_or_else(too_big)?;
    let hi = width.checked_mul(unit_ns).and_then(|w| lo.checked_add(w - 1)).filter(|&x| x <= i64::MAX as u64).ok_or_else(too_big)?;
    for (c, &k) in cols.iter_mut().zip(counts) {
        c.hist.add(lo, hi, k);
    }
    Ok(())
}

/// rtla's "0 00:10:00" (days hh:mm:ss).
fn parse_duration(s: &str) -> Option<u64> {
    let mut it = s.split_whitespace();
    let days: u64 = it.next()?.parse().ok()?;
    let hms: Vec<u64> = it.next()?.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if hms.len() != 3 {
        return None;
    }
    let secs = days.checked_mul(86400)?.checked_add(hms[0].checked_mul(3600)?)?.checked_add(hms[1].checked_mul(60)?)?.checked_add(hms[2])?;
    secs.checked_mul(1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_unit_user_columns_and_the_all_section() {
        // Newer rtla: -n (ns), -u (Usr columns), and an ALL: summary that is
        // recomputed as the merged entry, so it is skipped.
        let text = "# RTLA timerlat histogram\n# Time unit is nanoseconds (ns)\n# Duration:   0 00:00:10\n\
Index   IRQ-000   Thr-000   Usr-000\n1000   5   0   0\n2000   1   4   0\n3000   0   2   6\n\
over:   0   0   0\ncount:   6   6   6\nmin:   1100   2100   3200\navg:   1300   2700   3500\nmax:   2100   3900   3999\n\
ALL:  IRQ  Thr  Usr\ncount:  6  6  6\n";
        let p = parse(text).unwrap();
        assert_eq!(p.duration_ns, Some(10_000_000_000));
        let vs: Vec<_> = p.series.iter().map(|s| s.variant.clone().unwrap()).collect();
        assert_eq!(vs, ["irq", "thread", "user"]);
        let usr = &p.series[2];
        assert_eq!((usr.samples, usr.min_ns, usr.max_ns), (6, 3200, 3999));
        // 1000 ns index steps: buckets [3000, 3999].
        assert_eq!(usr.buckets.iter().find(|b| b.count == 6).map(|b| (b.lo_ns.0, b.hi_ns.0)), Some((3000, 3999)));
        assert!(p.fidelity.iter().all(|f| !f.contains("µs resolution")));
    }

    #[test]
    fn a_row_with_the_wrong_number_of_values_names_its_line() {
        let e = parse("Index IRQ-000 Thr-000\n0 1 2\n1 3\n").unwrap_err();
        assert_eq!(e.line, 3);
    }
}
