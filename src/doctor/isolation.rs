//! CPU isolation of the measured CPUs: `isolcpus=`, `nohz_full=`, `rcu_nocbs=` (boot command
//! line and `/sys/devices/system/cpu/{isolated,nohz_full}`), and SMT siblings.
//!
//! An isolated CPU gets no load-balanced tasks, a `nohz_full` CPU loses the periodic tick
//! while one task runs, and an `rcu_nocbs` CPU does not run RCU callbacks. Together they keep
//! the kernel's own housekeeping off the CPUs being measured.

use super::{cpus_in, fmt_cpus, Ctx, Evidence, Finding, Severity};

/// Evidence for a CPU list the host fingerprint read, which keeps an empty string both for
/// "no CPUs" and "file missing": tell them apart by whether the file exists.
fn list_evidence(ctx: &Ctx, path: &str, v: &str) -> Evidence {
    let value = match (v.is_empty(), ctx.exists(path)) {
        (false, _) => v.to_string(),
        (true, true) => "(empty)".into(),
        (true, false) => super::NOT_EXPOSED.into(),
    };
    Evidence { path: path.into(), value }
}

/// The boot line that isolates `cpus`, leaving the rest for housekeeping.
fn isolation_fix(ctx: &Ctx) -> String {
    let c = ctx.cpus_str();
    let hk = ctx.housekeeping();
    let mut s = format!(
        "Add to the kernel command line (e.g. GRUB_CMDLINE_LINUX in /etc/default/grub, then \
         update-grub and reboot): `isolcpus=domain,managed_irq,{c} nohz_full={c} rcu_nocbs={c}"
    );
    if hk.is_empty() {
        s.push_str(
            "` — but you are measuring every online CPU: leave at least one (e.g. CPU 0) out of \
             --cpus and out of these lists for housekeeping.",
        );
    } else {
        s.push_str(&format!(" irqaffinity={}`.", fmt_cpus(&hk)));
    }
    s
}

/// Which measured CPUs are in `set`, and which are not.
fn split(cpus: &[usize], set: &[usize]) -> (Vec<usize>, Vec<usize>) {
    cpus.iter().partition(|c| set.contains(c))
}

/// Parses `/sys/devices/system/cpu/nohz_full` which says `(null)` when unset.
fn sys_list(v: Option<&str>) -> Option<Vec<usize>> {
    v.map(|s| if s.contains("null") { Vec::new() } else { cpus_in(s) })
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let nohz = nohz_full_cpus(ctx);
    vec![isolcpus(ctx), nohz_full(ctx, &nohz), rcu_nocbs(ctx, &nohz), smt(ctx)]
}

/// Whether every measured CPU is isolated (`/sys/devices/system/cpu/isolated`, else `isolcpus=`).
fn isolcpus(ctx: &Ctx) -> Finding {
    let cpus = ctx.cpus_str();
    let iso_sys = Some(ctx.host.isolcpus.clone());
    let iso_ev = list_evidence(ctx, "/sys/devices/system/cpu/isolated", &ctx.host.isolcpus);
    let iso_cmd = ctx.param("isolcpus").map(cpus_in);
    let isolated: Vec<usize> = match (sys_list(iso_sys.as_deref()), &iso_cmd) {
        (Some(s), _) if !s.is_empty() => s,
        (_, Some(c)) => c.clone(),
        (Some(s), None) => s,
        (None, None) => Vec::new(),
    };
    let ev = vec![iso_ev, ctx.param_evidence("isolcpus")];
    let (inside, outside) = split(ctx.cpus, &isolated);
    let f = if outside.is_empty() {
        Finding::new("isolation.isolcpus", Severity::Ok, format!("Measured CPUs {cpus} are isolated"))
            .why("Isolated CPUs are taken out of scheduler load balancing, so no ordinary task is moved onto them.")
    } else {
        let title = if inside.is_empty() {
            format!("Measured CPUs {cpus} are not isolated")
        } else {
            format!("Measured CPUs {} are not isolated (only {} are)", fmt_cpus(&outside), fmt_cpus(&inside))
        };
        Finding::new("isolation.isolcpus", Severity::Warn, title)
            .why(
                "On a non-isolated CPU the scheduler balances ordinary tasks and kernel threads \
                 onto it; each one can hold a lock, disable preemption or evict the cache the \
                 measured task needs. Latency then reflects the whole system, not the CPU.",
            )
            .fix(isolation_fix(ctx))
    };
    f.evidence(ev)
}

