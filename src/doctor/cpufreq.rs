//! cpufreq: the scaling governor of each measured CPU and turbo/boost.
//!
//! A governor other than `performance` changes the clock frequency with load; a CPU that has
//! just been idle runs the woken task slowly, and a frequency transition itself can stall.
//! Boost (turbo) makes the frequency depend on temperature and on what other cores do.

use super::{evidence, fmt_cpus, shell_set, Ctx, Finding, Severity};

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    vec![governor(ctx), boost(ctx)]
}

/// The scaling governor of the measured CPUs: `performance`, another, or no cpufreq.
fn governor(ctx: &Ctx) -> Finding {
    let mut ev = Vec::new();
    let mut slow: Vec<usize> = Vec::new();
    let mut seen = 0;
    let mut governors: Vec<String> = Vec::new();
    for &cpu in ctx.cpus {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
        let v = ctx.host.governors.iter().find(|g| g.cpu == cpu).map(|g| g.value.clone()).filter(|g| !g.is_empty());
        if let Some(g) = &v {
            seen += 1;
            if g != "performance" {
                slow.push(cpu);
            }
            if !governors.contains(g) {
                governors.push(g.clone());
            }
        }
        if ev.len() < 8 {
            ev.push(evidence(&path, v.as_deref()));
        }
    }
    let cpus = ctx.cpus_str();
    let f = if seen == 0 {
        Finding::new("cpufreq.governor", Severity::Info, format!("No cpufreq on CPUs {cpus}: frequency is fixed or set by firmware/hypervisor")).why(
            "The kernel does not scale the frequency of these CPUs (no cpufreq driver — typical in \
             VMs); firmware or the host may still do so, which rtscope cannot see.",
        )
    } else if slow.is_empty() {
        Finding::new("cpufreq.governor", Severity::Ok, format!("cpufreq governor is performance on CPUs {cpus}"))
            .why("The performance governor keeps the CPU at its highest frequency, so wake-ups are not slowed by frequency ramps.")
    } else {
        Finding::new(
            "cpufreq.governor",
            Severity::Warn,
            format!(
                "cpufreq governor is {} on CPUs {}",
                governors.iter().filter(|g| *g != "performance").cloned().collect::<Vec<_>>().join("/"),
                fmt_cpus(&slow)
            ),
        )
        .why(
            "Governors other than performance lower the frequency when the CPU is idle — exactly \
             the state a measured CPU is in before each wake-up — so the woken task runs slowly \
             and frequency transitions add stalls.",
        )
        .fix(format!(
            "`cpupower frequency-set -g performance`, or `echo performance | tee \
             /sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor`",
            shell_set(&slow)
        ))
    };
    f.evidence(ev)
}

/// Boost (turbo): on, off, or not exposed.
fn boost(ctx: &Ctx) -> Finding {
    let (boost_ev, boost) = ctx.read("/sys/devices/system/cpu/cpufreq/boost");
    let (nt_ev, no_turbo) = ctx.read("/sys/devices/system/cpu/intel_pstate/no_turbo");
    let on = boost.as_deref() == Some("1") || no_turbo.as_deref() == Some("0");
    let off = boost.as_deref() == Some("0") || no_turbo.as_deref() == Some("1");
    let f = if on {
        let fix = if no_turbo.as_deref() == Some("0") {
            "`echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo`"
        } else {
            "`echo 0 > /sys/devices/system/cpu/cpufreq/boost`"
        };
        Finding::new("cpufreq.boost", Severity::Info, "CPU boost (turbo) is enabled")
            .why(
                "With turbo the frequency depends on temperature, power budget and how many cores \
                 are busy, so the same code takes different time from run to run; results get \
                 noisier and harder to compare.",
            )
            .fix(format!("For repeatable numbers disable it: {fix}"))
    } else if off {
        Finding::new("cpufreq.boost", Severity::Ok, "CPU boost (turbo) is disabled")
            .why("A fixed maximum frequency keeps execution times repeatable between runs.")
    } else {
        Finding::new("cpufreq.boost", Severity::Info, "CPU boost (turbo) control is not exposed").why(
            "Neither cpufreq/boost nor intel_pstate/no_turbo exists; turbo, if any, is under \
                 firmware or hypervisor control.",
        )
    };
    f.evidence(vec![boost_ev, nt_ev])
}
