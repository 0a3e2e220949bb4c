//! Preemption model: none / voluntary / full / lazy / PREEMPT_RT, and the current mode of a
//! PREEMPT_DYNAMIC kernel when it is exposed.
//!
//! Sources, most trusted first: `/sys/kernel/realtime` (1 on PREEMPT_RT), the `uname -v` text
//! in `/proc/sys/kernel/version` (`PREEMPT_RT`, `PREEMPT_DYNAMIC`, `PREEMPT_LAZY`, `PREEMPT`),
//! `/sys/kernel/debug/sched/preempt` (the current dynamic mode in parentheses) and the
//! `preempt=` boot parameter. [`preempt_model`] is the one reader of this fact; the host
//! fingerprint uses it too.

use serde::{Deserialize, Serialize};

use super::{evidence, Ctx, Evidence, Finding, Severity, SysRoot};

/// What the kernel says about its preemption model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptModel {
    /// `rt`, `full`, `lazy`, `voluntary`, `none`, `none-or-voluntary` or `unknown`.
    pub model: String,
    /// The kernel is PREEMPT_DYNAMIC (model switchable at boot with `preempt=`).
    pub dynamic: bool,
    /// True when the kernel is PREEMPT_RT.
    pub rt: bool,
    /// The files read and what they held.
    pub evidence: Vec<Evidence>,
}

const REALTIME: &str = "/sys/kernel/realtime";
const VERSION: &str = "/proc/sys/kernel/version";
const DEBUG_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";

/// Reads the preemption model of the host behind `root`.
pub fn preempt_model(root: &SysRoot) -> PreemptModel {
    let realtime = root.read(REALTIME);
    let version = root.read(VERSION);
    let debug = root.read(DEBUG_PREEMPT);
    let cmdline = root.read("/proc/cmdline");
    let mut ev = vec![
        evidence(REALTIME, realtime.as_deref()),
        evidence(VERSION, version.as_deref()),
        evidence(DEBUG_PREEMPT, debug.as_deref()),
    ];
    let tokens: Vec<&str> = version.as_deref().map(|v| v.split_whitespace().collect()).unwrap_or_default();
    let has = |t: &str| tokens.iter().any(|x| *x == t);
    let dynamic = has("PREEMPT_DYNAMIC") || debug.is_some();
    let rt = realtime.as_deref() == Some("1") || has("PREEMPT_RT");
    let cmd_preempt = cmdline.as_deref().and_then(|l| {
        l.split(" -- ")
            .next()
            .unwrap_or(l)
            .split_whitespace()
            .filter_map(|t| t.strip_prefix("preempt="))
            .last()
            .map(str::to_string)
    });
    if let Some(p) = &cmd_preempt {
        ev.push(Evidence { path: "/proc/cmdline".into(), value: format!("preempt={p}") });
    }
    let current_dynamic = debug.as_deref().and_then(|d| {
        let start = d.find('(')?;
        let end = d[start..].find(')')? + start;
        Some(d[start + 1..end].trim().to_string())
    });
    let model = if rt {
        "rt".to_string()
    } else if let Some(m) = current_dynamic {
        m
    } else if dynamic {
        match cmd_preempt.as_deref() {
            Some(m @ ("none" | "voluntary" | "full" | "lazy")) => m.to_string(),
            _ => "unknown".to_string(),
        }
    } else if has("PREEMPT_LAZY") {
        "lazy".to_string()
    } else if has("PREEMPT") {
        "full".to_string()
    } else if version.is_some() {
        "none-or-voluntary".to_string()
    } else {
        "unknown".to_string()
    };
    PreemptModel { model, dynamic, rt, evidence: ev }
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let pm = preempt_model(ctx.root);
    let rt_fix = "Boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; mainline since 6.12, packaged \
                  as linux-image-rt-amd64 on Debian, kernel-rt on RHEL/Fedora, \
                  linux-realtime on Ubuntu Pro).";
    let dyn_fix = if pm.dynamic {
        format!(" Meanwhile this PREEMPT_DYNAMIC kernel can be booted with `preempt=full`.")
    } else {
        String::new()
    };
    let why_rt = "Only PREEMPT_RT makes almost all kernel code, interrupt handlers (threaded) \
                  and spinlocks preemptible, which bounds scheduling latency to tens of µs under load.";
    let (sev, title, why, fix) = match pm.model.as_str() {
        "rt" => (
            Severity::Ok,
            "Kernel is PREEMPT_RT".to_string(),
            why_rt.to_string(),
            None,
        ),
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
    let mut f = Finding::new("preempt.model", sev, title).why(why).evidence(pm.evidence);
    f.fix = fix;
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, SysRoot) {
        let d = tempfile::tempdir().unwrap();
        for (p, v) in files {
            let path = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, v).unwrap();
        }
        let r = SysRoot::new(d.path());
        (d, r)
    }

    #[test]
    fn reads_models() {
        let (_d, r) = root_with(&[(VERSION, "#1 SMP PREEMPT_RT Thu")]);
        assert!(preempt_model(&r).rt);
        let (_d, r) = root_with(&[(REALTIME, "1"), (VERSION, "#1 SMP")]);
        assert_eq!(preempt_model(&r).model, "rt");
        let (_d, r) = root_with(&[(VERSION, "#1 SMP PREEMPT_DYNAMIC"), (DEBUG_PREEMPT, "none voluntary (full) lazy")]);
        assert_eq!(preempt_model(&r).model, "full");
        let (_d, r) = root_with(&[(VERSION, "#1 SMP PREEMPT_DYNAMIC"), ("/proc/cmdline", "quiet preempt=voluntary")]);
        assert_eq!(preempt_model(&r).model, "voluntary");
        let (_d, r) = root_with(&[(VERSION, "#1 SMP PREEMPT_DYNAMIC")]);
        assert_eq!(preempt_model(&r).model, "unknown");
        let (_d, r) = root_with(&[(VERSION, "#1 SMP PREEMPT Mon")]);
        assert_eq!(preempt_model(&r).model, "full");
        let (_d, r) = root_with(&[(VERSION, "#1 SMP Mon")]);
        assert_eq!(preempt_model(&r).model, "none-or-voluntary");
        let (_d, r) = root_with(&[(DEBUG_PREEMPT, "garbage (")]);
        assert_eq!(preempt_model(&r).model, "unknown");
    }
}
