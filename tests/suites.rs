//! Issue 17: priority inversion (`pi`), Thread-Metric (`throughput`), the
//! `rhealstone` and `thread-metric` presets' tables, and the importers of
//! published suite results. Each test runs the real binary and checks
//! numbers against what must hold on any machine: without a priority
//! protocol the high thread waits for the whole medium burst, with one it
//! does not; ops are counted per interval and add up; an interval twice as
//! long counts twice as many; imported figures come out as computed here.

mod common;

use common::{fixture, merged, need_root, serial, u, Sandbox};
use serde_json::Value;

fn entry<'a>(run: &'a Value, probe: &str, variant: &str) -> &'a Value {
    merged(run).into_iter().find(|r| r["probe"] == probe && r["variant"] == variant).unwrap_or_else(|| panic!("no merged {probe} {variant} entry"))
}

#[test]
fn pi_without_a_protocol_shows_the_inversion_and_with_one_does_not() {
    need_root!("the inversion needs SCHED_FIFO priorities");
    let _g = serial();
    let sb = Sandbox::new();
    // A 30 ms burst every 100 ms: far above any scheduling delay of this
    // VM, so "below the burst" cannot fail by noise.
    let burst: u64 = 30_000_000;
    let run = sb.run_json("pi.json", &["--probe", "pi", "-D", "4s", "-i", "100ms", "--pi-burst", "30ms", "-q"]);
    assert_eq!(u(&run["plan"]["probe_options"]["pi_burst_ns"]), burst);
    let none = entry(&run, "pi", "none");
    assert!(u(&none["samples"]) >= 5, "{}", none["samples"]);
    // Every event: high waits while medium computes its whole burst.
    assert!(u(&none["min_ns"]) >= burst, "none: min {} < burst {burst}", none["min_ns"]);
    for v in ["inherit", "protect", "deadlock-break"] {
        let e = entry(&run, "pi", v);
        assert!(u(&e["samples"]) >= 5, "{v}: {}", e["samples"]);
        assert!(u(&e["max_ns"]) < burst, "{v}: max {} not below the burst {burst}", e["max_ns"]);
        assert!(e["note"].as_str().unwrap().contains("medium burst 30ms"), "{v}: {}", e["note"]);
    }
    // The remaining critical section (20 µs) is inside inherit's and
    // protect's samples, not deadlock-break's.
    for v in ["inherit", "protect"] {
        assert!(u(&entry(&run, "pi", v)["min_ns"]) >= 20_000, "{v}");
    }
}

#[test]
fn throughput_counts_every_test_per_interval() {
    let _g = serial();
    let sb = Sandbox::new();
    let run = sb.run_json("tm.json", &["--probe", "throughput", "-D", "8s", "--tm-interval", "1s", "-q"]);
    let variants = ["basic", "cooperative", "preemptive", "interrupt", "interrupt-preemption", "message", "synchronization", "memory"];
    for v in variants {
        let e = entry(&run, "throughput", v);
        let t = &e["throughput"];
        let per: Vec<u64> = t["per_interval"].as_array().unwrap().iter().map(u).collect();
        assert_eq!(per.len(), 1, "{v}: one 1 s interval in its 1 s share");
        assert_eq!(u(&t["ops"]), per.iter().sum::<u64>(), "{v}");
        assert!(u(&t["ops"]) > 0, "{v} counted nothing");
        assert_eq!(u(&t["interval_ns"]), 1_000_000_000);
        // The sample is the interval's mean time per op over the interval as
        // measured: never shorter than the second asked (the reporter waits
        // for its due time), longer by however late the reporter woke (a
        // loaded run saw 6 %). Rounding to whole ns moves it by half a ns an op.
        assert_eq!(u(&e["samples"]), 1, "{v}");
        let ops = u(&t["ops"]) as f64;
        let span = u(&e["max_ns"]) as f64 * ops;
        assert!(span >= 1e9 - ops / 2.0 - 1.0 && span <= 1.5e9 + ops / 2.0, "{v}: {} ns/op × {ops} ops = {span} ns for a 1 s interval", u(&e["max_ns"]));
    }
    // The interrupt test's handler ran once per pass of its thread.
    let note = entry(&run, "throughput", "interrupt")["note"].as_str().unwrap().to_string();
    let nums: Vec<u64> = note.split(|c: char| !c.is_ascii_digit()).filter_map(|s| s.parse().ok()).collect();
    let (calls, passes) = (nums[nums.len() - 2], nums[nums.len() - 1]);
    assert!(calls.abs_diff(passes) <= 1, "{note}");
}

