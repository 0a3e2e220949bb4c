//! `rtscope run --target SPEC`: a run whose probes happen on another system.
//! The flags build the one plan ([`RunPlan`]) with the checks a native run
//! makes of them (`-i`/`-D`, `--load`, the flags that apply); what only the
//! agent's announcement can settle (its probes' variants, its CPUs for `-a`
//! and `-t`) is kept as asked ([`OnTarget`]) and checked in the session. Any
//! run flag a target does not take is refused (exit 2, naming it) rather
//! than silently ignored.

use super::RunArgs;
use crate::error::BadInput;
use crate::plan::{Output, RunPlan};
use crate::target::{OnTarget, TargetSpec};

/// The flags of the target path itself: `--target` (the agent, and how it
/// is reached) and `--target-silence` (how long it may say nothing). Every
/// other flag a target takes reaches the agent in a plan line or is the
/// host's (`applies::target_flags`).
pub(crate) const SESSION_FLAGS: &[&str] = &["target_silence", "target", "target_transcript"];

/// Check the flags given with `--target` and build what the session runs.
pub(crate) fn build(args: &RunArgs, target: &str, started: &str) -> Result<(TargetSpec, RunPlan, OnTarget, Output), BadInput> {
    let spec = TargetSpec::parse(target)?;
    let names = crate::units::first_seen(args.probes.iter().map(|p| crate::measure::split_spec(p).0));
    let shape = super::applies::RunShape {
        probes: names.clone(),
        policy: args.policy.into(),
        noise_policy: crate::sys::sched::Policy::Other,
        target: true,
    };
    super::applies::check_flags(&args.given, &shape)?;
    super::plan::check_interval(args)?;
    check_agent_range(args)?;
    let phases = super::load::phases_from_flags(&args.load)?;
    let mut loads = Vec::new();
    for p in &phases {
        let Some(load) = crate::target::agent_load(&p.loads) else {
            return Err(BadInput(format!(
                "--load {}: on a target only the agent's built-in loads run: idle, cpu, memory. Start other loads on the target yourself and name the phase with --phase-name",
                p.name
            )));
        };
        loads.push(load);
    }
    // The probe options an agent takes; a size not given is the agent's own (0).
    let probe = crate::model::ProbeOptions {
        periods_ns: args.probe_opts.periods.clone().unwrap_or_default(),
        iterations: args.probe_opts.iterations,
        msg_size: if args.given.msg_size { args.probe_opts.msg_size } else { 0 },
        ..Default::default()
    };
    let affinity = args.affinity.as_ref().map(|c| c.0.clone());
    let threads = args.threads.map(|t| t as usize);
    // CPUs and threads are the agent's to settle (`OnTarget`): the plan
    // holds what was asked until then.
    let measuring = super::plan::measuring(args, threads.unwrap_or(0), affinity.clone().unwrap_or_default(), probe);
    let plan = RunPlan {
        probes: names.iter().map(|n| n.to_string()).collect(),
        phases: phases.into_iter().map(|p| p.name).collect(),
        measuring,
        dma_latency: false,
        trace: None,
    };
    let on = OnTarget { probes: args.probes.clone(), threads, affinity, loads, silence_ns: args.target_silence, transcript: args.target_transcript.clone() };
    Ok((spec, plan, on, super::plan::output(args, started)?))
}

/// The agent's plan limit on the interval (agent/plan.c: 1 ns to 1 h),
/// checked here so that a plan the agent would refuse is exit 2 before
/// anything is started or connected (its 365-day limit on a run is every
/// duration's: `units::parse_duration`).
fn check_agent_range(args: &RunArgs) -> Result<(), BadInput> {
    const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;
    if args.interval > MAX_INTERVAL_NS {
        return Err(BadInput(format!(
            "-i/--interval {}: an agent takes intervals of up to 1 h; shorten the interval",
            crate::units::fmt_ns(args.interval)
        )));
    }
    Ok(())
}
