//! `rtscope export ID [-o FILE]`: a stored run as a schema v1 JSON result
//! file. The stored text is written back unchanged, so for a native run the
//! file is byte-identical to the one `rtscope run` wrote.

use std::io::Write;

use anyhow::Context;

use crate::cli::store_opts::ExportArgs;
use crate::error::EXIT_OK;
use crate::store::{Location, Store};

pub fn cmd(args: &ExportArgs) -> anyhow::Result<u8> {
    let mut store = Store::open_existing(&Location::resolve(args.db.db.as_deref())?)?;
    let text = store.json_text(args.id)?;
    match &args.output {
        None => {
            std::io::stdout().write_all(text.as_bytes())?;
        }
        Some(path) => {
            // Not store::json::write_atomic: that one appends a newline, and
            // the stored text already is the complete file.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            crate::sys::stat::create_dirs(dir).with_context(|| format!("creating directory {}", dir.display()))?;
            let mut tmp = tempfile::Builder::new()
                .prefix(".rtscope-")
                .suffix(".tmp")
                .tempfile_in(dir)
                .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
            tmp.write_all(text.as_bytes())?;
            tmp.as_file().sync_all()?;
            tmp.persist(path).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("run #{} written to {}", args.id, path.display());
        }
    }
    Ok(EXIT_OK)
}
