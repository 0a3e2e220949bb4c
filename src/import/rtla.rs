//! `rtla-timerlat-hist`: the text `rtla timerlat hist` prints.
//!
//! As rtla 6.1 (Debian's `rtla` package) prints it on the 6.1 PREEMPT_RT
//! kernel (tests/fixtures/import/rtla-timerlat-hist.txt is such a capture):
//!
//! ```text
//! # RTLA timerlat histogram
//! # Time unit is microseconds (us)          <- or nanoseconds (ns) with -n
//! # Duration:   0 00:00:11
//! Index   IRQ-000   Thr-000   IRQ-001   Thr-001   (Usr-NNN with -u, newer rtla)
//! 2             0         0         2         0   <- bucket start (index x -b), one count per column;
//! 3             0         0         4         0      rows whose columns are all 0 are left out
//! ...
//! over:      1200      1254      1171      1233   <- samples at or past -E x -b (the histogram's end)
//! count:     4702      4702      4440      4440   <- every sample, the over: ones included
//! min:         21        53         2        26   <- min/avg/max floored to the unit; avg is
//! avg:       1309      1388      1370      1440      sum/count in whole units ("-" when count is 0)
//! max:      27901     36890     22975     40826
//! ALL:        IRQ       Thr       Usr           <- newer rtla only: all-CPU summary (recomputed, so skipped)
//! ```
//! The bucket width is the smallest step between Index rows (1 unless `-b`
//! was given; rows left out leave gaps, so it is the smallest step seen).
//! The `over:` samples become one bucket from the end of the last row (or
//! the column's min, if higher) to the column's max: rtla does not print
//! where its histogram ends (`-E` x `-b`), only that they are past it.
//! Columns become series of probe `timerlat`, variant irq/thread/user, one
//! per CPU. A column whose count is 0 (no sample on that CPU) is skipped.
//! Reading stops after the `max:` row (text after it, e.g. "rtla timerlat
//! hit stop tracing", is not part of the table). `--no-index` (rows without
//! bucket starts, summary rows without labels) and `--no-header`/
//! `--no-summary` output cannot be read back unambiguously and are refused.

use super::format::{Format, Spec, Systems};
use super::{float, uint, Hist, Line, ParseError, Parsed, Series};
use crate::model::{Bucket, Nanos};

/// Text output of `rtla timerlat hist`.
pub(crate) const FORMAT: Format = Format(&Spec::text(
    "rtla-timerlat-hist",
    "Text output of `rtla timerlat hist`",
    |s| {
        s.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("# RTLA timerlat hist") || (l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-") || l.contains("Usr-")))
        })
    },
    |input, _| parse_lines(input).map(Systems::one),
));

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

#[cfg(test)]
pub(crate) fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_lines(&mut super::read::Lines::new(text.as_bytes()))
}

/// Read line by line. A row's bucket width is the smallest step between
/// Index values seen so far. rtla leaves out rows whose columns are all 0,
/// so the first rows (the sparse low end of the distribution) are often
/// apart by more than one bucket: the first [`FIRST_ROWS`] rows (fewer in
/// a table of many columns: [`FIRST_CELLS`] counts) are held until the
/// smallest step is known from the rows after them; from then on each row
/// is added to its column's [`Hist`] when the next one arrives. Only a
/// table with no two adjacent rows among the rows held gets wider (still
/// enclosing) buckets there.
/// Rows held before the first ones are added (a bound on memory).
const FIRST_ROWS: usize = 4096;

/// Counts held before the first rows are added: a table of more than 256
/// columns (128 CPUs) holds fewer than [`FIRST_ROWS`] rows, so 8 000
/// columns cost 8 MB here, not 262 MB.
const FIRST_CELLS: usize = 1 << 20;

/// The table as read: its unit and duration, its columns, and the Index
/// rows held until the bucket width is known.
struct Table {
    unit_ns: u64,
    duration_ns: Option<u64>,
    cols: Vec<Column>,
    header_line: usize,
    width: Option<u64>,
    /// Rows read but not yet added: (line, Index, counts).
    pending: Vec<(usize, u64, Vec<u64>)>,
    flushed: bool,
    last: Option<u64>,
}

