//! Analysis through the binary: percentiles from hand-computed histograms,
//! exact deadline-miss counts, the statistical worst case on synthetic
//! data with known parameters (and its refusals), `run --deadline`, and bad
//! inputs (exit 2, clear message, nothing written).

mod analysis_support;
mod common;

use analysis_support::*;
use serde_json::Value;

fn report_json(path: &std::path::Path, extra: &[&str]) -> Value {
    let mut c = rtscope();
    c.arg("report").arg(path).args(["--format", "json"]).args(extra);
    json_out(&mut c)
}

fn merged(v: &Value) -> &Value {
    v["runs"][0]["entries"].as_array().unwrap().iter().find(|e| e["thread"].is_null()).unwrap()
}

fn pct(e: &Value, label: &str) -> u64 {
    e["percentiles"].as_array().unwrap().iter().find(|p| p["label"] == label).unwrap()["value_ns"].as_u64().unwrap()
}

#[test]
fn percentiles_from_a_hand_computed_histogram() {
    let dir = tempfile::tempdir().unwrap();
    // 10 samples: 4 at 100 ns, 3 at 200, 2 at 300, 1 at 1000. Nearest rank:
    // p50 → rank 5 → 200; p90 → rank 9 → 300; p99 → rank 10 → 1000.
    let r = run(host("a", "6.1"), vec![from_histogram("timer", "idle", &[(100, 4), (200, 3), (300, 2), (1000, 1)])]);
    let f = write(dir.path(), "a.json", &r);
    let v = report_json(&f, &[]);
    let e = merged(&v);
    assert_eq!(pct(e, "p50"), 200);
    assert_eq!(pct(e, "p90"), 300);
    assert_eq!(pct(e, "p99"), 1000);
    assert_eq!(pct(e, "p99.999"), 1000);
    assert_eq!(e["samples"], 10);
    assert!((e["mean_ns"].as_f64().unwrap() - 260.0).abs() < 1e-9);
}

#[test]
fn deadline_misses_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads; 123 samples over 100 µs in thread 0, 77 in thread 1,
    // plus samples exactly at the deadline (not misses).
    let mk = |over: usize, seed: u64| -> Vec<u64> {
        let mut v: Vec<u64> = (0..40_000u64).map(|i| 10_000 + (i * 7919 + seed) % 80_000).collect();
        for k in 0..over {
            v[k * 300 + 1] = 100_001 + k as u64 * 1_013;
        }
        v[2] = 100_000;
        v
    };
    let r = run(host("a", "6.1"), entries("timer", "idle", &[mk(123, 1), mk(77, 5)], 1_000_000));
    let f = write(dir.path(), "a.json", &r);
    let v = report_json(&f, &["--deadline", "100us", "--no-pwcet"]);
    let es = v["runs"][0]["entries"].as_array().unwrap();
    let misses: Vec<u64> = es.iter().map(|e| e["deadline"]["misses"].as_u64().unwrap()).collect();
    assert_eq!(misses, vec![123, 77, 200]);
    for e in es {
        assert_eq!(e["deadline"]["exact"], true);
    }
    let m = merged(&v);
    assert!((m["deadline"]["ratio"].as_f64().unwrap() - 200.0 / 80_000.0).abs() < 1e-15);
    // 1 kHz per thread: the merged entry runs at 2000 samples/s.
    assert!((m["deadline"]["rate_hz"].as_f64().unwrap() - 2000.0).abs() < 1e-6, "{}", m["deadline"]);

    // More misses than the tail keeps: counted from the histogram, still
    // exact at a single-nanosecond bucket edge.
    let vals: Vec<u64> = (0..50_000u64).map(|i| if i % 5 < 3 { 1500 } else { 900 }).collect();
    let r = run(host("a", "6.1"), entries("timer", "idle", &[vals], 1_000_000));
    let f = write(dir.path(), "b.json", &r);
    let v = report_json(&f, &["--deadline", "1000ns", "--no-pwcet"]);
    assert_eq!(merged(&v)["deadline"]["misses"], 30_000);
    assert_eq!(merged(&v)["deadline"]["exact"], true);
}

/// Latency = 20 µs + GPD(ξ, σ) noise, i.i.d., at 10 kHz.
fn gpd_series(n: usize, xi: f64, sigma: f64, seed: u64) -> Vec<u64> {
    let mut r = Rng(seed);
    (0..n).map(|_| 20_000 + (sigma / xi * (r.uniform().powf(-xi) - 1.0)) as u64).collect()
}

