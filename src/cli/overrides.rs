//! [`Overrides`] (a factor's levels, a monitor's window) layered over run's
//! parsed flags: each override counts as its flag given, so it wins over a
//! scenario or preset as a flag does ([`super::given`]) and is checked by
//! the flag's own rules when the plan is built. The one place outside the
//! parser that writes run's arguments or names their ids.

use std::collections::BTreeSet;

use super::given::Given;
use super::{PolicyArg, RunArgs};
use crate::error::BadInput;
use crate::plan::overrides::{Overrides, Setting};
use crate::plan::{Experiment, Output, RunPlan};
use crate::sys::sched::Policy;

/// `args` with `o` over them.
pub(crate) fn layered(args: &RunArgs, o: &Overrides) -> RunArgs {
    let mut a = args.clone();
    let mut given: BTreeSet<String> = a.given.ids().map(str::to_string).collect();
    let mut set = |id: &str| given.insert(id.to_string());
    if let Some(l) = &o.loads {
        a.load.loads = l.clone();
        a.load.phase_name = None;
        set("loads");
    }
    if let Some(held) = o.dma_latency {
        a.no_dma_latency = !held;
    }
    if let Some(p) = o.priority {
        a.priority = p;
        set("priority");
    }
    if let Some(p) = o.policy {
        a.policy = match p {
            Policy::Fifo => PolicyArg::Fifo,
            Policy::RoundRobin => PolicyArg::Rr,
            Policy::Other => PolicyArg::Other,
            Policy::Deadline => PolicyArg::Deadline,
        };
        set("policy");
    }
    if let Some(c) = &o.cpus {
        a.affinity = Some(crate::units::CpuSet(c.clone()));
        set("affinity");
    }
    if let Some(i) = o.interval_ns {
        a.interval = i;
        set("interval");
    }
    if let Some(d) = o.duration_ns {
        a.duration = d;
        set("duration");
    }
    if let Some(j) = &o.json {
        a.json = Some(j.clone());
        set("json");
    }
    if o.own_probes {
        set("probes");
    }
    a.given = Given::from_ids(given);
    a
}

/// The plan of `args` with `o` over them (`super::load::build`).
pub(crate) fn build(args: &RunArgs, o: &Overrides, started: &str) -> Result<(RunPlan, Output, Experiment), BadInput> {
    super::load::build(&layered(args, o), started)
}

/// The flag of the command line that already sets `s`, if given.
pub(crate) fn given_flag(args: &RunArgs, s: Setting) -> Option<&'static str> {
    match s {
        Setting::Loads => (!args.load.loads.is_empty()).then_some("--load"),
        Setting::DmaLatency => args.no_dma_latency.then_some("--no-dma-latency"),
        Setting::Priority => args.given.priority.then_some("-p/--priority"),
        Setting::Policy => args.given.policy.then_some("--policy"),
        Setting::Cpus => args.given.affinity.then_some("-a/--affinity"),
        Setting::Interval => args.given.interval.then_some("-i/--interval"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(line: &str) -> RunArgs {
        let argv: Vec<std::ffi::OsString> = line.split_whitespace().map(Into::into).collect();
        match super::super::parse_or_exit(argv).command {
            super::super::Command::Run(a) => a,
            _ => unreachable!("a run command line"),
        }
    }

    #[test]
    fn an_override_counts_as_its_flag_given() {
        let a = run_args("rtscope run -D 2s --probe timer");
        let o = Overrides { loads: Some(vec!["cpu".into()]), priority: Some(42), cpus: Some(vec![0]), dma_latency: Some(false), ..Overrides::default() };
        let b = layered(&a, &o);
        assert_eq!((b.priority, b.load.loads.clone(), b.no_dma_latency), (42, vec!["cpu".to_string()], true));
        assert!(b.given.priority && b.given.loads && b.given.affinity && b.given.duration && b.given.probes && !b.given.interval);
        assert_eq!(given_flag(&b, Setting::Cpus), Some("-a/--affinity"));
        assert_eq!(given_flag(&a, Setting::Cpus), None);
    }
}
