//! Importers through the real binary (`rtscope import --dry-run` prints the
//! converted schema v1 runs) and, for robustness, through the library with
//! property tests. Expected numbers are computed here from the fixture files
//! themselves, independently of the importers' code; the cyclictest JSON and
//! histogram fixtures come from the same cyclictest run, so their imports
//! must agree exactly.
//!
//! The fixtures in tests/fixtures/import/ are described in its README.md.

mod common;

use common::{fixture, merged, read_bins, u};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use proptest::prelude::*;
use serde_json::Value;

use rtscope::import::{self, FORMATS};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtscope"));
    c.env_remove("RTSCOPE_DB");
    c
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// `rtscope import FILE --dry-run ARGS`: the converted runs.
fn convert(path: &Path, args: &[&str]) -> Vec<Value> {
    let o = bin().arg("import").arg(path).arg("--dry-run").args(args).output().unwrap();
    assert!(o.status.success(), "import {} failed: {}", path.display(), String::from_utf8_lossy(&o.stderr));
    serde_json::Deserializer::from_slice(&o.stdout).into_iter::<Value>().map(|v| v.unwrap()).collect()
}

fn import_err(path: &Path, args: &[&str]) -> String {
    let o: Output = bin().arg("import").arg(path).arg("--dry-run").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "expected exit 2 for {}: {err}", path.display());
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn results(run: &Value) -> Vec<Value> {
    run["results"].as_array().unwrap().clone()
}

/// Thread `t`'s entry (only it copied: a run of 400 threads read thread by
/// thread must not copy the whole list each time).
fn thread(run: &Value, t: u64) -> Value {
    run["results"].as_array().unwrap().iter().find(|r| r["thread"].as_u64() == Some(t)).unwrap().clone()
}

/// The invariants of schema v1 every imported result must keep.
fn check_invariants(run: &Value) {
    assert_eq!(run["schema_version"], 1);
    assert!(run["imported_from"]["file_sha256"].as_str().unwrap().len() == 64);
    assert!(!run["fidelity"].as_array().unwrap().is_empty(), "imports always carry fidelity notes");
    for r in run["results"].as_array().unwrap() {
        let h = r["histogram"].as_array().unwrap();
        let sum: u64 = h.iter().map(|b| u(&b["count"])).sum();
        assert_eq!(sum, u(&r["samples"]), "histogram counts sum to samples: {r}");
        let mut prev_hi: Option<u64> = None;
        for b in h {
            assert!(u(&b["lo_ns"]) <= u(&b["hi_ns"]));
            if let Some(p) = prev_hi {
                assert!(u(&b["lo_ns"]) > p, "buckets are disjoint and sorted");
            }
            prev_hi = Some(u(&b["hi_ns"]));
        }
        assert!(u(&h[0]["lo_ns"]) <= u(&r["min_ns"]) && u(&r["min_ns"]) <= u(&h[0]["hi_ns"]));
        let last = &h[h.len() - 1];
        assert!(u(&last["lo_ns"]) <= u(&r["max_ns"]) && u(&r["max_ns"]) <= u(&last["hi_ns"]));
        for (_, p) in r["percentiles_ns"].as_object().unwrap() {
            assert!(u(p) >= u(&r["min_ns"]) && u(p) <= u(&r["max_ns"]));
        }
    }
}

#[test]
fn auto_detects_every_fixture() {
    let cases = [
        ("cyclictest.json", "cyclictest-json"),
        ("cyclictest-hist.txt", "cyclictest-hist"),
        ("oslat.json", "oslat-json"),
        ("rtla-timerlat-hist.txt", "rtla-timerlat-hist"),
        ("rtla-timerlat-hist-ns.txt", "rtla-timerlat-hist"),
        ("ptsematest.txt", "rt-tests-ipc"),
        ("svsematest.txt", "rt-tests-ipc"),
        ("pmqtest.txt", "rt-tests-ipc"),
        ("sigwaittest.txt", "rt-tests-ipc"),
        ("ptsematest-live.txt", "rt-tests-ipc"),
        ("xenomai-latency.txt", "xenomai-latency"),
        ("xenomai-negative.txt", "xenomai-latency"),
        ("rtai-latency.txt", "rtai-latency"),
        ("rtai-display.txt", "rtai-latency"),
        ("rtai-preempt.txt", "rtai-latency"),
        ("rtai-switches.txt", "rtai-latency"),
        ("seed001-idle.csv", "bins-csv"),
        ("seed001-disk.csv", "bins-csv"),
        ("seed001-network.csv", "bins-csv"),
        ("seed001-compute.csv", "bins-csv"),
        ("seed001-combined.csv", "bins-csv"),
    ];
    for (f, want) in cases {
        for run in convert(&fixture(f), &[]) {
            assert_eq!(run["imported_from"]["format"], want, "{f}");
            check_invariants(&run);
        }
    }
}

#[test]
fn cyclictest_json_and_histogram_text_of_the_same_run_agree() {
    // Both fixtures come from one `cyclictest -t 2 -l 2000 -h 100 --json=...` run.
    let j = &convert(&fixture("cyclictest.json"), &[])[0];
    let h = &convert(&fixture("cyclictest-hist.txt"), &[])[0];
    let src: Value = serde_json::from_str(&read("cyclictest.json")).unwrap();
    for t in 0..2u64 {
        let (a, b) = (thread(j, t), thread(h, t));
        let s = &src["thread"][t.to_string()];
        assert_eq!(u(&a["samples"]), u(&s["cycles"]));
        assert_eq!(u(&a["min_ns"]), u(&s["min"]) * 1000);
        assert_eq!(u(&a["max_ns"]), u(&s["max"]) * 1000);
        assert_eq!(u(&a["cpu"]), u(&s["cpu"]));
        for k in ["samples", "min_ns", "max_ns", "histogram", "percentiles_ns"] {
            assert_eq!(a[k], b[k], "thread {t}: {k} differs between the JSON and the -h text");
        }
        // The overflow bucket starts at the -h limit (100 µs) and holds
        // cycles − Σ histogram samples.
        let in_hist: u64 = s["histogram"].as_object().unwrap().values().map(u).sum();
        let hist = a["histogram"].as_array().unwrap();
        let over = hist.last().unwrap();
        assert_eq!(u(&over["lo_ns"]), 100_000);
        assert_eq!(u(&over["count"]), u(&s["cycles"]) - in_hist);
        // Each in-range bucket is one µs wide with the JSON's count.
        for (k, c) in s["histogram"].as_object().unwrap() {
            let lo = k.parse::<u64>().unwrap() * 1000;
            let b = hist.iter().find(|b| u(&b["lo_ns"]) == lo).unwrap();
            assert_eq!((u(&b["hi_ns"]), u(&b["count"])), (lo + 999, u(c)));
        }
    }
    // Merged entry = both threads.
    let m = &merged(j)[0];
    assert_eq!(u(&m["samples"]), u(&thread(j, 0)["samples"]) + u(&thread(j, 1)["samples"]));
    assert_eq!(j["host"]["hostname"], src["sysinfo"]["nodename"]);
    assert_eq!(j["host"]["kernel_release"], src["sysinfo"]["release"]);
    assert_eq!(j["tool"]["version"], src["rt_test_version:"]);
    assert!(j["fidelity"].to_string().contains("overflows"));
}

#[test]
fn oslat_last_bucket_reaches_the_max() {
    let r = &convert(&fixture("oslat.json"), &[])[0];
    let src: Value = serde_json::from_str(&read("oslat.json")).unwrap();
    let s = &src["thread"]["0"];
    let t = thread(r, 0);
    let total: u64 = s["histogram"].as_object().unwrap().values().map(u).sum();
    assert_eq!(u(&t["samples"]), total);
    assert_eq!(u(&t["max_ns"]), u(&s["max"]) * 1000);
    let h = t["histogram"].as_array().unwrap();
    assert_eq!(u(&h.last().unwrap()["hi_ns"]), u(&s["max"]) * 1000);
    assert_eq!(t["probe"], "noise");
}

