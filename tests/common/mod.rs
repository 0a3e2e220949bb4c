//! Helpers shared by the integration tests: run the real binary in a private
//! temp directory (results, store and XDG dirs inside it, never the user's).
#![allow(dead_code)]

pub mod lab;
pub mod schema;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Measuring tests take this lock: run in parallel they would disturb each
/// other's CPUs (the orderings checked hold on a quiet CPU, not on one that
/// another test keeps busy at SCHED_FIFO).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a test's `rtscope` saves its runs: the tests' one database policy.
/// Never the user's: a stray RTSCOPE_DB from the environment is replaced.
pub enum Db<'a> {
    /// The shared test database under target/ (most tests).
    Shared,
    /// This database (a test of the store itself).
    At(&'a std::ffi::OsStr),
    /// None set: rtscope's default for the command (golden output, a test
    /// that passes --db or --no-store itself).
    Unset,
}

/// The binary under test.
pub fn rtscope_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rtscope"))
}

/// `rtscope` with the database `db`.
pub fn rtscope_with(db: Db<'_>) -> std::process::Command {
    knobs_before_suite();
    let mut c = std::process::Command::new(rtscope_path());
    match db {
        Db::Shared => c.env("RTSCOPE_DB", concat!(env!("CARGO_TARGET_TMPDIR"), "/rtscope-tests.db")),
        Db::At(path) => c.env("RTSCOPE_DB", path),
        Db::Unset => c.env_remove("RTSCOPE_DB"),
    };
    c
}

/// `rtscope`, saving runs to a test database under target/, never the user's.
pub fn rtscope() -> std::process::Command {
    rtscope_with(Db::Shared)
}

/// Where this `cargo test` keeps every knob's files from before its first
/// test (tests/leftovers.rs holds the suite to them): `$RTSCOPE_KNOBS_BEFORE_SUITE`
/// when test.sh sets it (the check then runs alone, after the whole suite, in
/// a second `cargo test`); else keyed by cargo's pid and start time, so each
/// test binary of one suite finds the same file.
pub fn knobs_before_suite_path() -> PathBuf {
    if let Some(p) = std::env::var_os("RTSCOPE_KNOBS_BEFORE_SUITE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let ppid = std::os::unix::process::parent_id();
    let stat = std::fs::read_to_string(format!("/proc/{ppid}/stat")).unwrap_or_default();
    let start = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(19)).unwrap_or("0").to_string();
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("knobs-before-suite-{ppid}-{start}.json"))
}

/// `rtscope factors --list --format json`, taken once per suite before the
/// first test of its first binary starts (every test makes a Sandbox or
/// calls `rtscope_with` before it changes anything; the others wait here).
fn knobs_before_suite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let path = knobs_before_suite_path();
        if path.exists() {
            return;
        }
        let mut c = std::process::Command::new(rtscope_path());
        if let Ok(o) = c.args(["factors", "--list", "--format", "json"]).env_remove("RTSCOPE_KNOB_ROOT").output() {
            if o.status.success() {
                let _ = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).and_then(|mut f| std::io::Write::write_all(&mut f, &o.stdout));
            }
        }
    });
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        knobs_before_suite();
        Sandbox { dir: tempfile::tempdir().expect("temp dir") }
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    /// `rtscope` with cwd, RTSCOPE_DB and XDG dirs inside the sandbox.
    pub fn cmd(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_rtscope"));
        c.current_dir(self.dir.path())
            .env("RTSCOPE_DB", self.path("results.db"))
            .env("XDG_DATA_HOME", self.path("xdg-data"))
            .env("XDG_CACHE_HOME", self.path("xdg-cache"))
            .env_remove("RTSCOPE_SYSROOT");
        c
    }
    /// Run `rtscope ARGS`, return the output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("spawn rtscope")
    }
    /// Run `rtscope run ARGS --json <sandbox>/NAME`, assert exit 0, parse the result.
    pub fn run_json(&self, name: &str, args: &[&str]) -> Value {
        let path = self.path(name);
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        let p = path.to_str().unwrap().to_string();
        all.extend_from_slice(&["--json", &p]);
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "rtscope {all:?} failed: {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        read_json(&path)
    }
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A test that cannot run here (no root, a tool missing) says why through
/// [`skip!`]: a line `SKIP: why` on stderr, the reason appended to the file
/// `$RTSCOPE_SKIP_LOG` names (test.sh counts them) — and, where no skip is
/// allowed (`RTSCOPE_NO_SKIP=1`: CI, test.sh as root with every package),
/// a failure with the reason. A skip is a result, never a silent pass.
pub fn skipped(why: &str) {
    if std::env::var_os("RTSCOPE_NO_SKIP").is_some_and(|v| v == "1") {
        panic!("this test would skip, and RTSCOPE_NO_SKIP=1 allows no skip: {why}");
    }
    eprintln!("SKIP: {why}");
    if let Some(log) = std::env::var_os("RTSCOPE_SKIP_LOG") {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("?").to_string();
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).create(true).open(log) {
            let _ = writeln!(f, "{test}: {why}");
        }
    }
}

/// `skip!("needs root ({})", what)`: [`skipped`], then return from the test.
#[allow(unused_macros)]
macro_rules! skip {
    ($($why:tt)*) => {{
        $crate::common::skipped(&format!($($why)*));
        return;
    }};
}
#[allow(unused_imports)]
pub(crate) use skip;

