//! `rtscope compare` on crafted results: ratios, sentences, bin tables and
//! the two-sample test on two systems whose samples are known, and partial
//! matches between results with different probes and phases.

mod analysis_support;
mod common;

use analysis_support::*;
use rtscope::model::SignedStats;

/// Latencies of system A: 100..599 ns (exact single-ns buckets); B is 3×A.
fn a_values() -> Vec<u64> {
    (0..10_000u64).map(|i| 100 + (i * 37) % 500).collect()
}

fn files(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let a = run(host("alpha", "6.1.0"), entries("timer", "idle", &[a_values()], 1_000_000));
    let b_vals: Vec<u64> = a_values().iter().map(|v| v * 3).collect();
    let b = run(host("beta", "6.1.0-rt"), entries("timer", "idle", &[b_vals], 1_000_000));
    (write(dir, "a.json", &a), write(dir, "b.json", &b))
}

#[test]
fn ratios_bins_and_test_between_two_systems() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path());
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B", "--bins", "500ns", "--format", "json"]));
    assert_eq!(v["systems"], serde_json::json!(["A", "B"]));
    let row = &v["rows"][0];
    assert_eq!(row["key"]["probe"], "timer");
    let (ca, cb) = (&row["cells"][0], &row["cells"][1]);
    for k in ["p50_ns", "p99_ns", "p99_9_ns", "max_ns"] {
        assert_eq!(cb[k].as_u64().unwrap(), 3 * ca[k].as_u64().unwrap(), "{k}");
    }
    for k in ["p50", "p99", "p99_9", "max", "mean"] {
        assert!((cb["ratio_to_first"][k].as_f64().unwrap() - 3.0).abs() < 1e-9, "{k}");
    }
    assert!(ca["ratio_to_first"].is_null());
    assert_eq!(cb["ks_vs_first"]["distinguishable"], true);
    let s = v["sentences"][0].as_str().unwrap();
    assert!(s.starts_with("max under `idle` (timer): B is 3.00× higher than A (p99: 3.00× higher than A); the distributions differ"), "{s}");

    // Bin table: counts per 500 ns bin, computed here from the values.
    let count = |vals: &[u64], k: u64| vals.iter().filter(|v| **v / 500 == k).count() as u64;
    let av = a_values();
    let bv: Vec<u64> = av.iter().map(|v| v * 3).collect();
    let rows = v["bin_tables"][0]["rows"].as_array().unwrap();
    let nonempty = (0..10).filter(|k| count(&av, *k) + count(&bv, *k) > 0).count();
    assert_eq!(rows.len(), nonempty);
    let mut total = [0u64, 0u64];
    for r in rows {
        let k = r["lo_ns"].as_u64().unwrap() / 500;
        assert_eq!(r["hi_ns"].as_u64().unwrap(), (k + 1) * 500);
        assert_eq!(r["counts"][0].as_u64().unwrap(), count(&av, k), "A bin {k}");
        assert_eq!(r["counts"][1].as_u64().unwrap(), count(&bv, k), "B bin {k}");
        total[0] += r["counts"][0].as_u64().unwrap();
        total[1] += r["counts"][1].as_u64().unwrap();
    }
    assert_eq!(total, [10_000, 10_000]);
}

#[test]
fn identical_results_are_not_distinguishable() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = files(dir.path());
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&a).args(["--format", "json"]));
    // Same host, kernel and file twice: names are told apart by position.
    assert_eq!(v["systems"], serde_json::json!(["alpha 6.1.0 #1", "alpha 6.1.0 #2"]));
    let c = &v["rows"][0]["cells"][1];
    assert_eq!(c["ks_vs_first"]["d"].as_f64().unwrap(), 0.0);
    assert_eq!(c["ks_vs_first"]["distinguishable"], false);
    assert_eq!(c["ratio_to_first"]["max"].as_f64().unwrap(), 1.0);
    assert!(v["sentences"][0].as_str().unwrap().contains("is the same as"));
}

