//! A target whose kernel tick limits its figures (issue 67): what its
//! agent's `hello` says (`tick_ns`, `sleep`, `res_ns`) decides which
//! figures are flagged, in run's end, the result file and every format of
//! `rtscope report`. Driven by tests/fake_agent.py, one `timer` block and
//! one `sem` block per run; the checks are which figures are flagged.

mod common;

use std::path::PathBuf;

use common::{read_json, Sandbox};

/// The fake agent with this `hello` (its extra keys) and a timer plan and
/// a sem plan of two samples each, as a `--target`.
fn target(sb: &Sandbox, hello: &str) -> String {
    let plan = |variant: &str, probe: &str, values: &str| {
        format!(
            "plan\nsay ack id={{id}} variants={variant} threads=1\nsay begin id={{id}} variant={variant} threads=1 duration_ns=1000000000\n\
             block 0 {probe} {variant} 0 {values}\nsay done id={{id}} status=complete results=1\n"
        )
    };
    let script = format!(
        "hello {hello} probe:timer= probe:sem=posix/same-cpu\n{}{}sleep 3\n",
        plan("-", "timer", "300000,700000"),
        plan("posix/same-cpu", "sem", "2000,3000")
    );
    let path = sb.path("agent.script");
    std::fs::write(&path, script).unwrap();
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agent.py");
    format!("exec:exec python3 {} {} {}", py.display(), path.display(), sb.path("host.log").display())
}

/// The run's warnings (result file), its end-of-run text and the report in
/// each format, with the hello's keys; each as one line.
struct Said {
    json: serde_json::Value,
    run_end: String,
    reports: Vec<(&'static str, String)>,
}

fn measure(hello: &str) -> Said {
    let sb = Sandbox::new();
    let t = target(&sb, hello);
    let o = sb.run(&["run", "--target", &t, "--probe", "timer,sem", "-D", "1s", "-i", "1ms", "-p", "50", "--json", "r.json", "--no-store"]);
    let run_end = common::unwrapped(&String::from_utf8_lossy(&o.stderr));
    assert!(matches!(o.status.code(), Some(0 | 1)), "{run_end}");
    let json = read_json(&sb.path("r.json"));
    let reports = ["term", "md", "html", "json"]
        .into_iter()
        .map(|f| {
            let r = sb.run(&["report", "r.json", "--format", f, "--color", "never"]);
            assert_eq!(r.status.code(), Some(0), "report --format {f}: {}", String::from_utf8_lossy(&r.stderr));
            (f, common::unwrapped(&String::from_utf8_lossy(&r.stdout)))
        })
        .collect();
    Said { json, run_end, reports }
}

fn warnings(s: &Said) -> Vec<String> {
    s.json["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()
}

/// Sleeps that wake on the tick (`sleep=tick`) limit the wake-up figure
/// (timer), not the hand-off (sem): one flag, the timer's, said in run's
/// end, the result and every report format; the agent record keeps what
/// hello said, as docs/schema.md documents it.
#[test]
fn a_tick_bound_sleep_flags_the_timer_figure_and_not_sem() {
    let s = measure("tick_ns=1000000 sleep=tick");
    let flagged: Vec<String> = warnings(&s).into_iter().filter(|w| w.contains("tick-limited")).collect();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    let timer = "timer (idle): tick-limited: the target's sleeps wake on its kernel tick (every 1ms) (hello sleep=tick)";
    assert!(flagged[0].starts_with(timer), "{}", flagged[0]);
    assert!(!flagged[0].contains("sem"), "{}", flagged[0]);
    assert_eq!(s.json["agent"]["tick_ns"].as_u64(), Some(1_000_000), "{}", s.json["agent"]);
    assert_eq!(s.json["agent"]["sleep"].as_str(), Some("tick"), "{}", s.json["agent"]);
    let mut errors = Vec::new();
    common::schema::check(&common::schema::documented(), "/", &s.json, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
    assert!(s.run_end.contains(timer), "{}", s.run_end);
    assert!(!s.run_end.contains("sem:posix/same-cpu (idle): tick-limited"), "{}", s.run_end);
    for (f, text) in &s.reports {
        // HTML escapes the apostrophe; the probe and the flag are enough.
        assert!(text.contains("timer (idle): tick-limited"), "report --format {f}: {text}");
        assert!(!text.contains("sem:posix/same-cpu (idle): tick-limited"), "report --format {f}: {text}");
    }
}

/// A clock that is the tick (`res_ns` at least `tick_ns`) limits every
/// figure: timer and sem are both flagged, as the tick's.
#[test]
fn a_clock_that_is_the_tick_flags_every_figure() {
    let s = measure("res_ns=1000000 tick_ns=1000000 sleep=timer");
    let flagged: Vec<String> = warnings(&s).into_iter().filter(|w| w.contains("tick-limited")).collect();
    assert_eq!(flagged.len(), 2, "{flagged:?}");
    for probe in ["timer (idle)", "sem:posix/same-cpu (idle)"] {
        let w = format!("{probe}: tick-limited: the target's clock is its kernel tick (resolution 1ms and a 1ms tick");
        assert!(flagged.iter().any(|f| f.starts_with(&w)), "{w} in {flagged:?}");
        assert!(s.run_end.contains(&w), "{}", s.run_end);
    }
}

/// Sleeps on a one-shot timer (`sleep=timer`, the FreeRTOS port with its
/// board's one-shot) or a hello that says nothing of the tick: no flag
/// anywhere, and no tick in the agent record when hello said none.
#[test]
fn a_sub_tick_sleep_or_no_tick_said_flags_nothing() {
    for hello in ["tick_ns=1000000 sleep=timer", "own_prio=0"] {
        let s = measure(hello);
        assert!(!warnings(&s).iter().any(|w| w.contains("tick")), "{hello}: {:?}", warnings(&s));
        assert!(!s.run_end.contains("tick-limited"), "{hello}: {}", s.run_end);
        for (f, text) in &s.reports {
            assert!(!text.contains("tick-limited"), "{hello}: report --format {f}: {text}");
        }
        if hello == "own_prio=0" {
            assert!(s.json["agent"].get("tick_ns").is_none() && s.json["agent"].get("sleep").is_none(), "{}", s.json["agent"]);
        }
    }
}
