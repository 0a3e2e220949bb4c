//! `rtscope run --target`: rtscope-agent (agent/, built here with `make -C
//! agent` into a temp dir) driven over each transport — exec, TCP on
//! 127.0.0.1, a serial line through a pseudo-terminal pair — and what the
//! host does with a dead agent, a Ctrl-C and a malformed line; the agent
//! built with gcc and clang (warnings are errors) and, statically for
//! aarch64 and armhf, run under qemu-user. Skipped with a message when there
//! is no C compiler, cross compiler or qemu-user, or no agent/ directory.
//!
//! Numbers checked are the invariants, never latencies: samples + overruns =
//! periods exactly (the agent's timer loop counts every period of
//! duration/interval), histogram counts = samples, the merged entry = the
//! sum of its threads, and the host is the one the agent announced.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{free_port, have, hist_sum, merged, per_thread, read_json, scripted_agent, u, wait_for, Sandbox};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The agent binary, built once per test run into a temp dir; `None` (with
/// a message) when it cannot be built here.
fn agent() -> Option<&'static Path> {
    static AGENT: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    AGENT
        .get_or_init(|| {
            if !repo().join("agent/Makefile").exists() {
                common::skipped("no agent/ directory (rtscope-agent not in this tree yet)");
                return None;
            }
            let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
            if Command::new(&cc).arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
                common::skipped(&format!("no C compiler ({cc}) to build rtscope-agent"));
                return None;
            }
            let dir = tempfile::tempdir().unwrap();
            let bin = dir.path().join("rtscope-agent");
            let out = Command::new("make").arg("-s").arg("-C").arg(repo().join("agent")).arg(format!("OUT={}", bin.display())).output().expect("make");
            assert!(out.status.success(), "make -C agent failed:\n{}", String::from_utf8_lossy(&out.stderr));
            Some((dir, bin))
        })
        .as_ref()
        .map(|(_, p)| p.as_path())
}