/// The last "#A -> #B, Min a, Cur c, Avg v, Max m" line per pair, and the
/// last Cycles of each receiver, read with plain string handling.
fn ipc_expect(text: &str) -> Vec<(u64, u64, u64, u64)> {
    let mut pairs = std::collections::BTreeMap::new();
    let mut cycles = std::collections::BTreeMap::new();
    for l in text.lines() {
        // Drop the redraws' cursor movements ("ESC[4A"); splitting at the
        // 'A' would cut every pair line at its "Avg".
        let l = l.replace("\u{1b}[4A", "");
        let l = l.trim();
        if !l.starts_with('#') {
            continue;
        }
        if l.contains("->") {
            let nums: Vec<i64> = l.split(',').skip(1).map(|f| f.split_whitespace().last().unwrap().parse().unwrap()).collect();
            let a: u64 = l[1..l.find(' ').unwrap()].parse().unwrap();
            pairs.insert(a, (nums[0], nums[2], nums[3]));
        } else {
            for part in l.split(';') {
                if let Some(c) = part.split("Cycles").nth(1) {
                    let id: u64 = part.trim().trim_start_matches('#').split(':').next().unwrap().parse().unwrap();
                    cycles.insert(id, c.trim().parse::<u64>().unwrap());
                }
            }
        }
    }
    pairs.into_iter().map(|(a, (mi, av, ma))| (cycles[&a], mi as u64 * 1000, av as u64 * 1000, ma as u64 * 1000)).collect()
}

#[test]
fn rt_tests_ipc_pairs_are_summary_only() {
    for (f, probe, variant) in [
        ("ptsematest.txt", "sem", "mutex/same-cpu"),
        ("svsematest.txt", "sem", "sysv/same-cpu"),
        ("pmqtest.txt", "mq", "oneway"),
        ("sigwaittest.txt", "signal", "pthread_kill"),
        ("ptsematest-live.txt", "sem", "mutex/same-cpu"),
    ] {
        let run = &convert(&fixture(f), &[])[0];
        let want = ipc_expect(&read(f));
        let threads = run["results"].as_array().unwrap().iter().filter(|r| !r["thread"].is_null()).count();
        assert!(!want.is_empty() && threads == want.len(), "{f}: {} pairs read by the test, {threads} imported", want.len());
        assert_eq!(run["tool"]["name"], if f.starts_with("pmq") { "pmqtest" } else { f.split(['.', '-']).next().unwrap() });
        for (k, (cycles, min, avg, max)) in want.iter().enumerate() {
            let r = thread(run, k as u64);
            assert_eq!(r["probe"], probe);
            assert_eq!(r["variant"], variant, "the native probe's variant (both tasks on one CPU with -a)");
            assert_eq!((u(&r["samples"]), u(&r["min_ns"]), u(&r["max_ns"])), (*cycles, *min, *max), "{f} pair {k}");
            assert_eq!(r["mean_ns"].as_f64().unwrap(), *avg as f64);
            assert!(r["percentiles_ns"].as_object().unwrap().is_empty(), "summary-only: percentiles unknown");
            let h = r["histogram"].as_array().unwrap();
            assert_eq!(h.len(), 1);
            assert_eq!((u(&h[0]["lo_ns"]), u(&h[0]["hi_ns"]), u(&h[0]["count"])), (*min, *max, *cycles));
        }
        assert!(run["fidelity"].to_string().contains("summary only"));
    }
}

/// The columns of a real `rtla timerlat hist` capture, read here by plain
/// splitting: (column names, Index rows, summary rows by label).
struct RtlaTable {
    cols: Vec<String>,
    rows: Vec<(u64, Vec<u64>)>,
    summary: std::collections::HashMap<String, Vec<u64>>,
}

fn rtla_table(name: &str) -> RtlaTable {
    let text = read(name);
    let mut t = RtlaTable { cols: Vec::new(), rows: Vec::new(), summary: Default::default() };
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let mut toks = l.split_whitespace();
        let first = toks.next().unwrap();
        let rest: Vec<&str> = toks.collect();
        if first == "Index" {
            t.cols = rest.iter().map(|c| c.to_string()).collect();
        } else if let Some(label) = first.strip_suffix(':') {
            t.summary.insert(label.to_string(), rest.iter().map(|x| x.parse().unwrap()).collect());
        } else {
            t.rows.push((first.parse().unwrap(), rest.iter().map(|x| x.parse().unwrap()).collect()));
        }
    }
    t
}

/// Checks the import of a real rtla capture against its own table: per
/// column samples, min, max and mean from the summary rows (in `unit_ns`),
/// the bucket counts summing exactly (rows + over = count), every bucket
/// `width` units wide, and the over: bucket last. Returns the total over.
fn check_rtla_capture(name: &str, unit_ns: u64, width: u64) -> u64 {
    let run = &convert(&fixture(name), &[])[0];
    let t = rtla_table(name);
    let (count, over, min, avg, max) = (&t.summary["count"], &t.summary["over"], &t.summary["min"], &t.summary["avg"], &t.summary["max"]);
    for (k, col) in t.cols.iter().enumerate() {
        let (kind, cpu) = col.split_once('-').unwrap();
        let variant = if kind == "IRQ" { "irq" } else { "thread" };
        let cpu: u64 = cpu.parse().unwrap();
        let r = results(run)
            .into_iter()
            .find(|r| r["variant"] == variant && r["cpu"].as_u64() == Some(cpu) && !r["thread"].is_null())
            .unwrap_or_else(|| panic!("{name}: no {variant} result for CPU {cpu}"));
        let in_rows: u64 = t.rows.iter().map(|(_, c)| c[k]).sum();
        assert_eq!(in_rows + over[k], count[k], "{name} {col}: rows + over: = count:");
        assert_eq!(u(&r["samples"]), count[k], "{name} {col}");
        assert_eq!(u(&r["min_ns"]), min[k] * unit_ns, "{name} {col}");
        assert_eq!(u(&r["max_ns"]), max[k] * unit_ns, "{name} {col}");
        assert_eq!(r["mean_ns"].as_f64().unwrap(), (avg[k] * unit_ns) as f64, "{name} {col}");
        let h = r["histogram"].as_array().unwrap();
        let rows: Vec<(u64, u64)> = t.rows.iter().filter(|(_, c)| c[k] > 0).map(|(i, c)| (*i, c[k])).collect();
        assert_eq!(h.len(), rows.len() + usize::from(over[k] > 0), "{name} {col}: one bucket per non-zero row, plus over:");
        for (b, (idx, n)) in h.iter().zip(&rows) {
            let want = (idx * unit_ns, (idx + width) * unit_ns - 1, *n);
            assert_eq!((u(&b["lo_ns"]), u(&b["hi_ns"]), u(&b["count"])), want, "{name} {col}: row {idx}");
        }
        if over[k] > 0 {
            let last = h.last().unwrap();
            let end = (t.rows.last().unwrap().0 + width) * unit_ns;
            assert_eq!((u(&last["lo_ns"]), u(&last["hi_ns"]), u(&last["count"])), (end.max(min[k] * unit_ns), max[k] * unit_ns, over[k]), "{name} {col}");
        }
    }
    assert_eq!(merged(run).len(), 2, "{name}: one merged entry per variant");
    let total_over: u64 = over.iter().sum();
    if total_over > 0 {
        assert!(run["fidelity"].to_string().contains(&format!("{total_over} overflows")), "{}", run["fidelity"]);
    }
    total_over
}

