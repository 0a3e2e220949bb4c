//! rtscope: an instrument for the experimental evaluation of real-time
//! operating systems. `main` parses the command line, dispatches to
//! `rtscope::commands`, and maps errors to exit codes: 0 done, 2 bad input,
//! 3 a failed gate (`check`), 130 interrupted, 1 any other failure.

fn main() -> std::process::ExitCode {
    rtscope::commands::entry::main()
}
