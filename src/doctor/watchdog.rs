//! Lockup detectors: the NMI (hard lockup) watchdog and the soft lockup watchdog.
//!
//! The NMI watchdog fires a perf NMI on every CPU periodically; the soft watchdog runs an
//! hrtimer every 4 s per CPU and wakes the highest-priority stopper thread to touch a timestamp.

use super::{fmt_cpus, Ctx, Finding, Severity};

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let (nmi_ev, nmi) = ctx.read("/proc/sys/kernel/nmi_watchdog");
    let f = match nmi.as_deref() {
        Some("0") => Finding::new("watchdog.nmi", Severity::Ok, "NMI watchdog is off").why("No periodic non-maskable interrupt hits the measured CPUs."),
        Some(_) => Finding::new("watchdog.nmi", Severity::Warn, "NMI watchdog is on")
            .why(
                "A perf-counter NMI fires on every CPU periodically and cannot be masked or \
                 preempted; each costs a few µs and occupies a hardware counter.",
            )
            .fix("`sysctl -w kernel.nmi_watchdog=0`, or boot with `nmi_watchdog=0` (or `nowatchdog`)."),
        None => Finding::new("watchdog.nmi", Severity::Info, "NMI watchdog is not exposed by this kernel")
            .why("Without /proc/sys/kernel/nmi_watchdog (CONFIG_HARDLOCKUP_DETECTOR=n) there is no hard lockup detector."),
    };
    out.push(f.evidence(vec![nmi_ev]));

    let (wd_ev, wd) = ctx.read("/proc/sys/kernel/watchdog");
    let (sw_ev, sw) = ctx.read("/proc/sys/kernel/soft_watchdog");
    let (mask_ev, _) = ctx.read("/proc/sys/kernel/watchdog_cpumask");
    let on = wd.as_deref() != Some("0") && sw.as_deref() == Some("1");
    let f = if wd.is_none() && sw.is_none() {
        Finding::new("watchdog.soft", Severity::Info, "Soft lockup watchdog is not exposed by this kernel")
            .why("Without /proc/sys/kernel/soft_watchdog (CONFIG_SOFTLOCKUP_DETECTOR=n) there is no soft lockup timer.")
    } else if on {
        Finding::new("watchdog.soft", Severity::Info, "Soft lockup watchdog is on")
            .why(
                "Every 4 s an hrtimer on each CPU in watchdog_cpumask queues work for the stopper \
                 thread, which preempts everything including SCHED_FIFO 99 for a few µs.",
            )
            .fix(format!(
                "Keep it off the measured CPUs: `echo {} > /proc/sys/kernel/watchdog_cpumask`, or \
                 `sysctl -w kernel.soft_watchdog=0` / boot with `nosoftlockup` (or `nowatchdog`).",
                {
                    let hk = ctx.housekeeping();
                    if hk.is_empty() {
                        "0".to_string()
                    } else {
                        fmt_cpus(&hk)
                    }
                }
            ))
    } else {
        Finding::new("watchdog.soft", Severity::Ok, "Soft lockup watchdog is off").why("No periodic watchdog timer and stopper work on the measured CPUs.")
    };
    out.push(f.evidence(vec![wd_ev, sw_ev, mask_ev]));
    out
}
