//! The plan in words, for `--dry-run` and the start of a run: the scenario
//! and its notes, the measuring threads, the loads, each phase with its
//! probe runs, the total and where the result goes.

use crate::load;
use crate::plan::{Experiment, Output, RunPlan};
use crate::sys::sched::Policy;
use crate::units;

/// The plan in words. `dry_run`: the result line says it will not be written.
pub(crate) fn describe(plan: &RunPlan, exp: &Experiment, output: &Output, dry_run: bool) -> String {
    let mut s = String::new();
    if let Some(sc) = &exp.scenario {
        s.push_str(&format!("scenario: {} ({})\n", sc.name, sc.source));
    }
    for n in &exp.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&measuring(plan));
    s.push_str(&loads(exp));
    for (i, p) in exp.phases.iter().enumerate() {
        s.push_str(&phase(plan, exp, i, p));
    }
    // The cap in hours when whole hours (the default `24h` reads `24h`, not `1d`).
    let cap = match exp.max_total_ns {
        n if n >= 3_600_000_000_000 && n.is_multiple_of(3_600_000_000_000) => format!("{}h", n / 3_600_000_000_000),
        n => units::fmt_ns(n),
    };
    s.push_str(&format!("total: {} (cap {cap})\n", units::fmt_ns(exp.total_ns())));
    // `result:` is the line at the end, once the file is written.
    if dry_run {
        s.push_str(&format!("output: {} (not written: --dry-run)\n", output.path.display()));
    } else {
        s.push_str(&format!("output: {}\n", output.path.display()));
    }
    s
}

/// The measuring threads: how many, where, at which policy and priority.
fn measuring(plan: &RunPlan) -> String {
    if plan.measuring.policy == Policy::Deadline {
        let dl = plan.measuring.probe.dl_params(plan.measuring.interval_ns);
        return format!(
            "measuring: {} thread(s), SCHED_DEADLINE runtime {} deadline {} per period (-i, or each --periods), not pinned (a deadline task spans its root domain)\n",
            plan.measuring.threads,
            plan.measuring.probe.dl_runtime_ns.map(units::fmt_ns).unwrap_or_else(|| format!("{} (60% of the deadline)", units::fmt_ns(dl.runtime_ns))),
            plan.measuring.probe.dl_deadline_ns.map(units::fmt_ns).unwrap_or_else(|| "= period".into()),
        );
    }
    // Said now, not discovered in the result: a policy this user may not
    // have falls back to SCHED_OTHER at set-up.
    let fallback = match plan.measuring.policy {
        Policy::Other => String::new(),
        p => match crate::sys::sched::policy_permitted(p, plan.measuring.priority) {
            Ok(()) => String::new(),
            // No thread to try it on: the run's own threads will not start either.
            Err(nix::errno::Errno::EAGAIN) => {
                " — not known: no thread could be started to try it (EAGAIN: the user's process limit, RLIMIT_NPROC / ulimit -u, reached?)".to_string()
            }
            Err(e) => format!(
                " — not permitted here ({e}: needs root, CAP_SYS_NICE or RLIMIT_RTPRIO ≥ {}): the threads will run SCHED_OTHER",
                plan.measuring.priority
            ),
        },
    };
    format!(
        "measuring: {} thread(s) on CPUs {}, SCHED_{} priority {}{fallback}\n",
        plan.measuring.threads,
        // The CPUs the threads are pinned to (`-t 1` on 0-1 is CPU 0), not the whole set.
        units::cpu_list_str(&plan.measured_cpus()),
        plan.measuring.policy.name().to_uppercase(),
        plan.measuring.priority
    )
}

/// Who makes the loads and where, and the shell commands the phases run.
fn loads(exp: &Experiment) -> String {
    let mut s = String::new();
    let generated = exp.phases.iter().any(|p| p.loads.iter().any(|k| k.load().is_some()));
    let commands: Vec<&str> =
        exp.phases.iter().flat_map(|p| &p.loads).filter_map(|k| if let load::LoadKind::Cmd(line) = k { Some(line.as_str()) } else { None }).collect();
    if generated {
        s.push_str(&format!(
            "loads: engine {}, CPUs {}, {} worker(s) per load, SCHED_OTHER, temp files under {}; settle {}\n",
            exp.load.engine.name(),
            units::cpu_list_str(&exp.load.cpus),
            exp.load.workers(),
            exp.load.dir.display(),
            units::fmt_ns(exp.settle_ns)
        ));
    }
    if !commands.is_empty() {
        s.push_str(&format!(
            "commands: {} shell command(s) from {}, run with `sh -c` as this user (SCHED_OTHER, CPUs {}, in {}); settle {}\n",
            commands.len(),
            exp.scenario.as_ref().map(|r| r.source.clone()).unwrap_or_else(|| "--load".to_string()),
            units::cpu_list_str(&exp.load.cpus),
            exp.load.dir.display(),
            units::fmt_ns(exp.settle_ns)
        ));
    }
    s
}

/// Phase `i`: its loads and length, then each probe run in it.
fn phase(plan: &RunPlan, exp: &Experiment, i: usize, p: &load::PhaseSpec) -> String {
    let loads = if p.loads.is_empty() {
        "no load".to_string()
    } else {
        p.loads
            .iter()
            .map(|k| match k {
                load::LoadKind::Cmd(line) => format!("cmd: {line} (shell command)"),
                k => format!("{} ({})", k.name(), exp.load.engine_for(k)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!("phase {} {}: {} — {}\n", i + 1, p.name, loads, units::fmt_ns(exp.phase_ns(p)));
    for e in &exp.entries {
        let warm = if e.warmup_ns > 0 { format!(" after {} warm-up", units::fmt_ns(e.warmup_ns)) } else { String::new() };
        let every = if crate::measure::is(&e.probe, |i| i.counts_operations) {
            format!("counting per {} interval (--tm-interval)", units::fmt_ns(plan.measuring.probe.tm_interval_ns))
        } else if e.periods_ns.is_empty() {
            format!("every {}", units::fmt_ns(e.interval_ns))
        } else {
            format!("every {}", e.periods_ns.iter().map(|p| units::fmt_ns(*p)).collect::<Vec<_>>().join(", "))
        };
        let sel = plan.measuring.probe.variants.get(&e.probe).map(|v| format!(" ({})", v.join(", "))).unwrap_or_default();
        s.push_str(&format!("  probe {}{sel} {every} for {}{warm}\n", e.probe, units::fmt_ns(e.duration_ns)));
    }
    s
}
