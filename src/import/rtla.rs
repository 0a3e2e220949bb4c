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

use super::{float, uint, ParseError, Parsed, Series};
use crate::model::{Bucket, Nanos};

struct Column {
    variant: &'static str,
    cpu: usize,
    rows: Vec<(u64, u64)>,
    over: Option<u64>,
    count: Option<u64>,
    min: Option<u64>,
    avg: Option<f64>,
    max: Option<u64>,
}

pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut unit_ns = 1000u64;
    let mut duration_ns = None;
    let mut cols: Vec<Column> = Vec::new();
    let mut header_line = 0;
    for (i, raw) in text.lines().enumerate() {
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
                cols.push(Column { variant, cpu, rows: Vec::new(), over: None, count: None, min: None, avg: None, max: None });
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
                for (c, v) in cols.iter_mut().zip(&vals) {
                    c.rows.push((idx, uint(v, n, "bucket count")?));
                }
            }
        }
    }
    if cols.is_empty() {
        return Err(ParseError::file("no \"Index IRQ-000 Thr-000 ...\" header; expected rtla timerlat hist output"));
    }
    let mut idx: Vec<u64> = cols[0].rows.iter().map(|r| r.0).collect();
    idx.sort_unstable();
    idx.dedup();
    let width = idx.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(1).max(1);
    let last = idx.last().copied().unwrap_or(0);
    let scale = |v: u64, what: &str| -> Result<u64, ParseError> {
        v.checked_mul(unit_ns).filter(|&x| x <= i64::MAX as u64).ok_or_else(|| ParseError::file(format!("{what}: {v} is too large")))
    };
    let mut p = Parsed { tool: "rtla timerlat hist".into(), duration_ns, ..Parsed::default() };
    let mut overflows = 0;
    for c in &cols {
        let name = format!("{}-{:03}", c.variant, c.cpu);
        let count = c.count.ok_or_else(|| ParseError::file("no \"count:\" row; expected the summary rows after the histogram (truncated file?)"))?;
        if count == 0 {
            continue;
        }
        let (min, max) = match (c.min, c.max) {
            (Some(a), Some(b)) => (scale(a, &name)?, scale(b, &name)?),
            _ => return Err(ParseError::file("no \"min:\"/\"max:\" rows; expected the summary rows (truncated file?)")),
        };
        let mut buckets = Vec::new();
        for &(i, k) in &c.rows {
            let lo = scale(i, &name)?;
            let hi = lo.checked_add(scale(width, &name)? - 1).ok_or_else(|| ParseError::file(format!("{name}: bucket too large")))?;
            buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count: k });
        }
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
    p.fidelity.push("no host, date or period in this format; no per-second series".into());
    Ok(p)
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