#[test]
fn terminal_table_has_ratio_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path());
    let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B", "--ns"]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    let header = s.lines().find(|l| l.starts_with("entry")).unwrap();
    assert!(header.split_whitespace().collect::<Vec<_>>() == ["entry", "metric", "A", "B", "B/A"], "{header}");
    let max = s.lines().find(|l| l.trim_start().starts_with("max(ns)")).unwrap();
    let cells: Vec<&str> = max.split_whitespace().collect();
    assert_eq!(cells, ["max(ns)", "599", "1797", "3.00"], "{max}");
    assert!(s.contains("== Comparison: A vs B =="));
    assert!(!s.contains("-- Bins of"), "bin tables only with --bins: {s}");
    let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B", "--ns", "--bins"]).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("-- Bins of 5000 ns: timer/idle"), "default bins are 5 µs: {s}");
    assert!(!s.contains('\u{1b}'), "no colour when not a terminal");
}

#[test]
fn different_probes_and_phases_match_what_they_can() {
    let dir = tempfile::tempdir().unwrap();
    let mut ra = entries("timer", "idle", &[a_values()], 1_000_000);
    ra.extend(entries("timer", "load", &[a_values()], 1_000_000));
    let mut rb = entries("timer", "idle", &[a_values()], 1_000_000);
    rb.extend(entries("sem", "idle", &[a_values()], 1_000_000));
    let a = write(dir.path(), "a.json", &run(host("a", "k"), ra));
    let b = write(dir.path(), "b.json", &run(host("b", "k"), rb));
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]));
    assert_eq!(v["matched"].as_array().unwrap().len(), 1);
    assert_eq!(v["matched"][0]["phase"], "idle");
    let un: Vec<(String, String, Vec<String>)> = v["unmatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u[0]["probe"].as_str().unwrap().to_string(),
                u[0]["phase"].as_str().unwrap().to_string(),
                u[1].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(un, vec![("timer".into(), "load".into(), vec!["a k".into()]), ("sem".into(), "idle".into(), vec!["b k".into()])]);
    // The missing cells are empty, and no sentence is made for them.
    assert!(v["rows"][1]["cells"][1].is_null());
    assert_eq!(v["sentences"].as_array().unwrap().len(), 1);
    let out = rtscope().arg("compare").arg(&a).arg(&b).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("timer/load: only in a k"), "{s}");
    assert!(s.contains("missing"));
}

#[test]
fn markdown_compare_is_a_pipe_table() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = files(dir.path());
    let out_md = dir.path().join("c.md");
    let st = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B", "--format", "md", "-o"]).arg(&out_md).output().unwrap();
    assert!(st.status.success());
    let md = std::fs::read_to_string(&out_md).unwrap();
    assert!(md.contains("| entry | metric | A | B | B/A |\n|:---|:---|---:|---:|---:|"), "{md}");
}

