//! `rtscope serve`: the real binary on a free loopback port over a history
//! with a few runs (imports of real results, a monitor run), checked over
//! raw HTTP (so paths reach the server exactly as written, `..` included),
//! in headless Chromium (list → run → compare, with a screenshot), and over
//! PostgreSQL (tests/pg_support: a server this test starts).

mod common;
mod pg_support;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{chromium, chromium_cmd, http, read_json, skip, u, Answer, Sandbox};
use serde_json::Value;

/// A running `rtscope serve`, stopped (SIGINT) when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(mut cmd: Command) -> Server {
        let mut child = cmd.args(["serve", "--listen", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let addr = line.split("http://").nth(1).and_then(|x| x.split('/').next()).unwrap_or_else(|| panic!("no URL in {line:?}")).to_string();
        Server { child, addr }
    }
    fn get(&self, path: &str) -> Answer {
        http(&self.addr, "GET", path)
    }
    /// SIGINT, then the exit status and stderr.
    fn stop(mut self) -> (Option<i32>, String) {
        // SAFETY: kill with a valid pid and signal has no memory effects.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let t = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "serve did not stop on SIGINT");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (status.code(), err)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fixture under tests/fixtures (`golden/…`, `import/…`).
fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// µs with one decimal, as the list and the report print them.
fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// The golden native result with a planted trace attribution on its worst
/// timer sample and a host of its own, written to `dir`.
fn traced_copy(dir: &Path) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fixture("golden/result-v1.json")).unwrap()).unwrap();
    v["host"]["hostname"] = "rt-board".into();
    v["host"]["preempt_model"] = "rt".into();
    v["host"]["realtime"] = true.into();
    v["started_at"] = "2026-11-20T10:00:00Z".into();
    let w = &mut v["results"][0]["worst"][0];
    w["trace"]["culprits"] = serde_json::json!([
        {"kind": "task", "name": "hog-planted", "pid": 4242, "prio": 49, "duration_ns": 30000, "count": 1}
    ]);
    let p = dir.join("traced.json");
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

/// A history of four runs: #1 the golden result, #2 its traced copy on
/// another host, #3 cyclictest's histogram output, #4 a 3 s monitor run.
/// #1 and #2 carry the tag `pair`.
fn history(sb: &Sandbox) -> Vec<PathBuf> {
    let traced = traced_copy(sb.dir.path());
    let files = vec![fixture("golden/result-v1.json"), traced, fixture("import/cyclictest-hist.txt")];
    for f in &files {
        let o = sb.cmd().arg("import").arg(f).output().unwrap();
        assert!(o.status.success(), "import {}: {}", f.display(), String::from_utf8_lossy(&o.stderr));
    }
    let o = sb.cmd().args(["monitor", "--window", "1s", "-D", "3s", "-t", "1", "-a", "0", "-q", "--json"]).arg(sb.path("m.json")).output().unwrap();
    assert!(o.status.success(), "monitor: {}", String::from_utf8_lossy(&o.stderr));
    for id in ["1", "2"] {
        assert!(sb.run(&["tag", id, "pair"]).status.success());
    }
    files
}

