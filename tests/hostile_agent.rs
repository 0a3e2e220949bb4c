//! A host that trusts no agent (issue 47): tests/fake_agent.py, a scripted
//! agent that speaks protocol 1 with valid checksums, sends what a buggy or
//! hostile target could, and each test checks what the host does with it:
//! a clear refusal (exit 2, nothing stored) for what no agent may send,
//! every whole block kept (exit 130) when the link drops, memory bounded by
//! the plan, an end to every plan.

mod common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{fake_agent as fake, fake_begun as begun, fake_run as run, per_thread, read_json, u, Sandbox};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What an exit-2 refusal must be: the message, nothing written or stored.
fn refused(sb: &Sandbox, o: &Output, words: &[&str]) {
    let e = common::unwrapped(&stderr(o));
    assert_eq!(o.status.code(), Some(2), "{e}");
    for w in words {
        assert!(e.contains(w), "{w:?} not in: {e}");
    }
    assert!(!e.contains('\x1b'), "agent text reaches the terminal with escapes: {e:?}");
    assert!(!sb.path("r.json").exists(), "nothing written");
}

const TIMER: &str = "--probe timer -D 1s -i 1ms --json r.json --no-store";

#[test]
fn hello_counts_are_bounded_before_anything_is_allocated() {
    let sb = Sandbox::new();
    for (hello, what) in [("cpus=18446744073709551615", "cpus=18446744073709551615"), ("cpus=100000 max_threads=1000000000", "cpus=100000")] {
        let t = fake(&sb, &format!("hello {hello}\nplan\nsleep 5\n"));
        let started = Instant::now();
        let o = run(&sb, &t, TIMER);
        refused(&sb, &o, &[what, "8192"]);
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}

#[test]
fn every_plan_line_fits_the_protocol() {
    let sb = Sandbox::new();
    // A 256-CPU target, -t 2 without -a: the plan names the CPUs the threads use.
    let t = fake(
        &sb,
        &format!(
            "hello cpus=256 max_threads=64\n{}block 0 timer - 0 100,200\nblock 1 timer - 1 100\nsay done id={{id}} status=complete results=2\nsleep 3\n",
            begun("-", 2)
        ),
    );
    let o = run(&sb, &t, "--probe timer -D 1s -i 1ms -t 2 --json r.json --no-store");
    assert!(o.status.success(), "{}", stderr(&o));
    let log = std::fs::read_to_string(sb.path("host.log")).unwrap();
    let plan = log.lines().find(|l| l.starts_with("RTS1 plan")).unwrap();
    assert!(plan.len() <= 1024 && plan.contains(" cpus=0,1 "), "{plan}");
    let r = read_json(&sb.path("r.json"));
    assert_eq!(r["plan"]["cpus"], serde_json::json!([0, 1]));
    // -a naming 256 CPUs cannot fit: refused before connecting, with the advice.
    std::fs::remove_file(sb.path("host.log")).unwrap();
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let o = run(&sb, &t, "--probe timer -D 1s -i 1ms -t 2 -a 0-255 --json r.json --no-store");
    refused(&sb, &o, &["-a/--affinity", "1024"]);
    assert!(!sb.path("host.log").exists(), "the agent was started");
}

#[test]
fn counts_announced_in_a_result_are_bounded_by_the_plan() {
    let sb = Sandbox::new();
    let head = "result id={id} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=1 overruns=0 min_ns=100 max_ns=100 sum=100 sumsq=10000 width_s=1 setup=0 stopped=0 worst=2";
    for (counts, what) in [
        ("hist=1 tail=18446744073709551615 tail_k=5 sec=1", "tail=18446744073709551615"),
        ("hist=1 tail=1 tail_k=100000 sec=1", "tail_k=100000"),
        ("hist=1000000 tail=1 tail_k=5 sec=1", "hist=1000000"),
        ("hist=1 tail=1 tail_k=5 sec=100000", "sec=100000"),
    ] {
        let t = fake(&sb, &format!("hello\n{}say {head} {counts}\nflood 100000 tail id={{id}} n=0 s=100:1:0:0\nsleep 5\n", begun("-", 1)));
        let o = run(&sb, &t, TIMER);
        refused(&sb, &o, &[what]);
    }
}

/// The peak RSS of a child while it runs (VmHWM, read until it exits).
fn peak_rss_kb(child: &mut std::process::Child) -> u64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(l) = s.lines().find(|l| l.starts_with("VmHWM:")) {
                peak = peak.max(l.split_whitespace().nth(1).unwrap().parse().unwrap());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    peak
}

#[test]
fn a_flood_of_lines_keeps_the_host_bounded() {
    // 2.2 M lines (~200 MB) of progress and noise, far faster than the host
    // parses them: the link holds them back (a bounded hand-over), the host
    // stays small and takes every line.
    let sb = Sandbox::new();
    let t = fake(
        &sb,
        &format!("hello\n{}noise 1000000\nflood 1200000 progress id={{id}} variant=- samples=1 overruns=0 max_ns=100 elapsed_ns=1\nblock 0 timer - 0 100\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1)),
    );
    let mut a = vec!["run", "--target", &t, "--target-silence", "300s"];
    a.extend(TIMER.split_whitespace());
    let mut child = sb.cmd().args(&a).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let peak = peak_rss_kb(&mut child);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 1);
    assert!(peak < 64 * 1024, "peak RSS {peak} kB while flooded");
}

#[test]
fn blocks_beyond_threads_times_variants_are_refused() {
    let sb = Sandbox::new();
    let t = fake(
        &sb,
        &format!("hello\n{}block 0 timer - 0 100\nblock 1 timer - 0 100\nblock 2 timer - 0 100\nsay done id={{id}} status=complete results=3\n", begun("-", 1)),
    );
    let o = run(&sb, &t, &format!("{TIMER} -t 1 -a 0"));
    refused(&sb, &o, &["thread 0", "twice"]);
}

/// Blocks whose merge would overflow cannot arrive: each block's periods
/// are bounded by the plan (2^63−1 samples in a 1 s plan at 1 ms is no
/// measurement); block.rs's unit test keeps the merge's own check.
#[test]
fn merges_that_overflow_and_sums_beyond_max_are_refused() {
    let sb = Sandbox::new();
    let big = i64::MAX;
    let huge = |n: u32| {
        format!(
            "say result id={{id}} n={n} probe=timer variant=- thread={n} cpu={n} interval_ns=1000000 samples={big} overruns=0 min_ns=100 max_ns=100 sum={} sumsq={} hist=1 tail=1 tail_k=5 worst=2 sec=0 width_s=1 setup=0 stopped=0\nsay hist id={{id}} n={n} b=100:100:{big}\nsay tail id={{id}} n={n} s=100:0:0:{n}\nsay end id={{id}} n={n}\n",
            100u128 * big as u128,
            10000u128 * big as u128
        )
    };
    let t = fake(&sb, &format!("hello cpus=4 max_threads=4\n{}{}{}{}say done id={{id}} status=complete results=3\n", begun("-", 3), huge(0), huge(1), huge(2)));
    let o = run(&sb, &t, &format!("{TIMER} -t 3 -a 0-2"));
    refused(&sb, &o, &[&format!("samples={big} + overruns=0 periods"), "allows at most 1002"]);
    // One sample of 100 ns whose sums say a mean of 3.4e38.
    let max = u128::MAX;
    let t = fake(&sb, &format!("hello\n{}say result id={{id}} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=1 overruns=0 min_ns=100 max_ns=100 sum={max} sumsq={max} hist=1 tail=1 tail_k=5 worst=2 sec=0 width_s=1 setup=0 stopped=0\nsay hist id={{id}} n=0 b=100:100:1\nsay tail id={{id}} n=0 s=100:0:0:0\nsay end id={{id}} n=0\nsay done id={{id}} status=complete results=1\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["sum=", "mean"]);
}

/// An honest block of two samples (100 and 200 ns) in a 1 s plan at 1 ms
/// on a two-CPU target, as script lines; `edits` replace text in it.
fn two_samples(edits: &[(&str, &str)]) -> String {
    let mut lines = [
        "say result id={id} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=2 overruns=998 min_ns=100 max_ns=200 sum=300 sumsq=50000 hist=2 tail=2 tail_k=5 worst=2 sec=1 width_s=1 setup=0 stopped=0",
        "say hist id={id} n=0 b=100:100:1,200:200:1",
        "say tail id={id} n=0 s=200:2000000:1:1,100:1000000:0:0",
        "say sec id={id} n=0 s=0:2:100:200:300",
        "say end id={id} n=0",
        "say done id={id} status=complete results=1",
    ]
    .join("\n");
    for (from, to) in edits {
        assert!(lines.contains(from), "{from}");
        lines = lines.replacen(from, to, 1);
    }
    format!("hello cpus=2 max_threads=2\n{}{lines}\nsleep 3\n", begun("-", 1))
}

/// Each value no measurement within the plan and the announced system can
/// make (issue 59), sent in well-formed signed lines: refused naming the
/// field and what the plan allows, exit 2, nothing stored. The honest block
/// they are made from is stored.
/// One impossible block: the (text, replacement) edits of the honest block, and the words its refusal must say.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn values_the_plan_and_the_target_cannot_make_are_refused() {
    let sb = Sandbox::new();
    let args = "--probe timer -D 1s -i 1ms -t 1 --json r.json --no-store";
    let t = fake(&sb, &two_samples(&[]));
    let o = run(&sb, &t, args);
    assert!(o.status.success(), "the honest block: {}", stderr(&o));
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 2);
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let cases: &[Case] = &[
        // CPUs: the plan measures on 0 and 1 of the target's two.
        (&[("cpu=0", "cpu=99999999999")], &["cpu=99999999999 where the plan measures on CPUs 0-1 (the target announced cpus=2)"]),
        (&[("cpu=0", "cpu=7")], &["cpu=7 where the plan measures on CPUs 0-1"]),
        (&[("100:1000000:0:0", "100:1000000:0:7")], &["tail sample 100:1000000:0: CPU 7 of a target with 2 CPUs"]),
        // Periods: 1 000 in 1 s at 1 ms (+2).
        (&[("overruns=998", "overruns=9223372036854775807")], &["samples=2 + overruns=9223372036854775807 periods", "allows at most 1002"]),
        (
            &[("samples=2", "samples=1000000000"), ("sum=300", "sum=150000000000"), ("sumsq=50000", "sumsq=25000000000000"), ("1,200:200:1", "500000000,200:200:500000000"), ("s=0:2:", "s=0:1000000000:"), (":300\n", ":150000000000\n")],
            &["samples=1000000000 + overruns=998 periods where a plan of 1s at interval_ns=1000000 allows at most 1002"],
        ),
        // Within the run: 1 s and a little.
        (&[("s=0:2:100:200:300", "s=1000000000000:2:100:200:300")], &["per-second slot 1000000000000 s starts after the run's end"]),
        (&[("200:2000000:1:1", "200:9000000000000000000:1:1")], &["tail sample 200:9000000000000000000:1: taken at 9000000000000000000 ns, after the run's end"]),
        (&[("200:2000000:1:1", "200:2000000:0:1")], &["two tail samples with sequence number 0"]),
        (&[("200:2000000:1:1", "200:2000000:5000:1")], &["sequence number 5000 of a block of 1000 periods"]),
        // The interval echoed exactly.
        (&[("interval_ns=1000000", "interval_ns=0")], &["interval_ns=0: expected the plan's interval_ns=1000000 (-i), echoed exactly"]),
        (&[("interval_ns=1000000", "interval_ns=5")], &["interval_ns=5: expected the plan's interval_ns=1000000 (-i), echoed exactly"]),
        // No samples, no extremes.
        (
            &[("samples=2 overruns=998 min_ns=100 max_ns=200 sum=300 sumsq=50000 hist=2 tail=2", "samples=0 overruns=1000 min_ns=0 max_ns=999999 sum=0 sumsq=0 hist=0 tail=0"), ("sec=1", "sec=0"), ("\nsay hist id={id} n=0 b=100:100:1,200:200:1\nsay tail id={id} n=0 s=200:2000000:1:1,100:1000000:0:0\nsay sec id={id} n=0 s=0:2:100:200:300", "")],
            &["samples=0 with min_ns=0 max_ns=999999: no samples have no extremes"],
        ),
        // Σx² saturated, or one the samples cannot make.
        (&[("sumsq=50000", "sumsq=340282366920938463463374607431768211455")], &["is saturated (2^128−1): σ cannot be computed"]),
        (&[("sumsq=50000", "sumsq=45001")], &["sum=300 sumsq=45001 of 2 samples in 100..200 ns: not sums such samples make"]),
        // One bucket spanning the recorder's range.
        (&[("b=100:100:1,200:200:1", "b=1:140737488355328:2"), ("hist=2", "hist=1")], &["bucket 1:140737488355328 is not one of the recorder's (the bucket of 1 ns is 1:1"]),
    ];
    for (edits, words) in cases {
        let t = fake(&sb, &two_samples(edits));
        let o = run(&sb, &t, args);
        let mut want = vec!["well-formed", "breaks an invariant", "line "];
        want.extend(words.iter());
        refused(&sb, &o, &want);
    }
}

/// `done status=stopped results=0` that rtscope did not ask for (the agent
/// stopped itself, as the real one does when its warm-up stalls): the plan
/// failed on the target, exit 1, nothing stored (it stored an empty run
/// marked complete that `report` then failed on).
#[test]
fn a_stop_nobody_asked_for_with_nothing_measured_is_a_failed_run() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}say done id={{id}} status=stopped results=0\nsleep 3\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("on the target: the agent ended plan 1 with `done status=stopped results=0` (line 8) though rtscope did not ask it to stop"), "{e}");
    assert!(!sb.path("r.json").exists(), "nothing written");
}

