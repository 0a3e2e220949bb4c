//! Result files: schema v1 JSON (see docs/schema.md), written atomically —
//! a temp file in the target directory, fsynced, then renamed over the
//! target — so a reader never sees a half-written result, and a crash leaves
//! either the previous complete file or the new one. Every output file of
//! every command goes through [`write_output`]: only a regular file (or a
//! symbolic link's regular target) is replaced; a device, FIFO or
//! `/dev/stdout` is written through, never renamed over.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::error::BadInput;
use crate::model::{Run, SCHEMA_VERSION};

/// Write `run` to `path` atomically, creating the parent directory if needed.
/// The JSON is compact (a result is mostly histogram and tail arrays;
/// `jq .` pretty-prints it) and streamed into the file, with no
/// whole-document buffer in memory.
pub fn write_run(path: &Path, run: &Run) -> anyhow::Result<()> {
    write_atomic(path, |w| {
        serde_json::to_writer(&mut *w, run).context("serialising the result")?;
        Ok(())
    })
}

/// The exact bytes [`write_run`] puts in a result file (the same
/// serialiser and the same newline), made from the run in memory: what the
/// end of a run stores in the history, so `rtscope export` gives the file
/// back without reading a path another process may have written since.
pub(crate) fn run_text(run: &Run) -> anyhow::Result<String> {
    let mut text = serde_json::to_string(run).context("serialising the result")?;
    text.push('\n');
    Ok(text)
}

/// Write a file atomically: `fill` writes the content (then a newline)
/// into a temp file beside the target, which is then fsynced and renamed
/// over it. See [`write_output`] for what happens when the path is not a
/// plain file.
pub(crate) fn write_atomic(path: &Path, fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> anyhow::Result<()> {
    write_output(path, |w| {
        fill(w)?;
        w.write_all(b"\n")?;
        Ok(())
    })
}

/// Where an output file's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutputTarget {
    /// A regular file, or nothing yet, at this path (a symbolic link
    /// resolved): written to a temp file beside it and renamed over it.
    Replace(std::path::PathBuf),
    /// Something that is not ours to replace — a device (`/dev/null`), a
    /// FIFO, a terminal, `/dev/stdout` and the other /proc and /dev/fd
    /// links to an open file: opened and written through.
    Through(std::path::PathBuf),
}

/// Links below these name an open file of some process (`/dev/stdout` →
/// `/proc/self/fd/1`): renaming a new file over what they resolve to would
/// not reach the reader that holds the old one open.
fn is_fd_link(p: &Path) -> bool {
    ["/proc/", "/dev/fd/", "/dev/stdout", "/dev/stderr"].iter().any(|pre| p.to_string_lossy().starts_with(pre))
}

/// Decide how `path` is written (see [`OutputTarget`]), without writing:
/// a directory is refused, a symbolic link is followed (its target is
/// replaced, never the link), a dangling link names the file to create.
pub(crate) fn output_target(path: &Path) -> Result<OutputTarget, BadInput> {
    let shown = path.display();
    let mut p = path.to_path_buf();
    // Follow a chain of links by hand only while it dangles; a link that
    // resolves is followed by the kernel (/proc's links are not paths).
    for _ in 0..40 {
        if is_fd_link(&p) {
            return Ok(OutputTarget::Through(p));
        }
        match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => return Err(BadInput(format!("{shown} is a directory; give a file path"))),
            Ok(m) if m.is_file() => {
                let real = std::fs::canonicalize(&p).map_err(|e| BadInput(format!("{shown}: cannot resolve: {e}")))?;
                return Ok(if is_fd_link(&real) { OutputTarget::Through(p) } else { OutputTarget::Replace(real) });
            }
            Ok(_) => return Ok(OutputTarget::Through(p)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read_link(&p) {
                // A dangling link: its target is the file to create.
                Ok(t) => {
                    let base = p.parent().map(Path::to_path_buf).unwrap_or_default();
                    p = if t.is_absolute() { t } else { base.join(t) };
                }
                Err(_) => return Ok(OutputTarget::Replace(p)),
            },
            Err(e) => return Err(BadInput(format!("{shown}: cannot write: {e}"))),
        }
    }
    Err(BadInput(format!("{shown}: too many levels of symbolic links")))
}

/// Open a non-regular output for writing. A FIFO without a reader is
/// refused rather than waited for (opened non-blocking, then set blocking).
fn open_through(p: &Path, shown: &Path) -> Result<std::fs::File, BadInput> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(p).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::ENXIO) { "a FIFO or socket with no reader".to_string() } else { e.to_string() };
        BadInput(format!("{}: cannot write: {why}", shown.display()))
    })?;
    // Truncate what a /proc link leads to when it is a file (`> out` then
    // `--json /dev/stdout`); devices and pipes ignore the length.
    if f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        let _ = f.set_len(0);
    }
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags >= 0 {
        // SAFETY: as above; clears O_NONBLOCK so writes wait for the reader.
        unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) };
    }
    Ok(f)
}

