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

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::model::Run;

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
}

/// Runs to save, produced one at a time (a failure stops the save and
/// nothing is stored).
pub(crate) type Runs<'a, 'b> = &'b mut dyn Iterator<Item = anyhow::Result<Saving<'a>>>;

/// A [`Write`] that hands `sink` each full part (numbered from 0) and
/// hashes everything written.
struct Parts<'s> {
    buf: Vec<u8>,
    seq: i64,
    sha: Sha256,
    sink: &'s mut dyn FnMut(i64, &str) -> anyhow::Result<()>,
    /// The sink's error, kept whole (io::Error would lose its kind).
    failed: Option<anyhow::Error>,
}

impl Parts<'_> {
    /// Hand the sink the longest whole-character prefix of the buffer
    /// (all of it when `all`); keep the rest.
    fn flush_part(&mut self, all: bool) -> std::io::Result<()> {
        let end = if all { self.buf.len() } else { char_boundary(&self.buf, PART_BYTES.min(self.buf.len())) };
        if end == 0 {
            return Ok(());
        }
        let text = std::str::from_utf8(&self.buf[..end]).map_err(std::io::Error::other)?;
        if let Err(e) = (self.sink)(self.seq, text) {
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

/// Write `s`'s text (see [`Saving::text`]) to `sink` part by part; returns
/// the text's SHA-256 as lowercase hex.
pub(crate) fn write_parts(s: &Saving<'_>, sink: &mut dyn FnMut(i64, &str) -> anyhow::Result<()>) -> anyhow::Result<String> {
    let mut w = Parts { buf: Vec::with_capacity(PART_BYTES + 4096), seq: 0, sha: Sha256::new(), sink, failed: None };
    let written = match &s.text {
        Some(t) => w.write_all(t.as_bytes()),
        None => serde_json::to_writer_pretty(&mut w, s.run.as_ref()).map_err(std::io::Error::other).and_then(|_| w.write_all(b"\n")),
    };
    let written = written.and_then(|_| w.flush_part(true));
    if let Some(e) = w.failed.take() {
        return Err(e);
    }
    written?;
    Ok(w.sha.finalize().iter().map(|b| format!("{b:02x}")).collect())
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

    fn parts_of(text: &str) -> (Vec<String>, String) {
        let run: Run = serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap();
        let s = Saving { run: std::borrow::Cow::Owned(run), text: Some(text.into()), source: "native".into() };
        let mut got = Vec::new();
        let sha = write_parts(&s, &mut |seq, p| {
            assert_eq!(seq as usize, got.len());
            got.push(p.to_string());
            Ok(())
        })
        .unwrap();
        (got, sha)
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
        let run: Run = serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap();
        let want = serde_json::to_string_pretty(&run).unwrap() + "\n";
        let s = Saving { run: std::borrow::Cow::Borrowed(&run), text: None, source: "x".into() };
        let mut got = String::new();
        let sha = write_parts(&s, &mut |_, p| {
            got.push_str(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want);
        assert_eq!(sha, crate::store::sha256_hex(want.as_bytes()));
        assert!(parts_of("").0.is_empty(), "no text, no part");
    }
}