#[test]
fn rtla_columns_become_irq_and_thread_variants_with_the_over_row() {
    // rtla 6.1 on Debian's 6.1 PREEMPT_RT kernel, µs, two CPUs (README.md).
    let over = check_rtla_capture("rtla-timerlat-hist.txt", 1000, 1);
    assert!(over > 0, "the capture has over: samples, so the overflow bucket is exercised");
    let run = &convert(&fixture("rtla-timerlat-hist.txt"), &[])[0];
    assert_eq!(rtla_table("rtla-timerlat-hist.txt").cols.len(), 4);
    assert!(run["fidelity"].to_string().contains("µs resolution"));
}

#[test]
fn rtla_nanoseconds_with_a_bucket_size() {
    // The same rtla with -n -b 100 -E 10000: Index steps of 100 ns, rows with
    // only zeros left out (so the first rows are far apart).
    check_rtla_capture("rtla-timerlat-hist-ns.txt", 1, 100);
    let run = &convert(&fixture("rtla-timerlat-hist-ns.txt"), &[])[0];
    let f = run["fidelity"].to_string();
    assert!(f.contains("100 ns buckets") && !f.contains("µs resolution"), "{f}");
}

#[test]
fn xenomai_histogram_summary_and_seconds() {
    let run = &convert(&fixture("xenomai-latency.txt"), &[])[0];
    let r = &merged(run)[0];
    let text = read("xenomai-latency.txt");
    let rts: Vec<&str> = text.lines().find(|l| l.starts_with("RTS|")).unwrap().split('|').map(str::trim).collect();
    let ns = |s: &str| (s.parse::<f64>().unwrap() * 1000.0).round() as u64;
    assert_eq!(u(&r["min_ns"]), ns(rts[1]));
    assert_eq!(u(&r["max_ns"]), ns(rts[3]));
    assert_eq!(r["mean_ns"].as_f64().unwrap(), ns(rts[2]) as f64);
    let hss: u64 = text.lines().find(|l| l.starts_with("HSS|") && l.contains("avg")).unwrap().split('|').nth(2).unwrap().trim().parse().unwrap();
    assert_eq!(u(&r["samples"]), hss);
    let rtd = text.lines().filter(|l| l.starts_with("RTD|")).count();
    let per_second = thread_or_merged_series(run);
    assert_eq!(per_second, rtd);
    assert_eq!(run["plan"]["interval_ns"], 100_000);
}

fn thread_or_merged_series(run: &Value) -> usize {
    results(run).iter().map(|r| r["per_second"].as_array().unwrap().len()).max().unwrap()
}

#[test]
fn rtai_windows_negative_minimum_is_clamped_and_noted() {
    let run = &convert(&fixture("rtai-latency.txt"), &[])[0];
    let text = read("rtai-latency.txt");
    let rtd: Vec<Vec<i64>> =
        text.lines().filter(|l| l.starts_with("RTD|")).map(|l| l.split('|').skip(1).map(|x| x.trim().parse().unwrap()).collect()).collect();
    let r = &merged(run)[0];
    // period 100000 ns, 1 s windows: 10000 samples per window.
    assert_eq!(u(&r["samples"]), 10_000 * rtd.len() as u64);
    assert_eq!(u(&r["max_ns"]), rtd.iter().map(|w| w[3]).max().unwrap() as u64);
    assert_eq!(u(&r["min_ns"]), 0, "the negative minimum is clamped to 0");
    assert_eq!(u(&r["overruns"]), rtd.iter().map(|w| w[5]).max().unwrap() as u64);
    let min = rtd.iter().map(|w| w[0]).min().unwrap();
    assert!(run["fidelity"].to_string().contains(&format!("down to {min} ns")));
    assert_eq!(r["signed"]["min_ns"].as_i64().unwrap(), min, "the signed minimum is kept");
    assert_eq!(r["signed"]["clamped"], true);
    // One task, so one result (thread null), with one per_second entry per window.
    assert_eq!(results(run).len(), 1);
    let secs = r["per_second"].as_array().unwrap();
    assert_eq!(secs.len(), rtd.len());
    for (s, w) in secs.iter().zip(&rtd) {
        assert_eq!(u(&s["max_ns"]), w[3] as u64);
        assert_eq!(u(&s["count"]), 10_000);
    }
}

/// A Xenomai log with negative latencies (the timer fired early): the
/// signed min and mean survive import in `signed` (clamped: true), and
/// `report` and `compare` show them, not the 0 the unsigned fields hold.
/// The RTD| rows of an RTAI fixture, as numbers.
fn rtd_rows(name: &str) -> Vec<Vec<i64>> {
    read(name).lines().filter(|l| l.starts_with("RTD|")).map(|l| l.split('|').skip(1).map(|x| x.trim().parse().unwrap()).collect()).collect()
}

#[test]
fn rtai_display_without_period_imports_with_an_unknown_count() {
    // `display` never prints "# period": before, every real display log was refused.
    let f = fixture("rtai-display.txt");
    let rtd = rtd_rows("rtai-display.txt");
    let run = &convert(&f, &[])[0];
    let r = &merged(run)[0];
    assert_eq!(r["samples_unknown"], true);
    assert_eq!(u(&r["samples"]), rtd.len() as u64, "one per window: a lower bound");
    assert_eq!(u(&r["interval_ns"]), 0, "the period is unknown");
    assert_eq!(u(&r["max_ns"]), rtd.iter().map(|w| w[4]).max().unwrap() as u64);
    assert_eq!(r["signed"]["min_ns"].as_i64().unwrap(), rtd.iter().map(|w| w[1]).min().unwrap());
    assert_eq!(u(&r["overruns"]), rtd.iter().map(|w| w[5]).max().unwrap() as u64);
    assert!(run["fidelity"].to_string().contains("sample count unknown"), "{}", run["fidelity"]);
    // With --period the count is derived: 1 s windows of 200 µs periods.
    let run = &convert(&f, &["--period", "200us"])[0];
    let r = &merged(run)[0];
    assert!(r.get("samples_unknown").is_none(), "not written when the count is known");
    assert_eq!(u(&r["samples"]), 5000 * rtd.len() as u64);
    assert_eq!(u(&r["interval_ns"]), 200_000);
    // The report shows the count as unknown, not as a number of samples.
    let dir = tempfile::tempdir().unwrap();
    let o = bin().args(["import", "--db"]).arg(dir.path().join("h.db")).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("sample count unknown"));
    let o = bin().args(["show", "1", "--db"]).arg(dir.path().join("h.db")).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("unknown (≥{})", rtd.len())), "{out}");
}

#[test]
fn rtai_period_flag_is_validated() {
    let f = fixture("rtai-display.txt");
    for bad in ["0", "-5us", "abc", "10 parsecs"] {
        let o = bin().arg("import").arg(&f).args(["--dry-run", "--period", bad]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "--period {bad}");
    }
    assert!(import_err(&f, &["--period", "2s"]).contains("longer than the 1 s window"));
    // The file's own period wins only when they agree.
    let err = import_err(&fixture("rtai-latency.txt"), &["--period", "50us"]);
    assert!(err.contains("--period says 50000 ns"), "{err}");
    assert_eq!(u(&merged(&convert(&fixture("rtai-latency.txt"), &["--period", "100us"])[0])[0]["samples"]), 40_000);
    // A format that records its period refuses the flag.
    let err = import_err(&fixture("cyclictest.json"), &["--period", "1ms"]);
    assert!(err.contains("--period applies only to rtai-latency"), "{err}");
}

