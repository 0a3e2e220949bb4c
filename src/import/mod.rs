//! Importers: other tools' output converted into the result model, so
//! systems rtscope cannot run on (RTAI, Xenomai, VxWorks, other boards) can
//! enter a comparison. One file per format; this module holds what they
//! share: [`Format`] and its detection by content ([`detect`]), the
//! intermediate [`Parsed`]/[`Series`] every parser produces, and
//! [`build_run`], which turns those into a schema v1 [`Run`] with
//! `imported_from` and `fidelity` notes.
//!
//! The conversion rules (also in docs/schema.md, "Imported runs"):
//! - Latencies become integer ns; µs sources are exact to the µs and say so
//!   in `fidelity`.
//! - Histogram buckets become inclusive `[lo_ns, hi_ns]` ranges; a source's
//!   overflow count becomes one bucket from the histogram's limit up to the
//!   reported max, so counts still sum to `samples` (rule 4 of the
//!   architecture: no sample is lost, even in conversion).
//! - Percentiles are computed from the buckets by nearest rank and reported
//!   as the top of their bucket, clamped to [min, max], as for native runs.
//! - A summary-only source (min/avg/max, e.g. ptsematest) gets one bucket
//!   `[min, max]` holding every sample and an empty `percentiles_ns`, with a
//!   fidelity note "summary only: ...". Readers must treat an empty
//!   `percentiles_ns` as "unknown", never as zero.
//! - Negative latencies (early wake-ups in RTAI/Xenomai): the signed min,
//!   mean and max go into the entry's `signed` object, which reports and
//!   comparisons show; the unsigned fields (and per-second series) clamp
//!   them to 0, and a fidelity note says so.
//! - Missed periods a source cannot count (cyclictest, rtla, the rt-tests
//!   IPC tools but pmqtest's timeouts, bins-csv) are unknown, not 0:
//!   `overruns_known: false` and a fidelity note; verdicts treat them so.
//! - Inputs are read line by line ([`Lines`]), histograms folded past
//!   [`Hist::RAW_LIMIT`] buckets and per-second series bounded
//!   ([`Seconds`]): a 200 MB file costs memory for what it holds, not for
//!   its size.
//!
//! Parsers never panic on any input (property-tested in tests/import.rs):
//! every failure is a [`ParseError`] naming the line and what was expected.

pub mod bins_csv;
pub mod cyclictest_hist;
pub mod cyclictest_json;
pub mod ipc;
pub mod oslat_json;
pub mod rtai;
pub mod rtla;
pub mod suites_csv;
pub mod xenomai;

use std::collections::BTreeMap;
use std::fmt;

use crate::stats;
use crate::model::{
    Bucket, Host, ImportedFrom, Nanos, Plan, ProbeResult, Run, SecondStats, SignedStats, Tool,
};

/// The formats `rtscope import --format` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Recognise the format by the file's content.
    Auto,
    /// An rtscope result file (schema v1 JSON), stored as is.
    Rtscope,
    /// rt-tests cyclictest --json=FILE.
    CyclictestJson,
    /// cyclictest -h/--histogram (or --histfile) text.
    CyclictestHist,
    /// rt-tests oslat --json=FILE.
    OslatJson,
    /// Text output of `rtla timerlat hist`.
    RtlaTimerlatHist,
    /// The `#1 -> #0, Min .., Cur .., Avg .., Max ..` lines of ptsematest, svsematest, pmqtest, sigwaittest.
    RtTestsIpc,
    /// Xenomai's `latency` tool output (RTD|, RTS|, and -h HSD|/HSS| lines).
    XenomaiLatency,
    /// RTAI's latency test output (RTH|/RTD| lines).
    RtaiLatency,
    /// CSV: bin_lo_ns,bin_hi_ns, then one count column per system.
    BinsCsv,
    /// CSV: rhealstone_us (or _ns), then one column per system; a row per component.
    RhealstoneCsv,
    /// CSV: thread_metric, then one column per system; a row per test (ops per interval).
    ThreadMetricCsv,
}