#[test]
fn every_route_answers_from_the_history_and_writes_are_refused() {
    let sb = Sandbox::new();
    let files = history(&sb);
    let db_before = std::fs::read(sb.path("results.db")).unwrap();
    let srv = Server::start(sb.cmd());

    // The list: every run, newest first, its max and p99 per phase from the file.
    let list = srv.get("/");
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.header("server-timing").is_some_and(|v| v.starts_with("app;dur=")));
    assert!(list.body.contains("runs 1–4 of 4"), "{}", list.body);
    for id in 1..=4 {
        assert!(list.body.contains(&format!("href=\"/runs/{id}\"")), "run {id} not listed");
        assert!(list.body.contains(&format!("name=\"runs\" value=\"{id}\"")), "no checkbox for run {id}");
    }
    let golden = read_json(&files[0]);
    let phase_max = |phase: &str| golden["results"].as_array().unwrap().iter().filter(|r| r["phase"] == phase).map(|r| u(&r["max_ns"])).max().unwrap();
    let phase_p99 =
        |phase: &str| golden["results"].as_array().unwrap().iter().filter(|r| r["phase"] == phase).map(|r| u(&r["percentiles_ns"]["99"])).max().unwrap();
    for phase in ["idle", "cpu"] {
        let cell = format!("{phase}: {} / {}", us(phase_max(phase)), us(phase_p99(phase)));
        assert_eq!(count(&list.body, &cell), 2, "run 1 and its copy show {cell:?}");
    }

    // The API: the same rows, filters, order, pages.
    let all = srv.get("/api/runs").json();
    assert_eq!(u(&all["total"]), 4);
    let ids: Vec<u64> = all["runs"].as_array().unwrap().iter().map(|r| u(&r["id"])).collect();
    let mut by_start: Vec<(String, u64)> =
        all["runs"].as_array().unwrap().iter().map(|r| (r["started_at"].as_str().unwrap().to_string(), u(&r["id"]))).collect();
    by_start.sort();
    by_start.reverse();
    assert_eq!(ids, by_start.iter().map(|x| x.1).collect::<Vec<_>>(), "default order: newest first");
    let rt = srv.get("/api/runs?preempt=rt").json();
    assert_eq!((u(&rt["total"]), u(&rt["runs"][0]["id"])), (1, 2));
    assert_eq!(u(&srv.get("/api/runs?host=rt-board").json()["total"]), 1);
    assert_eq!(u(&srv.get("/api/runs?tag=pair").json()["total"]), 2);
    assert_eq!(u(&srv.get("/api/runs?since=2026-11-20&until=2026-11-20").json()["runs"][0]["id"]), 2, "until keeps its whole day");
    let maxes: Vec<u64> = srv.get("/api/runs?sort=max").json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["headline_max_ns"].as_array().unwrap().iter().map(|m| u(&m["max_ns"])).max().unwrap())
        .collect();
    assert!(maxes.windows(2).all(|w| w[0] >= w[1]), "sort=max: largest first {maxes:?}");
    let p2 = srv.get("/api/runs?per=1&page=2").json();
    assert_eq!((u(&p2["total"]), u(&p2["offset"]), u(&p2["runs"][0]["id"])), (4, 1, ids[1]));
    // The same filters on the command line.
    let cli: Value = serde_json::from_slice(&sb.run(&["history", "--json", "--preempt", "rt", "--until", "2026-11-20"]).stdout).unwrap();
    assert_eq!(cli.as_array().unwrap().iter().map(|r| u(&r["id"])).collect::<Vec<_>>(), vec![2]);
    let filtered = srv.get("/?host=cyclictest-hist");
    assert!(filtered.body.contains("runs 1–1 of 1") && filtered.body.contains("href=\"/runs/3\""), "{}", filtered.body);
    let bad = srv.get("/?sort=speed");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("sort by one of"), "{}", bad.body);
    assert_eq!(srv.get("/api/runs?per=0").status, 400);

    // A run: its report (tables, plots, worst samples with the planted culprit, doctor findings).
    let run = srv.get("/runs/2");
    assert_eq!(run.status, 200);
    let timer = &golden["results"][0];
    assert!(run.body.contains(&format!(">{}<", u(&timer["samples"]))), "samples of timer/idle");
    assert!(run.body.contains(&format!(">{}<", us(u(&timer["max_ns"])))), "max of timer/idle");
    assert!(count(&run.body, "<figure class=\"plot\"") >= 6, "plots");
    assert!(run.body.contains("hog-planted (pid 4242, rt prio 50) 30.0us"), "trace attribution of the worst sample");
    let findings = golden["host"]["doctor"].as_array().unwrap();
    let n = |sev: &str| findings.iter().filter(|f| f["severity"] == sev).count();
    let summary = format!("Doctor findings before the run: {} bad, {} warn, {} info, {} ok", n("bad"), n("warn"), n("info"), n("ok"));
    assert!(run.body.contains(&summary), "missing {summary:?}");
    assert!(n("bad") + n("warn") + n("info") + n("ok") == findings.len() && !findings.is_empty());

    // Downloads: the stored bytes, which for a native import are the file's.
    let dl = srv.get("/runs/1/json");
    assert_eq!(dl.status, 200);
    assert_eq!(dl.header("content-disposition").as_deref(), Some("attachment; filename=\"rtscope-run-1.json\""));
    assert!(dl.body.as_bytes() == std::fs::read(&files[0]).unwrap().as_slice(), "download differs from the imported file");
    assert!(srv.get("/api/runs/1").body == dl.body);

    // The monitor run: its windows over time.
    let m = srv.get("/runs/4");
    assert_eq!(m.status, 200);
    assert!(m.body.contains("data-kind=\"windows\""), "no windows plot");
    let stored = sb.run(&["history", "--windows", "4", "--json"]);
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    let served = srv.get("/api/runs/4/windows").json();
    assert_eq!(served.as_array().unwrap().len(), stored.as_array().unwrap().len());
    assert!(stored.as_array().unwrap().len() >= 2, "{stored}");
    assert_eq!(srv.get("/api/runs/1/windows").status, 404);

    // Compare: by ids and by tag, the table of `rtscope compare`.
    for (q, inputs) in [("/compare?runs=1,2", ["1", "2"]), ("/compare?runs=1&runs=2", ["1", "2"]), ("/compare?runs=@pair", ["@pair", ""])] {
        let mut args = vec!["compare"];
        args.extend(inputs.iter().filter(|i| !i.is_empty()));
        args.extend(["--format", "json"]);
        let cli: Value = serde_json::from_slice(&sb.run(&args).stdout).unwrap();
        let c = srv.get(q);
        assert_eq!(c.status, 200, "{q}: {}", c.body);
        for s in cli["sentences"].as_array().unwrap() {
            let s = s.as_str().unwrap().replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
            assert!(c.body.contains(&s), "{q}: missing sentence {s:?}");
        }
        for sys in cli["systems"].as_array().unwrap() {
            assert!(c.body.contains(&format!("<strong>{}</strong>", sys.as_str().unwrap())), "{q}: system {sys} not named");
        }
        assert!(count(&c.body, "<figure class=\"plot\"") >= 2, "{q}: overlays");
    }
    // The CLI's pairing choices (issue 31: `&match=probe` was a 400): the
    // same sentences as `rtscope compare 1 2 --match probe`, with overlays.
    let cli: Value = serde_json::from_slice(&sb.run(&["compare", "1", "2", "--match", "probe", "--format", "json"]).stdout).unwrap();
    let c = srv.get("/compare?runs=1,2&match=probe");
    assert_eq!(c.status, 200, "{}", c.body);
    for s in cli["sentences"].as_array().unwrap() {
        let s = s.as_str().unwrap().replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
        assert!(c.body.contains(&s), "match=probe: missing sentence {s:?}");
    }
    assert!(count(&c.body, "data-kind=\"systems\"") >= 1, "match=probe: overlays");
    // The deadline view of a run: the verdict lines of `rtscope report --deadline`.
    let text = String::from_utf8(sb.run(&["report", "1", "--deadline", "200us", "--wide", "--color", "never"]).stdout).unwrap();
    let verdicts: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("  * ")).filter(|l| l.starts_with("PASS ") || l.starts_with("FAIL ")).collect();
    assert!(!verdicts.is_empty(), "{text}");
    let page = srv.get("/runs/1?deadline=200us");
    assert_eq!(page.status, 200, "{}", page.body);
    for v in &verdicts {
        assert!(page.body.contains(&v.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")), "verdict {v:?} not on the page");
    }
    assert!(page.body.contains("deadline 200 µs"), "the plots draw the deadline");
    for (q, says) in
        [("/compare?runs=1,2&match=name", "auto, phase or probe"), ("/compare?runs=1,2&phases=idle", "FIRST=OTHER"), ("/runs/1?deadline=soon", "deadline")]
    {
        let c = srv.get(q);
        assert_eq!(c.status, 400, "{q}");
        assert!(c.body.contains(says), "{q}: {}", c.body);
    }
    for (q, says) in [("/compare?runs=1", "two or more runs"), ("/compare?runs=x", "neither a run id"), ("/compare?runs=@none", "no run has the tag")] {
        let c = srv.get(q);
        assert_eq!(c.status, 400, "{q}");
        assert!(c.body.contains(says), "{q}: {}", c.body);
    }

    // Read-only, and paths never reach the filesystem.
    for (method, path) in [("DELETE", "/"), ("POST", "/runs/1"), ("PUT", "/api/runs"), ("PATCH", "/nothing")] {
        let a = http(&srv.addr, method, path);
        assert_eq!(a.status, 405, "{method} {path}");
        assert_eq!(a.header("allow").as_deref(), Some("GET, HEAD"), "{method} {path}");
    }
    for path in [
        "/runs/../../../../etc/passwd",
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/runs/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/runs/1/../../../etc/passwd",
        "/api/runs/..%2f..%2fetc%2fpasswd",
        "/runs/0",
        "/runs/99",
        "/nothing",
    ] {
        let a = srv.get(path);
        assert_eq!(a.status, 404, "{path}: {}", a.status);
        assert!(!a.body.contains("root:"), "{path} leaked a file");
    }
    let head = http(&srv.addr, "HEAD", "/runs/1");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "HEAD has no body");

    let (code, err) = srv.stop();
    assert_eq!(code, Some(0), "SIGINT ends serve with 0: {err}");
    assert!(err.contains("stopped"), "{err}");
    assert!(std::fs::read(sb.path("results.db")).unwrap() == db_before, "serving changed the database file");
}

