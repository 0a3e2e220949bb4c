//! The JSON written by `rtscope run` matches docs/schema.md: every field is
//! documented under its JSON path, every required field is present, and
//! every value has the documented type. The doc is parsed, not copied.

mod common;

use common::schema::{check, documented};
use common::*;
use serde_json::Value;

#[test]
fn result_files_match_the_documented_schema() {
    let doc = documented();
    assert!(doc.len() >= 10, "docs/schema.md tables not found");
    let sb = Sandbox::new();
    let run = sb.run_json("r.json", &["-D", "500ms", "-t", "2", "-q"]);
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
}

/// A monitor run's result (`monitor` object, per-window notes) matches the docs.
#[test]
fn monitor_result_files_match_the_documented_schema() {
    let doc = documented();
    let sb = Sandbox::new();
    let path = sb.path("m.json");
    let out = sb.run(&["monitor", "--window", "200ms", "-D", "700ms", "-t", "1", "-q", "--no-store", "--json", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = read_json(&path);
    assert!(run["monitor"]["windows"].as_u64().unwrap() >= 2, "{}", run["monitor"]);
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
}

#[test]
fn the_checker_catches_undocumented_and_missing_fields() {
    let doc = documented();
    let sb = Sandbox::new();
    let mut run = sb.run_json("r.json", &["-D", "300ms", "-t", "1", "-q"]);
    run["results"][0]["surprise"] = Value::from(1);
    run["host"].as_object_mut().unwrap().remove("realtime");
    run["plan"]["threads"] = Value::from("two");
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    let all = errors.join("\n");
    assert!(all.contains("/results[]: field `surprise` is not documented"), "{all}");
    assert!(all.contains("/host: required field `realtime` missing"), "{all}");
    assert!(all.contains("/plan: `threads`"), "{all}");
}

#[test]
fn traced_result_files_match_the_documented_schema() {
    if !is_root() || !std::path::Path::new("/sys/kernel/tracing/instances").is_dir() {
        skip!("threshold tracing needs root and tracefs at /sys/kernel/tracing");
    }
    let doc = documented();
    let sb = Sandbox::new();
    // Every sample crosses a 1 µs threshold on any machine, and with --worst above the
    // number of samples every snapshot sits on a kept sample.
    let run = sb.run_json("t.json", &["-D", "500ms", "-i", "200", "-t", "1", "-a", "1", "-q", "--trace-threshold", "1us", "--worst", "5000"]);
    let traced = merged(&run)[0]["worst"].as_array().unwrap().iter().filter(|w| w.get("trace").is_some()).count();
    assert!(traced > 0, "no traced sample to check");
    assert!(run.get("trace").is_some() && run["plan"].get("trace").is_some());
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
}

#[test]
fn every_probe_writes_documented_fields() {
    let doc = documented();
    let sb = Sandbox::new();
    let out = sb.run(&["probes"]);
    let text = String::from_utf8(out.stdout).unwrap();
    // A probe whose kernel tracer this kernel lacks (`rtscope probes` says so
    // in the indented lines under it) cannot run here; tests/kernel_lab.rs
    // checks the tracer probes' entries against the same tables in the -rt guest.
    let lines: Vec<&str> = text.lines().collect();
    let names: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.starts_with(' '))
        .filter(|(i, l)| {
            // The probe's block: its line and the indented ones under it (its text wraps at 80 columns).
            let block = common::unwrapped(
                &lines[*i..].iter().enumerate().take_while(|(k, n)| *k == 0 || n.starts_with(' ')).map(|(_, n)| *n).collect::<Vec<_>>().join("\n"),
            );
            let missing = block.contains("lacks the tracer") || block.contains("availability unknown");
            if missing {
                eprintln!("SKIPPED here (no kernel tracer): {l}");
            }
            !missing
        })
        .filter_map(|(_, l)| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 2 && names.contains(&"timer"), "{text}");
    let list = names.join(",");
    // throughput: 8 tests share -D, each needs one whole --tm-interval.
    let run = sb.run_json("all.json", &["-D", "800ms", "--tm-interval", "100ms", "-t", "1", "-a", "0", "-q", "--probe", &list]);
    let seen: std::collections::BTreeSet<&str> = run["results"].as_array().unwrap().iter().map(|r| r["probe"].as_str().unwrap()).collect();
    for n in &names {
        assert!(seen.contains(n), "probe {n} wrote no result; seen {seen:?}");
    }
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
}

#[test]
fn phases_loads_and_scenario_fields_are_documented() {
    let doc = documented();
    let sb = Sandbox::new();
    std::fs::write(
        sb.path("s.toml"),
        "duration = \"500ms\"\nthreads = 1\nsettle = \"200ms\"\n[tags]\nk = \"v\"\n[load]\nengine = \"builtin\"\n\
         [[phase]]\nname = \"idle\"\n[[phase]]\nname = \"loaded\"\nloads = [\"cpu\", \"cmd:sleep 30\"]\n[[probe]]\nname = \"timer\"\n",
    )
    .unwrap();
    let p = sb.path("s.toml").to_str().unwrap().to_string();
    let run = sb.run_json("loads.json", &["-q", &p]);
    assert_eq!(run["phases"][1]["loads"].as_array().unwrap().len(), 2);
    let mut errors = Vec::new();
    check(&doc, "/", &run, &mut errors);
    assert!(errors.is_empty(), "schema mismatches:\n{}", errors.join("\n"));
}

/// The suite presets, shortened: their results match the docs and the run
/// ends with the suite's table (Rhealstone with its composite when all six
/// components ran; Thread-Metric with a row per test).
#[test]
fn suite_presets_write_documented_fields_and_print_their_tables() {
    let doc = documented();
    let sb = Sandbox::new();
    let runs: [(&str, &[&str], &str); 2] = [
        ("rh.json", &["--preset", "rhealstone", "-D", "300ms", "--settle", "0", "--load-engine", "builtin"], "Rhealstones per second"),
        // Thread-Metric's rows are T1..T8, named in a legend under the table.
        ("tm.json", &["--preset", "thread-metric", "-D", "4s", "--tm-interval", "500ms"], "T8 "),
    ];
    for (name, args, table) in runs {
        let path = sb.path(name);
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--json", path.to_str().unwrap()]);
        let out = sb.run(&all);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{all:?}: {}", String::from_utf8_lossy(&out.stderr));
        let line = stdout.lines().find(|l| l.starts_with(table)).unwrap_or_else(|| panic!("{name}: no {table:?} row in:\n{stdout}"));
        if name == "tm.json" {
            assert!(stdout.lines().any(|l| l.trim() == "T8 = memory-allocation"), "no legend names T8: {stdout}");
            assert!(!stdout.contains("p50(us)"), "a latency table without rows is not shown: {stdout}");
        }
        // Numbers in every phase column, never a dash: every component ran.
        assert!(!line.split_whitespace().any(|c| c == "-"), "{line}");
        let run = common::read_json(&path);
        let mut errors = Vec::new();
        check(&doc, "/", &run, &mut errors);
        assert!(errors.is_empty(), "{name}: schema mismatches:\n{}", errors.join("\n"));
    }
}
