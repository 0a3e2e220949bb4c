//! `rtscope import` reads its file more than once (detected, hashed,
//! checked, stored): a file rewritten between two reads must never store a
//! text and entries of two versions. The import is stopped (SIGSTOP) while
//! it holds the file open — so its last read and its check are still to
//! come — the file is changed, the import goes on: exit 2, the message names
//! the file, and the history holds no run.

mod common;

use common::Sandbox;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

/// Whether process `pid` has `file` open now.
fn holds_open(pid: u32, file: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().any(|fd| std::fs::read_link(fd.path()).map(|t| t == file).unwrap_or(false))
}

/// Import `file` into a fresh history; stop the import while it holds the
/// file open, let `change` alter the file, continue. Returns the import's
/// output, or `None` when the import ended before it could be caught with
/// the file open (the caller tries a larger file).
fn import_while_changed(sb: &Sandbox, file: &Path, format: &str, change: &dyn Fn(&Path)) -> Option<std::process::Output> {
    let db = sb.path("h.db");
    let _ = std::fs::remove_file(&db);
    let child = sb
        .cmd()
        .args(["import", "--format", format, "--db", db.to_str().unwrap(), file.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut changed = false;
    loop {
        // Exited (a zombie until waited for): no more chances.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            break;
        }
        if holds_open(pid, file) {
            kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
            // Wait until it is stopped, then look again: still open means
            // its last read of the file, and the check after it, are ahead.
            while !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") T ") {
                std::thread::sleep(Duration::from_millis(1));
            }
            if holds_open(pid, file) {
                change(file);
                changed = true;
            }
            kill(Pid::from_raw(pid as i32), Signal::SIGCONT).unwrap();
            if changed {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let out = child.wait_with_output().unwrap();
    changed.then_some(out)
}

fn runs_in(sb: &Sandbox) -> usize {
    let db = sb.path("h.db");
    if !db.exists() {
        return 0;
    }
    let out = sb.run(&["history", "--db", db.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "history: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().map(|a| a.len()).unwrap_or_else(|| v["runs"].as_array().map(|a| a.len()).unwrap_or(0))
}

/// An rtscope result of about `mb` MB: the cyclictest fixture's import
/// with a long per-second series in every entry.
fn big_result(sb: &Sandbox, mb: usize) -> std::path::PathBuf {
    let out = sb.run(&["import", "--dry-run", common::fixture("cyclictest.json").to_str().unwrap()]);
    assert!(out.status.success());
    let mut run: Value = serde_json::from_slice(&out.stdout).unwrap();
    run.as_object_mut().unwrap().remove("imported_from");
    run["fidelity"] = Value::Array(vec![]);
    let n = mb * 1_000_000 / 80 / run["results"].as_array().unwrap().len();
    for r in run["results"].as_array_mut().unwrap() {
        let secs: Vec<Value> = (0..n).map(|t| serde_json::json!({"t_s": t, "count": 1000, "min_ns": 1000, "mean_ns": 1500.5, "max_ns": 2000})).collect();
        r["per_second"] = Value::Array(secs);
    }
    let path = sb.path(&format!("big-{mb}.json"));
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

/// A cyclictest -h histogram of about `mb` MB (one row per µs).
fn big_hist(sb: &Sandbox, mb: usize) -> std::path::PathBuf {
    let path = sb.path(&format!("big-{mb}.txt"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let rows = mb * 1_000_000 / 22;
    writeln!(f, "# Histogram").unwrap();
    for i in 0..rows {
        writeln!(f, "{i:07} {:06} {:06}", 1, 2).unwrap();
    }
    writeln!(f, "# Total: {rows:09} {:09}\n# Min Latencies: 00000 00000", 2 * rows).unwrap();
    writeln!(f, "# Avg Latencies: {:05} {:05}\n# Max Latencies: {:05} {:05}", rows / 2, rows / 2, rows - 1, rows - 1).unwrap();
    writeln!(f, "# Histogram Overflows: 00000 00000").unwrap();
    drop(f);
    path
}

fn append_blank_line(p: &Path) {
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(b"\n").unwrap();
}

/// The file replaced by another one (a rename over it, as editors and
/// tools that write atomically do): same bytes, another inode.
fn replace_by_copy(p: &Path) {
    let tmp = p.with_extension("new");
    std::fs::copy(p, &tmp).unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

fn check_refused(make: &dyn Fn(&Sandbox, usize) -> std::path::PathBuf, format: &str, change: &dyn Fn(&Path)) {
    let sb = Sandbox::new();
    for mb in [8, 32, 128] {
        let file = make(&sb, mb);
        let Some(out) = import_while_changed(&sb, &file, format, change) else {
            std::fs::remove_file(&file).unwrap();
            continue; // ended before it was caught with the file open: larger
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "stdout: {}\nstderr: {err}", String::from_utf8_lossy(&out.stdout));
        assert!(err.contains(file.to_str().unwrap()) && err.contains("changed while it was imported"), "{err}");
        assert!(err.contains("nothing was stored"), "{err}");
        assert_eq!(runs_in(&sb), 0, "a run was stored from a file that changed: {err}");
        // Unchanged, the same file imports.
        let db = sb.path("h.db");
        let again = sb.run(&["import", "--format", format, "--db", db.to_str().unwrap(), file.to_str().unwrap()]);
        assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
        assert_eq!(runs_in(&sb), 1);
        return;
    }
    panic!("the import of a 128 MB file was never caught holding it open");
}

#[test]
fn an_rtscope_result_appended_to_during_import_is_refused() {
    check_refused(&big_result, "rtscope", &append_blank_line);
}

#[test]
fn an_rtscope_result_replaced_during_import_is_refused() {
    check_refused(&big_result, "rtscope", &replace_by_copy);
}

#[test]
fn a_foreign_file_appended_to_during_import_is_refused() {
    check_refused(&big_hist, "cyclictest-hist", &append_blank_line);
}