#[test]
fn bad_listen_and_unusable_history_are_refused_before_serving() {
    let sb = Sandbox::new();
    assert!(sb.cmd().arg("import").arg(fixture("golden/result-v1.json")).output().unwrap().status.success());
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    std::fs::write(sb.path("not.db"), "{\"not\": \"sqlite\"}").unwrap();
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (vec!["--listen".into(), "nowhere".into()], vec!["--listen \"nowhere\"", "ADDRESS:PORT"]),
        (vec!["--listen".into(), "127.0.0.1:99999".into()], vec!["--listen", "ADDRESS:PORT"]),
        (vec!["--listen".into(), format!("127.0.0.1:{busy_port}")], vec!["cannot listen there", "pick another port"]),
        (vec!["--listen".into(), "127.0.0.1:0".into(), "--db".into(), sb.path("none.db").display().to_string()], vec!["none.db", "no history database there"]),
        (vec!["--listen".into(), "127.0.0.1:0".into(), "--db".into(), sb.path("not.db").display().to_string()], vec!["not.db", "not an SQLite database"]),
    ];
    for (args, words) in cases {
        let o = sb.cmd().arg("serve").args(&args).stdin(Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed a URL: {}", String::from_utf8_lossy(&o.stdout));
        for w in words {
            assert!(err.contains(w), "{args:?}: missing {w:?} in {err}");
        }
    }
    assert!(!sb.path("none.db").exists(), "serve created a database");
    drop(busy);
}

