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

/// `rtscope import` at the process limit: the file's hash, taken on a
/// thread of its own beside the parse, is taken on the main thread when
/// no second thread starts (a cyclictest histogram imports as ever); a
/// reading that needs a thread of its own (cyclictest-json's, which reads
/// the file again thread by thread) ends with an error naming the limit,
/// nothing imported. Never a panic. `nobody` under `--nproc=1` cannot start
/// one thread; under 2 one, if no other process of nobody's runs.
#[test]
fn an_import_at_the_process_limit_never_panics() {
    if !can_limit() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = common::rtscope_path();
    // (fixture, nproc, whether it imports: None where either is right, as
    // with one thread to spare when another of nobody's processes may run)
    let cases = [
        ("cyclictest-hist.txt", "1", Some(true)),
        ("cyclictest-hist.txt", "2", Some(true)),
        ("cyclictest.json", "1", Some(false)),
        ("cyclictest.json", "2", None),
    ];
    for (fixture, nproc, imports) in cases {
        // Where `nobody` may read it.
        let file = dir.path().join(fixture);
        std::fs::copy(common::fixture(fixture), &file).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let db = dir.path().join(format!("{fixture}-{nproc}.db"));
        let out = Command::new("runuser")
            .args(["-u", "nobody", "--", "prlimit", &format!("--nproc={nproc}")])
            .arg(&bin)
            .args(["import", "--db"])
            .arg(&db)
            .arg(&file)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path())
            .env_remove("RTSCOPE_DB")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let what = format!("{fixture} at nproc {nproc}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_ne!(out.status.code(), Some(101), "{what}: {err}");
        let json = dir.path().join(format!("{fixture}-{nproc}.json"));
        let exported = Command::new(&bin).args(["export", "--db"]).arg(&db).args(["1", "-o"]).arg(&json).env_remove("RTSCOPE_DB").output().unwrap();
        let imported = out.status.code() == Some(0);
        assert!(imports.is_none_or(|i| i == imported), "{what}: exit {:?}: {err}", out.status.code());
        if imported {
            // The run is in the history, as a fresh import puts it.
            assert!(exported.status.success(), "{what}: {}", String::from_utf8_lossy(&exported.stderr));
            let run = common::read_json(&json);
            assert_eq!(run["imported_from"]["file_sha256"].as_str().map(str::len), Some(64), "{what}: the file's hash taken");
            assert!(!run["results"].as_array().unwrap().is_empty(), "{what}");
        } else {
            assert!(err.contains("error: ") && err.contains("could not start") && err.contains("RLIMIT_NPROC"), "{what}: {err}");
            assert!(!exported.status.success(), "{what}: a failed import stores nothing");
        }
    }
}
