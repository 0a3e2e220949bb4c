//! Memory management: transparent hugepages and swap.
//!
//! THP in `always` mode makes page faults allocate and zero 2 MiB pages and wakes khugepaged
//! to compact memory; swap turns a touch of any non-locked page into a disk read.

use super::{evidence, Ctx, Evidence, Finding, Severity};

/// The bracketed word of a sysfs choice file (`always [madvise] never` → `madvise`).
pub(crate) fn selected(v: &str) -> Option<&str> {
    let s = v.find('[')?;
    let e = v[s..].find(']')? + s;
    Some(&v[s + 1..e])
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    let (en_ev, en) = ctx.read("/sys/kernel/mm/transparent_hugepage/enabled");
    let (df_ev, _) = ctx.read("/sys/kernel/mm/transparent_hugepage/defrag");
    let ev = vec![en_ev, df_ev, ctx.param_evidence("transparent_hugepage")];
    let mode = en.as_deref().and_then(selected).map(str::to_string);
    let f = match mode.as_deref() {
        Some("always") => Finding::new("mm.thp", Severity::Warn, "Transparent hugepages: always")
            .why(
                "Every anonymous mapping may get 2 MiB pages: a page fault then zeroes 2 MiB and \
                 may compact memory synchronously, and khugepaged scans and collapses pages in \
                 the background — stalls of hundreds of µs for any task that faults.",
            )
            .fix("`echo never > /sys/kernel/mm/transparent_hugepage/enabled` (or `madvise`), or boot with `transparent_hugepage=never`."),
        Some(m @ ("madvise" | "never")) => Finding::new("mm.thp", Severity::Ok, format!("Transparent hugepages: {m}"))
            .why("Huge pages are only used where an application asks for them, so ordinary faults stay small."),
        _ => Finding::new("mm.thp", Severity::Info, "Transparent hugepages setting is not exposed by this kernel")
            .why("Without THP (CONFIG_TRANSPARENT_HUGEPAGE=n) there is no huge-page fault or khugepaged cost."),
    };
    out.push(f.evidence(ev));

    let swaps = ctx.text("/proc/swaps");
    let f = match &swaps {
        None => Finding::new("mm.swap", Severity::Info, "Swap state is not exposed by this kernel")
            .why("Without /proc/swaps rtscope cannot tell whether memory can be swapped out.")
            .evidence(vec![evidence("/proc/swaps", None)]),
        Some(text) => {
            let devs: Vec<&str> = text.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
            if devs.is_empty() {
                Finding::new("mm.swap", Severity::Ok, "No swap is active")
                    .why("Pages are never written out to disk, so touching memory never waits for I/O.")
                    .evidence(vec![Evidence { path: "/proc/swaps".into(), value: "no swap devices".into() }])
            } else {
                let names: Vec<&str> = devs.iter().filter_map(|l| l.split_whitespace().next()).collect();
                Finding::new("mm.swap", Severity::Warn, format!("Swap is active: {}", names.join(", ")))
                    .why(
                        "A real-time task that touches a swapped-out page waits for a disk read \
                         (milliseconds). rtscope locks its own memory (mlockall), but other \
                         real-time tasks and the loads may not.",
                    )
                    .fix("`swapoff -a` and remove swap entries from /etc/fstab, or make every real-time task call mlockall(MCL_CURRENT|MCL_FUTURE).")
                    .evidence(devs.iter().take(4).map(|l| evidence("/proc/swaps", Some(l))).collect())
            }
        }
    };
    out.push(f);
    out
}
