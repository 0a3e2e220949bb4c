//! The agent on a system that lacks part of what a probe needs (issue 64):
//! rtscope-agent built here with a compile-time test option that makes it
//! behave as such a system would — `-DRTSCOPE_TEST_REFUSE_PROTECT` (a
//! `pthread_mutexattr_setprotocol` that refuses PTHREAD_PRIO_PROTECT at run
//! time, after start-up announced it), `-DRTSCOPE_TEST_LATE_START=N` (every
//! Nth period of the timer loop starts past its deadline) — and driven by
//! rtscope; and scripted agents saying what a real one cannot be made to.
//!
//! Numbers checked are counts, never latencies: the variants that ran and
//! the one refused, samples + overruns = periods with late starts counted
//! beside the samples.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{merged_entry, per_thread, scripted_agent, u, Sandbox};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `make -C agent` with `cflags` into `sb`; None (a skip, said) without a
/// C compiler.
fn agent_with(sb: &Sandbox, cflags: &str) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        common::skipped(&format!("no C compiler ({cc}) to build rtscope-agent"));
        return None;
    }
    let bin = sb.path("rtscope-agent");
    let o = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(repo().join("agent"))
        .arg(format!("CFLAGS=-O2 {cflags}"))
        .arg(format!("OUT={}", bin.display()))
        .output()
        .expect("make");
    assert!(o.status.success(), "make -C agent CFLAGS='{cflags}':\n{}", String::from_utf8_lossy(&o.stderr));
    Some(bin)
}

fn rtscope_run(sb: &Sandbox, args: &[&str]) -> (std::process::Output, String) {
    let out = sb.run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, err)
}

fn steps(run: &Value) -> &Vec<Value> {
    run["realtime_setup"]["steps"].as_array().unwrap()
}

/// A variant the target refuses at run time is refused alone: the other
/// `pi` variants are measured and stored, the refusal is a failed set-up
/// step naming the call and errno, and a warning says which variant was
/// not measured — the run is still real-time and complete.
#[test]
fn a_variant_refused_at_run_time_leaves_its_siblings_measured() {
    let _g = common::serial();
    common::need_root!("the pi probe's threads run at SCHED_FIFO");
    let sb = Sandbox::new();
    let Some(bin) = agent_with(&sb, "-DRTSCOPE_TEST_REFUSE_PROTECT") else { return };
    let target = format!("exec:{}", bin.display());
    let (out, err) = rtscope_run(&sb, &["run", "--target", &target, "--probe", "pi", "-D", "2s", "-i", "5ms", "-a", "0", "--no-store", "--json", "pi.json"]);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = common::read_json(&sb.path("pi.json"));
    for v in ["none", "inherit", "deadlock-break"] {
        let e = merged_entry(&run, "pi", Some(v));
        assert!(u(&e["samples"]) > 0, "pi:{v} measured: {e}");
    }
    assert!(!per_thread(&run).iter().any(|r| r["variant"] == "protect"), "no result of the refused variant");
    let refused: Vec<&Value> = steps(&run).iter().filter(|s| s["step"] == "refused[pi:protect]").collect();
    assert_eq!(refused.len(), 1, "{:?}", steps(&run));
    assert_eq!(refused[0]["outcome"], "failed");
    let detail = refused[0]["detail"].as_str().unwrap();
    assert!(detail.contains("pthread_mutexattr_setprotocol") && detail.contains("ENOTSUP"), "{detail}");
    assert_eq!(run["realtime_setup"]["ok"], true, "a refused variant is not a failed real-time set-up");
    assert!(err.contains("pi:protect was not measured: the target refused it"), "{err}");
    assert!(!err.contains("not real-time"), "{err}");
}

/// The scripted agent of one `pi` plan that refuses `protect` with `line`
/// (its refusal, or a hostile one) and then sends `blocks` of the variants
/// in `measured`.
fn pi_refusing(refusal: &str, measured: &[&str]) -> String {
    let blocks: Vec<String> = measured
        .iter()
        .enumerate()
        .map(|(n, v)| {
            format!(
                "    send(f'result id={{pid}} n={n} probe=pi variant={v} thread=0 cpu=0 interval_ns=5000000 samples=2 overruns=0 min_ns=100 max_ns=300 sum=400 sumsq=100000 hist=2 tail=0 tail_k=10 worst=5 sec=1 width_s=1 setup=0 stopped=0')\n    send(f'hist id={{pid}} n={n} b=100:100:1,300:300:1')\n    send(f'sec id={{pid}} n={n} s=0:2:100:300:400')\n    send(f'end id={{pid}} n={n}')\n"
            )
        })
        .collect();
    format!(
        r#"import sys, zlib
def send(body):
    sys.stdout.write('RTS1 %s *%08x\n' % (body, zlib.crc32(('RTS1 ' + body).encode()) & 0xffffffff)); sys.stdout.flush()
send('hello proto=1 agent=0.1.0 os=Testix release=1 version=1 arch=x86_64 host=t cpus=2 clock=CLOCK_MONOTONIC res_ns=1 preempt=unknown mlock=ok max_threads=2 max_seconds=3600 max_line=1024 prio_min=1 prio_max=99 own_prio=0')
send('probe name=pi variants=none,inherit,protect')
send('ready probes=1')
for line in sys.stdin:
    f = dict(kv.split('=', 1) for kv in line.split()[2:-1] if '=' in kv)
    kind = line.split()[1]
    if kind == 'bye':
        send('bye'); break
    if kind != 'plan':
        continue
    pid = f['id']
    send(f'ack id={{pid}} variants=none,inherit,protect threads=1')
    send(f'setup id={{pid}} n=- step={refusal} outcome=failed detail=pi%20protect:%20pthread_mutexattr_setprotocol:%20ENOTSUP')
{blocks}    send(f'done id={{pid}} status=complete results={n}')
"#,
        n = measured.len(),
        blocks = blocks.concat()
    )
}

