//! `cyclictest-json`: the file rt-tests' cyclictest writes with `--json=FILE`.
//!
//! Shape (rt-tests 2.x): top-level `"cmdline:"` and `"rt_test_version:"` —
//! with a stray colon inside the key, a cyclictest quirk we accept as is (and
//! also without the colon, should it ever be fixed) — `start_time`/`end_time`
//! (RFC 2822), `sysinfo` {nodename, release, realtime}, `resolution_in_ns`
//! (0: values in µs, 1: in ns, from `-N`), and `thread` {"N": {histogram
//! {"value": count}, cycles, min, max, avg, cpu}}. The histogram only counts
//! values below the `-h` limit: `cycles − Σ histogram` samples overflowed and
//! become one bucket [limit, max]. Without `-h` there is no histogram at all
//! and the thread is summary-only.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::format::{never, Format, Spec, Systems};
use super::{Hist, ParseError, Parsed, Series};
use crate::model::{Bucket, Nanos};

/// rt-tests cyclictest --json=FILE.
pub(crate) const FORMAT: Format = Format(&Spec {
    name: "cyclictest-json",
    about: "rt-tests cyclictest --json=FILE",
    json: true,
    sniff: |s| s.json_tool().as_deref() == Some("cyclictest"),
    fallback: never,
    parse: Some(|input, src| super::cyclictest_stream::parse(input, src).map(Systems::from)),
    per_column: false,
    takes_period: false,
    probe_per_row: false,
});

/// An rt-tests JSON file (cyclictest, oslat) read as it streams: every
/// field is kept as a JSON value except each thread's `histogram`, whose
/// `"value": count` entries are folded into a [`Hist`] (in the file's unit)
/// while they are read — a 200 MB histogram never exists in memory.
pub(crate) struct Doc {
    pub(crate) top: Value,
    /// `thread` as given (`None`: no such field).
    pub(crate) threads: Option<Vec<(String, Thread)>>,
}

pub(crate) struct Thread {
    pub(crate) fields: Value,
    /// `None`: the thread has no `histogram` field.
    pub(crate) hist: Option<Hist>,
}

impl Doc {
    /// Read and check the JSON from `r`: syntax errors and bad histogram
    /// entries are a [`ParseError`] with serde's line.
    pub(crate) fn read(r: impl std::io::Read) -> Result<Doc, ParseError> {
        let mut keep = Keep { out: Vec::new(), series: Hist::FILE_BUCKETS / Hist::RAW_LIMIT };
        let (top, threads) = read_with(r, &mut keep)?;
        Ok(Doc { top, threads: threads.then_some(keep.out) })
    }
}

/// Read the JSON from `r`, each thread handed to `sink` as it is read:
/// the fields but `thread`, and whether there was a `thread`.
pub(crate) fn read_with(r: impl std::io::Read, sink: &mut dyn Sink) -> Result<(Value, bool), ParseError> {
    // serde reads a byte at a time: from a buffer of a known type, each
    // byte is an inlined copy rather than a call through `r`.
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(64 << 10, r));
    (TopSeed { sink }).deserialize(&mut de).and_then(|d| de.end().map(|_| d)).map_err(json_err)
}

/// What is done with each thread as it is read.
pub(crate) trait Sink {
    /// Called when `thread` begins, with the fields before it.
    fn begin(&mut self, _top: &Map<String, Value>) {}
    /// The histograms the next thread shares the file's buckets with
    /// (`Hist::sharing`).
    fn series(&self) -> usize;
    /// The thread `id` (as written), read; an error stops the reading.
    fn thread(&mut self, id: String, t: Thread) -> Result<(), String>;
}

/// Every thread kept, each histogram sharing the file's buckets with twice
/// the threads read so far once past what full histograms allow (so the
/// folding is redone only when the count doubles).
struct Keep {
    out: Vec<(String, Thread)>,
    series: usize,
}

impl Sink for Keep {
    fn begin(&mut self, _top: &Map<String, Value>) {
        // A second `thread` object replaces the first.
        self.out.clear();
        self.series = Hist::FILE_BUCKETS / Hist::RAW_LIMIT;
    }
    fn series(&self) -> usize {
        self.series
    }
    fn thread(&mut self, id: String, t: Thread) -> Result<(), String> {
        self.out.push((id, t));
        if let Some(s) = next_sharing(self.out.len(), self.series) {
            self.series = s;
            self.out.iter_mut().filter_map(|(_, t)| t.hist.as_mut()).for_each(|h| h.set_sharing(s));
        }
        Ok(())
    }
}