#[test]
fn a_block_names_the_plans_probe_and_an_acknowledged_variant() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}block 0 %1B[31mbogus%1B[0m ../../etc 0 100\nsay done id={{id}} status=complete results=1\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["probe=", "timer"]);
    let t = fake(&sb, &format!("hello\n{}block 0 sem ../../etc 0 100\nsay done id={{id}} status=complete results=1\n", begun("posix/same-cpu", 1)));
    let o = run(&sb, &t, "--probe sem:posix -D 1s -i 1ms --json r.json --no-store");
    refused(&sb, &o, &["variant=../../etc", "posix/same-cpu"]);
}

#[test]
fn a_tail_that_is_not_the_largest_samples_is_refused() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}say result id={{id}} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=6 overruns=0 min_ns=100 max_ns=300 sum=1000 sumsq=200000 hist=2 tail=6 tail_k=1 worst=1 sec=0 width_s=1 setup=0 stopped=0\nsay hist id={{id}} n=0 b=100:100:4,300:300:2\nsay tail id={{id}} n=0 s=100:0:0:0,300:1:1:0,99999:2:2:0,100:3:3:0,100:4:4:0,300:5:5:0\nsay end id={{id}} n=0\nsay done id={{id}} status=complete results=1\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["tail"]);
}

#[test]
fn done_before_any_result_is_not_a_complete_run() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}say done id={{id}} status=complete results=0\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["complete", "no result"]);
}

