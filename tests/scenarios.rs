//! Scenario files and presets, end to end: a 3-phase scenario runs its
//! phases in order and every result carries its phase; malformed files exit 2
//! naming the file, the line, the field and what is allowed, writing nothing;
//! every preset's plan is valid (dry run); a bare `rtscope run` is `quick`;
//! the preset tables print numbers that add up.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `rtscope` in `dir`, saving to the tests' database (tests/common).
fn rtscope(dir: &Path) -> Command {
    let mut c = common::rtscope();
    c.current_dir(dir);
    c
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect()
}

const THREE_PHASES: &str = r#"
name = "three"
duration = "2s"
interval = "1ms"
settle = "500ms"
threads = 1
output = "three.json"
[tags]
purpose = "test"
[load]
engine = "builtin"

[[phase]]
name = "idle"
[[phase]]
name = "compute"
loads = ["cpu"]
[[phase]]
name = "disk"
loads = ["io"]

[[probe]]
name = "timer"
"#;

#[test]
fn a_three_phase_scenario_runs_every_phase_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("three.toml"), THREE_PHASES).unwrap();
    let out = rtscope(dir.path()).args(["run", "-q", "three.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("three.json")).unwrap()).unwrap();
    let order = ["idle", "compute", "disk"];
    assert_eq!(r["plan"]["phases"], serde_json::json!(order));
    let phases: Vec<&str> = r["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(phases, order);
    // Results appear phase by phase, in order, each carrying its phase.
    let seen: Vec<&str> = r["results"].as_array().unwrap().iter().map(|x| x["phase"].as_str().unwrap()).collect();
    let mut dedup = seen.clone();
    dedup.dedup();
    assert_eq!(dedup, order, "results grouped by phase in order: {seen:?}");
    for p in order {
        let merged: Vec<&Value> = r["results"].as_array().unwrap().iter().filter(|x| x["phase"] == p && x["thread"].is_null()).collect();
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0]["samples"].as_u64().unwrap() + merged[0]["overruns"].as_u64().unwrap(), 2000, "{p}");
    }
    assert_eq!(r["phases"][1]["loads"][0]["name"], "cpu");
    assert_eq!(r["phases"][2]["loads"][0]["name"], "io");
    assert!(r["phases"][2]["loads"][0]["evidence"]["counters"]["bytes_written"].as_u64().unwrap() > 0);
    assert_eq!(r["phases"][1]["settle_ns"], 500_000_000u64);
    assert_eq!(r["scenario"]["name"], "three");
    assert_eq!(r["scenario"]["source"], "three.toml");
    assert_eq!(r["scenario"]["tags"]["purpose"], "test");
    assert_eq!(r["scenario"]["text"], THREE_PHASES);
}

