//! `<time.h>`: the one clock of rtscope (rule 1) and absolute sleeps (rule 2).
//!
//! [`now_ns`] reads CLOCK_MONOTONIC through glibc, which uses the vDSO: no
//! system call. [`sleep_until_ns`] is `clock_nanosleep(CLOCK_MONOTONIC,
//! TIMER_ABSTIME)`; see clock_nanosleep(2): it returns the error number
//! instead of setting errno.

use nix::errno::Errno;

/// CLOCK_MONOTONIC now, in nanoseconds. See clock_gettime(2).
#[inline(always)]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC_RAW now, in nanoseconds (vDSO, as [`now_ns`]): the
/// clock NTP does not slew, which keeps the kernel scheduler clock's rate —
/// the clock of a SCHED_DEADLINE task's period grid (`measure::dl`), which
/// CLOCK_MONOTONIC drifts from by the NTP correction (-2.15 ppm on the
/// development VM: 21 µs over a 10 s run). See clock_gettime(2).
#[inline(always)]
pub(crate) fn now_raw_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_RAW exists since Linux 2.6.28.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep until CLOCK_MONOTONIC reaches `deadline_ns`. Retries on EINTR; any
/// other error is returned.
#[inline]
pub(crate) fn sleep_until_ns(deadline_ns: u64) -> nix::Result<()> {
    let ts = libc::timespec { tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t, tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long };
    loop {
        // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be
        // null with TIMER_ABSTIME.
        let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            e => return Err(Errno::from_raw(e)),
        }
    }
}

/// Cost of one [`now_ns`] call: (median, min) over `rounds` batches of 1000
/// back-to-back reads (rule 7).
pub(crate) fn calibrate_clock_read(rounds: usize) -> (u64, u64) {
    let mut per_read: Vec<u64> = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t0 = now_ns();
        let mut x = 0u64;
        for _ in 0..1000 {
            x = x.wrapping_add(std::hint::black_box(now_ns()));
        }
        std::hint::black_box(x);
        per_read.push((now_ns() - t0) / 1000);
    }
    per_read.sort_unstable();
    (per_read[per_read.len() / 2], per_read[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_sleep_reaches_deadline() {
        let a = now_ns();
        let deadline = a + 2_000_000;
        sleep_until_ns(deadline).unwrap();
        let b = now_ns();
        assert!(b >= deadline, "woke before the deadline: {b} < {deadline}");
    }

    #[test]
    fn calibration_is_plausible() {
        let (med, min) = calibrate_clock_read(11);
        assert!(min <= med);
        assert!(med < 100_000, "one clock read took {med} ns");
    }
}