/// Every concrete format, in the order `detect` tries them.
pub const FORMATS: [Format; 11] = [
    Format::Rtscope,
    Format::CyclictestJson,
    Format::OslatJson,
    Format::RtaiLatency,
    Format::XenomaiLatency,
    Format::RtlaTimerlatHist,
    Format::CyclictestHist,
    Format::RtTestsIpc,
    Format::BinsCsv,
    Format::RhealstoneCsv,
    Format::ThreadMetricCsv,
];

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Rtscope => "rtscope",
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::OslatJson => "oslat-json",
            Format::RtlaTimerlatHist => "rtla-timerlat-hist",
            Format::RtTestsIpc => "rt-tests-ipc",
            Format::XenomaiLatency => "xenomai-latency",
            Format::RtaiLatency => "rtai-latency",
            Format::BinsCsv => "bins-csv",
            Format::RhealstoneCsv => "rhealstone-csv",
            Format::ThreadMetricCsv => "thread-metric-csv",
        }
    }

    /// Formats with one column per system: each column becomes a run and
    /// `--name` selects one of them.
    pub fn per_column(self) -> bool {
        matches!(self, Format::BinsCsv | Format::RhealstoneCsv | Format::ThreadMetricCsv)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Recognise a file's format from its text; `None` if nothing fits.
pub fn detect(text: &str) -> Option<Format> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(t).ok()?;
        if v.get("schema_version").is_some() && v.get("results").is_some() {
            return Some(Format::Rtscope);
        }
        return match cyclictest_json::tool_of(&v).as_deref() {
            Some("cyclictest") => Some(Format::CyclictestJson),
            Some("oslat") => Some(Format::OslatJson),
            _ => None,
        };
    }
    let lines = || t.lines().map(|l| strip_ansi(l.trim_end()));
    if lines().any(|l| (l.starts_with("RTH|") && (l.contains("ovl m") || l.contains("jit fast"))) || rtai::is_switch_line(&l))
        || t.contains("RTAI Testsuite")
        || t.contains("RTAI testsuite")
    {
        return Some(Format::RtaiLatency);
    }
    if lines().any(|l| l.starts_with("RTS|") || l.starts_with("HSS|") || l.starts_with("RTT|")) {
        return Some(Format::XenomaiLatency);
    }
    if lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("# RTLA timerlat hist") || (l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-") || l.contains("Usr-")))
    }) {
        return Some(Format::RtlaTimerlatHist);
    }
    if lines().any(|l| l.starts_with("# Histogram")) && lines().any(|l| l.starts_with("# Max Latencies")) {
        return Some(Format::CyclictestHist);
    }
    if lines().any(|l| ipc::is_pair_line(&l)) {
        return Some(Format::RtTestsIpc);
    }
    let head = lines().map(|l| l.trim().to_string()).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap_or_default();
    let first_cell = head.split(',').next().unwrap_or("").trim();
    if first_cell == "bin_lo_ns" {
        return Some(Format::BinsCsv);
    }
    if first_cell == suites_csv::RHEALSTONE_US || first_cell == suites_csv::RHEALSTONE_NS {
        return Some(Format::RhealstoneCsv);
    }
    if first_cell == suites_csv::THREAD_METRIC_HEAD {
        return Some(Format::ThreadMetricCsv);
    }
    None
}

/// [`detect`] from the opening bytes of a file (`complete`: they are the
/// whole file). A JSON file cut short cannot be parsed to look at it, so
/// its kind comes from its keys: the tool of `"cmdline:"` for rt-tests,
/// else an rtscope result.
pub fn detect_head(head: &str, complete: bool) -> Option<Format> {
    let t = head.trim_start_matches('\u{feff}').trim_start();
    if complete {
        return detect(head);
    }
    if !t.starts_with('{') {
        // cyclictest -h's footer (# Max Latencies) is at the end of the file.
        return detect(head).or_else(|| t.lines().any(|l| strip_ansi(l.trim()) == "# Histogram").then_some(Format::CyclictestHist));
    }
    match cyclictest_json::tool_in_prefix(t).as_deref() {
        Some("cyclictest") => Some(Format::CyclictestJson),
        Some("oslat") => Some(Format::OslatJson),
        // Not an rt-tests "cmdline:" (the second key they write; an rtscope
        // result has a `host.cmdline` of the kernel): a large JSON object
        // is read as an rtscope result, whose reader says clearly if it is
        // not one.
        _ => Some(Format::Rtscope),
    }
}

/// The opening `limit` bytes of `r` after any leading byte-order mark and
/// ASCII white space, and how many bytes were skipped: format detection
/// looks at content, and megabytes of blank space before it must not hide it.
/// The mark is kept in the returned bytes when it comes first (detection
/// drops it). Also returns the line breaks skipped, for error positions.
pub fn read_head(r: impl std::io::Read, limit: usize) -> std::io::Result<(Vec<u8>, u64, usize)> {
    use std::io::{BufRead, Read};
    let mut r = std::io::BufReader::with_capacity(64 << 10, r);
    let (mut skipped, mut lines) = (0u64, 0usize);
    let bom = "\u{feff}".as_bytes();
    let mut head = Vec::new();
    if r.fill_buf()?.starts_with(bom) {
        r.consume(bom.len());
        head.extend_from_slice(bom);
    }
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let n = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let done = n < buf.len();
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
        r.consume(n);
        skipped += n as u64;
        if done {
            break;
        }
    }
    r.take((limit - head.len()) as u64).read_to_end(&mut head)?;
    Ok((head, skipped, lines))
}

/// The names of all concrete formats, for error messages.
pub fn format_list() -> String {
    FORMATS.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

/// What went wrong where: `line` is 1-based, 0 when the problem is the file
/// as a whole (e.g. "no RTS| line: truncated?").
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    pub fn at(line: usize, msg: impl Into<String>) -> ParseError {
        ParseError { line, msg: msg.into() }
    }
    pub fn file(msg: impl Into<String>) -> ParseError {
        ParseError { line: 0, msg: msg.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.msg)
        } else {
            f.write_str(&self.msg)
        }
    }
}

