//! A run's JSON text as the history keeps it: in parts of at most
//! [`PART_BYTES`] (table `run_json`, migration 4), written as the text is
//! produced and read back in order, so saving never holds the text whole.
//!
//! Why parts: a wide import (31 000 threads, each with its histogram and
//! percentiles) gives a JSON text ten times its input; built as one string,
//! then bound and copied into one SQLite record, a 50 MB input cost 1.7 GB,
//! and past SQLite's 1 GB value limit it failed with "string or blob too
//! big". Parts are plain rows on both backends (SQLite, PostgreSQL), split
//! on UTF-8 character boundaries so each is valid TEXT, and the text's
//! SHA-256 (`runs.file_sha256`) is computed as the parts go by.
//!
//! A run can also come entry by entry ([`Saving::entries`]): its text is
//! then the header's pretty JSON with each entry written into `results` as
//! it is built (the same bytes as the whole run's pretty JSON), and each
//! entry goes to the sink's rows before the next is built, so saving an
//! import of 1.5 M entries holds one entry, not 1.5 M.

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::model::{ProbeResult, Run};

/// The largest part, in bytes.
pub(crate) const PART_BYTES: usize = 1 << 20;

/// One run to save: the run, the text to keep for it, its source label.
pub(crate) struct Saving<'a> {
    pub(crate) run: std::borrow::Cow<'a, Run>,
    /// These exact bytes (a native run: its result file, so `export` gives
    /// it back byte for byte); `None`: the run's pretty JSON and a newline,
    /// the text `import --dry-run` prints, written as it is stored.
    pub(crate) text: Option<std::borrow::Cow<'a, str>>,
    /// "native", "rtscope-agent" or the importer format.
    pub(crate) source: String,
    /// When set, the run's entries, built one at a time (`run.results` is
    /// then empty and `text` `None`).
    pub(crate) entries: Option<Entries<'a>>,
    /// With `entries`: the text is this file's exact bytes (a native run
    /// read entry by entry from its result file), copied part by part.
    pub(crate) text_file: Option<std::path::PathBuf>,
}

/// A run's entries in order, each built when asked for.
pub(crate) type Entries<'a> = Box<dyn Iterator<Item = anyhow::Result<ProbeResult>> + 'a>;

/// Runs to save, produced one at a time (a failure stops the save and
/// nothing is stored).
pub(crate) type Runs<'a, 'b> = &'b mut dyn Iterator<Item = anyhow::Result<Saving<'a>>>;

/// Where a run goes as it is written: its text part by part (numbered
/// from 0), each entry (numbered from 0) with its rows.
pub(crate) trait Sink {
    fn part(&mut self, seq: i64, text: &str) -> anyhow::Result<()>;
    fn entry(&mut self, idx: usize, r: &ProbeResult) -> anyhow::Result<()>;
}

/// What [`write_run`] learnt on the way: the text's SHA-256 (lowercase
/// hex) and the largest `max_ns` of the entries (`runs.max_ns`).
pub(crate) struct Written {
    pub(crate) sha256: String,
    pub(crate) max_ns: u64,
}

/// A [`Write`] that hands `sink` each full part (numbered from 0) and
/// hashes everything written; [`Parts::entry`] hands it each entry.
struct Parts<'s> {
    buf: Vec<u8>,
    seq: i64,
    sha: Sha256,
    sink: &'s mut dyn Sink,
    /// The sink's error, kept whole (io::Error would lose its kind).
    failed: Option<anyhow::Error>,
    /// The largest `max_ns` of the entries handed so far.
    max_ns: u64,
}

impl Parts<'_> {
    /// Entry `idx` to the sink, its max taken into the run's.
    fn entry(&mut self, idx: usize, r: &ProbeResult) -> anyhow::Result<()> {
        self.max_ns = self.max_ns.max(r.max_ns.0);
        self.sink.entry(idx, r)
    }

    /// Hand the sink the longest whole-character prefix of the buffer
    /// (all of it when `all`); keep the rest.
    fn flush_part(&mut self, all: bool) -> std::io::Result<()> {
        let end = if all { self.buf.len() } else { char_boundary(&self.buf, PART_BYTES.min(self.buf.len())) };
        if end == 0 {
            return Ok(());
        }
        let text = std::str::from_utf8(&self.buf[..end]).map_err(std::io::Error::other)?;
        if let Err(e) = self.sink.part(self.seq, text) {
            self.failed = Some(e);
            return Err(std::io::Error::other("the history database refused a part"));
        }
        self.seq += 1;
        self.buf.drain(..end);
        Ok(())
    }
}

