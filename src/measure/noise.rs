//! The `noise` probe: OS noise, the longest time a busy thread loses its CPU
//! (seed 001's "max preempt-off time"; the method of oslat).
//!
//! A busy loop reads the clock back to back; every gap between two reads
//! above `--noise-threshold` (1 µs by default) is recorded as a sample, so
//! the entry's max is the longest interruption, its histogram their spread,
//! and `noise` (model::NoiseStats) the total noise time and the share of the
//! CPU the loop kept.
//!
//! Where and how it runs — chosen so rtscope never starves the machine:
//! - By default one loop, on the last CPU of the plan; with `-a` or `-t` one
//!   loop per planned thread (CPUs round-robin).
//! - By default as SCHED_OTHER (`--noise-policy other`): the gaps then
//!   include everything that runs on that CPU, other SCHED_OTHER tasks
//!   included (the fair scheduler shares the CPU with them). With
//!   `--noise-policy fifo` the loop runs at SCHED_FIFO -p and sees only what
//!   preempts a real-time task: interrupts, softirqs, higher RT threads —
//!   and RT throttling, which rtscope leaves on: a FIFO loop alone on its
//!   CPU may be stopped for (period − runtime) every period (50 ms per
//!   second by default). That gap is real noise caused by the throttling;
//!   the entry's `note` says which policy ran and what the throttling
//!   settings were.
//!
//! Variant: the policy name (`other`, `fifo`).

use std::sync::atomic::Ordering;

use super::registry::ProbeInfo;
use super::{spawn_measuring_with, Probe, ProbeCtx, ThreadOutcome};
use crate::model::NoiseStats;
use crate::sys::sched::Policy;
use crate::sys::time::now_ns;

pub(crate) struct NoiseProbe;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "noise",
    about: "OS noise: gaps above --noise-threshold in a busy loop reading the clock (as oslat)",
    busy: super::registry::Busy::UnderNoisePolicy,
    flags: &["--noise-threshold", "--noise-policy"],
    reads_threads: true,
    ..ProbeInfo::PLAIN
};

impl Probe for NoiseProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let settings = &ctx.run.probe;
        let policy = Policy::from(settings.noise_policy);
        let specs = super::select::one_cpu_unless_told(ctx, policy);
        let threshold = settings.noise_threshold_ns;
        let duration = ctx.run.duration_ns;
        // Each thread hands back its loop and noise totals.
        let measured = spawn_measuring_with(ctx, &specs, Some(policy.name().to_string()), 0, |_spec, rec, stop, barrier| {
            barrier.wait();
            (None, busy_loop(rec, stop, threshold, duration))
        })?;
        let note = note(policy, ctx.run.priority);
        let mut out = Vec::with_capacity(measured.len());
        for (mut o, (loop_ns, noise_ns)) in measured {
            o.extra.noise = Some(NoiseStats::new(threshold, loop_ns, noise_ns));
            o.extra.note = Some(note.clone());
            out.push(o);
        }
        Ok(out)
    }
}

/// The hot loop: read the clock back to back for `duration`; every gap above
/// `threshold` is a sample. Returns (loop time, total noise).
pub(crate) fn busy_loop(rec: &mut super::recorder::Recorder, stop: &std::sync::atomic::AtomicBool, threshold: u64, duration: u64) -> (u64, u64) {
    let start = now_ns();
    let end = start + duration;
    let mut prev = start;
    let mut total = 0u64;
    let mut seq = 0u64;
    loop {
        let t = now_ns();
        let gap = t - prev;
        if gap > threshold {
            rec.record(gap, t - start, seq);
            seq += 1;
            total += gap;
        }
        prev = t;
        if t >= end || stop.load(Ordering::Relaxed) {
            return (t - start, total);
        }
    }
}

fn read_i64(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// What the policy means for the numbers, with the throttling settings seen.
fn note(policy: Policy, priority: u8) -> String {
    let runtime = read_i64("/proc/sys/kernel/sched_rt_runtime_us");
    let period = read_i64("/proc/sys/kernel/sched_rt_period_us");
    let throttle = match (runtime, period) {
        (Some(-1), _) => "RT throttling is off (sched_rt_runtime_us = -1)".to_string(),
        (Some(r), Some(p)) => format!("RT throttling is on: {} ms of every {} ms for RT tasks (sched_rt_runtime_us/sched_rt_period_us)", r / 1000, p / 1000),
        _ => "RT throttling settings unreadable".to_string(),
    };
    match policy {
        Policy::Other => format!(
            "busy loop ran as SCHED_OTHER: gaps include every task the fair scheduler ran on this CPU, not only interrupts and kernel work; use --noise-policy fifo for what an RT task sees. {throttle}."
        ),
        _ => format!(
            "busy loop ran as SCHED_{} priority {priority}: gaps are what preempts an RT task (interrupts, softirqs, higher-priority threads). {throttle}; when the loop is alone on its CPU the kernel may stop it for the rest of each period, and that gap (tens of ms) is real noise caused by the throttling itself.",
            policy.name().to_uppercase()
        ),
    }
}
