//! `rtscope run`: build the plan, install the signal handling, run, print the
//! summary and warnings. Exit 0 done, 2 bad input (nothing written), 130
//! interrupted (the samples taken are written, marked interrupted).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use time::OffsetDateTime;

use super::end;
use crate::cli::{self, RunArgs};
use crate::error::{EXIT_INTERRUPTED, EXIT_OK};
use crate::runner;
use crate::store::pgconn::redact_secrets;

/// `20261122T090135Z`: names result files by their start time.
pub(crate) fn stamp(t: OffsetDateTime) -> String {
    format!("{:04}{:02}{:02}T{:02}{:02}{:02}Z", t.year(), t.month() as u8, t.day(), t.hour(), t.minute(), t.second())
}

/// SIGINT/SIGTERM/SIGHUP/SIGQUIT (`sys::signal::ENDING`) raise the returned
/// flag; probes end their loops, the samples taken are written, exit 130. A
/// second signal exits at once.
pub(crate) fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    // First, so that on a second signal it runs before the exit below.
    crate::trace::register_signal_cleanup(Arc::clone(&stop))?;
    for sig in crate::sys::signal::ENDING {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED as i32, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// What the reader of a run must know, as the runner puts it on file
/// (`run`, `run --target` and `monitor`).
pub(crate) fn warnings(run: &crate::model::Run) -> Vec<String> {
    crate::analysis::warnings::for_run(run).iter().map(ToString::to_string).collect()
}

pub(crate) fn cmd(args: &RunArgs) -> anyhow::Result<u8> {
    let started = OffsetDateTime::now_utc();
    if let Some(t) = &args.target {
        return target(args, t, started);
    }
    let (plan, output, exp) = cli::load::build(args, &stamp(started))?;
    if args.load.dry_run {
        print!("{}", redact_secrets(&cli::load::describe(&plan, &exp, &output, true)));
        return Ok(EXIT_OK);
    }
    crate::factors::journal::recover_and_say();
    // Open the history database before measuring: a bad --db is bad input
    // (exit 2, nothing measured or written), not a surprise after an hour.
    let mut store = end::open_for_run(&args.store)?;
    let stop = stop_on_signals()?;
    if !output.quiet {
        // The plan quotes the loads' command lines: a URL's password in one
        // is not printed.
        eprint!("{}", redact_secrets(&cli::load::describe(&plan, &exp, &output, false)));
    } else {
        // What the plan left out is said even when quiet.
        for n in &exp.notes {
            eprint!("{}", crate::report::term::para("note: ", n));
        }
    }
    let run = runner::execute(&plan, &exp, runner::Invocation { output: &output, command_line: args.command_line.clone(), started, stop: &stop, warnings })?;
    let ending = end::Ending { output: &output, deadline: args.analysis.deadline, preset: Some((exp.table, exp.bin_ns)) };
    end::finish(&run, &ending, store.as_mut())
}

/// `rtscope run --target SPEC`: the same run, measured by rtscope-agent on
/// another system (src/agent_host); printed and stored as a native run.
fn target(args: &RunArgs, spec: &str, started: OffsetDateTime) -> anyhow::Result<u8> {
    let (spec, plan, on, output) = cli::target::build(args, spec, &stamp(started))?;
    let mut store = end::open_for_run(&args.store)?;
    let stop = stop_on_signals()?;
    if !output.quiet {
        eprintln!("target: {spec}; probes {} for {} each", on.probes.join(","), crate::units::fmt_ns(plan.measuring.duration_ns));
    }
    let run = crate::agent_host::execute(
        &spec,
        &plan,
        &on,
        runner::Invocation { output: &output, command_line: args.command_line.clone(), started, stop: &stop, warnings },
    )?;
    end::finish(&run, &end::Ending { output: &output, deadline: args.analysis.deadline, preset: None }, store.as_mut())
}
