//! `rtscope export ID [-o FILE]`: a stored run as a schema v1 JSON result
//! file. The stored text is written back unchanged, so for a native run the
//! file is byte-identical to the one `rtscope run` wrote.

use std::io::Write;

use crate::cli::store_opts::ExportArgs;
use crate::error::EXIT_OK;
use crate::store::{Location, Store};

pub(crate) fn cmd(args: &ExportArgs) -> anyhow::Result<u8> {
    let mut store = Store::open_existing(&Location::resolve(args.db.db.as_deref())?)?;
    let text = store.json_text(args.id)?;
    match &args.output {
        None => {
            std::io::stdout().write_all(text.as_bytes())?;
        }
        Some(path) => {
            // Not store::json::write_atomic: that one appends a newline, and
            // the stored text already is the complete file.
            crate::store::json::write_output(path, |w| Ok(w.write_all(text.as_bytes())?))?;
            eprintln!("run #{} written to {}", args.id, path.display());
        }
    }
    Ok(EXIT_OK)
}
