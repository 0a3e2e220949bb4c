//! Clocksource and TSC reliability.
//!
//! rtscope reads CLOCK_MONOTONIC through the vDSO; that is cheap only when the clocksource
//! is the TSC (or a paravirtual clock built on it). With `hpet` or `acpi_pm` every clock
//! read is an I/O access costing around a microsecond, and the kernel falls back to them
//! when it judges the TSC unstable.

use super::{evidence, Ctx, Evidence, Finding, Severity};

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    vec![clocksource(ctx), tsc(ctx)]
}

/// The current clocksource: a CPU counter, a paravirtual clock or a slow one.
fn clocksource(ctx: &Ctx) -> Finding {
    let cur = Some(ctx.host.clocksource.clone()).filter(|c| !c.is_empty());
    let cur_ev = evidence("/sys/devices/system/clocksource/clocksource0/current_clocksource", cur.as_deref());
    let (av_ev, avail) = ctx.read("/sys/devices/system/clocksource/clocksource0/available_clocksource");
    let ev = vec![cur_ev, av_ev, ctx.param_evidence("clocksource")];
    let has_tsc = avail.as_deref().is_some_and(|a| a.split_whitespace().any(|c| c == "tsc"));
    let f = match cur.as_deref() {
        Some(c @ ("tsc" | "arch_sys_counter" | "timebase" | "riscv_clocksource")) => {
            Finding::new("clock.clocksource", Severity::Ok, format!("Clocksource is {c}"))
                .why("A CPU counter read through the vDSO: reading the clock costs tens of ns and needs no system call.")
        }
        Some(c @ ("kvm-clock" | "hyperv_clocksource_tsc_page" | "xen")) => Finding::new(
            "clock.clocksource",
            Severity::Info,
            format!("Clocksource is {c} (paravirtual)"),
        )
        .why(
            "A paravirtual clock built on the TSC; reads stay in the vDSO but cost a little more \
             than the raw TSC and depend on the hypervisor keeping the TSC stable.",
        )
        .fix(if has_tsc {
            "If the host TSC is invariant: `echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource` (or boot with `clocksource=tsc`)."
                .to_string()
        } else {
            "Nothing to do unless the hypervisor offers an invariant TSC.".to_string()
        }),
        Some(c) => Finding::new("clock.clocksource", Severity::Bad, format!("Clocksource is {c}"))
            .why(format!(
                "{c} is not readable from the vDSO (or only slowly): every clock read — twice per \
                 sample — costs around a microsecond or a system call, inflating every measured \
                 latency. The kernel usually picks it after marking the TSC unstable."
            ))
            .fix(if has_tsc {
                "`echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource`; if the kernel keeps rejecting it check the TSC finding and consider `tsc=reliable` (only on invariant-TSC hardware)."
                    .to_string()
            } else {
                "The TSC is not offered as a clocksource; check the TSC finding and firmware settings (C-states, spread spectrum).".to_string()
            }),
        None => Finding::new("clock.clocksource", Severity::Info, "Clocksource is not exposed by this kernel")
            .why("Without /sys/devices/system/clocksource rtscope cannot tell how expensive clock reads are."),
    };
    f.evidence(ev)
}

/// Whether the TSC is invariant (or declared unstable on the boot line).
fn tsc(ctx: &Ctx) -> Finding {
    let flags = ctx.cpu_flags();
    let tsc_param = ctx.param("tsc").map(str::to_string);
    let mut ev = vec![ctx.param_evidence("tsc")];
    match &flags {
        None => Finding::new("clock.tsc", Severity::Info, "No x86 CPU flags in /proc/cpuinfo (not x86, or not exposed)")
            .why("TSC reliability only applies to x86; other architectures use their own architected counter.")
            .evidence(vec![evidence("/proc/cpuinfo", None)]),
        Some(fl) => {
            let has = |f: &str| fl.iter().any(|x| x == f);
            let wanted = ["tsc", "constant_tsc", "nonstop_tsc", "tsc_reliable", "tsc_known_freq"];
            let present: Vec<&str> = wanted.iter().copied().filter(|f| has(f)).collect();
            ev.insert(
                0,
                Evidence {
                    path: "/proc/cpuinfo".into(),
                    value: format!(
                        "flags include: {}",
                        if present.is_empty() { "(none of tsc constant_tsc nonstop_tsc tsc_reliable)".to_string() } else { present.join(" ") }
                    ),
                },
            );
            let invariant = has("constant_tsc") && has("nonstop_tsc");
            if tsc_param.as_deref() == Some("unstable") {
                Finding::new("clock.tsc", Severity::Warn, "TSC is declared unstable on the boot line (tsc=unstable)")
                    .why("The kernel will not use the TSC as clocksource, so clock reads fall back to a slow clock (hpet/acpi_pm).")
                    .fix("Remove `tsc=unstable` from the kernel command line if the CPU has constant_tsc and nonstop_tsc.")
            } else if invariant || has("tsc_reliable") {
                let mut f = Finding::new(
                    "clock.tsc",
                    Severity::Ok,
                    if invariant { "TSC is invariant (constant_tsc, nonstop_tsc)" } else { "TSC is marked reliable (tsc_reliable)" },
                )
                .why("The TSC ticks at a constant rate through frequency changes and C-states, so it stays a fast and correct clocksource.");
                if tsc_param.as_deref() == Some("reliable") {
                    f.title.push_str("; tsc=reliable skips the clocksource watchdog");
                }
                f
            } else {
                Finding::new("clock.tsc", Severity::Warn, "TSC is not invariant (constant_tsc/nonstop_tsc missing)")
                    .why(
                        "A TSC that changes rate with frequency or stops in deep C-states can be \
                         marked unstable by the clocksource watchdog at run time, switching the \
                         clocksource to hpet/acpi_pm mid-measurement.",
                    )
                    .fix("Prefer hardware with an invariant TSC; in a VM expose it (e.g. QEMU `-cpu host,+invtsc`). Do not force `tsc=reliable` on such hardware.")
            }
            .evidence(ev)
        }
    }
}
