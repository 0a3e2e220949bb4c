//! `--policy deadline`: the timer and periodic probes' measuring loop for a
//! SCHED_DEADLINE thread (cyclicdeadline's method), and the runtime overruns
//! the kernel reports.
//!
//! Method. The thread is a SCHED_DEADLINE task with reservation (runtime,
//! deadline, period = `-i`, see [`crate::model::ProbeOptions::dl_params`]).
//! Each period it gives up the rest of its runtime with sched_yield(2): the
//! kernel throttles it until the reservation is replenished at the start of
//! the next period, when the deadline scheduler makes it runnable. On return
//! it reads the clock and records `latency = now − period start` (rule 2),
//! as cyclicdeadline does. The wake-up is the deadline scheduler's own
//! (its replenishment timer and EDF pick), not a timer the task armed, so
//! this is the latency a SCHED_DEADLINE task sees.
//!
//! ```text
//!   period k start                    period k+1 start
//!   |  run: clock read, record, yield |  replenish -> runnable -> runs
//!   |---------------------------------|--latency-->|
//! ```
//!
//! The period grid ([`DlGrid`]). The kernel does not tell user space where a
//! CBS period starts; the grid starts at the thread's first clock read after
//! the start gate (its first period is running then) and is moved earlier
//! whenever a wake-up comes before it (so the start of every period is the
//! earliest the kernel has shown it to be; a latency is never below 0 by
//! construction, and at most the cost of one clock read is hidden in the
//! first periods).
//!
//! A wake-up past its period's deadline (latency > `--dl-deadline`) restarts
//! the grid from the wake-up: the kernel replenishes a reservation whose
//! deadline has passed from that moment (a new deadline and period start at
//! the replenishment, `replenish_dl_entity`), so the task's later periods are
//! on the new grid, and measuring them against the old one would count every
//! later period late by the same offset (cyclicdeadline keeps its grid and
//! does). The next due time is [`super::timer::next_due`], shared with the
//! timer probe.
//!
//! Invariant, as the timer probe: the run is `-D / period` periods, each a
//! sample or an overrun, so `samples + overruns` = the periods of the run,
//! exactly. The periods the old grid started before a late wake-up are
//! overruns (missed), whether or not the grid restarts. A run whose grid
//! restarts lasts longer than `-D` (each restart adds the part of a period
//! between the old grid and the wake-up; at most twice `-D` in all). Beside
//! them the *runtime* overruns: with SCHED_FLAG_DL_OVERRUN the kernel sends
//! SIGXCPU each time the thread uses up its runtime before its period ends;
//! they are counted per thread (`runtime_overruns`) and are not missed
//! periods.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::recorder::Recorder;
use crate::sys::sched::yield_now;
use crate::sys::time::now_ns;

thread_local! {
    /// SIGXCPU signals this thread took (runtime overruns).
    static RUNTIME_OVERRUNS: Cell<u64> = const { Cell::new(0) };
}

extern "C" fn on_sigxcpu(_: libc::c_int) {
    // A const-initialised thread-local Cell: no allocation, no lock, so
    // async-signal-safe. The kernel sends SIGXCPU to the process and it is
    // taken by the overrunning thread, the one running when it is sent,
    // which never blocks SIGXCPU.
    RUNTIME_OVERRUNS.with(|c| c.set(c.get() + 1));
}

/// Whether the SIGXCPU handler was installed (once per process).
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();

/// Install the SIGXCPU handler (once per process) before a thread asks for
/// SCHED_FLAG_DL_OVERRUN: SIGXCPU's default action ends the process.
pub(crate) fn install_overrun_handler() -> Result<(), String> {
    HANDLER
        .get_or_init(|| {
            // SAFETY: a zeroed sigaction is valid storage; the handler is an
            // extern "C" fn(c_int) that only touches a thread-local Cell.
            let rc = unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigxcpu as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(libc::SIGXCPU, &sa, std::ptr::null_mut())
            };
            if rc != 0 {
                return Err(format!("sigaction(SIGXCPU): {}", nix::errno::Errno::last()));
            }
            Ok(())
        })
        .clone()
}

/// Runtime overruns the calling thread has taken so far.
pub(crate) fn runtime_overruns() -> u64 {
    RUNTIME_OVERRUNS.with(|c| c.get())
}

