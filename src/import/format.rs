//! The format registry: every format rtscope imports is one [`Spec`] that
//! its own file declares (`pub const FORMAT: Format`): its name, one line
//! about it, how it is recognised by content (its sniffer) and how it is
//! parsed. [`FORMATS`] lists them once, in the order detection tries them;
//! everything else (`--format`'s values, detection, the list in error
//! messages, what `--period` and `--name` apply to) asks the registry.
//!
//! Adding a format = one new file with its `FORMAT` + one line in
//! [`FORMATS`] (+ docs/schema.md and tests/import.rs).
//!
//! Detection looks at a [`Sample`], the opening bytes of a file (or all of
//! it). A JSON object is tried only against the JSON formats, other text
//! only against the text ones; the first whose sniffer says yes wins. A
//! sample cut short can fit nothing yet; then each format's `fallback` is
//! asked, in the same order (a large JSON object is read as an rtscope
//! result, whose reader says clearly if it is not one; cyclictest -h's
//! `# Max Latencies` footer is at the end of the file).

use std::cell::OnceCell;
use std::fmt;
use std::io::BufRead;

use super::build::Parsed;
use super::read::{strip_ansi, Lines, ParseError, ReadSeek};
use super::{bins_csv, cyclictest_hist, cyclictest_json, ipc, oslat_json, rtai, rtla, suites_csv, xenomai};

/// Every format, in the order detection tries them (and error messages
/// list them).
pub const FORMATS: &[Format] = &[
    RTSCOPE,
    cyclictest_json::FORMAT,
    oslat_json::FORMAT,
    rtai::FORMAT,
    xenomai::FORMAT,
    rtla::FORMAT,
    cyclictest_hist::FORMAT,
    ipc::FORMAT,
    bins_csv::FORMAT,
    suites_csv::RHEALSTONE_FORMAT,
    suites_csv::THREAD_METRIC_FORMAT,
];

/// What the command line adds to what a file says.
#[derive(Debug, Clone, Default)]
pub(crate) struct ParseOptions {
    /// `--period`: the measuring period, for sources that do not print it
    /// (RTAI's `display`).
    pub(crate) period_ns: Option<u64>,
}

/// What a parser is given besides the text: the file's name (a hint for
/// formats that do not name their tool), the command line's options and a
/// way to read the input again from its start.
pub(crate) struct Source<'a> {
    pub(crate) file_name: &'a str,
    pub(crate) opts: &'a ParseOptions,
    /// The input again from its first byte, for a format read in two
    /// passes (a first that counts or remembers offsets, a second that
    /// builds entry by entry). A parser that uses it must check that the
    /// second read sees what the first one saw (a file rewritten in
    /// between is an error, never a mix of two versions: [`super::read::Reread`]).
    pub(crate) reopen: &'a Reopen,
}

/// Opens the input again from its start (see [`Source::reopen`]); shared,
/// so a parser can keep it to build its entries when they are asked for,
/// and `Send`, so that a reading can run on a thread of its own.
pub(crate) type Reopen = std::rc::Rc<dyn Fn() -> std::io::Result<Box<dyn ReadSeek + Send>>>;

/// The input's lines; a format read by a parser of its own (JSON, CSV) takes
/// [`Lines::reader`].
pub(crate) type Input<'a> = Lines<&'a mut dyn BufRead>;

/// A parser: the input into one [`Parsed`] per system.
pub(crate) type ParseFn = fn(&mut Input<'_>, &Source<'_>) -> Result<Systems, ParseError>;

/// What a parser gives: one [`Parsed`] per system, held, or built when asked
/// for from what the parser kept of the file ([`Columns`]: a CSV of 100 000
/// columns keeps a few numbers per column, not 100 000 runs' series).
pub(crate) enum Systems {
    Held(Vec<Parsed>),
    Columns(Box<dyn Columns>),
}

/// Systems built when asked for, each the same every time it is asked.
pub(crate) trait Columns {
    fn len(&self) -> usize;
    /// The name of system `i` (< `len()`).
    fn system(&self, i: usize) -> &str;
    /// System `i` (< `len()`).
    fn parsed(&self, i: usize) -> Parsed;
}

impl From<Vec<Parsed>> for Systems {
    fn from(v: Vec<Parsed>) -> Systems {
        Systems::Held(v)
    }
}

