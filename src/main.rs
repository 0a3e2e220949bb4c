//! rtscope: an instrument for the experimental evaluation of real-time operating systems.
//!
//! `main` parses the command line and dispatches to a subcommand; errors become exit codes
//! (2 = bad input).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod doctor;

#[derive(Debug, Parser)]
#[command(name = "rtscope", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Audit this host for settings that hurt real-time latency, with the fix for each.
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Doctor(a) => doctor::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