/// Is the calling thread a SCHED_DEADLINE task now (its set-up worked)?
pub(crate) fn current_is_deadline() -> bool {
    // SAFETY: pid 0 is the calling thread; sched_getscheduler only reads.
    unsafe { libc::sched_getscheduler(0) == crate::sys::sched::SCHED_DEADLINE }
}

/// What a sched_setattr(SCHED_DEADLINE) error means, with the fix.
pub(crate) fn why(e: nix::errno::Errno) -> String {
    use nix::errno::Errno;
    match e {
        Errno::EBUSY => "the kernel's admission test refused it (EBUSY): the deadline bandwidth, kernel.sched_rt_runtime_us / sched_rt_period_us of each CPU, is used up; lower --dl-runtime or -t, or raise kernel.sched_rt_runtime_us".into(),
        Errno::EPERM => "not permitted (EPERM): run as root (CAP_SYS_NICE); as root, the CPUs do not span the root domain (isolcpus= or a cpuset partition) or sched_rt_runtime_us is 0: see `rtscope doctor`".into(),
        Errno::EINVAL => "invalid reservation (EINVAL): the kernel needs 1024ns <= runtime <= deadline <= period, the period within kernel.sched_deadline_period_{min,max}_us".into(),
        e => e.to_string(),
    }
}

/// The period grid of one SCHED_DEADLINE thread, fed one wake-up at a time
/// (see the module's "period grid"). Pure arithmetic, O(1) per wake-up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DlGrid {
    /// Where the grid started (moved earlier with it): samples' `at`.
    start: u64,
    /// Start of the period the next wake-up is for.
    due: u64,
    interval: u64,
    /// The reservation's relative deadline: a later wake-up restarts the grid.
    deadline: u64,
    /// Periods in the run, and those accounted for (a sample or an overrun).
    periods: u64,
    done: u64,
}

/// One wake-up as the grid sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wake {
    /// now − the start of its period.
    pub(crate) latency: u64,
    /// now − the grid's start.
    pub(crate) at: u64,
    /// Periods that started before this wake-up and got none (overruns).
    pub(crate) missed: u64,
}

impl DlGrid {
    /// The grid of a run of `duration` (`duration / interval` periods) whose
    /// first period is running at `start`.
    pub(crate) fn new(start: u64, interval: u64, deadline: u64, duration: u64) -> DlGrid {
        DlGrid { start, due: start + interval, interval, deadline, periods: duration / interval, done: 0 }
    }

    /// Are periods of the run left?
    #[inline]
    pub(crate) fn running(&self) -> bool {
        self.done < self.periods
    }

    /// Take the wake-up at `now` (while [`DlGrid::running`]).
    #[inline]
    pub(crate) fn wake(&mut self, now: u64) -> Wake {
        if now < self.due {
            // The kernel's period started before the grid's: move the grid.
            self.start = self.start.saturating_sub(self.due - now);
            self.due = now;
        }
        let latency = now - self.due;
        let (next, missed) = super::timer::next_due(self.due, now, self.interval, Some(self.deadline));
        // Only the missed periods that fall inside the run.
        let missed = missed.min(self.periods - self.done - 1);
        self.done += 1 + missed;
        self.due = next;
        Wake { latency, at: now - self.start, missed }
    }
}