impl Write for Parts<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.sha.update(data);
        self.buf.extend_from_slice(data);
        while self.buf.len() >= PART_BYTES {
            self.flush_part(false)?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The end of the last whole UTF-8 character at or before `at`.
fn char_boundary(b: &[u8], mut at: usize) -> usize {
    // A continuation byte (10xxxxxx) is inside a character.
    while at > 0 && at < b.len() && (b[at] & 0xC0) == 0x80 {
        at -= 1;
    }
    at
}

/// Write `s` to `sink`: its text (see [`Saving::text`]) part by part and
/// its entries, in order (entry by entry when [`Saving::entries`] is set).
pub(crate) fn write_run(s: &mut Saving<'_>, sink: &mut dyn Sink) -> anyhow::Result<Written> {
    let mut w = Parts { buf: Vec::with_capacity(PART_BYTES + 4096), seq: 0, sha: Sha256::new(), sink, failed: None, max_ns: 0 };
    let written = match (&s.text, s.entries.take()) {
        (_, Some(entries)) => match &s.text_file {
            Some(file) => copy_file(&mut w, file).and_then(|_| {
                for (idx, r) in entries.enumerate() {
                    w.entry(idx, &r?)?;
                }
                Ok(())
            }),
            None => write_streamed(&mut w, s.run.as_ref(), entries),
        },
        (text, None) => {
            let written = match text {
                Some(t) => w.write_all(t.as_bytes()).map_err(anyhow::Error::from),
                None => write_pretty(&mut w, s.run.as_ref()).and_then(|_| Ok(w.write_all(b"\n")?)),
            };
            written.and_then(|_| {
                for (idx, r) in s.run.results.iter().enumerate() {
                    w.entry(idx, r)?;
                }
                Ok(())
            })
        }
    };
    let written = written.and_then(|_| Ok(w.flush_part(true)?));
    if let Some(e) = w.failed.take() {
        return Err(e);
    }
    written?;
    Ok(Written { sha256: w.sha.finalize().iter().map(|b| format!("{b:02x}")).collect(), max_ns: w.max_ns })
}

/// `file`'s bytes into the parts (read again: not held).
fn copy_file(w: &mut Parts<'_>, file: &std::path::Path) -> anyhow::Result<()> {
    let f = std::fs::File::open(file).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", file.display()))?;
    std::io::copy(&mut std::io::BufReader::with_capacity(1 << 20, f), w)?;
    Ok(())
}

fn write_pretty(w: &mut impl Write, v: &impl serde::Serialize) -> anyhow::Result<()> {
    serde_json::to_writer_pretty(w, v).map_err(|e| anyhow::anyhow!("cannot serialise the run: {e}"))
}

/// Where `results` is in a run's pretty JSON: a top-level key is the only
/// line indented by two spaces (strings hold no raw newline).
const RESULTS_EMPTY: &str = "\n  \"results\": []";

/// The pretty JSON of `header` (results empty) with `entries` written into
/// `results` one by one, as serde_json's pretty printer writes them at that
/// depth: each element on a new line indented four spaces, its own lines
/// four spaces deeper, commas between, the closing bracket at two.
fn write_streamed(w: &mut Parts<'_>, header: &Run, entries: Entries<'_>) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(header).map_err(|e| anyhow::anyhow!("cannot serialise the run: {e}"))?;
    let at = text.find(RESULTS_EMPTY).ok_or_else(|| anyhow::anyhow!("the run's JSON has no results list"))? + RESULTS_EMPTY.len() - 1;
    w.write_all(&text.as_bytes()[..at])?;
    let mut ind = Indent { w, buf: Vec::with_capacity(PIECE + 4096) };
    let mut n = 0;
    for r in entries {
        let r = r?;
        ind.buf.extend_from_slice(if n == 0 { b"\n    " } else { b",\n    " });
        write_pretty(&mut ind, &r)?;
        ind.w.entry(n, &r)?;
        n += 1;
    }
    ind.flush()?;
    let w = ind.w;
    if n > 0 {
        w.write_all(b"\n  ")?;
    }
    w.write_all(&text.as_bytes()[at..])?;
    w.write_all(b"\n")?;
    Ok(())
}

