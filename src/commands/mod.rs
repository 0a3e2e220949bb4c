//! One file per subcommand: each takes its validated clap arguments and
//! returns the exit code (see `error` for the codes).

pub mod check;
pub mod compare;
pub mod doctor;
pub mod inputs;
pub mod monitor;
pub mod presets;
pub mod probes;
pub mod report;
pub mod run;
pub mod serve;
pub mod export;
pub mod history;
pub mod import;
pub mod rm;
pub mod show;
pub mod tag;