#[test]
fn rtai_preempt_test_becomes_timer_and_jitter_entries() {
    let rtd = rtd_rows("rtai-preempt.txt");
    let run = &convert(&fixture("rtai-preempt.txt"), &["--period", "100us"])[0];
    check_invariants(run);
    let rs = results(run);
    let find = |probe: &str, variant: &str| rs.iter().find(|r| r["probe"] == probe && r["variant"] == variant).unwrap().clone();
    let lat = find("timer", "preempt");
    assert_eq!(u(&lat["samples"]), 10_000 * rtd.len() as u64);
    assert_eq!(u(&lat["max_ns"]), rtd.iter().map(|w| w[2]).max().unwrap() as u64);
    assert_eq!(lat["signed"]["min_ns"].as_i64().unwrap(), rtd.iter().map(|w| w[0]).min().unwrap());
    for (variant, k) in [("fast", 3), ("slow", 4)] {
        let j = find("jitter", variant);
        assert_eq!(u(&j["samples"]), rtd.len() as u64, "one per window");
        assert_eq!(u(&j["min_ns"]), rtd.iter().map(|w| w[k]).min().unwrap() as u64);
        assert_eq!(u(&j["max_ns"]), rtd.iter().map(|w| w[k]).max().unwrap() as u64);
        let mean = rtd.iter().map(|w| w[k] as f64).sum::<f64>() / rtd.len() as f64;
        assert!((j["mean_ns"].as_f64().unwrap() - mean).abs() < 1e-6);
    }
    assert_eq!(rs.len(), 3);
    assert_eq!(run["tool"]["name"], "rtai preempt");
}

#[test]
fn rtai_switches_test_becomes_one_switch_entry_per_kind() {
    let text = read("rtai-switches.txt");
    let lines: Vec<(u64, u64)> = text
        .lines()
        .filter(|l| l.contains("SWITCH TIME"))
        .map(|l| {
            let num = |key: &str| -> u64 { l.split(key).nth(1).unwrap().split_whitespace().next().unwrap().trim_end_matches(',').parse().unwrap() };
            (num("SWITCHES"), num("SWITCH TIME"))
        })
        .collect();
    let run = &convert(&fixture("rtai-switches.txt"), &[])[0];
    check_invariants(run);
    let rs = results(run);
    assert_eq!(rs.len(), lines.len());
    let variants: Vec<&str> = rs.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["susp-res", "sem-signal-wait", "rpc-rcv-ret"]);
    for (r, (switches, ns)) in rs.iter().zip(&lines) {
        assert_eq!(r["probe"], "switch");
        assert_eq!(u(&r["samples"]), *switches);
        assert_eq!((u(&r["min_ns"]), u(&r["max_ns"])), (*ns, *ns));
        assert!(r["percentiles_ns"].as_object().unwrap().is_empty(), "mean only: percentiles unknown");
    }
}

#[test]
fn an_import_without_tail_samples_is_not_told_to_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let o = bin().args(["import", "--db"]).arg(&db).arg(fixture("cyclictest.json")).output().unwrap();
    assert!(o.status.success());
    let json = dir.path().join("r.json");
    let o = bin().args(["export", "--db"]).arg(&db).args(["1", "-o"]).arg(&json).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin().arg("report").arg(&json).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!out.contains("rerun"), "an import cannot be rerun: {out}");
    assert!(out.contains("imported from cyclictest"), "{out}");
}

#[test]
fn negative_latencies_keep_their_sign_through_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let run = &convert(&fixture("xenomai-negative.txt"), &[])[0];
    let r = &merged(run)[0];
    assert_eq!(r["signed"]["min_ns"], -1576);
    assert_eq!(r["signed"]["mean_ns"].as_f64().unwrap(), -405.0);
    assert_eq!(r["signed"]["max_ns"], 5047);
    assert_eq!(r["signed"]["clamped"], true);
    assert_eq!(u(&r["min_ns"]), 0, "the unsigned min clamps");
    assert!(run["fidelity"].to_string().contains("signed"), "{}", run["fidelity"]);
    for f in ["xenomai-latency.txt", "xenomai-negative.txt"] {
        let o = bin().env("RTSCOPE_DB", &db).args(["import"]).arg(fixture(f)).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = bin().env("RTSCOPE_DB", &db).args(["report", "--no-pwcet", "--format", "md", "2"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("| -1.6 |") && text.contains("-0.4±"), "report must show the signed min and mean:\n{text}");
    let o = bin().env("RTSCOPE_DB", &db).args(["compare", "--format", "json", "1", "2"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let means: Vec<f64> = v["rows"][0]["cells"].as_array().unwrap().iter().map(|c| c["mean_ns"].as_f64().unwrap()).collect();
    assert_eq!(means, vec![1403.0, -405.0], "{}", v["rows"][0]);
}

/// A live rt-tests log cut after a refresh's status lines but before its
/// pair lines: the pairs are imported with the cycles of their own (last
/// complete) refresh, and the fidelity says the file is truncated.
#[test]
fn an_ipc_log_cut_inside_a_refresh_is_noted_and_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let text = read("ptsematest-live.txt");
    let lines: Vec<&str> = text.lines().collect();
    // Drop the last refresh's two pair lines (and the cursor-movement line after them).
    assert!(lines[lines.len() - 3].starts_with("#1 -> #0"), "{:?}", &lines[lines.len() - 3..]);
    let cut = lines[..lines.len() - 3].join("\n") + "\n";
    let path = write_tmp(dir.path(), "ptsematest-cut.txt", cut.as_bytes());
    let whole = &convert(&fixture("ptsematest-live.txt"), &[])[0];
    let run = &convert(&path, &[])[0];
    assert!(run["fidelity"].to_string().contains("truncated: the file ends inside a refresh"), "{}", run["fidelity"]);
    assert!(!whole["fidelity"].to_string().contains("truncated"), "{}", whole["fidelity"]);
    // The cycles are those of the refresh the pair lines belong to: fewer than the whole file's.
    let (a, b) = (u(&thread(run, 0)["samples"]), u(&thread(whole, 0)["samples"]));
    assert!(a < b, "cut {a} vs whole {b}");
    let statuses: Vec<&&str> = lines.iter().filter(|l| l.contains("#1: ID")).collect();
    let status = statuses[statuses.len() - 2].rsplit("Cycles").next().unwrap().trim().parse::<u64>().unwrap();
    assert_eq!(a, status, "the previous refresh's Cycles");
}

/// A 16 MB generated histogram (one row per µs, 2 threads) imports with
/// every sample and its min/max, and is stored folded to 3 significant
/// digits: bounded buckets, and the fidelity note says so.
#[test]
fn a_huge_histogram_is_folded_without_losing_a_sample() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.txt");
    let rows = 700_000u64;
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(f, "# Histogram").unwrap();
        for i in 0..rows {
            writeln!(f, "{i:07} {:06} {:06}", 1, i % 3).unwrap();
        }
        let t2: u64 = (0..rows).map(|i| i % 3).sum();
        writeln!(f, "# Total: {rows:09} {t2:09}\n# Min Latencies: 00000 00001\n# Avg Latencies: 00001 00001").unwrap();
        writeln!(f, "# Max Latencies: {:05} {:05}\n# Histogram Overflows: 00000 00000", rows - 1, rows - 1).unwrap();
    }
    let run = &convert(&path, &[])[0];
    let t0 = thread(run, 0);
    assert_eq!(u(&t0["samples"]), rows);
    assert_eq!(hist_count(&t0), rows);
    assert_eq!((u(&t0["min_ns"]), u(&t0["max_ns"])), (0, (rows - 1) * 1000));
    let n = t0["histogram"].as_array().unwrap().len();
    assert!(n < 25_000, "{n} buckets for {rows} rows");
    assert!(run["fidelity"].to_string().contains("3 significant digits"), "{}", run["fidelity"]);
    check_invariants(run);
}

fn hist_count(r: &Value) -> u64 {
    r["histogram"].as_array().unwrap().iter().map(|b| u(&b["count"])).sum()
}

/// Read a bins-csv fixture: (lo, hi, counts per column) and the column names.