/// The nohz_full CPUs: `/sys/devices/system/cpu/nohz_full`, else the boot line's `nohz_full=`.
fn nohz_full_cpus(ctx: &Ctx) -> Vec<usize> {
    let nz_sys = Some(ctx.host.nohz_full.clone());
    sys_list(nz_sys.as_deref()).filter(|v| !v.is_empty()).or_else(|| ctx.param("nohz_full").map(cpus_in)).unwrap_or_default()
}

/// Whether every measured CPU is in `nz` (the nohz_full CPUs).
fn nohz_full(ctx: &Ctx, nz: &[usize]) -> Finding {
    let cpus = ctx.cpus_str();
    let nz_ev = list_evidence(ctx, "/sys/devices/system/cpu/nohz_full", &ctx.host.nohz_full);
    let ev = vec![nz_ev, ctx.param_evidence("nohz_full")];
    let (_, outside) = split(ctx.cpus, nz);
    let f = if outside.is_empty() {
        Finding::new("isolation.nohz_full", Severity::Ok, format!("Measured CPUs {cpus} are nohz_full"))
            .why("The scheduler tick stops on these CPUs while a single task runs there, removing a periodic interruption.")
    } else {
        Finding::new("isolation.nohz_full", Severity::Info, format!("Measured CPUs {} are not nohz_full", fmt_cpus(&outside)))
            .why(
                "The periodic scheduler tick (every 1–4 ms) interrupts these CPUs and runs \
             accounting, RCU and timer work; a busy real-time task sees it as jitter. It matters \
             less for a task that sleeps between periods.",
            )
            .fix(format!(
                "Boot with `nohz_full={cpus}` (needs CONFIG_NO_HZ_FULL=y; \
             /sys/devices/system/cpu/nohz_full exists only then)."
            ))
    };
    f.evidence(ev)
}

/// Whether RCU callbacks are offloaded from every measured CPU (`rcu_nocbs=`; nohz_full, `nz`, implies it).
fn rcu_nocbs(ctx: &Ctx, nz: &[usize]) -> Finding {
    let cpus = ctx.cpus_str();
    let mut nocb: Vec<usize> = ctx.param("rcu_nocbs").map(cpus_in).unwrap_or_default();
    nocb.extend(nz.iter().copied());
    let ev = vec![ctx.param_evidence("rcu_nocbs"), ctx.param_evidence("nohz_full")];
    let (_, outside) = split(ctx.cpus, &nocb);
    let f = if outside.is_empty() {
        Finding::new("isolation.rcu_nocbs", Severity::Ok, format!("RCU callbacks are offloaded from CPUs {cpus}"))
            .why("RCU callbacks of these CPUs run in kthreads elsewhere instead of in softirq context on them.")
    } else {
        Finding::new("isolation.rcu_nocbs", Severity::Info, format!("RCU callbacks still run on CPUs {}", fmt_cpus(&outside)))
            .why(
                "Without rcu_nocbs, RCU callbacks (freeing memory after a grace period) run in \
             softirq context on the CPU that queued them, in bursts that can last hundreds of µs.",
            )
            .fix(format!("Boot with `rcu_nocbs={cpus}` (nohz_full= implies it)."))
    };
    f.evidence(ev)
}

/// Whether SMT (hyper-threading) is active.
fn smt(ctx: &Ctx) -> Finding {
    let (smt_ev, smt) = ctx.read("/sys/devices/system/cpu/smt/active");
    let (ctl_ev, _) = ctx.read("/sys/devices/system/cpu/smt/control");
    let ev = vec![smt_ev, ctl_ev];
    let f = match smt.as_deref() {
        Some("1") => Finding::new("cpu.smt", Severity::Warn, "SMT (hyper-threading) is active")
            .why(
                "Two hardware threads share one core's execution units and caches; whatever runs \
                 on the sibling of a measured CPU slows it down unpredictably.",
            )
            .fix(
                "Turn SMT off: `echo off > /sys/devices/system/cpu/smt/control` (or boot with \
                 `nosmt`), or keep the siblings of measured CPUs idle and isolated too \
                 (see /sys/devices/system/cpu/cpuN/topology/thread_siblings_list).",
            ),
        Some("0") => Finding::new("cpu.smt", Severity::Ok, "SMT (hyper-threading) is not active").why("Each measured CPU has its core to itself."),
        _ => Finding::new("cpu.smt", Severity::Info, "SMT state is not exposed by this kernel")
            .why("Without /sys/devices/system/cpu/smt/active rtscope cannot tell whether measured CPUs share a core."),
    };
    f.evidence(ev)
}