fn run_ok(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let out = sb.run(args);
    assert!(
        out.status.success(),
        "rtscope {args:?}: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The invariants of a complete timer run of `periods` per thread.
fn check_timer(run: &Value, periods: u64, threads: usize) {
    let rs = per_thread(run);
    assert_eq!(rs.len(), threads, "{run}");
    for r in &rs {
        assert_eq!(r["probe"], "timer");
        assert_eq!(u(&r["samples"]) + u(&r["overruns"]), periods, "samples + overruns = periods exactly: {r}");
        assert_eq!(hist_sum(r), u(&r["samples"]));
        assert!(u(&r["min_ns"]) <= u(&r["percentiles_ns"]["50"]) && u(&r["percentiles_ns"]["50"]) <= u(&r["max_ns"]));
    }
    let m = merged(run);
    assert_eq!(m.len(), 1);
    let sum = |k: &str| rs.iter().map(|r| u(&r[k])).sum::<u64>();
    assert_eq!(u(&m[0]["samples"]), sum("samples"));
    assert_eq!(u(&m[0]["overruns"]), sum("overruns"));
    assert_eq!(hist_sum(m[0]), u(&m[0]["samples"]));
    assert_eq!(u(&m[0]["max_ns"]), rs.iter().map(|r| u(&r["max_ns"])).max().unwrap());
}

fn uname_nodename() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

#[test]
fn exec_target_measures_and_the_result_works_everywhere() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let target = format!("exec:{}", agent.display());
    let out = run_ok(&sb, &["run", "--target", &target, "--probe", "timer", "-D", "1s", "-i", "1ms", "-t", "2", "-a", "0", "--json", "t.json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("saved: run #1"), "stored in the history");
    let run = read_json(&sb.path("t.json"));
    check_timer(&run, 1000, 2);
    assert!(!run["interrupted"].as_bool().unwrap());
    // The host is the agent's (it announced this machine: same nodename),
    // and the run says who measured it.
    assert_eq!(run["host"]["hostname"], uname_nodename().as_str());
    assert!(run["host"]["preempt_model_source"].as_str().unwrap().starts_with("rtscope-agent"));
    assert_eq!(run["agent"]["transport"], "exec");
    assert_eq!(run["agent"]["protocol"], 1);
    assert_eq!(run["agent"]["os"], "Linux");
    assert_eq!(run["agent"]["target"], target.as_str());
    assert_eq!(run["plan"]["threads"], 2);
    // The agent runs on this host: the host beside it, for its one phase.
    let beside = run["agent"]["host_beside"].as_array().unwrap_or_else(|| panic!("{}", run["agent"]));
    assert_eq!(beside.len(), 1, "{beside:?}");
    assert_eq!(beside[0]["phase"], "idle");
    assert_eq!(u(&beside[0]["cpus"]) as usize, std::thread::available_parallelism().map_or(0, |n| n.get()).max(u(&beside[0]["cpus"]) as usize));
    assert!(u(&beside[0]["duration_ns"]) >= 1_000_000_000, "the phase's wall time covers -D: {beside:?}");
    assert!(u(&beside[0]["busy_ns"]) <= u(&beside[0]["duration_ns"]) * u(&beside[0]["cpus"]) + 50_000_000, "{beside:?}");
    let doc = common::schema::documented();
    let mut errors = Vec::new();
    common::schema::check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema: {errors:?}");

    // The analysis side does not know where the samples came from.
    let hist = run_ok(&sb, &["history"]);
    let listed = String::from_utf8_lossy(&hist.stdout);
    assert!(listed.contains(&uname_nodename()));
    // Stored with source "rtscope-agent" (a native run lists its probes bare).
    assert!(listed.contains("timer [rtscope-agent]"), "{listed}");
    // Imported again from its file: the same source.
    let sb2 = Sandbox::new();
    std::fs::copy(sb.path("t.json"), sb2.path("t.json")).unwrap();
    run_ok(&sb2, &["import", "t.json"]);
    let listed = String::from_utf8_lossy(&run_ok(&sb2, &["history"]).stdout).to_string();
    assert!(listed.contains("timer [rtscope-agent]"), "{listed}");
    let rep = run_ok(&sb, &["report", "t.json", "--format", "json"]);
    assert!(String::from_utf8_lossy(&rep.stdout).contains("timer"));
    run_ok(&sb, &["compare", "t.json", "t.json"]);
    let gate = sb.run(&["check", "t.json", "--max", "10s"]);
    assert_eq!(gate.status.code(), Some(0), "check: {}", String::from_utf8_lossy(&gate.stderr));
    let gate = sb.run(&["check", "t.json", "--max", "1ns"]);
    assert_eq!(gate.status.code(), Some(3), "a 1 ns bound fails: {}", String::from_utf8_lossy(&gate.stdout));
}

#[test]
fn exec_target_pair_probes_and_variants() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let target = format!("exec:{}", agent.display());
    run_ok(&sb, &["run", "--target", &target, "--probe", "sem:posix,mq", "-D", "1s", "-i", "1ms", "-a", "0", "--no-store", "--json", "p.json", "-q"]);
    let run = read_json(&sb.path("p.json"));
    let m = merged(&run);
    let names: Vec<String> = m.iter().map(|r| format!("{}:{}", r["probe"].as_str().unwrap(), r["variant"].as_str().unwrap_or("-"))).collect();
    assert!(names.iter().any(|n| n.starts_with("sem:posix")), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("sem:mutex")), "only the selected variant ran: {names:?}");
    assert!(names.iter().any(|n| n.starts_with("mq:")), "{names:?}");
    for r in run["results"].as_array().unwrap() {
        assert_eq!(hist_sum(r), u(&r["samples"]), "{r}");
        assert!(u(&r["samples"]) > 0, "{r}");
    }
}

#[test]
fn exec_target_every_probe_of_the_agent_is_stored() {
    // The periodic probe sends two series per variant (latency and
    // PERIOD/period-error): a host that checks each block's variant against
    // the acknowledged ones must take both (a merge of the hostile-agent
    // checks refused the second and stored nothing).
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let target = format!("exec:{}", agent.display());
    let probes = "timer,periodic,sem,pipe,mq,signal,switch,preempt,pi";
    run_ok(&sb, &["run", "--target", &target, "--probe", probes, "--periods", "1ms", "-D", "1s", "-i", "1ms", "--no-store", "--json", "all.json", "-q"]);
    let run = read_json(&sb.path("all.json"));
    let results = run["results"].as_array().unwrap();
    for probe in probes.split(',') {
        assert!(results.iter().any(|r| r["probe"] == probe && u(&r["samples"]) > 0), "no {probe} entry: {run}");
    }
    assert!(results.iter().any(|r| r["probe"] == "periodic" && r["variant"] == "1ms/period-error"), "no period-error series");
    for r in results {
        assert_eq!(hist_sum(r), u(&r["samples"]), "{r}");
    }
}

/// Kills and reaps a child when the test ends, however it ends.
struct Reap(std::process::Child);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn tcp_target_on_loopback() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    // A port taken between free_port and the agent's bind: try another.
    let (port, _agent) = (0..5)
        .find_map(|_| {
            let port = free_port();
            let mut c = Command::new(agent).args(["--listen", &port.to_string(), "--once"]).stderr(Stdio::piped()).spawn().unwrap();
            let mut err = c.stderr.take().unwrap();
            let mut text = String::new();
            let mut buf = [0u8; 256];
            // Until it says it listens, or exits.
            while !text.contains("listening") {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
            text.contains("listening").then_some((port, Reap(c)))
        })
        .expect("the agent listens on a free port");
    let target = format!("tcp:127.0.0.1:{port}");
    run_ok(&sb, &["run", "--target", &target, "--probe", "timer", "-D", "500ms", "-i", "1ms", "-t", "1", "-a", "0", "--no-store", "--json", "t.json", "-q"]);
    let run = read_json(&sb.path("t.json"));
    check_timer(&run, 500, 1);
    assert_eq!(run["agent"]["transport"], "tcp");
    // A tcp target has no process here rtscope can account for.
    assert!(run["agent"].get("host_beside").is_none(), "{}", run["agent"]);
}

#[test]
fn serial_target_through_a_pty() {
    use nix::sys::termios;
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let pty = nix::pty::openpty(None, None).unwrap();
    // Raw before the agent writes: a cooked line discipline would echo the
    // agent's own lines back to it.
    let mut t = termios::tcgetattr(&pty.slave).unwrap();
    termios::cfmakeraw(&mut t);
    termios::tcsetattr(&pty.slave, termios::SetArg::TCSANOW, &t).unwrap();
    let slave_path = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&pty.slave))).unwrap();
    // The agent on the "board" end: stdin and stdout are the pty master.
    let master_in = pty.master.try_clone().unwrap();
    let master_out = pty.master.try_clone().unwrap();
    let _agent = Reap(Command::new(agent).stdin(Stdio::from(master_in)).stdout(Stdio::from(master_out)).spawn().unwrap());
    drop(pty.master);
    let target = format!("serial:{}:115200", slave_path.display());
    run_ok(&sb, &["run", "--target", &target, "--probe", "timer", "-D", "500ms", "-i", "1ms", "-t", "1", "-a", "0", "--no-store", "--json", "t.json", "-q"]);
    // The slave stays open in this test until here: a pty master reads EIO once no slave is open.
    drop(pty.slave);
    let run = read_json(&sb.path("t.json"));
    check_timer(&run, 500, 1);
    assert_eq!(run["agent"]["transport"], "serial");
}

