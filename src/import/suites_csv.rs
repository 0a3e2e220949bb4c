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

use super::format::{Columns, Format, Spec, Systems};
use super::read::CsvCells;
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

/// The most systems one file may name. Each becomes a run of its own,
/// checked, stored and listed one by one (~60 µs each stored): 100 000 take
/// seconds; the ~10 M columns a 200 MB file can hold would take minutes and
/// a history of gigabytes, so such a file is refused before it is read on.
pub(crate) const MAX_SYSTEMS: usize = 100_000;

/// A one-column-per-system CSV read row by row, each cell converted as its
/// row is read: per system a few numbers are kept, never the cells' text
/// (a file of 100 000 columns would hold 100 000 strings per row).
struct Grid {
    /// The header's first cell (which says the unit) and the systems.
    head: String,
    systems: Vec<String>,
    rows: Vec<Row>,
}

/// One data row: its label and a value per system, 0 for an empty cell
/// (a value is positive; the parser says what it encodes).
struct Row {
    label: String,
    values: Vec<u64>,
}

/// What a row's cell is read as: `(head, line, label, what, text)` into its
/// value, where `what` names the cell ("task-switch of X (column 3)").
type Cell<'a> = &'a dyn Fn(&str, usize, &str, &What<'_>, &str) -> Result<u64, ParseError>;

/// A cell's name in a message ("task-switch of X (column 3)"), written
/// only when a message is (not for each of a file's 900 000 cells).
struct What<'a> {
    label: &'a str,
    system: &'a str,
    column: usize,
}

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {} (column {})", self.label, self.system, self.column)
    }
}

fn grid(r: impl std::io::BufRead, first: &[&str], label: &dyn Fn(usize, &str) -> Result<(), ParseError>, cell: Cell<'_>) -> Result<Grid, ParseError> {
    let expected = || format!("expected the header {},SYSTEM[,SYSTEM...]", first.join(" or "));
    let mut cells = CsvCells::new(r);
    let mut g: Option<Grid> = None;
    while let Some((text, end, n)) = cells.next_cell()? {
        if text.is_empty() {
            // A record of empty cells is skipped; an empty first cell of
            // any other is a header or a row label that cannot be.
            let (more, empty) = cells.rest_of_record(end)?;
            match &g {
                _ if empty => continue,
                None => return Err(ParseError::at(n, expected())),
                Some(g) if 1 + more > g.systems.len() + 1 => return Err(too_many_cells(n, 1 + more, g)),
                Some(_) => label(n, "")?,
            }
            continue;
        }
        let Some(g) = &mut g else {
            if !first.contains(&text) || end {
                return Err(ParseError::at(n, expected()));
            }
            let head = text.to_string();
            let room = |k: usize| {
                if k <= MAX_SYSTEMS {
                    return Ok(());
                }
                Err(ParseError::at(
                    n,
                    format!(
                        "the header names more than {MAX_SYSTEMS} systems; rtscope imports at most {MAX_SYSTEMS} from one file (each becomes a run of its own): split the file by columns (with no comma inside a name: cut -d, -f1-{})",
                        MAX_SYSTEMS + 1
                    ),
                ))
            };
            let systems = cells.names(n, 2, room)?;
            g = Some(Grid { head, systems, rows: Vec::new() });
            continue;
        };
        let name = text.to_string();
        if g.rows.iter().any(|r| r.label == name) {
            return Err(ParseError::at(n, format!("row {name:?} appears twice")));
        }
        label(n, &name)?;
        let mut values = vec![0; g.systems.len()];
        let (mut k, mut end) = (0, end);
        while !end {
            let (t, e, _) = cells.next_cell()?.unwrap_or(("", true, n));
            end = e;
            if k == values.len() {
                // Counted to the record's end for the message.
                return Err(too_many_cells(n, k + 2 + cells.rest_of_record(end)?.0, g));
            }
            if !t.is_empty() {
                values[k] = cell(&g.head, n, &name, &What { label: &name, system: &g.systems[k], column: k + 2 }, t)?;
            }
            k += 1;
        }
        g.rows.push(Row { label: name, values });
    }
    g.ok_or_else(|| ParseError::file(format!("empty file: {}", expected())))
}

