//! The `migrate` probe: real-time priority order across CPUs
//! (rt-migrate-test's method).
//!
//! On N CPUs (the plan's `-a`), N+1 SCHED_FIFO threads of distinct
//! priorities (`-p` − N − 1 … `-p` − 1, index 0 the lowest) are released
//! together each period by a coordinator thread at `-p`. The kernel must
//! give the N CPUs to the N highest at once (pushing and pulling real-time
//! tasks between CPUs); the lowest waits for a CPU to free up.
//!
//! ```text
//!  coordinator (-p)   sleep until release k ── stamp rel ── gen += 1, FUTEX_WAKE all ── wait all done
//!  thread i           FUTEX_WAIT gen ── start_i = now (latency start_i − rel) ── busy until start_i + run ── done
//!  highest thread     before each wait pins itself to the next CPU in turn (as rt-migrate-test),
//!                     so the others must move away from it
//! ```
//!
//! Each thread records its wake-up latency (`start_i − rel`; the lowest
//! one's includes the `--migrate-run` it waits by design). After each period
//! the coordinator checks the order: a *violation* is a period in which a
//! thread started more than `--migrate-max-err` (default 1 ms, as
//! rt-migrate-test's `-m`) after a lower-priority thread had started, i.e.
//! the higher-priority one waited while the lower-priority one ran. Each is
//! counted, and the first [`crate::model::Violations::KEEP`] are kept with
//! the period's time, both threads' priorities and CPUs and the wait.
//! Periods are `--migrate-run` busy plus `--migrate-sleep` idle (20 ms and
//! 100 ms, rt-migrate-test's `-r` and `-s`); a period never starts before
//! every thread finished the last, so each period is one sample per thread:
//! `samples` = periods × (N + 1), no overruns.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::registry::ProbeInfo;
use super::{spawn_measuring_with, spin_for, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::model::{Nanos, Violation, Violations};
use crate::sys::futex;
use crate::sys::sched::{current_cpu, set_current_affinity};
use crate::sys::time::{now_ns, sleep_until_ns};

pub(crate) struct MigrateProbe;

/// Shared state of one run: the release generation, the release time and
/// each thread's start, end and CPU of the current period.
struct Shared {
    gen: AtomicU32,
    done: AtomicU32,
    release: AtomicU64,
    starts: Vec<AtomicU64>,
    cpus: Vec<AtomicUsize>,
    quit: AtomicBool,
    /// The coordinator's start: sample times count from it.
    origin: AtomicU64,
}

/// The threads' priorities, lowest first: `-p` − n … `-p` − 1.
pub(crate) fn priorities(top: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| top - (n - i) as u8).collect()
}

/// The worst violation of one period, if any: for each thread, the earliest
/// start of a lower-priority one; a start later than it by more than
/// `max_err` is a violation. `starts` is in priority order, lowest first.
pub(crate) fn worst_violation(starts: &[u64], max_err: u64) -> Option<(usize, usize, u64)> {
    let mut worst: Option<(usize, usize, u64)> = None;
    for hi in 1..starts.len() {
        let (lo, &first) = starts[..hi].iter().enumerate().min_by_key(|(_, s)| **s).expect("hi >= 1");
        let wait = starts[hi].saturating_sub(first);
        if wait > max_err && worst.is_none_or(|(_, _, w)| wait > w) {
            worst = Some((hi, lo, wait));
        }
    }
    worst
}

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "migrate",
    counts_violations: true,
    about: "RT priority order across CPUs (rt-migrate-test): CPUs+1 SCHED_FIFO threads released together; wake-up latency and violations",
    flags: &["--migrate-run", "--migrate-sleep", "--migrate-max-err"],
    ..ProbeInfo::PLAIN
};

