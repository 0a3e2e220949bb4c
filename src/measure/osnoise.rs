//! The `osnoise` probe: the kernel's osnoise tracer (CONFIG_OSNOISE_TRACER),
//! a per-CPU kernel thread (`osnoise/N`) that reads the clock in a loop for
//! `runtime` of every `period` and accounts each gap above `tracing_thresh`
//! to what caused it — what seed 001 calls "max preempt-off time" and seed
//! 000 the latency killers, named by class.
//!
//! Per CPU and period the tracer prints the noise (the sum of the gaps), the
//! longest single gap, the share of the CPU left and how many hardware
//! (nothing the kernel can name: SMIs, the hypervisor), NMI, IRQ, softirq
//! and thread interferences it saw. Entries, per CPU and merged:
//! - `noise`: noise per period (ns), with `noise` (total noise, CPU
//!   available) and `interference` (the counts, summed);
//! - `single`: the longest single gap of each period (ns), the oslat-like max.
//!
//! Period and runtime: `-i` (runtime = period, the tracer's default share);
//! threshold: `--noise-threshold` (at least 1 µs, the tracer's unit);
//! policy: `--noise-policy` (`other`, the default, leaves the threads as the
//! kernel made them, SCHED_OTHER; `fifo` sets them to SCHED_FIFO -p, and RT
//! throttling then stops them for the rest of each throttling period).

use super::registry::ProbeInfo;
use super::tracer::{self, Kind, Series, TracerRun};
use super::{Probe, ProbeCtx, ThreadOutcome};
use crate::model::Extras;
use crate::model::{Interference, NoiseStats};
use crate::sys::sched::Policy;

pub(crate) struct OsnoiseProbe;

pub(crate) const VARIANTS: &[&str] = &["noise", "single"];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "osnoise",
    about: "kernel osnoise tracer: noise per period, max single noise, interference by class (CONFIG_OSNOISE_TRACER)",
    variants: VARIANTS,
    warms_up: false,
    kernel_tracer: Some(super::tracer::Kind::Osnoise),
    flags: &["--noise-threshold", "--noise-policy"],
    ..ProbeInfo::PLAIN
};

impl Probe for OsnoiseProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let (cpus, period_us) = tracer::cpus_and_period(ctx.run);
        let interval_ns = period_us * 1000;
        let threshold_us = (ctx.run.probe.noise_threshold_ns / 1000).max(1);
        let mut run = TracerRun::start(
            Kind::Osnoise,
            &[
                ("osnoise/cpus", crate::units::cpu_list_str(&cpus)),
                // runtime first: the kernel keeps runtime <= period.
                ("osnoise/runtime_us", period_us.min(1_000_000).to_string()),
                ("osnoise/period_us", period_us.to_string()),
                ("osnoise/runtime_us", period_us.to_string()),
                ("osnoise/stop_tracing_us", "0".into()),
                ("osnoise/stop_tracing_total_us", "0".into()),
                ("osnoise/print_stack", "0".into()),
                ("tracing_thresh", threshold_us.to_string()),
            ],
        )?;
        let policy = Policy::from(ctx.run.probe.noise_policy);
        let setup = if policy == Policy::Other {
            Vec::new()
        } else {
            run.settings.insert("priority".into(), format!("{} {}", policy.name(), ctx.run.priority));
            run.set_kthreads("osnoise", &cpus, policy, ctx.run.priority)
        };
        let variants: Vec<&'static str> = VARIANTS.iter().copied().filter(|v| ctx.run.probe.wants("osnoise", v)).collect();
        let mut series = Series::new(ctx, &cpus, &variants, interval_ns);
        let mut pipe = run.pipe()?;
        let start = crate::sys::time::now_ns();
        let mut totals = vec![(0u64, 0u64, Interference::default()); cpus.len()];
        let mut seq = vec![0u64; cpus.len()];
        ctx.board.running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = tracer::read_until(&run, &mut pipe, (start, start + ctx.run.duration_ns), tracer::read_interval_ns(interval_ns), ctx.stop, &mut |l| {
            let Some(p) = parse_period(l.body) else { return };
            let Some(i) = cpus.iter().position(|&c| c == l.cpu) else { return };
            let t = &mut totals[i];
            t.0 += p.runtime_ns;
            t.1 += p.noise_ns;
            t.2 = t.2.combine(p.interference);
            for (v, name) in variants.iter().enumerate() {
                let value = if *name == "noise" { p.noise_ns } else { p.max_single_ns };
                if let Some(rec) = series.get(l.cpu, v) {
                    rec.record(value, l.ts_ns - start, seq[i]);
                }
            }
            seq[i] += 1;
        });
        ctx.board.running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        read?;
        series.check_any(Kind::Osnoise, ctx)?;
        let note = format!(
            "kernel osnoise tracer, period = runtime = {period_us} us, threshold {threshold_us} us, threads osnoise/N {}: noise = sum of the gaps in each period; single = the longest gap of each period; hw = gaps the kernel could not attribute (SMI, hypervisor)",
            if policy == Policy::Other { "as the kernel made them (SCHED_OTHER)".to_string() } else { format!("at {} {}", policy.name(), ctx.run.priority) }
        );
        let threshold_ns = threshold_us * 1000;
        Ok(series.into_outcomes(&run, &pipe, interval_ns, setup, &|i, _| {
            let (runtime, noise, interference) = totals[i];
            Extras {
                noise: Some(NoiseStats::new(threshold_ns, runtime, noise)),
                interference: Some(interference),
                note: Some(note.clone()),
                ..Extras::default()
            }
        }))
    }
}

/// One period of one CPU.
#[derive(Debug, PartialEq)]
pub(crate) struct Period {
    pub(crate) runtime_ns: u64,
    pub(crate) noise_ns: u64,
    pub(crate) max_single_ns: u64,
    pub(crate) interference: Interference,
}

/// `RUNTIME NOISE %AVAILABLE MAX-SINGLE HW NMI IRQ SIRQ THREAD` (µs, µs, %,
/// µs, counts) → a period; None for other lines.
pub(crate) fn parse_period(body: &str) -> Option<Period> {
    let f: Vec<&str> = body.split_whitespace().collect();
    if f.len() != 9 {
        return None;
    }
    let n = |i: usize| f[i].parse::<u64>().ok();
    f[2].parse::<f64>().ok()?;
    Some(Period {
        runtime_ns: n(0)? * 1000,
        noise_ns: n(1)? * 1000,
        max_single_ns: n(3)? * 1000,
        interference: Interference { hw: n(4)?, nmi: n(5)?, irq: n(6)?, softirq: n(7)?, thread: n(8)? },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_line_parses_in_its_units() {
        let p = parse_period("1000087     642207  35.78488  500959    399      0    223      0    254").unwrap();
        assert_eq!(p.runtime_ns, 1_000_087_000);
        assert_eq!(p.noise_ns, 642_207_000);
        assert_eq!(p.max_single_ns, 500_959_000);
        assert_eq!(p.interference, Interference { hw: 399, nmi: 0, irq: 223, softirq: 0, thread: 254 });
        assert_eq!(parse_period("#1 context irq timer_latency 932 ns"), None);
        assert_eq!(parse_period("1 2 x 4 5 6 7 8 9"), None);
    }
}
