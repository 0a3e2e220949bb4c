//! `rtscope run --target SPEC`: the run flags that mean something on a
//! target become a [`TargetPlan`]; any other run flag is refused (exit 2,
//! naming it) rather than silently ignored. CPUs are checked later, against
//! the CPUs the agent announces.

use std::collections::BTreeSet;

use super::RunArgs;
use crate::error::BadInput;
use crate::plan::Output;
use crate::target::{TargetPlan, TargetSpec};

/// Run flags (clap ids) that apply on a target.
const APPLY: &[&str] = &[
    "target", "duration", "interval", "priority", "policy", "threads", "affinity", "probes", "periods", "worst", "deadline", "json",
    "out", "db", "no_store", "quiet", "ns", "iterations", "msg_size", "loads", "phase_name",
];

/// The flag as a user writes it, from its clap id.
fn flag(id: &str) -> String {
    match id {
        "probes" => "--probe".into(),
        "loads" => "--load".into(),
        "scenario" => "SCENARIO.toml".into(),
        _ => format!("--{}", id.replace('_', "-")),
    }
}

/// Check the flags given with `--target` and build what the session runs.
pub fn build(args: &RunArgs, target: &str, explicit: &BTreeSet<String>, started: &str) -> Result<(TargetSpec, TargetPlan, Output), BadInput> {
    let spec = TargetSpec::parse(target)?;
    // Ids of flattened groups (`LoadArgs`, `StoreOpts`) come with their flags: not flags.
    let is_group = |id: &str| id.starts_with(|c: char| c.is_ascii_uppercase());
    if let Some(bad) = explicit.iter().find(|id| !is_group(id) && !APPLY.contains(&id.as_str())) {
        return Err(BadInput(format!(
            "{} does not apply with --target (the agent measures on the target); flags that do: --probe, -i, -D, -p, --policy, -a, -t, --periods, --worst, --deadline, --iterations, --msg-size, --load cpu|memory, --phase-name, --json, --out, --db, --no-store, -q. Drop {}",
            flag(bad),
            flag(bad)
        )));
    }
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
        msg_size: explicit.contains("msg_size").then_some(args.probe_opts.msg_size),
        phases,
    };
    let path = super::plan::output_path(args, started)?;
    Ok((spec, tp, Output { path, quiet: args.quiet, ns: args.ns }))
}
