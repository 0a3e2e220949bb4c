//! Result files: schema v1 JSON (see docs/schema.md), written atomically —
//! a temp file in the target directory, fsynced, then renamed over the
//! target — so a reader never sees a half-written result, and a crash leaves
//! either the previous complete file or the new one.

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

/// Write a file atomically: `fill` writes the content into a temp file in the
/// target's directory, which is then fsynced and renamed over `path`.
pub fn write_atomic(path: &Path, fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let dir = match path.parent() {
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
        w.write_all(b"\n")?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("renaming the result into {}", path.display()))?;
    Ok(())
}

/// The largest input file read by default (`rtscope import --max-size`
/// lifts it for imports; result files have [`MAX_RESULT_BYTES`]).
pub const MAX_INPUT_BYTES: u64 = 256 << 20;
/// The largest result file read (a result is histograms and bounded
/// series: even a day-long run stays far below).
pub const MAX_RESULT_BYTES: u64 = 1 << 30;

/// Open an input file for reading: a regular file only (a FIFO would
/// block forever, a device like /dev/zero never end), at most `cap` bytes.
/// Returns the file and its size. The error says what is wrong, without
/// the path (the caller names it).
pub fn open_input(path: &Path, cap: u64) -> Result<(std::fs::File, u64), String> {
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
    format!(
        "{} is larger than the {} limit for an input; pass --max-size to read it anyway",
        crate::units::fmt_bytes(n),
        crate::units::fmt_bytes(cap)
    )
}

/// Read a whole input file (see [`open_input`]) into memory.
pub fn read_input(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
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
pub fn read_run_text(path: &Path) -> Result<(Run, String), BadInput> {
    let bytes = read_input(path, MAX_RESULT_BYTES).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|e| BadInput(format!("{}: not UTF-8 text ({e}); is it an rtscope result file?", path.display())))?;
    // Only the version is looked at first (the rest is skipped, not built as
    // a JSON tree: a tree of a 200 MB result took gigabytes), then the run
    // is read straight from the text.
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<serde_json::Value>,
    }
    let version = match serde_json::from_str::<Version>(&text) {
        Ok(v) => v.schema_version.and_then(|s| s.as_u64()),
        Err(e) if e.is_data() => None,
        Err(e) => return Err(BadInput(format!("{}: not valid JSON ({e}); is it an rtscope result file?", path.display()))),
    };
    match version {
        Some(n) if n == SCHEMA_VERSION as u64 => {}
        Some(n) => {
            return Err(BadInput(format!(
                "{}: schema_version {n} is not supported by this rtscope (it reads version {SCHEMA_VERSION}); use a matching rtscope release",
                path.display()
            )))
        }
        None => {
            return Err(BadInput(format!(
                "{}: no schema_version field; this is not an rtscope result file",
                path.display()
            )))
        }
    }
    let run: Run = serde_json::from_str(&text).map_err(|e| BadInput(format!("{}: does not match result schema v{SCHEMA_VERSION}: {e}", path.display())))?;
    run.check_invariants().map_err(|e| {
        BadInput(format!(
            "{}: {e}: the file breaks result schema v{SCHEMA_VERSION} (docs/schema.md); it was not written by rtscope, or was edited",
            path.display()
        ))
    })?;
    Ok((run, text))
}