#[test]
fn seed001_bins_csv_keep_every_count_per_bin() {
    for table in ["idle", "disk", "network", "compute", "combined"] {
        let f = format!("seed001-{table}.csv");
        let (names, rows) = read_bins(&f);
        let runs = convert(&fixture(&f), &["--phase", table, "--probe", "irq"]);
        assert_eq!(runs.len(), names.len());
        for (k, name) in names.iter().enumerate() {
            let run = runs.iter().find(|r| r["host"]["hostname"] == name.as_str()).unwrap();
            let r = &results(run)[0];
            assert_eq!((r["probe"].as_str().unwrap(), r["phase"].as_str().unwrap()), ("irq", table));
            let want: Vec<(u64, u64, u64)> = rows.iter().filter(|row| row.2[k] > 0).map(|row| (row.0, row.1 - 1, row.2[k])).collect();
            let got: Vec<(u64, u64, u64)> = r["histogram"].as_array().unwrap().iter().map(|b| (u(&b["lo_ns"]), u(&b["hi_ns"]), u(&b["count"]))).collect();
            assert_eq!(got, want, "{f}: {name}");
        }
    }
    // --name picks one column.
    let one = convert(&fixture("seed001-idle.csv"), &["--name", "VxWorks 6.8"]);
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["imported_from"]["system"], "VxWorks 6.8");
    let err = import_err(&fixture("seed001-idle.csv"), &["--name", "QNX"]);
    assert!(err.contains("Linux 3.10") && err.contains("VxWorks 6.8"), "{err}");
}

fn write_tmp(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn bad_files_exit_2_naming_file_line_and_expectation() {
    let dir = tempfile::tempdir().unwrap();
    // Unrecognised content lists the formats.
    let p = write_tmp(dir.path(), "notes.txt", b"hello\nworld\n");
    let err = import_err(&p, &[]);
    assert!(err.contains("notes.txt") && err.contains("cyclictest-json") && err.contains("bins-csv"), "{err}");

    // Negative count in bins-csv: line 3.
    let p = write_tmp(dir.path(), "neg.csv", b"bin_lo_ns,bin_hi_ns,A\n0,1000,5\n1000,2000,-3\n");
    let err = import_err(&p, &[]);
    assert!(err.contains("neg.csv") && err.contains("line 3") && err.contains("negative"), "{err}");

    // Huge number.
    let p = write_tmp(dir.path(), "huge.csv", b"bin_lo_ns,bin_hi_ns,A\n0,1000,99999999999999999999999\n");
    let err = import_err(&p, &[]);
    assert!(err.contains("line 2") && err.contains("too large"), "{err}");

    // Overlapping bins.
    let p = write_tmp(dir.path(), "overlap.csv", b"bin_lo_ns,bin_hi_ns,A\n0,1000,1\n500,2000,1\n");
    let err = import_err(&p, &[]);
    assert!(err.contains("line 3") && err.contains("overlap"), "{err}");

    // Not UTF-8.
    let p = write_tmp(dir.path(), "latin1.txt", b"RTS|  \xe9\xff 1.0\n");
    let err = import_err(&p, &[]);
    assert!(err.contains("latin1.txt") && err.contains("UTF-8") && err.contains("line 1"), "{err}");

    // Truncated: the first half of each text fixture with a footer.
    for (f, fmt) in [
        ("cyclictest-hist.txt", "cyclictest-hist"),
        ("xenomai-latency.txt", "xenomai-latency"),
        ("rtla-timerlat-hist.txt", "rtla-timerlat-hist"),
        ("rtla-timerlat-hist-ns.txt", "rtla-timerlat-hist"),
    ] {
        let text = read(f);
        let cut = &text[..text.len() / 2];
        let p = write_tmp(dir.path(), &format!("cut-{f}"), cut.as_bytes());
        let err = import_err(&p, &["--format", fmt]);
        assert!(err.contains(&format!("cut-{f}")) && (err.contains("truncated") || err.contains("expected")), "{f}: {err}");
    }
    // Truncated JSON: serde's line number.
    let text = read("cyclictest.json");
    let p = write_tmp(dir.path(), "cut.json", &text.as_bytes()[..text.len() / 2]);
    let err = import_err(&p, &["--format", "cyclictest-json"]);
    assert!(err.contains("cut.json") && err.contains("line ") && err.contains("not valid JSON"), "{err}");

    // Histogram count that disagrees with # Total.
    let bad = read("cyclictest-hist.txt").replacen("000007 000033", "000007 000034", 1);
    let p = write_tmp(dir.path(), "total.txt", bad.as_bytes());
    let err = import_err(&p, &[]);
    assert!(err.contains("# Total"), "{err}");
}

#[test]
fn rtscope_result_files_import_as_themselves() {
    // A schema v1 file made by converting a fixture, then imported back: the
    // stored text is the file, so export gives the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let o = bin().args(["import", "--dry-run"]).arg(fixture("pmqtest.txt")).output().unwrap();
    let p = write_tmp(dir.path(), "r.json", &o.stdout);
    let db = dir.path().join("db");
    let o = bin().env("RTSCOPE_DB", &db).arg("import").arg(&p).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin().env("RTSCOPE_DB", &db).args(["export", "1"]).output().unwrap();
    assert_eq!(o.stdout, std::fs::read(&p).unwrap());
}

// ---- robustness: no input makes a parser panic ----

fn all_fixture_texts() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    v.sort();
    v
}

/// Parse with every format, and detection; only "no panic" is asserted
/// here — the error content is checked in the tests above.
fn parse_everything(text: &str) {
    let _ = import::detect(text);
    let _ = import::detect_head(text, false);
    for &f in FORMATS {
        if !f.stored_as_is() {
            // What parses is converted too: the conversion never panics either.
            if let Ok(parsed) = import::parse(f, text, "x.txt") {
                for p in parsed {
                    let ctx = import::Context {
                        format: f,
                        file: "x.txt".into(),
                        file_sha256: "0".repeat(64),
                        file_stem: "x".into(),
                        file_mtime: "2026-01-01T00:00:00Z".into(),
                        phase: "idle".into(),
                        probe: None,
                        name: None,
                    };
                    let _ = import::build_run(p, &ctx);
                }
            }
        }
    }
}

/// Mutations of a valid file: cut it, splice bytes in, replace numbers by
/// huge or negative ones, duplicate or drop lines.
fn mutate(text: &str, op: u8, at: usize, junk: &str) -> String {
    let at = if text.is_empty() { 0 } else { at % text.len() };
    let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    match op % 6 {
        0 => text[..at].to_string(),
        1 => format!("{}{junk}{}", &text[..at], &text[at..]),
        2 => text.replacen(|c: char| c.is_ascii_digit(), "99999999999999999999999", 1 + at % 5),
        3 => text.replacen(' ', " -", 1 + at % 7),
        4 => {
            let lines: Vec<&str> = text.lines().collect();
            let k = if lines.is_empty() { 0 } else { at % lines.len() };
            lines.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, l)| *l).collect::<Vec<_>>().join("\n")
        }
        _ => text.replace('|', &junk.chars().take(2).collect::<String>()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic_on_random_text(s in "\\PC{0,400}") {
        parse_everything(&s);
    }

    #[test]
    fn parsers_never_panic_on_line_soup(lines in proptest::collection::vec(
        prop_oneof![
            Just("# Histogram".to_string()), Just("# Max Latencies: 5".to_string()), Just("RTS| 1.0| 2| x".to_string()),
            Just("HSD|    avg|   1 -  2 |  5".to_string()), Just("Index IRQ-000 Thr-000".to_string()), Just("over: 1 2".to_string()),
            Just("#1 -> #0, Min 3, Cur 4, Avg 4, Max 2".to_string()), Just("bin_lo_ns,bin_hi_ns,A".to_string()),
            Just("RTH|    lat min|    ovl min|    lat avg|    lat max|    ovl max|   overruns".to_string()),
            "[0-9 ,|:#-]{0,40}",
        ], 0..30)) {
        parse_everything(&lines.join("\n"));
    }

    #[test]
    fn parsers_never_panic_on_mutated_fixtures(k in 0usize..64, op in 0u8..6, at in 0usize..100_000, junk in "\\PC{0,12}") {
        let texts = all_fixture_texts();
        let t = &texts[k % texts.len()];
        parse_everything(&mutate(t, op, at, &junk));
    }

    #[test]
    fn result_json_reader_never_panics(op in 0u8..6, at in 0usize..100_000, junk in "\\PC{0,12}") {
        // A real converted result, mutated, through store::json::read_run.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let run = {
            let mut p = import::parse(import::ipc::FORMAT, &read("ptsematest.txt"), "ptsematest.txt").unwrap();
            let ctx = import::Context {
                format: import::ipc::FORMAT, file: "f".into(), file_sha256: "0".repeat(64), file_stem: "f".into(),
                file_mtime: "2026-01-01T00:00:00Z".into(), phase: "idle".into(), probe: None, name: None,
            };
            import::build_run(p.remove(0), &ctx).unwrap()
        };
        let text = serde_json::to_string_pretty(&run).unwrap();
        std::fs::write(&path, mutate(&text, op, at, &junk)).unwrap();
        let _ = rtscope::store::json::read_run(&path);
    }
}

