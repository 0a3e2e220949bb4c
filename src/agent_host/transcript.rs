//! `--target-transcript FILE`: every byte of a session, both ways,
//! timestamped, for `agent/check_output.py` and bug reports (issue 64:
//! docs/porting.md said "check the invariants on a saved transcript", and
//! the only way to save one was `exec:'… | tee FILE'`).
//!
//! The file is a header line, then one record per line of the stream:
//!
//! ```text
//! # rtscope 0.1.0 transcript of exec:./rtscope-agent, started 2026-11-28T14:00:00Z; ...
//! 0.004121 < RTS1 hello proto=1 ... *1c2d3e4f
//! 0.012007 > RTS1 plan id=1 probe=timer ... *0a1b2c3d
//! ```
//!
//! seconds since the link opened (when the line's first byte arrived or
//! was sent), `<` from the target or `>` to it, then the line's bytes as
//! they went (a `\r`, console noise, an over-long line: all of it, with its
//! `\n`). A line of the target's that a line of the host's interrupted
//! goes on in a record `<+`; `#` lines say what happened to the stream
//! (its end mid-line, a read error). `agent/check_output.py` reads the `<`
//! records.
//!
//! The bytes go to an unnamed temporary file while the session runs (a
//! killed rtscope leaves nothing behind) and are written to FILE when the
//! link closes, on every path — an error is when a transcript is wanted —
//! by the rule of every output ([`crate::store::json::write_output`]: a
//! file replaced atomically, a device or FIFO written through); FILE is
//! checked before the target is started ([`crate::store::json::check_output`]:
//! exit 2).

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::BadInput;

/// A session's transcript; clones write to the same file (the link's
/// reader thread the bytes in, the session the lines out).
#[derive(Clone)]
pub(crate) struct Transcript {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    file: Option<std::io::BufWriter<std::fs::File>>,
    start: Instant,
    /// Inside a record of the target's (no `\n` yet).
    open: bool,
    /// The target's next bytes go on a record a host line cut (`<+`).
    cut: bool,
    /// Where it goes at the end.
    dest: PathBuf,
    /// The first write that failed (the rest are dropped; said at the end).
    failed: Option<String>,
}

impl Transcript {
    /// A transcript of the session with `target` that goes to `dest`:
    /// checked now (exit 2 naming the flag), written at [`Transcript::finish`].
    pub(crate) fn create(dest: &Path, target: &str) -> Result<Transcript, BadInput> {
        let flag = "--target-transcript";
        crate::store::json::check_output(dest).map_err(|e| BadInput(format!("{flag} {}", e.0)))?;
        let file = tempfile::tempfile().map_err(|e| BadInput(format!("{flag}: cannot create a temporary file for the transcript: {e}")))?;
        let mut w = std::io::BufWriter::new(file);
        let started = crate::units::rfc3339(time::OffsetDateTime::now_utc());
        let header = format!(
            "# rtscope {} transcript of {}, started {started}; each line: seconds since then, < from the target (<+ going on) or > to it, the bytes as they went\n",
            env!("CARGO_PKG_VERSION"),
            target.replace('\n', " ")
        );
        w.write_all(header.as_bytes()).map_err(|e| BadInput(format!("{flag}: writing the transcript: {e}")))?;
        let inner = Inner { file: Some(w), start: Instant::now(), open: false, cut: false, dest: dest.to_path_buf(), failed: None };
        Ok(Transcript { inner: Arc::new(Mutex::new(inner)) })
    }