fn too_many_cells(line: usize, count: usize, g: &Grid) -> ParseError {
    ParseError::at(line, format!("{} cells, but the header names {} systems", count - 1, g.systems.len()))
}

impl Grid {
    /// The first system with no value in the rows `counted`, as an error.
    fn every_system_has_a_value(&self, counted: impl Fn(&Row) -> bool, what: &str) -> Result<(), ParseError> {
        let rows: Vec<&Row> = self.rows.iter().filter(|r| counted(r)).collect();
        match (0..self.systems.len()).find(|&k| rows.iter().all(|r| r.values[k] == 0)) {
            Some(k) => Err(ParseError::file(format!("system {:?} has no {what} in any row", self.systems[k]))),
            None => Ok(()),
        }
    }
}

/// A grid's systems, each built when asked for by `build`.
struct Suite {
    grid: Grid,
    build: fn(&Grid, usize) -> Parsed,
}

impl Columns for Suite {
    fn len(&self) -> usize {
        self.grid.systems.len()
    }
    fn system(&self, i: usize) -> &str {
        &self.grid.systems[i]
    }
    fn parsed(&self, i: usize) -> Parsed {
        (self.build)(&self.grid, i)
    }
}

fn number(line: usize, cell: &str, what: &What<'_>) -> Result<Option<f64>, ParseError> {
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

fn too_large(line: usize, what: &What<'_>, cell: &str, unit: &str) -> ParseError {
    ParseError::at(line, format!("{what}: {cell} {unit} is past the largest value the history keeps ({} ns, 292 years); check the value in the file", i64::MAX))
}

fn parsed(tool: &str, system: &str, series: Vec<Series>, fidelity: Vec<String>) -> Parsed {
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

fn rhealstone_component(label: &str) -> Option<&'static crate::model::suites::Component> {
    RHEALSTONE.iter().find(|c| c.metric == label)
}

pub(crate) fn parse_rhealstone(r: impl std::io::BufRead) -> Result<Systems, ParseError> {
    let label = |line: usize, label: &str| match rhealstone_component(label) {
        Some(_) => Ok(()),
        None => {
            let names: Vec<&str> = RHEALSTONE.iter().map(|c| c.metric).collect();
            Err(ParseError::at(line, format!("unknown Rhealstone component {label:?}; expected one of {}", names.join(", "))))
        }
    };
    // A value is its time in ns (≥ 1).
    let cell = |head: &str, line: usize, _: &str, what: &What<'_>, text: &str| {
        let scale = if head == RHEALSTONE_US { 1000.0 } else { 1.0 };
        let v = number(line, text, what)?.unwrap_or(0.0);
        if (v * scale).round() > CAP {
            return Err(too_large(line, what, text, if scale > 1.0 { "µs" } else { "ns" }));
        }
        Ok((v * scale).round().max(1.0) as u64)
    };
    let grid = grid(r, &[RHEALSTONE_US, RHEALSTONE_NS], &label, &cell)?;
    grid.every_system_has_a_value(|_| true, "value")?;
    Ok(Systems::Columns(Box::new(Suite { grid, build: rhealstone_system })))
}

fn rhealstone_system(g: &Grid, k: usize) -> Parsed {
    let series = g
        .rows
        .iter()
        .filter(|r| r.values[k] != 0)
        .filter_map(|r| rhealstone_component(&r.label).map(|c| one_value(c.probe, c.variants.first().copied(), r.values[k], 0)))
        .collect();
    let fidelity = vec![format!(
        "mean only: each component is the published average time{}; the sample count is unknown and counted as 1, so percentiles are unknown",
        if g.head == RHEALSTONE_US { " in µs (exact to the digits given)" } else { "" }
    )];
    parsed("rhealstone", &g.systems[k], series, fidelity)
}

const INTERVAL: &str = "interval_s";

fn thread_metric_variant(label: &str) -> Option<&'static str> {
    THREAD_METRIC.iter().find(|(name, v)| *name == label || *v == label).map(|(_, v)| *v)
}

