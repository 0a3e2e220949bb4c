//! Input resolution for `compare` and `report`: every argument naming a
//! result goes through [`load_inputs`], the one place that turns arguments
//! into runs (result files, stored run ids, `@TAG`s).

use std::io::Write;
use std::path::Path;

use crate::error::BadInput;
use crate::model::Run;

/// Read every input, in order, as `(source, run)`: result files, stored run
/// ids and `@TAG`s (every stored run with that tag), resolved by
/// `store::resolve_inputs` (the database — `--db`, else RTSCOPE_DB / the XDG
/// default — is opened only when an id or tag is used). Errors (exit 2,
/// nothing written) name the input: unreadable, not JSON, truncated, wrong
/// schema_version, missing fields, no such id or tag, or no results at all.
pub(crate) fn load_inputs(args: &[String], db: Option<&Path>) -> anyhow::Result<Vec<(String, Run)>> {
    let mut out = Vec::with_capacity(args.len());
    for input in crate::store::resolve_inputs(args, db)? {
        if input.run.results.is_empty() {
            return Err(BadInput(format!("{}: the result holds no probe results (the run measured nothing); nothing to analyse", input.label)).into());
        }
        if !input.run.complete {
            eprintln!("warning: {}: {}", input.label, crate::analysis::warnings::Warning::Unfinished);
        }
        out.push((input.label, input.run));
    }
    Ok(out)
}

/// `--name` may name at most one system per input.
pub(crate) fn check_names(names: &[String], inputs: usize) -> Result<(), BadInput> {
    if names.len() > inputs {
        return Err(BadInput(format!("--name: {} names given for {inputs} input(s); give at most one name per input, in input order", names.len())));
    }
    if let Some(n) = names.iter().find(|n| n.trim().is_empty()) {
        return Err(BadInput(format!("--name: empty name '{n}'; each name must have at least one visible character")));
    }
    Ok(())
}

/// Write `bytes` to `path` atomically, or to standard output.
pub(crate) fn emit(path: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match path {
        Some(p) => crate::store::json::write_atomic(p, |w| Ok(w.write_all(bytes)?)),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)?;
            out.flush()?;
            Ok(())
        }
    }
}

/// [`emit`] for text meant for a person (term, md, check's text and LAVA
/// lines): on standard output, control characters from result files (host,
/// phase, tags) are made visible (`report::escape`), so a hostile file
/// cannot act on the terminal. Data formats (JSON, CSV, HTML) and files
/// get the bytes as rendered.
pub(crate) fn emit_text(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(_) => emit(path, text.as_bytes()),
        None => emit(None, crate::report::escape::terminal_safe(text).as_bytes()),
    }
}

/// Colour the terminal format?
pub(crate) fn colour(arg: crate::cli::analysis_opts::ColourArg, to_file: bool) -> bool {
    use crate::cli::analysis_opts::ColourArg;
    use std::io::IsTerminal;
    match arg {
        ColourArg::Always => true,
        ColourArg::Never => false,
        ColourArg::Auto => !to_file && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}