/// The host holds a refusal to the plan: one of an acknowledged variant
/// excuses its block; one of a variant the agent did not acknowledge is a
/// malformed line (exit 2, nothing stored); and a refusal does not excuse
/// the other variants' blocks.
#[test]
fn the_host_checks_a_refusal_against_the_plan() {
    let sb = Sandbox::new();
    let Some(target) = scripted_agent(&sb, &pi_refusing("refused[pi:protect]", &["none", "inherit"])) else { return };
    let (out, err) = rtscope_run(&sb, &["run", "--target", &target, "--probe", "pi", "-D", "1s", "-i", "5ms", "--no-store", "--json", "ok.json"]);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = common::read_json(&sb.path("ok.json"));
    assert_eq!(u(&merged_entry(&run, "pi", Some("none"))["samples"]), 2);
    assert_eq!(u(&merged_entry(&run, "pi", Some("inherit"))["samples"]), 2);
    assert!(err.contains("pi:protect was not measured"), "{err}");

    let sb = Sandbox::new();
    let Some(target) = scripted_agent(&sb, &pi_refusing("refused[pi:sysv]", &["none", "inherit"])) else { return };
    let (out, err) = rtscope_run(&sb, &["run", "--target", &target, "--probe", "pi", "-D", "1s", "-i", "5ms", "--no-store", "--json", "bad.json"]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refusal of pi:sysv"), "{err}");
    assert!(!sb.path("bad.json").exists());

    let sb = Sandbox::new();
    let Some(target) = scripted_agent(&sb, &pi_refusing("refused[pi:protect]", &["none"])) else { return };
    let (out, err) = rtscope_run(&sb, &["run", "--target", &target, "--probe", "pi", "-D", "1s", "-i", "5ms", "--no-store", "--json", "short.json"]);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no result block of variant inherit"), "{err}");
}

/// A late start (the period already due as the timer loop is about to
/// sleep) is counted apart, not as a sample: the agent built to start every
/// 10th period late; the host stores `late_starts` as a missed period of
/// the thread and its merged entry, and samples + overruns = periods holds;
/// run's end and `rtscope report` say the count beside the distribution.
#[test]
fn a_forced_late_start_is_counted_apart_not_as_a_wake_up() {
    let _g = common::serial();
    let sb = Sandbox::new();
    let Some(bin) = agent_with(&sb, "-DRTSCOPE_TEST_LATE_START=10") else { return };
    let target = format!("exec:{}", bin.display());
    let (out, err) =
        rtscope_run(&sb, &["run", "--target", &target, "--probe", "timer", "-D", "500ms", "-i", "1ms", "-t", "1", "-a", "0", "--no-store", "--json", "t.json"]);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{err}");
    let run = common::read_json(&sb.path("t.json"));
    let rs = per_thread(&run);
    assert_eq!(rs.len(), 1, "{run}");
    let r = rs[0];
    let late = u(&r["late_starts"]);
    assert!(late >= 40, "every 10th of 500 periods started late: {r}");
    assert!(late <= u(&r["overruns"]), "late starts are missed periods: {r}");
    assert_eq!(u(&r["samples"]) + u(&r["overruns"]), 500, "{r}");
    let merged = merged_entry(&run, "timer", None);
    assert_eq!(u(&merged["late_starts"]), late);
    // Said beside the distribution: run's end and the terminal report carry
    // the merged entry's count, among its missed periods.
    let said = format!("timer ({}): {late} periods started late", merged["phase"].as_str().unwrap());
    let among = format!("counted apart among the {} missed periods", u(&merged["overruns"]));
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat(&err).contains(&said) && flat(&err).contains(&among), "{said} / {among} in:\n{err}");
    let json = sb.path("t.json");
    let rep = sb.run(&["report", json.to_str().unwrap(), "--color", "never"]);
    assert_eq!(rep.status.code(), Some(0), "{}", String::from_utf8_lossy(&rep.stderr));
    let text = flat(&String::from_utf8_lossy(&rep.stdout));
    assert!(text.contains(&said) && text.contains(&among), "{said} / {among} in:\n{text}");
}
