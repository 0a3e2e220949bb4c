//! Issue 35: `--policy deadline` (SCHED_DEADLINE), the `migrate` probe and
//! `signal:chain`. Each runs the real binary briefly and checks numbers that
//! could be wrong: period counts (samples + overruns = periods, runtime
//! overruns beside them), admission refusals (exit 2, nothing written),
//! violations with and without a SCHED_FIFO hog, and a chain's round against
//! its hops. Needs root (SCHED_DEADLINE, SCHED_FIFO); skips with the reason
//! otherwise or where the kernel refuses. No absolute latency is asserted.

use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

mod common;
use common::{is_root, merged_entry, rtscope, serial};

/// `rtscope run ARGS --json FILE -q --no-store`: the output and the result (if written).
fn run(args: &[&str]) -> (Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    let out = rtscope().arg("run").args(args).arg("--json").arg(&file).args(["-q", "--no-store"]).output().unwrap();
    let v = std::fs::read_to_string(&file).ok().map(|s| serde_json::from_str(&s).unwrap());
    (out, v)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A deadline run the kernel may refuse: None (and why) when it did.
fn deadline_run(args: &[&str]) -> Option<Value> {
    let (out, v) = run(args);
    if refused(&out, v.is_some()) {
        return None;
    }
    assert!(out.status.success(), "rtscope run {args:?}: {}", stderr(&out));
    v
}

/// Did the kernel refuse the deadline plan (exit 2, said why, wrote nothing)?
fn refused(out: &Output, wrote: bool) -> bool {
    if out.status.code() != Some(2) {
        return false;
    }
    assert!(!wrote, "a refused run wrote a result");
    eprintln!("skipped: the kernel refused SCHED_DEADLINE here: {}", stderr(out));
    true
}

#[test]
fn deadline_tasks_are_admitted_and_every_period_is_a_sample_or_an_overrun() {
    if !is_root() {
        common::skip!("SCHED_DEADLINE needs root");
    }
    let _g = serial();
    // 4 ms period, runtime 2.4 ms (60 %): above the 2 ms HRTICK rule.
    let Some(run) = deadline_run(&["--probe", "timer", "--policy", "deadline", "-i", "4ms", "-t", "1", "-D", "1s"]) else { return };
    assert_eq!(run["plan"]["policy"], "deadline");
    let steps = run["realtime_setup"]["steps"].as_array().unwrap();
    let dl = steps.iter().find(|s| s["step"] == "sched_deadline[thread 0]").expect("a sched_deadline set-up step");
    assert_eq!(dl["outcome"], "ok", "{dl}");
    assert!(dl["detail"].as_str().unwrap().contains("runtime 2400us deadline 4ms period 4ms"), "{dl}");
    let r = merged_entry(&run, "timer", None);
    assert_eq!(u(&r["samples"]) + u(&r["overruns"]), 250, "1 s of 4 ms periods: {r}");
    // Counted (never absent) beside the missed periods.
    assert!(r["runtime_overruns"].is_u64(), "{r}");

    // periodic: each variant's reservation has the variant's period.
    let Some(run) = deadline_run(&["--probe", "periodic", "--periods", "4ms,8ms", "--policy", "deadline", "-t", "1", "-D", "2s"]) else { return };
    for (v, periods) in [("4ms", 250), ("8ms", 125)] {
        let r = merged_entry(&run, "periodic", Some(v));
        assert_eq!(u(&r["samples"]) + u(&r["overruns"]), periods, "{v}: {r}");
        assert!(r["runtime_overruns"].is_u64());
    }
}

#[test]
fn standard_under_deadline_runs_timer_and_periodic_and_names_the_probes_left_out() {
    if !is_root() {
        common::skip!("the admission test of a deadline plan needs root");
    }
    let _g = serial();
    // -i 4ms: the preset's 1 ms would need HRTICK (runtime 600 µs).
    let out = rtscope().args(["run", "--preset", "standard", "--policy", "deadline", "-i", "4ms", "--dry-run"]).output().unwrap();
    if refused(&out, false) {
        return;
    }
    let plan = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let left = "left out: sem, pipe, mq, signal, switch, preempt, noise, maxrate, migrate, pi (they do not run under SCHED_DEADLINE";
    assert!(plan.contains("note: preset standard: --policy deadline runs timer, periodic only;") && plan.contains(left), "{plan}");
    let probes: Vec<&str> = plan.lines().filter_map(|l| l.trim_start().strip_prefix("probe ")).map(|l| l.split(' ').next().unwrap()).collect();
    assert!(probes.contains(&"timer") && probes.contains(&"periodic"), "{plan}");
    assert!(probes.iter().all(|p| ["timer", "periodic"].contains(p)), "only timer and periodic: {probes:?}");
}

#[test]
fn scenario_reservation_keys_set_the_deadline_tasks() {
    if !is_root() {
        common::skip!("SCHED_DEADLINE needs root");
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dl.toml");
    let result = dir.path().join("r.json");
    std::fs::write(
        &file,
        "policy = \"deadline\"\ninterval = \"4ms\"\ndl_runtime = \"2ms\"\ndl_deadline = \"3ms\"\nduration = \"1s\"\nthreads = 1\n[[probe]]\nname = \"timer\"\n[[probe]]\nname = \"sem\"\n",
    )
    .unwrap();
    let out = rtscope().arg("run").arg(&file).arg("--json").arg(&result).args(["-q", "--no-store"]).output().unwrap();
    if refused(&out, result.exists()) {
        return;
    }
    assert!(out.status.success(), "{}", stderr(&out));
    // Said even with -q: sem was left out.
    assert!(common::unwrapped(&stderr(&out)).contains("left out: sem"), "{}", stderr(&out));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert_eq!(run["plan"]["policy"], "deadline");
    let steps = run["realtime_setup"]["steps"].as_array().unwrap();
    let dl = steps.iter().find(|s| s["step"] == "sched_deadline[thread 0]").expect("a sched_deadline set-up step");
    assert_eq!(dl["outcome"], "ok", "{dl}");
    assert!(dl["detail"].as_str().unwrap().contains("runtime 2ms deadline 3ms period 4ms"), "{dl}");
    assert!(run["results"].as_array().unwrap().iter().all(|r| r["probe"] == "timer"), "sem left out");
    let r = merged_entry(&run, "timer", None);
    assert_eq!(u(&r["samples"]) + u(&r["overruns"]), 250, "1 s of 4 ms periods: {r}");
}

#[test]
fn deadline_refusals_are_exit_2_naming_the_setting_with_nothing_written() {
    if !is_root() {
        common::skip!("SCHED_DEADLINE needs root");
    }
    let _g = serial();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    // Bandwidth: 60 % of every CPU per thread, on twice as many threads as CPUs.
    let t = (2 * cpus + 2).to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--probe", "timer", "--policy", "deadline", "-i", "4ms", "-t", &t, "-D", "1s"], "were not admitted"),
        (vec!["--probe", "timer", "--policy", "deadline", "-i", "4ms", "--dl-runtime", "5ms", "-D", "1s"], "--dl-runtime 5ms"),
        (vec!["--probe", "timer", "--policy", "deadline", "-i", "4ms", "--dl-deadline", "3ms", "--dl-runtime", "3500us", "-D", "1s"], "--dl-runtime 3500us"),
        (vec!["--probe", "sem", "--policy", "deadline", "-i", "4ms", "-D", "1s"], "does not run under SCHED_DEADLINE"),
        (vec!["--probe", "timer", "-i", "4ms", "--dl-runtime", "2ms", "-D", "1s"], "only with --policy deadline"),
        (vec!["--probe", "migrate", "--policy", "other", "-D", "1s"], "--policy fifo"),
    ];
    for (args, want) in cases {
        let (out, v) = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert!(v.is_none(), "{args:?} wrote a result");
    }
    // Runtimes under 2 ms need HRTICK (cyclicdeadline's rule).
    let hrtick = ["/sys/kernel/debug/sched/features", "/sys/kernel/debug/sched_features"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|s| s.split_whitespace().any(|w| w == "HRTICK"));
    if !hrtick {
        let (out, v) = run(&["--probe", "timer", "--policy", "deadline", "-i", "1ms", "-D", "1s"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("HRTICK") && stderr(&out).contains("-i 4ms"), "{}", stderr(&out));
        assert!(v.is_none());
    }
}

/// A SCHED_FIFO 99 thread on CPU 0, busy 41 ms of every 70 ms (a cycle that
/// drifts against migrate's 120 ms period), until `stop`.
fn hog(stop: &AtomicBool) {
    let param = libc::sched_param { sched_priority: 99 };
    // SAFETY: pid 0 is this thread; `param` is valid.
    assert_eq!(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }, 0);
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET on 0 is in range.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), 0);
    }
    while !stop.load(Ordering::Relaxed) {
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(41) {
            std::hint::spin_loop();
        }
        std::thread::sleep(std::time::Duration::from_millis(29));
    }
}

