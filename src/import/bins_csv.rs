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

/// Read record by record into one [`Hist`] per column (bounded memory
/// whatever the number of bins); each column's min and max edges are
/// tracked as the bins go by.
pub(crate) fn parse_reader(r: impl std::io::Read) -> Result<Vec<Parsed>, ParseError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .comment(Some(b'#'))
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(r);
    let mut header: Option<Vec<String>> = None;
    let mut cols: Vec<Column> = Vec::new();
    let mut prev_hi: Option<(u64, usize)> = None;
    for rec in rdr.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
            ParseError::at(line, format!("not valid CSV: {e}"))
        })?;
        let n = rec.position().map(|p| p.line() as usize).unwrap_or(0);
        if rec.iter().all(|c| c.is_empty()) {
            continue;
        }
        match &header {
            None => {
                let names = header_names(&rec, n)?;
                cols = names.iter().map(|_| (Hist::sharing(names.len()), None, 0)).collect();
                header = Some(names);
            }
            Some(names) => add_bin(&rec, n, names, &mut cols, &mut prev_hi)?,
        }
    }
    let names = header.ok_or_else(|| ParseError::file("no header line; expected bin_lo_ns,bin_hi_ns,SYSTEM[,SYSTEM...]"))?;
    names.into_iter().zip(cols).map(|(name, col)| column_system(name, col)).collect()
}

/// The system names of the header line `n`.
fn header_names(rec: &csv::StringRecord, n: usize) -> Result<Vec<String>, ParseError> {
    if rec.get(0) != Some("bin_lo_ns") || rec.get(1) != Some("bin_hi_ns") || rec.len() < 3 {
        return Err(ParseError::at(n, "expected the header bin_lo_ns,bin_hi_ns,SYSTEM[,SYSTEM...]"));
    }
    let names: Vec<String> = rec.iter().skip(2).map(String::from).collect();
    super::read::check_system_names(names.iter().enumerate().map(|(k, s)| (k + 3, s.as_str())), n)?;
    Ok(names)
}

/// Bin line `n` into every column; bins must ascend without overlapping
/// (`prev_hi`: the previous bin's hi and line).
fn add_bin(rec: &csv::StringRecord, n: usize, names: &[String], cols: &mut [Column], prev_hi: &mut Option<(u64, usize)>) -> Result<(), ParseError> {
    if rec.len() > names.len() + 2 {
        return Err(ParseError::at(n, format!("{} fields; the header has {}", rec.len(), names.len() + 2)));
    }
    let lo = uint(rec.get(0).unwrap_or(""), n, "bin_lo_ns")?;
    let hi = uint(rec.get(1).unwrap_or(""), n, "bin_hi_ns")?;
    if hi <= lo {
        return Err(ParseError::at(n, format!("bin {lo}..{hi}: expected bin_lo_ns < bin_hi_ns")));
    }
    if hi > i64::MAX as u64 {
        return Err(ParseError::at(n, format!("bin_hi_ns {hi} is too large")));
    }
    if let Some((ph, pl)) = *prev_hi {
        if lo < ph {
            return Err(ParseError::at(n, format!("bin [{lo}, {hi}) overlaps or precedes the bin ending at {ph} on line {pl}; expected bins in increasing, non-overlapping order")));
        }
    }
    *prev_hi = Some((hi, n));
    for (k, col) in cols.iter_mut().enumerate() {
        let cell = rec.get(k + 2).unwrap_or("");
        let count = if cell.is_empty() { 0 } else { uint(cell, n, &format!("count for {} (column {})", names[k], k + 3))? };
        if count > 0 {
            col.0.add(lo, hi - 1, count);
            col.1.get_or_insert(lo);
            col.2 = hi - 1;
        }
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
