//! The program's entry, the face's top: `main.rs` calls [`main`].

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::commands;
use crate::error::{BadInput, EXIT_BAD_INPUT, EXIT_FAILURE};
// Every error's text loses any URL's password before it is printed: an
// error may quote an argument, a scenario's line or a server's answer.
use crate::store::pgconn::redact_secrets;

/// The command line: parse, dispatch to [`commands`], map errors to exit codes
/// (0 done, 2 bad input, 3 a failed gate, 130 interrupted, 1 any other failure).
pub fn main() -> ExitCode {
    // Code pages are mapped one by one as they are touched, not with their
    // neighbours: the resident set is the code a command runs (issue 65).
    // What the loader and the C library's start-up mapped before, with their
    // neighbours (2.2 MiB), is unmapped: the next touch maps a page alone.
    if crate::sys::mman::map_touched_pages_only().is_ok() {
        crate::sys::mman::drop_clean_file_pages();
    }
    // Usage errors print and exit 2; --help/--version exit 0.
    let cli: Cli = crate::cli::parse_or_exit(std::env::args_os().collect());
    // The one width rule (report::term::width) hears --width and --wide once, here.
    crate::report::term::set_flags(cli.width.map(usize::from), cli.wide);
    if matches!(cli.command, Command::Run(_) | Command::Monitor(_)) {
        // Parsing built every subcommand's arguments: MiB of code pages a
        // measurement never runs again (2 MiB here even one page at a time;
        // 4-5 MiB with the kernel's fault-around). Unmapped now (they stay in
        // the page cache), the start-up's peak is not the parser's pages plus
        // the run's (bench/footprint, issue 65).
        crate::sys::mman::drop_clean_file_pages();
    }
    let reads_and_prints = match &cli.command {
        Command::Probes
        | Command::Presets
        | Command::History(_)
        | Command::Show(_)
        | Command::Export(_)
        | Command::Compare(_)
        | Command::Report(_)
        | Command::Check(_) => true,
        Command::Factors(a) => a.list,
        _ => false,
    };
    if reads_and_prints {
        // A command that only reads and prints ends as `cat` does when its
        // reader goes away (`rtscope history | head`): by SIGPIPE, quietly,
        // not with a panic on the broken pipe. Commands that measure, change
        // a setting or write the history keep ignoring it: they end through
        // their own paths (restores, saves) whatever happens to stdout.
        // SAFETY: signal(2) with SIG_DFL installs no handler; no other thread runs yet.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let result = match cli.command {
        Command::Run(args) => commands::run::cmd(&args),
        Command::Monitor(args) => commands::monitor::cmd(&args),
        Command::Probes => commands::probes::cmd(),
        Command::Doctor(args) => commands::doctor::cmd(&args),
        Command::Presets => commands::presets::cmd(),
        Command::Factors(args) => commands::factors::cmd(&args),
        Command::LoadWorker(args) => crate::load::worker::LoadWorkerArgs::from_args(&args.args).and_then(|w| crate::load::worker::main(&w)),
        Command::History(args) => commands::history::cmd(&args),
        Command::Show(args) => commands::show::cmd(&args),
        Command::Tag(args) => commands::tag::cmd(&args),
        Command::Rm(args) => commands::rm::cmd(&args),
        Command::Export(args) => commands::export::cmd(&args),
        Command::Import(args) => commands::import::cmd(&args),
        Command::Compare(args) => commands::compare::cmd(&args),
        Command::Report(args) => commands::report::cmd(&args),
        Command::Check(args) => commands::check::cmd(&args),
        Command::Serve(args) => commands::serve::cmd(&args),
        Command::Parse(args) => Ok(crate::cli::parse_only(&args)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if let Some(bad) = e.downcast_ref::<BadInput>() {
                // An error may quote a file's line: made safe for the terminal.
                eprintln!("error: {}", crate::report::escape::terminal_safe(&redact_secrets(&bad.to_string())));
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                eprintln!("error: {}", crate::report::escape::terminal_safe(&redact_secrets(&format!("{e:#}"))));
                ExitCode::from(EXIT_FAILURE)
            }
        }
    }
}