/// `rtscope run --target exec:...` whose agent writes its pid to `pid` and
/// its output also to `log` (so a test can wait for a protocol line).
fn spawn_logged(sb: &Sandbox, agent: &Path, probes: &str, duration: &str) -> std::process::Child {
    let cmd = format!(
        "exec:sh -c 'echo $$ > {pid}; exec {agent}' | tee {log}",
        pid = sb.path("pid").display(),
        agent = agent.display(),
        log = sb.path("log").display()
    );
    sb.cmd()
        .args(["run", "--target", &cmd, "--probe", probes, "-D", duration, "-i", "1ms", "-t", "1", "-a", "0", "--json", "k.json", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn log_has(sb: &Sandbox, what: &str) -> bool {
    std::fs::read_to_string(sb.path("log")).is_ok_and(|l| l.contains(what))
}

/// The CPUs of a kernel list ("0-2,5").
fn cpu_list(s: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// A task's allowed CPUs, from its /proc status file (None once it is gone).
fn allowed_cpus(status: &Path) -> Option<Vec<usize>> {
    let text = std::fs::read_to_string(status).ok()?;
    text.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(cpu_list)
}

#[test]
fn the_agents_own_threads_run_off_the_measured_cpu() {
    let Some(agent) = agent() else { return };
    let mine = allowed_cpus(Path::new("/proc/self/status")).unwrap();
    if mine.len() < 2 {
        common::skip!("this test may use only CPUs {mine:?}; placement needs one CPU outside the measured one");
    }
    let measured = *mine.last().unwrap();
    let spare: Vec<usize> = mine.iter().copied().filter(|c| *c != measured).collect();
    let sb = Sandbox::new();
    let cmd = format!(
        "exec:sh -c 'echo $$ > {pid}; exec {agent}' | tee {log}",
        pid = sb.path("pid").display(),
        agent = agent.display(),
        log = sb.path("log").display()
    );
    let a = measured.to_string();
    let child = sb
        .cmd()
        .args(["run", "--target", &cmd, "--probe", "timer", "-D", "5s", "-i", "1ms", "-t", "1", "-a", &a, "--no-store", "--json", "p.json", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(120), || log_has(&sb, "RTS1 begin id=1")), "never measuring");
    let pid = std::fs::read_to_string(sb.path("pid")).unwrap().trim().to_string();
    // While it measures: the session, runner and reporter threads (three) on
    // the spare CPUs, the measuring thread on the measured one; the idle
    // workers keep the start-up CPUs.
    let mut seen = Vec::new();
    let placed = wait_for(Duration::from_secs(60), || {
        seen = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.flatten().filter_map(|t| allowed_cpus(&t.path().join("status"))).collect())
            .unwrap_or_default();
        seen.iter().filter(|c| **c == spare).count() == 3 && seen.iter().any(|c| *c == [measured])
    });
    // rtscope's side (the agent runs on this system): its session thread
    // and the link's reader thread on the spare CPUs too.
    let host = child.id();
    let reader = std::fs::read_dir(format!("/proc/{host}/task"))
        .unwrap()
        .flatten()
        .find(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "rtscope-target-"))
        .map(|t| allowed_cpus(&t.path().join("status")));
    let session = allowed_cpus(Path::new(&format!("/proc/{host}/task/{host}/status")));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(placed, "threads' CPUs while measuring {seen:?}: want three on {spare:?} and one on [{measured}]");
    let run = read_json(&sb.path("p.json"));
    let steps = run["realtime_setup"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["step"] == "main thread placement").expect("a main thread placement step");
    assert_eq!(step["outcome"], "ok", "{step}");
    let listed = spare.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    assert_eq!(step["detail"], format!("cpus {listed}").as_str(), "{step}");
    assert_eq!(reader, Some(Some(spare.clone())), "rtscope's reader thread");
    assert_eq!(session, Some(spare.clone()), "rtscope's session thread");
    let step = steps.iter().find(|s| s["step"] == "host reader placement").expect("a host reader placement step");
    assert_eq!(step["outcome"], "ok", "{step}");
    check_timer(&run, 5000, 1);
}

#[test]
fn agent_killed_mid_run_keeps_what_arrived() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let child = spawn_logged(&sb, agent, "timer,sem", "2s");
    // The first plan (timer) done, the second measuring: kill the agent.
    assert!(wait_for(Duration::from_secs(120), || log_has(&sb, "RTS1 begin id=2")), "the sem plan never began");
    let pid: i32 = std::fs::read_to_string(sb.path("pid")).unwrap().trim().parse().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the agent closed the link"), "{stderr}");
    let run = read_json(&sb.path("k.json"));
    assert!(run["interrupted"].as_bool().unwrap());
    check_timer(&run, 2000, 1);
    assert!(run["results"].as_array().unwrap().iter().all(|r| r["probe"] == "timer"), "no half sem block kept");
    assert!(run["warnings"][0].as_str().unwrap().contains("agent closed the link"));
    // Stored, as an interrupted native run is.
    let hist = run_ok(&sb, &["history"]);
    assert!(!String::from_utf8_lossy(&hist.stdout).trim().is_empty());
}

#[test]
fn ctrl_c_stops_the_agent_and_keeps_the_samples() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let child = spawn_logged(&sb, agent, "timer", "60s");
    assert!(wait_for(Duration::from_secs(120), || log_has(&sb, "RTS1 progress id=1")), "never measuring");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let run = read_json(&sb.path("k.json"));
    assert!(run["interrupted"].as_bool().unwrap());
    let r = per_thread(&run)[0];
    assert!(u(&r["samples"]) > 0 && u(&r["samples"]) + u(&r["overruns"]) < 60_000, "{r}");
    assert_eq!(hist_sum(r), u(&r["samples"]));
    assert!(log_has(&sb, "status=stopped"), "the agent was told to stop");
}

/// A line with its checksum, as an agent sends it.
fn signed(body: &str) -> String {
    format!("{body} *{:08x}", crc32fast::hash(body.as_bytes()))
}

