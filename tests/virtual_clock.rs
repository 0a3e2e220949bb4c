//! A target on a virtual clock (QEMU `-icount`, issue 64): its time counts
//! instructions, so a plan may take many times its own time in wall time,
//! and a probe busy at real-time priority may starve the agent's reporter
//! for the whole plan. How long the host waits for such a plan, with
//! tests/fake_agent.py behind a command line that names QEMU with
//! `-icount` (the words after `#` are never run; they are what rtscope
//! reads of the command). Each wait asserted is bounded well away from the
//! limit it tests: the fake's silences are several times past the old limit
//! and several times inside the new one.

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::{fake_agent as fake, fake_begun as begun, fake_run as run, per_thread, read_json, u, Sandbox};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const QEMU: &str = " # qemu-system-aarch64 -M virt -icount shift=1,sleep=off";

/// QEMU on a virtual clock (`-icount`): a plan's silence limit is at least
/// its own time (issue 64: a busy `switch` starved the agent's reporter and
/// was declared gone at plan time + 30 s). This agent stays silent for 8 s
/// of a 6 s plan (limit 6 s + 1 s without the virtual clock): kept, and the
/// emulation note says what a virtual clock makes of the figures. The
/// words after `#` are never run; they are what rtscope reads of the command.
#[test]
fn on_a_virtual_clock_the_silence_limit_follows_the_plan() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}sleep 8\nblock 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1)));
    let t = format!("{t}{QEMU}");
    let o = run(&sb, &t, "--probe timer -D 6s -i 1ms --target-silence 1s --json r.json --no-store");
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("on a virtual clock (QEMU -icount") && e.contains("not the time a board takes"), "{e}");
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 2);
}

/// On a virtual clock a busy probe's plan may take many times its own time
/// in wall time while its `progress` still comes (issue 64: a 10 s `switch`
/// under `-icount` took 37 s and was cut off). Progress that shows the
/// target's clock moving on keeps the plan alive; progress that stands
/// still does not, nor does a clock that moves on forever (at most
/// 50 × the plan's time + the silence limit).
#[test]
fn on_a_virtual_clock_progress_that_moves_on_keeps_the_plan() {
    let sb = Sandbox::new();
    let qemu = QEMU;
    // -D 1s: without progress the plan ends 1.05 s + 3 s after it was sent.
    let progress = |e: &str| format!("say progress id={{id}} variant=- samples=1 overruns=0 max_ns=100 elapsed_ns={e}\n");
    let moving: String = (1..=14).map(|k| format!("{}sleep 0.5\n", progress(&(k * 50_000_000).to_string()))).collect();
    let script = format!("hello\n{}{moving}block 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1));
    let started = Instant::now();
    let o = run(&sb, &format!("{}{qemu}", fake(&sb, &script)), "--probe timer -D 1s -i 1ms --target-silence 3s --json r.json --no-store");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(started.elapsed() > Duration::from_secs(7), "the plan ended after {:?}, before its last progress", started.elapsed());
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 2);
    // The same progress without -icount, or with a clock that stands still: cut off.
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let still: String = (1..=14).map(|_| format!("{}sleep 0.5\n", progress("50000000"))).collect();
    let still = format!("hello\n{}{still}block 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1));
    for (script, on) in [(&script, ""), (&still, qemu)] {
        let o = run(&sb, &format!("{}{on}", fake(&sb, script)), "--probe timer -D 1s -i 1ms --target-silence 3s --json r.json --no-store");
        let e = common::unwrapped(&stderr(&o));
        assert_eq!(o.status.code(), Some(130), "{e}");
        assert!(e.contains("did not end the plan within its time"), "{e}");
        assert!(read_json(&sb.path("r.json"))["interrupted"].as_bool().unwrap());
        std::fs::remove_file(sb.path("r.json")).unwrap();
    }
    // A clock that moves on for ever: -D 100ms, cut off 50 × 0.15 s + 3 s after the plan.
    let t = fake(
        &sb,
        "hello\nplan\nsay ack id={id} variants=- threads=1\nsay begin id={id} variant=- threads=1 duration_ns=100000000\nforever progress id={id} variant=- samples=1 overruns=0 max_ns=100 elapsed_ns={n}\n",
    );
    let started = Instant::now();
    let o = run(&sb, &format!("{t}{qemu}"), "--probe timer -D 100ms -i 1ms --target-silence 3s --json r.json --no-store");
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let took = started.elapsed();
    assert!(took > Duration::from_secs(10) && took < Duration::from_secs(120), "took {took:?}");
}

/// A busy probe on a virtual clock may starve the agent's reporter for the
/// whole plan (issue 64, item 16: `switch` on FreeRTOS and NuttX under
/// `-icount shift=1,sleep=off`): a plan that sent no `progress` at all is
/// waited for up to 50 × its time + the silence limit. This agent says
/// nothing for 6 s of a 1 s plan: without the rule it is cut off 1.05 s +
/// 1.05 s after the plan was sent (its time, and the silence limit that is
/// at least its time); with it, after 50 × 1.05 s + 1.05 s. Kept, and the
/// emulation note says the limit was extended and why. The same agent
/// without `-icount` is cut off.
#[test]
fn on_a_virtual_clock_a_plan_without_progress_is_waited_for() {
    let sb = Sandbox::new();
    let script = format!("hello\n{}sleep 6\nblock 0 timer - 0 100,200\nsay done id={{id}} status=complete results=1\nsleep 3\n", begun("-", 1));
    let args = "--probe timer -D 1s -i 1ms --target-silence 1s --json r.json --no-store";
    let o = run(&sb, &format!("{}{QEMU}", fake(&sb, &script)), args);
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(u(&per_thread(&read_json(&sb.path("r.json")))[0]["samples"]), 2);
    assert!(e.contains("The silence limit was extended: a plan that sent no progress was waited for up to 50 × its time + --target-silence"), "{e}");
    assert!(e.contains("a probe busy at real-time priority can keep the agent from reporting for a whole plan"), "{e}");
    std::fs::remove_file(sb.path("r.json")).unwrap();
    let o = run(&sb, &fake(&sb, &script), args);
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("did not end the plan within its time"), "{e}");
    assert!(!e.contains("silence limit was extended"), "{e}");
    assert!(read_json(&sb.path("r.json"))["interrupted"].as_bool().unwrap());
}

/// A target that stays silent on a virtual clock is still counted gone,
/// once 50 × the plan's time + the silence limit have passed: -D 100ms
/// (0.15 s with the warm-up) and --target-silence 500ms, 7.5 s + 0.5 s,
/// long before the agent's own end 60 s later.
#[test]
fn on_a_virtual_clock_a_silent_target_is_still_counted_gone() {
    let sb = Sandbox::new();
    let t = fake(&sb, &format!("hello\n{}sleep 60\n", begun("-", 1)));
    let started = Instant::now();
    let o = run(&sb, &format!("{t}{QEMU}"), "--probe timer -D 100ms -i 1ms --target-silence 500ms --json r.json --no-store");
    let took = started.elapsed();
    let e = common::unwrapped(&stderr(&o));
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("the agent sent no progress and did not end the plan within 50 × its time and 500ms"), "{e}");
    assert!(read_json(&sb.path("r.json"))["interrupted"].as_bool().unwrap());
    assert!(took > Duration::from_secs(7) && took < Duration::from_secs(50), "took {took:?}");
}
