//! `rtscope import FILE [--format auto|...] [--name SYSTEM]`: convert another
//! tool's output (see `crate::import`) into schema v1 runs and save them in
//! the history database, so they can be listed, shown, exported and compared
//! like native runs. An rtscope result file is stored as is.
//!
//! Everything is parsed, converted and checked (every value must fit the
//! history's 64-bit columns) before the database is opened: a bad file is
//! exit 2 with the file, line and expectation, and nothing is stored. The
//! runs of a file (one per column of a multi-system CSV) are then stored in
//! one transaction: all or none, also when the import is killed midway.

use std::path::Path;

use crate::cli::store_opts::{FormatArg, ImportArgs};
use crate::commands::tag::check_tag;
use crate::error::{BadInput, EXIT_OK};
use crate::import::{self, build_run, format_list, Context};
use crate::model::Run;
use crate::store::{Location, Store};

/// A converted run with the JSON text to store and the source label.
struct Converted {
    run: Run,
    json: String,
    source: String,
}

fn mtime_rfc3339(path: &Path) -> String {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(time::OffsetDateTime::from)
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(crate::store::now_rfc3339)
}

/// How much of a file format detection reads.
const DETECT_BYTES: usize = 64 << 10;

fn convert(args: &ImportArgs) -> Result<Vec<Converted>, BadInput> {
    use std::io::{BufReader, Read};
    let file = args.file.display().to_string();
    let open = || crate::store::json::open_input(&args.file, args.max_size).map_err(|e| BadInput(format!("{file}: {e}")));
    let (f, len) = open()?;
    // The opening bytes decide the format; the whole file is then read as
    // it streams (and hashed in a pass of its own): memory stays bounded.
    // Leading blank space (however long) is skipped first, so it cannot push
    // the content out of the window.
    let (head, skipped, skipped_lines) = import::read_head(f, DETECT_BYTES).map_err(|e| BadInput(format!("{file}: cannot read: {e}")))?;
    let complete = skipped + (head.len() as u64) >= len && head.len() < DETECT_BYTES;
    let (head_text, bad_utf8) = match std::str::from_utf8(&head) {
        Ok(t) => (t, None),
        // A multi-byte character cut at the end of the window is not an error.
        Err(e) if !complete && e.error_len().is_none() => (std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""), None),
        Err(e) => (std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""), Some(e.valid_up_to())),
    };
    if let Some(at) = bad_utf8 {
        let line = skipped_lines + head[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let at = at as u64 + skipped;
        return Err(BadInput(format!(
            "{file}: line {line}: not UTF-8 text (invalid byte at offset {at}); expected the text output of one of: {}",
            format_list()
        )));
    }
    let format = match args.format {
        FormatArg::Auto => import::detect_head(head_text, complete).ok_or_else(|| {
            BadInput(format!(
                "{file}: format not recognised; rtscope imports: {}. Check the file, or name the format with --format",
                format_list()
            ))
        })?,
        FormatArg::Named(f) => f,
    };
    if format.stored_as_is() {
        let (run, text) = crate::store::json::read_run_text(&args.file)?;
        if !run.complete {
            eprintln!("warning: {}: {}", args.file.display(), crate::analysis::warnings::Warning::Unfinished);
        }
        if run.results.is_empty() {
            return Err(BadInput(format!("{file}: its results list is empty: nothing measured to import (report, compare and check could not use it)")));
        }
        if args.name.is_some() || args.probe.is_some() || args.phase != "unspecified" {
            return Err(BadInput(format!("{file}: an rtscope result is stored as it is; --name, --probe and --phase apply only to foreign formats")));
        }
        let source = run.source().into();
        return Ok(vec![Converted { run, json: text, source }]);
    }
    if import::probe_per_row(format) && args.probe.is_some() {
        return Err(BadInput(format!(
            "{file}: --probe does not apply to {format}: each row is filed under the probe that measures it in rtscope's preset (docs/schema.md); drop --probe"
        )));
    }
    if args.period.is_some() && !import::takes_period(format) {
        return Err(BadInput(format!("{file}: --period applies only to rtai-latency (RTAI's display does not print its period); {format} files give their own: drop --period")));
    }
    let sha = {
        let (f, _) = open()?;
        crate::store::sha256_reader(f.take(args.max_size)).map_err(|e| BadInput(format!("{file}: cannot read: {e}")))?
    };
    let file_name = args.file.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    let (f, _) = open()?;
    let opts = import::ParseOptions { period_ns: args.period };
    let mut parsed = import::parse_reader_with(format, BufReader::with_capacity(256 << 10, f.take(args.max_size)), &file_name, &opts)
        .map_err(|e| BadInput(format!("{file}: {format}: {e}")))?;
    if format.per_column() {
        if let Some(name) = &args.name {
            let all: Vec<String> = parsed.iter().filter_map(|p| p.system.clone()).collect();
            parsed.retain(|p| p.system.as_deref() == Some(name.as_str()));
            if parsed.is_empty() {
                return Err(BadInput(format!("{file}: --name {name:?}: no such column; the systems in this file are: {}", all.join(", "))));
            }
        }
    }
    let ctx = Context {
        format,
        file: file.clone(),
        file_sha256: sha,
        file_stem: args.file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "imported".into()),
        file_mtime: mtime_rfc3339(&args.file),
        phase: args.phase.clone(),
        probe: args.probe.clone(),
        // For bins-csv, --name selected a column above; the column is the name.
        name: if format.per_column() { None } else { args.name.clone() },
    };
    let mut out = Vec::new();
    for p in parsed {
        let run = build_run(p, &ctx).map_err(|e| BadInput(format!("{file}: {format}: {e}")))?;
        // Before anything is stored (and in --dry-run too): every column is
        // checked, so a bad value in the last one stores nothing.
        crate::store::check_storable(&run).map_err(|e| {
            let system = run.imported_from.as_ref().map(|i| i.system.as_str()).unwrap_or(&run.host.hostname);
            BadInput(format!("{file}: {format}: system {system}: {e}; nothing was stored"))
        })?;
        // What every reader checks is checked before anything is stored.
        run.check_invariants().map_err(|e| BadInput(format!("{file}: {format}: {e}: the converted run would break result schema v1")))?;
        let mut json = serde_json::to_string_pretty(&run).map_err(|e| BadInput(format!("{file}: cannot serialise the converted run: {e}")))?;
        json.push('\n');
        out.push(Converted { run, json, source: format.name().to_string() });
    }
    Ok(out)
}

