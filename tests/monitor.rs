//! `rtscope monitor` through the real binary: a real Prometheus server
//! (Debian `prometheus`, started by the test with a temp config and data
//! dir on loopback, stopped on every exit path) scrapes `/metrics`, and the
//! window maxima it stored are the ones rtscope stored; SIGINT ends the
//! monitor with every closed window stored and exit 130; the textfile passes
//! `promtool check metrics`; bad flags are exit 2 before measuring.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// host:port of a loopback port.
fn local(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

/// A child killed and reaped when dropped (every exit path, panics included).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn windows(sb: &Sandbox, id: u64) -> Vec<Value> {
    let out = sb.run(&["history", "--json", "--windows", &id.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn prometheus_scrapes_the_window_maxima_rtscope_stored() {
    let Ok(prom) = which("prometheus") else {
        common::skip!("no prometheus binary (Debian package `prometheus`; test.sh installs it)");
    };
    let sb = Sandbox::new();
    let (mport, pport) = (free_port(), free_port());
    let config = sb.path("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: rtscope\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n"
        ),
    )
    .unwrap();
    let _prom = Reaped(
        Command::new(prom)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", sb.path("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("prometheus to answer", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", pport)).is_ok() && http(&local(pport), "GET", "/-/ready").status == 200
    });
    // 1 s windows for 8 s, one thread on CPU 0: Prometheus scrapes every second.
    let out = sb
        .cmd()
        .args(["monitor", "--window", "1s", "-D", "8s", "-t", "1", "-a", "0", "-q", "--json"])
        .arg(sb.path("m.json"))
        .args(["--listen", &format!("127.0.0.1:{mport}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let run = read_json(&sb.path("m.json"));
    let stored = windows(&sb, 1);
    assert_eq!(stored.iter().filter(|w| w["thread"].is_null()).count() as u64, u(&run["monitor"]["windows"]));
    let stored_max: Vec<f64> = stored.iter().filter(|w| !w["thread"].is_null()).map(|w| u(&w["max_ns"]) as f64 / 1e9).collect();
    assert!(stored_max.len() >= 5, "{stored:?}");
    // Every scraped value of the gauge is one stored window's max, exactly.
    let end = time_now();
    let Answer { status, body, .. } =
        http(&local(pport), "GET", &format!("/api/v1/query_range?query=rtscope_latency_window_max_seconds&start={}&end={end}&step=1", end - 60));
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let series = v["data"]["result"].as_array().unwrap();
    assert_eq!(series.len(), 1, "one thread, one series: {body}");
    assert_eq!(series[0]["metric"]["cpu"], "0");
    assert_eq!(series[0]["metric"]["probe"], "timer");
    let scraped: Vec<f64> = series[0]["values"].as_array().unwrap().iter().map(|p| p[1].as_str().unwrap().parse().unwrap()).collect();
    assert!(!scraped.is_empty());
    for s in &scraped {
        assert!(stored_max.iter().any(|m| (m - s).abs() <= 1e-12), "scraped {s} is no stored window max: {stored_max:?}");
    }
    // The histogram's count never exceeds what was stored.
    let Answer { body, .. } = http(&local(pport), "GET", "/api/v1/query?query=max_over_time(rtscope_latency_seconds_count[5m])");
    let v: Value = serde_json::from_str(&body).unwrap();
    let count: f64 = v["data"]["result"][0]["value"][1].as_str().unwrap().parse().unwrap();
    let total: u64 = stored.iter().filter(|w| !w["thread"].is_null()).map(|w| u(&w["samples"])).sum();
    assert!(count > 0.0 && count <= total as f64, "scraped count {count}, stored {total}");
}

fn time_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    for dir in ["/usr/bin", "/usr/local/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(())
}

#[test]
fn sigint_stores_every_closed_window_and_exits_130() {
    let sb = Sandbox::new();
    let port = free_port();
    let textdir = sb.path("textfile");
    std::fs::create_dir(&textdir).unwrap();
    let child = sb
        .cmd()
        .args(["monitor", "--window", "300ms", "-t", "1", "-a", "0", "--json"])
        .arg(sb.path("m.json"))
        .args(["--listen", &format!(":{port}"), "--textfile"])
        .arg(&textdir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let prom = textdir.join("rtscope.prom");
    // At least 3 windows closed (the textfile counts them).
    wait_until("3 windows", Duration::from_secs(60), || {
        std::fs::read_to_string(&prom)
            .is_ok_and(|t| t.lines().any(|l| l.starts_with("rtscope_windows_total ") && l[22..].trim().parse::<u64>().unwrap_or(0) >= 3))
    });
    // A bare port binds localhost; /metrics answers GET only.
    let Answer { status, body, .. } = http(&local(port), "GET", "/metrics");
    assert_eq!(status, 200);
    assert!(body.contains("rtscope_latency_seconds_bucket{probe=\"timer\",phase=\"idle\",cpu=\"0\",le=\"0.00001\"}"), "{body}");
    assert_eq!(http(&local(port), "POST", "/metrics").status, 405);
    assert_eq!(http(&local(port), "DELETE", "/metrics").status, 405);
    assert_eq!(http(&local(port), "GET", "/").status, 404);
    assert_eq!(http(&local(port), "GET", "/../etc/passwd").status, 404);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.0.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let run = read_json(&sb.path("m.json"));
    assert_eq!(run["interrupted"], true);
    let n = u(&run["monitor"]["windows"]);
    assert!(n >= 3, "{n}");
    let stored = windows(&sb, 1);
    assert_eq!(stored.iter().filter(|w| w["thread"].is_null()).count() as u64, n, "every closed window is stored");
    // The overall histogram holds every sample of every window.
    let merged = run["results"].as_array().unwrap().iter().find(|r| r["thread"].is_null()).unwrap().clone();
    let total: u64 = stored.iter().filter(|w| w["thread"].is_null()).map(|w| u(&w["samples"])).sum();
    assert!(u(&merged["samples"]) >= total, "{} < {total}", merged["samples"]);
    let max = stored.iter().map(|w| u(&w["max_ns"])).max().unwrap();
    assert!(u(&merged["max_ns"]) >= max);
    // `report` on the stored run summarises its windows from the history.
    let out = sb.run(&["report", "--no-pwcet", "--format", "md", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Monitor windows") && text.contains(&format!("{n} windows of 300ms stored")), "{text}");
    assert!(text.contains(&format!("| idle | timer | {n} |")), "{text}");
    // The textfile is valid for Prometheus' own checker.
    if let Ok(promtool) = which("promtool") {
        let out = Command::new(promtool).args(["check", "metrics"]).stdin(std::fs::File::open(&prom).unwrap()).output().unwrap();
        assert!(out.status.success(), "promtool: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    // The port is closed again.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

/// SIGHUP (an ssh session dropping) ends a monitor as Ctrl-C does (issue
/// 61: it exited 129 with no result, no run stored and the load's temp dir
/// left): exit 130, the run and every closed window stored, nothing left;
/// the window cut short records the time it measured, not the window's
/// length.
#[test]
fn sighup_ends_a_monitor_stored_with_nothing_left() {
    let _lock = serial();
    let sb = Sandbox::new();
    let loads = sb.path("loads");
    std::fs::create_dir(&loads).unwrap();
    let child = sb
        .cmd()
        .args(["monitor", "--window", "2s", "--cycle", "cpu:1h", "-i", "1000", "-t", "1", "-q", "--load-dir", loads.to_str().unwrap(), "--json"])
        .arg(sb.path("m.json"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let temp = loads.join(format!(".rtscope-load-{}", child.0.id()));
    wait_until("the load's temp dir", Duration::from_secs(30), || temp.exists());
    // Two windows stored, then the hang-up in the middle of the third.
    let db = sb.path("results.db");
    let stored = || -> u64 {
        let Ok(c) = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return 0 };
        c.query_row("SELECT COUNT(DISTINCT idx) FROM windows", [], |r| r.get::<_, i64>(0)).unwrap_or(0) as u64
    };
    wait_until("2 windows stored", Duration::from_secs(60), || stored() >= 2);
    std::thread::sleep(Duration::from_millis(700));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.0.id() as i32), nix::sys::signal::Signal::SIGHUP).unwrap();
    let status = child.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    let run = read_json(&sb.path("m.json"));
    assert_eq!(run["interrupted"], true);
    let n = u(&run["monitor"]["windows"]);
    let rows = windows(&sb, 1);
    let merged: Vec<&Value> = rows.iter().filter(|w| w["thread"].is_null()).collect();
    assert_eq!(merged.len() as u64, n, "every closed window stored with its run");
    assert!(n >= 3, "the window cut by SIGHUP is kept too: {n}");
    let last = merged.last().unwrap();
    let full = merged[..merged.len() - 1].iter().map(|w| u(&w["duration_ns"])).collect::<Vec<_>>();
    assert!(full.iter().all(|&d| d == 2_000_000_000), "{full:?}");
    let cut = u(&last["duration_ns"]);
    assert!(cut < 2_000_000_000 && cut > 0, "the cut window records the time it measured: {cut}");
    // At 1 ms a window holds one period per ms it measured.
    let periods = u(&last["samples"]) + u(&last["overruns"]);
    assert!(periods <= cut / 1_000_000 + 1, "{periods} periods in {cut} ns");
    let left: Vec<_> = std::fs::read_dir(&loads).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing left behind in the load dir: {left:?}");
    // A history that lacks a window: the report counts the windows it has
    // and names the one missing.
    rusqlite::Connection::open(&db).unwrap().execute("DELETE FROM windows WHERE idx = 1", []).unwrap();
    let out = sb.run(&["report", "--no-pwcet", "--format", "md", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("{} windows of 2s stored", n - 1)) && text.contains(&format!("({n} closed; missing: #1 ")), "{text}");
    let out = sb.run(&["history", "--windows", "1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("missing: #1 "), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn bad_flags_are_exit_2_before_measuring() {
    let sb = Sandbox::new();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    for (args, words) in [
        (vec!["--window", "0"], vec!["--window"]),
        (vec!["--listen", "nonsense"], vec!["--listen", "nonsense"]),
        (vec!["--listen", &busy_addr], vec!["--listen", "cannot listen"]),
        (vec!["--cycle", "idle"], vec!["--cycle", "PHASE:DURATION"]),
        (vec!["--cycle", "idle:1s,warp:1s"], vec!["--load", "warp"]),
        (vec!["--cycle", "idle:100ms"], vec!["--cycle", "at least one --window"]),
        (vec!["--textfile", "/nonexistent"], vec!["--textfile"]),
        (vec!["--preset", "quick"], vec!["--preset"]),
    ] {
        let out = sb.cmd().args(["monitor", "--window", "1s", "-t", "1", "--json"]).arg(sb.path("x.json")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: missing {w:?} in {err}");
        }
        assert!(!sb.path("x.json").exists(), "{args:?} wrote a result");
    }
    assert!(!sb.path("results.db").exists(), "nothing stored on bad input");
}

/// `--cycle idle:1s,cpu:1s` alternates the phases (the cpu load started and
/// stopped each time, as `run`'s phases): windows of both phases are
/// stored, in cycle order, and the result has one entry per phase.
#[test]
fn cycle_alternates_phases_and_their_loads() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["monitor", "--window", "500ms", "--cycle", "idle:1s,cpu:1s", "--settle", "100ms", "--load-engine", "builtin"])
        .args(["-D", "5s", "-t", "1", "-a", "0", "-q", "--json"])
        .arg(sb.path("m.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let run = read_json(&sb.path("m.json"));
    assert_eq!(run["monitor"]["cycle"], serde_json::json!(["idle:1s", "cpu:1s"]));
    let stored = windows(&sb, 1);
    let phases: Vec<&str> = stored.iter().filter(|w| w["thread"].is_null()).map(|w| w["phase"].as_str().unwrap()).collect();
    assert!(phases.len() >= 4, "{phases:?}");
    assert_eq!(phases[0], "idle");
    assert!(phases.contains(&"cpu"), "{phases:?}");
    // Phases come in runs: idle windows, then cpu windows, then idle again.
    let changes = phases.windows(2).filter(|p| p[0] != p[1]).count();
    assert!(changes >= 1, "{phases:?}");
    let mut entry_phases: Vec<&str> =
        run["results"].as_array().unwrap().iter().filter(|r| r["thread"].is_null()).map(|r| r["phase"].as_str().unwrap()).collect();
    entry_phases.sort();
    assert_eq!(entry_phases, ["cpu", "idle"]);
    // The cpu phase's load ran (its evidence is recorded) and no load is left.
    let loads: Vec<&Value> = run["phases"].as_array().unwrap().iter().filter(|p| p["name"] == "cpu").collect();
    assert!(!loads.is_empty() && loads.iter().all(|p| !p["loads"].as_array().unwrap().is_empty()), "{}", run["phases"]);
}

/// Issue 31 item 6: `monitor -D 35s` ran 40 s (whole windows past -D) and
/// `monitor --help` described -D as "how long each probe measures [default:
/// 30s]". -D is the monitor's length: the last window is cut to end on it.
#[test]
fn duration_is_the_monitors_length_and_cuts_the_last_window() {
    let sb = Sandbox::new();
    let help = String::from_utf8(sb.cmd().args(["monitor", "--help"]).output().unwrap().stdout).unwrap();
    let d = help.split("-D, --duration").nth(1).unwrap_or_else(|| panic!("{help}"));
    let d = &d[..d.find("\n\n").unwrap_or(d.len())];
    assert!(d.contains("How long the monitor runs") && !d.contains("each probe") && !d.contains("30s]"), "{d}");
    // Windows of 2 s for 3 s: one whole window, then one cut to what is left.
    let out = sb.cmd().args(["monitor", "--window", "2s", "-D", "3s", "-t", "1", "-a", "0", "--json"]).arg(sb.path("m.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // One unit per line (was `max 2.928 ms, p99 59.33 us`): the tables' µs.
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("window ")).collect();
    assert!(!lines.is_empty(), "{err}");
    for l in lines {
        let (max, p99) = (l.split("max ").nth(1).unwrap(), l.split("p99 ").nth(1).unwrap());
        for v in [max, p99] {
            let mut w = v.split_whitespace();
            assert!(w.next().unwrap().parse::<f64>().is_ok() && w.next() == Some("us,"), "{l}");
        }
    }
    let merged: Vec<Value> = windows(&sb, 1).into_iter().filter(|w| w["thread"].is_null()).collect();
    let lengths: Vec<u64> = merged.iter().map(|w| u(&w["duration_ns"])).collect();
    // (A machine slow enough to use up the last second before it starts
    // stores one window: never more, never longer than -D.)
    assert!(!lengths.is_empty() && lengths.len() <= 2, "{merged:?}");
    assert_eq!(lengths[0], 2_000_000_000);
    assert!(lengths[1..].iter().all(|&l| l < 2_000_000_000) && lengths.iter().sum::<u64>() <= 3_000_000_000, "windows past -D: {lengths:?}");
}

/// A history that refuses every run (a trigger of the test's): the rows of
/// `runs` can no longer be written.
fn refuse_runs(db: &Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute_batch("CREATE TRIGGER refuse_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;").unwrap();
}

/// A monitor ends through the one end of a run (issue 62): when the history
/// refuses its run, the result file is kept whole and the message says how
/// to import it later — and the import stores it once the history takes runs.
#[test]
fn a_run_the_history_refuses_is_kept_in_its_file_to_import_later() {
    let _lock = serial();
    let sb = Sandbox::new();
    let db = sb.path("results.db");
    let o = sb.run(&["import", fixture("ptsematest.txt").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    refuse_runs(&db);
    let json = sb.path("m.json");
    let o = sb.cmd().args(["monitor", "--window", "300ms", "-D", "900ms", "-i", "1000", "-t", "1", "-q", "--json"]).arg(&json).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("refused by the test") && err.contains(&format!("`rtscope import {}", json.display())), "{err}");
    let run = read_json(&json);
    let n = u(&run["monitor"]["windows"]);
    assert!(n >= 2 && run["complete"] != false, "{n} windows");
    // The windows went in as they closed; the run waits in its file.
    let stored: i64 = rusqlite::Connection::open(&db).unwrap().query_row("SELECT COUNT(DISTINCT idx) FROM windows", [], |r| r.get(0)).unwrap();
    assert_eq!(stored as u64, n, "every closed window stored as it closed");
    rusqlite::Connection::open(&db).unwrap().execute_batch("DROP TRIGGER refuse_runs").unwrap();
    let o = sb.run(&["import", json.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = windows(&sb, 2);
    assert_eq!(rows.iter().filter(|w| w["thread"].is_null()).count() as u64, n, "the imported run has its windows");
}
