//! The `pi` probe: priority inversion, and Rhealstone's deadlock-break time.
//!
//! Three threads on one CPU (the plan's first), SCHED_FIFO: high (H, at -p,
//! records), medium (M, -p − 1) and low (L, -p − 2), and one mutex with the
//! variant's protocol. Per event:
//!
//! ```text
//! L: sleeps to the next tick, locks the mutex, t0 = now, wakes H
//! H: (preempts L) wakes M, locks the mutex -> blocks, L holds it
//!      none:    M (above L) runs its whole burst first, then L finishes
//!      inherit: L runs at H's priority, above M, and finishes
//! L: computes for HOLD_NS (the rest of its critical section), unlocks
//! H: has the mutex: t1 = now; records t1 - t0; unlocks; waits for the next event
//! M: runs its burst (--pi-burst) now if it has not yet, then waits
//! ```
//!
//! The sample is H's blocking time: from the moment it is made ready and
//! wants the mutex to the moment it holds it. Variants:
//! - `none` (PTHREAD_PRIO_NONE): the inversion shows: every sample is at
//!   least M's burst.
//! - `inherit` (PTHREAD_PRIO_INHERIT, kernel PI futexes): L is raised to H's
//!   priority while H waits: HOLD_NS plus the switches.
//! - `protect` (PTHREAD_PRIO_PROTECT, ceiling = H's priority): L runs at the
//!   ceiling from the moment it locks, so H does not even preempt it; H runs
//!   when L unlocks: HOLD_NS plus the switch.
//! - `deadlock-break` (Rhealstone): `inherit` with no critical section left
//!   after the wake (L unlocks as soon as it gets the CPU back), so the sample
//!   is only the operating system's work to resolve the conflict: H blocks on
//!   the mutex, L is raised above the ready M, runs, unlocks, H runs.
//!
//! Bounds: M's burst is at most 100 ms (checked at plan time) and events are
//! paced by -i but never closer than 2 × (burst + hold), so the three threads
//! use at most half of their CPU; RT throttling stays as the system has it.
//! Shutdown: L ends the loop (share of -D over, --iterations, stop flag), sets
//! `done` and wakes H and M, which see it before blocking again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::registry::ProbeInfo;
use super::{select, spawn_measuring, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::futex::Event;
use crate::sys::pthread::{Mutex, Protocol};
use crate::sys::sched::Policy;
use crate::sys::time::{now_ns, sleep_until_ns};

pub(crate) struct PiProbe;

pub(crate) const VARIANTS: &[&str] = &["none", "inherit", "protect", "deadlock-break"];

/// Largest `--pi-burst`.
pub(crate) const MAX_BURST_NS: u64 = 100_000_000;
/// The low thread's critical section left after it wakes H.
pub(crate) const HOLD_NS: u64 = 20_000;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "pi",
    about: "priority inversion: high's blocking time on a mutex low holds while medium bursts (none, inherit, protect, deadlock-break)",
    variants: VARIANTS,
    priority_levels: 3,
    flags: &["--pi-burst", "--iterations"],
    // Its pace: max(-i, 2 × (burst + hold)).
    paced: super::registry::Paced::AtLeastInterval,
    ..ProbeInfo::PLAIN
};

impl Probe for PiProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let variants = select::chosen(ctx, "pi", VARIANTS);
        let share = select::share(ctx, variants.len());
        let max = select::max_events(ctx);
        let burst = ctx.run.probe.pi_burst_ns;
        let cpu = ctx.run.cpus.first().copied();
        let p = ctx.run.priority.max(3);
        let policy = ctx.run.policy;
        let specs: Vec<ThreadSpec> =
            [p, p - 1, p - 2].iter().enumerate().map(|(index, &priority)| ThreadSpec { index, cpu, policy, priority, dl: None }).collect();
        let mut out = Vec::new();
        for v in &variants {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            ctx.board.reset(&format!("pi {v}"));
            let (protocol, hold) = match v.as_str() {
                "none" => (Protocol::None, HOLD_NS),
                "inherit" => (Protocol::Inherit, HOLD_NS),
                "protect" => (Protocol::Protect(p), HOLD_NS),
                _ => (Protocol::Inherit, 0),
            };
            let pace = ctx.run.interval_ns.max(2 * (burst + hold));
            let mutex = Mutex::new(protocol).map_err(|e| anyhow::anyhow!("pi {v}: {e}"))?;
            let s = Shared { mutex, t0: AtomicU64::new(0), done: AtomicBool::new(false), h_go: Event::new(), m_go: Event::new() };
            let outs = spawn_measuring(ctx, &specs, Some(v.clone()), pace, |spec, rec, stop, barrier| {
                barrier.wait();
                match spec.index {
                    0 => high(&s, rec),
                    1 => medium(&s, burst),
                    _ => low(&s, stop, pace, hold, share, max),
                }
            })?;
            // H's outcome carries the samples; the others' set-up and errors go with it.
            let mut o = super::first_with_all_steps(outs)?;
            o.extra.note = Some(note(v, burst, hold, pace, policy, p));
            out.push(o);
        }
        Ok(out)
    }
}