/// One measured series (a thread, a CPU column, a task pair) as read from
/// the source, before it becomes a [`ProbeResult`].
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub probe: String,
    pub variant: Option<String>,
    pub thread: Option<usize>,
    pub cpu: Option<usize>,
    pub interval_ns: u64,
    pub samples: u64,
    pub overruns: u64,
    /// The source cannot count missed periods (cyclictest, rtla, ...):
    /// `overruns` is then unknown, not 0 (see `ProbeResult::overruns_known`).
    pub overruns_unknown: bool,
    pub min_ns: u64,
    pub max_ns: u64,
    /// From the source when it reports one; else estimated from the buckets.
    pub mean_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
    /// Empty = the source has only a summary (see the module doc).
    pub buckets: Vec<Bucket>,
    pub per_second: Vec<SecondStats>,
    /// Width of one `per_second` slot in s (0 is taken as 1).
    pub per_second_width_s: u64,
    /// The signed min/mean/max when the source has negative latencies
    /// (early wake-ups): the unsigned fields clamp them to 0.
    pub signed: Option<SignedStats>,
    /// Operation counts (Thread-Metric results).
    pub throughput: Option<crate::model::Throughput>,
    /// The source cannot know the count: `samples` is a lower bound.
    pub samples_unknown: bool,
}

/// What the command line adds to what a file says.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    /// `--period`: the measuring period, for sources that do not print it
    /// (RTAI's `display`).
    pub period_ns: Option<u64>,
}

/// The formats `--period` applies to.
pub fn takes_period(format: Format) -> bool {
    format == Format::RtaiLatency
}

/// A parsed source file: one system's series plus what the file says about
/// where and how it ran.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// e.g. "cyclictest".
    pub tool: String,
    /// As the file states it, "" if it does not.
    pub tool_version: String,
    /// Host or system name found in the file (`--name` overrides).
    pub system: Option<String>,
    pub kernel: Option<String>,
    pub realtime: Option<bool>,
    /// RFC 3339 UTC, when the file records it.
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ns: Option<u64>,
    pub command_line: Vec<String>,
    pub series: Vec<Series>,
    pub fidelity: Vec<String>,
}

/// Parse `text` as `format` (not `Auto`) into one [`Parsed`] per system.
/// `file_name` is a hint for formats that do not name their tool.
pub fn parse(format: Format, text: &str, file_name: &str) -> Result<Vec<Parsed>, ParseError> {
    parse_reader(format, text.as_bytes(), file_name)
}

/// [`parse`] reading from `r` as it goes: memory stays bounded whatever the
/// input's size (lines are read one at a time; histograms of more than
/// [`Hist::RAW_LIMIT`] buckets are kept at 3 significant digits, JSON
/// histograms are folded in while the file is read).
pub fn parse_reader(format: Format, r: impl std::io::BufRead, file_name: &str) -> Result<Vec<Parsed>, ParseError> {
    parse_reader_with(format, r, file_name, &ParseOptions::default())
}

/// [`parse_reader`] with the command line's [`ParseOptions`].
pub fn parse_reader_with(format: Format, r: impl std::io::BufRead, file_name: &str, opts: &ParseOptions) -> Result<Vec<Parsed>, ParseError> {
    let mut lines = Lines::new(r);
    match format {
        Format::Auto | Format::Rtscope => Err(ParseError::file("internal: parse() takes a concrete foreign format")),
        Format::CyclictestJson => cyclictest_json::parse_reader(lines.into_inner()).map(|p| vec![p]),
        Format::OslatJson => oslat_json::parse_reader(lines.into_inner()).map(|p| vec![p]),
        Format::CyclictestHist => cyclictest_hist::parse_lines(&mut lines).map(|p| vec![p]),
        Format::RtlaTimerlatHist => rtla::parse_lines(&mut lines).map(|p| vec![p]),
        Format::RtTestsIpc => ipc::parse_lines(&mut lines, file_name).map(|p| vec![p]),
        Format::XenomaiLatency => xenomai::parse_lines(&mut lines).map(|p| vec![p]),
        Format::RtaiLatency => rtai::parse_lines(&mut lines, opts).map(|p| vec![p]),
        Format::BinsCsv => bins_csv::parse_reader(lines.into_inner()),
        Format::RhealstoneCsv => suites_csv::parse_rhealstone(lines.into_inner()),
        Format::ThreadMetricCsv => suites_csv::parse_thread_metric(lines.into_inner()),
    }
}

/// One line of an input (without its end of line), or why it could not be
/// read.
pub type Line = Result<String, ParseError>;

/// The lines of a reader, one at a time: a leading byte-order mark is
/// dropped, `\r\n` ends a line like `\n`, and invalid UTF-8 is an error
/// naming the line.
pub struct Lines<R> {
    r: R,
    n: usize,
    buf: Vec<u8>,
}

impl<R: std::io::BufRead> Lines<R> {
    pub fn new(r: R) -> Lines<R> {
        Lines { r, n: 0, buf: Vec::new() }
    }
    /// The reader, for formats read by a parser of their own (JSON, CSV),
    /// with the byte-order mark skipped if nothing was read yet.
    pub fn into_inner(mut self) -> R {
        if self.n == 0 {
            if let Ok(head) = self.r.fill_buf() {
                if head.starts_with("\u{feff}".as_bytes()) {
                    self.r.consume(3);
                }
            }
        }
        self.r
    }
}

