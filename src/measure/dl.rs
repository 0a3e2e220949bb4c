//! `--policy deadline`: the timer and periodic probes' measuring loop for a
//! SCHED_DEADLINE thread (cyclicdeadline's method), and the runtime overruns
//! the kernel reports.
//!
//! Method. The thread is a SCHED_DEADLINE task with reservation (runtime,
//! deadline, period = `-i`, see [`crate::measure::ProbeSettings::dl_params`]).
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
//! The period grid. The kernel does not tell user space where a CBS period
//! starts; the grid starts at the thread's first clock read after the start
//! gate (its first period is running then) and is moved earlier whenever a
//! wake-up comes before it (so the start of every period is the earliest the
//! kernel has shown it to be; a latency is never below 0 by construction, and
//! at most the cost of one clock read is hidden in the first periods).
//!
//! Invariant, as the timer probe: a wake-up so late that later periods have
//! started counts each skipped period as an overrun, so `samples + overruns`
//! = the periods of the run, exactly. Beside them the *runtime* overruns:
//! with SCHED_FLAG_DL_OVERRUN the kernel sends SIGXCPU each time the thread
//! uses up its runtime before its period ends; they are counted per thread
//! (`runtime_overruns`) and are not missed periods. After a missed period the
//! kernel may restart the reservation's period at the late wake-up; the grid
//! is kept (as cyclicdeadline's), so samples after it are measured against
//! the original grid: an overestimate, never hidden.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

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

static HANDLER: Once = Once::new();
static HANDLER_ERR: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Install the SIGXCPU handler (once per process) before a thread asks for
/// SCHED_FLAG_DL_OVERRUN: SIGXCPU's default action ends the process.
pub fn install_overrun_handler() -> Result<(), String> {
    HANDLER.call_once(|| {
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
            *HANDLER_ERR.lock().unwrap() = Some(format!("sigaction(SIGXCPU): {}", nix::errno::Errno::last()));
        }
    });
    match HANDLER_ERR.lock().unwrap().clone() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runtime overruns the calling thread has taken so far.
pub fn runtime_overruns() -> u64 {
    RUNTIME_OVERRUNS.with(|c| c.get())
}

/// Is the calling thread a SCHED_DEADLINE task now (its set-up worked)?
pub fn current_is_deadline() -> bool {
    // SAFETY: pid 0 is the calling thread; sched_getscheduler only reads.
    unsafe { libc::sched_getscheduler(0) == crate::sys::sched::SCHED_DEADLINE }
}

/// What a sched_setattr(SCHED_DEADLINE) error means, with the fix.
pub fn why(e: nix::errno::Errno) -> String {
    use nix::errno::Errno;
    match e {
        Errno::EBUSY => "the kernel's admission test refused it (EBUSY): the deadline bandwidth, kernel.sched_rt_runtime_us / sched_rt_period_us of each CPU, is used up; lower --dl-runtime or -t, or raise kernel.sched_rt_runtime_us".into(),
        Errno::EPERM => "not permitted (EPERM): run as root (CAP_SYS_NICE); as root, the CPUs do not span the root domain (isolcpus= or a cpuset partition) or sched_rt_runtime_us is 0: see `rtscope doctor`".into(),
        Errno::EINVAL => "invalid reservation (EINVAL): the kernel needs 1024ns <= runtime <= deadline <= period, the period within kernel.sched_deadline_period_{min,max}_us".into(),
        e => e.to_string(),
    }
}

/// The hot loop under SCHED_DEADLINE: as `timer::timer_loop_with` (same
/// arguments, same invariant), waiting with sched_yield instead of an
/// absolute sleep. O(1) per period, no allocation, lock, format or I/O.
/// Returns the runtime overruns of the loop.
#[inline]
pub fn deadline_loop_with(
    rec: &mut Recorder,
    stop: &AtomicBool,
    interval: u64,
    duration: u64,
    max_samples: u64,
    mut on_sample: impl FnMut(u64, u64, u64),
) -> u64 {
    let overruns0 = runtime_overruns();
    let mut start = now_ns();
    let mut end = start + duration;
    let mut due = start + interval;
    let mut seq = 0u64;
    while due <= end && seq < max_samples && !stop.load(Ordering::Relaxed) {
        yield_now();
        let now = now_ns();
        if now < due {
            // The kernel's period started before the grid's: move the grid
            // (and the run's end with it, so the period count stays).
            let early = due - now;
            start -= early;
            end -= early;
            due = now;
        }
        let latency = now - due;
        rec.record(latency, now - start, seq);
        on_sample(latency, now - start, seq);
        seq += 1;
        due += interval;
        if now >= due {
            let missed = (now - due) / interval + 1;
            let in_run = if due <= end { ((end - due) / interval + 1).min(missed) } else { 0 };
            rec.add_overruns(in_run);
            due += missed * interval;
        }
    }
    runtime_overruns() - overruns0
}