/// A [`Write`] that indents every line after the first by four spaces
/// (an entry of `results` at its depth), gathering the text into pieces of
/// about [`PIECE`] before it goes on: a log of 1.5 M pairs is
/// 1.5 M entries of many small writes, each piece hashed and stored once;
/// an entry of long per-second series is not held whole.
struct Indent<'w, W: Write> {
    w: &'w mut W,
    buf: Vec<u8>,
}

/// What [`Indent`] gathers before writing it on.
const PIECE: usize = 64 << 10;

impl<W: Write> Write for Indent<'_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        for (k, line) in data.split(|&b| b == b'\n').enumerate() {
            if k > 0 {
                self.buf.extend_from_slice(b"\n    ");
            }
            self.buf.extend_from_slice(line);
        }
        if self.buf.len() >= PIECE {
            self.flush()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

/// The text of parts read in order.
pub(crate) fn join(parts: impl Iterator<Item = anyhow::Result<String>>) -> anyhow::Result<String> {
    let mut out = String::new();
    for p in parts {
        out.push_str(&p?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts and the entries' indexes and maxima, as written.
    #[derive(Default)]
    struct Got {
        parts: Vec<String>,
        entries: Vec<(usize, u64)>,
    }

    impl Sink for Got {
        fn part(&mut self, seq: i64, text: &str) -> anyhow::Result<()> {
            assert_eq!(seq as usize, self.parts.len());
            self.parts.push(text.to_string());
            Ok(())
        }
        fn entry(&mut self, idx: usize, r: &ProbeResult) -> anyhow::Result<()> {
            self.entries.push((idx, r.max_ns.0));
            Ok(())
        }
    }

    fn golden() -> Run {
        serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap()
    }

    fn write(mut s: Saving<'_>) -> (Got, Written) {
        let mut got = Got::default();
        let w = write_run(&mut s, &mut got).unwrap();
        (got, w)
    }

    fn parts_of(text: &str) -> (Vec<String>, String) {
        let s = Saving { run: std::borrow::Cow::Owned(golden()), text: Some(text.into()), source: "native".into(), entries: None, text_file: None };
        let (got, w) = write(s);
        (got.parts, w.sha256)
    }

    #[test]
    fn parts_split_on_characters_and_join_to_the_text() {
        // 'é' is two bytes: a part boundary falls inside one of them.
        let text: String = "é".repeat(PART_BYTES) + "x";
        let (parts, sha) = parts_of(&text);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.len() <= PART_BYTES));
        assert_eq!(join(parts.into_iter().map(Ok)).unwrap(), text);
        assert_eq!(sha, crate::store::sha256_hex(text.as_bytes()));
    }

    #[test]
    fn a_rendered_run_is_its_pretty_json_and_a_newline() {
        let run = golden();
        let want = serde_json::to_string_pretty(&run).unwrap() + "\n";
        let s = Saving { run: std::borrow::Cow::Borrowed(&run), text: None, source: "x".into(), entries: None, text_file: None };
        let (got, w) = write(s);
        assert_eq!(got.parts.concat(), want);
        assert_eq!(w.sha256, crate::store::sha256_hex(want.as_bytes()));
        assert_eq!(got.entries.len(), run.results.len(), "every entry reaches the sink");
        assert!(parts_of("").0.is_empty(), "no text, no part");
    }

    #[test]
    fn a_run_written_entry_by_entry_is_the_same_text() {
        for n in [0, 1, 2, usize::MAX] {
            let mut run = golden();
            run.results.truncate(n.min(run.results.len()));
            let want = serde_json::to_string_pretty(&run).unwrap() + "\n";
            let entries: Vec<ProbeResult> = std::mem::take(&mut run.results);
            let maxima: Vec<(usize, u64)> = entries.iter().enumerate().map(|(i, r)| (i, r.max_ns.0)).collect();
            let s = Saving {
                run: std::borrow::Cow::Owned(run),
                text: None,
                source: "x".into(),
                entries: Some(Box::new(entries.into_iter().map(Ok))),
                text_file: None,
            };
            let (got, w) = write(s);
            assert_eq!(got.parts.concat(), want, "{n} entries");
            assert_eq!(got.entries, maxima);
            assert_eq!(w.max_ns, maxima.iter().map(|m| m.1).max().unwrap_or(0));
        }
    }
}