/// Check, before any work, that [`write_output`] could write `path`: a
/// directory, a missing or unwritable directory (/proc), a FIFO with no
/// reader are refused (exit 2) now rather than after the result exists.
pub(crate) fn check_output(path: &Path) -> Result<(), BadInput> {
    match output_target(path)? {
        OutputTarget::Through(p) => open_through(&p, path).map(drop),
        OutputTarget::Replace(p) => {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            // The nearest existing directory must take new entries.
            let mut up = dir;
            while !up.exists() {
                match up.parent() {
                    Some(d) if !d.as_os_str().is_empty() => up = d,
                    _ => {
                        up = Path::new(".");
                        break;
                    }
                }
            }
            if !up.is_dir() {
                return Err(BadInput(format!("{}: {} is not a directory", path.display(), up.display())));
            }
            tempfile::Builder::new()
                .prefix(".rtscope-")
                .suffix(".tmp")
                .tempfile_in(up)
                .map(drop)
                .map_err(|e| BadInput(format!("{}: cannot create a file in {}: {e}; give another path", path.display(), up.display())))
        }
    }
}

/// Write an output file: `fill` writes the whole content. A regular file
/// (or a new one) is written atomically — a temp file in the target's
/// directory, fsynced, renamed over it — and a symbolic link keeps
/// pointing at it (its target is what gets replaced). Anything else (a
/// device, FIFO, `/dev/stdout`) is written through, never replaced.
pub(crate) fn write_output(path: &Path, fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let target = match output_target(path)? {
        OutputTarget::Through(p) => {
            let f = open_through(&p, path)?;
            let mut w = std::io::BufWriter::new(f);
            fill(&mut w)?;
            w.flush().with_context(|| format!("writing {}", path.display()))?;
            return Ok(());
        }
        OutputTarget::Replace(p) => p,
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    crate::sys::stat::create_dirs(dir).with_context(|| format!("creating directory {}", dir.display()))?;
    // 0644 before the umask, like any file a command writes (a temp file
    // alone would be 0600 and keep that through the rename).
    let mut tmp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .prefix(".rtscope-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(&target).with_context(|| format!("renaming the result into {}", target.display()))?;
    Ok(())
}

/// The largest result file read (a result is histograms and bounded
/// series: even a day-long run stays far below; imports have their own
/// limit, `rtscope import --max-size`).
pub(crate) const MAX_RESULT_BYTES: u64 = 1 << 30;

/// Open an input file for reading: a regular file only (a FIFO would
/// block forever, a device like /dev/zero never end), at most `cap` bytes.
/// Returns the file and its size. The error says what is wrong, without
/// the path (the caller names it).
pub(crate) fn open_input(path: &Path, cap: u64) -> Result<(std::fs::File, u64), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() { "a directory" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(format!("{kind}; give a file"));
    }
    if meta.len() > cap {
        return Err(too_big(meta.len(), cap));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    Ok((f, meta.len()))
}

fn too_big(n: u64, cap: u64) -> String {
    format!("{} is larger than the {} limit for an input; pass --max-size to read it anyway", crate::units::fmt_bytes(n), crate::units::fmt_bytes(cap))
}

/// Read a whole input file (see [`open_input`]) into memory.
pub(crate) fn read_input(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let (f, len) = open_input(path, cap)?;
    let mut bytes = Vec::with_capacity(len as usize);
    // A file that grows while we read stops at the cap too.
    f.take(cap + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64, cap));
    }
    Ok(bytes)
}

/// Read a result file, with errors that name the file and what is wrong.
pub fn read_run(path: &Path) -> Result<Run, BadInput> {
    read_run_text(path).map(|(run, _)| run)
}

/// [`read_run`], also returning the file's exact text (what `import` stores).
pub(crate) fn read_run_text(path: &Path) -> Result<(Run, String), BadInput> {
    let bytes = read_input(path, MAX_RESULT_BYTES).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|e| BadInput(format!("{}: not UTF-8 text ({e}); is it an rtscope result file?", path.display())))?;
    // Only the version is looked at first (the rest is skipped, not built as
    // a JSON tree: a tree of a 200 MB result took gigabytes), then the run
    // is read straight from the text.
    check_version(path, serde_json::from_str::<Version>(&text))?;
    let run: Run = serde_json::from_str(&text).map_err(|e| not_schema(path, e))?;
    run.check_invariants().map_err(|e| broken(path, e))?;
    Ok((run, text))
}

/// The one field looked at before a result file is read.
#[derive(serde::Deserialize)]
struct Version {
    schema_version: Option<serde_json::Value>,
}