#[test]
fn a_link_that_dies_mid_line_keeps_the_whole_blocks() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}block 0 timer - 0 100,200\npartial RTS1 result id=1 n=1 probe=ti\nexit 0\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = read_json(&sb.path("r.json"));
    assert!(r["interrupted"].as_bool().unwrap());
    assert_eq!(u(&per_thread(&r)[0]["samples"]), 2);
}

#[test]
fn a_link_that_drops_between_plans_keeps_plan_1() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}block 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nclose-in\nsleep 2\nexit 0\n", begun("-", 1)));
    let o = run(&sb, &t, "--probe timer,sem -D 1s -i 1ms --json r.json --no-store");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = read_json(&sb.path("r.json"));
    assert!(r["interrupted"].as_bool().unwrap());
    assert_eq!(u(&per_thread(&r)[0]["samples"]), 2);
}

#[test]
fn a_plan_has_a_hard_end_and_the_first_ctrl_c_ends_it() {
    let sb = Sandbox::new();
    // Progress forever, never done: the plan's time (1 s + warm-up) + the silence limit.
    let t = fake(&sb, &format!("hello\n{}forever progress id={{id}} variant=- samples=1 overruns=0 max_ns=100 elapsed_ns=1\n", begun("-", 1)));
    let started = Instant::now();
    let o = run(&sb, &t, &format!("{TIMER} --target-silence 2s"));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(25), "took {:?}", started.elapsed());
    assert!(read_json(&sb.path("r.json"))["interrupted"].as_bool().unwrap());
    // An agent that ignores stop: one SIGINT, the blocks that arrived kept.
    std::fs::remove_file(sb.path("r.json")).unwrap();
    std::fs::remove_file(sb.path("host.log")).unwrap();
    let t = fake(
        &sb,
        &format!("hello\n{}block 0 timer - 0 100\nforever progress id={{id}} variant=- samples=1 overruns=0 max_ns=100 elapsed_ns=1\n", begun("-", 1)),
    );
    let mut a = vec!["run", "--target", &t, "--target-silence", "2s", "-D", "600s"];
    a.extend(TIMER.split_whitespace().filter(|w| *w != "1s" && *w != "-D"));
    let child = sb.cmd().args(&a).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let log = sb.path("host.log");
    let limit = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("RTS1 plan") {
        assert!(Instant::now() < limit, "no plan sent");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let signalled = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(signalled.elapsed() < Duration::from_secs(20), "took {:?}", signalled.elapsed());
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 1);
}

