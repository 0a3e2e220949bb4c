//! Kernel tracing left running: the top-level ftrace buffer with a tracer or
//! events on, and tracefs instances (another tool's, or an rtscope run's that
//! was killed). Every enabled event costs a few hundred ns each time it fires
//! on a measured CPU, and function or latency tracers far more, so a
//! forgotten `trace-cmd record` or `perf`-style session raises every latency
//! the run reports.

use super::{Ctx, Evidence, Finding, Severity};

/// Where tracefs may be mounted, newest convention first.
const ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    let Some(root) = ROOTS.iter().find(|r| ctx.exists(&format!("{r}/tracing_on"))) else {
        return unmounted();
    };
    let mut active: Vec<String> = Vec::new();
    let mut ev: Vec<Evidence> = Vec::new();
    if let Some(what) = buffer_activity(ctx, root, &mut ev) {
        active.push(format!("the top-level buffer ({what})"));
    }
    let mut stale = Vec::new();
    let mut ours_live = Vec::new();
    for name in ctx.list(&format!("{root}/instances")) {
        let dir = format!("{root}/instances/{name}");
        let rtscope_pid = crate::sys::tracefs::instance_pid(&name);
        if let Some(pid) = rtscope_pid {
            // Its maker runs: process `pid`, started before the instance was made
            // (by PID and start time, as a run's own clean-up tells; not by the
            // process's name: a copy of rtscope may have another).
            let alive = crate::sys::tracefs::started_by(
                ctx.text(&format!("/proc/{pid}/stat")).as_deref(),
                ctx.text("/proc/stat").as_deref(),
                crate::sys::tracefs::made_at(&ctx.root.path(&dir)),
            );
            if alive {
                ours_live.push(name);
            } else {
                let _ = buffer_activity(ctx, &dir, &mut ev);
                stale.push(name);
            }
            continue;
        }
        if let Some(what) = buffer_activity(ctx, &dir, &mut ev) {
            active.push(format!("instance {name} ({what})"));
        }
    }
    vec![activity(root, &active, &stale, &ours_live).evidence(ev), latency_tracers(ctx, root)]
}

/// The two findings when tracefs is not mounted: activity not checked, the
/// kernel's tracers unknown.
fn unmounted() -> Vec<Finding> {
    vec![
        Finding::new("tracing.active", Severity::Info, "tracefs is not mounted (or not readable): active tracing not checked")
            .why("Without tracefs rtscope cannot see whether another tool is tracing on the measured CPUs.")
            .evidence(vec![super::evidence(ROOTS[0], None)]),
        // Which tracers the kernel has is listed in tracefs only: unknown
        // here, not "missing" (a fresh boot has it unmounted until the
        // first tool mounts it; `run --trace` mounts it itself).
        Finding::new("tracing.tracers", Severity::Info, "tracefs is not mounted: whether the kernel has the timerlat, osnoise and hwlat tracers is unknown")
            .why("The timerlat, osnoise and hwlat probes need their tracer; tracefs lists the tracers the kernel has.")
            .fix(format!("`mount -t tracefs nodev {}` (as root), then run doctor again; the tracer probes mount it themselves", ROOTS[0]))
            .evidence(vec![super::evidence(&format!("{}/available_tracers", ROOTS[0]), None)]),
    ]
}

/// The `tracing.active` finding (its evidence added by the caller): `active`
/// tracing of other tools, `stale` instances of killed rtscope runs,
/// `ours_live` those of runs in progress.
fn activity(root: &str, active: &[String], stale: &[String], ours_live: &[String]) -> Finding {
    if active.is_empty() && stale.is_empty() {
        let mut f = Finding::new("tracing.active", Severity::Ok, "No other kernel tracing is active")
            .why("Neither the top-level ftrace buffer nor any other tracefs instance has a tracer or events on.");
        if !ours_live.is_empty() {
            f = f.why(format!("No other kernel tracing is active; {} belong to rtscope runs in progress.", ours_live.join(", ")));
        }
        f
    } else if active.is_empty() {
        Finding::new("tracing.active", Severity::Warn, format!("Tracing left by a killed rtscope run: {}", stale.join(", ")))
            .why(
                "An rtscope run that was killed (SIGKILL) could not remove its trace instance; \
                 while its events stay enabled they fire on the measured CPUs.",
            )
            .fix(format!(
                "The next `rtscope run` (as root) removes it, or: {}",
                stale.iter().map(|n| format!("`rmdir {root}/instances/{n}`")).collect::<Vec<_>>().join(" ")
            ))
    } else {
        let mut all = active.to_vec();
        all.extend(stale.iter().map(|n| format!("instance {n} (left by a killed rtscope run)")));
        Finding::new("tracing.active", Severity::Warn, format!("Kernel tracing is active: {}", all.join("; ")))
            .why(
                "Every enabled trace event costs a few hundred ns each time it fires, a function or \
                 latency tracer far more, and they fire on the measured CPUs: latencies measured now \
                 include that cost.",
            )
            .fix(format!(
                "Stop the tool that is tracing (trace-cmd, perf, bpftrace, rtla), or turn it off: \
                 `echo 0 > {root}/tracing_on; echo nop > {root}/current_tracer; echo > {root}/set_event`"
            ))
    }
}

