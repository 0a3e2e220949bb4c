//! The `switch` probe: task switch time (Rhealstone's "task switching
//! time"): two threads of equal priority on one CPU hand the CPU back and
//! forth, and each records the time from the other's last clock read before
//! giving the CPU away to its own first clock read after getting it back.
//!
//! Variants:
//! - `futex`: ping-pong on a futex word: store the stamp, flip the turn,
//!   FUTEX_WAKE the other, FUTEX_WAIT for our turn. A sample is wake +
//!   wait + one switch; the woken thread has the same priority, so it waits
//!   in the run queue until the waker blocks (no preemption involved).
//! - `yield`: both threads loop on sched_yield(2); a sample is taken only
//!   when the CPU really went to the other thread (the shared stamp carries
//!   who wrote it), so a yield that returns to its caller is not a switch.
//!
//! Both threads record; the merged entry holds every switch. At SCHED_FIFO
//! the pair keeps its CPU 100 % busy, so RT throttling (950 ms per s by
//! default) can stop both for the rest of a second: that shows as one
//! sample of tens of ms, and is real.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::registry::ProbeInfo;
use super::{select, spawn_measuring, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::futex;
use crate::sys::time::now_ns;

pub(crate) struct SwitchProbe;

const VARIANTS: &[&str] = &["futex", "yield"];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "switch",
    about: "task switch time: two equal-priority threads on one CPU (futex ping-pong, sched_yield)",
    variants: VARIANTS,
    flags: &["--iterations"],
    paced: super::registry::Paced::Unpaced,
    ..ProbeInfo::PLAIN
};

impl Probe for SwitchProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let variants = select::chosen(ctx, "switch", VARIANTS);
        let share = select::share(ctx, variants.len());
        let max = select::max_events(ctx);
        let cpu = ctx.run.cpus.first().copied();
        let specs: Vec<ThreadSpec> = (0..2).map(|index| ThreadSpec { index, cpu, policy: ctx.run.policy, priority: ctx.run.priority, dl: None }).collect();
        let mut out = Vec::new();
        for v in &variants {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            ctx.board.reset(&format!("switch {v}"));
            let yield_mode = v == "yield";
            let stamp = AtomicU64::new(0);
            let turn = AtomicU32::new(0);
            let done = AtomicBool::new(false);
            out.extend(spawn_measuring(ctx, &specs, Some(v.clone()), 0, |spec, rec, stop, barrier| {
                barrier.wait();
                let me = spec.index as u32;
                let start = now_ns();
                let end = start + share;
                // Each thread takes half of --iterations.
                let limit = max.div_ceil(2);
                let mut seq = 0u64;
                if yield_mode {
                    while seq < limit && !stop.load(Ordering::Relaxed) && now_ns() < end {
                        stamp.store(now_ns() << 1 | me as u64, Ordering::Release);
                        // SAFETY: sched_yield takes no arguments.
                        unsafe { libc::sched_yield() };
                        let t = now_ns();
                        let s = stamp.load(Ordering::Acquire);
                        if s & 1 != me as u64 {
                            rec.record(t.saturating_sub(s >> 1), t - start, seq);
                            seq += 1;
                        }
                    }
                    return None;
                }
                let other = 1 - me;
                loop {
                    while turn.load(Ordering::Acquire) != me {
                        futex::wait(&turn, other);
                    }
                    let t = now_ns();
                    if done.load(Ordering::Acquire) {
                        return None;
                    }
                    let s = stamp.load(Ordering::Acquire);
                    if s != 0 {
                        rec.record(t.saturating_sub(s), t - start, seq);
                        seq += 1;
                    }
                    if seq >= limit || stop.load(Ordering::Relaxed) || t >= end {
                        done.store(true, Ordering::Release);
                    }
                    stamp.store(now_ns(), Ordering::Release);
                    turn.store(other, Ordering::Release);
                    if let Err(e) = futex::wake(&turn, 1) {
                        done.store(true, Ordering::Release);
                        return Some(format!("futex wake: {e}"));
                    }
                    if done.load(Ordering::Acquire) {
                        return None;
                    }
                }
            })?);
        }
        Ok(out)
    }
}