#[test]
fn agent_text_is_shown_as_foreign_text() {
    let sb = Sandbox::new();
    let t = fake(&sb, "hello\nplan\nsay error id={id} code=plan line=1 msg=%1B[31mred%0Aerror:%20forged%20line\nsleep 3\n");
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["red", "forged line"]);
    assert!(!stderr(&o).contains("\nerror: forged"), "{}", stderr(&o));
    // A failure the target reports (a result with error=, done status=failed) is exit 1.
    let t = fake(&sb, &format!("hello\n{}say done id={{id}} status=failed results=0 msg=clock%20broke\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("clock broke"));
}

/// The agent's probe and variant names in a "no such probe" error are
/// foreign text (issue 59): an escape sequence is shown, not run, and a
/// `%0A` cannot start a line that reads as rtscope's own `error:`.
#[test]
fn agent_names_in_a_refusal_are_foreign_text() {
    let sb = Sandbox::new();
    let announce = "say hello proto=1 agent=fake os=Linux release=1 version=1 arch=x86_64 host=fake cpus=1 clock=CLOCK_MONOTONIC res_ns=1 preempt=none mlock=ok max_threads=2\n\
                    say probe name=%1B]0;owned%07evil%0Aerror:%20forged%20probe variants=\n\
                    say probe name=sem variants=%1B[2Jx,y%0Aerror:%20forged%20variant\n\
                    say ready probes=2\nsleep 3\n";
    for (probe, words) in [("timer", ["has no such probe", "forged probe"]), ("sem:sysv", ["has no variant 'sysv'", "forged variant"])] {
        let t = fake(&sb, announce);
        let o = run(&sb, &t, &format!("--probe {probe} -D 1s --json r.json --no-store"));
        refused(&sb, &o, &words);
        let e = stderr(&o);
        assert!(!e.contains('\x07') && !e.lines().any(|l| l.starts_with("error: forged")), "{e:?}");
        assert_eq!(e.lines().filter(|l| l.starts_with("error:")).count(), 1, "one error line: {e}");
    }
}

#[test]
fn flags_that_nothing_reads_are_refused() {
    let sb = Sandbox::new();
    for args in ["--probe timer --policy deadline -i 4ms -p 50 -D 100ms", "--probe migrate -t 100 -D 1s", "--probe sem:posix/same-cpu -t 100 -D 1s"] {
        let o = sb.run(&["run"].into_iter().chain(args.split_whitespace()).collect::<Vec<_>>());
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args}: {e}");
        let flag = if args.contains("-p ") { "-p/--priority" } else { "-t/--threads" };
        assert!(e.contains(flag) && e.contains("would do nothing"), "{args}: {e}");
    }
    let t = fake(&sb, "hello\nsleep 3\n");
    let o = run(&sb, &t, "--probe sem -t 100 -D 1s --json r.json");
    refused(&sb, &o, &["-t/--threads"]);
}