impl<R: std::io::BufRead> Iterator for Lines<R> {
    type Item = Line;
    fn next(&mut self) -> Option<Line> {
        self.buf.clear();
        match self.r.read_until(b'\n', &mut self.buf) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => return Some(Err(ParseError::at(self.n + 1, format!("cannot read: {e}")))),
        }
        self.n += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        let start = if self.n == 1 && self.buf.starts_with("\u{feff}".as_bytes()) { 3 } else { 0 };
        Some(match std::str::from_utf8(&self.buf[start..]) {
            Ok(t) => Ok(t.to_string()),
            Err(e) => Err(ParseError::at(
                self.n,
                format!("not UTF-8 text (invalid byte at column {}); expected the text output of one of: {}", e.valid_up_to() + 1, format_list()),
            )),
        })
    }
}

/// A histogram being read: the source's buckets as they are while there are
/// at most [`Hist::RAW_LIMIT`] distinct ones (every file a tool prints for
/// a normal run), beyond that folded to 3 significant digits — each bucket
/// no wider than 1/1024 of its value or than the source's own bucket, as
/// rtscope's recorder keeps them — so a 200 MB histogram costs kilobytes,
/// not gigabytes. Counts are never lost; only ranges get coarser, and
/// [`Hist::folded`] says so for the fidelity note.
#[derive(Debug, Default)]
pub struct Hist {
    raw: Vec<Bucket>,
    folded: Option<BTreeMap<(u64, u64), u64>>,
    total: u64,
    overflow: bool,
}

impl Hist {
    /// Distinct buckets kept exactly before folding starts.
    pub const RAW_LIMIT: usize = 20_000;

    pub fn new() -> Hist {
        Hist::default()
    }

    /// Add `count` samples in `[lo, hi]` (ns, inclusive); empty ones are skipped.
    pub fn add(&mut self, lo: u64, hi: u64, count: u64) {
        if count == 0 {
            return;
        }
        match self.total.checked_add(count) {
            Some(t) => self.total = t,
            None => self.overflow = true,
        }
        match &mut self.folded {
            Some(map) => *map.entry(fold(lo, hi)).or_insert(0) += count,
            None => {
                self.raw.push(Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count });
                if self.raw.len() > Self::RAW_LIMIT {
                    let mut map = BTreeMap::new();
                    for b in self.raw.drain(..) {
                        *map.entry(fold(b.lo_ns.0, b.hi_ns.0)).or_insert(0u64) += b.count;
                    }
                    self.raw = Vec::new();
                    self.folded = Some(map);
                }
            }
        }
    }

    /// The sum of the counts; `None` when it overflows 64 bits.
    pub fn total(&self) -> Option<u64> {
        (!self.overflow).then_some(self.total)
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0 && !self.overflow
    }

    /// True when the source had more than [`Hist::RAW_LIMIT`] buckets and
    /// they were folded.
    pub fn folded(&self) -> bool {
        self.folded.is_some()
    }

    pub fn into_buckets(self) -> Vec<Bucket> {
        match self.folded {
            Some(map) => map.into_iter().map(|((lo, hi), count)| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count }).collect(),
            None => self.raw,
        }
    }
}

/// The folded range holding source bucket `[lo, hi]`: a block of width
/// `w` = the source width doubled while it stays ≤ lo/1024, aligned on
/// multiples of `w`; the source range itself when it does not fit one block
/// (unaligned or wider).
fn fold(lo: u64, hi: u64) -> (u64, u64) {
    let s = hi.saturating_sub(lo).saturating_add(1);
    let mut w = s;
    while w.saturating_mul(2) <= lo / 1024 {
        w *= 2;
    }
    let b_lo = lo - lo % w;
    let b_hi = b_lo.saturating_add(w - 1);
    if w == s || hi > b_hi {
        (lo, hi)
    } else {
        (b_lo, b_hi)
    }
}

/// The fidelity note of a series whose histogram was folded.
pub fn folded_note(what: &str) -> String {
    format!(
        "{what}: more than {} histogram buckets; kept at 3 significant digits (each bucket at most 1/1024 of its value wide), as rtscope's own recorder keeps them",
        Hist::RAW_LIMIT
    )
}

/// A per-second (or per-window) series being read, at most
/// [`Seconds::MAX_SLOTS`] slots: when a long source would exceed them, the
/// slot width doubles and neighbouring slots merge (count-weighted mean,
/// min of mins, max of maxes), as the recorder does for long native runs.
#[derive(Debug)]
pub struct Seconds {
    source_width: u64,
    width: u64,
    next_t: u64,
    slots: Vec<SecondStats>,
}

fn merge_slot(a: &mut SecondStats, b: &SecondStats) {
    let n = a.count.saturating_add(b.count);
    if n > 0 {
        a.mean_ns = (a.mean_ns * a.count as f64 + b.mean_ns * b.count as f64) / n as f64;
    }
    a.count = n;
    a.min_ns = a.min_ns.min(b.min_ns);
    a.max_ns = a.max_ns.max(b.max_ns);
}

impl Seconds {
    pub const MAX_SLOTS: usize = 100_000;

    /// The source gives one entry per `width_s` seconds (0 is taken as 1).
    pub fn new(width_s: u64) -> Seconds {
        let w = width_s.max(1);
        Seconds { source_width: w, width: w, next_t: 0, slots: Vec::new() }
    }