fn check_word(flag: &str, v: &str) -> Result<(), BadInput> {
    if v.trim().is_empty() || v.contains(',') || v.chars().any(char::is_control) {
        return Err(BadInput(format!("{flag} {v:?}: expected a non-empty name without commas")));
    }
    Ok(())
}

pub fn cmd(args: &ImportArgs) -> anyhow::Result<u8> {
    check_word("--phase", &args.phase)?;
    if let Some(p) = &args.probe {
        check_word("--probe", p)?;
    }
    if let Some(n) = &args.name {
        check_word("--name", n)?;
    }
    if let Some(t) = &args.tag {
        check_tag(t)?;
    }
    let converted = convert(args)?;
    if args.dry_run {
        for c in &converted {
            print!("{}", c.json);
        }
        return Ok(EXIT_OK);
    }
    let mut store = Store::open(&Location::resolve(args.db.db.as_deref())?)?;
    // One transaction for every run of the file: all stored or none.
    let items: Vec<(&Run, &str, &str)> = converted.iter().map(|c| (&c.run, c.json.as_str(), c.source.as_str())).collect();
    let ids = store.save_all(&items, args.tag.as_deref())?;
    for (c, id) in converted.iter().zip(ids) {
        let system = c.run.imported_from.as_ref().map(|i| i.system.as_str()).unwrap_or(&c.run.host.hostname);
        println!("imported {} ({}) as run #{id}", system, c.source);
        for f in &c.run.fidelity {
            println!("  fidelity: {f}");
        }
    }
    Ok(EXIT_OK)
}