#[test]
fn throughput_counts_scale_with_the_interval() {
    let _g = serial();
    let sb = Sandbox::new();
    let ops = |name: &str, interval: &str| -> Vec<u64> {
        let run = sb.run_json(name, &["--probe", "throughput:basic", "-D", "4s", "--tm-interval", interval, "-q"]);
        entry(&run, "throughput", "basic")["throughput"]["per_interval"].as_array().unwrap().iter().map(u).collect()
    };
    // 2 s intervals before and after one 4 s interval: the machine's speed
    // drifts (this VM's compute rate moves by ±20 % from second to second),
    // so the 4 s count is judged against the 2 s counts around it.
    let before = ops("before.json", "2s");
    let four = ops("four.json", "4s");
    let after = ops("after.json", "2s");
    assert_eq!((before.len(), four.len(), after.len()), (2, 1, 2));
    let two: Vec<f64> = before.iter().chain(&after).map(|&x| x as f64).collect();
    let (lo, hi) = two.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    // A 4 s interval counts what two 2 s intervals count: within 15 % of the
    // range of twice the 2 s counts (a count that did not scale would be off
    // by a factor of 2).
    let per_two = four[0] as f64 / 2.0;
    assert!(per_two >= 0.85 * lo && per_two <= 1.15 * hi, "4 s interval / 2 = {per_two:.0}, 2 s intervals {two:?}: not within 15 % of their range");
}

#[test]
fn bad_suite_input_exits_2_and_writes_nothing() {
    let sb = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (&["--probe", "pi", "--pi-burst", "0"], "--pi-burst"),
        (&["--probe", "pi", "--pi-burst", "200ms"], "100ms"),
        (&["--probe", "throughput", "--tm-interval", "0"], "--tm-interval"),
        (&["--probe", "throughput:bogus"], "unknown variant 'bogus'"),
        (&["--probe", "pi:bogus"], "allowed: none, inherit, protect, deadlock-break"),
        (&["--probe", "throughput", "-D", "4s", "--tm-interval", "1s"], "less than one interval"),
        (&["--probe", "pi", "-p", "2"], "needs -p 3 or more"),
        (&["--probe", "throughput", "-p", "5", "-D", "8s", "--tm-interval", "1s"], "needs -p 6 or more"),
    ];
    for (args, says) in cases {
        let mut all = vec!["run", "--json", "out.json"];
        all.extend_from_slice(args);
        let o = sb.run(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: expected {says:?} in: {err}");
        assert!(!sb.path("out.json").exists(), "{args:?} wrote a result");
        assert!(!sb.path("results.db").exists(), "{args:?} created the history");
    }
}

#[test]
fn presets_plan_the_suites() {
    let sb = Sandbox::new();
    let o = sb.run(&["run", "--preset", "rhealstone", "--dry-run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan = String::from_utf8_lossy(&o.stdout);
    for p in ["switch (yield)", "preempt", "timer", "sem (posix/same-cpu)", "pi (deadlock-break)", "mq (oneway)"] {
        assert_eq!(plan.matches(&format!("probe {p} ")).count(), 2, "{p} in idle and mixed: {plan}");
    }
    let o = sb.run(&["run", "--preset", "thread-metric", "--dry-run"]);
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("probe throughput counting per 30s interval (--tm-interval) for 8m"), "{plan}");
}

/// A fixture row: its label and one cell per system.
type Row = (String, Vec<Option<f64>>);

/// Independent reading of a suite CSV fixture: the systems, then the rows.
fn csv_rows(name: &str) -> (Vec<String>, Vec<Row>) {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let systems: Vec<String> = lines.next().unwrap().split(',').skip(1).map(String::from).collect();
    let rows = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), (0..systems.len()).map(|k| f.get(k + 1).and_then(|s| s.parse().ok())).collect())
        })
        .collect();
    (systems, rows)
}

