//! `rhealstone-csv` and `thread-metric-csv`: results published in the
//! shape of the classic RTOS suites, one column per system, so a result
//! measured on another RTOS (ThreadX, FreeRTOS, Zephyr's Thread-Metric
//! port, uC/OS-III) can be set beside rtscope's `rhealstone` and
//! `thread-metric` presets with `rtscope compare`.
//!
//! ```text
//! # Rhealstone: mean times; the header's first cell gives the unit
//! rhealstone_us,ThreadX 6 / Cortex-M4,uC/OS-III
//! task-switch,0.9,1.4
//! preemption,1.1,1.6
//! interrupt-latency,0.6,0.8
//! semaphore-shuffle,2.3,
//! deadlock-break,3.0,3.9
//! message-latency,1.7,2.2
//! ```
//! `rhealstone_ns` takes ns. Rows are the six components
//! (`model::suites::RHEALSTONE`), each at most once; an empty cell is a
//! component the system did not publish. Each becomes a summary-only entry
//! of the probe and variant that measures it in the `rhealstone` preset, with
//! the published mean as min, mean and max, and one sample (the source has
//! no sample count); a fidelity note says so.
//!
//! ```text
//! thread_metric,ThreadX / STM32F4,FreeRTOS / STM32F4
//! interval_s,30,30
//! basic-processing,25345678,25298731
//! cooperative-scheduling,37034910,12102399
//! ```
//! Rows are the eight tests by Thread-Metric's name (`basic-processing`) or
//! rtscope's variant (`basic`); values are ops per interval; `interval_s`
//! (optional, 30 by default, Thread-Metric's) is the interval per system.
//! Each becomes a `throughput` entry of one interval: `throughput.ops` the
//! published count, the sample the mean time per op.

use super::format::{Format, Spec};
use super::{ParseError, Parsed, Series};
use crate::model::suites::{RHEALSTONE, THREAD_METRIC};
use crate::model::{Nanos, Throughput};

/// CSV: rhealstone_us (or _ns), then one column per system.
pub(crate) const RHEALSTONE_FORMAT: Format = Format(&Spec {
    per_column: true,
    probe_per_row: true,
    ..Spec::text(
        "rhealstone-csv",
        "CSV: rhealstone_us (or _ns), then one column per system; a row per component",
        |s| matches!(s.first_cell().as_str(), RHEALSTONE_US | RHEALSTONE_NS),
        |input, _| parse_rhealstone(input.reader()),
    )
});

/// CSV: thread_metric, then one column per system.
pub(crate) const THREAD_METRIC_FORMAT: Format = Format(&Spec {
    per_column: true,
    probe_per_row: true,
    ..Spec::text(
        "thread-metric-csv",
        "CSV: thread_metric, then one column per system; a row per test (ops per interval)",
        |s| s.first_cell() == THREAD_METRIC_HEAD,
        |input, _| parse_thread_metric(input.reader()),
    )
});

/// The header word that names each format.
pub(crate) const RHEALSTONE_US: &str = "rhealstone_us";
pub(crate) const RHEALSTONE_NS: &str = "rhealstone_ns";
pub(crate) const THREAD_METRIC_HEAD: &str = "thread_metric";

/// Rows of a one-column-per-system CSV: the header's cells, then
/// (line, label, cells) per data row.
type Grid = (Vec<String>, Vec<(usize, String, Vec<String>)>);

fn grid(r: impl std::io::Read, first: &[&str]) -> Result<Grid, ParseError> {
    let mut rdr = csv::ReaderBuilder::new().has_headers(false).comment(Some(b'#')).flexible(true).trim(csv::Trim::All).from_reader(r);
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| ParseError::at(e.position().map(|p| p.line() as usize).unwrap_or(0), format!("not valid CSV: {e}")))?;
        let n = rec.position().map(|p| p.line() as usize).unwrap_or(0);
        if rec.iter().all(|c| c.is_empty()) {
            continue;
        }
        match &header {
            None => {
                if !rec.get(0).is_some_and(|h| first.contains(&h)) || rec.len() < 2 {
                    return Err(ParseError::at(n, format!("expected the header {},SYSTEM[,SYSTEM...]", first.join(" or "))));
                }
                let names: Vec<String> = rec.iter().map(String::from).collect();
                super::read::check_system_names(names.iter().enumerate().skip(1).map(|(k, s)| (k + 1, s.as_str())), n)?;
                header = Some(names);
            }
            Some(h) => {
                if rec.len() > h.len() {
                    return Err(ParseError::at(n, format!("{} cells, but the header names {} systems", rec.len() - 1, h.len() - 1)));
                }
                let label = rec.get(0).unwrap_or("").to_string();
                if rows.iter().any(|(_, l, _): &(usize, String, Vec<String>)| *l == label) {
                    return Err(ParseError::at(n, format!("row {label:?} appears twice")));
                }
                rows.push((n, label, rec.iter().skip(1).map(String::from).collect()));
            }
        }
    }
    let header = header.ok_or_else(|| ParseError::file(format!("empty file: expected the header {},SYSTEM[,SYSTEM...]", first.join(" or "))))?;
    Ok((header, rows))
}

