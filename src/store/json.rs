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
    std::fs::create_dir_all(dir).with_context(|| format!("creating directory {}", dir.display()))?;
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

/// Read a result file, with errors that name the file and what is wrong.
pub fn read_run(path: &Path) -> Result<Run, BadInput> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("{}: cannot read: {e}", path.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!("{}: not valid JSON ({e}); is it an rtscope result file?", path.display()))
    })?;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
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
    serde_json::from_value(v).map_err(|e| BadInput(format!("{}: does not match result schema v{SCHEMA_VERSION}: {e}", path.display())))
}