#[test]
fn rhealstone_import_gives_the_published_means_and_composite() {
    let sb = Sandbox::new();
    let f = fixture("rhealstone.csv");
    let o = sb.run(&["import", f.to_str().unwrap(), "--phase", "idle"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (systems, rows) = csv_rows("rhealstone.csv");
    // Run 1 is the first column: all six present, so the composite is given.
    let means: Vec<f64> = rows.iter().map(|(_, v)| v[0].unwrap()).collect();
    let composite = 1.0 / (means.iter().sum::<f64>() / 6.0 * 1e-6);
    let o = sb.run(&["report", "1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text.lines().find(|l| l.starts_with("Rhealstones per second")).unwrap_or_else(|| panic!("{text}"));
    let shown: f64 = line.split("six").nth(1).unwrap().replace(' ', "").parse().unwrap();
    assert!((shown - composite).abs() <= 1.0, "{shown} vs {composite}");
    for (label, v) in &rows {
        let row = text.lines().find(|l| l.starts_with(label.as_str())).unwrap_or_else(|| panic!("{label}: {text}"));
        assert!(row.trim_end().ends_with(&format!("{:.1}", v[0].unwrap())), "{row}");
    }
    // Run 2 lacks deadlock-break: components shown, no composite.
    let o = sb.run(&["report", "2"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&systems[1]), "{text}");
    let line = text.lines().find(|l| l.starts_with("Rhealstones per second")).unwrap();
    assert!(line.trim_end().ends_with('-'), "{line}");
    assert!(text.lines().any(|l| l.starts_with("deadlock-break") && l.trim_end().ends_with('-')), "{text}");
}

#[test]
fn thread_metric_import_compares_ops_per_second() {
    let sb = Sandbox::new();
    let f = fixture("thread-metric.csv");
    let o = sb.run(&["import", f.to_str().unwrap(), "--phase", "idle"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, rows) = csv_rows("thread-metric.csv");
    let o = sb.run(&["compare", "1", "2", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let crows = c["comparison"]["rows"].as_array().or_else(|| c["rows"].as_array()).unwrap_or_else(|| panic!("{c}"));
    let tests = [
        ("basic-processing", "basic"),
        ("cooperative-scheduling", "cooperative"),
        ("preemptive-scheduling", "preemptive"),
        ("interrupt-processing", "interrupt"),
        ("interrupt-preemption-processing", "interrupt-preemption"),
        ("message-processing", "message"),
        ("synchronization-processing", "synchronization"),
        ("memory-allocation", "memory"),
    ];
    for (name, variant) in tests {
        let (_, v) = rows.iter().find(|(l, _)| l == name).unwrap();
        let row = crows.iter().find(|r| r["key"]["variant"] == variant).unwrap_or_else(|| panic!("{variant}"));
        let a = row["cells"][0]["ops_per_s"].as_f64().unwrap();
        let b = row["cells"][1]["ops_per_s"].as_f64().unwrap();
        assert!((a - v[0].unwrap() / 30.0).abs() < 1e-6 * a, "{variant}: {a}");
        let ratio = row["cells"][1]["ratio_to_first"]["ops"].as_f64().unwrap();
        assert!((ratio - v[1].unwrap() / v[0].unwrap()).abs() < 1e-9, "{variant}: {ratio}");
        assert!((b / a - ratio).abs() < 1e-9);
    }
    // --probe has no meaning for a suite table.
    let o = sb.run(&["import", f.to_str().unwrap(), "--probe", "timer"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("drop --probe"));
}

/// A Thread-Metric CSV of `cols` systems, each with its own interval and
/// counts (so a column read for another shows): system c has interval
/// 1 + c % 7 s, basic-processing 1000 + c ops and memory-allocation
/// 50 + c ops for odd c only (an empty cell for even c).
fn thread_metric_columns(cols: usize) -> String {
    let mut t = String::from("thread_metric");
    (0..cols).for_each(|c| t.push_str(&format!(",sys-{c}")));
    t.push_str("\ninterval_s");
    (0..cols).for_each(|c| t.push_str(&format!(",{}", 1 + c % 7)));
    t.push_str("\nbasic-processing");
    (0..cols).for_each(|c| t.push_str(&format!(",{}", 1000 + c)));
    t.push_str("\nmemory-allocation");
    (0..cols).for_each(|c| t.push_str(&if c % 2 == 1 { format!(",{}", 50 + c) } else { ",".to_string() }));
    t.push('\n');
    t
}

/// The (variant, ops, interval ns) of each throughput entry of a run.
fn counts(run: &Value) -> Vec<(String, u64, u64)> {
    run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["variant"].as_str().unwrap().to_string(), u(&r["throughput"]["ops"]), u(&r["throughput"]["interval_ns"])))
        .collect()
}

fn expected_counts(c: usize) -> Vec<(String, u64, u64)> {
    let interval = (1 + c as u64 % 7) * 1_000_000_000;
    let mut v = vec![("basic".to_string(), 1000 + c as u64, interval)];
    if c % 2 == 1 {
        v.push(("memory".to_string(), 50 + c as u64, interval));
    }
    v
}

#[test]
fn thread_metric_columns_each_become_their_own_system() {
    // Each system is built from its column when it is checked, printed or
    // stored; every one must come out with its own column's figures.
    let sb = Sandbox::new();
    let f = sb.path("tm.csv");
    std::fs::write(&f, thread_metric_columns(3000)).unwrap();
    let o = sb.run(&["import", f.to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<Value> = serde_json::Deserializer::from_slice(&o.stdout).into_iter::<Value>().map(Result::unwrap).collect();
    assert_eq!(runs.len(), 3000);
    for (c, run) in runs.iter().enumerate() {
        assert_eq!(run["imported_from"]["system"], format!("sys-{c}"));
        assert_eq!(counts(run), expected_counts(c), "system {c}");
        let interval = 1 + c % 7;
        assert!(run["fidelity"].to_string().contains(&format!("one interval of {interval} s per test")), "{}", run["fidelity"]);
    }
}

#[test]
fn thread_metric_files_hold_at_most_100_000_systems() {
    let sb = Sandbox::new();
    // At the cap: one column picked with --name is that column's figures.
    let f = sb.path("cap.csv");
    std::fs::write(&f, thread_metric_columns(100_000)).unwrap();
    let o = sb.run(&["import", f.to_str().unwrap(), "--name", "sys-99999"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = sb.run(&["export", "1"]);
    let run: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(counts(&run), expected_counts(99_999));
    // Past it: refused at the header, with the way out, nothing stored.
    let past = sb.path("past.csv");
    std::fs::write(&past, thread_metric_columns(100_001)).unwrap();
    let db = sb.path("past.db");
    let o = sb.run(&["import", past.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 1: the header names more than 100000 systems; rtscope imports at most 100000 from one file"), "{err}");
    assert!(err.contains("cut -d, -f1-100001"), "{err}");
    assert!(!db.exists(), "nothing is written for a refused file");
}