#[test]
fn malformed_scenarios_exit_2_naming_file_line_field_and_hint() {
    let dir = tempfile::tempdir().unwrap();
    let probe = "[[probe]]\nname = \"timer\"\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("syntax", format!("duration = \"2s\n{probe}"), vec!["syntax.toml: line 1", "docs/scenarios.md"]),
        ("unknown-probe", "[[probe]]\nname = \"cyclic\"\n".into(), vec!["line 2", "[[probe]] name", "unknown probe 'cyclic'", "available: timer"]),
        (
            "unknown-load",
            format!("{probe}[[phase]]\nname = \"x\"\nloads = [\"cpu\", \"disk\"]\n"),
            vec!["line 5", "[[phase]] loads", "unknown load 'disk'", "allowed: idle, cpu"],
        ),
        ("negative-duration", format!("duration = -5\n{probe}"), vec!["line 1", "field `duration`", "negative", "e.g. \"30s\""]),
        (
            "duplicate-phase",
            format!("{probe}[[phase]]\nname = \"cpu\"\n[[phase]]\nname = \"cpu\"\n"),
            vec!["line 6", "[[phase]] name", "'cpu' appears twice (first at line 4)", "unique"],
        ),
        ("wrong-type", format!("threads = \"two\"\n{probe}"), vec!["line 1", "field `threads`", "invalid type", "docs/scenarios.md"]),
        ("unknown-field", format!("durration = \"2s\"\n{probe}"), vec!["line 1", "unknown field `durration`", "`duration`"]),
        ("bad-period", "[[probe]]\nname = \"timer\"\nperiods = [\"10ms\", \"soon\"]\n".to_string(), vec!["line 3", "field `periods`", "'soon'"]),
        ("bad-variant", "[[probe]]\nname = \"sem:bogus\"\n".to_string(), vec!["line 2", "[[probe]] name", "unknown variant 'bogus'", "posix/same-cpu"]),
        (
            "bad-load-dir",
            format!("[load]\ndir = \"/proc/nope\"\n[[phase]]\nname = \"cpu\"\n{probe}"),
            vec!["line 2", "[load] dir", "/proc/nope", "not a directory"],
        ),
        ("empty-name", format!("name = \"\"\n{probe}"), vec!["line 1", "name: empty", "leave `name` out"]),
        ("bad-dl-runtime", format!("policy = \"deadline\"\ndl_runtime = \"soon\"\n{probe}"), vec!["line 2", "field `dl_runtime`", "'soon'"]),
        ("dl-without-deadline", format!("dl_deadline = \"3ms\"\n{probe}"), vec!["line 1", "dl_deadline:", "only with policy = \"deadline\""]),
        (
            "dl-runtime-over-deadline",
            format!("policy = \"deadline\"\ninterval = \"4ms\"\ndl_runtime = \"5ms\"\n{probe}"),
            vec!["line 3", "dl_runtime 5ms", "runtime <= deadline"],
        ),
        ("deadline-no-probe", "policy = \"deadline\"\n[[probe]]\nname = \"sem\"\n".into(), vec!["--policy deadline", "(sem)", "only timer, periodic"]),
    ];
    for (name, text, wants) in &cases {
        let file = format!("{name}.toml");
        std::fs::write(dir.path().join(&file), text).unwrap();
        let out = rtscope(dir.path()).args(["run", "-q", &file]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&file), "{name}: the error names the file: {err}");
        for w in wants {
            assert!(err.contains(w), "{name}: missing {w:?} in: {err}");
        }
    }
    let out = rtscope(dir.path()).args(["run", "-q", "missing.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.toml: cannot read"));
    let mut left = files_in(dir.path());
    left.retain(|f| !f.ends_with(".toml"));
    assert!(left.is_empty(), "nothing is written on bad input: {left:?}");
}

#[test]
fn every_preset_has_a_valid_plan_and_dry_runs_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtscope(dir.path()).arg("presets").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let list = String::from_utf8(out.stdout).unwrap();
    // One preset per line starting at column 0; its description wraps onto indented lines.
    let names: Vec<&str> = list.lines().filter(|l| !l.starts_with(' ')).map(|l| l.split_whitespace().next().unwrap()).collect();
    for want in ["quick", "standard", "sched-latency", "irq-latency-bins", "periodic-jitter", "irq-ctxsw-4khz"] {
        assert!(names.contains(&want), "{want} missing from `rtscope presets`:\n{list}");
    }
    for name in names {
        let out = rtscope(dir.path()).args(["run", "--preset", name, "--dry-run"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(&format!("scenario: {name} (preset)")), "{name}: {text}");
        // The total is the sum of the phases' lengths printed above it.
        let total_line = text.lines().find(|l| l.starts_with("total: ")).unwrap_or_else(|| panic!("{name}: no total: {text}"));
        // Idle and loaded phases, so results compare; thread-metric counts
        // operations (no latency to load) and has one phase, as the suite.
        let phases = if name == "thread-metric" { 1 } else { 2 };
        assert!(text.lines().filter(|l| l.starts_with("phase ")).count() >= phases, "{name}: {text}");
        assert!(total_line.contains("cap 24h"), "{total_line}");
        let result_line = text.lines().find(|l| l.starts_with("output: ")).unwrap_or_else(|| panic!("{name}: no output line: {text}"));
        assert!(result_line.ends_with("(not written: --dry-run)"), "{name}: {result_line}");
    }
    assert!(files_in(dir.path()).is_empty(), "a dry run writes nothing: {:?}", files_in(dir.path()));
}

