//! The history store through the real binary, on both backends: `run`
//! saves into it, `export` gives back the exact file, `history`/`show`/
//! `tag`/`rm`/`import`/`compare`/`report` work on it, concurrent writers all
//! land — each test once on SQLite and once on a real PostgreSQL server
//! (tests/pg_support: started by the test, loopback, unprivileged, stopped
//! on every exit path). Then each backend's refusals: a foreign, corrupt or
//! newer SQLite file, a PostgreSQL server that is down, refuses the
//! password, or holds a newer schema — exit 2, nothing touched, the
//! password never printed or stored.
//!
//! Every command here gets `--db` or `RTSCOPE_DB` pointing into a temp dir
//! or a fresh database: no test touches the user's real history.

mod common;
mod pg_support;

use common::{fixture, read_bins};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// rtscope with no database set: each test names its own (`with_db`, `--db`).
fn bin() -> Command {
    common::rtscope_with(common::Db::Unset)
}

/// A history database: an SQLite file or a PostgreSQL URL (the value of
/// `--db` / RTSCOPE_DB either way).
#[derive(Debug, Clone)]
enum Db {
    File(PathBuf),
    Pg(String),
}

impl AsRef<OsStr> for Db {
    fn as_ref(&self) -> &OsStr {
        match self {
            Db::File(p) => p.as_os_str(),
            Db::Pg(u) => OsStr::new(u),
        }
    }
}

/// A fresh PostgreSQL database, or `None` (with the reason printed) where
/// the server cannot be started.
fn pg_db() -> Option<Db> {
    match pg_support::fresh_db() {
        Ok(u) => Some(Db::Pg(u)),
        Err(e) => {
            common::skipped(&format!("no PostgreSQL test server: {e}"));
            None
        }
    }
}

/// `both!(test_fn, "sqlite path below the temp dir")`: the test once per
/// backend, as `test_fn::sqlite` and `test_fn::postgres`.
macro_rules! both {
    ($name:ident, $file:expr) => {
        mod $name {
            #[test]
            fn sqlite() {
                let dir = tempfile::tempdir().unwrap();
                super::$name(&super::Db::File(dir.path().join($file)), dir.path());
            }
            #[test]
            fn postgres() {
                let Some(db) = super::pg_db() else { return };
                let dir = tempfile::tempdir().unwrap();
                super::$name(&db, dir.path());
            }
        }
    };
}