impl Probe for MigrateProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let cpus = ctx.run.cpus.clone();
        let n = cpus.len() + 1;
        let prios = priorities(ctx.run.priority, n);
        let run_ns = ctx.run.probe.migrate_run_ns;
        let period = run_ns + ctx.run.probe.migrate_sleep_ns;
        let max_err = ctx.run.probe.migrate_max_err_ns;
        let duration = ctx.run.duration_ns;
        let policy = ctx.run.policy;
        // n measuring threads and, last, the coordinator at -p.
        let mut specs: Vec<ThreadSpec> =
            prios.iter().enumerate().map(|(index, &priority)| ThreadSpec { index, cpu: None, policy, priority, dl: None }).collect();
        specs.push(ThreadSpec { index: n, cpu: None, policy, priority: ctx.run.priority, dl: None });
        let sh = Shared {
            gen: AtomicU32::new(0),
            done: AtomicU32::new(0),
            release: AtomicU64::new(0),
            starts: (0..n).map(|_| AtomicU64::new(0)).collect(),
            cpus: (0..n).map(|_| AtomicUsize::new(usize::MAX)).collect(),
            quit: AtomicBool::new(false),
            origin: AtomicU64::new(now_ns()),
        };
        // The coordinator (the last spec) hands back the order violations it found.
        let measured = spawn_measuring_with(ctx, &specs, None, period, |spec, rec, stop, gate| {
            let _ = set_current_affinity(&cpus);
            if spec.index == n {
                gate.wait();
                return (None, Some(coordinate(&sh, stop, n, &prios, period, duration, max_err)));
            }
            let highest = spec.index == n - 1;
            gate.wait();
            let mut seen = 0u32;
            let mut k = 0usize;
            loop {
                if highest {
                    // rt-migrate-test: the highest pins itself to each CPU in turn.
                    let _ = set_current_affinity(&[cpus[k % cpus.len()]]);
                    k += 1;
                }
                while sh.gen.load(Ordering::Acquire) == seen {
                    futex::wait(&sh.gen, seen);
                }
                seen = sh.gen.load(Ordering::Acquire);
                if sh.quit.load(Ordering::Acquire) {
                    return (None, None);
                }
                let start = now_ns();
                let rel = sh.release.load(Ordering::Acquire);
                let cpu = current_cpu().unwrap_or(usize::MAX);
                rec.record(start.saturating_sub(rel), start.saturating_sub(sh.origin.load(Ordering::Acquire)), seen as u64 - 1);
                sh.starts[spec.index].store(start, Ordering::Release);
                sh.cpus[spec.index].store(cpu, Ordering::Release);
                spin_for((start + run_ns).saturating_sub(now_ns()));
                if sh.done.fetch_add(1, Ordering::AcqRel) + 1 == n as u32 {
                    let _ = futex::wake(&sh.done, 1);
                }
            }
        })?;
        let mut found = None;
        let mut outs = Vec::with_capacity(measured.len());
        for (o, v) in measured {
            found = found.or(v);
            outs.push(o);
        }
        outs.truncate(n);
        if let Some(first) = outs.first_mut() {
            first.extra.violations = found;
            first.extra.note = Some(format!(
                "{n} SCHED_FIFO threads (priorities {}-{}) on CPUs {}, released together every {}; the lowest waits {} for a CPU by design",
                prios[0],
                prios[n - 1],
                crate::units::cpu_list_str(&cpus),
                crate::units::fmt_ns(period),
                crate::units::fmt_ns(run_ns)
            ));
        }
        Ok(outs)
    }
}

/// The coordinator: release a period, wait until every thread is done,
/// check the order; until the run's end. Ends the threads on return.
fn coordinate(sh: &Shared, stop: &AtomicBool, n: usize, prios: &[u8], period: u64, duration: u64, max_err: u64) -> Violations {
    let t0 = now_ns();
    sh.origin.store(t0, Ordering::Release);
    // The list is allocated before the loop: no allocation while measuring.
    let mut v = Violations { count: 0, periods: 0, max_err_ns: Nanos(max_err), list: Vec::with_capacity(Violations::KEEP) };
    let mut next = t0 + period / 2;
    let mut starts = vec![0u64; n];
    while next + period <= t0 + duration && !stop.load(Ordering::Relaxed) {
        let _ = sleep_until_ns(next);
        sh.done.store(0, Ordering::Release);
        let rel = now_ns();
        sh.release.store(rel, Ordering::Release);
        sh.gen.fetch_add(1, Ordering::AcqRel);
        let _ = futex::wake(&sh.gen, i32::MAX);
        loop {
            let d = sh.done.load(Ordering::Acquire);
            if d == n as u32 {
                break;
            }
            futex::wait(&sh.done, d);
        }
        for (i, s) in starts.iter_mut().enumerate() {
            *s = sh.starts[i].load(Ordering::Acquire);
        }
        if let Some((hi, lo, wait)) = worst_violation(&starts, max_err) {
            v.count += 1;
            if v.list.len() < Violations::KEEP {
                let cpu = |i: usize| Some(sh.cpus[i].load(Ordering::Acquire)).filter(|&c| c != usize::MAX);
                v.list.push(Violation {
                    at_ns: Nanos(rel - t0),
                    period: v.periods,
                    high_priority: prios[hi],
                    high_cpu: cpu(hi),
                    low_priority: prios[lo],
                    low_cpu: cpu(lo),
                    wait_ns: Nanos(wait),
                });
            }
        }
        v.periods += 1;
        next = (next + period).max(now_ns());
    }
    sh.quit.store(true, Ordering::Release);
    sh.gen.fetch_add(1, Ordering::AcqRel);
    let _ = futex::wake(&sh.gen, i32::MAX);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_higher_priority_start_after_a_lower_one_is_a_violation() {
        // Lowest waits (by design): no violation.
        assert_eq!(worst_violation(&[20_000_000, 10_000, 12_000], 1_000_000), None);
        // The highest started 5 ms after the lowest: a violation of the highest against it.
        assert_eq!(worst_violation(&[1_000, 10_000, 5_001_000], 1_000_000), Some((2, 0, 5_000_000)));
        // Within max_err: none.
        assert_eq!(worst_violation(&[1_000, 900_000, 1_000_500], 1_000_000), None);
        assert_eq!(priorities(95, 3), vec![92, 93, 94]);
    }
}