    /// Bytes read from the target, as they came.
    pub(crate) fn received(&self, bytes: &[u8]) {
        let Ok(mut t) = self.inner.lock() else { return };
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if !t.open {
                let mark = if std::mem::take(&mut t.cut) { "<+" } else { "<" };
                let at = t.stamp();
                t.write(format!("{at} {mark} ").as_bytes());
            }
            t.write(piece);
            t.open = !piece.ends_with(b"\n");
        }
        t.flush();
    }

    /// One line sent to the target (without its `\n`).
    pub(crate) fn sent(&self, line: &str) {
        let Ok(mut t) = self.inner.lock() else { return };
        t.close_open(true);
        let at = t.stamp();
        t.write(format!("{at} > {line}\n").as_bytes());
        t.flush();
    }

    /// What happened to the stream (`end of stream`, a read error).
    pub(crate) fn note(&self, what: &str) {
        let Ok(mut t) = self.inner.lock() else { return };
        t.close_open(false);
        let at = t.stamp();
        t.write(format!("# {at} {}\n", what.replace('\n', " ")).as_bytes());
        t.flush();
    }

    /// Write the transcript to its file (once: later calls, and bytes
    /// after it, do nothing). A failure is said on stderr: the run itself
    /// is not the transcript's to fail.
    pub(crate) fn finish(&self) {
        let Ok(mut t) = self.inner.lock() else { return };
        let Some(w) = t.file.take() else { return };
        let dest = t.dest.clone();
        let written = w.into_inner().map_err(|e| anyhow::anyhow!("{}", e.error())).and_then(|mut f| {
            f.rewind()?;
            crate::store::json::write_output(&dest, |out| {
                std::io::copy(&mut f, out)?;
                Ok(())
            })
        });
        let failed = t.failed.take().map(|e| format!(" (it is incomplete: {e})")).unwrap_or_default();
        if let Err(e) = written {
            eprintln!("warning: could not write the target transcript to {} ({e:#})", dest.display());
        } else if !failed.is_empty() {
            eprintln!("warning: the target transcript in {}{failed}", dest.display());
        }
    }
}

impl Inner {
    fn stamp(&self) -> String {
        format!("{:.6}", self.start.elapsed().as_secs_f64())
    }

    /// End a record of the target's that has no `\n` yet; `cut`: it goes
    /// on after this (a host line), else it ended there.
    fn close_open(&mut self, cut: bool) {
        if self.open {
            self.write(b"\n");
            self.open = false;
            self.cut = cut;
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(w) = self.file.as_mut() {
            if let Err(e) = w.write_all(bytes) {
                self.failed.get_or_insert(e.to_string());
            }
        }
    }

    fn flush(&mut self) {
        if let Some(w) = self.file.as_mut() {
            if let Err(e) = w.flush() {
                self.failed.get_or_insert(e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_both_ways_with_cut_lines_and_notes() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("t.txt");
        let t = Transcript::create(&dest, "exec:./agent").unwrap();
        t.received(b"RTS1 hello x\nboot\r\nRTS1 pro");
        t.sent("RTS1 plan id=1");
        t.received(b"be name=timer\n\xff raw");
        t.note("end of stream");
        t.finish();
        t.received(b"after the end\n");
        let text = std::fs::read(&dest).unwrap();
        let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        assert!(lines[0].starts_with(b"# rtscope ") && lines[0].windows(12).any(|w| w == b"exec:./agent"));
        let body: Vec<Vec<u8>> = lines[1..].iter().map(|l| l.splitn(2, |b| *b == b' ').nth(1).unwrap_or(b"").to_vec()).collect();
        assert_eq!(body[0], b"< RTS1 hello x");
        assert_eq!(body[1], b"< boot\r");
        assert_eq!(body[2], b"< RTS1 pro");
        assert_eq!(body[3], b"> RTS1 plan id=1");
        assert_eq!(body[4], b"<+ be name=timer");
        assert_eq!(body[5], b"< \xff raw");
        assert!(lines[7].starts_with(b"# ") && lines[7].ends_with(b" end of stream"), "{:?}", String::from_utf8_lossy(lines[7]));
        assert!(!text.windows(13).any(|w| w == b"after the end"));
        // A directory is refused before anything starts.
        let Err(e) = Transcript::create(dir.path(), "exec:x") else { panic!("a directory taken as a transcript") };
        assert!(e.0.starts_with("--target-transcript "), "{}", e.0);
    }
}
