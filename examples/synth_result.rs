//! Writes a synthetic result file whose histograms hold a given number of
//! samples (default 1e9), for `bench/report-1e9`.
//!
//! Each thread records 1 000 000 real samples (5 µs base + exponential
//! jitter + rare GPD spikes) through the real recorder, spread over the
//! planned duration; then every count (histogram buckets, samples, per-second
//! slots) is scaled up to the target. The tail stays the real top 10 000 of
//! the recorded samples. The result has the shape `rtscope run` writes: one
//! entry per thread plus the merged entry.
//!
//! Usage: cargo run --release --example synth_result -- OUT.json [SAMPLES] [THREADS]

use rtscope::measure::recorder::Recorder;
use rtscope::model::*;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args.get(1).ok_or_else(|| anyhow::anyhow!("usage: synth_result OUT.json [SAMPLES] [THREADS]"))?;
    let total: u64 = args.get(2).map(|s| s.parse::<f64>()).transpose()?.unwrap_or(1e9) as u64;
    let threads: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(2);
    let per_thread = total / threads as u64;
    let interval_ns = 20_000u64;
    let duration_ns = per_thread * interval_ns;
    const REAL: u64 = 1_000_000;
    let scale = per_thread / REAL;
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 + 1e-17
    };
    let mut recs = Vec::new();
    for t in 0..threads {
        let mut r = Recorder::new(t, duration_ns, 32);
        let step = duration_ns / REAL;
        for i in 0..REAL {
            let mut v = 5_000.0 - 1_500.0 * uniform().ln();
            if uniform() < 1e-3 {
                v += 4_000.0 / 0.2 * (uniform().powf(-0.2) - 1.0);
            }
            r.record(v as u64, i * step, i);
        }
        recs.push(r);
    }
    let scale_up = |mut p: ProbeResult| -> ProbeResult {
        p.samples *= scale;
        for b in p.histogram.iter_mut() {
            b.count *= scale;
        }
        for s in p.per_second.iter_mut() {
            s.count *= scale;
        }
        p
    };
    let mut results: Vec<ProbeResult> =
        recs.iter().enumerate().map(|(t, r)| scale_up(r.to_result("timer", "idle", None, Some(t), Some(t), interval_ns))).collect();
    let merged = Recorder::merged_result(&recs, "timer", "idle", interval_ns).map_err(anyhow::Error::msg)?;
    results.push(scale_up(merged));
    let mut plan = Plan::new(vec!["timer".into()], vec!["idle".into()], Nanos(duration_ns), Nanos(interval_ns));
    plan.priority = 95;
    plan.policy = "fifo".into();
    plan.threads = threads;
    plan.cpus = (0..threads).collect();
    plan.dma_latency = true;
    plan.worst_k = 32;
    let host = Host { hostname: "synthetic".into(), kernel_release: "0.0".into(), ..Host::default() };
    let calibration = Calibration::new(Nanos(20), Nanos(18), "synthetic");
    let mut run = Run::native(vec!["synth_result".into()], host, plan, calibration, "2026-01-01T00:00:00Z".into());
    run.finished_at = "2026-01-01T02:46:40Z".into();
    run.realtime_setup = RealtimeSetup::from_steps(vec![]);
    run.results = results;
    rtscope::store::json::write_run(std::path::Path::new(out), &run)?;
    let merged = run.results.last().unwrap();
    eprintln!("{out}: {} samples in the merged histogram ({} buckets)", merged.samples, merged.histogram.len());
    Ok(())
}