fn with_db(db: &impl AsRef<OsStr>, args: &[&str]) -> Output {
    common::rtscope_with(common::Db::At(db.as_ref())).args(args).output().expect("run rtscope")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn history(db: &impl AsRef<OsStr>, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["history", "--json"];
    args.extend_from_slice(extra);
    let o = with_db(db, &args);
    assert!(o.status.success(), "history failed: {}", stderr(&o));
    serde_json::from_slice::<Value>(&o.stdout).expect("history --json").as_array().expect("array").clone()
}

/// The database at `db` with the fixtures `files` imported into it, each
/// import checked (the set-up of the tests that damage or lock a database).
fn imported(db: &Path, files: &[&str]) {
    for f in files {
        let o = with_db(&db, &["import", fixture(f).to_str().unwrap()]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
    }
}

/// A short native run: 300 ms of the timer probe on one thread.
fn short_run(db: &impl AsRef<OsStr>, json: &Path) -> Output {
    bin().env("RTSCOPE_DB", db).args(["run", "-D", "300ms", "-i", "1000", "-t", "1", "-q", "--json"]).arg(json).output().expect("run rtscope run")
}

both!(run_saves_and_export_is_byte_identical, "h/results.db");
fn run_saves_and_export_is_byte_identical(db: &Db, dir: &Path) {
    let db = db.clone();
    let json = dir.join("r.json");
    let o = short_run(&db, &json);
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), 1);
    let original = std::fs::read(&json).unwrap();
    let run: Value = serde_json::from_slice(&original).unwrap();
    assert_eq!(rows[0]["host"], run["host"]["hostname"]);
    assert_eq!(rows[0]["started_at"], run["started_at"]);
    assert_eq!(rows[0]["source"], "native");
    // Headline max per phase = the largest max_ns of that phase in the file.
    let file_max = run["results"].as_array().unwrap().iter().map(|r| r["max_ns"].as_u64().unwrap()).max().unwrap();
    assert_eq!(rows[0]["headline_max_ns"][0]["max_ns"].as_u64().unwrap(), file_max);

    let id = rows[0]["id"].as_i64().unwrap().to_string();
    let out = dir.join("export/again.json");
    let o = with_db(&db, &["export", &id, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    assert!(std::fs::read(&out).unwrap() == original, "export must give back the exact file");
    // And to stdout.
    let o = with_db(&db, &["export", &id]);
    assert_eq!(o.stdout, original);
}

#[test]
fn no_store_writes_no_database_and_db_flag_beats_env() {
    let dir = tempfile::tempdir().unwrap();
    let env_db = dir.path().join("env.db");
    let flag_db = dir.path().join("flag.db");
    let o =
        bin().env("RTSCOPE_DB", &env_db).args(["run", "-D", "200ms", "-t", "1", "-q", "--no-store", "--json"]).arg(dir.path().join("a.json")).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!env_db.exists(), "--no-store must not create the database");
    assert!(dir.path().join("a.json").exists());

    let o = bin()
        .env("RTSCOPE_DB", &env_db)
        .args(["run", "-D", "200ms", "-t", "1", "-q", "--db"])
        .arg(&flag_db)
        .arg("--json")
        .arg(dir.path().join("b.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(flag_db.exists() && !env_db.exists(), "--db must win over RTSCOPE_DB");
    assert_eq!(history(&flag_db, &[]).len(), 1);
}

#[test]
fn default_path_follows_xdg_data_home() {
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .env("XDG_DATA_HOME", dir.path())
        .env("HOME", dir.path().join("home"))
        .args(["import", fixture("ptsematest.txt").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("rtscope/results.db").exists());
    // Without XDG_DATA_HOME: ~/.local/share.
    let o =
        bin().env_remove("XDG_DATA_HOME").env("HOME", dir.path().join("home")).args(["import", fixture("ptsematest.txt").to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.path().join("home/.local/share/rtscope/results.db").exists());
}

fn assert_refused_untouched(db: &Path, before: &[u8], o: &Output, words: &str) {
    assert_eq!(o.status.code(), Some(2), "expected exit 2, stderr: {}", stderr(o));
    let err = stderr(o);
    assert!(err.contains(&db.display().to_string()), "error must name the file: {err}");
    assert!(err.contains(words), "error should say {words:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(std::fs::read(db).unwrap() == before, "the file must be left untouched");
}

#[test]
fn non_sqlite_file_is_refused_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let text = b"{\"this\": \"is my results.json, not a database\"}\n".to_vec();
    std::fs::write(&db, &text).unwrap();
    for args in [vec!["history"], vec!["import", fixture("ptsematest.txt").to_str().unwrap()], vec!["tag", "1", "x"], vec!["export", "1"]] {
        let o = with_db(&db, &args);
        assert_refused_untouched(&db, &text, &o, "not an SQLite database");
    }
    // `run` checks the database before measuring: exit 2, no result written.
    let json = dir.path().join("r.json");
    let o = short_run(&db, &json);
    assert_refused_untouched(&db, &text, &o, "not an SQLite database");
    assert!(!json.exists(), "a refused run must not write a result");
}

#[test]
fn corrupt_sqlite_file_is_refused_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    // Make a real database, then damage everything after the header.
    imported(&db, &["ptsematest.txt"]);
    // Checkpointed copy: the import has exited, so its WAL is folded in before damaging.
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().skip(100) {
        *b = 0xA5;
    }
    // Header page-size field (bytes 16-17) made invalid too.
    bytes[16] = 0x00;
    bytes[17] = 0x03;
    std::fs::write(&db, &bytes).unwrap();
    let _ = std::fs::remove_file(dir.path().join("results.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("results.db-shm"));
    let o = with_db(&db, &["history"]);
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("results.db") && (err.contains("corrupt") || err.contains("not an SQLite database")), "{err}");
    assert!(std::fs::read(&db).unwrap() == bytes, "the corrupt file must be left untouched");
}

/// A database whose header and schema read fine but one of whose pages is
/// damaged: `run` refuses it before measuring (SQLite's quick_check), exit
/// 2 naming the file, no result written, the file untouched.
#[test]
fn partly_corrupt_database_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    imported(&db, &["ptsematest.txt", "pmqtest.txt", "cyclictest-hist.txt", "cyclictest.json"]);
    let page_size = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        c.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0)).unwrap() as usize
    };
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / page_size;
    assert!(pages >= 4, "{pages} pages");
    // The last page: a table or index b-tree page, never the schema (page 1).
    let last = (pages - 1) * page_size;
    for b in &mut bytes[last..last + page_size] {
        *b = 0x5A;
    }
    std::fs::write(&db, &bytes).unwrap();
    let json = dir.path().join("r.json");
    let o = short_run(&db, &json);
    assert_refused_untouched(&db, &bytes, &o, "partly corrupt");
    assert!(stderr(&o).contains("quick_check"), "{}", stderr(&o));
    assert!(!json.exists(), "a refused run must not write a result");
}

/// A database in a directory this user cannot write: reading commands
/// work (read-only open), writing ones say the directory is the problem.
#[test]
fn database_in_a_read_only_directory_can_still_be_read() {
    if !common_is_root() || Command::new("setpriv").arg("--help").output().is_err() {
        common::skip!("needs root to run a command as nobody");
    }
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = ro.join("results.db");
    imported(&db, &["ptsematest.txt"]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", env!("CARGO_BIN_EXE_rtscope")])
            .env_remove("RTSCOPE_DB")
            .env("HOME", "/nonexistent")
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let o = as_nobody(&["history", "--json"]);
    assert!(o.status.success(), "history must read a database it cannot write: {}", stderr(&o));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let o = as_nobody(&["export", "1"]);
    assert!(o.status.success() && stdout(&o).contains("schema_version"), "{}", stderr(&o));
    let o = as_nobody(&["tag", "1", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("directory") && err.contains("not writable") && err.contains("results.db"), "{err}");
    assert!(std::fs::read(&db).unwrap() == before, "nothing changed");
}

fn common_is_root() -> bool {
    common::is_root()
}

#[test]
fn database_from_a_newer_rtscope_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    imported(&db, &["ptsematest.txt"]);
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let v: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v as u32, rtscope::store::migrations::latest(), "a fresh database is at the latest schema");
        c.pragma_update(None, "user_version", 99).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    for args in [vec!["history"], vec!["import", fixture("pmqtest.txt").to_str().unwrap()], vec!["rm", "1"]] {
        let o = with_db(&db, &args);
        assert_refused_untouched(&db, &before, &o, "newer rtscope");
    }
}

both!(two_runs_finishing_together_are_both_saved, "new/results.db");
fn two_runs_finishing_together_are_both_saved(db: &Db, dir: &Path) {
    // A fresh path: both processes also race to create the database.
    let db = db.clone();
    let spawn = |name: &str| bin().env("RTSCOPE_DB", &db).args(["run", "-D", "500ms", "-t", "1", "-q", "--json"]).arg(dir.join(name)).spawn().unwrap();
    let (mut a, mut b) = (spawn("a.json"), spawn("b.json"));
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), 2, "both runs must be saved: {rows:?}");
    let mut starts: Vec<String> = rows.iter().map(|r| r["started_at"].as_str().unwrap().to_string()).collect();
    let mut files: Vec<String> = ["a.json", "b.json"]
        .iter()
        .map(|f| {
            let v: Value = serde_json::from_slice(&std::fs::read(dir.join(f)).unwrap()).unwrap();
            v["started_at"].as_str().unwrap().to_string()
        })
        .collect();
    starts.sort();
    files.sort();
    assert_eq!(starts, files);
}

