//! One file per subcommand: each takes its validated clap arguments and
//! returns the exit code (see `error` for the codes).

pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod doctor;
pub(crate) mod end;
pub mod entry;
pub(crate) mod export;
pub(crate) mod factors;
pub(crate) mod factors_lab;
pub(crate) mod history;
pub(crate) mod import;
pub(crate) mod inputs;
pub(crate) mod monitor;
pub(crate) mod presets;
pub(crate) mod probes;
pub(crate) mod report;
pub(crate) mod rm;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod tag;