    /// The next entry's values (entries arrive in order, one source width each).
    pub fn push(&mut self, count: u64, min: u64, mean: f64, max: u64) {
        let t = self.next_t;
        self.next_t = self.next_t.saturating_add(self.source_width);
        let e = SecondStats { t_s: t - t % self.width, count, min_ns: Nanos(min), mean_ns: mean, max_ns: Nanos(max) };
        match self.slots.last_mut() {
            Some(last) if last.t_s == e.t_s => merge_slot(last, &e),
            _ => self.slots.push(e),
        }
        if self.slots.len() > Self::MAX_SLOTS {
            self.width = self.width.saturating_mul(2);
            let old = std::mem::take(&mut self.slots);
            for mut e in old {
                e.t_s -= e.t_s % self.width;
                match self.slots.last_mut() {
                    Some(last) if last.t_s == e.t_s => merge_slot(last, &e),
                    _ => self.slots.push(e),
                }
            }
        }
    }

    /// Entries pushed so far.
    pub fn entries(&self) -> u64 {
        self.next_t / self.source_width
    }

    /// The slots and their width in seconds.
    pub fn finish(self) -> (Vec<SecondStats>, u64) {
        (self.slots, self.width)
    }
}

/// How the command wants the runs labelled.
#[derive(Debug, Clone)]
pub struct Context {
    pub format: Format,
    /// The file as named on the command line.
    pub file: String,
    pub file_sha256: String,
    /// File stem: the system name of last resort.
    pub file_stem: String,
    /// The file's modification time (RFC 3339), used when the file records no date.
    pub file_mtime: String,
    pub phase: String,
    pub probe: Option<String>,
    pub name: Option<String>,
}

/// Build the schema v1 run for one parsed system.
pub fn build_run(p: Parsed, ctx: &Context) -> Result<Run, ParseError> {
    let system = ctx.name.clone().or(p.system.clone()).unwrap_or_else(|| ctx.file_stem.clone());
    let mut fidelity = p.fidelity.clone();
    if p.series.iter().any(|s| s.overruns_unknown) {
        fidelity.push(format!(
            "missed periods (overruns) unknown: {} does not count them; a deadline verdict sees only the late samples",
            if p.tool.is_empty() { "the source" } else { p.tool.as_str() }
        ));
    }
    let started_at = match &p.started_at {
        Some(s) => s.clone(),
        None => {
            fidelity.push("start time unknown: started_at is the imported file's modification time".into());
            ctx.file_mtime.clone()
        }
    };
    let finished_at = p.finished_at.clone().unwrap_or_else(|| started_at.clone());
    if p.series.is_empty() {
        return Err(ParseError::file("the file holds no measurements"));
    }
    let mut results = Vec::new();
    let mut groups: Vec<(String, Option<String>)> = Vec::new();
    for s in &p.series {
        let probe = ctx.probe.clone().unwrap_or_else(|| s.probe.clone());
        let r = finish_series(s, &probe, &ctx.phase)?;
        if !groups.contains(&(probe.clone(), s.variant.clone())) {
            groups.push((probe.clone(), s.variant.clone()));
        }
        results.push(r);
    }
    // One merged entry (thread = null) per probe/variant, as native runs have.
    let mut merged = Vec::new();
    for (probe, variant) in &groups {
        let members: Vec<&ProbeResult> = results.iter().filter(|r| &r.probe == probe && &r.variant == variant).collect();
        if members.len() > 1 || members.iter().any(|r| r.thread.is_some()) {
            merged.push(merge_results(&members));
        }
    }
    results.extend(merged);

    let mut cpus: Vec<usize> = p.series.iter().filter_map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut probes: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    probes.dedup();
    let interval = p.series.iter().map(|s| s.interval_ns).find(|&i| i > 0).unwrap_or(0);
    let tool_named = if p.tool_version.is_empty() { p.tool.clone() } else { format!("{} {}", p.tool, p.tool_version) };
    let host = Host {
        hostname: system.clone(),
        kernel_release: p.kernel.clone().unwrap_or_default(),
        realtime: p.realtime.unwrap_or(false),
        preempt_model: "unknown".into(),
        preempt_model_source: format!("not recorded by {}", p.tool),
        smt: "unknown".into(),
        cpus_online: cpus.clone(),
        ..Host::default()
    };
    let mut plan = Plan::new(probes, vec![ctx.phase.clone()], Nanos(p.duration_ns.unwrap_or(0)), Nanos(interval));
    plan.threads = p.series.len();
    plan.cpus = cpus;
    let from = ImportedFrom {
        format: ctx.format.name().into(),
        tool: tool_named,
        file_sha256: ctx.file_sha256.clone(),
        file: ctx.file.clone(),
        system,
    };
    let mut run =
        Run::imported(Tool::new(p.tool.clone(), p.tool_version.clone()), from, host, plan, results, (started_at, finished_at));
    run.command_line = p.command_line.clone();
    run.fidelity = fidelity;
    Ok(run)
}

