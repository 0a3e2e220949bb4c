//! The timer probe: wake-up latency of a periodic absolute timer.
//!
//! cyclictest's method, with missed periods counted. Each measuring thread
//! sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, due)`, reads
//! the clock on wake-up and records `latency = now − due` (rule 2). Then
//! [`next_due`] gives the next due time, `due + interval`, or, if the wake-up
//! was so late that it has already passed, counts every period skipped as an
//! overrun (rule 3) and moves `due` past `now`. A period already due when
//! the loop is about to sleep (the last wake-up and its recording took the
//! whole period: `-i 100us` under load) is a *late start*: the sleep would
//! return at once and time the clock read, not a wake-up, so it is no
//! sample; it is a missed period, counted in `overruns` and, apart, in
//! `late_starts` (the result's `late_starts`, docs/probes.md). So
//! `samples + overruns` = the number of periods in the run, exactly, however
//! late the wake-ups were, and `late_starts` ≤ `overruns`.
//!
//! Under `--policy deadline` each thread is a SCHED_DEADLINE task with the
//! period `-i` and waits with cyclicdeadline's method instead (see
//! [`super::dl`]: sched_yield until the reservation's next period; same
//! invariant), and its runtime overruns are counted beside.

use std::sync::atomic::{AtomicBool, Ordering};

use super::recorder::Recorder;
use super::registry::ProbeInfo;
use super::{spawn_measuring_with, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::time::{now_ns, sleep_until_ns};
use crate::trace::LateSamples;

pub(crate) struct TimerProbe;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "timer",
    about: "timer wake-up latency (cyclictest's method, overruns counted)",
    traced: super::registry::Traced::TimerMethod,
    runs_under_deadline: true,
    reads_threads: true,
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
        let outs = spawn_measuring_with(ctx, &specs, None, interval, |spec, rec, stop, barrier| {
            // Threshold tracing: one comparison per sample; a late one is handed over.
            let late = LateSamples::arm(ctx.trace, spec.index, spec.cpu);
            let dl = spec.dl.filter(|_| super::dl::current_is_deadline());
            barrier.wait();
            if let Some(dl) = dl {
                return match super::dl::deadline_loop_with(rec, stop, dl, duration, u64::MAX, |latency, _at, seq| late.after(latency, seq)) {
                    Ok(n) => (None, Some(n)),
                    Err(e) => (Some(e), None),
                };
            }
            (timer_loop_with(rec, stop, interval, duration, u64::MAX, |latency, _at, seq| late.after(latency, seq)), None)
        })?;
        // A SCHED_DEADLINE thread hands back the kernel's count of its runtime overruns.
        let outs: Vec<ThreadOutcome> = outs
            .into_iter()
            .map(|(mut o, dl_overruns)| {
                o.extra.runtime_overruns = dl_overruns;
                o
            })
            .collect();
        Ok(outs)
    }
}

/// The hot loop: O(1) per period, no allocation, lock, format or I/O.
/// Returns an error text only when the sleep itself fails.
#[cfg(test)]
pub(crate) fn timer_loop(rec: &mut Recorder, stop: &AtomicBool, interval: u64, duration: u64) -> Option<String> {
    timer_loop_with(rec, stop, interval, duration, u64::MAX, |_, _, _| {})
}

/// [`timer_loop`] ending after at most `max_samples` samples, calling
/// `on_sample(latency, at, seq)` after each one is recorded (the `periodic`
/// probe derives its period error there). `on_sample` is part of the hot
/// loop and must follow its rules.
#[inline]
pub(crate) fn timer_loop_with(
    rec: &mut Recorder,
    stop: &AtomicBool,
    interval: u64,
    duration: u64,
    max_samples: u64,
    mut on_sample: impl FnMut(u64, u64, u64),
) -> Option<String> {
    let start = now_ns();
    let periods = duration / interval;
    let mut due = start + interval;
    // Periods accounted for: each a sample or an overrun.
    let mut done = 0u64;
    let mut seq = 0u64;
    rec.add_late_starts(0);
    while done < periods && seq < max_samples && !stop.load(Ordering::Relaxed) {
        #[cfg(test)]
        test_late_start(seq, rec.late_starts().unwrap_or(0), due);
        // A late start: the period is already due as the loop is about to
        // sleep (the last wake-up and its recording took the whole period).
        // The sleep would return at once and time the clock read, not a
        // wake-up: the periods due by now are missed, counted apart.
        let before = now_ns();
        if before >= due {
            let (next, missed) = next_due(due, before, interval, None);
            let missed = (missed + 1).min(periods - done);
            rec.add_overruns(missed);
            rec.add_late_starts(missed);
            done += missed;
            due = next;
            continue;
        }
        if let Err(e) = sleep_until_ns(due) {
            return Some(format!("clock_nanosleep failed: {e}"));
        }
        let now = now_ns();
        let latency = now.saturating_sub(due);
        rec.record(latency, now - start, seq);
        on_sample(latency, now - start, seq);
        seq += 1;
        let (next, missed) = next_due(due, now, interval, None);
        // Count only the missed periods that fall inside the run.
        let missed = missed.min(periods - done - 1);
        rec.add_overruns(missed);
        done += 1 + missed;
        due = next;
    }
    None
}