struct Shared {
    mutex: Mutex,
    t0: AtomicU64,
    done: AtomicBool,
    h_go: Event,
    m_go: Event,
}

impl Shared {
    /// End the loop of every thread (H and M see `done` when woken),
    /// passing on the error that ended it, if any.
    fn end(&self, e: Option<String>) -> Option<String> {
        self.done.store(true, Ordering::Release);
        let _ = self.h_go.post();
        let _ = self.m_go.post();
        e
    }
}

fn high(s: &Shared, rec: &mut super::recorder::Recorder) -> Option<String> {
    let start = now_ns();
    let mut seq = 0u64;
    loop {
        s.h_go.wait();
        if s.done.load(Ordering::Acquire) {
            return None;
        }
        if let Err(e) = s.m_go.post() {
            return s.end(Some(format!("futex wake: {e}")));
        }
        if let Err(e) = s.mutex.lock() {
            return s.end(Some(e));
        }
        let t1 = now_ns();
        if let Err(e) = s.mutex.unlock() {
            return s.end(Some(e));
        }
        let t0 = s.t0.load(Ordering::Acquire);
        rec.record(t1.saturating_sub(t0), t1.saturating_sub(start), seq);
        seq += 1;
    }
}

fn medium(s: &Shared, burst: u64) -> Option<String> {
    loop {
        s.m_go.wait();
        if s.done.load(Ordering::Acquire) {
            return None;
        }
        super::spin_for(burst);
    }
}

fn low(s: &Shared, stop: &AtomicBool, pace: u64, hold: u64, duration: u64, max: u64) -> Option<String> {
    let start = now_ns();
    let end = start + duration;
    let mut next = start + pace;
    let mut sent = 0u64;
    loop {
        if sent >= max || stop.load(Ordering::Relaxed) || next > end {
            return s.end(None);
        }
        if let Err(e) = sleep_until_ns(next) {
            return s.end(Some(format!("clock_nanosleep failed: {e}")));
        }
        let now = now_ns();
        next += pace;
        if next <= now {
            next = now + pace;
        }
        if s.done.load(Ordering::Acquire) {
            return None; // H or M failed; its error is reported
        }
        if let Err(e) = s.mutex.lock() {
            return s.end(Some(e));
        }
        s.t0.store(now_ns(), Ordering::Release);
        if let Err(e) = s.h_go.post() {
            let _ = s.mutex.unlock();
            return s.end(Some(format!("futex wake: {e}")));
        }
        super::spin_for(hold);
        if let Err(e) = s.mutex.unlock() {
            return s.end(Some(e));
        }
        sent += 1;
    }
}

fn note(variant: &str, burst: u64, hold: u64, pace: u64, policy: Policy, p: u8) -> String {
    use crate::units::fmt_ns;
    let what = match variant {
        "none" => "no priority protocol (PTHREAD_PRIO_NONE): the medium thread's burst runs while high waits, so every sample includes it",
        "inherit" => "priority inheritance (PTHREAD_PRIO_INHERIT): low runs at high's priority while high waits",
        "protect" => "priority ceiling (PTHREAD_PRIO_PROTECT, ceiling = high's priority): low runs at the ceiling while it holds the mutex",
        _ => "Rhealstone deadlock-break: priority inheritance with no critical section left after the wake, so a sample is the system's work to resolve the conflict",
    };
    let sched = if policy == Policy::Other {
        " The threads ran as SCHED_OTHER: without real-time priorities there is no inversion to measure; run as root or with CAP_SYS_NICE.".to_string()
    } else {
        String::new()
    };
    format!(
        "{what}. Sample = high's blocking time, from being made ready while low holds the mutex to holding it. Threads high/medium/low at SCHED_{} {p}/{}/{} on one CPU; medium burst {}, low's remaining critical section {}, one event every {}.{sched}",
        policy.name().to_uppercase(),
        p - 1,
        p - 2,
        fmt_ns(burst),
        fmt_ns(hold),
        fmt_ns(pace)
    )
}
