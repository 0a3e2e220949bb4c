//! Preemption model: none / voluntary / full / lazy / PREEMPT_RT, and the current mode of a
//! PREEMPT_DYNAMIC kernel when it is exposed.
//!
//! The model itself is read once, by `sysinfo::preempt_model` (the host fingerprint's
//! reader: `/sys/kernel/realtime`, `/sys/kernel/debug/sched/preempt`, `preempt=`, the
//! kernel config, the `uname -v` text); this check only judges it and shows the evidence.

use super::{evidence, Ctx, Evidence, Finding, Severity};

const REALTIME: &str = "/sys/kernel/realtime";
const VERSION: &str = "/proc/sys/kernel/version";
const DEBUG_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";

/// The model as judged here: sysinfo's answer, except that a kernel whose `uname -v` names no
/// PREEMPT variant at all was built with PREEMPT_NONE or PREEMPT_VOLUNTARY (the banner only
/// shows `PREEMPT`, `PREEMPT_DYNAMIC`, `PREEMPT_LAZY` or `PREEMPT_RT`), so "unknown" becomes
/// "none-or-voluntary" there.
struct Judged {
    model: String,
    source: String,
    dynamic: bool,
    evidence: Vec<Evidence>,
}

fn judge(ctx: &Ctx) -> Judged {
    let h = ctx.host;
    let words: Vec<&str> = h.kernel_version.split_whitespace().collect();
    let debug = ctx.value(DEBUG_PREEMPT);
    let dynamic = words.contains(&"PREEMPT_DYNAMIC") || debug.is_some();
    let (mut model, mut source) = (h.preempt_model.clone(), h.preempt_model_source.clone());
    if model == "unknown" && !h.kernel_version.is_empty() && !words.iter().any(|w| w.starts_with("PREEMPT")) {
        model = "none-or-voluntary".into();
        source = "uname -v names no PREEMPT variant".into();
    }
    let version = Some(h.kernel_version.as_str()).filter(|v| !v.is_empty());
    // The model comes from the host fingerprint; the files are shown as evidence.
    let mut ev = vec![evidence(VERSION, version), evidence(DEBUG_PREEMPT, debug.as_deref())];
    if h.realtime {
        ev.insert(0, Evidence { path: REALTIME.into(), value: "PREEMPT_RT (realtime = 1 or uname -v)".into() });
    }
    if let Some(p) = ctx.param("preempt") {
        ev.push(Evidence { path: "/proc/cmdline".into(), value: format!("preempt={p}") });
    }
    Judged { model, source, dynamic, evidence: ev }
}

/// The fix for a kernel whose code is not (all) preemptible.
pub(crate) const FIX_RT_KERNEL: &str = "Boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; mainline since 6.12, packaged \
                  as linux-image-rt-amd64 on Debian, kernel-rt on RHEL/Fedora, \
                  linux-realtime on Ubuntu Pro).";

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let pm = judge(ctx);
    let rt_fix = FIX_RT_KERNEL;
    let dyn_fix = if pm.dynamic { " Meanwhile this PREEMPT_DYNAMIC kernel can be booted with `preempt=full`.".to_string() } else { String::new() };
    let why_rt = "Only PREEMPT_RT makes almost all kernel code, interrupt handlers (threaded) \
                  and spinlocks preemptible, which bounds scheduling latency to tens of µs under load.";
    let (sev, title, why, fix) = match pm.model.as_str() {
        "rt" => (Severity::Ok, "Kernel is PREEMPT_RT".to_string(), why_rt.to_string(), None),
        "full" => (
            Severity::Warn,
            "Preemption model is full (PREEMPT), not PREEMPT_RT".to_string(),
            format!(
                "Full preemption lets most kernel code be preempted, but hard and soft interrupt \
                 handlers and spinlock sections still run non-preemptibly, so worst cases reach \
                 hundreds of µs under I/O load. {why_rt}"
            ),
            Some(rt_fix.to_string()),
        ),
        "lazy" => (
            Severity::Warn,
            "Preemption model is lazy (PREEMPT_LAZY), not PREEMPT_RT".to_string(),
            format!(
                "Lazy preemption defers preemption of normal tasks to the next tick; real-time \
                 tasks still preempt at once, but interrupt and spinlock sections are not \
                 preemptible. {why_rt}"
            ),
            Some(rt_fix.to_string()),
        ),
        "none" | "voluntary" | "none-or-voluntary" => (
            Severity::Bad,
            format!("Preemption model is {} — kernel code is not preemptible", pm.model),
            format!(
                "With no or voluntary preemption a waking real-time task waits until the kernel \
                 reaches a preemption point, which can take milliseconds under load. {why_rt}"
            ),
            Some(format!("{rt_fix}{dyn_fix}")),
        ),
        _ => (
            Severity::Warn,
            "Preemption model could not be determined".to_string(),
            format!(
                "The kernel is PREEMPT_DYNAMIC but its current mode is only shown in \
                 /sys/kernel/debug/sched/preempt (debugfs). {why_rt}"
            ),
            Some(format!(
                "Mount debugfs to see it: `mount -t debugfs none /sys/kernel/debug && cat \
                 /sys/kernel/debug/sched/preempt`; boot with `preempt=full` at least. {rt_fix}"
            )),
        ),
    };
    let title = format!("{title} (from {})", pm.source);
    let mut f = Finding::new("preempt.model", sev, title).why(why).evidence(pm.evidence);
    f.fix = fix;
    vec![f]
}