/// Which of the kernel's latency tracers (the `timerlat`, `osnoise` and
/// `hwlat` probes) this kernel has.
fn latency_tracers(ctx: &Ctx, root: &str) -> Finding {
    let (ev, list) = ctx.read(&format!("{root}/available_tracers"));
    let list = list.unwrap_or_default();
    // The tracers the probes drive, as each probe's descriptor says.
    let all: Vec<(&str, &str)> = crate::measure::infos().filter_map(|i| i.kernel_tracer).map(|k| (k.name(), k.config())).collect();
    let has: Vec<&str> = all.iter().map(|(t, _)| *t).filter(|t| list.split_whitespace().any(|x| x == *t)).collect();
    let missing: Vec<String> = all.iter().filter(|(t, _)| !has.contains(t)).map(|(t, c)| format!("{t} ({c})")).collect();
    let f = if missing.is_empty() {
        Finding::new("tracing.tracers", Severity::Ok, "The kernel has the timerlat, osnoise and hwlat tracers")
            .why("`--probe timerlat` splits timer latency into IRQ and thread latency, `--probe osnoise` counts OS noise by class, `--probe hwlat` finds hardware stalls (opt-in: it spins with interrupts off).")
    } else {
        let mut f = Finding::new("tracing.tracers", Severity::Info, format!("The kernel lacks latency tracers: {}", missing.join(", ")))
            .why("The probes of the same names need them; without them `--probe timer` and `--probe noise` measure from user space.")
            .fix("Boot a kernel built with them (Debian's linux-image-rt-amd64 has all three) to use those probes.");
        if !has.is_empty() {
            f = f.why(format!("The probes need their tracer; this kernel has {} only.", has.join(", ")));
        }
        f
    };
    f.evidence(vec![ev])
}

/// What makes the buffer at `dir` (top level or an instance) active: its
/// tracer when not `nop`, or the number of enabled events, while
/// `tracing_on` is 1. `None` when it is idle.
fn buffer_activity(ctx: &Ctx, dir: &str, ev: &mut Vec<Evidence>) -> Option<String> {
    let (on_ev, on) = ctx.read(&format!("{dir}/tracing_on"));
    let (tr_ev, tracer) = ctx.read(&format!("{dir}/current_tracer"));
    let events = ctx.text(&format!("{dir}/set_event")).map(|t| t.lines().filter(|l| !l.trim().is_empty()).count()).unwrap_or(0);
    if on.as_deref() != Some("1") {
        return None;
    }
    let mut what = Vec::new();
    if let Some(t) = tracer.as_deref().filter(|t| *t != "nop") {
        what.push(format!("tracer {t}"));
    }
    if events > 0 {
        what.push(format!("{events} event{} enabled", if events == 1 { "" } else { "s" }));
    }
    if what.is_empty() {
        return None;
    }
    ev.push(on_ev);
    ev.push(tr_ev);
    ev.push(Evidence { path: format!("{dir}/set_event"), value: format!("{events} events") });
    Some(what.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::SysRoot;

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn findings(d: &std::path::Path) -> Finding {
        let root = SysRoot::new(d);
        let host = crate::sysinfo::fingerprint(&root);
        let ctx = Ctx::new(&root, &host, &[0]);
        check(&ctx).remove(0)
    }

    #[test]
    fn idle_tracing_is_ok_and_an_active_one_is_named() {
        let d = tempfile::tempdir().unwrap();
        let t = "/sys/kernel/tracing";
        write(d.path(), &format!("{t}/tracing_on"), "1\n");
        write(d.path(), &format!("{t}/current_tracer"), "nop\n");
        write(d.path(), &format!("{t}/set_event"), "");
        assert_eq!(findings(d.path()).severity, Severity::Ok);

        write(d.path(), &format!("{t}/instances/other/tracing_on"), "1\n");
        write(d.path(), &format!("{t}/instances/other/current_tracer"), "nop\n");
        write(d.path(), &format!("{t}/instances/other/set_event"), "sched:sched_switch\nirq:irq_handler_entry\n");
        let f = findings(d.path());
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.title.contains("instance other (2 events enabled)"), "{}", f.title);

        write(d.path(), &format!("{t}/current_tracer"), "function\n");
        let f = findings(d.path());
        assert!(f.title.contains("top-level buffer (tracer function)"), "{}", f.title);
    }

    /// `/proc/PID/stat` of process 4242 named `comm`, started `secs` after boot.
    fn stat(comm: &str, secs: u64) -> String {
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        format!("4242 ({comm}) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 {} 1000000 200\n", secs * hz)
    }

    #[test]
    fn a_dead_rtscope_instance_is_stale_and_a_live_one_is_not() {
        let d = tempfile::tempdir().unwrap();
        let t = "/sys/kernel/tracing";
        write(d.path(), &format!("{t}/tracing_on"), "0\n");
        write(d.path(), &format!("{t}/instances/rtscope-4242/tracing_on"), "1\n");
        write(d.path(), &format!("{t}/instances/rtscope-4242/set_event"), "sched:sched_switch\n");
        let made = crate::sys::tracefs::made_at(&d.path().join("sys/kernel/tracing/instances/rtscope-4242")).unwrap().as_secs();
        // Booted 1000 s before the instance was made.
        write(d.path(), "/proc/stat", &format!("cpu  1 2 3 4\nbtime {}\nprocesses 9\n", made - 1000));
        // No process 4242: its maker is gone.
        let f = findings(d.path());
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.title.contains("killed rtscope run: rtscope-4242"), "{}", f.title);
        assert!(f.fix.as_deref().unwrap_or("").contains("rmdir"), "{:?}", f.fix);
        // Process 4242 started 100 s before the instance was made, under another name (a
        // copy of the binary): the maker, alive.
        write(d.path(), "/proc/4242/stat", &stat("rt copy", 900));
        assert_eq!(findings(d.path()).severity, Severity::Ok);
        // An rtscope that started after the instance was made took the pid over: the
        // maker is gone, whatever the name.
        write(d.path(), "/proc/4242/stat", &stat("rtscope", 1100));
        let f = findings(d.path());
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.title.contains("killed rtscope run: rtscope-4242"), "{}", f.title);
    }
}
