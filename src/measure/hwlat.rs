//! The `hwlat` probe: the kernel's hardware latency detector
//! (CONFIG_HWLAT_TRACER). A kernel thread spins with interrupts *off* for
//! `width` of every `window`, reading the clock; any gap it sees can only
//! come from below the kernel — SMIs, firmware, the hypervisor. `inner` is
//! the largest gap between two reads of one loop pass, `outer` between two
//! passes. The detector reports a window only when its largest gap exceeds
//! `tracing_thresh`, so `samples` counts the windows over the threshold.
//!
//! Opt-in only, never in a preset: it keeps a CPU's interrupts off for half
//! of each window (window 100 ms, width 50 ms here; the kernel's defaults
//! are 1 s / 0.5 s), moving round-robin over the planned CPUs — every other
//! measurement on those CPUs suffers. The kernel allows it only at the top
//! level of tracefs, so it runs only when nothing else uses the top level,
//! and every setting it changes is written back.
//!
//! Entries: variants `inner`, `outer`, per CPU the detector ran on, and
//! merged. Threshold: `--noise-threshold` (at least 1 µs).

use super::registry::ProbeInfo;
use super::tracer::{self, Kind, Series, TracerRun};
use super::{Probe, ProbeCtx, ThreadOutcome};
use crate::model::Extras;

pub(crate) struct HwlatProbe;

pub(crate) const VARIANTS: &[&str] = &["inner", "outer"];

/// The detector's window and the part of it spent with interrupts off.
pub(crate) const WINDOW_US: u64 = 100_000;
pub(crate) const WIDTH_US: u64 = 50_000;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "hwlat",
    about: "kernel hwlat detector: hardware/firmware stalls (SMIs); opt-in: spins with IRQs off half of each window (CONFIG_HWLAT_TRACER)",
    variants: VARIANTS,
    warms_up: false,
    kernel_tracer: Some(super::tracer::Kind::Hwlat),
    flags: &["--noise-threshold"],
    ..ProbeInfo::PLAIN
};

impl Probe for HwlatProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let cpus = tracer::distinct_cpus(&ctx.run.cpus);
        let threshold_us = (ctx.run.probe.noise_threshold_ns / 1000).max(1);
        let run = TracerRun::start(
            Kind::Hwlat,
            &[
                ("tracing_cpumask", tracer::cpumask(&cpus)),
                ("tracing_thresh", threshold_us.to_string()),
                // width first: the kernel keeps width <= window.
                ("hwlat_detector/width", WIDTH_US.to_string()),
                ("hwlat_detector/window", WINDOW_US.to_string()),
            ],
        )?;
        let variants: Vec<&'static str> = VARIANTS.iter().copied().filter(|v| ctx.run.probe.wants("hwlat", v)).collect();
        let interval_ns = WINDOW_US * 1000;
        let mut series = Series::new(ctx, &cpus, &variants, interval_ns);
        let mut pipe = run.pipe()?;
        let start = crate::sys::time::now_ns();
        ctx.board.running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = tracer::read_until(&run, &mut pipe, (start, start + ctx.run.duration_ns), 100_000_000, ctx.stop, &mut |l| {
            let Some(s) = parse_sample(l.body) else { return };
            for (v, name) in variants.iter().enumerate() {
                let value = if *name == "inner" { s.inner_ns } else { s.outer_ns };
                if let Some(rec) = series.get(l.cpu, v) {
                    rec.record(value, l.ts_ns - start, s.id);
                }
            }
        });
        ctx.board.running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        read?;
        let note = format!(
            "kernel hwlat detector: interrupts off for {} ms of every {} ms window, round-robin over CPUs {}; only windows whose largest gap exceeded {threshold_us} us are samples; inner = gap within a loop pass, outer = between passes (SMI, firmware, hypervisor). It disturbs every other measurement on these CPUs",
            WIDTH_US / 1000,
            WINDOW_US / 1000,
            crate::units::cpu_list_str(&cpus)
        );
        Ok(series.into_outcomes(&run, &pipe, interval_ns, Vec::new(), &|_, _| Extras { note: Some(note.clone()), ..Extras::default() }))
    }
}

/// One window over the threshold: `#1 inner/outer(us): 12/14 ts:... count:3`.
#[derive(Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) id: u64,
    pub(crate) inner_ns: u64,
    pub(crate) outer_ns: u64,
}

pub(crate) fn parse_sample(body: &str) -> Option<Sample> {
    let mut it = body.split_whitespace();
    let id = it.next()?.strip_prefix('#')?.parse().ok()?;
    if it.next()? != "inner/outer(us):" {
        return None;
    }
    let (inner, outer) = it.next()?.split_once('/')?;
    Some(Sample { id, inner_ns: inner.parse::<u64>().ok()? * 1000, outer_ns: outer.parse::<u64>().ok()? * 1000 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_lines_parse_to_ns() {
        assert_eq!(
            parse_sample("#10    inner/outer(us): 4239/815   ts:1795467324.063917514 count:215"),
            Some(Sample { id: 10, inner_ns: 4_239_000, outer_ns: 815_000 })
        );
        assert_eq!(parse_sample("#2 inner/outer(us):   70/1604  ts:1.2 count:4 nmi-total:3 nmi-count:1").map(|s| s.outer_ns), Some(1_604_000));
        assert_eq!(parse_sample("#1 context irq timer_latency 932 ns"), None);
    }
}
