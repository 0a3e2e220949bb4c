//! The `preempt` probe: preemption time. A low-priority thread that is
//! *running* on a CPU wakes a higher-priority thread pinned to the same CPU;
//! latency = the higher thread runs − the wake call.
//!
//! The low thread (priority −p minus one) sleeps until 100 µs (at most half
//! of -i) before each tick and then busy-waits to the tick, so at the wake
//! call it is on the CPU and warm, as the source experiments' "preemption
//! time" assumes, while the CPU stays mostly idle (no RT throttling). The
//! wake is a futex (the mechanism under every blocking primitive); the
//! high thread must take the CPU away from the waker: this is the
//! scheduler's preemption path. One variant, `futex/same-cpu`.

use std::sync::atomic::Ordering;

use super::pair::{one_way, Pause, Placement};
use super::sem::FutexHandoff;
use super::{select, Probe, ProbeCtx, ThreadOutcome};
use crate::sys::futex::Event;

pub struct PreemptProbe;

impl Probe for PreemptProbe {
    fn name(&self) -> &'static str {
        "preempt"
    }
    fn variants(&self) -> &'static [&'static str] {
        &["futex/same-cpu"]
    }
    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        if ctx.stop.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        let interval = ctx.plan.interval_ns;
        let pause = Pause::SleepThenSpin { interval, lead: (interval / 2).min(100_000) };
        let h = FutexHandoff(Event::new());
        let o = one_way(ctx, "futex/same-cpu", &h, Placement::same_cpu(ctx), pause, ctx.plan.duration_ns, select::max_events(ctx), 1)?;
        Ok(vec![o])
    }
}
