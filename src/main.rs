//! rtscope: an instrument for the experimental evaluation of real-time
//! operating systems. `main` parses the command line, dispatches, and maps
//! errors to exit codes: 0 done, 2 bad input, 130 interrupted, 1 otherwise.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;
use time::OffsetDateTime;

use rtscope::cli::{self, Cli, Command, RunArgs};
use rtscope::error::{BadInput, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK};
use rtscope::{measure, report, runner};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // clap prints usage errors and exits 2; --help/--version exit 0.
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if let Some(bad) = e.downcast_ref::<BadInput>() {
                eprintln!("error: {bad}");
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                eprintln!("error: {e:#}");
                ExitCode::from(EXIT_FAILURE)
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Run(args) => cmd_run(&args),
        Command::Probes => {
            for (name, what) in measure::PROBES {
                println!("{name:<10} {what}");
            }
            Ok(EXIT_OK)
        }
    }
}

fn cmd_run(args: &RunArgs) -> anyhow::Result<u8> {
    let started = OffsetDateTime::now_utc();
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        started.year(),
        started.month() as u8,
        started.day(),
        started.hour(),
        started.minute(),
        started.second()
    );
    let (plan, output) = cli::plan::build(args, &stamp)?;

    // SIGINT/SIGTERM raise `stop`; probes end their loops, the samples taken
    // are written, exit 130. A second signal exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED as i32, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }

    let command_line: Vec<String> = std::env::args().collect();
    let run = runner::execute(&plan, &output, command_line, started, &stop)?;

    if !output.quiet {
        print!("{}", report::term::summary_table(&run, output.ns));
        println!("result: {}", output.path.display());
    }
    for w in &run.warnings {
        eprintln!("warning: {w}");
    }
    Ok(if run.interrupted { EXIT_INTERRUPTED } else { EXIT_OK })
}
