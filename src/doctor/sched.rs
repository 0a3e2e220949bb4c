//! Scheduler sysctls: real-time throttling (`sched_rt_runtime_us` / `sched_rt_period_us`),
//! `timer_migration`, and what SCHED_DEADLINE tasks (`--policy deadline`) depend on: the
//! deadline bandwidth (the same sysctls), the HRTICK feature (runtimes under 2 ms), and
//! isolated CPUs, which are outside the root domain a deadline task must span.
//!
//! Throttling stops all SCHED_FIFO/RR tasks of a CPU once they used the runtime budget in a
//! period; timer migration lets timers armed on a busy CPU be moved to (or from) others.

use super::Evidence;
use super::{Ctx, Finding, Severity};

/// The fix for RT throttling (also the advice of a traced window that shows it: `trace::advice`).
pub(crate) const FIX_RT_THROTTLING: &str =
    "Only if all real-time tasks on the host are trusted: `sysctl -w kernel.sched_rt_runtime_us=-1` (persist in /etc/sysctl.d/).";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let (rt_ev, runtime) = ctx.read("/proc/sys/kernel/sched_rt_runtime_us");
    let (p_ev, period) = ctx.read("/proc/sys/kernel/sched_rt_period_us");
    let runtime_n: Option<i64> = runtime.as_deref().and_then(|v| v.parse().ok());
    let period_n: Option<i64> = period.as_deref().and_then(|v| v.parse().ok());
    let ev = vec![rt_ev, p_ev];
    let f = match (runtime_n, period_n) {
        (Some(-1), _) => Finding::new("sched.rt_throttling", Severity::Ok, "RT throttling is disabled (sched_rt_runtime_us = -1)").why(
            "Real-time tasks are never stopped to let ordinary tasks run. A runaway \
                 SCHED_FIFO task can now hang its CPU — watch RT loads.",
        ),
        (Some(r), Some(p)) if p > 0 => {
            let pct = r as f64 * 100.0 / p as f64;
            Finding::new("sched.rt_throttling", Severity::Info, format!("RT throttling is on: real-time tasks may use {r} µs of every {p} µs ({pct:.0}%)"))
                .why(format!(
                    "When the SCHED_FIFO/RR tasks of a CPU use more than {pct:.0}% of a period they are \
                 all stopped for the rest of it ({} µs) — a measuring thread that sleeps never \
                 hits this, but a spinning real-time load or a busy-polling probe does, and then \
                 shows a latency spike of that size.",
                    p - r
                ))
                .fix(FIX_RT_THROTTLING)
        }
        _ => Finding::new("sched.rt_throttling", Severity::Info, "RT throttling settings are not exposed or unreadable")
            .why("rtscope cannot tell whether real-time tasks are throttled (needs /proc/sys/kernel/sched_rt_runtime_us)."),
    };
    out.push(f.evidence(ev));

    let (tm_ev, tm) = ctx.read("/proc/sys/kernel/timer_migration");
    let f = match tm.as_deref() {
        Some("1") => Finding::new("sched.timer_migration", Severity::Info, "Timer migration is on")
            .why(
                "With timer_migration=1, timers armed by other CPUs' tasks can be placed on an idle \
                 measured CPU (and expire there), adding interrupts the measured task did not ask for.",
            )
            .fix("`sysctl -w kernel.timer_migration=0` (the tuned realtime profile does this)."),
        Some("0") => Finding::new("sched.timer_migration", Severity::Ok, "Timer migration is off").why("Timers stay on the CPU that armed them."),
        _ => Finding::new("sched.timer_migration", Severity::Info, "Timer migration setting is not exposed by this kernel")
            .why("Without /proc/sys/kernel/timer_migration (CONFIG_SMP and NO_HZ_COMMON) it cannot be checked."),
    };
    out.push(f.evidence(vec![tm_ev]));
    out.extend(deadline(ctx, runtime_n, period_n));
    out
}