#[test]
fn bare_run_is_the_quick_preset_and_flags_override_preset_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtscope(dir.path()).args(["run", "--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("scenario: quick (preset)"), "{text}");
    assert!(text.contains("phase 1 idle") && text.contains("phase 2 mixed"), "{text}");
    // quick: 25 s idle + (2 s settle + 25 s) mixed.
    assert!(text.contains("total: 52s"), "{text}");
    let out = rtscope(dir.path()).args(["run", "--preset", "quick", "-D", "3s", "--settle", "1s", "--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("total: 7s"), "3 s + 1 s + 3 s: {text}");
    // A shaping flag means "not bare": no preset.
    let out = rtscope(dir.path()).args(["run", "-D", "2s", "--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("scenario:") && text.contains("total: 2s"), "{text}");
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn preset_conflicts_and_caps_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (vec!["run", "--preset", "quick", "--probe", "timer"], "--probe cannot be combined with preset quick"),
        (vec!["run", "--preset", "quick", "--load", "cpu"], "--load cannot be combined with preset quick"),
        (vec!["run", "--preset", "nope"], "unknown preset 'nope'; available: quick, standard"),
        (vec!["run", "--preset", "standard", "--max-total", "10m"], "more than --max-total 10m"),
    ] {
        let out = rtscope(dir.path()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn a_busy_realtime_probe_on_every_cpu_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let all = online.trim();
    let out = rtscope(dir.path()).args(["run", "--probe", "maxrate", "-a", all, "-D", "1s", "--dry-run"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("every online CPU") && err.contains("starve") && err.contains("--force"), "{err}");
    let out = rtscope(dir.path()).args(["run", "--probe", "maxrate", "-a", all, "-D", "1s", "--force", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The bin table's counts add up to each phase's samples; the verdict lines
/// carry each phase's max.
#[test]
fn preset_tables_print_numbers_that_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = r#"
duration = "1s"
interval = "1ms"
threads = 1
settle = "0"
table = "bins"
bin = "5000ns"
output = "bins.json"
[[phase]]
name = "idle"
[[phase]]
name = "busy"
loads = ["cpu"]
[load]
engine = "builtin"
[[probe]]
name = "timer"
"#;
    std::fs::write(dir.path().join("bins.toml"), scenario).unwrap();
    let out = rtscope(dir.path()).args(["run", "bins.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let head = text.lines().position(|l| l.starts_with("timer @1ms latency (ns)")).unwrap_or_else(|| panic!("no bin table:\n{text}"));
    let mut sums = [0u64; 2];
    let mut totals = [0u64; 2];
    for l in text.lines().skip(head + 1) {
        let cells: Vec<&str> = l.split_whitespace().collect();
        let n = cells.len();
        let (a, b) = (cells[n - 2].parse::<u64>().unwrap(), cells[n - 1].parse::<u64>().unwrap());
        if l.starts_with("total") {
            totals = [a, b];
            break;
        }
        sums[0] += a;
        sums[1] += b;
    }
    assert_eq!(sums, totals, "bin counts add up to the samples:\n{text}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("bins.json")).unwrap()).unwrap();
    let merged = |p: &str| r["results"].as_array().unwrap().iter().find(|x| x["phase"] == p && x["thread"].is_null()).unwrap()["samples"].as_u64().unwrap();
    assert_eq!(totals, [merged("idle"), merged("busy")]);
    assert!(text.contains("load busy/cpu (builtin"), "{text}");

    let out = rtscope(dir.path())
        .args(["run", "--preset", "quick", "-D", "1s", "--settle", "200ms", "-t", "1", "--load-engine", "builtin", "--json", "q.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("q.json")).unwrap()).unwrap();
    for p in ["idle", "mixed"] {
        let m = r["results"].as_array().unwrap().iter().find(|x| x["phase"] == p && x["thread"].is_null()).unwrap();
        let max_us = format!("max {:.1} us", m["max_ns"].as_u64().unwrap() as f64 / 1000.0);
        // No deadline: a summary per phase, no verdict.
        let line = text.lines().find(|l| l.starts_with(&format!("summary {p}: "))).unwrap_or_else(|| panic!("no summary for {p}:\n{text}"));
        assert!(line.contains(&max_us) && line.contains("overruns"), "{line} vs {max_us}");
    }
    assert!(!text.lines().any(|l| l.starts_with("verdict ")) && text.contains("no verdict without a bound: give --deadline"), "{text}");
    // With a deadline: PASS or FAIL per phase, as the samples say.
    for (deadline, want) in [("10s", "PASS: no sample over the 10000000.0 us deadline and no missed period"), ("1ns", "FAIL: ")] {
        let out = rtscope(dir.path())
            .args(["run", "--preset", "quick", "-D", "1s", "--settle", "200ms", "-t", "1", "--load-engine", "builtin", "--no-store"])
            .args(["--deadline", deadline, "--json", "d.json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("d.json")).unwrap()).unwrap();
        for p in ["idle", "mixed"] {
            // The verdict wraps at 80 columns when piped: its line with its continuation lines joined.
            let lines: Vec<&str> = text.lines().collect();
            let at = lines.iter().position(|l| l.starts_with(&format!("verdict {p}: "))).unwrap_or_else(|| panic!("no verdict for {p}:\n{text}"));
            let more = lines[at + 1..].iter().take_while(|l| l.starts_with(' '));
            let line = std::iter::once(lines[at]).chain(more.copied()).flat_map(str::split_whitespace).collect::<Vec<_>>().join(" ");
            let m = r["results"].as_array().unwrap().iter().find(|x| x["phase"] == p && x["thread"].is_null()).unwrap();
            // A missed period fails even a generous deadline.
            let want = if want.starts_with("PASS") && m["overruns"].as_u64().unwrap() > 0 { "FAIL: " } else { want };
            assert!(line.contains(want), "--deadline {deadline}: {line}");
        }
    }
}

/// The example in docs/scenarios.md is a valid scenario (it is what users copy).
#[test]
fn the_documented_example_scenario_is_valid() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenarios.md")).unwrap();
    let start = doc.find("```toml\n").expect("a toml block") + 8;
    let end = start + doc[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Only what depends on this machine changes: the load dir and the CPUs.
    let text = doc[start..end]
        .replace("/mnt/under-test", &dir.path().display().to_string())
        .replace("affinity = \"0-1\"", "affinity = \"0\"")
        .replace("cpus = \"0-1\"", "cpus = \"0\"");
    std::fs::write(dir.path().join("example.toml"), &text).unwrap();
    let out = rtscope(dir.path()).args(["run", "example.toml", "--dry-run"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("example.toml: output: directory 'results' does not exist"), "{err}");
    std::fs::create_dir(dir.path().join("results")).unwrap();
    let out = rtscope(dir.path()).args(["run", "example.toml", "--dry-run"]).output().unwrap();
    let plan = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(plan.contains("phase 2 combined: cpu") && plan.contains("cmd: make -j4"), "{plan}");
    assert!(plan.contains("probe timer every 1ms for 1m after 2s warm-up"), "{plan}");
    assert!(plan.contains("probe sem (posix) every 10ms for 20s\n"), "per-probe warmup = \"0\" wins: {plan}");
    assert!(plan.contains("probe sem (posix) every 30ms"), "{plan}");
}

fn run_table(dir: &Path, table: &str) -> (String, Value) {
    let scenario = format!(
        "duration = \"1s\"\nthreads = 1\nsettle = \"0\"\ntable = \"{table}\"\noutput = \"{table}.json\"\n[load]\nengine = \"builtin\"\n\
         [[phase]]\nname = \"idle\"\n[[phase]]\nname = \"sched\"\n[[probe]]\nname = \"timer\"\nperiods = [\"1ms\", \"2ms\"]\n"
    );
    let file = format!("{table}.toml");
    std::fs::write(dir.join(&file), scenario).unwrap();
    let out = rtscope(dir).args(["run", "--ns", &file]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{table}.json"))).unwrap()).unwrap();
    (String::from_utf8(out.stdout).unwrap(), r)
}

fn merged_of<'a>(r: &'a Value, phase: &str, interval_ns: u64) -> &'a Value {
    r["results"].as_array().unwrap().iter().find(|x| x["phase"] == phase && x["thread"].is_null() && x["interval_ns"] == interval_ns).unwrap()
}

/// Seed 000's shape: per period, phases worst case first, ratio to idle.
#[test]
fn idle_vs_load_rows_are_worst_first_with_the_ratio_to_idle() {
    let dir = tempfile::tempdir().unwrap();
    let (text, r) = run_table(dir.path(), "idle-vs-load");
    for (period, interval) in [("@1ms", 1_000_000u64), ("@2ms", 2_000_000)] {
        let head = text.lines().position(|l| l.starts_with(&format!("timer {period}"))).unwrap_or_else(|| panic!("{period}:\n{text}"));
        let rows: Vec<Vec<&str>> = text.lines().skip(head + 1).take(2).map(|l| l.split_whitespace().collect()).collect();
        let max = |p: &str| merged_of(&r, p, interval)["max_ns"].as_u64().unwrap();
        let mut want = vec![("idle", max("idle")), ("sched", max("sched"))];
        want.sort_by_key(|w| std::cmp::Reverse(w.1));
        for (row, (phase, m)) in rows.iter().zip(&want) {
            assert_eq!(row[0], *phase, "worst case first:\n{text}");
            assert_eq!(row[1], m.to_string(), "max in ns:\n{text}");
            assert_eq!(row[2], format!("{:.2}", *m as f64 / max("idle") as f64), "ratio to idle:\n{text}");
        }
    }
}

/// Seed 004's shape: max and avg ± σ, phases side by side.
#[test]
fn max_avg_sd_cells_match_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let (text, r) = run_table(dir.path(), "max-avg-sd");
    let line = text.lines().find(|l| l.starts_with("timer @1ms")).unwrap_or_else(|| panic!("{text}"));
    let m = |p: &str| merged_of(&r, p, 1_000_000).clone();
    let want =
        format!("{}  {:.0} ± {:.0}", m("idle")["max_ns"].as_u64().unwrap(), m("idle")["mean_ns"].as_f64().unwrap(), m("idle")["stddev_ns"].as_f64().unwrap());
    assert!(line.split_whitespace().collect::<Vec<_>>().join(" ").contains(&want.split_whitespace().collect::<Vec<_>>().join(" ")), "{line} vs {want}");
    assert!(line.contains(&m("sched")["max_ns"].as_u64().unwrap().to_string()), "{line}");
}

/// Seed 002's shape: one row per period and phase, shortest period first.
#[test]
fn per_period_rows_hold_every_period_and_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (text, r) = run_table(dir.path(), "per-period");
    let rows: Vec<Vec<&str>> = text.lines().filter(|l| l.starts_with("1ms ") || l.starts_with("2ms ")).map(|l| l.split_whitespace().collect()).collect();
    let keys: Vec<(&str, &str)> = rows.iter().map(|c| (c[0], c[2])).collect();
    assert_eq!(keys, [("1ms", "idle"), ("1ms", "sched"), ("2ms", "idle"), ("2ms", "sched")], "{text}");
    for c in &rows {
        let interval = if c[0] == "1ms" { 1_000_000 } else { 2_000_000 };
        let m = merged_of(&r, c[2], interval);
        assert_eq!(c[3], m["samples"].to_string());
        let jitter = m["max_ns"].as_u64().unwrap() - m["min_ns"].as_u64().unwrap();
        assert_eq!(c[9], jitter.to_string(), "jitter = max - min:\n{text}");
    }
}

/// `--phase-name` names the one phase of a run whose load is outside
/// rtscope; with --load or a scenario, or a name tables cannot show, it is
/// bad input (exit 2, nothing written). The plan printed before a real run
/// names the result file it will write.
#[test]
fn phase_name_names_an_outside_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtscope(dir.path()).args(["run", "-D", "300ms", "-t", "1", "--phase-name", "guest:cpu:2", "--no-store", "--json", "p.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().any(|l| l == "output: p.json") && !err.contains("not written"), "{err}");
    // `result:` once, at the end of standard output, when the file is written.
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(format!("{err}{text}").matches("result:").count(), 1, "{err}{text}");
    // One thread is pinned to one CPU: the line names that one, not the set.
    let cpus = err.split("measuring: 1 thread(s) on CPUs ").nth(1).and_then(|x| x.split(", SCHED_").next()).unwrap_or_default();
    assert!(!cpus.is_empty() && cpus.parse::<usize>().is_ok(), "{cpus:?}: {err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("p.json")).unwrap()).unwrap();
    assert_eq!(r["plan"]["phases"], serde_json::json!(["guest:cpu:2"]));
    assert!(r["results"].as_array().unwrap().iter().all(|x| x["phase"] == "guest:cpu:2"));
    for bad in [&["--load", "cpu", "--phase-name", "x"][..], &["--phase-name", "a b"], &["--preset", "quick", "--phase-name", "x"]] {
        let out = rtscope(dir.path()).args(["run", "-D", "300ms", "--no-store", "--json", "bad.json"]).args(bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--phase-name"), "{bad:?}");
        assert!(!dir.path().join("bad.json").exists());
    }
}

/// `cmd:` loads run shell commands from the file: the dry run lists them as
/// such (never as a built-in load) before anything runs.
#[test]
fn dry_run_lists_cmd_loads_as_shell_commands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.toml"), "[[phase]]\nname = \"x\"\nloads = [\"cmd:sleep 1\"]\n[[probe]]\nname = \"timer\"\n").unwrap();
    let out = rtscope(dir.path()).args(["run", "--dry-run", "c.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("commands: 1 shell command(s) from c.toml, run with `sh -c`"), "{text}");
    assert!(text.contains("cmd: sleep 1 (shell command)"), "{text}");
    assert!(!text.contains("engine builtin"), "{text}");
}

/// The scenario loader against mutated presets and random TOML-ish text
/// (inputs up to a few KB, 300 cases each): it never panics, and every
/// refusal is an error that names the file.
mod fuzz {
    use proptest::prelude::*;

    fn preset_texts() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scenario/presets");
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
        v.sort();
        v
    }

    fn check(text: &str) {
        if let Err(e) = rtscope::scenario::parse(text, "fuzz.toml", false) {
            assert!(e.0.contains("fuzz.toml"), "the error names the file: {}", e.0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn loader_never_panics_on_mutated_presets(k in 0usize..32, at in 0usize..10_000, junk in "\\PC{0,16}", op in 0u8..4) {
            let texts = preset_texts();
            let t = &texts[k % texts.len()];
            let at = (0..=at % t.len().max(1)).rev().find(|&i| t.is_char_boundary(i)).unwrap_or(0);
            let m = match op {
                0 => t[..at].to_string(),
                1 => format!("{}{junk}{}", &t[..at], &t[at..]),
                2 => t.replacen(|c: char| c.is_ascii_digit(), "99999999999999999999", 1 + at % 4),
                _ => t.replacen('"', &junk, 1 + at % 3),
            };
            check(&m);
        }

        #[test]
        fn loader_never_panics_on_line_soup(lines in proptest::collection::vec(prop_oneof![
            Just("[[phase]]".to_string()), Just("[[probe]]".to_string()), Just("[load]".to_string()),
            Just("name = \"timer\"".to_string()), Just("name = \"sem:posix\"".to_string()), Just("name = \"\"".to_string()),
            Just("loads = [\"cmd:true\", \"cpu\"]".to_string()), Just("periods = [\"10ms\", \"0\"]".to_string()),
            Just("duration = \"1d\"".to_string()), Just("dir = \"/proc\"".to_string()), Just("intensity = 1e308".to_string()),
            "[a-z_]{1,8} = \"[0-9a-z:/ ]{0,12}\"",
        ], 0..24)) {
            check(&lines.join("\n"));
        }
    }
}
