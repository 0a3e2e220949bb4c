//! Parsers for the units on the command line: durations (`30s`, `5m`),
//! intervals (a bare number is µs, as in cyclictest) and CPU sets (`0,2-3`).
//! Each returns a message that says what is allowed, for clap to print.

/// A time value with an optional unit suffix, to nanoseconds.
/// `bare_unit_ns` is the unit of a bare number.
fn parse_time(s: &str, bare_unit_ns: f64, what: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult = match unit.trim() {
        "" => bare_unit_ns,
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        other => return Err(format!("unknown unit '{other}' in '{s}'; {what}")),
    };
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a number with a unit; {what}"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("'{s}' must be greater than zero; {what}"));
    }
    let ns = v * mult;
    if ns < 1.0 {
        return Err(format!("'{s}' is shorter than 1 ns; {what}"));
    }
    if ns > 365.0 * 86400e9 {
        return Err(format!("'{s}' is longer than a year; {what}"));
    }
    Ok(ns.round() as u64)
}

const DURATION_HELP: &str = "use a positive number with ms, s, m, h or d (e.g. 500ms, 30s, 5m, 2h, 1d); a bare number is seconds";
const INTERVAL_HELP: &str = "use a positive number of µs (e.g. 1000) or one with ns, us, ms or s (e.g. 250us, 1ms, 100000ns)";

/// `-D/--duration`: a bare number is seconds (as cyclictest's -D).
pub fn parse_duration(s: &str) -> Result<u64, String> {
    parse_time(s, 1e9, DURATION_HELP)
}

/// `-i/--interval`: a bare number is µs (as cyclictest's -i).
pub fn parse_interval(s: &str) -> Result<u64, String> {
    parse_time(s, 1e3, INTERVAL_HELP)
}

/// A parsed CPU set (sorted, deduplicated, non-empty). A newtype so clap
/// treats it as one value, not a list of values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(pub Vec<usize>);

/// A CPU set like `0,2-3`.
pub fn parse_cpuset(s: &str) -> Result<CpuSet, String> {
    let v = crate::sys::sched::parse_cpu_list(s.trim())
        .map_err(|e| format!("{e}; use CPU numbers and ranges such as 0,2-3"))?;
    if v.is_empty() {
        return Err("the CPU set is empty; use CPU numbers and ranges such as 0,2-3".into());
    }
    Ok(CpuSet(v))
}

/// Render nanoseconds for people: `1ms`, `250us`, `30s`.
pub fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 6] =
        [(86_400_000_000_000, "d"), (3_600_000_000_000, "h"), (60_000_000_000, "m"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (u, name) in UNITS {
        if ns >= u && ns % u == 0 {
            return format!("{}{name}", ns / u);
        }
    }
    if ns >= 1_000_000_000 {
        return format!("{:.3}s", ns as f64 / 1e9);
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("30s").unwrap(), 30_000_000_000);
        assert_eq!(parse_duration("5m").unwrap(), 300_000_000_000);
        assert_eq!(parse_duration("2h").unwrap(), 7_200_000_000_000);
        assert_eq!(parse_duration("1d").unwrap(), 86_400_000_000_000);
        assert_eq!(parse_duration("3").unwrap(), 3_000_000_000);
        for bad in ["0", "banana", "-5s", "5x", "", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1000").unwrap(), 1_000_000);
        assert_eq!(parse_interval("250us").unwrap(), 250_000);
        assert_eq!(parse_interval("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_interval("100000ns").unwrap(), 100_000);
        assert_eq!(parse_interval("1.5ms").unwrap(), 1_500_000);
        for bad in ["0", "-5", "abc", "0.0001ns"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(1_000_000), "1ms");
        assert_eq!(fmt_ns(250_000), "250us");
        assert_eq!(fmt_ns(30_000_000_000), "30s");
        assert_eq!(fmt_ns(1_500), "1500ns");
    }
}