#[test]
fn summary_only_imports_have_unknown_percentiles_not_the_max() {
    // ptsematest prints min/avg/max only: its import holds one [min, max]
    // bucket, which compare must not read as a distribution.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import/ptsematest.txt");
    for name in ["pt-a", "pt-b"] {
        let out = rtscope().args(["import", fixture, "--format", "rt-tests-ipc", "--name", name, "--db"]).arg(&db).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let v = json_out(rtscope().args(["compare", "1", "2", "--format", "json", "--db"]).arg(&db));
    let row = v["rows"].as_array().unwrap().iter().find(|r| r["key"]["probe"] == "sem").expect("a sem row");
    let (ca, cb) = (&row["cells"][0], &row["cells"][1]);
    for k in ["p50_ns", "p99_ns", "p99_9_ns"] {
        assert!(ca[k].is_null() && cb[k].is_null(), "{k} must be unknown: {ca}");
    }
    assert_eq!(cb["max_ns"].as_u64(), Some(37_000), "the max is still known: {cb}");
    assert!(cb["ks_vs_first"].is_null(), "no KS test on summaries: {cb}");
    assert!(cb["ratio_to_first"]["p50"].is_null());
    assert!((cb["ratio_to_first"]["max"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    let text = rtscope().args(["compare", "1", "2", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let p50_line = text.lines().find(|l| l.contains("p50(")).expect("a p50 row");
    assert!(!p50_line.contains("37.0"), "p50 shown as the max: {p50_line}");
}

/// The default run (idle, mixed) against a `--load cpu` run of the same
/// machine: named by file, `mixed` paired with `cpu` and said so; `--match
/// phase` keeps them apart, `--match probe` refuses unequal phase counts,
/// `--phases` pairs what the user names.
#[test]
fn runs_with_different_phases_pair_their_loaded_phases() {
    let dir = tempfile::tempdir().unwrap();
    let mut ra = entries("timer", "idle", &[a_values()], 1_000_000);
    ra.extend(entries("timer", "mixed", &[a_values().iter().map(|v| v * 4).collect()], 1_000_000));
    let rb = entries("timer", "cpu", &[a_values().iter().map(|v| v * 2).collect()], 1_000_000);
    let a = write(dir.path(), "default.json", &run(host("vm", "6.1.0"), ra));
    let b = write(dir.path(), "cpu.json", &run(host("vm", "6.1.0"), rb));
    let key = |v: &serde_json::Value| v["phase"].as_str().unwrap().to_string();

    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]));
    assert_eq!(v["systems"], serde_json::json!(["default", "cpu"]), "same host and kernel: named by file");
    let matched: Vec<String> = v["matched"].as_array().unwrap().iter().map(key).collect();
    assert_eq!(matched, ["mixed vs cpu"]);
    let row = v["rows"].as_array().unwrap().iter().find(|r| r["key"]["phase"] == "mixed vs cpu").unwrap();
    // mixed is 4×A, cpu 2×A: cpu/mixed = 0.5 (exact for the max, within the
    // histogram's 3 significant digits for p99).
    assert_eq!(row["cells"][1]["ratio_to_first"]["max"].as_f64().unwrap(), 0.5, "{row}");
    assert!((row["cells"][1]["ratio_to_first"]["p99"].as_f64().unwrap() - 0.5).abs() < 1e-3, "{row}");
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes[0].contains("every input ran on vm 6.1.0"), "{notes:?}");
    assert!(notes[1].starts_with("timer: phase 'mixed' of default with 'cpu' of cpu compared: the one loaded phase"), "{notes:?}");
    let text = String::from_utf8(rtscope().arg("compare").arg(&a).arg(&b).output().unwrap().stdout).unwrap();
    assert!(text.contains("== Comparison: default vs cpu ==") && text.contains("timer/mixed vs cpu"), "{text}");
    let header = text.lines().find(|l| l.starts_with("entry")).unwrap();
    assert_eq!(header.split_whitespace().last(), Some("cpu/default"), "{header}");
    // Default result names (rtscope-<time>.json) read as their time; the
    // ratio header of long names is "ratio".
    let (ta, tb) = (dir.path().join("rtscope-20261123T100528Z.json"), dir.path().join("rtscope-20261123T100800Z.json"));
    // Two default runs of one machine (the same phases).
    std::fs::copy(&a, &ta).unwrap();
    std::fs::copy(&a, &tb).unwrap();
    let text = String::from_utf8(rtscope().arg("compare").arg(&ta).arg(&tb).output().unwrap().stdout).unwrap();
    let header = text.lines().find(|l| l.starts_with("entry")).unwrap();
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["entry", "metric", "20261123T100528Z", "20261123T100800Z", "ratio"], "{header}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json", "--match", "phase"]));
    assert!(v["matched"].as_array().unwrap().is_empty());
    assert_eq!(v["unmatched"].as_array().unwrap().len(), 3);

    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json", "--phases", "idle=cpu"]));
    let matched: Vec<String> = v["matched"].as_array().unwrap().iter().map(key).collect();
    assert_eq!(matched, ["idle vs cpu"], "--phases wins over auto");
    assert!(v["notes"][1].as_str().unwrap().ends_with("as --phases says"), "{}", v["notes"]);

    let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--match", "probe"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--match probe: timer is in a different number of phases") && err.contains("--phases"), "{err}");
    assert!(out.stdout.is_empty());
    for bad in ["busy=cpu", "idle=busy", "idle"] {
        let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--phases", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--phases {bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--phases"), "--phases {bad}");
    }
}

/// Two runs of one machine whose files have the same name are told apart
/// by their start time.
#[test]
fn same_file_names_fall_back_to_the_start_time() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("x")).unwrap();
    let ra = run(host("vm", "6.1.0"), entries("timer", "idle", &[a_values()], 1_000_000));
    let mut rb = ra.clone();
    rb.started_at = "2026-02-02T00:00:00Z".into();
    let a = write(dir.path(), "r.json", &ra);
    let b = write(&dir.path().join("x"), "r.json", &rb);
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]));
    let names: Vec<&str> = v["systems"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(names, [ra.started_at.as_str(), "2026-02-02T00:00:00Z"]);
}