impl Systems {
    /// A file of one system.
    pub(crate) fn one(p: Parsed) -> Systems {
        Systems::Held(vec![p])
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            Systems::Held(v) => v.len(),
            Systems::Columns(c) => c.len(),
        }
    }
    /// The systems' names, in order (a system without one is left out).
    pub(crate) fn names(&self) -> Vec<String> {
        match self {
            Systems::Held(v) => v.iter().filter_map(|p| p.system.clone()).collect(),
            Systems::Columns(c) => (0..c.len()).map(|i| c.system(i).to_string()).collect(),
        }
    }
    /// Only the system named `name` (`None`: no such system).
    pub(crate) fn pick(self, name: &str) -> Option<Systems> {
        match self {
            Systems::Held(mut v) => {
                v.retain(|p| p.system.as_deref() == Some(name));
                (!v.is_empty()).then_some(Systems::Held(v))
            }
            Systems::Columns(c) => (0..c.len()).find(|&i| c.system(i) == name).map(|i| Systems::one(c.parsed(i))),
        }
    }
    /// System `i` (< `len()`), borrowed when held.
    pub(crate) fn get(&self, i: usize) -> std::borrow::Cow<'_, Parsed> {
        match self {
            Systems::Held(v) => std::borrow::Cow::Borrowed(&v[i]),
            Systems::Columns(c) => std::borrow::Cow::Owned(c.parsed(i)),
        }
    }
    /// The systems in order, each built as it is taken.
    pub(crate) fn into_iter(self) -> Box<dyn Iterator<Item = Parsed>> {
        match self {
            Systems::Held(v) => Box::new(v.into_iter()),
            Systems::Columns(c) => Box::new((0..c.len()).map(move |i| c.parsed(i))),
        }
    }
    /// Every system, built (tests and small inputs).
    pub(crate) fn into_vec(self) -> Vec<Parsed> {
        self.into_iter().collect()
    }
}

/// One format's facts, said once in its own file.
pub(crate) struct Spec {
    /// The name `--format` takes and `imported_from.format` records.
    pub(crate) name: &'static str,
    /// One line for `rtscope import --help`.
    pub(crate) about: &'static str,
    /// Recognised among JSON objects (else among text files).
    pub(crate) json: bool,
    /// True when the sample is this format.
    pub(crate) sniff: fn(&Sample<'_>) -> bool,
    /// Asked of a sample cut short when no sniffer said yes.
    pub(crate) fallback: fn(&Sample<'_>) -> bool,
    /// `None`: the file is a result already and is stored as it is.
    pub(crate) parse: Option<ParseFn>,
    /// One column per system: each column becomes a run, `--name` picks one.
    pub(crate) per_column: bool,
    /// `--period` applies (the format does not print its period).
    pub(crate) takes_period: bool,
    /// Each row is filed under the probe that measures it: `--probe` does not apply.
    pub(crate) probe_per_row: bool,
}

impl Spec {
    /// A text format with a sniffer and a parser; the rest off.
    pub(crate) const fn text(name: &'static str, about: &'static str, sniff: fn(&Sample<'_>) -> bool, parse: ParseFn) -> Spec {
        Spec { name, about, json: false, sniff, fallback: never, parse: Some(parse), per_column: false, takes_period: false, probe_per_row: false }
    }
}

/// The sniffer of nothing.
pub(crate) fn never(_: &Sample<'_>) -> bool {
    false
}

/// A format of the registry (compared by name).
#[derive(Clone, Copy)]
pub struct Format(pub(crate) &'static Spec);

impl Format {
    pub(crate) fn name(self) -> &'static str {
        self.0.name
    }
    pub(crate) fn about(self) -> &'static str {
        self.0.about
    }
    /// Formats with one column per system: each column becomes a run and
    /// `--name` selects one of them.
    pub(crate) fn per_column(self) -> bool {
        self.0.per_column
    }
    /// An rtscope result: stored as it is, not parsed.
    pub fn stored_as_is(self) -> bool {
        self.0.parse.is_none()
    }
    /// The format named `name` (`--format`'s value).
    pub(crate) fn named(name: &str) -> Option<Format> {
        FORMATS.iter().copied().find(|f| f.name() == name)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.0.name == other.0.name
    }
}
impl Eq for Format {}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Format({})", self.name())
    }
}

/// The formats `--period` applies to.
pub(crate) fn takes_period(format: Format) -> bool {
    format.0.takes_period
}

/// `--probe` does not apply: each row is filed under its own probe.
pub(crate) fn probe_per_row(format: Format) -> bool {
    format.0.probe_per_row
}

/// The names of all formats, for error messages.
pub(crate) fn format_list() -> String {
    FORMATS.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

/// What detection looks at: a file's text after any byte-order mark and
/// leading white space, whether it is the whole file, and (parsed once, on
/// demand) the JSON value of a whole JSON file.
pub(crate) struct Sample<'a> {
    text: &'a str,
    complete: bool,
    json: OnceCell<Option<serde_json::Value>>,
}