fn scan(lines: &mut dyn Iterator<Item = Line>) -> Result<Table, ParseError> {
    let mut t = Table { unit_ns: 1000, duration_ns: None, cols: Vec::new(), header_line: 0, width: None, pending: Vec::new(), flushed: false, last: None };
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
                t.unit_ns = if c.contains("nanoseconds") || c.contains("(ns)") { 1 } else { 1000 };
            } else if let Some(d) = c.strip_prefix("Duration:") {
                t.duration_ns = parse_duration(d);
            }
            continue;
        }
        let mut toks = l.split_whitespace();
        let first = toks.next().unwrap_or("");
        if first == "Index" {
            t.header_line = n;
            (t.width, t.last, t.flushed) = (None, None, false);
            t.pending.clear();
            t.cols = header_columns(toks, n)?;
            let series = t.cols.len();
            t.cols.iter_mut().for_each(|c| c.hist.set_sharing(series));
            if t.cols.is_empty() {
                return Err(ParseError::at(n, "Index header without columns; expected IRQ-NNN/Thr-NNN columns"));
            }
            continue;
        }
        if first == "ALL:" {
            break; // all-CPU summary of newer rtla: recomputed as the merged entry
        }
        if t.header_line == 0 {
            if ["IRQ-", "Thr-", "Usr-"].iter().any(|p| first.starts_with(p)) {
                return Err(ParseError::at(
                    n,
                    "column header without \"Index\": rtla --no-index output has no bucket starts and no summary labels; rerun rtla without --no-index",
                ));
            }
            continue; // text before the table (rtla prints nothing else we need)
        }
        let vals: Vec<&str> = toks.collect();
        if vals.len() != t.cols.len() {
            return Err(ParseError::at(
                n,
                format!("{} values after {first:?}; expected {} (one per column of the Index line {})", vals.len(), t.cols.len(), t.header_line),
            ));
        }
        match first {
            "over:" | "count:" | "min:" | "max:" | "avg:" => {
                if summary_row(first, &vals, n, &mut t.cols)? {
                    break; // the table's last row; rtla may print notes after it
                }
            }
            _ => index_row(&mut t, first, &vals, n)?,
        }
    }
    Ok(t)
}

/// One Index row of line `n`: held while the first rows set the bucket
/// width, then added to the columns one row behind.
fn index_row(t: &mut Table, first: &str, vals: &[&str], n: usize) -> Result<(), ParseError> {
    let idx = uint(first, n, "Index (bucket start)")?;
    let counts = vals.iter().map(|v| uint(v, n, "bucket count")).collect::<Result<Vec<_>, _>>()?;
    if let Some((pn, pidx, _)) = t.pending.last() {
        if idx <= *pidx {
            return Err(ParseError::at(n, format!("Index {idx} does not follow {pidx} on line {pn}; expected increasing bucket starts")));
        }
        t.width = Some(t.width.map_or(idx - pidx, |w| w.min(idx - pidx)));
    }
    t.pending.push((n, idx, counts));
    if t.flushed || t.pending.len() > FIRST_ROWS.min(FIRST_CELLS / t.cols.len()).max(1) {
        t.flushed = true;
        let keep = t.pending.pop();
        for (pn, pidx, pcounts) in t.pending.drain(..) {
            add_row(&mut t.cols, pn, pidx, &pcounts, t.width.unwrap_or(1), t.unit_ns)?;
        }
        t.pending.extend(keep);
    }
    t.last = Some(idx);
    Ok(())
}

pub(crate) fn parse_lines(lines: &mut dyn Iterator<Item = Line>) -> Result<Parsed, ParseError> {
    let mut t = scan(lines)?;
    if t.cols.is_empty() {
        return Err(ParseError::file("no \"Index IRQ-000 Thr-000 ...\" header; expected rtla timerlat hist output (without --no-header)"));
    }
    let width = t.width.unwrap_or(1).max(1);
    for (pn, pidx, pcounts) in t.pending.drain(..) {
        add_row(&mut t.cols, pn, pidx, &pcounts, width, t.unit_ns)?;
    }
    let mut folded = Vec::new();
    let mut p = Parsed { tool: "rtla timerlat hist".into(), duration_ns: t.duration_ns, ..Parsed::default() };
    let mut overflows = 0;
    for c in &mut t.cols {
        if let Some(series) = column_series(c, t.unit_ns, t.last, width, &mut folded, &mut overflows)? {
            p.series.push(series);
        }
    }
    let (unit_ns, last) = (t.unit_ns, t.last);
    let unit = if unit_ns == 1 { "ns" } else { "µs" };
    if unit_ns == 1000 {
        p.fidelity.push(format!("µs resolution (rtla floors each latency to whole µs), {width} µs buckets; rtla prints min, avg and max as whole µs"));
    } else if width > 1 {
        p.fidelity.push(format!("{width} ns buckets (rtla -b)"));
    }
    if overflows > 0 {
        p.fidelity.push(match last {
            Some(l) => format!(
                "histogram truncated after {} {unit} (rtla -E x -b), {overflows} overflows (over: row): one bucket from there (or the min) up to the max",
                l.saturating_add(width)
            ),
            None => format!("no histogram row below rtla's -E x -b: all {overflows} samples are overflows (over: row), one bucket from the min to the max"),
        });
    }
    p.fidelity.extend(super::fold::distinct(folded));
    p.fidelity.push("no host, date or period in this format; no per-second series".into());
    Ok(p)
}