/// Sort buckets, and fuse any that touch or overlap so they are disjoint
/// (counts are kept; only the ranges get coarser).
pub fn normalise_buckets(mut b: Vec<Bucket>) -> Vec<Bucket> {
    b.retain(|x| x.count > 0);
    b.sort_by_key(|x| (x.lo_ns, x.hi_ns));
    let mut out: Vec<Bucket> = Vec::with_capacity(b.len());
    for x in b {
        match out.last_mut() {
            Some(last) if x.lo_ns <= last.hi_ns => {
                last.hi_ns = last.hi_ns.max(x.hi_ns);
                last.count = last.count.saturating_add(x.count);
            }
            _ => out.push(x),
        }
    }
    out
}

/// The stored percentiles of a histogram of `samples` samples (by
/// [`stats::bucket_percentile`], so exactly what the recorder writes for a
/// native run with the same buckets).
pub fn percentiles(buckets: &[Bucket], samples: u64, min: u64, max: u64) -> BTreeMap<String, Nanos> {
    if samples == 0 {
        return BTreeMap::new();
    }
    stats::PERCENTILES
        .iter()
        .map(|p| (p.key.to_string(), stats::bucket_percentile(buckets, p.q, Nanos(min), Nanos(max)).unwrap_or(Nanos(max))))
        .collect()
}

/// Validate one series and turn it into a result.
fn finish_series(s: &Series, probe: &str, phase: &str) -> Result<ProbeResult, ParseError> {
    let what = series_name(s);
    if s.samples == 0 {
        return Err(ParseError::file(format!("{what}: no samples")));
    }
    if s.min_ns > s.max_ns {
        return Err(ParseError::file(format!("{what}: min {} ns is above max {} ns", s.min_ns, s.max_ns)));
    }
    let summary_only = s.buckets.is_empty();
    let mut buckets = if summary_only {
        vec![Bucket { lo_ns: Nanos(s.min_ns), hi_ns: Nanos(s.max_ns), count: s.samples }]
    } else {
        normalise_buckets(s.buckets.clone())
    };
    let total = buckets.iter().try_fold(0u64, |a, b| a.checked_add(b.count));
    match total {
        Some(t) if t == s.samples => {}
        Some(t) => {
            return Err(ParseError::file(format!(
                "{what}: histogram counts sum to {t} but the file reports {} samples",
                s.samples
            )))
        }
        None => return Err(ParseError::file(format!("{what}: histogram counts overflow a 64-bit sum"))),
    }
    if buckets.is_empty() {
        return Err(ParseError::file(format!("{what}: empty histogram")));
    }
    // min/max are exact in every source; make the outer buckets reach them.
    let first = buckets[0];
    let last = buckets[buckets.len() - 1];
    if s.min_ns > first.hi_ns.0 {
        return Err(ParseError::file(format!(
            "{what}: min {} ns lies above the lowest non-empty histogram bucket [{}, {}] ns",
            s.min_ns, first.lo_ns.0, first.hi_ns.0
        )));
    }
    if s.max_ns < last.lo_ns.0 {
        return Err(ParseError::file(format!(
            "{what}: max {} ns lies below the highest non-empty histogram bucket [{}, {}] ns",
            s.max_ns, last.lo_ns.0, last.hi_ns.0
        )));
    }
    buckets[0].lo_ns = Nanos(first.lo_ns.0.min(s.min_ns));
    let n = buckets.len();
    buckets[n - 1].hi_ns = Nanos(last.hi_ns.0.max(s.max_ns));
    let est = stats::Moments::from_buckets(&buckets);
    let (est_mean, est_sd) = (est.mean, est.sd);
    let percentiles_ns = if summary_only { BTreeMap::new() } else { percentiles(&buckets, s.samples, s.min_ns, s.max_ns) };
    let mut r = ProbeResult::new(probe, phase, s.variant.clone(), s.thread, s.cpu, Nanos(s.interval_ns));
    r.samples = s.samples;
    r.overruns = s.overruns;
    r.overruns_known = !s.overruns_unknown;
    r.min_ns = Nanos(s.min_ns);
    r.max_ns = Nanos(s.max_ns);
    r.mean_ns = s.mean_ns.filter(|m| m.is_finite()).unwrap_or(est_mean);
    r.stddev_ns = s.stddev_ns.filter(|m| m.is_finite()).unwrap_or(if summary_only { 0.0 } else { est_sd });
    r.percentiles_ns = percentiles_ns;
    r.histogram = buckets;
    r.per_second = s.per_second.clone();
    r.per_second_width_s = s.per_second_width_s.max(1);
    r.signed = s.signed;
    r.throughput = s.throughput.clone();
    r.samples_unknown = s.samples_unknown;
    Ok(r)
}

fn series_name(s: &Series) -> String {
    let mut n = s.probe.clone();
    if let Some(v) = &s.variant {
        n.push_str(&format!(" ({v})"));
    }
    if let Some(t) = s.thread {
        n.push_str(&format!(" thread {t}"));
    }
    n
}

