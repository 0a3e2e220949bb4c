//! Units, the leaf of rtscope's layers: [`Nanos`] (every latency and
//! duration), [`Unit`] (µs or ns: the unit latencies are shown in), the
//! parsers and formatters of durations (`30s`, `5m`) and intervals (a bare
//! number is µs, as in cyclictest), [`CpuSet`] with its one parser
//! ([`parse_cpu_list`]) and one formatter ([`cpu_list_str`]), and RFC 3339
//! timestamps. It imports nothing from the crate.
//!
//! The parsers return a message that says what is allowed, for clap to print.

use serde::{Deserialize, Serialize};

/// A duration or latency in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    pub(crate) fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub(crate) fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
}

/// The unit latencies are shown in: µs with one decimal, or whole ns
/// (`--ns`). Decided once at the face (cli, commands) from the flag; the
/// report and everything below take a `Unit`, never the flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Us,
    Ns,
}

impl Unit {
    /// The unit `--ns` asks for: ns when given, else µs.
    pub(crate) fn of_ns_flag(ns: bool) -> Unit {
        if ns {
            Unit::Ns
        } else {
            Unit::Us
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::Us => "us",
            Unit::Ns => "ns",
        }
    }
    pub(crate) fn fmt(self, ns: f64) -> String {
        match self {
            Unit::Us => format!("{:.1}", ns / 1000.0),
            Unit::Ns => format!("{:.0}", ns),
        }
    }
    pub(crate) fn fmt_n(self, ns: Nanos) -> String {
        self.fmt(ns.0 as f64)
    }
}

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
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    parse_time(s, 1e9, DURATION_HELP)
}

/// `-i/--interval`: a bare number is µs (as cyclictest's -i).
pub(crate) fn parse_interval(s: &str) -> Result<u64, String> {
    parse_time(s, 1e3, INTERVAL_HELP)
}

/// A parsed CPU set (sorted, deduplicated, non-empty). A newtype so clap
/// treats it as one value, not a list of values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuSet(pub Vec<usize>);

/// A CPU set like `0,2-3`.
pub(crate) fn parse_cpuset(s: &str) -> Result<CpuSet, String> {
    let v = parse_cpu_list(s.trim()).map_err(|e| format!("{e}; use CPU numbers and ranges such as 0,2-3"))?;
    if v.is_empty() {
        return Err("the CPU set is empty; use CPU numbers and ranges such as 0,2-3".into());
    }
    Ok(CpuSet(v))
}

/// A kernel-style CPU list (`0,2-3`, as in /sys/devices/system/cpu/online)
/// to sorted, deduplicated CPU numbers; "" is the empty list.
pub(crate) fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Ok(out);
    }
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: usize = a.trim().parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        let b: usize = b.trim().parse().map_err(|_| format!("'{part}' is not a CPU number or range"))?;
        if b < a {
            return Err(format!("range '{part}' runs backwards"));
        }
        if b - a > 65_536 {
            return Err(format!("range '{part}' is too large"));
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The distinct items of `items`, each once, in the order they first come
/// (a set that keeps the input's order; for short lists, so `Vec::contains`).
pub fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// `[0, 1, 2, 5]` → `0-2,5`.
pub(crate) fn cpu_list_str(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    parts.join(",")
}

/// RFC 3339 UTC with second precision (result and phase timestamps).
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.replace_nanosecond(0).unwrap_or(t).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// A time bound given by a user (`--since`, the web list's dates): a date
/// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time, as an RFC 3339 UTC
/// string that compares correctly with stored `started_at` values. With
/// `end_of_day`, a date means the midnight *after* it (an exclusive upper
/// bound that keeps the whole day). `None` when `s` is neither.
pub(crate) fn parse_time_bound(s: &str, end_of_day: bool) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc3339) {
        return t.to_offset(time::UtcOffset::UTC).format(&Rfc3339).ok();
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    let d = time::Date::parse(s, &fmt).ok()?;
    let d = if end_of_day { d.next_day()? } else { d };
    Some(format!("{d}T00:00:00Z"))
}

/// Now, RFC 3339 UTC with the clock's full precision (the store's `saved_at`).
pub(crate) fn now_rfc3339_precise() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// Parse a size: a number of bytes, or with a unit KiB, MiB, GiB (or K, M,
/// G, KB, MB, GB: also powers of 1024), e.g. `256MiB`, `1G`.
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a size; write e.g. 256MiB, 1GiB or 1048576"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => return Err(format!("unknown unit '{u}' in '{s}'; use B, KiB, MiB, GiB or TiB")),
    };
    let n = v * mult as f64;
    if !(n >= 1.0 && n < u64::MAX as f64) {
        return Err(format!("'{s}' is not a positive size"));
    }
    Ok(n as u64)
}

/// Render a byte count for people, in IEC units with one decimal:
/// `512 B`, `1.5 KiB`, `4.9 GiB`.
pub(crate) fn fmt_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// A measured latency for sentences, in the unit that suits it, four
/// significant digits at most: `850 ns`, `275.1 us`, `78.71 ms`, `1.310 s`.
pub(crate) fn fmt_time(ns: f64) -> String {
    let (v, unit) = if ns < 1e3 {
        return format!("{ns:.0} ns");
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if v >= 100.0 {
        1
    } else if v >= 10.0 {
        2
    } else {
        3
    };
    format!("{v:.decimals$} {unit}")
}

/// Render nanoseconds for people: `1ms`, `250us`, `30s`.
pub(crate) fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 6] =
        [(86_400_000_000_000, "d"), (3_600_000_000_000, "h"), (60_000_000_000, "m"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (u, name) in UNITS {
        if ns >= u && ns.is_multiple_of(u) {
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
    fn times_for_people() {
        assert_eq!(fmt_time(850.0), "850 ns");
        assert_eq!(fmt_time(275_084.0), "275.1 us");
        assert_eq!(fmt_time(78_706_618.0), "78.71 ms");
        assert_eq!(fmt_time(1_310_000_000.0), "1.310 s");
        assert_eq!(fmt_time(9_999.0), "9.999 us");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_bytes("1G").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("0").is_err() && parse_bytes("lots").is_err() && parse_bytes("5 parsecs").is_err());
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(fmt_bytes(0), "0 B");
        assert_eq!(fmt_bytes(1023), "1023 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(4_950_000_000), "4.6 GiB");
        assert_eq!(fmt_bytes(u64::MAX), "16384.0 PiB", "the largest unit holds any count");
    }

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
    fn first_seen_keeps_the_first_of_each_in_order() {
        assert_eq!(first_seen([3, 1, 3, 2, 1]), vec![3, 1, 2]);
        assert_eq!(first_seen(["b", "a", "b"]), vec!["b", "a"]);
        assert!(first_seen(Vec::<u8>::new()).is_empty());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(parse_cpu_list("3,1,1").unwrap(), vec![1, 3]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("1,").is_err());
        assert_eq!(cpu_list_str(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(cpu_list_str(&parse_cpu_list("0-3,7,9-10").unwrap()), "0-3,7,9-10");
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(1_000_000), "1ms");
        assert_eq!(fmt_ns(250_000), "250us");
        assert_eq!(fmt_ns(30_000_000_000), "30s");
        assert_eq!(fmt_ns(1_500), "1500ns");
    }
}