#[test]
fn a_malformed_line_is_exit_2_naming_it_and_nothing_is_stored() {
    let sb = Sandbox::new();
    let script = sb.path("fake-agent.sh");
    let lines = [
        "boot noise: not protocol".to_string(),
        signed("RTS1 hello proto=1 agent=fake os=Linux release=1 version=1 arch=x86_64 host=fake cpus=1 clock=CLOCK_MONOTONIC res_ns=1 preempt=none mlock=ok max_threads=2"),
        signed("RTS1 probe name=timer variants="),
        signed("RTS1 ready probes=1"),
        signed("RTS1 ack id=1 variants=- threads=1"),
        // Damaged in transit: the checksum no longer matches.
        signed("RTS1 begin id=1 variant=- threads=1 duration_ns=1000000000").replace("threads=1", "threads=7"),
    ];
    let mut text = String::from("#!/bin/sh\n");
    for l in &lines {
        text.push_str(&format!("printf '%s\\n' '{l}'\n"));
    }
    text.push_str("sleep 30\n");
    std::fs::write(&script, text).unwrap();
    let target = format!("exec:sh {}", script.display());
    let out = sb.run(&["run", "--target", &target, "--probe", "timer", "-D", "1s", "--json", "bad.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 6") && stderr.contains("threads=7") && stderr.contains("checksum"), "{stderr}");
    assert!(!sb.path("bad.json").exists(), "nothing half-stored");
    let hist = sb.run(&["history"]);
    assert!(!String::from_utf8_lossy(&hist.stdout).contains("fake"), "nothing in the history");
}