fn number(line: usize, cell: &str, what: &str) -> Result<Option<f64>, ParseError> {
    if cell.is_empty() {
        return Ok(None);
    }
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
        _ => Err(ParseError::at(line, format!("{what}: {cell:?} is not a positive number"))),
    }
}

/// The largest value the history keeps (a signed 64-bit column).
const CAP: f64 = i64::MAX as f64;

fn too_large(line: usize, what: &str, cell: &str, unit: &str) -> ParseError {
    ParseError::at(
        line,
        format!("{what}: {cell} {unit} is past the largest value the history keeps ({} ns, 292 years); check the value in the file", i64::MAX),
    )
}

fn parsed(tool: &str, system: &str, mut series: Vec<Series>, fidelity: Vec<String>) -> Parsed {
    // A file holds a Parsed per column (100 000 columns are 100 000): a
    // Vec grown by push keeps room for four series, ~1 KB per column.
    series.shrink_to_fit();
    Parsed { tool: tool.into(), system: Some(system.to_string()), series, fidelity, ..Parsed::default() }
}

/// A series of one published value (summary only: min = mean = max).
fn one_value(probe: &str, variant: Option<&str>, ns: u64, interval_ns: u64) -> Series {
    Series {
        probe: probe.into(),
        variant: variant.map(String::from),
        interval_ns,
        samples: 1,
        min_ns: ns,
        max_ns: ns,
        mean_ns: Some(ns as f64),
        stddev_ns: Some(0.0),
        ..Series::default()
    }
}

pub(crate) fn parse_rhealstone(r: impl std::io::Read) -> Result<Vec<Parsed>, ParseError> {
    let (header, rows) = grid(r, &[RHEALSTONE_US, RHEALSTONE_NS])?;
    let scale = if header[0] == RHEALSTONE_US { 1000.0 } else { 1.0 };
    let mut out = Vec::new();
    for (k, system) in header.iter().enumerate().skip(1) {
        let mut series = Vec::new();
        for (line, label, cells) in &rows {
            let Some(c) = RHEALSTONE.iter().find(|c| c.metric == label.as_str()) else {
                let names: Vec<&str> = RHEALSTONE.iter().map(|c| c.metric).collect();
                return Err(ParseError::at(*line, format!("unknown Rhealstone component {label:?}; expected one of {}", names.join(", "))));
            };
            let what = format!("{label} of {system} (column {})", k + 1);
            let cell = cells.get(k - 1).map(String::as_str).unwrap_or("");
            let Some(v) = number(*line, cell, &what)? else { continue };
            if (v * scale).round() > CAP {
                return Err(too_large(*line, &what, cell, if scale > 1.0 { "µs" } else { "ns" }));
            }
            let ns = (v * scale).round().max(1.0) as u64;
            series.push(one_value(c.probe, c.variants.first().copied(), ns, 0));
        }
        if series.is_empty() {
            return Err(ParseError::file(format!("system {system:?} has no value in any row")));
        }
        let fidelity = vec![format!(
            "mean only: each component is the published average time{}; the sample count is unknown and counted as 1, so percentiles are unknown",
            if scale > 1.0 { " in µs (exact to the digits given)" } else { "" }
        )];
        out.push(parsed("rhealstone", system, series, fidelity));
    }
    Ok(out)
}

