//! The `preempt` probe: preemption time. A low-priority thread that is
//! *running* on a CPU wakes a higher-priority thread pinned to the same CPU;
//! latency = the higher thread runs − the wake call.
//!
//! Built on `pair::one_way` (futex hand-off, both threads on the plan's
//! first CPU, the high thread at -p, the low one below it): once per -i the
//! low thread is let go, computes for 20 µs (at most half of -i) and then
//! wakes the high thread, so at the wake call it is on the CPU and busy, as
//! the source experiments' "preemption time" assumes, while the CPU stays
//! mostly idle (no RT throttling). The high thread must take the CPU away
//! from the waker: this is the scheduler's preemption path. One variant,
//! `futex/same-cpu`.

use std::sync::atomic::Ordering;

use super::pair::{one_way, Events, Placement};
use super::registry::ProbeInfo;
use super::sem::FutexHandoff;
use super::{Probe, ProbeCtx, ThreadOutcome};
use crate::sys::futex::Event;

pub(crate) struct PreemptProbe;

/// How long the low-priority thread computes before each wake call.
const SPIN_NS: u64 = 20_000;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "preempt",
    about: "preemption time: a running low-priority thread wakes a higher-priority one on its CPU",
    variants: &["futex/same-cpu"],
    traced: super::registry::Traced::Handoff,
    flags: &["--iterations", "--back-to-back", "--sender-priority"],
    ..ProbeInfo::PLAIN
};

impl Probe for PreemptProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        if ctx.stop.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        let spin = SPIN_NS.min(ctx.run.interval_ns / 2);
        let h = FutexHandoff(Event::new());
        let o = one_way(ctx, "futex/same-cpu", &h, Placement::same_cpu(ctx), Events::from_plan(ctx, ctx.run.duration_ns, 1), spin)?;
        Ok(vec![o])
    }
}