/// A result file's `schema_version` must be this rtscope's.
fn check_version(path: &Path, read: serde_json::Result<Version>) -> Result<(), BadInput> {
    let version = match read {
        Ok(v) => v.schema_version.and_then(|s| s.as_u64()),
        Err(e) if e.is_data() => None,
        Err(e) => return Err(BadInput(format!("{}: not valid JSON ({e}); is it an rtscope result file?", path.display()))),
    };
    match version {
        Some(n) if n == SCHEMA_VERSION as u64 => Ok(()),
        Some(n) => Err(BadInput(format!(
            "{}: schema_version {n} is not supported by this rtscope (it reads version {SCHEMA_VERSION}); use a matching rtscope release",
            path.display()
        ))),
        None => Err(BadInput(format!("{}: no schema_version field; this is not an rtscope result file", path.display()))),
    }
}

fn not_schema(path: &Path, e: serde_json::Error) -> BadInput {
    BadInput(format!("{}: does not match result schema v{SCHEMA_VERSION}: {e}", path.display()))
}

fn broken(path: &Path, e: String) -> BadInput {
    BadInput(format!("{}: {e}: the file breaks result schema v{SCHEMA_VERSION} (docs/schema.md); it was not written by rtscope, or was edited", path.display()))
}

/// [`read_run_text`] without holding the text or the entries: the file is
/// read from disk three times (UTF-8, the version, the run), the run comes
/// back with `results` empty and each entry goes to `each` as it is read,
/// checked against the schema's invariants first. The errors are
/// [`read_run_text`]'s, in its order (an invariant broken by an early entry
/// is reported only once the whole file has read).
pub(crate) fn read_run_entries(path: &Path, mut each: crate::model::entries::Each) -> Result<(Run, usize), BadInput> {
    use std::cell::RefCell;
    use std::io::BufReader;
    use std::rc::Rc;
    let open = || -> Result<BufReader<std::io::Take<std::fs::File>>, BadInput> {
        let (f, _) = open_input(path, MAX_RESULT_BYTES).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
        Ok(BufReader::with_capacity(1 << 20, std::io::Read::take(f, MAX_RESULT_BYTES + 1)))
    };
    check_utf8(path, open()?)?;
    check_version(path, serde_json::from_reader::<_, Version>(open()?))?;
    // The first broken invariant of an entry, as for a native run and as
    // for an imported one (whether the run is imported is known at its end).
    #[derive(Default)]
    struct Seen {
        entries: usize,
        native: Option<String>,
        imported: Option<String>,
    }
    let seen = Rc::new(RefCell::new(Seen::default()));
    let s = Rc::clone(&seen);
    let check: crate::model::entries::Each = Box::new(move |i, r| {
        let mut s = s.borrow_mut();
        s.entries += 1;
        if s.native.is_none() {
            s.native = crate::model::check_entry(i, &r, false).err();
        }
        if s.imported.is_none() {
            s.imported = crate::model::check_entry(i, &r, true).err();
        }
        drop(s);
        each(i, r)
    });
    let run: Run = crate::model::entries::read_entries(check, || serde_json::from_reader(open()?).map_err(|e| not_schema(path, e)))?;
    let seen = std::mem::take(&mut *seen.borrow_mut());
    let first = if run.imported_from.is_some() { seen.imported } else { seen.native };
    if let Some(e) = first {
        return Err(broken(path, e));
    }
    Ok((run, seen.entries))
}

/// A result file must be UTF-8 text: checked as it streams by, with
/// [`read_run_text`]'s message (the offset counted from the file's start).
fn check_utf8(path: &Path, mut r: impl std::io::Read) -> Result<(), BadInput> {
    let mut buf = vec![0u8; 1 << 20];
    let (mut keep, mut at) = (0usize, 0u64);
    loop {
        let n = r.read(&mut buf[keep..]).map_err(|e| BadInput(format!("{}: cannot read: {e}", path.display())))?;
        let end = keep + n;
        match std::str::from_utf8(&buf[..end]) {
            Ok(_) => keep = 0,
            // A character cut at the end of the buffer: its start is kept for the next read.
            Err(e) if e.error_len().is_none() && n > 0 => {
                let v = e.valid_up_to();
                buf.copy_within(v..end, 0);
                keep = end - v;
                at += v as u64;
                continue;
            }
            Err(e) => {
                let what = match e.error_len() {
                    Some(len) => format!("invalid utf-8 sequence of {len} bytes from index {}", at + e.valid_up_to() as u64),
                    None => format!("incomplete utf-8 byte sequence from index {}", at + e.valid_up_to() as u64),
                };
                return Err(BadInput(format!("{}: not UTF-8 text ({what}); is it an rtscope result file?", path.display())));
            }
        }
        if n == 0 {
            return Ok(());
        }
        at += end as u64;
    }
}