impl<'a> Sample<'a> {
    pub(crate) fn new(text: &'a str, complete: bool) -> Sample<'a> {
        Sample { text: text.trim_start_matches('\u{feff}').trim_start(), complete, json: OnceCell::new() }
    }
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }
    /// The sample is the whole file.
    pub(crate) fn complete(&self) -> bool {
        self.complete
    }
    pub(crate) fn is_json(&self) -> bool {
        self.text.starts_with('{')
    }
    /// The whole file as JSON (`None` when cut short or not valid JSON).
    pub(crate) fn json(&self) -> Option<&serde_json::Value> {
        if !self.complete {
            return None;
        }
        self.json.get_or_init(|| serde_json::from_str(self.text).ok()).as_ref()
    }
    /// The tool an rt-tests JSON file names in `"cmdline:"`: from the
    /// parsed file, or from its opening bytes when it is cut short.
    pub(crate) fn json_tool(&self) -> Option<String> {
        if self.complete {
            cyclictest_json::tool_of(self.json()?)
        } else {
            cyclictest_json::tool_in_prefix(self.text)
        }
    }
    /// The lines, right-trimmed and without ANSI escapes.
    pub(crate) fn lines(&self) -> impl Iterator<Item = String> + 'a {
        self.text.lines().map(|l| strip_ansi(l.trim_end()).into_owned())
    }
    /// The first cell of the first line that is neither blank nor a `#`
    /// comment (a CSV header).
    pub(crate) fn first_cell(&self) -> String {
        let head = self.lines().map(|l| l.trim().to_string()).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap_or_default();
        head.split(',').next().unwrap_or("").trim().to_string()
    }
}

/// An rtscope result file: schema v1 JSON, stored as it is.
pub(crate) const RTSCOPE: Format = Format(&Spec {
    name: "rtscope",
    about: "An rtscope result file (schema v1 JSON), stored as is",
    json: true,
    sniff: |s| s.json().is_some_and(|v| v.get("schema_version").is_some() && v.get("results").is_some()),
    // Not an rt-tests "cmdline:" (the second key they write; an rtscope
    // result has a `host.cmdline` of the kernel): a large JSON object is
    // read as an rtscope result, whose reader says clearly if it is not one.
    fallback: |s| !s.complete(),
    parse: None,
    per_column: false,
    takes_period: false,
    probe_per_row: false,
});

fn detect_in(s: &Sample<'_>) -> Option<Format> {
    let candidates = || FORMATS.iter().copied().filter(|f| f.0.json == s.is_json());
    candidates().find(|f| (f.0.sniff)(s)).or_else(|| if s.complete() { None } else { candidates().find(|f| (f.0.fallback)(s)) })
}

/// Recognise a file's format from its text; `None` if nothing fits.
pub fn detect(text: &str) -> Option<Format> {
    detect_in(&Sample::new(text, true))
}

/// [`detect`] from the opening bytes of a file (`complete`: they are the
/// whole file). A JSON file cut short cannot be parsed to look at it, so
/// its kind comes from its keys: the tool of `"cmdline:"` for rt-tests,
/// else an rtscope result.
pub fn detect_head(head: &str, complete: bool) -> Option<Format> {
    detect_in(&Sample::new(head, complete))
}

/// Parse `text` as `format` into one [`Parsed`] per system.
/// `file_name` is a hint for formats that do not name their tool.
pub fn parse(format: Format, text: &str, file_name: &str) -> Result<Vec<Parsed>, ParseError> {
    // A text in memory is read again from a copy (tests and small inputs).
    let copy: std::sync::Arc<[u8]> = text.as_bytes().into();
    let reopen: Reopen = std::rc::Rc::new(move || -> std::io::Result<Box<dyn ReadSeek + Send>> { Ok(Box::new(std::io::Cursor::new(copy.clone()))) });
    parse_reader_with(format, text.as_bytes(), file_name, &ParseOptions::default(), &reopen).map(Systems::into_vec)
}

/// [`parse`] reading from `r` as it goes, with the command line's
/// [`ParseOptions`]: memory stays bounded whatever the input's size (lines
/// are read one at a time; histograms of more than [`super::Hist::RAW_LIMIT`]
/// buckets are kept at 3 significant digits, JSON histograms are folded in
/// while the file is read). `reopen` reads the same input again from its
/// start ([`Source::reopen`]).
pub(crate) fn parse_reader_with(format: Format, mut r: impl BufRead, file_name: &str, opts: &ParseOptions, reopen: &Reopen) -> Result<Systems, ParseError> {
    let parse = format.0.parse.ok_or_else(|| ParseError::file("internal: parse() takes a concrete foreign format"))?;
    let mut lines: Input<'_> = Lines::new(&mut r as &mut dyn BufRead);
    parse(&mut lines, &Source { file_name, opts, reopen })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_a_distinct_name_and_is_found_by_it() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(Format::named(f.name()), Some(*f));
            assert!(FORMATS[..i].iter().all(|g| g.name() != f.name()), "{} twice", f.name());
            assert!(!f.about().is_empty());
        }
        assert_eq!(Format::named("auto"), None, "auto is the face's word for detection, not a format");
    }

    #[test]
    fn a_json_object_is_never_taken_for_a_text_format() {
        // Text opening like JSON, holding a line the RTAI sniffer would take.
        let text = "{\"x\": 1}\nRTH|  ovl m";
        assert_eq!(detect(text), None);
        assert_eq!(detect_head(text, false), Some(RTSCOPE), "cut short: read as an rtscope result");
    }
}