/// Issue 31 item 4: `run --load idle` against `run --load cpu` (one phase
/// each) printed every value as `missing`. Such inputs pair by probe by
/// default and the note above the table says so; `--match phase` keeps them
/// apart; the HTML comparison has its overlay plots whatever the pairing.
#[test]
fn one_phase_inputs_pair_by_probe_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "idle.json", &run(host("vm", "6.1.0"), entries("timer", "idle", &[a_values()], 1_000_000)));
    let cpu_vals: Vec<u64> = a_values().iter().map(|v| v * 2).collect();
    let b = write(dir.path(), "cpu.json", &run(host("vm", "6.1.0"), entries("timer", "cpu", &[cpu_vals], 1_000_000)));
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]));
    let matched: Vec<&str> = v["matched"].as_array().unwrap().iter().map(|k| k["phase"].as_str().unwrap()).collect();
    assert_eq!(matched, ["idle vs cpu"], "{v}");
    assert!(v["unmatched"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(v["rows"][0]["cells"][1]["ratio_to_first"]["max"].as_f64().unwrap(), 2.0, "{v}");
    let notes: Vec<&str> = v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.starts_with("paired by probe: idle ↔ cpu")), "{notes:?}");
    let text = String::from_utf8(rtscope().arg("compare").arg(&a).arg(&b).output().unwrap().stdout).unwrap();
    let table_at = text.find("entry ").unwrap();
    assert!(text[..table_at].contains("paired by probe: idle ↔ cpu"), "said above the table: {text}");
    assert!(!text.contains("missing") && !text.contains("only in"), "{text}");
    // Asked to keep phases apart, they stay apart.
    let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json", "--match", "phase"]));
    assert!(v["matched"].as_array().unwrap().is_empty() && v["unmatched"].as_array().unwrap().len() == 2, "{v}");
    // Overlay plots: one tail and one histogram overlay per paired row, by
    // default and with --match probe (none before: rows named `idle vs cpu`
    // found no entry of that phase).
    for extra in [&[][..], &["--match", "probe"][..]] {
        let html = dir.path().join("c.html");
        let o = rtscope().arg("report").arg(&a).arg(&b).args(extra).args(["--format", "html", "-o"]).arg(&html).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let h = std::fs::read_to_string(&html).unwrap();
        assert_eq!(h.matches("data-kind=\"systems\"").count(), 1, "{extra:?}");
        assert_eq!(h.matches("data-kind=\"systems-histogram\"").count(), 1, "{extra:?}");
    }
}

/// Issue 31 item 6: two back-to-back idle runs got a red `KS D=0.100
/// differ`. A difference is called material only when the test rejects and
/// D ≥ 0.2; a significant but small D is "small", and the sentence says so.
#[test]
fn a_small_significant_difference_is_not_called_material() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &run(host("a", "k"), entries("timer", "idle", &[a_values()], 1_000_000)));
    // Uniform over 100..599 ns shifted by 50 ns: D = 50/500 = 0.1; by 150 ns: D = 0.3.
    for (shift, d, word, differs) in [(50u64, 0.1, "small", "differ only a little"), (150, 0.3, "differ", "the distributions differ (")] {
        let vals: Vec<u64> = a_values().iter().map(|v| v + shift).collect();
        let b = write(dir.path(), "b.json", &run(host("b", "k"), entries("timer", "idle", &[vals], 1_000_000)));
        let v = json_out(rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]));
        let ks = &v["rows"][0]["cells"][1]["ks_vs_first"];
        assert!((ks["d"].as_f64().unwrap() - d).abs() < 1e-9, "{ks}");
        assert_eq!(ks["distinguishable"], true, "10 000 samples each: p is tiny either way: {ks}");
        assert!(v["sentences"][0].as_str().unwrap().contains(differs), "{}", v["sentences"][0]);
        let text = String::from_utf8(rtscope().arg("compare").arg(&a).arg(&b).args(["--color", "never"]).output().unwrap().stdout).unwrap();
        assert!(text.contains(&format!("KS D={d:.3} {word}")), "{text}");
    }
}