/// The sharing once `read` threads are read with `series` so far, when it
/// changes (see [`Keep`]).
pub(crate) fn next_sharing(read: usize, series: usize) -> Option<usize> {
    (read > series).then_some(read * 2)
}

fn json_err(e: serde_json::Error) -> ParseError {
    if e.is_data() {
        // Our own messages (bad histogram entries) name their JSON path.
        ParseError::at(e.line(), e.to_string())
    } else {
        ParseError::at(e.line(), format!("not valid JSON ({e}); expected the file written by --json=FILE"))
    }
}

struct TopSeed<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = (Value, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = (Value, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (rt-tests --json output)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut top = Map::new();
        let mut threads = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "thread" {
                self.sink.begin(&top);
                map.next_value_seed(ThreadsSeed { sink: &mut *self.sink })?;
                threads = true;
            } else {
                let v: Value = map.next_value()?;
                top.insert(key, v);
            }
        }
        Ok((Value::Object(top), threads))
    }
}

struct ThreadsSeed<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for ThreadsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ThreadsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("\"thread\" as an object of \"N\": {...}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = map.next_key::<String>()? {
            // "0" and "00" are the same thread: one entry each, never two.
            let key = id.trim().parse::<u64>().map_err(|_| id.clone());
            if !seen.insert(key) {
                return Err(A::Error::custom(format!("thread.\"{id}\" appears twice; expected one entry per thread (an edited or concatenated file?)")));
            }
            let t = map.next_value_seed(ThreadSeed { id: id.clone(), series: self.sink.series() })?;
            self.sink.thread(id, t).map_err(A::Error::custom)?;
        }
        Ok(())
    }
}

struct ThreadSeed {
    id: String,
    /// See [`Sink::series`].
    series: usize,
}

impl<'de> DeserializeSeed<'de> for ThreadSeed {
    type Value = Thread;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Thread, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ThreadSeed {
    type Value = Thread;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "thread.\"{}\" as an object", self.id)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Thread, A::Error> {
        let mut fields = Map::new();
        let mut hist = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "histogram" {
                hist = Some(map.next_value_seed(HistSeed { path: format!("thread.\"{}\".histogram", self.id), series: self.series })?);
            } else {
                let v: Value = map.next_value()?;
                fields.insert(key, v);
            }
        }
        Ok(Thread { fields: Value::Object(fields), hist })
    }
}

struct HistSeed {
    path: String,
    /// The histograms sharing the file's buckets (`Hist::sharing`).
    series: usize,
}

impl<'de> DeserializeSeed<'de> for HistSeed {
    type Value = Hist;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Hist, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HistSeed {
    type Value = Hist;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} as an object of \"value\": count", self.path)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Hist, A::Error> {
        use serde::de::Error;
        let mut h = Hist::sharing(self.series);
        while let Some((v, text)) = map.next_key_seed(KeySeed)? {
            let k = || text.clone().unwrap_or_else(|| v.unwrap_or(0).to_string());
            let v = v.ok_or_else(|| A::Error::custom(format!("{}: key {:?} is not a non-negative integer latency", self.path, k())))?;
            let c: Value = map.next_value()?;
            let count = c.as_u64().ok_or_else(|| A::Error::custom(format!("{}.\"{}\" is {c}; expected a non-negative count", self.path, k())))?;
            h.add(v, v, count);
        }
        Ok(h)
    }
}

/// A histogram key read without copying it: its latency (`None`: not a
/// non-negative integer) and its text when that is not the latency's
/// plain decimal (for messages).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (Option<u64>, Option<String>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = (Option<u64>, Option<String>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a latency as a key")
    }
    fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<Self::Value, E> {
        let plain = k.bytes().all(|b| b.is_ascii_digit()) && (k.len() == 1 || !k.starts_with('0'));
        let v = k.trim().parse().ok();
        Ok((v, (v.is_none() || !plain).then(|| k.to_string())))
    }
}

/// A thread's histogram (in the file's unit, one bucket per value) as ns
/// buckets `unit_ns` wide.
pub(crate) fn scale_hist(h: Hist, unit_ns: u64, path: &str) -> Result<Vec<Bucket>, ParseError> {
    h.into_buckets()
        .into_iter()
        .map(|b| {
            let lo = to_ns(b.lo_ns.0, unit_ns, path)?;
            let hi = to_ns(b.hi_ns.0, unit_ns, path)?
                .checked_add(unit_ns - 1)
                .filter(|&x| x <= i64::MAX as u64)
                .ok_or_else(|| ParseError::file(format!("{path}: {} too large", b.hi_ns.0)))?;
            Ok(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count: b.count })
        })
        .collect()
}