#[test]
fn migrate_reports_violations_under_a_fifo_hog_and_check_gates_on_them() {
    if !is_root() {
        common::skip!("migrate needs SCHED_FIFO (root)");
    }
    if std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) < 2 {
        common::skip!("migrate's order across CPUs needs two CPUs");
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let quiet = dir.path().join("quiet.json");
    let hogged = dir.path().join("hog.json");
    // -p 99: threads 96-98 and the coordinator at 99, above other tests' 95.
    let args = ["run", "--probe", "migrate", "-a", "0,1", "-p", "99", "-D", "4s", "-q", "--no-store", "--json"];
    let out = rtscope().args(args).arg(&quiet).output().unwrap();
    let q: Value = serde_json::from_str(&std::fs::read_to_string(&quiet).unwrap()).unwrap();
    let r = merged_entry(&q, "migrate", None);
    let v = &r["violations"];
    // Releases at 60 ms + k × 120 ms while a whole period fits in 4 s: 32
    // (fewer only if a period ended after the next release was due).
    assert!((30..=32).contains(&u(&v["periods"])), "4 s of 120 ms periods: {v}");
    // Three threads, one sample each per period.
    assert_eq!(u(&r["samples"]), 3 * u(&v["periods"]));
    assert_eq!(out.status.code(), Some(if u(&v["count"]) == 0 { 0 } else { 3 }), "{}", stderr(&out));

    let stop = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| hog(&stop));
        let out = rtscope().args(args).arg(&hogged).output().unwrap();
        stop.store(true, Ordering::Relaxed);
        out
    });
    assert_eq!(out.status.code(), Some(3), "the hog's violations fail the run: {}", stderr(&out));
    assert!(stderr(&out).contains("waited while a lower-priority one ran"));
    let h: Value = serde_json::from_str(&std::fs::read_to_string(&hogged).unwrap()).unwrap();
    let v = &merged_entry(&h, "migrate", None)["violations"];
    assert!(u(&v["count"]) > 0, "{v}");
    let first = &v["list"][0];
    // The one that waited is higher than the one that ran, by more than max_err.
    assert!(u(&first["high_priority"]) > u(&first["low_priority"]), "{first}");
    assert!(u(&first["wait_ns"]) > u(&v["max_err_ns"]), "{first}");

    let gate = rtscope().args(["check", "--violations", "0"]).arg(&hogged).output().unwrap();
    assert_eq!(gate.status.code(), Some(3), "{}", String::from_utf8_lossy(&gate.stdout));
    let gate = rtscope().args(["check", "--violations", "1000"]).arg(&hogged).output().unwrap();
    assert_eq!(gate.status.code(), Some(0), "{}", String::from_utf8_lossy(&gate.stdout));
}

#[test]
fn a_signal_chain_round_is_longer_than_one_hop() {
    if !is_root() {
        common::skip!("signal:chain runs SCHED_FIFO (root)");
    }
    let _g = serial();
    let (out, run) = run(&["--probe", "signal:chain", "--chain", "3", "-a", "0", "--iterations", "2000", "-i", "200us", "-D", "1h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = run.unwrap();
    assert_eq!(run["plan"]["probe_options"]["chain"], 3);
    let round = merged_entry(&run, "signal", Some("chain"));
    let hop = merged_entry(&run, "signal", Some("chain/hop"));
    assert_eq!(u(&round["samples"]), 2000);
    // Three hops per round, each recorded by its receiver.
    assert_eq!(u(&hop["samples"]), 3 * 2000);
    // A round is three hops and the stamping between them.
    assert!(u(&round["min_ns"]) > u(&hop["min_ns"]), "round {} hop {}", round["min_ns"], hop["min_ns"]);
    assert!(u(&round["percentiles_ns"]["50"]) > u(&hop["percentiles_ns"]["50"]));
    assert!(round["mean_ns"].as_f64().unwrap() > hop["mean_ns"].as_f64().unwrap());
}