/// One column's series (None when it has no samples): its histogram, and
/// its `over:` count as one bucket past the last row printed.
fn column_series(
    c: &mut Column,
    unit_ns: u64,
    last: Option<u64>,
    width: u64,
    folded: &mut Vec<String>,
    overflows: &mut u64,
) -> Result<Option<Series>, ParseError> {
    let scale = |v: u64, what: &str| -> Result<u64, ParseError> {
        v.checked_mul(unit_ns).filter(|&x| x <= i64::MAX as u64).ok_or_else(|| ParseError::file(format!("{what}: {v} is too large")))
    };
    let name = format!("{}-{:03}", c.variant, c.cpu);
    let count =
        c.count.ok_or_else(|| ParseError::file("no \"count:\" row; expected the summary rows after the histogram (truncated file, or rtla --no-summary?)"))?;
    if count == 0 {
        return Ok(None);
    }
    let (min, max) = match (c.min, c.max) {
        (Some(a), Some(b)) if a <= b => (scale(a, &name)?, scale(b, &name)?),
        (Some(a), Some(b)) => return Err(ParseError::file(format!("{name}: min {a} is above max {b} with count {count}"))),
        _ => return Err(ParseError::file(format!("{name}: no \"min:\"/\"max:\" value; expected the summary rows (truncated file?)"))),
    };
    folded.extend(c.hist.note("histogram"));
    let mut buckets = std::mem::take(&mut c.hist).into_buckets();
    let over = c.over.unwrap_or(0);
    if over > 0 {
        // Past the last row printed (rtla's end, -E x -b, is not printed
        // and may be further), and at least the column's own min.
        let end = scale(last.map_or(0, |l| l.saturating_add(width)), &name)?;
        let lo = end.max(min);
        if max < lo {
            return Err(ParseError::file(format!("{name}: over: {over} but max is below the histogram's end")));
        }
        buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(max), count: over });
        *overflows += over;
    }
    Ok(Some(Series {
        probe: "timerlat".into(),
        variant: Some(c.variant.to_string()),
        thread: Some(c.cpu),
        cpu: Some(c.cpu),
        samples: count,
        min_ns: min,
        max_ns: max,
        mean_ns: c.avg.map(|a| a * unit_ns as f64),
        buckets,
        // rtla's histogram has no count of missed periods.
        overruns_unknown: true,
        ..Series::default()
    }))
}

/// The columns of the Index line `n` (IRQ-NNN, Thr-NNN, Usr-NNN).
fn header_columns<'a>(toks: impl Iterator<Item = &'a str>, n: usize) -> Result<Vec<Column>, ParseError> {
    let mut cols = Vec::new();
    for name in toks {
        let (kind, cpu) = name.split_once('-').ok_or_else(|| ParseError::at(n, format!("column {name:?}: expected IRQ-NNN, Thr-NNN or Usr-NNN")))?;
        let variant = match kind {
            "IRQ" => "irq",
            "Thr" => "thread",
            "Usr" => "user",
            _ => return Err(ParseError::at(n, format!("column {name:?}: expected IRQ-NNN, Thr-NNN or Usr-NNN"))),
        };
        let cpu = uint(cpu, n, "CPU number in column header")? as usize;
        Hist::check_series(cols.len() + 1, n, "columns")?;
        cols.push(Column { variant, cpu, hist: Hist::new(), over: None, count: None, min: None, avg: None, max: None });
    }
    Ok(cols)
}