/// The tool named by the first word of `"cmdline:"` in the opening bytes
/// of a JSON file too large to parse just to detect its format.
pub(crate) fn tool_in_prefix(prefix: &str) -> Option<String> {
    let at = prefix.find("\"cmdline")?;
    let rest = &prefix[at + 1..];
    let rest = &rest[rest.find('"')? + 1..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let cmd: String = serde_json::Deserializer::from_str(rest).into_iter::<String>().next()?.ok()?;
    let first = cmd.split_whitespace().next()?;
    Some(first.rsplit('/').next().unwrap_or(first).to_string())
}

/// Refuse an rt-tests JSON file written by another tool than `want` (its
/// `"cmdline:"` names it): an oslat import of a cyclictest file would file
/// timer latencies as noise.
pub(crate) fn expect_tool(v: &Value, want: &str) -> Result<(), ParseError> {
    match tool_of(v) {
        Some(t) if t != want => {
            let format = match t.as_str() {
                "cyclictest" => "--format cyclictest-json",
                "oslat" => "--format oslat-json",
                _ => "the format of that tool, if rtscope imports it",
            };
            Err(ParseError::file(format!("this is {t}'s JSON output (its \"cmdline:\" runs {t}), not {want}'s; import it with {format} (or --format auto)")))
        }
        _ => Ok(()),
    }
}

/// The first word (basename) of the file's command line, e.g. "cyclictest".
pub(crate) fn tool_of(v: &Value) -> Option<String> {
    let cmd = str_field(v, "cmdline")?;
    let first = cmd.split_whitespace().next()?;
    Some(first.rsplit('/').next().unwrap_or(first).to_string())
}

/// `key` or `key:` (the rt-tests spelling).
pub(crate) fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(format!("{key}:")).or_else(|| v.get(key)).and_then(|x| x.as_str())
}

/// A non-negative integer at `obj.key`; `path` names it in errors.
pub(crate) fn json_uint(obj: &Value, key: &str, path: &str) -> Result<u64, ParseError> {
    match obj.get(key) {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(u) => Ok(u),
            None => Err(ParseError::file(format!("{path}.{key} is {n}; expected a non-negative integer"))),
        },
        Some(other) => Err(ParseError::file(format!("{path}.{key} is {other}; expected a non-negative integer"))),
        None => Err(ParseError::file(format!("{path}: no \"{key}\" field; expected one (truncated or edited file?)"))),
    }
}

pub(crate) fn json_f64(obj: &Value, key: &str, path: &str) -> Result<f64, ParseError> {
    match obj.get(key).and_then(|x| x.as_f64()) {
        Some(f) if f.is_finite() && f >= 0.0 => Ok(f),
        Some(f) => Err(ParseError::file(format!("{path}.{key} is {f}; expected a number ≥ 0"))),
        None => Err(ParseError::file(format!("{path}: no numeric \"{key}\" field"))),
    }
}

/// Scale a value in the file's unit to ns, refusing overflow.
pub(crate) fn to_ns(v: u64, unit_ns: u64, path: &str) -> Result<u64, ParseError> {
    v.checked_mul(unit_ns).filter(|&n| n <= i64::MAX as u64).ok_or_else(|| ParseError::file(format!("{path}: {v} is too large to be a latency")))
}

/// rt-tests' "Sun, 22 Nov 2026 09:09:57 +0000" → RFC 3339 UTC.
pub(crate) fn rfc2822_to_rfc3339(s: &str) -> Option<String> {
    use time::format_description::well_known::{Rfc2822, Rfc3339};
    let t = time::OffsetDateTime::parse(s.trim(), &Rfc2822).ok()?;
    t.to_offset(time::UtcOffset::UTC).format(&Rfc3339).ok()
}

/// What both rt-tests JSON files say about the host and the run.
pub(crate) fn common(v: &Value, tool: &str) -> Parsed {
    let sys = v.get("sysinfo");
    let s = |k: &str| sys.and_then(|x| x.get(k)).and_then(|x| x.as_str()).map(String::from);
    Parsed {
        tool: tool.to_string(),
        tool_version: str_field(v, "rt_test_version").unwrap_or("").to_string(),
        system: s("nodename"),
        kernel: s("release"),
        realtime: sys.and_then(|x| x.get("realtime")).and_then(|x| x.as_u64()).map(|r| r == 1),
        started_at: v.get("start_time").and_then(|x| x.as_str()).and_then(rfc2822_to_rfc3339),
        finished_at: v.get("end_time").and_then(|x| x.as_str()).and_then(rfc2822_to_rfc3339),
        command_line: str_field(v, "cmdline").map(|c| c.split_whitespace().map(String::from).collect()).unwrap_or_default(),
        ..Parsed::default()
    }
}