#[test]
fn pwcet_recovers_a_known_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (xi, sigma) = (0.1, 2000.0);
    let r = run(host("a", "6.1"), entries("timer", "idle", &[gpd_series(200_000, xi, sigma, 99)], 100_000));
    let f = write(dir.path(), "a.json", &r);
    let v = report_json(&f, &[]);
    let p = &merged(&v)["pwcet"];
    assert_eq!(p["status"], "estimate", "{p}");
    let fit_xi = p["fit"]["xi"].as_f64().unwrap();
    assert!((fit_xi - xi).abs() < 0.12, "ξ = {fit_xi}");
    assert_eq!(p["excesses"].as_u64().unwrap(), 1000);
    for l in p["levels"].as_array().unwrap() {
        let prob = l["p"].as_f64().unwrap();
        let truth = 20_000.0 + sigma / xi * (prob.powf(-xi) - 1.0);
        let (est, lo, hi) = (l["estimate_ns"].as_f64().unwrap(), l["ci_low_ns"].as_f64().unwrap(), l["ci_high_ns"].as_f64().unwrap());
        assert!(lo <= est && est <= hi, "{l}");
        assert!(lo <= truth && truth <= hi, "p = {prob}: truth {truth} outside [{lo}, {hi}]");
        assert!((est / truth - 1.0).abs() < 0.3, "p = {prob}: {est} vs {truth}");
    }
    // The observed max is given beside it.
    assert_eq!(p["observed_max_ns"], merged(&v)["max_ns"]);
}

#[test]
fn pwcet_refuses_a_drifting_series() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(3);
    // Latency drifts up by 20 µs over the run: the peaks are all late.
    let vals: Vec<u64> = (0..200_000u64).map(|i| 20_000 + i / 10 + (rng.uniform() * 2000.0) as u64).collect();
    let r = run(host("a", "6.1"), entries("timer", "idle", &[vals], 100_000));
    let f = write(dir.path(), "a.json", &r);
    let v = report_json(&f, &[]);
    let p = &merged(&v)["pwcet"];
    assert_eq!(p["status"], "refused", "{p}");
    assert!(p["reason"].as_str().unwrap().contains("not stationary"), "{p}");
    // The terminal report says so and prints no estimate.
    let out = rtscope().arg("report").arg(&f).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("no estimate: not stationary"), "{s}");
}

#[test]
fn pwcet_refuses_bursts() {
    let dir = tempfile::tempdir().unwrap();
    let mut vals = gpd_series(200_000, 0.05, 1000.0, 5);
    // Every 1000 samples, a burst of 12 rising large latencies.
    for b in 0..200 {
        for k in 0..12 {
            vals[b * 1000 + 500 + k] = 60_000 + k as u64 * 8_000;
        }
    }
    let r = run(host("a", "6.1"), entries("timer", "idle", &[vals], 100_000));
    let f = write(dir.path(), "a.json", &r);
    let p = report_json(&f, &[])["runs"][0]["entries"][1]["pwcet"].clone();
    assert_eq!(p["status"], "refused", "{p}");
    assert!(p["reason"].as_str().unwrap().contains("not independent"), "{p}");
}

#[test]
fn pwcet_refuses_a_heavy_tail() {
    // ξ = 0.7: infinite variance, no bounded worst case (the report once
    // printed 1.31 s for a 3.75 ms max from such a tail).
    let dir = tempfile::tempdir().unwrap();
    let r = run(host("a", "6.1"), entries("timer", "idle", &[gpd_series(200_000, 0.7, 500.0, 11)], 100_000));
    let f = write(dir.path(), "a.json", &r);
    let p = report_json(&f, &[])["runs"][0]["entries"][1]["pwcet"].clone();
    assert_eq!(p["status"], "refused", "{p}");
    let reason = p["reason"].as_str().unwrap();
    let xi: f64 = reason.strip_prefix("heavy tail: the fitted shape ξ = ").and_then(|r| r.split(' ').next()).unwrap().parse().unwrap();
    assert!((xi - 0.7).abs() < 0.12, "the fit finds the shape: {reason}");
    // A lighter tail (ξ = 0.1, above) is estimated, within 10× its max.
    let r = run(host("a", "6.1"), entries("timer", "idle", &[gpd_series(200_000, 0.1, 2000.0, 99)], 100_000));
    let f = write(dir.path(), "b.json", &r);
    let v = report_json(&f, &[]);
    let p = &merged(&v)["pwcet"];
    assert_eq!(p["status"], "estimate", "{p}");
    let max = merged(&v)["max_ns"].as_f64().unwrap();
    assert!(p["levels"].as_array().unwrap().iter().all(|l| l["estimate_ns"].as_f64().unwrap() <= 10.0 * max), "{p}");
}

