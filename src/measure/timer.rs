//! The timer probe: wake-up latency of a periodic absolute timer.
//!
//! cyclictest's method, with missed periods counted. Each measuring thread
//! sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, due)`, reads
//! the clock on wake-up and records `latency = now − due` (rule 2). Then
//! `due += interval`; if the wake-up was so late that the next due time has
//! already passed, every period skipped is counted as an overrun (rule 3) and
//! `due` moves past `now`. So `samples + overruns` = the number of periods in
//! the run, exactly, however late the wake-ups were.
//!
//! Under `--policy deadline` each thread is a SCHED_DEADLINE task with the
//! period `-i` and waits with cyclicdeadline's method instead (see
//! [`super::dl`]: sched_yield until the reservation's next period; same
//! invariant), and its runtime overruns are counted beside.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::recorder::Recorder;
use super::registry::ProbeInfo;
use super::{spawn_measuring, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::time::{now_ns, sleep_until_ns};
use crate::trace::LateSamples;

pub struct TimerProbe;

/// This probe's facts (see [`super::registry`]).
pub static INFO: ProbeInfo = ProbeInfo {
    name: "timer",
    about: "timer wake-up latency (cyclictest's method, overruns counted)",
    traced: super::registry::Traced::TimerMethod,
    runs_under_deadline: true,
    ..ProbeInfo::PLAIN
};

impl Probe for TimerProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let specs: Vec<ThreadSpec> = (0..ctx.run.threads).map(|i| ThreadSpec::from_run(ctx.run, i)).collect();
        let interval = ctx.run.interval_ns;
        let duration = ctx.run.duration_ns;
        let dl_overruns: Mutex<Vec<Option<u64>>> = Mutex::new(vec![None; specs.len()]);
        let mut outs = spawn_measuring(ctx, &specs, None, interval, |spec, rec, stop, barrier| {
            // Threshold tracing: one comparison per sample; a late one is handed over.
            let late = LateSamples::arm(ctx.trace, spec.index, spec.cpu);
            let deadline = spec.dl.is_some() && super::dl::current_is_deadline();
            barrier.wait();
            if deadline {
                let n = super::dl::deadline_loop_with(rec, stop, interval, duration, u64::MAX, |latency, _at, seq| late.after(latency, seq));
                dl_overruns.lock().unwrap()[spec.index] = Some(n);
                return None;
            }
            timer_loop_with(rec, stop, interval, duration, u64::MAX, |latency, _at, seq| late.after(latency, seq))
        })?;
        let dl_overruns = dl_overruns.into_inner().unwrap();
        for o in outs.iter_mut() {
            o.extra.runtime_overruns = dl_overruns.get(o.thread).copied().flatten();
        }
        Ok(outs)
    }
}

/// The hot loop: O(1) per period, no allocation, lock, format or I/O.
/// Returns an error text only when the sleep itself fails.
pub fn timer_loop(rec: &mut Recorder, stop: &AtomicBool, interval: u64, duration: u64) -> Option<String> {
    timer_loop_with(rec, stop, interval, duration, u64::MAX, |_, _, _| {})
}

/// [`timer_loop`] ending after at most `max_samples` samples, calling
/// `on_sample(latency, at, seq)` after each one is recorded (the `periodic`
/// probe derives its period error there). `on_sample` is part of the hot
/// loop and must follow its rules.
#[inline]
pub fn timer_loop_with(
    rec: &mut Recorder,
    stop: &AtomicBool,
    interval: u64,
    duration: u64,
    max_samples: u64,
    mut on_sample: impl FnMut(u64, u64, u64),
) -> Option<String> {
    let start = now_ns();
    let end = start + duration;
    let mut due = start + interval;
    let mut seq = 0u64;
    while due <= end && seq < max_samples && !stop.load(Ordering::Relaxed) {
        if let Err(e) = sleep_until_ns(due) {
            return Some(format!("clock_nanosleep failed: {e}"));
        }
        let now = now_ns();
        let latency = now.saturating_sub(due);
        rec.record(latency, now - start, seq);
        on_sample(latency, now - start, seq);
        seq += 1;
        due += interval;
        if now >= due {
            let missed = (now - due) / interval + 1;
            // Count only the missed periods that fall inside the run.
            let in_run = if due <= end { ((end - due) / interval + 1).min(missed) } else { 0 };
            rec.add_overruns(in_run);
            due += missed * interval;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_period_is_either_a_sample_or_an_overrun() {
        let stop = AtomicBool::new(false);
        let mut rec = Recorder::new(0, 200_000_000, 8);
        // 100 µs for 200 ms: 2000 periods, whether or not the machine keeps up.
        timer_loop(&mut rec, &stop, 100_000, 200_000_000);
        assert_eq!(rec.samples() + rec.overruns(), 2000);
    }

    #[test]
    fn stop_flag_ends_the_loop_at_once() {
        let stop = AtomicBool::new(true);
        let mut rec = Recorder::new(0, 1_000_000_000, 8);
        timer_loop(&mut rec, &stop, 1_000_000, 10_000_000_000);
        assert_eq!(rec.samples(), 0);
    }
}