#[test]
fn a_postgresql_history_is_served_the_same_way() {
    let url = match pg_support::fresh_db() {
        Ok(u) => u,
        Err(e) => {
            common::skipped(&format!("no PostgreSQL test server: {e}"));
            return;
        }
    };
    let sb = Sandbox::new();
    let traced = traced_copy(sb.dir.path());
    for f in [fixture("golden/result-v1.json"), traced] {
        let o = sb.cmd().arg("import").arg(&f).args(["--db", &url]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut cmd = sb.cmd();
    cmd.env("RTSCOPE_DB", &url);
    let srv = Server::start(cmd);
    let all = srv.get("/api/runs").json();
    assert_eq!(u(&all["total"]), 2);
    assert_eq!(u(&srv.get("/api/runs?preempt=rt").json()["runs"][0]["id"]), 2);
    let golden = read_json(&fixture("golden/result-v1.json"));
    let idle_max = golden["results"].as_array().unwrap().iter().filter(|r| r["phase"] == "idle").map(|r| u(&r["max_ns"])).max().unwrap();
    assert_eq!(u(&all["runs"][1]["headline_max_ns"][0]["max_ns"]), idle_max);
    assert!(srv.get("/").body.contains("runs 1–2 of 2"));
    assert_eq!(srv.get("/runs/2").status, 200);
    assert_eq!(srv.get("/compare?runs=1,2").status, 200);
    assert_eq!(http(&srv.addr, "POST", "/").status, 405);
    let page = srv.get("/");
    assert!(!page.body.contains(pg_support::PASSWORD), "the page shows the database password");
    // The server drops serve's connection: the request that sees it fail may
    // fail (500, never a hang), the next one connects again.
    let mut admin = pg_support::client(&url);
    let killed =
        admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", &[]).unwrap();
    assert!(!killed.is_empty(), "serve's connection was not found");
    // pg_terminate_backend only signals the backend: wait until it is gone, or
    // `first` may still be answered by it and `again` be the one that fails.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !admin.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", &[]).unwrap().is_empty() {
        assert!(std::time::Instant::now() < end, "serve's backend did not exit");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let first = srv.get("/api/runs");
    assert!(first.status == 200 || first.status == 500, "{}", first.status);
    let again = srv.get("/api/runs");
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(u(&again.json()["total"]), 2);
    let (code, _) = srv.stop();
    assert_eq!(code, Some(0));
}

/// Chromium's DOM of `url`.
fn dom(bin: &Path, profile: &Path, url: &str) -> String {
    let o = chromium_cmd(bin, profile).args(["--window-size=1280,2000", "--dump-dom", url]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Inked and series-blue pixels of a screenshot of `url`.
fn screenshot(bin: &Path, dir: &Path, name: &str, url: &str) -> (usize, usize, usize) {
    let shot = dir.join(format!("{name}.png"));
    let o = chromium_cmd(bin, &dir.join(format!("p-{name}")))
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1280,2000", url])
        .output()
        .unwrap();
    assert!(o.status.success() && shot.exists(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut reader = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap())).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let (mut ink, mut blue) = (0, 0);
    for p in buf[..info.buffer_size()].chunks(ch) {
        let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
        ink += usize::from(r < 235 || g < 235 || b < 235);
        // The first series colour, rgb(31, 119, 180).
        blue += usize::from((r - 31).abs() < 40 && (g - 119).abs() < 40 && (b - 180).abs() < 40);
    }
    (ink, blue, info.buffer_size() / ch)
}

#[test]
fn list_run_and_compare_pages_render_in_a_real_browser() {
    let Some(bin) = chromium() else {
        skip!("Chromium is not installed (apt-get install -y chromium): the browser check did not run");
    };
    let sb = Sandbox::new();
    for f in [fixture("golden/result-v1.json"), traced_copy(sb.dir.path())] {
        assert!(sb.cmd().arg("import").arg(&f).output().unwrap().status.success());
    }
    let srv = Server::start(sb.cmd());
    let base = format!("http://{}", srv.addr);
    let tmp = sb.dir.path();

    // The list as the browser built it: a row with a link and a checkbox per run.
    let list = dom(&bin, &tmp.join("p1"), &format!("{base}/"));
    let links: Vec<String> = list.split("href=\"/runs/").skip(1).filter_map(|x| x.split('"').next()).map(str::to_string).collect();
    assert_eq!(links, vec!["1", "2"], "run links, newest first (the copy started earlier)");
    let boxes: Vec<String> = list.split("name=\"runs\" value=\"").skip(1).filter_map(|x| x.split('"').next()).map(str::to_string).collect();
    assert_eq!(boxes, links);

    // Follow the traced copy's link: the run's report with its SVG plots drawn.
    let run_url = format!("{base}/runs/{}", links.iter().find(|l| *l == "2").unwrap());
    let run = dom(&bin, &tmp.join("p2"), &run_url);
    let figures = count(&run, "<figure class=\"plot\"");
    assert!(figures >= 6, "{figures} plots");
    assert!(count(&run, "<polyline") >= figures, "every plot has line series");
    assert!(run.contains("hog-planted"));

    // Tick both boxes and submit: the form's GET is /compare?runs=2&runs=1.
    let cmp_url = format!("{base}/compare?{}", boxes.iter().map(|b| format!("runs={b}")).collect::<Vec<_>>().join("&"));
    let cmp = dom(&bin, &tmp.join("p3"), &cmp_url);
    assert!(cmp.contains("Comparison of 2 runs") && cmp.contains("<section id=\"comparison\">"), "compare page");
    assert!(count(&cmp, "<polyline") >= 2);

    for (name, url) in [("list", format!("{base}/")), ("run", run_url), ("compare", cmp_url)] {
        let (ink, blue, total) = screenshot(&bin, tmp, name, &url);
        assert!(ink * 100 > total, "{name}: screenshot looks blank ({ink} of {total} pixels inked)");
        if name != "list" {
            assert!(blue > 200, "{name}: no plotted series visible ({blue} series-coloured pixels)");
        }
    }
    let (code, _) = srv.stop();
    assert_eq!(code, Some(0));
}