/// The unit tests' forced late start: with `FORCE_LATE_START` set to N,
/// the period after every Nth sample starts late (the loop spins past its
/// due time before it checks) unless late starts already number
/// samples / N, so `late_starts` ≥ ⌊(samples − 1) / N⌋ at the end.
#[cfg(test)]
static FORCE_LATE_START: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(test)]
fn test_late_start(seq: u64, late: u64, due: u64) {
    let n = FORCE_LATE_START.load(Ordering::Relaxed);
    if n > 0 && seq > 0 && seq.is_multiple_of(n) && late < seq / n {
        while now_ns() <= due {
            std::hint::spin_loop();
        }
    }
}

/// The period grid after the wake-up at `now` for the period due at `due`:
/// the next period's due time and the whole periods that started in between
/// (missed: each one an overrun, rule 3), the one place every periodic loop
/// asks (`timer`, `periodic`, `maxrate`, and [`super::dl`]).
///
/// `restart_after`: `None` keeps the grid fixed, as an absolute timer's is
/// (due + k × interval). `Some(d)`: a wake-up more than `d` past `due` (past
/// the period's deadline) restarts the grid from the wake-up, as the
/// SCHED_DEADLINE scheduler restarts a reservation it replenishes late; the
/// periods of the old grid that started before the wake-up are still missed.
#[inline]
pub(crate) fn next_due(due: u64, now: u64, interval: u64, restart_after: Option<u64>) -> (u64, u64) {
    let late = now.saturating_sub(due);
    let missed = late / interval;
    match restart_after {
        Some(d) if late > d => (now + interval, missed),
        _ => (due + (missed + 1) * interval, missed),
    }
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
    fn a_period_due_before_the_sleep_is_a_late_start_not_a_sample() {
        // 1 ms for 200 ms: 200 periods; the one after every 10th sample is
        // made to start past its due time. On a loaded machine an ordinary
        // thread may miss most periods: every attempt must keep the
        // invariants, and attempts repeat (at most 10) until one had samples
        // enough to force 5 late starts.
        let mut forced = 0;
        for _ in 0..10 {
            let stop = AtomicBool::new(false);
            let mut rec = Recorder::new(0, 100_000_000, 8);
            FORCE_LATE_START.store(10, Ordering::Relaxed);
            timer_loop(&mut rec, &stop, 1_000_000, 200_000_000);
            FORCE_LATE_START.store(0, Ordering::Relaxed);
            let late = rec.late_starts().expect("the timer loop counts late starts");
            forced = rec.samples().saturating_sub(1) / 10;
            assert!(late >= forced, "{forced} forced late starts, {late} counted");
            assert!(late <= rec.overruns(), "late starts are missed periods: {late} of {} overruns", rec.overruns());
            assert_eq!(rec.samples() + rec.overruns(), 200);
            if forced >= 5 {
                break;
            }
        }
        assert!(forced >= 5, "10 attempts of 200 periods had too few samples to force 5 late starts");
    }

    #[test]
    fn stop_flag_ends_the_loop_at_once() {
        let stop = AtomicBool::new(true);
        let mut rec = Recorder::new(0, 1_000_000_000, 8);
        timer_loop(&mut rec, &stop, 1_000_000, 10_000_000_000);
        assert_eq!(rec.samples(), 0);
    }

    #[test]
    fn next_due_counts_the_periods_a_late_wake_up_skipped() {
        // Fixed grid, 1 ms: on time, late within the period, exactly one
        // period late, and 3.5 periods late.
        assert_eq!(next_due(10_000_000, 10_000_000, 1_000_000, None), (11_000_000, 0));
        assert_eq!(next_due(10_000_000, 10_999_999, 1_000_000, None), (11_000_000, 0));
        assert_eq!(next_due(10_000_000, 11_000_000, 1_000_000, None), (12_000_000, 1));
        assert_eq!(next_due(10_000_000, 13_500_000, 1_000_000, None), (14_000_000, 3));
        // Restarting grid, deadline 600 µs: within the deadline the grid
        // stays; past it the next period is due one interval after the
        // wake-up, and the old grid's periods started before it are missed.
        assert_eq!(next_due(10_000_000, 10_600_000, 1_000_000, Some(600_000)), (11_000_000, 0));
        assert_eq!(next_due(10_000_000, 10_600_001, 1_000_000, Some(600_000)), (11_600_001, 0));
        assert_eq!(next_due(10_000_000, 13_500_000, 1_000_000, Some(600_000)), (14_500_000, 3));
    }
}