/// Skip the test (see [`skip!`]) unless it runs as root.
#[allow(unused_macros)]
macro_rules! need_root {
    ($($why:tt)*) => {
        if !$crate::common::is_root() {
            $crate::common::skip!("needs root: {}", format!($($why)*));
        }
    };
}
#[allow(unused_imports)]
pub(crate) use need_root;

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Results whose `thread` is null (merged) or not.
pub fn merged(run: &Value) -> Vec<&Value> {
    run["results"].as_array().unwrap().iter().filter(|r| r["thread"].is_null()).collect()
}
/// The merged entry of `probe` and `variant` (panics, naming them, when there is none).
pub fn merged_entry<'a>(run: &'a Value, probe: &str, variant: Option<&str>) -> &'a Value {
    run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["probe"] == probe && r["thread"].is_null() && r["variant"].as_str() == variant)
        .unwrap_or_else(|| panic!("no merged {probe} {variant:?} entry"))
}
pub fn per_thread(run: &Value) -> Vec<&Value> {
    run["results"].as_array().unwrap().iter().filter(|r| !r["thread"].is_null()).collect()
}

/// Sum of histogram counts of a result entry.
pub fn hist_sum(r: &Value) -> u64 {
    r["histogram"].as_array().unwrap().iter().map(|b| u(&b["count"])).sum()
}

/// A fixture under tests/fixtures/import.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
}

/// One bins-csv row: (bin_lo_ns, bin_hi_ns, count per column).
pub type BinRow = (u64, u64, Vec<u64>);

/// A bins-csv fixture read independently of the importer: system names and rows.
pub fn read_bins(name: &str) -> (Vec<String>, Vec<BinRow>) {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let names: Vec<String> = lines.next().unwrap().split(',').skip(2).map(String::from).collect();
    let rows = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let counts = (0..names.len()).map(|k| f.get(k + 2).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).unwrap_or(0)).collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), counts)
        })
        .collect();
    (names, rows)
}

/// Is `tool` on PATH?
pub fn have(tool: &str) -> bool {
    host_path(tool).is_some()
}

/// Where `tool` is on PATH (`command -v`), e.g. to `--include` it into a lab guest.
pub fn host_path(tool: &str) -> Option<String> {
    let o = std::process::Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Chromium (or Chrome) on PATH, for the tests that render HTML in a real browser.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|n| {
        let o = std::process::Command::new("which").arg(n).output().ok()?;
        o.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    })
}

/// Headless Chromium with a private profile, no network of its own (no
/// QUIC, no background or component traffic) and no sandbox (root).
pub fn chromium_cmd(bin: &Path, profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// A free TCP port on 127.0.0.1 (bound and released; the server or agent takes it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Poll `cond` every 20 ms for at most `limit`.
pub fn wait_for(limit: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Poll `cond` every 20 ms; panic naming `what` after `limit`.
pub fn wait_until(what: &str, limit: std::time::Duration, cond: impl FnMut() -> bool) {
    assert!(wait_for(limit, cond), "timed out after {limit:?} waiting for {what}");
}

/// An HTTP answer: status, head (status line and headers) and body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
    /// The body as JSON (panics, showing its start, when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", &self.body[..self.body.len().min(300)]))
    }
}

/// One HTTP/1.1 request to `addr` (host:port) over a fresh connection, the
/// path sent as written; the body is read to the server's close (60 s at
/// most). A reply without a status line has status 0.
pub fn http(addr: &str, method: &str, path: &str) -> Answer {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Answer { status, head: head.to_string(), body: body.to_string() }
}

/// A scripted agent (a Python `script` speaking the protocol) in `sb`, as
/// the `--target` that runs it; None, saying SKIP, without python3.
pub fn scripted_agent(sb: &Sandbox, script: &str) -> Option<String> {
    if !have("python3") {
        skipped("python3 is not installed (the scripted agent)");
        return None;
    }
    std::fs::write(sb.path("agent.py"), script).unwrap();
    Some(format!("exec:python3 {}", sb.path("agent.py").display()))
}

/// Text as one line: every run of whitespace (a wrapped line's break and its
/// hanging indent included) becomes one space. Outputs are laid out for the
/// terminal's width (80 columns when piped), so a sentence a test looks for
/// may be broken across lines; compare it with the breaks undone.
pub fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// tests/fake_agent.py with this script (written into the sandbox), as a `--target`;
/// the host's lines land in the sandbox's host.log.
pub fn fake_agent(sb: &Sandbox, script: &str) -> String {
    let path = sb.path("agent.script");
    std::fs::write(&path, script).unwrap();
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agent.py");
    format!("exec:exec python3 {} {} {}", py.display(), path.display(), sb.path("host.log").display())
}

/// `rtscope run --target TARGET ARGS` in the sandbox (ARGS split on whitespace).
pub fn fake_run(sb: &Sandbox, target: &str, args: &str) -> Output {
    let mut a = vec!["run", "--target", target];
    a.extend(args.split_whitespace());
    sb.run(&a)
}

/// A fake agent's script lines for a plan accepted and begun (`variant`: `-` for timer).
pub fn fake_begun(variant: &str, threads: u32) -> String {
    format!("plan\nsay ack id={{id}} variants={variant} threads={threads}\nsay begin id={{id}} variant={variant} threads={threads} duration_ns=1000000000\n")
}
