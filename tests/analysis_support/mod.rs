//! Crafted results for the analysis, compare and report tests: runs built
//! from known sample values with the real recorder (so histograms, tails
//! and per-second slots are what `rtscope run` would write), or from
//! hand-written histograms, and written as result files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use rtscope::measure::recorder::Recorder;
use rtscope::model::*;

/// `common::rtscope()` (the tests' one database policy) as assert_cmd's Command.
pub fn rtscope() -> Command {
    Command::from_std(crate::common::rtscope())
}

pub fn host(name: &str, kernel: &str) -> Host {
    Host {
        hostname: name.into(),
        kernel_release: kernel.into(),
        kernel_version: "#1 SMP".into(),
        realtime: kernel.contains("rt"),
        preempt_model: if kernel.contains("rt") { "rt".into() } else { "voluntary".into() },
        preempt_model_source: "test".into(),
        cmdline: "quiet".into(),
        cpu_model: "Test CPU".into(),
        cpus_online: vec![0, 1],
        isolcpus: String::new(),
        nohz_full: String::new(),
        clocksource: "tsc".into(),
        governors: vec![],
        cpuidle_states: vec![],
        smt: "off".into(),
        virtualized: false,
        emulated: false,
        emulated_by: String::new(),
        doctor: vec![],
    }
}

pub fn run(host: Host, results: Vec<ProbeResult>) -> Run {
    let mut probes: Vec<String> = Vec::new();
    let mut phases: Vec<String> = Vec::new();
    for r in &results {
        if !probes.contains(&r.probe) {
            probes.push(r.probe.clone());
        }
        if !phases.contains(&r.phase) {
            phases.push(r.phase.clone());
        }
    }
    let mut plan = Plan::new(probes, phases, Nanos(60_000_000_000), Nanos(1_000_000));
    plan.priority = 95;
    plan.policy = "fifo".into();
    plan.threads = 1;
    plan.cpus = vec![0];
    plan.dma_latency = true;
    plan.worst_k = 8;
    let calibration = Calibration::new(Nanos(20), Nanos(18), "test");
    let mut run = Run::native(vec!["rtscope".into(), "run".into()], host, plan, calibration, "2026-01-01T00:00:00Z".into());
    run.tool.version = "0.1.0".into();
    run.finished_at = "2026-01-01T00:01:00Z".into();
    run.realtime_setup = RealtimeSetup::from_steps(vec![]);
    run.results = results;
    run
}

/// Per-thread entries (sample i of a thread taken at i·interval) plus the
/// merged entry, as the runner writes them.
pub fn entries(probe: &str, phase: &str, threads: &[Vec<u64>], interval_ns: u64) -> Vec<ProbeResult> {
    let dur = threads.iter().map(|t| t.len() as u64).max().unwrap_or(0) * interval_ns + 1;
    let recs: Vec<Recorder> = threads
        .iter()
        .enumerate()
        .map(|(ti, vals)| {
            let mut r = Recorder::new(ti, dur, 8);
            for (i, v) in vals.iter().enumerate() {
                r.record(*v, i as u64 * interval_ns, i as u64);
            }
            r
        })
        .collect();
    let mut out: Vec<ProbeResult> = recs.iter().enumerate().map(|(ti, r)| r.to_result(probe, phase, None, Some(ti), Some(ti), interval_ns)).collect();
    out.push(Recorder::merged_result(&recs, probe, phase, interval_ns).unwrap());
    out
}

/// One merged entry from a hand-written histogram `(value_ns, count)`
/// (single-nanosecond buckets), no tail, one per-second slot per 1000 samples.
pub fn from_histogram(probe: &str, phase: &str, hist: &[(u64, u64)]) -> ProbeResult {
    let n: u64 = hist.iter().map(|h| h.1).sum();
    let sum: f64 = hist.iter().map(|h| h.0 as f64 * h.1 as f64).sum();
    let mean = sum / n as f64;
    let var = hist.iter().map(|h| (h.0 as f64 - mean).powi(2) * h.1 as f64).sum::<f64>() / n as f64;
    let min = hist.first().unwrap().0;
    let max = hist.last().unwrap().0;
    let histogram: Vec<Bucket> = hist.iter().map(|&(v, c)| Bucket { lo_ns: Nanos(v), hi_ns: Nanos(v), count: c }).collect();
    // As a native result: the stored percentiles are those of the histogram
    // (an empty map would mark it a summary-only import).
    let percentiles_ns = rtscope::stats::PERCENTILES
        .iter()
        .map(|p| (p.key.to_string(), rtscope::stats::bucket_percentile(&histogram, p.q, Nanos(min), Nanos(max)).unwrap()))
        .collect();
    let mut r = ProbeResult::new(probe, phase, None, None, None, Nanos(1_000_000));
    r.samples = n;
    r.min_ns = Nanos(min);
    r.max_ns = Nanos(max);
    r.mean_ns = mean;
    r.stddev_ns = var.sqrt();
    r.percentiles_ns = percentiles_ns;
    r.histogram = histogram;
    r.per_second = vec![SecondStats { t_s: 0, count: n, min_ns: Nanos(min), mean_ns: mean, max_ns: Nanos(max) }];
    r
}

pub fn write(dir: &Path, name: &str, run: &Run) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(run).unwrap()).unwrap();
    p
}

/// SplitMix64 uniform in (0, 1), for synthetic samples.
pub struct Rng(pub u64);
impl Rng {
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

pub fn json_out(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}