/// Path → documented field names, from the `## Path: /x` tables of docs/schema.md.
fn documented_fields() -> std::collections::HashMap<String, Vec<String>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema.md")).unwrap();
    let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(p) = line.strip_prefix("## Path: ") {
            current = Some(p.trim().to_string());
            out.entry(p.trim().to_string()).or_default();
        } else if line.starts_with("## ") {
            current = None;
        } else if let Some(path) = &current {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() >= 5 && cells[1].starts_with('`') {
                out.get_mut(path).unwrap().push(cells[1].trim_matches('`').to_string());
            }
        }
    }
    out
}

fn walk(v: &Value, path: &str, doc: &std::collections::HashMap<String, Vec<String>>, missing: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            // Maps keyed by data (percentiles) are documented as one `map` field.
            let Some(fields) = doc.get(if path.is_empty() { "/" } else { path }) else { return };
            for (k, child) in m {
                if !fields.contains(k) {
                    missing.push(format!("{}/{k}", path));
                }
                walk(child, &format!("{path}/{k}"), doc, missing);
            }
        }
        Value::Array(a) => {
            for child in a {
                walk(child, &format!("{path}[]"), doc, missing);
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_of_imported_runs_is_documented() {
    let doc = documented_fields();
    assert!(doc.contains_key("/imported_from"), "docs/schema.md documents /imported_from");
    let mut missing = Vec::new();
    for f in ["cyclictest.json", "oslat.json", "rtla-timerlat-hist.txt", "pmqtest.txt", "xenomai-latency.txt", "rtai-latency.txt", "seed001-idle.csv"] {
        for run in convert(&fixture(f), &[]) {
            walk(&run, "", &doc, &mut missing);
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "fields not documented in docs/schema.md: {missing:?}");
}

/// Runs `cmd`, failing the test if it has not ended within 60 s (a read
/// that blocks on a FIFO would hang the suite otherwise).
fn within_a_minute(mut cmd: std::process::Command) -> Output {
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("still reading after 60 s: {cmd:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A FIFO, /dev/zero and a directory are refused (exit 2, named) instead of
/// blocking or reading forever — by import, by report/compare (result
/// files) and as a scenario file; a file over the size limit is refused
/// unless --max-size lifts it.
#[test]
fn non_regular_and_oversized_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for input in [fifo.clone(), "/dev/zero".into(), dir.path().to_path_buf()] {
        let path = input.to_str().unwrap();
        for args in [vec!["import", "--dry-run", path], vec!["report", path], vec!["run", path, "--dry-run"]] {
            let mut c = bin();
            c.args(&args).env("RTSCOPE_DB", dir.path().join("h.db"));
            let o = within_a_minute(c);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(path) && (err.contains("not a regular file") || err.contains("directory")), "{args:?}: {err}");
        }
    }
    // Over the limit: refused with the sizes and the flag; lifted, imported.
    let big = dir.path().join("big.json");
    std::fs::copy(fixture("cyclictest.json"), &big).unwrap();
    let len = std::fs::metadata(&big).unwrap().len();
    let limit = (len - 1).to_string();
    let o = bin().args(["import", "--dry-run", "--max-size", &limit, big.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--max-size") && err.contains("limit"), "{err}");
    let o = bin().args(["import", "--dry-run", "--max-size", &len.to_string(), big.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin().args(["import", "--dry-run", "--max-size", "lots", big.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// rtscope-format files are checked against the schema's invariants on
/// import and on read (report): min above max, a reversed or overlapping
/// bucket, buckets that do not hold the samples, a count beyond what the
/// history stores — exit 2 naming the field, nothing stored.
#[test]
fn invalid_rtscope_files_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/result-v1.json");
    let base: Value = serde_json::from_slice(&std::fs::read(&golden).unwrap()).unwrap();
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 5] = [
        ("min-above-max", |v| v["results"][0]["min_ns"] = (v["results"][0]["max_ns"].as_u64().unwrap() + 1).into(), "results[0].min_ns"),
        (
            "reversed-bucket",
            |v| {
                let b = &mut v["results"][0]["histogram"][0];
                b["lo_ns"] = (b["hi_ns"].as_u64().unwrap() + 5).into();
            },
            "results[0].histogram[0].lo_ns",
        ),
        (
            "overlap",
            |v| {
                let h = v["results"][0]["histogram"].as_array_mut().unwrap();
                h[1]["lo_ns"] = h[0]["lo_ns"].clone();
            },
            "results[0].histogram[1].lo_ns",
        ),
        ("counts", |v| v["results"][0]["samples"] = (v["results"][0]["samples"].as_u64().unwrap() + 7).into(), "results[0].samples"),
        ("huge", |v| v["results"][0]["overruns"] = u64::MAX.into(), "results[0].overruns"),
    ];
    // The untouched file reads.
    let ok = dir.path().join("ok.json");
    std::fs::write(&ok, serde_json::to_vec(&base).unwrap()).unwrap();
    assert!(bin().args(["import", "--dry-run"]).arg(&ok).output().unwrap().status.success());
    let db = dir.path().join("h.db");
    for (name, edit, field) in cases {
        let mut v = base.clone();
        edit(&mut v);
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
        for args in [vec!["import"], vec!["report"]] {
            let o = bin().env("RTSCOPE_DB", &db).args(&args).arg(&f).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(err.contains(field) && err.contains(&format!("{name}.json")), "{name} {args:?}: {err}");
        }
    }
    assert!(!db.exists(), "nothing was stored");
}

#[test]
fn rt_tests_json_of_another_tool_is_refused() {
    // Before: `--format oslat-json` filed cyclictest's timer latencies as `noise`.
    let err = import_err(&fixture("cyclictest.json"), &["--format", "oslat-json"]);
    assert!(err.contains("this is cyclictest's JSON output") && err.contains("--format cyclictest-json"), "{err}");
    let err = import_err(&fixture("oslat.json"), &["--format", "cyclictest-json"]);
    assert!(err.contains("this is oslat's JSON output") && err.contains("--format oslat-json"), "{err}");
}

#[test]
fn imports_that_would_break_the_schema_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A thread key given twice made two thread-0 entries.
    let text = read("cyclictest.json");
    let at = text.find("\"1\": {").expect("thread 1 in the fixture");
    let dup = format!("{}\"0\": {{{}", &text[..at], &text[at + 6..]);
    let err = import_err(&write_tmp(dir.path(), "dup.json", dup.as_bytes()), &[]);
    assert!(err.contains("thread.\"0\" appears twice"), "{err}");
    // "0" and "00" are the same thread.
    let dup = format!("{}\"00\": {{{}", &text[..at], &text[at + 6..]);
    assert!(import_err(&write_tmp(dir.path(), "dup00.json", dup.as_bytes()), &[]).contains("appears twice"));
    // throughput.ops past the documented 2^63 − 1 was stored.
    let tm = "thread_metric,SysA\ninterval_s,30\nbasic-processing,18446744073709551615\n";
    let err = import_err(&write_tmp(dir.path(), "tm.csv", tm.as_bytes()), &[]);
    assert!(err.contains("line 3: basic-processing of SysA (column 2): 18446744073709551615 operations is past the largest count"), "{err}");
    let ok = "thread_metric,SysA\ninterval_s,30\nbasic-processing,9223372036854775807\n";
    assert_eq!(convert(&write_tmp(dir.path(), "ok.csv", ok.as_bytes()), &[]).len(), 1, "the cap itself is allowed");
    // An rtscope result: `results: []`, and throughput.ops past the cap.
    let mut run = convert(&fixture("cyclictest.json"), &[]).remove(0);
    let keep = run.clone();
    run["results"] = serde_json::json!([]);
    let err = import_err(&write_tmp(dir.path(), "empty.json", run.to_string().as_bytes()), &[]);
    assert!(err.contains("results list is empty"), "{err}");
    let mut run = keep;
    run["results"][0]["throughput"] = serde_json::json!({"ops": u64::MAX, "interval_ns": 30_000_000_000u64, "per_interval": [1]});
    let err = import_err(&write_tmp(dir.path(), "ops.json", run.to_string().as_bytes()), &[]);
    assert!(err.contains("results[0].throughput.ops is 18446744073709551615"), "{err}");
}

#[test]
fn leading_blank_space_does_not_hide_the_format() {
    // Before: 20 MB of white space pushed the content out of the detection window.
    let dir = tempfile::tempdir().unwrap();
    let blank = format!("{}{}", " ".repeat(300_000), "\n".repeat(300_000));
    for (f, want) in [("cyclictest.json", "cyclictest-json"), ("rtai-latency.txt", "rtai-latency"), ("pmqtest.txt", "rt-tests-ipc")] {
        let path = write_tmp(dir.path(), &format!("ws-{f}"), format!("{blank}{}", read(f)).as_bytes());
        let runs = convert(&path, &[]);
        assert_eq!(runs[0]["imported_from"]["format"], want, "{f}");
        let plain = convert(&fixture(f), &[]);
        assert_eq!(results(&runs[0]), results(&plain[0]), "{f}: the same numbers as without the blank space");
    }
    // An invalid byte after the blank space is named at its real line.
    let path = write_tmp(dir.path(), "bad.txt", [b"\n\n\n".as_slice(), &[0xff, b'\n']].concat().as_slice());
    assert!(import_err(&path, &[]).contains("line 4"));
}

/// A bad value in a one-column-per-system CSV names the file, the line and
/// the column (number and system), also when the value is a number too
/// large for the history; nothing is stored, the database is not created.
#[test]
fn a_bad_csv_value_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "p.csv",
            "rhealstone_us,GOOD,BAD\ntask-switch,4.2,99999999999999999\npreemption,5.5,7.1\n",
            "line 2: task-switch of BAD (column 3): 99999999999999999 µs is past",
        ),
        ("q.csv", "rhealstone_ns,A,B,C\ntask-switch,4,5,6\npreemption,5,x,7\n", "line 3: preemption of B (column 3): \"x\" is not a positive number"),
        ("t.csv", "thread_metric,A,B\ncooperative,1,99999999999999999999\n", "line 2: cooperative of B (column 3): 99999999999999999999 operations is past"),
        ("b.csv", "bin_lo_ns,bin_hi_ns,A,B\n0,5000,1,2\n5000,10000,3,-4\n", "line 3: count for B (column 4): \"-4\" is negative"),
    ];
    for (name, text, want) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        assert!(import_err(&f, &[]).contains(&format!("{name}: ")), "{name}");
        assert!(import_err(&f, &[]).contains(want), "{name}: {}", import_err(&f, &[]));
        let db = dir.path().join("h.db");
        let o = bin().arg("import").arg(&f).arg("--db").arg(&db).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!db.exists(), "{name}: nothing stored, no database made");
    }
}

/// A cyclictest histogram of `cols` threads, `rows` µs rows; thread `t`
/// has `(v + t) % 3 + 1` samples at `v` µs. Returns the text and each
/// thread's total.
fn wide_histogram(cols: usize, rows: u64) -> (String, Vec<u64>) {
    let count = |v: u64, t: usize| (v + t as u64) % 3 + 1;
    let mut s = String::from("# Histogram\n");
    for v in 0..rows {
        s.push_str(&format!("{v:06}"));
        (0..cols).for_each(|t| s.push_str(&format!(" {:06}", count(v, t))));
        s.push('\n');
    }
    let totals: Vec<u64> = (0..cols).map(|t| (0..rows).map(|v| count(v, t)).sum()).collect();
    let line = |name: &str, f: &dyn Fn(usize) -> u64| format!("# {name}:{}\n", (0..cols).map(|t| format!(" {:05}", f(t))).collect::<String>());
    s.push_str(&line("Total", &|t| totals[t]));
    s.push_str(&line("Min Latencies", &|_| 0));
    s.push_str(&line("Avg Latencies", &|_| rows / 2));
    s.push_str(&line("Max Latencies", &|_| rows - 1));
    s.push_str(&line("Histogram Overflows", &|_| 0));
    (s, totals)
}

/// `rtscope import FILE --dry-run` of a file whose series share the file's
/// 500 000 buckets: the run (invariants checked), its printed bytes and
/// its "sharing" note.
fn dry_run_shared(file: &Path) -> (Value, Vec<u8>, Option<String>) {
    let dry = bin().arg("import").arg(file).arg("--dry-run").output().unwrap();
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let run: Value = serde_json::from_slice(&dry.stdout).unwrap();
    check_invariants(&run);
    let note = run["fidelity"].as_array().unwrap().iter().filter_map(|f| f.as_str()).find(|f| f.contains("sharing 500000")).map(str::to_string);
    (run, dry.stdout, note)
}

/// Issue 36 item 9: 400 threads × 2 000 rows (800 000 buckets) share the
/// file's 500 000: each thread is folded coarser than 3 significant digits
/// into at most 1 250 buckets, no sample lost, and the note says so. Its
/// stored text (22 MB, many 1 MiB parts) exports as `--dry-run` printed it.
#[test]
fn a_wide_histogram_shares_the_files_buckets_and_is_stored_by_parts() {
    let dir = tempfile::tempdir().unwrap();
    let (text, totals) = wide_histogram(400, 2000);
    let file = dir.path().join("wide.txt");
    std::fs::write(&file, text).unwrap();
    let (run, dry, note) = dry_run_shared(&file);
    assert!(note.is_some_and(|n| n.contains("at most 1250 buckets")), "{}", run["fidelity"]);
    for (t, want) in totals.iter().enumerate() {
        let r = thread(&run, t as u64);
        let h = r["histogram"].as_array().unwrap();
        assert!(h.len() <= 1250, "thread {t}: {} buckets", h.len());
        assert_eq!(h.iter().map(|b| u(&b["count"])).sum::<u64>(), *want, "thread {t}: every sample kept");
        assert_eq!(u(&r["samples"]), *want);
    }
    assert_eq!(u(&merged(&run)[0]["samples"]), totals.iter().sum::<u64>());

    let db = dir.path().join("h.db");
    let o = bin().arg("import").arg(&file).arg("--db").arg(&db).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let parts: i64 = rusqlite::Connection::open(&db).unwrap().query_row("SELECT COUNT(*) FROM run_json", [], |r| r.get(0)).unwrap();
    assert!(parts as usize > dry.len() >> 20, "{parts} parts for {} bytes", dry.len());
    let export = bin().args(["export", "--db"]).arg(&db).arg("1").output().unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    assert!(export.stdout == dry, "the stored text is what --dry-run printed, byte for byte");
}

/// The same for cyclictest's JSON, whose threads are read again from the
/// file as they are built (never held): the folding note, known only once
/// every thread has gone by, is in what `--dry-run` prints and in what is
/// stored (a merge of two branches once dropped it from both).
#[test]
fn cyclictest_json_threads_read_again_keep_the_files_folding_note() {
    let dir = tempfile::tempdir().unwrap();
    let (threads, keys) = (400, 2000);
    let mut text = String::from("{\n  \"file_version\": 1,\n  \"cmdline:\": \"cyclictest -t 400 -i 1000 -h 2000 --json=x\",\n  \"rt_test_version:\": \"2.40\",\n  \"resolution_in_ns\": 0,\n  \"thread\": {\n");
    for t in 0..threads {
        let hist: Vec<String> = (0..keys).map(|k| format!("\"{k}\": {}", 1 + (k + t) % 3)).collect();
        let n: usize = (0..keys).map(|k| 1 + (k + t) % 3).sum();
        let sep = if t + 1 < threads { "," } else { "" };
        text += &format!(
            "    \"{t}\": {{\"histogram\": {{{}}}, \"cycles\": {n}, \"min\": 0, \"max\": {}, \"avg\": 1000.0, \"cpu\": {}}}{sep}\n",
            hist.join(", "),
            keys - 1,
            t % 2
        );
    }
    text += "  }\n}\n";
    let file = dir.path().join("wide.json");
    std::fs::write(&file, text).unwrap();
    let (run, dry, note) = dry_run_shared(&file);
    let at_most: usize = note
        .as_deref()
        .and_then(|n| n.split("at most ").nth(1))
        .and_then(|n| n.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sharing note: {}", run["fidelity"]));
    assert_eq!(results(&run).len(), threads + 1);
    for t in 0..threads as u64 {
        let h = thread(&run, t)["histogram"].as_array().unwrap().len();
        assert!(h <= at_most && h < keys, "thread {t}: {h} buckets, the note says at most {at_most}");
    }
    let db = dir.path().join("h.db");
    let o = bin().arg("import").arg(&file).arg("--db").arg(&db).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("sharing 500000"), "the stored run's notes are printed");
    let export = bin().args(["export", "--db"]).arg(&db).arg("1").output().unwrap();
    assert!(export.stdout == dry, "the stored text is what --dry-run printed, byte for byte");
}

/// Issue 36 item 9: a file of more histogram columns than one file's
/// buckets can serve (7 812, each at least 64 of 500 000) is refused at
/// its header or first row, and a line past 1 MiB is refused as it is
/// read: exit 2 and the way out, not gigabytes. At the limit, the file
/// imports, its last column its own.
#[test]
fn files_too_wide_to_hold_are_refused_as_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let bins = |cols: usize| {
        let names: Vec<String> = (0..cols).map(|c| format!("b{c}")).collect();
        let counts: Vec<String> = (0..cols).map(|c| (c + 1).to_string()).collect();
        format!("bin_lo_ns,bin_hi_ns,{}\n0,1000,{}\n", names.join(","), counts.join(","))
    };
    let at = write("at.csv", bins(7812));
    let runs = convert(&at, &["--name", "b7811"]);
    assert_eq!(runs.len(), 1);
    assert_eq!(u(&results(&runs[0])[0]["samples"]), 7812, "the last column's count");
    let err = import_err(&write("past.csv", bins(7813)), &[]);
    assert!(err.contains("line 1: more than 7812 systems: rtscope keeps at most 7812 histograms of one file"), "{err}");
    let hist = format!("# Histogram\n000000{}\n", " 000001".repeat(7813));
    let err = import_err(&write("h.txt", hist), &["--format", "cyclictest-hist"]);
    assert!(err.contains("line 2: more than 7812 counts on a row"), "{err}");
    let cols: String = (0..7813).map(|c| format!(" {}-{:03}", if c % 2 == 0 { "IRQ" } else { "Thr" }, c / 2)).collect();
    let rtla = format!("# RTLA timerlat histogram\n# Time unit is microseconds (us)\nIndex{cols}\n");
    let err = import_err(&write("r.txt", rtla), &["--format", "rtla-timerlat-hist"]);
    assert!(err.contains("line 3: more than 7812 columns"), "{err}");
    let long = format!("# Histogram\n000000{}\n", " 1".repeat(600_000));
    let err = import_err(&write("l.txt", long), &["--format", "cyclictest-hist"]);
    assert!(err.contains("line 2: a line longer than 1048576 bytes"), "{err}");
}

/// Issue 49: the phase names the kernel lab makes (`guest:SPEC`, with
/// commas) import as they are; a name `run --phase-name` refuses is refused here too.
#[test]
fn lab_phase_names_import_as_they_are() {
    let name = "guest:cpu:1,fork:1,io:1,net:1";
    let runs = convert(&fixture("cyclictest.json"), &["--phase", name]);
    assert!(!runs.is_empty());
    for run in &runs {
        for r in results(run) {
            assert_eq!(r["phase"], name);
        }
    }
    let err = import_err(&fixture("cyclictest.json"), &["--phase", "two words"]);
    assert!(err.contains("--phase \"two words\"") && err.contains("-_.:,+="), "{err}");
}

/// Issue 49 item 11: `history` showed `RT: no` for imports whose tools do
/// not say (NuttX, RTAI, Xenomai): unknown, or a co-kernel for RTAI/Xenomai.
#[test]
fn history_rt_is_unknown_where_the_tool_does_not_say() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    for f in ["xenomai-latency.txt", "rtai-latency.txt", "pmqtest.txt"] {
        let o = bin().args(["import", "--db"]).arg(&db).arg(fixture(f)).output().unwrap();
        assert!(o.status.success(), "{f}: {}", String::from_utf8_lossy(&o.stderr));
    }
    // --wide: at 80 columns the RT column is left out (and named).
    let o = bin().args(["history", "--wide", "--db"]).arg(&db).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}");
    let rt_of = |needle: &str| {
        let l = out.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {out}"));
        assert!(!l.split_whitespace().any(|w| w == "no"), "{l}");
        l.to_string()
    };
    assert!(rt_of("xenomai").contains("co-kernel"), "{out}");
    assert!(rt_of("rtai").contains("co-kernel"), "{out}");
    // pmqtest says nothing of the kernel: unknown (it showed `no`).
    assert!(rt_of("pmqtest").contains("unknown"), "{out}");
    // The report's host line says the same (it said "not RT" for all three).
    for (id, said) in
        [("1", "(RTAI/Xenomai co-kernel, preempt unknown)"), ("2", "(RTAI/Xenomai co-kernel, preempt unknown)"), ("3", "(RT unknown, preempt unknown)")]
    {
        let o = bin().args(["report", "--wide", "--db"]).arg(&db).arg(id).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success() && text.contains(said) && !text.contains("not RT"), "run {id}: {text}");
    }
}

/// Issue 49 item 11: a σ the tool does not print (pmqtest: min/avg/max)
/// showed as `±0.0`; it is unknown (`-`), in the report and in compare.
#[test]
fn an_unknown_stddev_is_shown_unknown_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let o = bin().args(["import", "--db"]).arg(&db).arg(fixture("pmqtest.txt")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin().args(["report", "--no-pwcet", "--wide", "1", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!text.contains("±0.0"), "an unknown σ reads ±0.0:\n{text}");
    assert!(text.contains("±-"), "an unknown σ reads ±-:\n{text}");
    let o = bin().args(["report", "--no-pwcet", "--format", "json", "1", "--db"]).arg(&db).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["runs"][0]["entries"].as_array().unwrap().iter().all(|e| e["stddev_ns"].is_null()), "{}", v["runs"][0]["entries"][0]);
    let o = bin().args(["compare", "--format", "json", "1", "1", "--db"]).arg(&db).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["rows"][0]["cells"][0]["stddev_ns"].is_null(), "{}", v["rows"][0]["cells"][0]);
}
