//! `rtscope run --target SPEC`: a run whose probes happen on another system.
//! The flags build the one plan ([`RunPlan`], `plan::build` at
//! [`Site::Agent`]) with the checks a native run makes of them (`-i`/`-D`,
//! `--load`, the flags that apply); what only the agent's announcement can
//! settle (its probes' variants, its CPUs for `-a` and `-t`) is kept as
//! asked ([`OnTarget`]) and checked in the session. Any
//! run flag a target does not take is refused (exit 2, naming it) rather
//! than silently ignored.

use super::RunArgs;
use crate::agent_host::{OnTarget, TargetSpec};
use crate::error::BadInput;
use crate::plan::{Output, RunPlan, Site};

/// Check the flags given with `--target` and build what the session runs.
pub(crate) fn build(args: &RunArgs, target: &str, started: &str) -> Result<(TargetSpec, RunPlan, OnTarget, Output), BadInput> {
    let spec = TargetSpec::parse(target)?;
    let names = crate::units::first_seen(args.probes.iter().map(|p| crate::measure::split_spec(p).0));
    let shape = super::applies::RunShape { probes: names, policy: args.policy.into(), noise_policy: crate::sys::sched::Policy::Other, target: true };
    super::applies::check_flags(&args.given, &shape)?;
    let (mut plan, output) = super::plan::build(args, started, Site::Agent)?;
    let phases = super::load::phases_from_flags(&args.load)?;
    let mut loads = Vec::new();
    for p in &phases {
        let Some(load) = crate::agent_host::agent_load(&p.loads) else {
            return Err(BadInput(format!(
                "--load {}: on a target only the agent's built-in loads run: idle, cpu, memory. Start other loads on the target yourself and name the phase with --phase-name",
                p.name
            )));
        };
        loads.push(load);
    }
    plan.phases = phases.into_iter().map(|p| p.name).collect();
    let affinity = args.affinity.as_ref().map(|c| c.0.clone());
    let threads = args.threads.map(|t| t as usize);
    let on = OnTarget { probes: args.probes.clone(), threads, affinity, loads, silence_ns: args.target_silence, transcript: args.target_transcript.clone() };
    Ok((spec, plan, on, output))
}
