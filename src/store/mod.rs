//! Where results are kept. `json`: the exchange format, one file per run,
//! written atomically. `sqlite` (+ `migrations`): the history database that
//! every `rtscope run` and `rtscope import` also saves into. [`resolve_inputs`]
//! turns the arguments of commands that read results (`compare`, `report`,
//! `show`) — files, run ids, `@tag`s — into runs.

pub mod json;
pub mod migrations;
pub mod sqlite;

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::BadInput;
use crate::model::Run;

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    crate::units::now_rfc3339_precise()
}

/// One run named on a command line, with the label to show for it.
#[derive(Debug, Clone)]
pub struct Input {
    /// The file path, `#ID`, or `#ID (@tag)`.
    pub label: String,
    pub run: Run,
}

/// Resolve command-line inputs in order: `@TAG` = every stored run with that
/// tag (oldest first); an existing path = a result file; a bare number that is
/// not an existing path = a stored run id. The database (`db_flag`, else
/// RTSCOPE_DB / XDG default) is opened only when an id or tag is used.
pub fn resolve_inputs(args: &[String], db_flag: Option<&Path>) -> anyhow::Result<Vec<Input>> {
    let mut store: Option<sqlite::Store> = None;
    let open = |store: &mut Option<sqlite::Store>| -> anyhow::Result<()> {
        if store.is_none() {
            *store = Some(sqlite::Store::open_existing(&sqlite::resolve_path(db_flag)?)?);
        }
        Ok(())
    };
    let mut out = Vec::new();
    for a in args {
        if let Some(tag) = a.strip_prefix('@') {
            open(&mut store)?;
            let s = store.as_ref().expect("opened above");
            let ids = s.ids_with_tag(tag)?;
            if ids.is_empty() {
                return Err(BadInput(format!("{a}: no stored run has the tag {tag:?} (in {}); `rtscope history` lists tags", s.path().display())).into());
            }
            for id in ids {
                out.push(Input { label: format!("#{id} ({a})"), run: s.load(id)? });
            }
        } else if Path::new(a).exists() {
            out.push(Input { label: a.clone(), run: json::read_run(Path::new(a))? });
        } else if let Ok(id) = a.parse::<i64>() {
            open(&mut store)?;
            let s = store.as_ref().expect("opened above");
            out.push(Input { label: format!("#{id}"), run: s.load(id)? });
        } else {
            // Let the file reader say what is wrong (it names the file and
            // the OS error), then say what else an input can be.
            let e = json::read_run(Path::new(a)).err().map(|e| e.0).unwrap_or_else(|| format!("{a}: cannot read"));
            return Err(BadInput(format!("{e}; an input is a result file, a stored run id (a number) or @TAG")).into());
        }
    }
    Ok(out)
}
