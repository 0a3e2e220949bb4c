//! The end of a run, whatever measured it: `rtscope run` on this system and
//! `run --target` on an agent end through [`finish`] (the summary, the
//! result's place, the warnings, the history, the verdict and the exit
//! code); `monitor` and each cell of `factors` end through its parts: the
//! warnings ([`warn`]), the history with the rescue of a run it did not
//! take ([`save`]: the result file is kept, and the message says how to
//! import it later) and, for `monitor`, the exit code ([`exit_code`]). The store is opened before
//! measuring ([`open_for_run`]): a bad `--db` is bad input, exit 2, before
//! anything is measured or written. The command line in the result was
//! redacted where it was captured (`cli`), not here.

use std::path::Path;

use crate::cli::store_opts::StoreOpts;
use crate::error::{BadInput, EXIT_GATE_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::model::{Nanos, Run};
use crate::plan::{Output, Table};
use crate::report;
use crate::store::{Location, Store};

/// Open the store a run will save into, or `None` with `--no-store`.
pub(crate) fn open_for_run(opts: &StoreOpts) -> anyhow::Result<Option<Store>> {
    if opts.no_store {
        return Ok(None);
    }
    Ok(Some(Store::open_for_run(&Location::resolve(opts.db.db.as_deref())?)?))
}

/// Save a finished run this rtscope measured (natively, through the agent,
/// or as a monitor). The stored JSON is the run in memory serialised as
/// its result file was (`store::json::run_text`: the file's exact bytes, so
/// `rtscope export` gives the same file) — never read back from the path,
/// which another run started in the same second, or a user, may have
/// written since. `json_path` is where the message says the run is kept.
/// Returns the run's id in the history.
pub(crate) fn save(store: &mut Store, run: &Run, json_path: &Path, quiet: bool) -> anyhow::Result<i64> {
    let text = crate::store::json::run_text(run)?;
    let shown = store.shown();
    let id = store.save(run, &text, run.source()).map_err(|e| {
        let kept =
            format!("the result file {} is complete and kept: store it later with `rtscope import {} --db {shown}`", json_path.display(), json_path.display());
        // A refusal (full filesystem, corrupt file) stays exit 2, and
        // says where the measurement is.
        match e.downcast::<BadInput>() {
            Ok(b) => BadInput(format!("{}; {kept}", b.0)).into(),
            Err(e) => e.context(format!("saving the run in {shown} failed; {kept}")),
        }
    })?;
    if !quiet {
        println!("saved: run #{id} in {}", store.shown());
    }
    Ok(id)
}

/// What the reader of a run must know (its `warnings`), on stderr. The
/// warnings quote host strings, traced process names and an agent's
/// strings: printed through `report::escape`.
pub(crate) fn warn(run: &Run) {
    for w in &run.warnings {
        eprint!("{}", report::term::para("warning: ", &report::escape::terminal_safe(w)));
    }
}

/// The exit code a measured run ends with: 130 interrupted, 3 when a
/// migrate run saw priority-order violations (as rt-migrate-test fails;
/// said on stderr), else 0.
pub(crate) fn exit_code(run: &Run) -> u8 {
    let violated: Vec<String> = run
        .results
        .iter()
        .filter(|r| r.thread.is_none())
        .filter_map(|r| {
            r.extras.violations.as_ref().filter(|v| v.count > 0).map(|v| format!("{} ({}): {} of {} periods", r.probe, r.phase, v.count, v.periods))
        })
        .collect();
    if !violated.is_empty() && !run.interrupted {
        eprintln!("failed: a higher-priority thread waited while a lower-priority one ran in {} (see `violations` in the result; exit 3)", violated.join(", "));
        return EXIT_GATE_FAILED;
    }
    if run.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    }
}

/// What the end of a run shows beside the run itself.
pub(crate) struct Ending<'a> {
    pub(crate) output: &'a Output,
    /// `--deadline`: the verdict lines.
    pub(crate) deadline: Option<u64>,
    /// The preset's table and bin width (a native run; the agent's probes
    /// have no max-rate, noise, load or trace parts: None).
    pub(crate) preset: Option<(Table, u64)>,
}

/// The end of a measured run (its result file written): the summary and
/// where the result is (unless quiet), the warnings, the history, and the
/// exit code — 130 interrupted, 3 when a migrate run saw priority-order
/// violations (as rt-migrate-test fails), else 0.
pub(crate) fn finish(run: &Run, end: &Ending<'_>, store: Option<&mut Store>) -> anyhow::Result<u8> {
    let output = end.output;
    if !output.quiet {
        // Host strings, traced process names and an agent's strings come
        // from the machine or another system, not from us: printed through
        // `report::escape`.
        let blocks = report::blocks::EndOfRun { unit: output.unit, deadline: end.deadline.map(Nanos), preset: end.preset };
        let text = report::term::render_blocks(&report::blocks::end_of_run(run, &blocks), false, report::term::width(false));
        print!("{}", report::escape::terminal_safe(&text));
        println!("result: {}", output.path.display());
    }
    warn(run);
    if let Some(store) = store {
        save(store, run, &output.path, output.quiet)?;
    }
    Ok(exit_code(run))
}