#[test]
fn a_rescue_file_never_replaces_another() {
    let sb = Sandbox::new();
    let mut saved = Vec::new();
    for _ in 0..2 {
        let t = fake(&sb, &format!("hello\n{}block 0 timer - 0 100\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1)));
        let o = sb
            .cmd()
            .env("XDG_STATE_HOME", sb.path("state"))
            .args(["run", "--target", &t, "--probe", "timer", "-D", "1s", "--no-store", "--json", "/dev/full"])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        let at = e.split("saved in ").nth(1).and_then(|s| s.split(" instead").next()).unwrap_or_else(|| panic!("{e}"));
        saved.push(at.to_string());
    }
    assert_ne!(saved[0], saved[1]);
    for s in &saved {
        assert_eq!(u(&per_thread(&read_json(std::path::Path::new(s)))[0]["samples"]), 1);
    }
}

/// The advice follows the cause (issue 47): a well-formed block whose
/// content breaks an invariant is the agent's build or port, named with the
/// invariant; only a line that does not parse points at the link. Before,
/// both said "malformed … Check the link (baud rate…)".
#[test]
fn a_refusal_advises_by_its_cause() {
    let sb = Sandbox::new();
    let head = "say result id={id} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=2 overruns=0 min_ns=100 max_ns=200 sum=300 sumsq=50000 hist=2 tail=2 tail_k=5 worst=2 sec=1 width_s=1 setup=0 stopped=0";
    // Every line parses and is signed; its per-second slot says 2 samples
    // of 1..900 ns in a block of 100..200 ns: no measurement makes that.
    let t = fake(&sb, &format!("hello\n{}{head}\nsay hist id={{id}} n=0 b=100:100:1,200:200:1\nsay tail id={{id}} n=0 s=200:1:1:0,100:0:0:0\nsay sec id={{id}} n=0 s=0:2:1:900:300\nsay end id={{id}} n=0\nsay done id={{id}} status=complete results=1\n", begun("-", 1)));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["well-formed", "breaks an invariant", "per-second slot 0 s", "does not fit", "the agent's build or port is wrong", "line 12"]);
    assert!(!stderr(&o).contains("Check the link") && !stderr(&o).contains("malformed"), "{}", stderr(&o));
    // A `result` line without a number where one belongs: the link (or a protocol mismatch).
    let t = fake(&sb, &format!("hello\n{}{}\nsay done id={{id}} status=complete results=1\n", begun("-", 1), head.replace("samples=2", "samples=two")));
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["is malformed", "samples", "Check the link"]);
    assert!(!stderr(&o).contains("build or port"), "{}", stderr(&o));
}