/// Merge per-thread results into one entry with `thread`/`cpu` null.
pub fn merge_results(parts: &[&ProbeResult]) -> ProbeResult {
    let first = parts[0];
    let samples: u64 = parts.iter().map(|r| r.samples).fold(0u64, |a, b| a.saturating_add(b));
    let min = parts.iter().map(|r| r.min_ns.0).min().unwrap_or(0);
    let max = parts.iter().map(|r| r.max_ns.0).max().unwrap_or(0);
    let pooled = stats::Moments::pooled(
        &parts.iter().map(|r| stats::Moments { n: r.samples, mean: r.mean_ns, sd: r.stddev_ns }).collect::<Vec<_>>(),
    );
    let summary_only = parts.iter().any(|r| r.percentiles_ns.is_empty());
    let histogram = if summary_only {
        vec![Bucket { lo_ns: Nanos(min), hi_ns: Nanos(max), count: samples }]
    } else {
        normalise_buckets(parts.iter().flat_map(|r| r.histogram.iter().copied()).collect())
    };
    let percentiles_ns = if summary_only { BTreeMap::new() } else { percentiles(&histogram, samples, min, max) };
    let mut r = ProbeResult::new(first.probe.clone(), first.phase.clone(), first.variant.clone(), None, None, first.interval_ns);
    r.samples = samples;
    r.overruns = parts.iter().map(|r| r.overruns).fold(0u64, |a, b| a.saturating_add(b));
    r.overruns_known = parts.iter().all(|r| r.overruns_known);
    r.min_ns = Nanos(min);
    r.max_ns = Nanos(max);
    r.mean_ns = pooled.mean;
    r.stddev_ns = pooled.sd;
    r.percentiles_ns = percentiles_ns;
    r.histogram = histogram;
    r.samples_unknown = parts.iter().any(|p| p.samples_unknown);
    // Signed summaries merge when any part has one; a part without one had
    // no negative value, so its unsigned min/mean/max are its signed ones.
    if parts.iter().any(|p| p.signed.is_some()) {
        r.signed = parts
            .iter()
            .map(|p| {
                p.signed.unwrap_or(SignedStats {
                    samples: p.samples,
                    min_ns: p.min_ns.0 as i64,
                    max_ns: p.max_ns.0 as i64,
                    mean_ns: p.mean_ns,
                    clamped: false,
                })
            })
            .reduce(SignedStats::merge);
    }
    r
}

// ---- small parsing helpers shared by the text formats ----

/// Drop ANSI cursor-movement escapes (`ESC [ 4 A`), which the rt-tests tools
/// print when refreshing their status lines in a terminal.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters, then one final byte in '@'..='~'.
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A non-negative integer field.
pub fn uint(tok: &str, line: usize, what: &str) -> Result<u64, ParseError> {
    let t = tok.trim();
    if t.starts_with('-') && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::at(line, format!("{what}: {t:?} is negative; expected a count or latency ≥ 0")));
    }
    t.parse::<u64>().map_err(|_| {
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            ParseError::at(line, format!("{what}: {t} is too large (more than 64 bits)"))
        } else {
            ParseError::at(line, format!("{what}: expected a non-negative integer, found {t:?}"))
        }
    })
}

/// A signed integer field.
pub fn int(tok: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    let t = tok.trim();
    t.parse::<i64>().map_err(|_| ParseError::at(line, format!("{what}: expected an integer, found {t:?}")))
}

/// `v` µs in ns, refusing values that do not fit.
pub fn us_to_ns(v: u64, line: usize, what: &str) -> Result<u64, ParseError> {
    v.checked_mul(1000).filter(|&n| n <= i64::MAX as u64).ok_or_else(|| ParseError::at(line, format!("{what}: {v} µs is too large")))
}

/// A decimal number of µs ("-1.234", "12", "0.5") as signed ns, exactly for
/// up to 3 decimals (more are rounded half up).
pub fn decimal_us_to_ns(tok: &str, line: usize, what: &str) -> Result<i64, ParseError> {
    let t = tok.trim();
    let bad = || ParseError::at(line, format!("{what}: expected a number of µs like 12.345, found {t:?}"));
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int_part, frac) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    if int_part.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let too_big = || ParseError::at(line, format!("{what}: {t} µs is too large"));
    let i: i64 = if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| too_big())? };
    let mut ns = i.checked_mul(1000).ok_or_else(too_big)?;
    let digits: Vec<i64> = frac.bytes().map(|b| (b - b'0') as i64).collect();
    let mut f = 0i64;
    for k in 0..3 {
        f = f * 10 + digits.get(k).copied().unwrap_or(0);
    }
    if digits.get(3).copied().unwrap_or(0) >= 5 {
        f += 1;
    }
    ns = ns.checked_add(f).ok_or_else(too_big)?;
    Ok(if neg { -ns } else { ns })
}

/// A decimal number (avg columns) as f64, rejecting NaN/inf.
pub fn float(tok: &str, line: usize, what: &str) -> Result<f64, ParseError> {
    let t = tok.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(ParseError::at(line, format!("{what}: expected a number, found {t:?}"))),
    }
}

