//! `bins-csv`: binned latency counts, one column per system — how published
//! tables (e.g. seed 001's interrupt-latency tables: Linux 3.10 vs CGEL vs
//! VxWorks 6.8 in 5 µs bins) enter rtscope.
//!
//! ```text
//! # comment lines start with '#'
//! bin_lo_ns,bin_hi_ns,Linux 3.10,CGEL 5.x,VxWorks 6.8
//! 0,5000,1,13,1367823
//! 5000,10000,676112,617072,3545
//! 55000,100000,,,940          <- empty cell = 0
//! ```
//! Bins are half-open `[bin_lo_ns, bin_hi_ns)` and become buckets
//! `[lo, hi − 1]`; they must not overlap (gaps are fine). Each count column
//! becomes one system (one run); its header is the system name. Min and max
//! are known only to the bin: min is the lower edge of the lowest non-empty
//! bin, max the upper edge (hi − 1) of the highest; the mean is estimated
//! from bin midpoints.

use super::format::{Format, Spec, Systems};
use super::read::CsvCells;
use super::{uint, Hist, ParseError, Parsed, Series};

/// CSV: bin_lo_ns,bin_hi_ns, then one count column per system.
pub(crate) const FORMAT: Format = Format(&Spec {
    per_column: true,
    ..Spec::text(
        "bins-csv",
        "CSV: bin_lo_ns,bin_hi_ns, then one count column per system",
        |s| s.first_cell() == "bin_lo_ns",
        |input, _| parse_reader(input.reader()).map(Systems::from),
    )
});

/// One column while the file is read: its histogram, the lowest
/// non-empty bin's lo, the highest's hi − 1.
type Column = (Hist, Option<u64>, u64);

const HEADER: &str = "expected the header bin_lo_ns,bin_hi_ns,SYSTEM[,SYSTEM...]";

/// Read cell by cell into one [`Hist`] per column (bounded memory
/// whatever the number of bins; a header of more than [`Hist::MAX_SERIES`]
/// columns is refused as it is read); each column's min and max edges are
/// tracked as the bins go by.
pub(crate) fn parse_reader(r: impl std::io::BufRead) -> Result<Vec<Parsed>, ParseError> {
    let mut cells = CsvCells::new(r);
    let mut header: Option<Vec<String>> = None;
    let mut cols: Vec<Column> = Vec::new();
    let mut prev_hi: Option<(u64, usize)> = None;
    while let Some((text, end, n)) = cells.next_cell()? {
        let first = text.to_string();
        match &header {
            None => {
                let Some(names) = header_names(&first, end, &mut cells, n)? else { continue };
                cols = names.iter().map(|_| (Hist::sharing(names.len()), None, 0)).collect();
                header = Some(names);
            }
            Some(names) => add_bin(&first, end, &mut cells, n, names, &mut cols, &mut prev_hi)?,
        }
    }
    let names = header.ok_or_else(|| ParseError::file("no header line; expected bin_lo_ns,bin_hi_ns,SYSTEM[,SYSTEM...]"))?;
    names.into_iter().zip(cols).map(|(name, col)| column_system(name, col)).collect()
}

/// The system names of the header line `n` (its first cell `first`);
/// `None` for a record of empty cells.
fn header_names<R: std::io::BufRead>(first: &str, end: bool, cells: &mut CsvCells<R>, n: usize) -> Result<Option<Vec<String>>, ParseError> {
    if first.is_empty() {
        return match cells.rest_of_record(end)? {
            (_, true) => Ok(None),
            _ => Err(ParseError::at(n, HEADER)),
        };
    }
    let second = if end { None } else { cells.next_cell()? };
    if first != "bin_lo_ns" || !matches!(second, Some(("bin_hi_ns", false, _))) {
        return Err(ParseError::at(n, HEADER));
    }
    cells.names(n, 3, |k| Hist::check_series(k, n, "systems")).map(Some)
}

/// Bin line `n` (its first cell `first`) into every column; bins must
/// ascend without overlapping (`prev_hi`: the previous bin's hi and line).
fn add_bin<R: std::io::BufRead>(
    first: &str,
    end: bool,
    cells: &mut CsvCells<R>,
    n: usize,
    names: &[String],
    cols: &mut [Column],
    prev_hi: &mut Option<(u64, usize)>,
) -> Result<(), ParseError> {
    let too_many = |count: usize| ParseError::at(n, format!("{count} fields; the header has {}", names.len() + 2));
    if first.is_empty() {
        match cells.rest_of_record(end)? {
            (_, true) => return Ok(()),
            (more, _) if 1 + more > names.len() + 2 => return Err(too_many(1 + more)),
            _ => {}
        }
    }
    let lo = uint(first, n, "bin_lo_ns")?;
    let (hi, mut end) = match if end { None } else { cells.next_cell()? } {
        Some((t, e, _)) => (uint(t, n, "bin_hi_ns")?, e),
        None => (uint("", n, "bin_hi_ns")?, true),
    };
    if hi <= lo {
        return Err(ParseError::at(n, format!("bin {lo}..{hi}: expected bin_lo_ns < bin_hi_ns")));
    }
    if hi > i64::MAX as u64 {
        return Err(ParseError::at(n, format!("bin_hi_ns {hi} is too large")));
    }
    if let Some((ph, pl)) = *prev_hi {
        if lo < ph {
            return Err(ParseError::at(
                n,
                format!("bin [{lo}, {hi}) overlaps or precedes the bin ending at {ph} on line {pl}; expected bins in increasing, non-overlapping order"),
            ));
        }
    }
    *prev_hi = Some((hi, n));
    let mut k = 0;
    while !end {
        let (cell, e, _) = cells.next_cell()?.unwrap_or(("", true, n));
        end = e;
        let Some(col) = cols.get_mut(k) else {
            return Err(too_many(k + 3 + cells.rest_of_record(end)?.0));
        };
        // The cell's name is made only for an error message.
        let count = match cell.parse::<u64>() {
            Ok(c) => c,
            Err(_) if cell.is_empty() => 0,
            Err(_) => uint(cell, n, &format!("count for {} (column {})", names[k], k + 3))?,
        };
        if count > 0 {
            col.0.add(lo, hi - 1, count);
            col.1.get_or_insert(lo);
            col.2 = hi - 1;
        }
        k += 1;
    }
    Ok(())
}

/// The system of one column.
fn column_system(name: String, (hist, lo, hi): Column) -> Result<Parsed, ParseError> {
    let samples = hist.total().ok_or_else(|| ParseError::file(format!("{name}: counts overflow a 64-bit sum")))?;
    let Some(min_ns) = lo.filter(|_| samples > 0) else {
        return Err(ParseError::file(format!("column {name:?} has no counts; every system needs at least one")));
    };
    let max_ns = hi;
    let folded = hist.note("bins");
    let buckets = hist.into_buckets();
    Ok(Parsed {
        tool: "bins-csv".into(),
        system: Some(name),
        series: vec![Series { probe: "latency".into(), samples, min_ns, max_ns, buckets, overruns_unknown: true, ..Series::default() }],
        fidelity: [
            "binned source: min/max known only to their bin (lower edge of the lowest, upper edge of the highest non-empty bin); mean and stddev estimated from bin midpoints".to_string(),
            "no host, date, period or per-second series in this format".to_string(),
        ]
        .into_iter()
        .chain(folded)
        .collect(),
        ..Parsed::default()
    })
}