pub(crate) fn parse_thread_metric(r: impl std::io::Read) -> Result<Vec<Parsed>, ParseError> {
    let (header, rows) = grid(r, &[THREAD_METRIC_HEAD])?;
    let mut out = Vec::with_capacity(header.len() - 1);
    for (k, system) in header.iter().enumerate().skip(1) {
        let cell = |cells: &Vec<String>| cells.get(k - 1).cloned().unwrap_or_default();
        let interval_s = match rows.iter().find(|(_, l, _)| l == "interval_s") {
            Some((line, _, cells)) => {
                let what = format!("interval_s of {system} (column {})", k + 1);
                let v = number(*line, &cell(cells), &what)?.unwrap_or(30.0);
                if (v * 1e9).round() > CAP {
                    return Err(too_large(*line, &what, &cell(cells), "s"));
                }
                v
            }
            None => 30.0,
        };
        let interval_ns = (interval_s * 1e9).round() as u64;
        let mut series = Vec::new();
        for (line, label, cells) in rows.iter().filter(|(_, l, _)| l != "interval_s") {
            let Some((_, variant)) = THREAD_METRIC.iter().find(|(name, v)| name == label || v == label) else {
                let names: Vec<&str> = THREAD_METRIC.iter().map(|(n, _)| *n).collect();
                return Err(ParseError::at(*line, format!("unknown Thread-Metric test {label:?}; expected interval_s or one of {}", names.join(", "))));
            };
            let text = cell(cells);
            let what = format!("{label} of {system} (column {})", k + 1);
            let Some(ops_f) = number(*line, &text, &what)? else { continue };
            if ops_f.fract() != 0.0 {
                return Err(ParseError::at(*line, format!("{what}: {ops_f} is not a whole number of operations")));
            }
            if text.trim().parse::<u64>().map_or(ops_f >= CAP, |ops| ops > i64::MAX as u64) {
                return Err(ParseError::at(
                    *line,
                    format!("{what}: {text} operations is past the largest count the history keeps ({}); check the value in the file", i64::MAX),
                ));
            }
            // An integer cell is read exactly (through f64 counts past 2^53
            // were rounded: 2^63 − 1 became 2^63, past the schema's cap).
            let ops = text.trim().parse::<u64>().unwrap_or(ops_f as u64);
            let ns_per_op = ((interval_ns as f64 / ops as f64).round() as u64).max(1);
            let mut s = one_value("throughput", Some(variant), ns_per_op, interval_ns);
            s.throughput = Some(Throughput { ops, interval_ns: Nanos(interval_ns), per_interval: vec![ops] });
            series.push(s);
        }
        if series.is_empty() {
            return Err(ParseError::file(format!("system {system:?} has no count in any row")));
        }
        let fidelity = vec![format!(
            "published counts: one interval of {interval_s} s per test; the sample is the mean time per operation (interval / ops), not a measured distribution"
        )];
        out.push(parsed("thread-metric", system, series, fidelity));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rhealstone_columns_become_systems() {
        let t = "# c\nrhealstone_us,A,B\ntask-switch,1.5,2\ndeadlock-break,3,\n";
        let p = parse_rhealstone(t.as_bytes()).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].series.len(), 2);
        assert_eq!((p[0].series[0].probe.as_str(), p[0].series[0].variant.as_deref(), p[0].series[0].max_ns), ("switch", Some("yield"), 1500));
        assert_eq!(p[1].series.len(), 1, "an empty cell is no value");
        assert!(parse_rhealstone("rhealstone_us,A\nbogus,1\n".as_bytes()).unwrap_err().msg.contains("unknown Rhealstone component"));
        assert!(parse_rhealstone("rhealstone_us,A\ntask-switch,-1\n".as_bytes()).is_err());
    }

    #[test]
    fn thread_metric_counts_and_interval() {
        let t = "thread_metric,X\ninterval_s,10\nbasic,1000\nmemory-allocation,5000\n";
        let p = parse_thread_metric(t.as_bytes()).unwrap();
        let s = &p[0].series;
        assert_eq!(s[0].throughput.as_ref().unwrap().ops, 1000);
        assert_eq!(s[0].throughput.as_ref().unwrap().interval_ns, Nanos(10_000_000_000));
        assert_eq!(s[0].max_ns, 10_000_000);
        assert_eq!(s[1].variant.as_deref(), Some("memory"));
        assert!(parse_thread_metric("thread_metric,X\nbasic,1.5\n".as_bytes()).is_err());
    }
}