/// The hot loop under SCHED_DEADLINE: as `timer::timer_loop_with` (same
/// arguments, same invariant), waiting with sched_yield instead of an
/// absolute sleep, on the grid of a reservation with relative deadline
/// `deadline`. O(1) per period, no allocation, lock, format or I/O.
/// Returns the runtime overruns of the loop.
#[inline]
pub(crate) fn deadline_loop_with(
    rec: &mut Recorder,
    stop: &AtomicBool,
    interval: u64,
    deadline: u64,
    duration: u64,
    max_samples: u64,
    mut on_sample: impl FnMut(u64, u64, u64),
) -> u64 {
    let overruns0 = runtime_overruns();
    let mut grid = DlGrid::new(now_ns(), interval, deadline, duration);
    let mut seq = 0u64;
    while grid.running() && seq < max_samples && !stop.load(Ordering::Relaxed) {
        yield_now();
        let w = grid.wake(now_ns());
        rec.record(w.latency, w.at, seq);
        on_sample(w.latency, w.at, seq);
        rec.add_overruns(w.missed);
        seq += 1;
    }
    runtime_overruns() - overruns0
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Replay `wakes` (absolute ns) on a grid starting at 100 ms, 4 ms
    /// periods, deadline `deadline`, 40 ms run (10 periods): the wake-ups
    /// taken and the (samples, overruns) it counted.
    fn replay(deadline: u64, wakes: &[u64]) -> (Vec<Wake>, u64, u64) {
        let mut g = DlGrid::new(100 * MS, 4 * MS, deadline, 40 * MS);
        let mut taken = Vec::new();
        for &now in wakes {
            if !g.running() {
                break;
            }
            taken.push(g.wake(now));
        }
        let samples = taken.len() as u64;
        let overruns = taken.iter().map(|w| w.missed).sum();
        assert!(!g.running(), "the replay ends the run");
        (taken, samples, overruns)
    }

    #[test]
    fn a_wake_up_past_the_deadline_restarts_the_grid_and_counts_the_missed_periods() {
        // Periods due at 104, 108, ... ms. On time (+10 µs) twice; then a
        // wake-up at 119 ms for the period due at 112: 7 ms late, past the
        // 4 ms deadline, so the period started at 116 is missed and the
        // grid restarts (next due 123). The next wake-ups come 10 µs after
        // the new grid's periods, as the kernel's restarted reservation
        // wakes the task.
        let wakes = [104, 108].map(|m| m * MS + 10_000);
        let later = [123, 127, 131, 135, 139, 143].map(|m| m * MS + 10_000);
        let all: Vec<u64> = wakes.iter().copied().chain([119 * MS]).chain(later).collect();
        let (w, samples, overruns) = replay(4 * MS, &all);
        assert_eq!(w[2], Wake { latency: 7 * MS, at: 19 * MS, missed: 1 });
        // After the restart no period is late by the old grid's offset.
        assert!(w[3..].iter().all(|x| x.latency == 10_000 && x.missed == 0), "{w:?}");
        assert_eq!((samples, overruns), (9, 1));
        assert_eq!(samples + overruns, 10, "every period a sample or an overrun");
    }

    #[test]
    fn a_late_wake_up_within_the_deadline_keeps_the_grid() {
        // 3 ms late with a 4 ms deadline: the kernel keeps the period, so
        // does the grid; the next wake-up on time has a small latency.
        let all: Vec<u64> = [104 * MS, 111 * MS].into_iter().chain((2..10).map(|k| (104 + 4 * k) * MS + 5_000)).collect();
        let (w, samples, overruns) = replay(4 * MS, &all);
        assert_eq!(w[1], Wake { latency: 3 * MS, at: 11 * MS, missed: 0 });
        assert_eq!(w[2].latency, 5_000);
        assert_eq!((samples, overruns), (10, 0));
    }

    #[test]
    fn a_shorter_deadline_restarts_sooner_and_the_missed_periods_stay_inside_the_run() {
        // Deadline 2 ms: a wake-up 3 ms late restarts the grid although no
        // period was missed; the next period is due 4 ms after it.
        let mut g = DlGrid::new(100 * MS, 4 * MS, 2 * MS, 40 * MS);
        assert_eq!(g.wake(107 * MS), Wake { latency: 3 * MS, at: 7 * MS, missed: 0 });
        assert_eq!(g.wake(111 * MS + 1), Wake { latency: 1, at: 11 * MS + 1, missed: 0 });
        // 40 ms late near the end: only the 7 periods left are counted.
        let w = g.wake(155 * MS);
        assert_eq!(w.missed, 7);
        assert!(!g.running());
    }

    #[test]
    fn an_early_wake_up_moves_the_grid_earlier() {
        let mut g = DlGrid::new(100 * MS, 4 * MS, 4 * MS, 40 * MS);
        // The kernel's period started 1 ms before the grid's.
        assert_eq!(g.wake(103 * MS), Wake { latency: 0, at: 4 * MS, missed: 0 });
        assert_eq!(g.wake(107 * MS + 20_000), Wake { latency: 20_000, at: 8 * MS + 20_000, missed: 0 });
    }
}