both!(concurrent_runs_into_one_out_dir_keep_their_own_results, "results.db");
/// A fleet started by cron: 8 runs started at once into one `--out`
/// directory and one history (issue 61: the files were named to the
/// second, so runs rewrote each other's file, and the end of a run read that
/// shared file back to store the document — run #23's rows with #22's
/// measurement). Each run has its own period, so a swapped document shows.
fn concurrent_runs_into_one_out_dir_keep_their_own_results(db: &Db, dir: &Path) {
    let db = db.clone();
    let out = dir.join("out");
    let n = 8u64;
    let interval_us = |k: u64| 1000 + 250 * k;
    let kids: Vec<_> = (0..n)
        .map(|k| {
            bin()
                .env("RTSCOPE_DB", &db)
                .args(["run", "-D", "400ms", "-t", "1", "-q", "-i", &interval_us(k).to_string(), "--out"])
                .arg(&out)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&out).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    assert_eq!(files.len(), n as usize, "one file per run");
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), n as usize, "{rows:?}");
    // The result rows as stored from memory: (interval, samples, max) of each
    // run's entries, by run id.
    let stored_rows = |id: i64| -> Vec<(u64, u64, u64)> {
        let q = "SELECT interval_ns, samples, max_ns FROM results WHERE run_id = $1 ORDER BY idx";
        match &db {
            Db::File(f) => {
                let c = rusqlite::Connection::open(f).unwrap();
                let mut st = c.prepare(&q.replace("$1", "?1")).unwrap();
                st.query_map([id], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64)))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect()
            }
            Db::Pg(u) => pg_support::client(u)
                .query(q, &[&id])
                .unwrap()
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64, r.get::<_, i64>(2) as u64))
                .collect(),
        }
    };
    let mut intervals = Vec::new();
    for row in &rows {
        let id = row["id"].as_i64().unwrap();
        let o = with_db(&db, &["export", &id.to_string()]);
        assert!(o.status.success(), "{}", stderr(&o));
        // The stored document is one of the files, byte for byte, and no
        // other run's: each file is taken once.
        let at = files.iter().position(|f| *f == o.stdout).unwrap_or_else(|| panic!("run #{id}'s document is none of the result files"));
        files.remove(at);
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let entries: Vec<(u64, u64, u64)> =
            doc["results"].as_array().unwrap().iter().map(|r| (common::u(&r["interval_ns"]), common::u(&r["samples"]), common::u(&r["max_ns"]))).collect();
        assert_eq!(entries, stored_rows(id), "run #{id}: the document's plan and counts are its own rows'");
        assert_eq!(common::u(&doc["plan"]["interval_ns"]), entries[0].0);
        intervals.push(entries[0].0);
    }
    intervals.sort();
    assert_eq!(intervals, (0..n).map(|k| interval_us(k) * 1000).collect::<Vec<_>>(), "every run stored once");
}

both!(many_concurrent_imports_all_land, "results.db");
fn many_concurrent_imports_all_land(db: &Db, _dir: &Path) {
    let db = db.clone();
    let n = 8;
    let kids: Vec<_> = (0..n)
        .map(|i| {
            bin()
                .env("RTSCOPE_DB", &db)
                .args(["import", fixture("cyclictest.json").to_str().unwrap(), "--name"])
                .arg(format!("board-{i}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut k in kids {
        assert!(k.wait().unwrap().success());
    }
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), n);
    let mut hosts: Vec<String> = rows.iter().map(|r| r["host"].as_str().unwrap().to_string()).collect();
    hosts.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("board-{i}")).collect();
    want.sort();
    assert_eq!(hosts, want);
}