/// The `-h`/`--histogram=` limit from the command line, in the file's unit.
fn hist_limit(cmd: &[String]) -> Option<u64> {
    let mut it = cmd.iter();
    while let Some(a) = it.next() {
        for flag in ["--histogram=", "--histofall="] {
            if let Some(v) = a.strip_prefix(flag) {
                return v.parse().ok();
            }
        }
        if a == "-h" || a == "-H" || a == "--histogram" || a == "--histofall" {
            return it.next().and_then(|v| v.parse().ok());
        }
        if let Some(v) = a.strip_prefix("-h").or_else(|| a.strip_prefix("-H")) {
            if let Ok(n) = v.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// The `-i`/`--interval=` period in µs (default 1000).
fn interval_us(cmd: &[String]) -> u64 {
    let mut it = cmd.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--interval=") {
            return v.parse().unwrap_or(1000);
        }
        if a == "-i" || a == "--interval" {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or(1000);
        }
        if let Some(v) = a.strip_prefix("-i") {
            if let Ok(n) = v.parse() {
                return n;
            }
        }
    }
    1000
}

#[cfg(test)]
pub(crate) fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_reader(text.as_bytes())
}

pub(crate) fn parse_reader(r: impl std::io::Read) -> Result<Parsed, ParseError> {
    let doc = Doc::read(r)?;
    let (mut p, unit_ns, interval_ns, limit) = head(&doc.top)?;
    let threads = doc.threads.ok_or_else(|| ParseError::file("no \"thread\" object; expected cyclictest --json output (truncated file?)"))?;
    let mut ids: Vec<(usize, Thread)> = Vec::new();
    for (k, t) in threads {
        let id: usize = k.parse().map_err(|_| not_a_thread_number(&k))?;
        ids.push((id, t));
    }
    ids.sort_by_key(|x| x.0);
    let mut notes = Notes::default();
    for (id, th) in ids {
        p.series.push(thread_series(id, th, unit_ns, interval_ns, limit, &mut notes)?);
    }
    if notes.summary_only {
        p.series.iter_mut().for_each(|s| s.buckets.clear());
    }
    let (before, after) = notes_around_folding(&notes, limit, unit_ns);
    p.fidelity.extend(before);
    p.fidelity.extend(super::fold::distinct(notes.folded));
    p.fidelity.extend(after);
    Ok(p)
}

pub(crate) fn not_a_thread_number(k: &str) -> ParseError {
    ParseError::file(format!("thread key {k:?} is not a thread number"))
}

/// The run without its series from the fields but `thread`, and what
/// reading the threads takes from them: the file's unit in ns, the period
/// in ns and the `-h` limit.
pub(crate) fn head(v: &Value) -> Result<(Parsed, u64, u64, Option<u64>), ParseError> {
    expect_tool(v, "cyclictest")?;
    let mut p = common(v, "cyclictest");
    let unit_ns = match v.get("resolution_in_ns").and_then(|x| x.as_u64()) {
        Some(1) => {
            p.fidelity.push("ns resolution (cyclictest -N)".into());
            1
        }
        _ => {
            p.fidelity.push("µs resolution: cyclictest reports whole microseconds".into());
            1000
        }
    };
    let interval_ns = to_ns(interval_us(&p.command_line), 1000, "cmdline -i")?;
    let limit = hist_limit(&p.command_line);
    Ok((p, unit_ns, interval_ns, limit))
}

/// The notes the threads give before their folding notes and after them.
pub(crate) fn notes_around_folding(notes: &Notes, limit: Option<u64>, unit_ns: u64) -> (Vec<String>, Vec<String>) {
    let mut before = Vec::new();
    if notes.summary_only {
        before.push("summary only (run without -h): percentiles unknown; histogram is one bucket [min, max]".into());
    } else if notes.overflow_total > 0 {
        let lim = limit.map(|l| format!("{l} {}", if unit_ns == 1 { "ns" } else { "µs" })).unwrap_or_else(|| "its last bucket".into());
        before.push(format!("histogram truncated at {lim}, {} overflows: they are one bucket from the limit up to the max", notes.overflow_total));
    }
    (before, vec!["no per-second series; no worst-sample timestamps".into()])
}