/// A probe that stalls in the first plan of two (issue 64): the agent's
/// stall watch stops it and sends what it measured, then refuses the next
/// plan while its stuck thread holds it (`error code=internal`). The run
/// keeps the first probe's results, warns naming the probe that stalled
/// and the plan not run, and is stored: never exit 2 with nothing.
#[test]
fn a_stall_in_the_first_of_two_plans_keeps_what_was_measured() {
    let sb = Sandbox::new();
    let stalled = [
        "say result id={id} n=0 probe=timer variant=- thread=0 cpu=0 interval_ns=1000000 samples=2 overruns=0 min_ns=100 max_ns=200 sum=300 sumsq=50000 hist=2 tail=2 tail_k=5 worst=2 sec=1 width_s=1 setup=1 stopped=1",
        "say setup id={id} n=0 step=stall%20watch outcome=failed detail=no%20event%20for%205000%20ms%20after%202;%20stopped",
        "say hist id={id} n=0 b=100:100:1,200:200:1",
        "say tail id={id} n=0 s=200:2000000:1:0,100:1000000:0:0",
        "say sec id={id} n=0 s=0:2:100:200:300",
        "say end id={id} n=0",
        "say done id={id} status=stopped results=1",
        "plan",
        "say error id={id} code=internal line=9 msg=a%20measuring%20thread%20of%20the%20last%20plan%20stalled%20and%20is%20still%20stuck%20in%20the%20system:%20restart%20the%20agent",
        "sleep 5",
    ]
    .join("\n");
    let t = fake(&sb, &format!("hello\n{}{stalled}\n", begun("-", 1)));
    let o = run(&sb, &t, "--probe timer,sem -D 1s -i 1ms --json r.json");
    let e = stderr(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{e}");
    let r = read_json(&sb.path("r.json"));
    assert!(!r["interrupted"].as_bool().unwrap(), "{r}");
    assert_eq!(u(&per_thread(&r)[0]["samples"]), 2, "the stalled probe's samples are kept");
    let warnings: Vec<&str> = r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.contains("stalled (timer: no event for 5000 ms after 2; stopped)")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("not measured after a probe stalled on the target: sem (idle)") && w.contains("still stuck")), "{warnings:?}");
    assert!(e.contains("not measured after a probe stalled"), "{e}");
    // Stored in the history too.
    let h = sb.run(&["history"]);
    assert!(String::from_utf8_lossy(&h.stdout).contains("timer"), "{}", String::from_utf8_lossy(&h.stdout));
}

/// The target's last console lines (an RTOS's assertion) are the evidence
/// when the agent goes silent or refuses (issue 64): shown escaped with the
/// warning (and kept in the result), and with an exit-2 refusal.
#[test]
fn the_targets_last_console_lines_are_shown_with_a_silence_or_an_error() {
    let sb = Sandbox::new();
    let assert_line = "raw up_assert: Assertion failed at file: sched/sched_unlock.c line: 67 task: rtscope_agent \x1b[31m";
    // A boot banner before the agent's first line is told apart (issue 64: boot
    // lines were quoted as if printed in the middle of the run).
    let t = fake(&sb, &format!("raw NuttShell (NSH) 13.0.1\nhello\n{}raw booting\n{assert_line}\nsleep 60\n", begun("-", 1)));
    let o = run(&sb, &t, &format!("{TIMER} --target-silence 1s"));
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(130), "{e}");
    let want = "the target's console printed last (outside the protocol): \"booting\" | \"up_assert: Assertion failed at file: sched/sched_unlock.c line: 67 task: rtscope_agent \\u{1b}[31m\"";
    assert!(e.contains(&format!("{want}; before the agent's first protocol line it printed: \"NuttShell (NSH) 13.0.1\"")), "{e}");
    assert!(!e.contains('\x1b'), "{e:?}");
    let r = read_json(&sb.path("r.json"));
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains(want)), "{}", r["warnings"]);
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let t = fake(&sb, "hello\nraw [ERROR] out of memory\nplan\nsay error id={id} code=internal line=1 msg=no%20memory\nsleep 3\n");
    let o = run(&sb, &t, TIMER);
    refused(&sb, &o, &["no memory", "printed last (outside the protocol): \"[ERROR] out of memory\""]);
}

