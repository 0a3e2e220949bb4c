//! The `cmd:"<command line>"` load: any user command, run by the load
//! process as `sh -c "<command line>"` in the load's temp dir, in the load's
//! process group (so it and everything it forks are stopped together:
//! SIGTERM, then SIGKILL after a grace period).

/// The argv the load process runs for a command line.
pub(crate) fn argv(line: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), line.to_string()]
}