/// SCHED_DEADLINE's admission limit, HRTICK and the root domain.
fn deadline(ctx: &Ctx, runtime: Option<i64>, period: Option<i64>) -> Vec<Finding> {
    let mut out = Vec::new();
    let (rt_ev, _) = ctx.read("/proc/sys/kernel/sched_rt_runtime_us");
    let (p_ev, _) = ctx.read("/proc/sys/kernel/sched_rt_period_us");
    let f = match (runtime, period) {
        (Some(-1), _) => Finding::new("sched.dl_bandwidth", Severity::Info, "Deadline admission control is off (sched_rt_runtime_us = -1)")
            .why("SCHED_DEADLINE tasks are admitted whatever they reserve: an over-committed set misses deadlines instead of being refused at sched_setattr.")
            .fix("`sysctl -w kernel.sched_rt_runtime_us=950000` (the default) to have the kernel refuse reservations it cannot keep."),
        (Some(0), _) => Finding::new("sched.dl_bandwidth", Severity::Warn, "No deadline bandwidth (sched_rt_runtime_us = 0): every SCHED_DEADLINE task is refused")
            .why("The admission test allows deadline tasks runtime/period = 0 of each CPU, so sched_setattr fails (EBUSY or EPERM) and `--policy deadline` cannot run.")
            .fix("`sysctl -w kernel.sched_rt_runtime_us=950000`."),
        (Some(r), Some(p)) if p > 0 => Finding::new(
            "sched.dl_bandwidth",
            Severity::Info,
            format!("SCHED_DEADLINE tasks may reserve up to {:.0}% of each CPU (sched_rt_runtime_us / sched_rt_period_us)", r as f64 * 100.0 / p as f64),
        )
        .why("The kernel admits a deadline task only while the sum of runtime/period of all deadline tasks of a root domain stays under this share times its CPUs; beyond it sched_setattr fails with EBUSY (rtscope says so before measuring).")
        .fix("Lower --dl-runtime or -t, or (if every real-time task is trusted) raise kernel.sched_rt_runtime_us."),
        _ => Finding::new("sched.dl_bandwidth", Severity::Info, "Deadline bandwidth settings are not exposed or unreadable")
            .why("rtscope cannot tell how much SCHED_DEADLINE tasks may reserve (needs /proc/sys/kernel/sched_rt_runtime_us)."),
    };
    out.push(f.evidence(vec![rt_ev, p_ev]));

    let paths = ["/sys/kernel/debug/sched/features", "/sys/kernel/debug/sched_features"];
    let read: Vec<(Evidence, Option<String>)> = paths.iter().map(|p| ctx.read(p)).collect();
    let features = read.iter().find_map(|(_, v)| v.clone());
    let ev: Vec<Evidence> = read.into_iter().map(|(e, _)| e).collect();
    let f = match features.as_deref().map(|s| s.split_whitespace().any(|w| w == "HRTICK")) {
        Some(true) => Finding::new("sched.hrtick", Severity::Ok, "HRTICK is on: SCHED_DEADLINE runtimes are enforced with a high-resolution timer")
            .why("Runtimes under 2 ms are enforced precisely; `--policy deadline` accepts them."),
        Some(false) => Finding::new("sched.hrtick", Severity::Info, "HRTICK is off: SCHED_DEADLINE runtimes are enforced at the scheduler tick")
            .why("A runtime under 2 ms would overrun by up to a tick before the kernel notices; rtscope (as cyclicdeadline) refuses such runtimes.")
            .fix("As root: `echo HRTICK > /sys/kernel/debug/sched/features` (until reboot), or use runtimes of 2 ms or more (-i 4ms)."),
        None => Finding::new("sched.hrtick", Severity::Info, "The scheduler features (HRTICK) cannot be read: debugfs is not mounted or not readable")
            .why("Without them rtscope, as cyclicdeadline, refuses SCHED_DEADLINE runtimes under 2 ms.")
            .fix("As root: `mount -t debugfs none /sys/kernel/debug`, then `echo HRTICK > /sys/kernel/debug/sched/features`."),
    };
    out.push(f.evidence(ev));

    let (iso_ev, iso) = ctx.read("/sys/devices/system/cpu/isolated");
    let iso = iso.unwrap_or_default();
    let f = if iso.trim().is_empty() {
        Finding::new("sched.dl_root_domain", Severity::Ok, "No isolated CPUs: deadline tasks span every online CPU")
            .why("A SCHED_DEADLINE task's affinity must cover its whole root domain; with no isolcpus= all online CPUs are one domain.")
    } else {
        Finding::new("sched.dl_root_domain", Severity::Info, format!("CPUs {} are isolated (isolcpus=): outside the root domain of deadline tasks", iso.trim()))
            .why("The kernel refuses SCHED_DEADLINE for a task whose affinity does not span its root domain (EPERM), and isolated CPUs are not load-balanced: `--policy deadline` runs on the housekeeping CPUs only, never pinned.")
            .fix("To run deadline tasks on the isolated CPUs, make them an exclusive cpuset partition (cgroup v2: cpuset.cpus.partition=root) and start rtscope inside it.")
    };
    out.push(f.evidence(vec![iso_ev]));
    out
}