/// What the threads give the fidelity notes.
#[derive(Default)]
pub(crate) struct Notes {
    pub(crate) overflow_total: u64,
    pub(crate) summary_only: bool,
    pub(crate) folded: Vec<String>,
}

/// One thread's series: its summary, its histogram in ns, and the samples
/// past the histogram's limit (`-h`) as one bucket from there to the max.
pub(crate) fn thread_series(id: usize, th: Thread, unit_ns: u64, interval_ns: u64, limit: Option<u64>, notes: &mut Notes) -> Result<Series, ParseError> {
    let t = &th.fields;
    let path = format!("thread.\"{id}\"");
    let cycles = json_uint(t, "cycles", &path)?;
    let min_ns = to_ns(json_uint(t, "min", &path)?, unit_ns, &path)?;
    let max_ns = to_ns(json_uint(t, "max", &path)?, unit_ns, &path)?;
    let avg = json_f64(t, "avg", &path)? * unit_ns as f64;
    let cpu = t.get("cpu").and_then(|c| c.as_u64()).map(|c| c as usize);
    let mut buckets = match th.hist {
        Some(h) => {
            notes.folded.extend(h.note("histogram"));
            scale_hist(h, unit_ns, &format!("{path}.histogram"))?
        }
        None => Vec::new(),
    };
    if buckets.is_empty() {
        notes.summary_only = true;
    } else {
        let in_hist = buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.count)).unwrap_or(u64::MAX);
        if in_hist > cycles {
            return Err(ParseError::file(format!("{path}: histogram holds {in_hist} samples but cycles is {cycles}; expected at most cycles")));
        }
        let over = cycles - in_hist;
        if over > 0 {
            let top = buckets.iter().map(|b| b.hi_ns.0).max().unwrap_or(0);
            let lo = match limit {
                Some(l) => to_ns(l, unit_ns, "cmdline -h")?,
                None => top.saturating_add(1),
            };
            if max_ns < lo {
                return Err(ParseError::file(format!("{path}: {over} samples overflowed the histogram but max {max_ns} ns is below its limit {lo} ns")));
            }
            buckets.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(max_ns), count: over });
            notes.overflow_total += over;
        }
    }
    Ok(Series {
        probe: "timer".into(),
        thread: Some(id),
        cpu,
        interval_ns,
        samples: cycles,
        min_ns,
        max_ns,
        mean_ns: Some(avg),
        buckets,
        // cyclictest skips missed periods without counting them.
        overruns_unknown: true,
        ..Series::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_histogram_the_run_is_summary_only() {
        let text = r#"{"cmdline:": "cyclictest -t 1 -i 500 -l 100 --json=x", "rt_test_version:": "2.40",
            "thread": {"0": {"cycles": 100, "min": 2, "max": 40, "avg": 5.5, "cpu": 1}}}"#;
        let p = parse(text).unwrap();
        let s = &p.series[0];
        assert!(s.buckets.is_empty());
        assert_eq!((s.samples, s.min_ns, s.max_ns, s.interval_ns), (100, 2000, 40_000, 500_000));
        assert!(p.fidelity.iter().any(|f| f.starts_with("summary only")));
    }

    #[test]
    fn cmdline_flags_are_read_in_all_spellings() {
        let v = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(hist_limit(&v("cyclictest -h 100")), Some(100));
        assert_eq!(hist_limit(&v("cyclictest --histogram=50")), Some(50));
        assert_eq!(hist_limit(&v("cyclictest -h200")), Some(200));
        assert_eq!(hist_limit(&v("cyclictest -q")), None);
        assert_eq!(interval_us(&v("cyclictest -i 250")), 250);
        assert_eq!(interval_us(&v("cyclictest --interval=100")), 100);
        assert_eq!(interval_us(&v("cyclictest")), 1000);
    }

    #[test]
    fn negative_or_fractional_counts_are_refused_with_their_path() {
        let text = r#"{"cmdline:": "cyclictest -h 10", "thread": {"0": {"cycles": 3, "min": 1, "max": 2, "avg": 1.5,
            "histogram": {"1": -2}}}}"#;
        let e = parse(text).unwrap_err();
        assert!(e.msg.contains("thread.\"0\".histogram") && e.msg.contains("non-negative"), "{}", e.msg);
    }
}
