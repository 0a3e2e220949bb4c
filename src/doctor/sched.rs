//! Scheduler sysctls: real-time throttling (`sched_rt_runtime_us` / `sched_rt_period_us`) and
//! `timer_migration`.
//!
//! Throttling stops all SCHED_FIFO/RR tasks of a CPU once they used the runtime budget in a
//! period; timer migration lets timers armed on a busy CPU be moved to (or from) others.

use super::{Ctx, Finding, Severity};

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let (rt_ev, runtime) = ctx.read("/proc/sys/kernel/sched_rt_runtime_us");
    let (p_ev, period) = ctx.read("/proc/sys/kernel/sched_rt_period_us");
    let runtime_n: Option<i64> = runtime.as_deref().and_then(|v| v.parse().ok());
    let period_n: Option<i64> = period.as_deref().and_then(|v| v.parse().ok());
    let ev = vec![rt_ev, p_ev];
    let f = match (runtime_n, period_n) {
        (Some(-1), _) => Finding::new("sched.rt_throttling", Severity::Ok, "RT throttling is disabled (sched_rt_runtime_us = -1)")
            .why(
                "Real-time tasks are never stopped to let ordinary tasks run. A runaway \
                 SCHED_FIFO task can now hang its CPU — watch RT loads.",
            ),
        (Some(r), Some(p)) if p > 0 => {
            let pct = r as f64 * 100.0 / p as f64;
            Finding::new(
                "sched.rt_throttling",
                Severity::Info,
                format!("RT throttling is on: real-time tasks may use {r} µs of every {p} µs ({pct:.0}%)"),
            )
            .why(format!(
                "When the SCHED_FIFO/RR tasks of a CPU use more than {pct:.0}% of a period they are \
                 all stopped for the rest of it ({} µs) — a measuring thread that sleeps never \
                 hits this, but a spinning real-time load or a busy-polling probe does, and then \
                 shows a latency spike of that size.",
                p - r
            ))
            .fix("Only if all real-time tasks on the host are trusted: `sysctl -w kernel.sched_rt_runtime_us=-1` (persist in /etc/sysctl.d/).")
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
        Some("0") => Finding::new("sched.timer_migration", Severity::Ok, "Timer migration is off")
            .why("Timers stay on the CPU that armed them."),
        _ => Finding::new("sched.timer_migration", Severity::Info, "Timer migration setting is not exposed by this kernel")
            .why("Without /proc/sys/kernel/timer_migration (CONFIG_SMP and NO_HZ_COMMON) it cannot be checked."),
    };
    out.push(f.evidence(vec![tm_ev]));
    out
}