#[test]
fn a_silent_agent_is_counted_gone_after_the_target_silence() {
    // An agent that starts the plan and then says nothing (hung, or a link
    // that stopped carrying lines): after the plan's own time and then
    // --target-silence of silence, the session ends it, exit 130, saying so.
    let sb = Sandbox::new();
    let script = sb.path("silent-agent.sh");
    let lines = [
        signed("RTS1 hello proto=1 agent=fake os=Linux release=1 version=1 arch=x86_64 host=fake cpus=1 clock=CLOCK_MONOTONIC res_ns=1 preempt=none mlock=ok max_threads=2"),
        signed("RTS1 probe name=timer variants="),
        signed("RTS1 ready probes=1"),
        signed("RTS1 ack id=1 variants=- threads=1"),
        signed("RTS1 begin id=1 variant=- threads=1 duration_ns=1000000000"),
    ];
    let mut text = format!("#!/bin/sh\necho $$ > {}\n", sb.path("pid").display());
    for l in &lines {
        text.push_str(&format!("printf '%s\\n' '{l}'\n"));
    }
    text.push_str("sleep 600\n");
    std::fs::write(&script, text).unwrap();
    let target = format!("exec:sh {}", script.display());
    let started = Instant::now();
    let out = sb.run(&["run", "--target", &target, "--target-silence", "2s", "--probe", "timer", "-D", "1s", "--json", "s.json"]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // The warning is wrapped to the terminal: compare with line breaks as spaces.
    assert!(common::unwrapped(&stderr).contains("the agent did not end the plan within its time and 2s"), "{stderr}");
    // Not before the plan's time (1 s) and the silence (2 s) had passed.
    assert!(took >= Duration::from_secs(3), "ended after {took:?}");
    // The exec: command's process group is killed on this path too (the
    // script's shell may be a grandchild, reaped by init: gone or a zombie).
    let pid: i32 = std::fs::read_to_string(sb.path("pid")).unwrap().trim().parse().unwrap();
    let stat = format!("/proc/{pid}/stat");
    let gone = wait_for(Duration::from_secs(30), || std::fs::read_to_string(&stat).map_or(true, |s| s.contains(") Z ")));
    assert!(gone, "the silent agent (pid {pid}) outlived the session");
}

#[test]
fn flags_that_do_not_apply_on_a_target_are_refused() {
    let sb = Sandbox::new();
    for (flag, value) in [("--trace-threshold", Some("100us")), ("--load", Some("io")), ("--no-dma-latency", None), ("--preset", Some("quick"))] {
        let mut args = vec!["run", "--target", "exec:true", flag];
        args.extend(value);
        let out = sb.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
    // The rule of a local run too: a flag none of the run's probes reads,
    // -p where the threads run SCHED_OTHER.
    for (args, flag) in [(&["--probe", "timer", "--iterations", "100"][..], "--iterations"), (&["-p", "50", "--policy", "other"][..], "-p/--priority")] {
        let mut all = vec!["run", "--target", "exec:true"];
        all.extend_from_slice(args);
        let out = sb.run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag) && stderr.contains("would do nothing"), "{args:?}: {stderr}");
    }
    // The one plan's checks hold on a target too: a phase name a table
    // cannot show is refused as on a native run (the target's own parser
    // took any name), and --ns is among the flags a target takes.
    let out = sb.run(&["run", "--target", "exec:true", "--phase-name", "a b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--phase-name 'a b': use 1-64 letters"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = sb.run(&["run", "--target", "exec:true", "--no-dma-latency"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-q, --ns, --target-silence, --target-transcript. Drop --no-dma-latency"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The agent's limit on the interval (1 h) is checked before the target
    // is started: the agent refused it with `code=plan` only after
    // connecting (exit 1).
    let started = sb.path("started");
    let target = format!("exec:touch {}", started.display());
    let out = sb.run(&["run", "--target", target.as_str(), "-i", "2h", "-D", "3h"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("an agent takes intervals of up to 1 h"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!started.exists(), "the target was started");
    for bad in ["tcp:nowhere", "serial:ttyS0", "ftp:x"] {
        let out = sb.run(&["run", "--target", bad]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(bad));
    }
}

/// A PostgreSQL password on the command line is never stored or printed:
/// native, `--target` and `monitor` keep `alice:***` (redacted once, where
/// the command line is captured). `--no-store`: no server is needed. The
/// password has a `?` in it (a valid URL: the user-info ends at the last `@`),
/// and the `--target` run carries a second URL inside its exec command (the
/// agent started through `env`), which is an argument like any other.
#[test]
fn no_path_keeps_a_database_password() {
    let sb = Sandbox::new();
    // Both forms of the flag: its value as the next argument, and after `=`.
    let db = |what: &str| {
        if what == "monitor" {
            vec!["--no-store", "--db=postgresql://alice:s3?cret@localhost/rt"]
        } else {
            vec!["--no-store", "--db", "postgres://alice:s3?cret@localhost/rt"]
        }
    };
    let mut runs: Vec<(&str, Vec<String>)> = vec![
        ("native", vec!["run", "--probe", "timer", "-D", "200ms", "-t", "1", "-a", "0", "--json", "n.json"].into_iter().map(String::from).collect()),
        ("monitor", vec!["monitor", "--window", "300ms", "-D", "700ms", "-t", "1", "-a", "0", "--json", "m.json"].into_iter().map(String::from).collect()),
    ];
    if let Some(agent) = agent() {
        let target = format!("exec:env RTSCOPE_TEST_URL=postgresql://bob:s3?cret2@db.example/x {}", agent.display());
        runs.push((
            "target",
            ["run", "--target", &target, "--probe", "timer", "-D", "200ms", "-i", "1ms", "-t", "1", "-a", "0", "--json", "t.json"]
                .into_iter()
                .map(String::from)
                .collect(),
        ));
    }
    for (what, mut args) in runs {
        args.extend(db(what).into_iter().map(String::from));
        let out = sb.cmd().args(&args).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what}: {:?}\n{stdout}\n{stderr}", out.status);
        let json = std::fs::read_to_string(sb.path(&format!("{}.json", &what[..1]))).unwrap();
        for text in [&json, &stdout.to_string(), &stderr.to_string()] {
            assert!(!text.contains("s3?cret") && !text.contains("cret@"), "{what}: a password in\n{text}");
        }
        let run: Value = serde_json::from_str(&json).unwrap();
        let line: Vec<&str> = run["command_line"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert!(line.iter().any(|a| a.ends_with("://alice:***@localhost/rt")), "{what}: {line:?}");
        if what == "target" {
            assert!(line.iter().any(|a| a.contains("postgresql://bob:***@db.example/x ")), "{what}: {line:?}");
        }
    }
}

#[test]
fn an_agent_that_never_answers_is_exit_2() {
    let sb = Sandbox::new();
    // Exits at once without a word: nothing measured, nothing written.
    let out = sb.run(&["run", "--target", "exec:exit 3", "--json", "x.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("before announcing itself"));
    assert!(!sb.path("x.json").exists());
}

/// `make -C agent` with `vars`, into `out`; the build's stderr on failure.
fn make_agent(out: &Path, vars: &[String]) -> Result<(), String> {
    let o = Command::new("make").arg("-s").arg("-C").arg(repo().join("agent")).args(vars).arg(format!("OUT={}", out.display())).output().expect("make");
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

#[test]
fn agent_builds_warning_free_with_gcc_and_clang() {
    if !repo().join("agent/Makefile").exists() {
        common::skip!("no agent/ directory");
    }
    let dir = tempfile::tempdir().unwrap();
    for cc in ["gcc", "clang"] {
        if !have(cc) {
            common::skipped(&format!("{cc} not installed (Debian package {cc}; test.sh installs it)"));
            continue;
        }
        // Our check build: -std=c99 -Wall -Wextra -pedantic -Werror (a
        // warning fails it; a user's build leaves -Werror out).
        let out = dir.path().join(format!("rtscope-agent.{cc}"));
        if let Err(e) = make_agent(&out, &[format!("CC={cc}"), "WERROR=-Werror".into()]) {
            panic!("make -C agent CC={cc} (warnings are errors):\n{e}");
        }
        let v = Command::new(&out).arg("--version").output().unwrap();
        assert!(String::from_utf8_lossy(&v.stdout).starts_with("rtscope-agent "), "{cc} build runs");
    }
}

/// A static cross-build of the agent, run under qemu-user through the exec
/// transport: results come back, parse and hold the timer's invariant
/// (their latencies are qemu's, not a board's: not checked).
fn cross_agent_measures_timer(cc: &str, qemu: &str, arch: &str) {
    if !repo().join("agent/Makefile").exists() {
        common::skip!("no agent/ directory");
    }
    for tool in [cc, qemu] {
        if !have(tool) {
            common::skip!(
                "{tool} not installed (test.sh installs gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf, their libc6-dev-*-cross and qemu-user-static)"
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join(format!("rtscope-agent.{arch}"));
    if let Err(e) = make_agent(&bin, &[format!("CC={cc}"), "LDFLAGS=-static".into()]) {
        panic!("make -C agent CC={cc} LDFLAGS=-static:\n{e}");
    }
    let sb = Sandbox::new();
    let target = format!("exec:{qemu} {}", bin.display());
    run_ok(&sb, &["run", "--target", &target, "--probe", "timer", "-D", "500ms", "-i", "1ms", "-t", "1", "-a", "0", "--no-store", "--json", "q.json", "-q"]);
    let run = read_json(&sb.path("q.json"));
    check_timer(&run, 500, 1);
    assert_eq!(run["agent"]["arch"], arch, "the agent announced the emulated machine");
    assert_eq!(run["agent"]["transport"], "exec");
}

#[test]
fn aarch64_static_agent_under_qemu_user() {
    cross_agent_measures_timer("aarch64-linux-gnu-gcc", "qemu-aarch64-static", "aarch64");
}

#[test]
fn armhf_static_agent_under_qemu_user() {
    cross_agent_measures_timer("arm-linux-gnueabihf-gcc", "qemu-arm-static", "armv7l");
}

/// The agent helper's own test (cross-builds, qemu-user, the malloc counter), if present.
#[test]
fn agent_test_sh_passes() {
    let script = repo().join("agent/test.sh");
    if !script.exists() || agent().is_none() {
        common::skip!("no agent/test.sh or no C compiler");
    }
    let out = Command::new("sh").arg(&script).arg("--quick").output().unwrap();
    assert!(out.status.success(), "agent/test.sh --quick failed:\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// The probes and variants `rtscope probes --wide` lists (measure::REGISTRY; one line each, unwrapped):
/// name -> variants (empty for a probe without selectable variants).
fn registry(sb: &Sandbox) -> std::collections::BTreeMap<String, Vec<String>> {
    let out = run_ok(sb, &["probes", "--wide"]);
    let mut probes = std::collections::BTreeMap::new();
    let mut last = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.starts_with(' ') {
            last = line.split_whitespace().next().unwrap_or_default().to_string();
            probes.insert(last.clone(), Vec::new());
        } else if let Some((_, list)) = line.trim().split_once("): ").filter(|(h, _)| h.starts_with("variants (")) {
            probes.get_mut(&last).unwrap().extend(list.split(", ").map(str::to_string));
        }
    }
    probes
}

/// What an agent announces: its probe lines' name -> variants.
fn announced(agent: &Path) -> Vec<(String, Vec<String>)> {
    let mut child = Command::new(agent).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(signed("bye").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| l.strip_prefix("RTS1 probe "))
        .map(|l| {
            let get = |k: &str| l.split(' ').find_map(|f| f.strip_prefix(k)).unwrap_or_default().to_string();
            let variants = get("variants=");
            let variants = variants.split(',').filter(|v| !v.is_empty()).map(str::to_string).collect();
            (get("name="), variants)
        })
        .collect()
}

/// The agent's probe and variant names are the registry's, for the Linux
/// port and the generic POSIX one: every name an agent announces is one
/// `rtscope probes` lists, every variant one of that probe's (an agent may
/// offer a subset, never another name).
#[test]
fn the_agents_probe_and_variant_names_are_the_registrys() {
    let Some(linux) = agent() else { return };
    let sb = Sandbox::new();
    let native = registry(&sb);
    assert!(native.get("sem").is_some_and(|v| v.contains(&"posix/same-cpu".to_string())), "rtscope probes parsed: {native:?}");
    let dir = tempfile::tempdir().unwrap();
    let posix = dir.path().join("rtscope-agent.posix");
    make_agent(&posix, &["PORT=posix".into(), "CFLAGS=-O2 -U__linux__".into()]).expect("the generic POSIX port builds");
    for (bin, at_least) in [(linux, 9), (posix.as_path(), 7)] {
        let probes = announced(bin);
        assert!(probes.len() >= at_least, "{}: {probes:?}", bin.display());
        for (name, variants) in &probes {
            let known = native.get(name).unwrap_or_else(|| panic!("{} announces probe {name}, not in `rtscope probes`", bin.display()));
            for v in variants {
                assert!(known.contains(v), "{} announces {name}:{v}; `rtscope probes` has {known:?}", bin.display());
            }
        }
    }
}

/// A console that ends every line with `\r\n` (NuttX's, many serial
/// ones): the run is the same (issue 48, item 1; the 1 024-byte case is
/// transport.rs's unit test).
#[test]
fn a_console_that_adds_cr_to_every_line_changes_nothing() {
    let Some(agent) = agent() else { return };
    let sb = Sandbox::new();
    let target = format!("exec:{} | sed -u 's/$/\\r/'", agent.display());
    let json = sb.path("r.json");
    run_ok(&sb, &["run", "--target", &target, "--probe", "timer", "-i", "1ms", "-D", "1s", "-t", "1", "--no-store", "--json", json.to_str().unwrap()]);
    check_timer(&read_json(&json), 1000, 1);
}

/// A scripted agent that announces another OS (NuttX, no host name, a
/// 10 ms tick) and answers a timer plan with one result block: 1 µs
/// latencies, 10 missed periods, and the stall watch's failed step.
const FOREIGN_AGENT: &str = r#"
import sys, zlib
def send(body):
    line = "RTS1 " + body
    sys.stdout.write(f"{line} *{zlib.crc32(line.encode()):08x}\r\n"); sys.stdout.flush()
def hello():
    send("hello proto=1 agent=0.1.0 os=NuttX release=12.4.0 version=a1b2c3 arch=sim host= cpus=1 clock=CLOCK_MONOTONIC "
         "res_ns=10000000 clock_read_ns=40 clock_read_min_ns=38 preempt=unknown mlock=ENOSYS max_threads=2 max_seconds=3600 "
         "load_bytes=0 max_line=1024 alloc_check=0 affinity=0 prio_min=1 prio_max=255 own_prio=1")
    send("probe name=timer variants=")
    send("ready probes=1")
hello()
for raw in sys.stdin:
    w = raw.split()
    f = dict(kv.split("=", 1) for kv in w[2:-1] if "=" in kv)
    kind = w[1] if len(w) > 1 else ""
    if kind == "hi": hello()
    elif kind == "bye": send("bye"); break
    elif kind == "plan":
        i, iv, d = f["id"], int(f["interval_ns"]), int(f["duration_ns"])
        n = d // iv - 10
        send(f"ack id={i} variants= threads=1")
        send(f"begin id={i} variant=- threads=1 duration_ns={d}")
        send(f"result id={i} n=0 probe=timer variant=- thread=0 cpu=- interval_ns={iv} samples={n} overruns=10 min_ns=1000 "
             f"max_ns=1000 sum={1000*n} sumsq={1000000*n} hist=1 tail=1 tail_k=64 worst=5 sec=1 width_s=1 setup=1 stopped=1 notes=0")
        send(f"setup id={i} n=0 step=stall%20watch outcome=failed detail=no%20event%20for%205000%20ms%20after%20{n+10};%20stopped")
        send(f"hist id={i} n=0 b=1000:1000:{n}")
        send(f"tail id={i} n=0 s=1000:{iv}:0:-")
        send(f"sec id={i} n=0 s=0:{n}:1000:1000:{1000*n}")
        send(f"end id={i} n=0")
        send(f"done id={i} status=stopped results=1")
"#;

/// What the host shows for a target that is not Linux (issue 48, items 5, 7,
/// 8): the OS and its version as the system's name, "RTOS" instead of "not
/// RT", `-` for the host name it did not give, no `rtscope doctor` advice
/// (doctor audits this host, not the target), a warning naming the clock
/// resolution an interval and latencies fall below, and the stall.
#[test]
fn a_target_that_is_not_linux_is_shown_as_what_it_is() {
    let sb = Sandbox::new();
    let Some(target) = scripted_agent(&sb, FOREIGN_AGENT) else { return };
    let json = sb.path("r.json");
    let out = sb.run(&["run", "--target", &target, "--probe", "timer", "-i", "1ms", "-D", "1s", "--no-store", "--json", json.to_str().unwrap()]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let run = read_json(&json);
    assert_eq!(run["host"]["kernel_release"], "NuttX 12.4.0", "{said}");
    let report = run_ok(&sb, &["report", json.to_str().unwrap(), "--wide"]);
    let report = String::from_utf8_lossy(&report.stdout).into_owned();
    let all = format!("{said}\n{report}");
    assert!(report.contains("== NuttX 12.4.0 =="), "{report}");
    assert!(report.contains("- · NuttX 12.4.0 (RTOS) · sim"), "{report}");
    assert!(!all.contains("not RT"), "{all}");
    assert!(!all.contains("rtscope doctor"), "{all}");
    assert!(all.contains("10 periods missed"), "{all}");
    assert!(all.contains("the target's clock resolution is 10ms (clock_getres), coarser than its interval 1ms"), "{all}");
    assert!(all.contains("a probe on the target stalled (timer: no event for 5000 ms after 1000; stopped)"), "{all}");
    assert!(!all.contains("not real-time: stall watch"), "{all}");
    // Said before measuring too, on stderr (issue 48, item 5).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("announces a clock resolution of 10ms (hello res_ns, clock_getres); the interval 1ms is below it"), "{err}");
    // No Linux-only advice for the target (item 7): its failed memory lock
    // is not real-time, but root / CAP_SYS_NICE are this host's words.
    assert!(all.contains("not real-time: mlockall failed (on the target: ENOSYS)"), "{all}");
    assert!(!all.contains("CAP_SYS_NICE"), "{all}");
    // The HTML page names the system as the terminal does.
    let html = sb.path("r.html");
    run_ok(&sb, &["report", json.to_str().unwrap(), "--format", "html", "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("NuttX 12.4.0"), "html");
    assert!(page.contains("RTOS"), "html");
    assert!(!page.contains("rtscope doctor") && !page.contains("CAP_SYS_NICE"), "html");
}

/// `-p` is the priority on the target's scale (issue 48, item 4): the scripted
/// NuttX agent runs its own threads at 1 (prio_min), so `-p 1` would put the
/// measuring thread level with them; refused with exit 2 naming the range
/// before a plan is sent (the old host sent it, and this agent, which checks
/// nothing, measured). `-p 2` measures.
#[test]
fn a_priority_the_target_cannot_honour_is_refused_before_measuring() {
    let sb = Sandbox::new();
    let Some(target) = scripted_agent(&sb, FOREIGN_AGENT) else { return };
    let json = sb.path("r.json");
    let args = |p: &'static str| {
        vec!["run", "--target", &target, "--probe", "timer", "-i", "10ms", "-D", "1s", "-p", p, "--no-store", "--json", json.to_str().unwrap()]
    };
    let out = sb.run(&args("1"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("-p/--priority 1"), "{err}");
    assert!(err.contains("(NuttX) schedules at 1..255, the agent's own threads at 1"), "{err}");
    assert!(err.contains("use -p 2..99"), "{err}");
    assert!(!json.exists(), "nothing written");
    let out = sb.run(&args("2"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read_json(&json)["plan"]["priority"], 2);
}

/// Holds the agent's measuring thread (the one at a real-time priority) in a
/// ptrace stop, alone, as a wake-up lost by an RTOS would (issue 48, item 8):
/// `freeze.py AGENT_PID`. Prints `stopped TID`, holds the thread until the
/// agent's main thread has ended (the tracer's exit then releases it), exit
/// 77 when ptrace is not allowed here.
const FREEZE: &str = r#"
import ctypes, os, sys, time
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
def rt(t):
    s = open(f"/proc/{pid}/task/{t}/stat").read()
    return int(s[s.rindex(")") + 2:].split()[37])
def leader():
    try:
        s = open(f"/proc/{pid}/stat").read()
        return s[s.rindex(")") + 2]
    except OSError:
        return "X"
tid, end = None, time.monotonic() + 60
while tid is None and time.monotonic() < end:
    try:
        tid = next((int(t) for t in os.listdir(f"/proc/{pid}/task") if rt(t) > 0), None)
    except (OSError, ValueError):
        pass
    time.sleep(0.05)
if tid is None:
    print("no measuring thread", flush=True); sys.exit(1)
if libc.ptrace(0x4206, tid, None, None) != 0:
    print("ptrace not allowed", flush=True); sys.exit(77)
libc.ptrace(0x4207, tid, None, None)
os.waitpid(tid, 0x40000000)
print(f"stopped {tid}", flush=True)
end = time.monotonic() + 90
while time.monotonic() < end and leader() not in "ZX":
    time.sleep(0.05)
libc.ptrace(17, tid, None, None)
"#;

/// A probe on the target that stops counting ends the run (issue 48, item 8),
/// end to end: the real agent and rtscope, the measuring thread frozen
/// after the run began. The agent's stall watch stops the variant and sends
/// what it measured; rtscope keeps it and warns. Before the stall watch, the
/// agent kept sending progress with frozen counts and rtscope waited for the
/// whole 60 s plan and more (the frozen thread never ends it).
#[test]
fn a_stalled_probe_on_the_target_ends_the_run_and_is_shown() {
    let Some(agent) = agent() else { return };
    if !have("python3") {
        common::skip!("python3 (ptrace helper)");
    }
    let sb = Sandbox::new();
    std::fs::write(sb.path("freeze.py"), FREEZE).unwrap();
    let mut child = spawn_logged(&sb, agent, "timer", "60s");
    assert!(wait_for(Duration::from_secs(60), || log_has(&sb, "RTS1 begin id=1")), "the timer plan never began");
    let pid = std::fs::read_to_string(sb.path("pid")).unwrap().trim().to_string();
    let freeze = Command::new("python3").arg(sb.path("freeze.py")).arg(&pid).stdout(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    // The plan is 60 s; the stall watch (5 s without a count) ends it long before.
    let ended = wait_for(Duration::from_secs(45), || child.try_wait().unwrap().is_some());
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let helper = freeze.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&helper.stdout).into_owned();
    if helper.status.code() == Some(77) {
        common::skip!("{said}");
    }
    assert!(said.starts_with("stopped "), "{said}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(ended, "rtscope still waited {:?} after the stall: {stderr}", started.elapsed());
    let run = read_json(&sb.path("k.json"));
    let warnings: Vec<&str> = run["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.starts_with("a probe on the target stalled (timer: no event for ")), "{warnings:?}");
    let steps = run["realtime_setup"]["steps"].as_array().unwrap();
    assert!(steps.iter().any(|s| s["step"] == "stall watch" && s["outcome"] == "failed"), "{steps:?}");
    // What was measured before the stall is kept, and less than the plan.
    let m = merged(&run);
    assert_eq!(m.len(), 1);
    let (samples, overruns) = (u(&m[0]["samples"]), u(&m[0]["overruns"]));
    assert!(samples > 0 && samples + overruns < 60_000, "{samples} + {overruns}");
    let report = run_ok(&sb, &["report", "k.json"]);
    assert!(String::from_utf8_lossy(&report.stdout).contains("a probe on the target stalled"));
}

/// A cross-CPU variant the agent could not place (the generic port has no
/// affinity call) is said where the reader looks (issue 48, item 6): the
/// agent's note reached the JSON before but no table, warning or report
/// showed it; now it is a warning at the end of the run and in the report.
#[test]
fn an_unplaced_cross_cpu_variant_is_shown() {
    if agent().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let posix = dir.path().join("rtscope-agent.posix");
    make_agent(&posix, &["PORT=posix".into(), "CFLAGS=-O2 -U__linux__".into()]).expect("the generic POSIX port builds");
    let sb = Sandbox::new();
    let target = format!("exec:{}", posix.display());
    let out = run_ok(&sb, &["run", "--target", &target, "--probe", "sem:mutex/cross-cpu", "-D", "1s", "-i", "1ms", "--no-store", "--json", "x.json"]);
    let said = common::unwrapped(&format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    let want = "sem:mutex/cross-cpu (idle): cross-CPU not placed: the two threads were meant for CPUs 0 and 1, but this system has no CPU affinity call";
    assert!(said.contains(want), "{said}");
    let run = read_json(&sb.path("x.json"));
    let placed = run["warnings"].as_array().unwrap().iter().filter(|w| w.as_str().unwrap().contains("cross-CPU not placed")).count();
    assert_eq!(placed, 1, "once per variant, not per thread entry: {:?}", run["warnings"]);
    // The report wraps its warnings: compare with the line breaks as spaces.
    let report = run_ok(&sb, &["report", "x.json"]);
    let report = common::unwrapped(&String::from_utf8_lossy(&report.stdout));
    assert!(report.contains(want), "{report}");
}

/// `--target-transcript FILE` (issue 64): every byte of a real agent's
/// session both ways, timestamped; agent/check_output.py checks the
/// target's side of it as it checks the agent's own output.
#[test]
fn a_transcript_of_a_real_session_passes_check_output() {
    let Some(agent) = agent() else { return };
    if !have("python3") {
        common::skip!("python3 (agent/check_output.py)");
    }
    let sb = Sandbox::new();
    let target = format!("exec:{}", agent.display());
    let t = sb.path("session.txt");
    run_ok(
        &sb,
        &[
            "run",
            "--target",
            &target,
            "--probe",
            "timer,sem",
            "-D",
            "500ms",
            "-i",
            "1ms",
            "-a",
            "0",
            "--no-store",
            "--json",
            "t.json",
            "--target-transcript",
            t.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&t).unwrap();
    assert!(text.starts_with("# rtscope ") && text.contains(" transcript of exec:"), "{text}");
    let record = |dir: &str, kind: &str| {
        text.lines().any(|l| l.split_once(' ').is_some_and(|(at, rest)| at.parse::<f64>().is_ok() && rest.starts_with(&format!("{dir} RTS1 {kind} "))))
    };
    assert!(record("<", "hello") && record(">", "plan") && record("<", "done") && record(">", "bye"), "{text}");
    let check =
        Command::new("python3").arg(repo().join("agent/check_output.py")).arg(&t).args(["--expect-status", "complete", "--min-results", "2"]).output().unwrap();
    assert!(check.status.success(), "{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).lines().filter(|l| l.starts_with("ok result")).count(),
        4,
        "timer's block and sem's 3 same-cpu variants (one CPU): {}",
        String::from_utf8_lossy(&check.stdout)
    );
}