/// Clamp a signed ns latency to the unsigned schema, remembering the most
/// negative value seen for the fidelity note.
pub fn clamp_negative(v: i64, most_negative: &mut i64) -> u64 {
    if v < 0 {
        *most_negative = (*most_negative).min(v);
        0
    } else {
        v as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_us_is_exact_to_the_ns() {
        assert_eq!(decimal_us_to_ns("1.234", 1, "x").unwrap(), 1234);
        assert_eq!(decimal_us_to_ns("-0.871", 1, "x").unwrap(), -871);
        assert_eq!(decimal_us_to_ns("12", 1, "x").unwrap(), 12000);
        assert_eq!(decimal_us_to_ns("0.5", 1, "x").unwrap(), 500);
        assert_eq!(decimal_us_to_ns("0.0005", 1, "x").unwrap(), 1);
        assert!(decimal_us_to_ns("1.2.3", 1, "x").is_err());
        assert!(decimal_us_to_ns("", 1, "x").is_err());
        assert!(decimal_us_to_ns("99999999999999999999", 1, "x").is_err());
    }

    #[test]
    fn uint_explains_negative_and_huge() {
        assert!(uint("-3", 7, "count").unwrap_err().msg.contains("negative"));
        assert!(uint("99999999999999999999999", 7, "count").unwrap_err().msg.contains("too large"));
        assert_eq!(uint(" 42 ", 7, "count").unwrap(), 42);
    }

    #[test]
    fn overlapping_buckets_fuse_and_keep_counts() {
        let b = |lo, hi, count| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count };
        let out = normalise_buckets(vec![b(3000, 3999, 5), b(100_000, 200_000, 2), b(100_000, 150_000, 1), b(0, 999, 0)]);
        assert_eq!(out, vec![b(3000, 3999, 5), b(100_000, 200_000, 3)]);
    }

    #[test]
    fn percentiles_take_the_top_of_the_rank_bucket() {
        let b = |lo, hi, count| Bucket { lo_ns: Nanos(lo), hi_ns: Nanos(hi), count };
        // 90 samples in [1000,1999], 10 in [5000,5999]; max 5500.
        let p = percentiles(&[b(1000, 1999, 90), b(5000, 5999, 10)], 100, 1200, 5500);
        assert_eq!(p["50"], Nanos(1999));
        assert_eq!(p["90"], Nanos(1999));
        assert_eq!(p["99"], Nanos(5500)); // clamped to max
    }

    #[test]
    fn summary_only_series_have_no_known_distribution() {
        let s = Series { probe: "sem".into(), samples: 10, min_ns: 3000, max_ns: 9000, mean_ns: Some(4000.0), ..Series::default() };
        let r = finish_series(&s, "sem", "idle").unwrap();
        assert!(!r.distribution_known());
        assert!(r.percentiles_ns.is_empty());
        assert_eq!(r.histogram, vec![Bucket { lo_ns: Nanos(3000), hi_ns: Nanos(9000), count: 10 }]);
        let b = Bucket { lo_ns: Nanos(3000), hi_ns: Nanos(3999), count: 10 };
        let h = Series { buckets: vec![b], max_ns: 3500, ..s };
        let r = finish_series(&h, "sem", "idle").unwrap();
        assert!(r.distribution_known());
        assert_eq!(r.percentiles_ns["50"], Nanos(3500), "top of the bucket, clamped to the max");
    }

    #[test]
    fn counts_that_disagree_with_samples_are_refused() {
        let b = Bucket { lo_ns: Nanos(0), hi_ns: Nanos(999), count: 9 };
        let s = Series { probe: "t".into(), samples: 10, min_ns: 0, max_ns: 999, buckets: vec![b], ..Series::default() };
        assert!(finish_series(&s, "t", "idle").unwrap_err().msg.contains("sum to 9"));
    }

    #[test]
    fn a_huge_histogram_is_folded_without_losing_a_sample() {
        let mut h = Hist::new();
        // 1 µs rows up to 100 ms: 100 000 rows, 1 sample each.
        for us in 0..100_000u64 {
            h.add(us * 1000, us * 1000 + 999, 1);
        }
        assert!(h.folded());
        assert_eq!(h.total(), Some(100_000));
        let b = h.into_buckets();
        assert!(b.len() < 25_000, "{} buckets", b.len());
        assert_eq!(b.iter().map(|x| x.count).sum::<u64>(), 100_000);
        for x in &b {
            let width = x.hi_ns.0 - x.lo_ns.0 + 1;
            assert!(width == 1000 || width <= x.lo_ns.0 / 1024, "[{}, {}]", x.lo_ns.0, x.hi_ns.0);
        }
        assert!(b.windows(2).all(|w| w[0].hi_ns < w[1].lo_ns), "disjoint and ascending");
        // Below ~1 ms the 1 µs rows stay as they are.
        assert_eq!((b[3].lo_ns.0, b[3].hi_ns.0), (3000, 3999));
    }

    #[test]
    fn long_per_second_series_are_bounded() {
        let mut s = Seconds::new(1);
        for k in 0..250_000u64 {
            s.push(1000, k, k as f64, k + 10);
        }
        assert_eq!(s.entries(), 250_000);
        let (slots, width) = s.finish();
        assert_eq!(width, 4);
        assert!(slots.len() <= Seconds::MAX_SLOTS);
        assert_eq!(slots.iter().map(|x| x.count).sum::<u64>(), 250_000 * 1000);
        assert_eq!((slots[1].t_s, slots[1].min_ns.0, slots[1].max_ns.0), (4, 4, 17));
        assert!((slots[1].mean_ns - 5.5).abs() < 1e-9);
    }

    #[test]
    fn ansi_escapes_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[4A#0: ID1"), "#0: ID1");
    }
}
