//! `rtscope run --target SPEC`: the run flags that mean something on a
//! target become a [`TargetPlan`]; any other run flag is refused (exit 2,
//! naming it) rather than silently ignored. CPUs are checked later, against
//! the CPUs the agent announces.

use super::RunArgs;
use crate::error::BadInput;
use crate::plan::Output;
use crate::target::{TargetPlan, TargetSpec};

/// Check the flags given with `--target` and build what the session runs.
pub(crate) fn build(args: &RunArgs, target: &str, started: &str) -> Result<(TargetSpec, TargetPlan, Output), BadInput> {
    let spec = TargetSpec::parse(target)?;
    let shape = super::applies::RunShape {
        probes: args.probes.iter().map(|p| crate::measure::split_spec(p).0).collect(),
        policy: args.policy.into(),
        noise_policy: crate::sys::sched::Policy::Other,
        target: true,
    };
    super::applies::check_flags(&args.given, &shape)?;
    if args.interval > args.duration {
        return Err(BadInput(format!(
            "-i/--interval {} is longer than -D/--duration {}: no period would complete; shorten the interval or lengthen the run",
            crate::units::fmt_ns(args.interval),
            crate::units::fmt_ns(args.duration)
        )));
    }
    let mut phases: Vec<(String, String)> = Vec::new();
    for raw in &args.load.loads {
        for name in raw.split(',').map(str::trim) {
            let (phase, load) = match name {
                "idle" | "none" => ("idle", "none"),
                "cpu" => ("cpu", "cpu"),
                "memory" => ("memory", "mem"),
                _ => {
                    return Err(BadInput(format!(
                        "--load {name}: on a target only the agent's built-in loads run: idle, cpu, memory. Start other loads on the target yourself and name the phase with --phase-name"
                    )))
                }
            };
            if phases.iter().any(|(p, _)| p == phase) {
                return Err(BadInput(format!("--load: phase '{phase}' is listed twice; list each phase once")));
            }
            phases.push((phase.to_string(), load.to_string()));
        }
    }
    match (&args.load.phase_name, phases.is_empty()) {
        (Some(_), false) => return Err(BadInput("--phase-name names the one phase of a load started outside rtscope; not with --load".into())),
        (Some(n), true) => phases.push((n.clone(), "none".into())),
        (None, true) => phases.push(("idle".into(), "none".into())),
        (None, false) => {}
    }
    let tp = TargetPlan {
        probes: args.probes.clone(),
        duration_ns: args.duration,
        interval_ns: args.interval,
        priority: args.priority,
        policy: args.policy.into(),
        threads: args.threads.map(|t| t as usize),
        affinity: args.affinity.as_ref().map(|c| c.0.clone()),
        periods_ns: args.probe_opts.periods.clone().unwrap_or_default(),
        worst_k: args.worst as usize,
        iterations: args.probe_opts.iterations,
        msg_size: args.given.msg_size.then_some(args.probe_opts.msg_size),
        phases,
        silence_ns: args.target_silence,
    };
    let path = super::plan::output_path(args, started)?;
    Ok((spec, tp, Output { path, quiet: args.quiet, unit: crate::units::Unit::of_ns_flag(args.ns) }))
}