/// Issue 49 item 7: the agent (ns) against cyclictest (whole µs) in the same
/// guest read "KS D=0.641 differ" though their percentiles agreed: the test
/// saw the rounding. It compares at the coarser resolution, and says so.
#[test]
fn ks_compares_at_the_coarser_resolution_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // 20 000 samples over 20.000–29.999 µs, one per ns value step of 10 ns (×20).
    let fine: Vec<(u64, u64)> = (0..1000u64).map(|k| (20_000 + 10 * k, 20)).collect();
    let a = from_histogram("timer", "idle", &fine);
    // The same samples as cyclictest stores them: truncated to whole µs.
    let mut b = from_histogram("timer", "idle", &fine);
    b.histogram = (20..30u64)
        .map(|u| rtscope::model::Bucket { lo_ns: rtscope::model::Nanos(u * 1000), hi_ns: rtscope::model::Nanos(u * 1000 + 999), count: 2000 })
        .collect();
    let fa = write(dir.path(), "agent.json", &run(host("g", "6.1.0-rt"), vec![a]));
    let fb = write(dir.path(), "cyclictest.json", &run(host("g", "6.1.0-rt"), vec![b]));
    let v = json_out(rtscope().arg("compare").arg(&fa).arg(&fb).args(["--format", "json"]));
    let ks = &v["rows"][0]["cells"][1]["ks_vs_first"];
    assert!(ks["d"].as_f64().unwrap() < 1e-9, "{ks}");
    assert_eq!(ks["distinguishable"], false, "{ks}");
    assert_eq!(ks["at_ns"], 1000, "{ks}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("different resolutions; the KS test compares them at the coarser one, 1 us"), "{notes}");
    assert!(v["sentences"][0].as_str().unwrap().contains("at the coarser resolution of 1 us"), "{}", v["sentences"]);
}

/// Issue 49 item 11: two signed means below zero (a clock running ahead,
/// -9.7 µs vs -0.2 µs) gave the ratio 0.03, which reads "30× better" and
/// means nothing: no mean ratio where either mean is negative (`-`, null).
#[test]
fn no_ratio_of_negative_means() {
    let dir = tempfile::tempdir().unwrap();
    let signed = |mean: f64| {
        let mut e = from_histogram("timer", "idle", &[(0, 900), (1_000, 100)]);
        e.extras.signed = Some(SignedStats { samples: e.samples, min_ns: -20_000, max_ns: 1_000, mean_ns: mean, clamped: true });
        e
    };
    let a = write(dir.path(), "a.json", &run(host("a", "6.1.0-rt"), vec![signed(-9_700.0)]));
    let b = write(dir.path(), "b.json", &run(host("b", "6.1.0-rt"), vec![signed(-200.0)]));
    let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["rows"][0]["cells"][1]["ratio_to_first"];
    assert!(r["mean"].is_null(), "{r}");
    assert!(r["max"].as_f64().is_some(), "{r}");
    let out = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "A,B"]).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    let mean = s.lines().find(|l| l.trim_start().starts_with("mean±σ")).unwrap_or_else(|| panic!("{s}"));
    let cells: Vec<&str> = mean.split_whitespace().collect();
    assert_eq!(cells.last(), Some(&"-"), "no ratio of -9.7 and -0.2: {mean}");
    assert!(cells[1].starts_with("-9.7") && cells[2].starts_with("-0.2"), "{mean}");
}

#[test]
fn inputs_of_one_system_are_named_by_their_source_unless_named() {
    // Two runs of one host and kernel (issue 63: `--name cpu0,cpu1` still
    // said "they are named by their source").
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "cpu0.json", &run(host("vm", "6.1.0"), entries("timer", "idle", &[a_values()], 1_000_000)));
    let b = write(dir.path(), "cpu1.json", &run(host("vm", "6.1.0"), entries("timer", "idle", &[a_values()], 1_000_000)));
    let unnamed = rtscope().arg("compare").arg(&a).arg(&b).args(["--format", "json"]).output().unwrap();
    assert!(unnamed.status.success(), "{}", String::from_utf8_lossy(&unnamed.stderr));
    let v: serde_json::Value = serde_json::from_slice(&unnamed.stdout).unwrap();
    assert_eq!(v["systems"], serde_json::json!(["cpu0", "cpu1"]));
    assert!(v["notes"].to_string().contains("every input ran on vm 6.1.0: they are named by their source"), "{}", v["notes"]);
    for format in ["json", "term"] {
        let named = rtscope().arg("compare").arg(&a).arg(&b).args(["--name", "first,second", "--format", format]).output().unwrap();
        assert!(named.status.success(), "{}", String::from_utf8_lossy(&named.stderr));
        let text = String::from_utf8_lossy(&named.stdout);
        assert!(text.contains("first") && text.contains("second"), "{text}");
        assert!(!text.contains("named by their source"), "--name given, yet: {text}");
    }
}