/// An agent that names an RTOS in its `hello` (issue 64): "RTOS" in every
/// RT column — history, the report's header, check's note — and JSON
/// `host.realtime` true. Its exec command runs on this host (a simulator
/// names its own system, not this host), so the host beside it is
/// recorded whatever its `hello` says, and rtscope's own threads are not
/// placed against its CPUs, saying why. Built from a tree with no version
/// it announces release 0.0.0: the system reads "NuttX unversioned"
/// wherever it is named; its `arm64` is stored as Linux names it, aarch64.
#[test]
fn an_rtos_reads_rtos_in_every_rt_column_and_its_host_is_watched() {
    let sb = Sandbox::new();
    let t = fake(
        &sb,
        &format!(
            "hello os=NuttX release=0.0.0 arch=arm64 host= preempt=unknown\n{}block 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nsleep 3\n",
            begun("-", 1)
        ),
    );
    let o = sb.run(&["run", "--target", &t, "--probe", "timer", "-D", "1s", "-i", "1ms", "--json", "r.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let end = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(!end.contains("0.0.0"), "the run's end: {end}");
    let r = read_json(&sb.path("r.json"));
    assert_eq!(r["host"]["realtime"], true, "{}", r["host"]);
    assert_eq!(r["host"]["kernel_release"], "NuttX unversioned", "{}", r["host"]);
    assert_eq!(r["host"]["cpu_model"], "aarch64", "Linux's name: {}", r["host"]);
    assert_eq!(r["agent"]["arch"], "arm64", "as announced: {}", r["agent"]);
    assert_eq!(r["agent"]["host_beside"].as_array().map(Vec::len), Some(1), "a process of this host: {}", r["agent"]);
    let steps = r["realtime_setup"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["step"] == "host reader placement").unwrap_or_else(|| panic!("{steps:?}"));
    assert_eq!(step["outcome"], "skipped", "{step}");
    assert_eq!(
        step["detail"],
        "the target runs on this machine under another system (NuttX unversioned, host -): its CPUs are not this host's, \
         so the session and reader threads are not placed against them",
        "{step}"
    );
    let h = String::from_utf8_lossy(&sb.run(&["history", "--wide"]).stdout).into_owned();
    let row = h.lines().find(|l| l.contains("NuttX unversioned")).unwrap_or_else(|| panic!("{h}"));
    assert!(row.contains("RTOS") && !h.contains("0.0.0"), "{h}");
    let show = String::from_utf8_lossy(&sb.run(&["show", "1"]).stdout).into_owned();
    assert!(show.contains("-  system NuttX unversioned (1)  realtime: RTOS") && show.contains("aarch64") && !show.contains("0.0.0"), "{show}");
    let rep = String::from_utf8_lossy(&sb.run(&["report", "r.json", "--wide"]).stdout).into_owned();
    assert!(rep.contains("NuttX unversioned (RTOS) · aarch64") && !rep.contains("0.0.0"), "{rep}");
    let c = sb.run(&["check", "r.json", "--max", "1ms"]);
    let text = common::unwrapped(&String::from_utf8_lossy(&c.stdout));
    assert!(text.contains("ran on NuttX unversioned (RTOS") && !text.contains("without PREEMPT_RT"), "{text}");
    // serve's runs list and comparison (with a second run) say it as history does.
    assert!(sb.run(&["run", "--target", &t, "--probe", "timer", "-D", "1s", "-i", "1ms", "--json", "r2.json"]).status.success());
    let pages = served(&sb, &["/", "/compare?runs=1,2"]);
    assert_eq!(pages[0].matches("<td class=\"l\">RTOS</td>").count(), 2, "{}", pages[0]);
    assert!(!pages[0].contains("(RT)") && !pages[0].contains("0.0.0"), "{}", pages[0]);
    assert_eq!(pages[1].matches("NuttX unversioned (RTOS), ").count(), 2, "{}", pages[1]);
}

/// The bodies `rtscope serve` gives for `paths` over the sandbox's history.
fn served(sb: &Sandbox, paths: &[&str]) -> Vec<String> {
    use std::io::BufRead;
    let mut child = sb.cmd().args(["serve", "--listen", "127.0.0.1:0"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    let _ = std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line);
    let addr = line.split("http://").nth(1).and_then(|x| x.split('/').next()).unwrap_or_default().to_string();
    let got = std::panic::catch_unwind(|| paths.iter().map(|p| common::http(&addr, "GET", p).body).collect());
    let _ = (child.kill(), child.wait());
    got.unwrap_or_else(|e| panic!("serve at {addr:?} ({line:?}): {e:?}"))
}

/// The warnings about a result entry name its variant (issue 64): two
/// variants of `sem` with 2 samples each are each too few for p99.99, and
/// each warning says which variant it is about, in the run's output and in
/// its result file.
#[test]
fn warnings_about_a_variant_name_it() {
    let sb = Sandbox::new();
    let script = "hello\nplan\nsay ack id={id} variants=posix/same-cpu,mutex/same-cpu threads=1\n\
                  block 0 sem posix/same-cpu 0 100,200\nblock 1 sem mutex/same-cpu 0 100,300\n\
                  say done id={id} status=complete results=2\nsleep 3\n";
    let o = run(&sb, &fake(&sb, script), "--probe sem -D 1s --json r.json --no-store");
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{e}");
    let r = read_json(&sb.path("r.json"));
    let warnings: Vec<&str> = r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    for v in ["posix/same-cpu", "mutex/same-cpu"] {
        let w = format!("sem:{v} (idle): 2 samples are too few for p99.99");
        assert_eq!(warnings.iter().filter(|x| x.starts_with(&w)).count(), 1, "{w:?} in {warnings:?}");
        assert!(e.contains(&w), "{w:?} not in: {e}");
    }
    assert!(!e.contains("sem (idle)"), "{e}");
}

/// The `hello` of the FreeRTOS port (issue 67): 32 priorities, its own
/// threads at 1, no pipes, signals or `pi:none`/`pi:protect`.
const FREERTOS: &str = "hello os=FreeRTOS prio_min=0 prio_max=31 own_prio=1 probe:timer= probe:pi=inherit,deadlock-break\n";

/// A port leaves out the variants its system lacks (FreeRTOS's mutexes
/// always inherit: no `pi:none`, `pi:protect`, issue 67): `--probe pi`
/// measures the others and names the absent ones; a probe asked for by
/// variant names nothing absent. The agent's own threads run at FreeRTOS
/// priority 1 (`own_prio=1`, the port's real one: FreeRTOS+POSIX reports
/// SCHED_OTHER): a `-p` that puts pi's lowest thread (`-p` − 2) at or below
/// them is refused before any plan.
#[test]
fn a_probe_asked_whole_names_the_variants_the_target_lacks() {
    let sb = Sandbox::new();
    for p in ["1", "3"] {
        let o = run(&sb, &fake(&sb, &format!("{FREERTOS}plan\nsleep 3\n")), &format!("--probe pi -p {p} -D 1s -i 1ms --json r.json --no-store"));
        refused(
            &sb,
            &o,
            &[
                &format!("-p/--priority {p}:"),
                "(FreeRTOS) schedules at 0..31, the agent's own threads at 1",
                "pi's lowest thread runs at -p − 2",
                "use -p 4..31",
            ],
        );
        let sent = std::fs::read_to_string(sb.path("host.log")).unwrap_or_default();
        assert!(!sent.contains("RTS1 plan"), "a plan was sent: {sent}");
    }
    let pi = "plan\nsay ack id={id} variants=inherit,deadlock-break threads=1\n\
              say begin id={id} variant=inherit threads=1 duration_ns=1000000000\nblock 0 pi inherit 0 100,200\n\
              say begin id={id} variant=deadlock-break threads=1 duration_ns=1000000000\nblock 1 pi deadlock-break 0 300\n\
              say done id={id} status=complete results=2\nsleep 3\n";
    let o = run(&sb, &fake(&sb, &format!("{FREERTOS}{pi}")), "--probe pi -p 4 -D 1s -i 1ms --json r.json --no-store");
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{e}");
    let r = read_json(&sb.path("r.json"));
    let variants: Vec<&str> = per_thread(&r).iter().map(|p| p["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["inherit", "deadlock-break"]);
    let absent: Vec<&str> = r["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).filter(|w| w.contains("does not have them")).collect();
    assert_eq!(absent.len(), 1, "{:?}", r["warnings"]);
    assert!(absent[0].contains(": pi:none, pi:protect;"), "{}", absent[0]);
    // Asked by variant: nothing absent to name.
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let one = "plan\nsay ack id={id} variants=inherit threads=1\n\
               say begin id={id} variant=inherit threads=1 duration_ns=1000000000\nblock 0 pi inherit 0 100,200\n\
               say done id={id} status=complete results=1\nsleep 3\n";
    let o = run(&sb, &fake(&sb, &format!("{FREERTOS}{one}")), "--probe pi:inherit -p 4 -D 1s -i 1ms --json r.json --no-store");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = read_json(&sb.path("r.json"));
    assert!(!r["warnings"].to_string().contains("does not have them"), "{}", r["warnings"]);
}

/// `--target-transcript` is an output like the others: a path that cannot
/// be written is exit 2 before the agent is started.
#[test]
fn an_unwritable_transcript_is_refused_before_the_target_starts() {
    let sb = Sandbox::new();
    let t = fake(&sb, "hello\nplan\nsleep 3\n");
    for bad in ["/proc/rtscope-no/t.txt", "."] {
        let o = run(&sb, &t, &format!("{TIMER} --target-transcript {bad}"));
        refused(&sb, &o, &["--target-transcript"]);
        assert!(!sb.path("host.log").exists(), "the agent was started");
    }
    let o = sb.run(&["run", "--probe", "timer", "-D", "1s", "--target-transcript", "t.txt"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--target-transcript: only a run with --target"), "{}", stderr(&o));
}