/// A summary row (`over:`, `count:`, `min:`, `max:`, `avg:`) of line `n`
/// into the columns; true after `max:`, the table's last row.
fn summary_row(first: &str, vals: &[&str], n: usize, cols: &mut [Column]) -> Result<bool, ParseError> {
    match first {
        "over:" | "count:" => {
            for (c, v) in cols.iter_mut().zip(vals) {
                let x = uint(v, n, first)?;
                if first == "over:" {
                    c.over = Some(x);
                } else {
                    c.count = Some(x);
                }
            }
        }
        // A column without samples prints "-" (avg; newer rtla: min and
        // max too) or, for rtla 6.1's min, the untouched ~0 (2^64 - 1).
        "min:" | "max:" => {
            for (c, v) in cols.iter_mut().zip(vals) {
                let x = if *v == "-" { None } else { Some(uint(v, n, first)?) };
                if first == "min:" {
                    c.min = x;
                } else {
                    c.max = x;
                }
            }
        }
        "avg:" => {
            for (c, v) in cols.iter_mut().zip(vals) {
                c.avg = if *v == "-" { None } else { Some(float(v, n, "avg:")?) };
            }
        }
        _ => {}
    }
    Ok(first == "max:")
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
    fn a_column_without_samples_and_notes_after_the_table() {
        // rtla 6.1 prints a CPU's columns when either has samples: the empty
        // one has count 0, min ~0 (2^64 - 1), avg "-" and max 0. After the
        // table, a stop message (-i/-T) is not part of it.
        let text = "# RTLA timerlat histogram\n# Time unit is microseconds (us)\n# Duration:   0 00:00:01\n\
Index   IRQ-000   Thr-000\n5   2   0 \n6   1   0 \nover:   0   0 \ncount:   3   0 \n\
min:   5   18446744073709551615 \navg:   5         - \nmax:   6   0 \nrtla timerlat hit stop tracing\n";
        let p = parse(text).unwrap();
        assert_eq!(p.series.len(), 1);
        let irq = &p.series[0];
        assert_eq!((irq.samples, irq.min_ns, irq.max_ns, irq.mean_ns), (3, 5000, 6000, Some(5000.0)));
        let b: Vec<_> = irq.buckets.iter().map(|b| (b.lo_ns.0, b.hi_ns.0, b.count)).collect();
        assert_eq!(b, [(5000, 5999, 2), (6000, 6999, 1)]);
    }

    #[test]
    fn first_rows_far_apart_get_the_width_of_the_rows_after_them() {
        // rtla leaves out all-zero rows: 19, 22, 29 come before the first
        // adjacent pair (40, 41); every row is still one 1 µs bucket.
        let text = "# Time unit is microseconds (us)\nIndex IRQ-000\n19 1\n22 1\n29 1\n40 2\n41 1\n\
over: 0\ncount: 6\nmin: 19\navg: 32\nmax: 41\n";
        let p = parse(text).unwrap();
        let b: Vec<_> = p.series[0].buckets.iter().map(|b| (b.lo_ns.0, b.hi_ns.0)).collect();
        assert_eq!(b, [(19000, 19999), (22000, 22999), (29000, 29999), (40000, 40999), (41000, 41999)]);
    }

    #[test]
    fn every_sample_over_the_histogram_is_one_bucket_from_min_to_max() {
        // rtla -n with the default 256 entries of 1 ns: no row at all.
        let text = "# RTLA timerlat histogram\n# Time unit is nanoseconds (ns)\n# Duration:   0 00:00:05\n\
Index   IRQ-000   Thr-000\nover:      3974      3974 \ncount:     3974      3974 \n\
min:       2929     48393 \navg:     354534    430580 \nmax:   25028008  28337719 \n";
        let p = parse(text).unwrap();
        let b: Vec<_> = p.series.iter().map(|s| (s.buckets[0].lo_ns.0, s.buckets[0].hi_ns.0, s.buckets[0].count)).collect();
        assert_eq!(b, [(2929, 25028008, 3974), (48393, 28337719, 3974)]);
        assert!(p.fidelity.iter().any(|f| f.contains("all 7948 samples are overflows")), "{:?}", p.fidelity);
    }

    #[test]
    fn no_index_output_is_refused_with_the_reason() {
        let e = parse("# RTLA timerlat histogram\n   IRQ-000   Thr-000\n 1 0\n 0 1\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("--no-index"), "{e}");
    }

    #[test]
    fn a_row_with_the_wrong_number_of_values_names_its_line() {
        let e = parse("Index IRQ-000 Thr-000\n0 1 2\n1 3\n").unwrap_err();
        assert_eq!(e.line, 3);
    }
}
