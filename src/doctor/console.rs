//! Console log level (`/proc/sys/kernel/printk`) and the consoles on the boot line.
//!
//! Kernel messages at a level below the console log level are written to every console;
//! on a serial console at 115200 baud each line takes about a millisecond, and on non-RT
//! kernels it is written with interrupts or preemption disabled.

use super::{Ctx, Finding, Severity};

/// The fix for a chatty console (also the advice of a traced window whose code path is
/// the console write: `trace::advice`).
pub(crate) const FIX_CONSOLE_LOGLEVEL: &str = "`sysctl -w kernel.printk=\"3 4 1 3\"` (or `dmesg -n 3`), or boot with `quiet` / `loglevel=3`.";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let (pk_ev, pk) = ctx.read("/proc/sys/kernel/printk");
    let level: Option<u32> = pk.as_deref().and_then(|v| v.split_whitespace().next()?.parse().ok());
    let serial =
        ctx.cmdline.as_deref().map(|l| l.split_whitespace().any(|t| t.starts_with("console=ttyS") || t.starts_with("console=ttyAMA"))).unwrap_or(false);
    let mut ev = vec![pk_ev, ctx.param_evidence("console"), ctx.param_evidence("loglevel")];
    if ctx.flag("quiet") {
        ev.push(super::Evidence { path: "/proc/cmdline".into(), value: "quiet".into() });
    }
    let f = match level {
        Some(l) if l > 4 => Finding::new(
            "console.loglevel",
            Severity::Warn,
            format!("Console log level is {l}: messages of level 0–{} reach the console{}", l - 1, if serial { " (serial)" } else { "" }),
        )
        .why(
            "Warnings, notices and (at 8) debug messages are written to the console synchronously; \
             on a serial console each line takes about 1 ms, and outside PREEMPT_RT that happens \
             with preemption disabled — printk is a classic latency killer.",
        )
        .fix(FIX_CONSOLE_LOGLEVEL),
        Some(l) => Finding::new("console.loglevel", Severity::Ok, format!("Console log level is {l}: only errors and worse reach the console"))
            .why("Routine kernel messages are kept in the log buffer and not printed to the console synchronously."),
        None => Finding::new("console.loglevel", Severity::Info, "Console log level is not exposed by this kernel")
            .why("Without /proc/sys/kernel/printk rtscope cannot tell how chatty the console is."),
    };
    vec![f.evidence(ev)]
}
