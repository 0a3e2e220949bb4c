//! A run at the user's process limit (issue 59): every thread rtscope
//! cannot start is a clean error naming the limit, never a panic.
//! `runuser -u nobody -- prlimit --nproc=1 rtscope run -t 16` exited 101,
//! panicking in `sys::sched::policy_permitted` (the throwaway thread that
//! tries the policy), where nproc 4-12 already gave the clean error.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Whether this test can drop to `nobody` under a process limit: root and
/// util-linux's `runuser` and `prlimit`. In CI a missing piece fails.
fn can_limit() -> bool {
    let missing: Vec<&str> = ["runuser", "prlimit"].into_iter().filter(|t| !common::have(t)).collect();
    let why = if !common::is_root() {
        "not root (runuser needs it)".to_string()
    } else if !missing.is_empty() {
        format!("no {}", missing.join(", "))
    } else {
        return true;
    };
    common::skipped(&format!("cannot test the process limit: {why}"));
    false
}

#[test]
fn a_thread_that_cannot_start_is_an_error_naming_the_limit() {
    if !can_limit() {
        return;
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = common::rtscope_path();
    for nproc in ["1", "2", "4", "8"] {
        let json = dir.path().join(format!("r{nproc}.json"));
        let out = Command::new("runuser")
            .args(["-u", "nobody", "--", "prlimit", &format!("--nproc={nproc}")])
            .arg(&bin)
            .args(["run", "-t", "16", "-D", "100ms", "--no-store", "--json"])
            .arg(&json)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "nproc {nproc}: {err}");
        assert_eq!(out.status.code(), Some(1), "nproc {nproc}: {err}");
        assert!(err.contains("error: could not start thread") && err.contains("RLIMIT_NPROC"), "nproc {nproc}: {err}");
        assert!(!json.exists(), "nproc {nproc}: nothing measured, nothing written");
    }
}