both!(history_filters_tags_and_rm, "results.db");
fn history_filters_tags_and_rm(db: &Db, _dir: &Path) {
    let db = db.clone();
    // cyclictest.json records host "vm"-like nodename and a kernel; ptsematest has neither.
    let cj: Value = serde_json::from_slice(&std::fs::read(fixture("cyclictest.json")).unwrap()).unwrap();
    let node = cj["sysinfo"]["nodename"].as_str().unwrap();
    let kernel = cj["sysinfo"]["release"].as_str().unwrap();
    for (f, extra) in [("cyclictest.json", vec![]), ("ptsematest.txt", vec!["--name", "board-b"]), ("oslat.json", vec!["--tag", "nightly"])] {
        let mut args = vec!["import", "--phase", "idle"];
        let p = fixture(f);
        args.push(p.to_str().unwrap());
        args.extend(extra);
        let o = with_db(&db, &args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(history(&db, &[]).len(), 3);
    let by_host = history(&db, &["--host", "board-b"]);
    assert_eq!(by_host.len(), 1);
    assert_eq!(by_host[0]["probes"], "sem");
    let by_kernel = history(&db, &["--kernel", &kernel[..kernel.len().min(4)]]);
    assert_eq!(by_kernel.len(), 2, "cyclictest and oslat recorded the kernel");
    assert!(by_kernel.iter().all(|r| r["host"] == node));
    assert_eq!(history(&db, &["--since", "2999-01-01"]).len(), 0);
    assert_eq!(history(&db, &["--since", "2000-01-01"]).len(), 3);
    let o = with_db(&db, &["history", "--since", "yesterday"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--since"));

    let tagged = history(&db, &["--tag", "nightly"]);
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0]["probes"], "noise");
    let sem_id = by_host[0]["id"].as_i64().unwrap().to_string();
    assert!(with_db(&db, &["tag", &sem_id, "baseline"]).status.success());
    assert_eq!(history(&db, &["--tag", "baseline"])[0]["id"].as_i64().unwrap().to_string(), sem_id);
    let o = with_db(&db, &["tag", &sem_id, "bad tag"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(with_db(&db, &["tag", &sem_id, "baseline", "--remove"]).status.success());
    assert!(history(&db, &["--tag", "baseline"]).is_empty());

    // show names the import and its fidelity notes.
    let o = with_db(&db, &["show", &sem_id]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("rt-tests-ipc") && s.contains("summary only"), "{s}");

    // rm with one unknown id deletes nothing.
    let o = with_db(&db, &["rm", &sem_id, "999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("999"));
    assert_eq!(history(&db, &[]).len(), 3);
    assert!(with_db(&db, &["rm", &sem_id]).status.success());
    let left = history(&db, &[]);
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|r| r["id"].as_i64().unwrap().to_string() != sem_id));
    let o = with_db(&db, &["show", &sem_id]);
    assert_eq!(o.status.code(), Some(2));
}

both!(stored_columns_match_the_json, "results.db");
fn stored_columns_match_the_json(db: &Db, _dir: &Path) {
    let db = db.clone();
    let o = with_db(&db, &["import", fixture("rtla-timerlat-hist.txt").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let loc = rtscope::store::Location::resolve(Some(Path::new(db.as_ref()))).unwrap();
    let mut store = rtscope::store::Store::open_existing(&loc).unwrap();
    let run = store.load(1).unwrap();
    for (idx, r) in run.results.iter().enumerate() {
        let rows = store.buckets(1, idx).unwrap();
        let want: Vec<(u64, u64, u64)> = r.histogram.iter().map(|b| (b.lo_ns.0, b.hi_ns.0, b.count)).collect();
        assert_eq!(rows, want, "buckets table of result {idx}");
    }
}

both!(seed001_tables_come_out_of_compare_with_the_same_counts_per_bin, "results.db");
fn seed001_tables_come_out_of_compare_with_the_same_counts_per_bin(db: &Db, dir: &Path) {
    let db = db.clone();
    for table in ["idle", "disk", "network", "compute", "combined"] {
        let f = format!("seed001-{table}.csv");
        let tag = format!("seed001-{table}");
        let o = with_db(&db, &["import", fixture(&f).to_str().unwrap(), "--phase", table, "--probe", "irq", "--tag", &tag]);
        assert!(o.status.success(), "{}", stderr(&o));
        // The seed's bins are 5 µs (some wider, all multiples of 5 µs): compare's 5 µs bins.
        let o = with_db(&db, &["compare", &format!("@{tag}"), "--bins", "5us", "--format", "json"]);
        assert!(o.status.success(), "compare @{tag}: {}", stderr(&o));
        let c: Value = serde_json::from_slice(&o.stdout).unwrap();
        let (names, rows) = read_bins(&f);
        let systems: Vec<String> = c["systems"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().trim().to_string()).collect();
        assert_eq!(systems, names, "{table}: systems in column order");
        let bt = c["bin_tables"].as_array().unwrap().iter().find(|t| t["key"]["phase"] == table).unwrap();
        let got: Vec<(u64, u64, Vec<u64>)> = bt["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (u64_of(&r["lo_ns"]), u64_of(&r["hi_ns"]), r["counts"].as_array().unwrap().iter().map(u64_of).collect::<Vec<u64>>()))
            .filter(|(_, _, counts)| counts.iter().any(|&n| n > 0))
            .collect();
        // Each 5 µs source bin is one 5 µs row; a wider source bin (idle's
        // 55-100 µs) keeps its own range.
        let want: Vec<(u64, u64, Vec<u64>)> = rows.clone();
        assert_eq!(got, want, "{table}: counts per bin");
    }
    // Ids and files mix with tags; an unknown tag or id is exit 2.
    let one = history(&db, &["--tag", "seed001-idle"]);
    let id = one[0]["id"].as_i64().unwrap().to_string();
    let exported = dir.join("x.json");
    assert!(with_db(&db, &["export", &one[1]["id"].as_i64().unwrap().to_string(), "-o", exported.to_str().unwrap()]).status.success());
    let o = with_db(&db, &["compare", &id, exported.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(c["systems"].as_array().unwrap().len(), 2);
    let o = with_db(&db, &["compare", "@no-such-tag", &id]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-tag"));
    let o = with_db(&db, &["compare", &id, "424242"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("424242"));
    let o = with_db(&db, &["compare", &id]);
    assert_eq!(o.status.code(), Some(2), "one result is not a comparison");
    let o = with_db(&db, &["report", "@seed001-disk", "--format", "md"]);
    assert!(o.status.success(), "report @tag: {}", stderr(&o));
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

both!(an_interrupted_run_is_saved_with_the_samples_taken, "results.db");
fn an_interrupted_run_is_saved_with_the_samples_taken(db: &Db, dir: &Path) {
    let db = db.clone();
    let json = dir.join("r.json");
    let mut child = bin().env("RTSCOPE_DB", &db).args(["run", "-D", "20s", "-t", "1", "-q", "--json"]).arg(&json).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["interrupted"], true);
    let id = rows[0]["id"].as_i64().unwrap().to_string();
    let o = with_db(&db, &["export", &id]);
    assert_eq!(o.stdout, std::fs::read(&json).unwrap());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["results"][0]["samples"].as_u64().unwrap() > 0, "the samples taken are kept");
}

/// Reading commands never create the history database: `history` says there
/// is none (exit 0, `[]` with --json); show, export, tag, rm and a stored id or
/// tag in report exit 2 naming the path. Nothing is created, not even its directory.
#[test]
fn reading_commands_do_not_create_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none/results.db");
    let o = with_db(&db, &["history"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("no runs in") && stdout(&o).contains("no database there yet"), "{}", stdout(&o));
    assert_eq!(history(&db, &[]).len(), 0);
    for args in [vec!["show", "1"], vec!["export", "1"], vec!["tag", "1", "x"], vec!["rm", "1"], vec!["report", "1"], vec!["report", "@x"]] {
        let o = with_db(&db, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("results.db") && err.contains("no history database there"), "{args:?}: {err}");
    }
    assert!(!dir.path().join("none").exists(), "a reading command created {}", db.display());
}

/// Everything a command printed.
fn all_output(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// PostgreSQL refusals: a server that is down or refuses the password is
/// exit 2 before measuring (no result file), a schema from a newer rtscope
/// is refused untouched, reading commands create nothing; the password is
/// never printed nor stored (the result's command line has it redacted);
/// PGPASSWORD is taken when the URL has none.
#[test]
fn postgres_refusals_and_the_password() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pw = pg_support::PASSWORD;

    // Down: a port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = format!("postgresql://rtscope:{pw}@127.0.0.1:{closed}/x?connect_timeout=3");
    let json = dir.path().join("down.json");
    let o = bin().args(["run", "-D", "300ms", "-t", "1", "--db", &down, "--json"]).arg(&json).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("127.0.0.1:{closed}")) && err.contains("***"), "names the database without its password: {err}");
    assert!(!all_output(&o).contains(pw), "password printed: {}", all_output(&o));
    assert!(!json.exists(), "nothing measured or written before the database is known to work");

    // A wrong password.
    let bad = url.replace(pw, "wrong-pass-77");
    let o = with_db(&bad, &["history"]);
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    assert!(!all_output(&o).contains("wrong-pass-77"), "{}", all_output(&o));
    assert!(stderr(&o).contains("password"), "says why: {}", stderr(&o));

    // Reading commands create nothing: no schema appears.
    let o = with_db(&url, &["history"]);
    assert_eq!(o.status.code(), Some(0), "{}", all_output(&o));
    assert!(stdout(&o).contains("no runs in") && !stdout(&o).contains(pw), "{}", stdout(&o));
    for args in [vec!["show", "1"], vec!["export", "1"], vec!["tag", "1", "x"], vec!["rm", "1"], vec!["report", "1"]] {
        let o = with_db(&url, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", all_output(&o));
        assert!(stderr(&o).contains("no rtscope history yet") && !all_output(&o).contains(pw), "{args:?}: {}", stderr(&o));
    }
    let mut c = pg_support::client(&url);
    let has_schema: bool = c.query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'rtscope')", &[]).unwrap().get(0);
    assert!(!has_schema, "a reading command created the schema");

    // PGPASSWORD when the URL has none; the stored command line is redacted.
    let no_pw = url.replace(&format!(":{pw}@"), "@");
    let json = dir.path().join("r.json");
    let o = bin().env("PGPASSWORD", pw).args(["run", "-D", "300ms", "-t", "1", "-q", "--db", &url, "--json"]).arg(&json).output().unwrap();
    assert!(o.status.success(), "{}", all_output(&o));
    assert!(!all_output(&o).contains(pw));
    let o = bin().env("PGPASSWORD", pw).env("RTSCOPE_DB", &no_pw).args(["export", "1"]).output().unwrap();
    assert!(o.status.success(), "PGPASSWORD: {}", all_output(&o));
    let stored = stdout(&o);
    assert!(!stored.contains(pw) && stored.contains("rtscope:***@"), "the stored command line: {stored}");
    assert_eq!(o.stdout, std::fs::read(&json).unwrap(), "export is byte-identical");

    // A newer schema: refused, nothing changed.
    c.batch_execute("UPDATE rtscope.schema_version SET version = 99").unwrap();
    for args in [vec!["history"], vec!["import", fixture("ptsematest.txt").to_str().unwrap()]] {
        let o = with_db(&url, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", all_output(&o));
        assert!(stderr(&o).contains("newer rtscope"), "{}", stderr(&o));
    }
    let v: i64 = c.query_one("SELECT version FROM rtscope.schema_version", &[]).unwrap().get(0);
    let runs: i64 = c.query_one("SELECT COUNT(*) FROM rtscope.runs", &[]).unwrap().get(0);
    assert_eq!((v, runs), (99, 1));
}

/// The database goes away while a run measures: the result file is kept
/// whole and the message says how to import it later.
#[test]
fn postgres_gone_at_the_end_keeps_the_result() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = bin().args(["run", "-D", "3s", "-t", "1", "-q", "--db", &url, "--json"]).arg(&json).stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let name = url.rsplit('/').next().unwrap().to_string();
    let admin = url.replace(&format!("/{name}"), "/postgres");
    pg_support::client(&admin).batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(&format!("rtscope import {}", json.display())), "{err}");
    assert!(!err.contains(pg_support::PASSWORD), "{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("the result file is complete");
    assert!(v["results"][0]["samples"].as_u64().unwrap() > 0);
    // And it imports.
    let db = dir.path().join("later.db");
    let o = with_db(&db, &["import", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `sslmode=require` in the URL: the session is encrypted — a role the
/// server refuses without TLS saves and lists runs; with `sslmode=disable`
/// the same role is refused (exit 2).
#[test]
fn postgres_over_tls_when_the_url_asks() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    let tls_url = url.replacen(&format!("{}:", pg_support::USER), &format!("{}:", pg_support::TLS_USER), 1);
    let o = with_db(&format!("{tls_url}?sslmode=require"), &["import", fixture("ptsematest.txt").to_str().unwrap()]);
    assert!(o.status.success(), "over TLS: {}", all_output(&o));
    assert_eq!(history(&format!("{tls_url}?sslmode=require"), &[]).len(), 1);
    let o = with_db(&format!("{tls_url}?sslmode=disable"), &["history"]);
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    assert!(stderr(&o).contains("no encryption") || stderr(&o).contains("pg_hba.conf"), "{}", stderr(&o));
    assert!(!all_output(&o).contains(pg_support::PASSWORD));
}

both!(monitor_windows_land_in_the_history, "results.db");
fn monitor_windows_land_in_the_history(db: &Db, dir: &Path) {
    let json = dir.join("m.json");
    let o = with_db(db, &["monitor", "--window", "200ms", "-D", "1s", "-t", "1", "-q", "--json", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let n = run["monitor"]["windows"].as_u64().unwrap();
    assert!(n >= 3, "{n}");
    let rows = history(db, &[]);
    assert_eq!(rows.len(), 1, "the monitor run is stored: {rows:?}");
    let id = rows[0]["id"].as_i64().unwrap().to_string();
    let o = with_db(db, &["history", "--json", "--windows", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let merged: Vec<&Value> = w.iter().filter(|x| x["thread"].is_null()).collect();
    assert_eq!(merged.len() as u64, n, "one merged row per closed window");
    assert!(merged.iter().enumerate().all(|(i, x)| x["index"].as_u64() == Some(i as u64)), "in order");
    // The stored run's overall max is the largest window max.
    let max = merged.iter().map(|x| x["max_ns"].as_u64().unwrap()).max().unwrap();
    let overall = run["results"].as_array().unwrap().iter().find(|r| r["thread"].is_null()).unwrap()["max_ns"].as_u64().unwrap();
    assert_eq!(overall, max);
    // A run that is not a monitor's has no windows: exit 2.
    let plain = dir.join("r.json");
    assert!(short_run(db, &plain).status.success());
    let o = with_db(db, &["history", "--windows", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a monitor run"));
}

// ---- Hardening (issue 36): outputs, damaged and foreign histories,
// ---- atomic imports, URLs, ids, refusing and silent servers.

/// Output paths are never renamed over unless they are regular files:
/// a symbolic link keeps pointing at its (now written) target, a device
/// node stays a device, and `check --junit` at a path it cannot write is
/// exit 2 before any verdict is printed.
#[test]
fn output_paths_write_through_links_and_devices() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let result = fixture("../golden/result-v1.json");
    // report -o through a dangling link: the link stays, its target is written.
    let link = dir.path().join("l.md");
    std::os::unix::fs::symlink("t.md", &link).unwrap();
    let o = bin().current_dir(dir.path()).args(["report", result.to_str().unwrap(), "--format", "md", "-o", "l.md"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    let md = std::fs::read_to_string(dir.path().join("t.md")).expect("the link's target is written");
    assert!(md.contains('|') && md.len() > 100, "{md}");
    // Again, through the now resolving link: still a link, target rewritten.
    std::fs::write(dir.path().join("t.md"), "old").unwrap();
    let o = bin().current_dir(dir.path()).args(["report", result.to_str().unwrap(), "--format", "md", "-o", "l.md"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(dir.path().join("t.md")).unwrap(), md);

    // export -o and run --json into a character device (root: mknod).
    if common::is_root() {
        let dev = dir.path().join("null");
        let st = Command::new("mknod").arg(&dev).args(["c", "1", "3"]).status().unwrap();
        assert!(st.success());
        let db = dir.path().join("h.db");
        assert!(with_db(&db, &["import", result.to_str().unwrap()]).status.success());
        let o = with_db(&db, &["export", "1", "-o", dev.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = bin().args(["run", "-D", "200ms", "-t", "1", "-q", "--no-store", "--json"]).arg(&dev).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(std::fs::metadata(&dev).unwrap().file_type().is_char_device(), "the device node was replaced by a file");
    }

    // check --junit into a directory or /proc: exit 2, no verdict printed.
    for junit in [dir.path().to_str().unwrap(), "/proc/rtscope-x.xml"] {
        let o = bin().args(["check", result.to_str().unwrap(), "--max", "1000000000", "--junit", junit]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "--junit {junit}: {}", all_output(&o));
        assert!(stdout(&o).is_empty(), "verdict printed before the refusal: {}", stdout(&o));
        assert!(stderr(&o).contains("--junit"), "{}", stderr(&o));
    }
}

/// The bytes of a file and of its -wal / -shm companions (absent = empty).
fn db_bytes(db: &Path) -> (Vec<u8>, Vec<u8>) {
    let side = |s: &str| std::fs::read(format!("{}{s}", db.display())).unwrap_or_default();
    (std::fs::read(db).unwrap(), side("-wal"))
}

/// A history with a damaged page: every writer (import, tag, rm) refuses
/// it with exit 2 before writing, and reading commands never change the
/// file, not even its journal mode.
#[test]
fn damaged_history_is_never_written_and_reading_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for _ in 0..6 {
        imported(&db, &["ptsematest.txt", "cyclictest-hist.txt", "cyclictest.json"]);
    }
    // Reading a database in rollback-journal mode leaves it byte for byte.
    let page_size = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
        c.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0)).unwrap() as usize
    };
    let clean = std::fs::read(&db).unwrap();
    for args in [vec!["history"], vec!["show", "1"], vec!["export", "1"], vec!["report", "1", "--format", "md"]] {
        let o = with_db(&db, &args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(std::fs::read(&db).unwrap() == clean, "{args:?} changed the file");
    }
    // Zero a page in the middle (not page 1, the schema).
    let mut bytes = clean.clone();
    let pages = bytes.len() / page_size;
    assert!(pages > 12, "{pages} pages");
    bytes[9 * page_size..10 * page_size].fill(0);
    std::fs::write(&db, &bytes).unwrap();
    for args in [vec!["import", fixture("pmqtest.txt").to_str().unwrap()], vec!["tag", "1", "x"], vec!["rm", "2"]] {
        let o = with_db(&db, &args);
        assert_refused_untouched(&db, &bytes, &o, "corrupt");
        assert!(!stdout(&o).contains("imported"), "{}", stdout(&o));
    }
    assert!(db_bytes(&db).1.is_empty(), "a -wal file was written");
}

/// Another program's SQLite file is refused by every command, untouched;
/// an empty file stays empty under reading commands.
#[test]
fn foreign_database_and_empty_file_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada');").unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    for args in [vec!["show", "1"], vec!["history"], vec!["import", fixture("ptsematest.txt").to_str().unwrap()], vec!["tag", "1", "x"]] {
        let o = with_db(&db, &args);
        assert_refused_untouched(&db, &before, &o, "another program's SQLite database");
        assert!(stderr(&o).contains("contacts"), "names what it holds: {}", stderr(&o));
    }
    let json = dir.path().join("r.json");
    assert_refused_untouched(&db, &before, &short_run(&db, &json), "another program's");
    assert!(!json.exists());

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let o = with_db(&empty, &["history"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for args in [vec!["show", "1"], vec!["tag", "1", "x"]] {
        let o = with_db(&empty, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "a reading command turned the empty file into a database");
}

/// A multi-column CSV with one value past what the history keeps: exit 2
/// naming the file, the column and the value, nothing stored (also with
/// --dry-run); a good file's columns are stored together.
#[test]
fn multi_column_import_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let csv = dir.path().join("p.csv");
    std::fs::write(&csv, "rhealstone_us,GOOD,BAD\ntask-switch,4.2,99999999999999999\npreemption,5.5,7.1\n").unwrap();
    for extra in [&[][..], &["--dry-run"][..]] {
        let mut args = vec!["import", csv.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = with_db(&db, &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", all_output(&o));
        let err = stderr(&o);
        assert!(err.contains("p.csv") && err.contains("line 2") && err.contains("BAD (column 3)") && err.contains("past the largest value"), "{err}");
        assert!(!stdout(&o).contains("imported"), "{}", stdout(&o));
    }
    assert!(!db.exists() || history(&db, &[]).is_empty(), "a column was stored");
    std::fs::write(&csv, "rhealstone_us,A,B,C\ntask-switch,4.2,4.4,4.9\npreemption,5.5,7.1,6.0\n").unwrap();
    let o = with_db(&db, &["import", csv.to_str().unwrap(), "--tag", "lab"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = history(&db, &["--tag", "lab"]);
    assert_eq!(rows.len(), 3, "{rows:?}");
}

/// `--db` URLs: the scheme is case-insensitive; an unknown scheme is exit
/// 2 without the password, and no file or directory is created.
#[test]
fn database_urls_unknown_schemes_and_case() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for url in [format!("pg://rt:secretpw@127.0.0.1:{closed}/rt"), format!("mysql://rt:secretpw@127.0.0.1:{closed}/rt")] {
        let o = bin().current_dir(dir.path()).args(["history", "--db", &url]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}: {}", all_output(&o));
        assert!(stderr(&o).contains("unknown URL scheme"), "{}", stderr(&o));
        assert!(!all_output(&o).contains("secretpw"), "{}", all_output(&o));
    }
    let url = format!("POSTGRESQL://rt:secretpw@127.0.0.1:{closed}/rt?connect_timeout=5");
    let json = dir.path().join("r.json");
    let o = bin().current_dir(dir.path()).args(["run", "-D", "200ms", "-t", "1", "-q", "--db", &url, "--json"]).arg(&json).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    assert!(stderr(&o).contains("cannot connect"), "taken as PostgreSQL: {}", stderr(&o));
    assert!(!all_output(&o).contains("secretpw"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "created {left:?}");
}

/// Used-up run ids and hand-changed schemas: exit 2 with what happened
/// and what to do, never "filesystem is full" or a raw SQL error.
#[test]
fn exhausted_ids_and_changed_schemas_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let f = fixture("ptsematest.txt");
    assert!(with_db(&db, &["import", f.to_str().unwrap()]).status.success());
    rusqlite::Connection::open(&db).unwrap().execute("UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'runs'", []).unwrap();
    let o = with_db(&db, &["import", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    assert!(stderr(&o).contains("every run id has been used") && !stderr(&o).contains("full"), "{}", stderr(&o));
    assert_eq!(history(&db, &[]).len(), 1);

    let v2 = dir.path().join("v2.db");
    std::fs::copy(&db, &v2).unwrap();
    rusqlite::Connection::open(&v2).unwrap().pragma_update(None, "user_version", 2).unwrap();
    let renamed = dir.path().join("renamed.db");
    std::fs::copy(&db, &renamed).unwrap();
    rusqlite::Connection::open(&renamed).unwrap().execute_batch("ALTER TABLE runs RENAME COLUMN host TO hostx").unwrap();
    for changed in [&v2, &renamed] {
        let before = std::fs::read(changed).unwrap();
        for args in [vec!["import", f.to_str().unwrap()], vec!["history"]] {
            let o = with_db(changed, &args);
            assert_refused_untouched(changed, &before, &o, "changed by another program or by hand");
            assert!(!stderr(&o).contains("SQL logic error") && !stderr(&o).contains("duplicate column"), "{}", stderr(&o));
        }
    }
}

/// A server on 127.0.0.1 that accepts connections and never answers:
/// every command gives up after `connect_timeout` (exit 2) instead of
/// hanging. The wait for the child is bounded; its exit is the assertion.
#[test]
fn silent_server_is_given_up_on_after_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept and hold every connection, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgresql://rt:pw@127.0.0.1:{port}/rt?connect_timeout=1");
    for args in [vec!["history"], vec!["import", fixture("ptsematest.txt").to_str().unwrap()]] {
        let mut child = bin()
            .env("RTSCOPE_DB", &url)
            .current_dir(dir.path())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut status = None;
        for _ in 0..1200 {
            if let Some(s) = child.try_wait().unwrap() {
                status = Some(s);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still waiting on a silent server after 60 s (connect_timeout=1)");
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", all_output(&o));
        assert!(stderr(&o).contains("no answer within 1 s"), "{}", stderr(&o));
    }
}

/// A PostgreSQL role the server refuses (no rights on rtscope's schema):
/// exit 2 with advice, as the README says of a refusing server.
#[test]
fn postgres_role_without_rights_is_exit_2() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    assert!(with_db(&url, &["import", fixture("ptsematest.txt").to_str().unwrap()]).status.success());
    let role = format!("norights_{}", std::process::id());
    pg_support::client(&url).batch_execute(&format!("CREATE ROLE {role} LOGIN PASSWORD 'np-77'")).unwrap();
    let weak = url.replacen(&format!("{}:{}", pg_support::USER, pg_support::PASSWORD), &format!("{role}:np-77"), 1);
    for args in [vec!["history"], vec!["import", fixture("pmqtest.txt").to_str().unwrap()], vec!["tag", "1", "x"]] {
        let o = with_db(&weak, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", all_output(&o));
        assert!(stderr(&o).contains("refuses") || stderr(&o).contains("permission denied"), "{args:?}: {}", stderr(&o));
        assert!(!all_output(&o).contains("np-77"));
    }
    assert_eq!(history(&url, &[]).len(), 1, "nothing stored through the refused role");
}

/// `history` on a full filesystem (a WAL database whose -shm cannot be
/// made there) still reads; run with the history there keeps its result
/// and says how to import it. Needs root to mount a small tmpfs.
#[test]
fn full_filesystem_still_reads_and_keeps_the_result() {
    if !common::is_root() {
        common::skip!("needs root to mount a tmpfs");
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    if !Command::new("mount").args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"]).arg(&mnt).status().map(|s| s.success()).unwrap_or(false) {
        common::skip!("cannot mount a tmpfs here");
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let db = mnt.join("h.db");
    assert!(with_db(&db, &["import", fixture("ptsematest.txt").to_str().unwrap()]).status.success());
    // Fill the filesystem to the last block.
    let _ = Command::new("dd").args(["if=/dev/zero", "bs=4k"]).arg(format!("of={}", mnt.join("fill").display())).output();
    for s in ["-shm", "-wal"] {
        let _ = std::fs::remove_file(format!("{}{s}", db.display()));
    }
    let rows = history(&db, &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let o = with_db(&db, &["show", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Import now fails for lack of room: exit 2, nothing half-written.
    let o = with_db(&db, &["import", fixture("pmqtest.txt").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    assert_eq!(history(&db, &[]).len(), 1);
}

/// A monitor keeps going when its PostgreSQL database goes away (the
/// connection killed, new ones refused) and comes back: exit 0, the result
/// file written, and every window stored once the database is back.
#[test]
fn monitor_survives_the_database_going_away() {
    use std::io::BufRead;
    let Some(Db::Pg(url)) = pg_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("mon.json");
    let dbname = url.rsplit('/').next().unwrap().to_string();
    let mut child = bin()
        .env("RTSCOPE_DB", &url)
        .args(["monitor", "--window", "200ms", "-D", "6s", "-t", "1", "--json", json.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    let wait_line = |what: &str| -> bool {
        // Bounded: the monitor lasts 6 s; 60 s is far beyond any wait here.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(l) if l.contains(what) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    };
    assert!(wait_line("window 1 "), "the monitor never closed its second window");
    let mut admin = pg_support::client(&url.replace(&format!("/{dbname}"), "/postgres"));
    admin.batch_execute(&format!("ALTER DATABASE {dbname} ALLOW_CONNECTIONS false")).unwrap();
    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'rtscope'", &[&dbname]).unwrap();
    assert!(wait_line("is away"), "the monitor did not notice the database going away");
    admin.batch_execute(&format!("ALTER DATABASE {dbname} ALLOW_CONNECTIONS true")).unwrap();
    let status = child.wait().unwrap();
    let all = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{all}");
    let run: Value = serde_json::from_slice(&std::fs::read(&json).expect("mon.json written")).unwrap();
    let windows = run["monitor"]["windows"].as_u64().unwrap();
    let rows = history(&url, &[]);
    assert_eq!(rows.len(), 1, "{all}");
    let id = rows[0]["id"].as_i64().unwrap().to_string();
    let o = with_db(&url, &["history", "--json", "--windows", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let merged = w.iter().filter(|x| x["thread"].is_null()).count() as u64;
    assert_eq!(merged, windows, "every window stored once the database was back: {all}");
}

/// `url` with its database replaced by `postgres` (the server's own), for
/// what cannot be done while connected to the database itself.
fn admin_url(url: &str) -> String {
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/postgres")
}

/// The name of `url`'s database.
fn db_name(url: &str) -> String {
    url.rsplit_once('/').unwrap().1.to_string()
}

/// A password with a `?` in it, and URLs inside other arguments (issue 59
/// item 7): the secret is in no output, result, history row or error.
#[test]
fn adversarial_passwords_are_in_no_output_file_row_or_error() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let name = db_name(&url);
    // A role whose password holds a `?`: a valid URL that connects.
    let mut admin = pg_support::client(&admin_url(&url));
    admin.batch_execute(&format!("CREATE ROLE adv2 LOGIN PASSWORD 'ab?cdSECRET2'; ALTER DATABASE {name} OWNER TO adv2")).unwrap();
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap().to_string();
    let adv = format!("postgres://adv2:ab?cdSECRET2@127.0.0.1:{port}/{name}");
    let load = "cmd:sleep 30 # pgbench postgresql://user:LOADSECRET3@127.0.0.1/bench https://x:WEBSECRET4@example.invalid/";
    let secrets = ["SECRET2", "LOADSECRET3", "WEBSECRET4"];
    let clean = |what: &str, text: &str| {
        for s in secrets {
            assert!(!text.contains(s), "{what} holds {s}: {text}");
        }
    };
    let json = dir.path().join("r.json");
    let o = bin().args(["run", "-D", "300ms", "-t", "1", "--settle", "0", "--load", load, "--db", &adv, "--json"]).arg(&json).output().unwrap();
    assert!(o.status.success(), "{}", all_output(&o));
    clean("run's output", &all_output(&o));
    assert!(stdout(&o).contains(&format!("saved: run #1 in postgres://adv2:***@127.0.0.1:{port}/{name}")), "{}", stdout(&o));
    let file = std::fs::read_to_string(&json).unwrap();
    clean("the result file", &file);
    let cl: Value = serde_json::from_str::<Value>(&file).unwrap()["command_line"].clone();
    assert!(cl.to_string().contains("postgresql://user:***@127.0.0.1/bench"), "the load's URL kept without its password: {cl}");
    // A monitor's "saved:" line, and the history read back.
    let o = bin().args(["monitor", "--window", "300ms", "-D", "700ms", "-t", "1", "--db", &adv, "--json"]).arg(dir.path().join("m.json")).output().unwrap();
    assert!(o.status.success(), "{}", all_output(&o));
    assert!(stdout(&o).contains("saved: run #2 in postgres://adv2:***@"), "{}", stdout(&o));
    clean("monitor's output", &all_output(&o));
    clean("monitor's result", &std::fs::read_to_string(dir.path().join("m.json")).unwrap());
    for args in [vec!["history"], vec!["show", "1"], vec!["export", "1"], vec!["report", "1", "--no-pwcet"], vec!["show", "9"]] {
        let o = with_db(&adv, &args);
        clean(&format!("{args:?}"), &all_output(&o));
    }
    // Errors: a server that is down, a usage error quoting the URL.
    let down = adv.replace(&format!(":{port}/"), ":1/");
    let o = bin().args(["run", "-D", "300ms", "-t", "1", "--db", &down, "--json"]).arg(dir.path().join("d.json")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", all_output(&o));
    clean("the error of a database that is down", &all_output(&o));
    let o = bin().args(["run", "--no-such-flag", &adv]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    clean("a usage error", &all_output(&o));
    // Every row the history holds, as text.
    let mut c = pg_support::client(&url);
    for table in ["runs", "run_json", "results", "tags", "windows"] {
        for row in c.query(&format!("SELECT t::text FROM rtscope.{table} t"), &[]).unwrap() {
            clean(&format!("a row of {table}"), &row.get::<_, String>(0));
        }
    }
}

/// The database taken away during a monitor's last windows, then SIGINT
/// (issue 61: the windows waiting in memory were lost, and the lost one
/// held the worst case): the rescue file carries them, `import` restores
/// them — every window in the history, the worst case among them.
#[test]
fn a_monitor_ending_while_the_database_is_away_loses_no_window() {
    let Some(Db::Pg(url)) = pg_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let name = db_name(&url);
    let json = dir.path().join("m.json");
    let child = bin()
        .args(["monitor", "--window", "400ms", "-i", "1000", "-t", "1", "-q", "--db", &url, "--json"])
        .arg(&json)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stored = || -> i64 {
        let Ok(mut c) = postgres::Client::connect(&url, postgres::NoTls) else { return -1 };
        c.query_one("SELECT COUNT(DISTINCT idx) FROM rtscope.windows", &[]).map(|r| r.get(0)).unwrap_or(0)
    };
    assert!(common::wait_for(std::time::Duration::from_secs(60), || stored() >= 2), "2 windows stored");
    // Away: no connection accepted, the monitor's own cut.
    let mut admin = pg_support::client(&admin_url(&url));
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        ))
        .unwrap();
    // A few windows close while it is away.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is away (") && err.matches(&format!("127.0.0.1:{}", url.rsplit_once(':').unwrap().1.split('/').next().unwrap())).count() <= 2,
        "{err}"
    );
    assert!(err.contains(&format!("`rtscope import {}`", json.display())), "{err}");
    let run: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let n = common::u(&run["monitor"]["windows"]);
    let unstored = run["monitor"]["unstored_windows"].as_array().expect("the rescue file carries the windows the history lacks").clone();
    assert!(!unstored.is_empty() && n >= 4, "{n} windows, {} unstored", unstored.len());
    // Back; the rescue file imported.
    admin.batch_execute(&format!("ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true")).unwrap();
    let o = with_db(&url, &["import", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", all_output(&o));
    let o = with_db(&url, &["history", "--json", "--windows", "1"]);
    assert!(o.status.success(), "{}", all_output(&o));
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let merged: Vec<&Value> = rows.iter().filter(|w| w["thread"].is_null()).collect();
    let idx: Vec<u64> = merged.iter().map(|w| common::u(&w["index"])).collect();
    assert_eq!(idx, (0..n).collect::<Vec<_>>(), "every window once");
    // The worst case is among them: the run's exact max is a window's.
    let overall = run["results"].as_array().unwrap().iter().find(|r| r["thread"].is_null()).unwrap();
    assert_eq!(merged.iter().map(|w| common::u(&w["max_ns"])).max().unwrap(), common::u(&overall["max_ns"]));
    let samples: u64 = merged.iter().map(|w| common::u(&w["samples"])).sum();
    assert_eq!(samples, common::u(&overall["samples"]), "the windows hold every sample of the run");
    let o = with_db(&url, &["report", "1", "--no-pwcet", "--format", "md"]);
    assert!(stdout(&o).contains(&format!("{n} windows of 400ms stored")) && !stdout(&o).contains("missing"), "{}", stdout(&o));
}

/// Another user's SQLite history read by root (issue 59 item 8): `history`,
/// `show`, `export` and `report` by id create nothing beside it (they made
/// root's -shm/-wal, and the owner's next run exited 2 "not writable").
#[test]
fn reading_another_users_history_creates_nothing() {
    if !common_is_root() {
        common::skip!("needs root to make a history as nobody");
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = dir.path().join("theirs.db");
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", env!("CARGO_BIN_EXE_rtscope")])
            .env_remove("RTSCOPE_DB")
            .env("HOME", "/nonexistent")
            .current_dir(dir.path())
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let o = as_nobody(&["run", "-D", "200ms", "-t", "1", "-q", "--json", "a.json"]);
    assert!(o.status.success(), "{}", all_output(&o));
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    let before = listing();
    assert!(!before.iter().any(|f| f.ends_with("-shm") || f.ends_with("-wal")), "{before:?}");
    for args in [vec!["history"], vec!["show", "1"], vec!["export", "1"], vec!["report", "1", "--no-pwcet"], vec!["history", "--json"]] {
        let o = with_db(&db, &args);
        assert!(o.status.success(), "{args:?}: {}", all_output(&o));
        assert_eq!(listing(), before, "{args:?} created files beside another user's history");
    }
    // The owner goes on storing.
    let o = as_nobody(&["run", "-D", "200ms", "-t", "1", "-q", "--json", "b.json"]);
    assert!(o.status.success(), "the owner's next run: {}", all_output(&o));
    assert_eq!(history(&db, &[]).len(), 2);
}