pub(crate) fn parse_thread_metric(r: impl std::io::BufRead) -> Result<Systems, ParseError> {
    let label = |line: usize, label: &str| {
        if label == INTERVAL || thread_metric_variant(label).is_some() {
            return Ok(());
        }
        let names: Vec<&str> = THREAD_METRIC.iter().map(|(n, _)| *n).collect();
        Err(ParseError::at(line, format!("unknown Thread-Metric test {label:?}; expected interval_s or one of {}", names.join(", "))))
    };
    // interval_s: the interval in s as f64 bits; a test: its count (≥ 1).
    let cell = |_: &str, line: usize, label: &str, what: &What<'_>, text: &str| {
        let v = number(line, text, what)?.unwrap_or(0.0);
        if label == INTERVAL {
            if (v * 1e9).round() > CAP {
                return Err(too_large(line, what, text, "s"));
            }
            return Ok(v.to_bits());
        }
        if v.fract() != 0.0 {
            return Err(ParseError::at(line, format!("{what}: {v} is not a whole number of operations")));
        }
        if text.trim().parse::<u64>().map_or(v >= CAP, |ops| ops > i64::MAX as u64) {
            return Err(ParseError::at(
                line,
                format!("{what}: {text} operations is past the largest count the history keeps ({}); check the value in the file", i64::MAX),
            ));
        }
        // An integer cell is read exactly (through f64 counts past 2^53
        // were rounded: 2^63 − 1 became 2^63, past the schema's cap).
        Ok(text.trim().parse::<u64>().unwrap_or(v as u64))
    };
    let grid = grid(r, &[THREAD_METRIC_HEAD], &label, &cell)?;
    grid.every_system_has_a_value(|r| r.label != INTERVAL, "count")?;
    Ok(Systems::Columns(Box::new(Suite { grid, build: thread_metric_system })))
}

fn thread_metric_system(g: &Grid, k: usize) -> Parsed {
    let interval_s = g.rows.iter().find(|r| r.label == INTERVAL).map(|r| r.values[k]).filter(|&b| b != 0).map_or(30.0, f64::from_bits);
    let interval_ns = (interval_s * 1e9).round() as u64;
    let mut series = Vec::new();
    for r in g.rows.iter().filter(|r| r.label != INTERVAL && r.values[k] != 0) {
        let Some(variant) = thread_metric_variant(&r.label) else { continue };
        let ops = r.values[k];
        let ns_per_op = ((interval_ns as f64 / ops as f64).round() as u64).max(1);
        let mut s = one_value("throughput", Some(variant), ns_per_op, interval_ns);
        s.throughput = Some(Throughput { ops, interval_ns: Nanos(interval_ns), per_interval: vec![ops] });
        series.push(s);
    }
    let fidelity = vec![format!(
        "published counts: one interval of {interval_s} s per test; the sample is the mean time per operation (interval / ops), not a measured distribution"
    )];
    parsed("thread-metric", &g.systems[k], series, fidelity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rhealstone_columns_become_systems() {
        let t = "# c\nrhealstone_us,A,B\ntask-switch,1.5,2\ndeadlock-break,3,\n";
        let p = parse_rhealstone(t.as_bytes()).unwrap().into_vec();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].series.len(), 2);
        assert_eq!((p[0].series[0].probe.as_str(), p[0].series[0].variant.as_deref(), p[0].series[0].max_ns), ("switch", Some("yield"), 1500));
        assert_eq!(p[1].series.len(), 1, "an empty cell is no value");
        assert!(parse_rhealstone("rhealstone_us,A\nbogus,1\n".as_bytes()).err().unwrap().msg.contains("unknown Rhealstone component"));
        assert!(parse_rhealstone("rhealstone_us,A\ntask-switch,-1\n".as_bytes()).is_err());
    }

    #[test]
    fn thread_metric_counts_and_interval() {
        let t = "thread_metric,X\ninterval_s,10\nbasic,1000\nmemory-allocation,5000\n";
        let p = parse_thread_metric(t.as_bytes()).unwrap().into_vec();
        let s = &p[0].series;
        assert_eq!(s[0].throughput.as_ref().unwrap().ops, 1000);
        assert_eq!(s[0].throughput.as_ref().unwrap().interval_ns, Nanos(10_000_000_000));
        assert_eq!(s[0].max_ns, 10_000_000);
        assert_eq!(s[1].variant.as_deref(), Some("memory"));
        assert!(parse_thread_metric("thread_metric,X\nbasic,1.5\n".as_bytes()).is_err());
    }
}