#[test]
fn pwcet_refuses_a_short_tail() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(host("a", "6.1"), entries("timer", "idle", &[gpd_series(1000, 0.1, 100.0, 1)], 1_000_000));
    let f = write(dir.path(), "a.json", &r);
    let p = report_json(&f, &[])["runs"][0]["entries"][1]["pwcet"].clone();
    assert_eq!(p["status"], "refused");
    assert!(p["reason"].as_str().unwrap().contains("tail too short"), "{p}");
}

#[test]
fn run_prints_deadline_misses() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.json");
    let out = rtscope().args(["run", "-D", "2s", "-i", "1000", "-t", "1", "--deadline", "100us", "--json"]).arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    // One unit per output: the deadline in the table's µs.
    // The line wraps at 80 columns when piped: read it with the wrapping undone.
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = flat.find("deadline 100.0 us, timer (idle):").map(|at| &flat[at..]).unwrap_or_else(|| panic!("{s}"));
    // The count printed equals the count in the written result's tail: the
    // tail keeps the largest samples, so it holds every sample over the
    // deadline as long as its smallest one is not over it (or it holds all).
    let r: rtscope::model::Run = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    let m = r.results.iter().find(|e| e.thread.is_none()).unwrap();
    let tail_min = m.tail.samples.iter().map(|t| t.latency().0).min().unwrap();
    assert!(
        tail_min <= 100_000 || m.tail.samples.len() as u64 == m.samples,
        "the tail ({} samples, smallest {tail_min} ns) does not reach down to the deadline",
        m.tail.samples.len()
    );
    let over = m.tail.samples.iter().filter(|t| t.latency().0 > 100_000).count();
    // A miss is a late sample or a missed period; both parts are printed.
    let want = format!(
        ": {} of {} periods missed the 100.0 us deadline ({over} late sample(s), {} missed period(s))",
        over as u64 + m.overruns,
        m.samples + m.overruns,
        m.overruns
    );
    assert!(line.starts_with(&format!("deadline 100.0 us, timer (idle){want}")), "{line} lacks {want}");
}

fn bad(args: &[&str], files: &[(&str, &[u8])], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (n, b) in files {
        std::fs::write(dir.path().join(n), b).unwrap();
    }
    let out_file = dir.path().join("out.html");
    let out = rtscope().current_dir(dir.path()).args(args).arg("-o").arg(&out_file).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    for e in expect {
        assert!(err.contains(e), "{args:?}: '{e}' not in: {err}");
    }
    assert!(!out_file.exists(), "nothing is written on bad input");
}

#[test]
fn bad_inputs_exit_2_with_a_clear_message() {
    let good = serde_json::to_vec(&run(host("a", "6.1"), vec![from_histogram("timer", "idle", &[(100, 1)])])).unwrap();
    let mut wrong_version: Value = serde_json::from_slice(&good).unwrap();
    wrong_version["schema_version"] = 99.into();
    let wrong_version = serde_json::to_vec(&wrong_version).unwrap();
    let mut empty: Value = serde_json::from_slice(&good).unwrap();
    empty["results"] = Value::Array(vec![]);
    let empty = serde_json::to_vec(&empty).unwrap();
    let truncated = &good[..good.len() / 2];

    bad(&["report", "x.json"], &[("x.json", b"hello, not json")], &["x.json", "not valid JSON"]);
    bad(&["report", "--format", "html", "t.json"], &[("t.json", truncated)], &["t.json", "not valid JSON"]);
    bad(&["report", "v.json"], &[("v.json", &wrong_version)], &["v.json", "schema_version 99"]);
    bad(&["report", "e.json"], &[("e.json", &empty)], &["e.json", "no probe results"]);
    bad(&["report", "missing.json"], &[], &["missing.json", "cannot read"]);
    bad(&["compare", "g.json", "x.json"], &[("g.json", &good), ("x.json", b"{}")], &["x.json", "no schema_version"]);
    bad(&["compare", "g.json", "g.json", "--name", "a,b,c"], &[("g.json", &good)], &["--name", "3 names given for 2"]);
    bad(&["report", "g.json", "--deadline", "-5us"], &[("g.json", &good)], &["-5us", "greater than zero"]);
    bad(&["report", "g.json", "--bins", "fast"], &[("g.json", &good)], &["fast"]);
    bad(&["compare", "g.json"], &[("g.json", &good)], &["RESULT"]);
}
