//! Second stage of argument handling: check the arguments against this system
//! and build the validated [`RunPlan`] (plus where results go).
//! Everything that can be wrong with the input is found here, before anything
//! is started or written, and reported as [`BadInput`] (exit code 2).

use std::path::PathBuf;

use super::RunArgs;
use crate::error::BadInput;
use crate::measure::{probe_by_name, PROBES};
use crate::model::{Nanos, Plan};
use crate::sys::sched::{online_cpus, Policy};

/// A validated experiment: what to measure, how, where.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub probes: Vec<String>,
    pub phases: Vec<String>,
    pub duration_ns: u64,
    pub interval_ns: u64,
    pub priority: u8,
    pub policy: Policy,
    pub threads: usize,
    pub cpus: Vec<usize>,
    pub dma_latency: bool,
    pub worst_k: usize,
    pub trace: Option<crate::trace::TracePlan>,
    /// Probe-specific options and variant selection (`--probe NAME:VARIANT`).
    pub probe: super::probe_opts::ProbeSettings,
}

/// Where and how to report.
#[derive(Debug, Clone)]
pub struct Output {
    /// The result file (decided before the run starts).
    pub path: PathBuf,
    pub quiet: bool,
    pub ns: bool,
}

impl RunPlan {
    /// The CPUs measuring threads actually run on (threads take `cpus`
    /// round-robin, so fewer threads than CPUs use only the first ones).
    pub fn measured_cpus(&self) -> Vec<usize> {
        self.cpus.iter().take(self.threads.max(1)).copied().collect()
    }

    pub fn to_model(&self) -> Plan {
        Plan {
            probes: self.probes.clone(),
            phases: self.phases.clone(),
            duration_ns: Nanos(self.duration_ns),
            interval_ns: Nanos(self.interval_ns),
            priority: self.priority,
            policy: self.policy.name().to_string(),
            threads: self.threads,
            cpus: self.cpus.clone(),
            dma_latency: self.dma_latency,
            worst_k: self.worst_k,
            trace: self.trace.clone(),
            probe_options: self.probe.to_model(),
        }
    }
}

/// Build the plan from parsed arguments; `started` names the result file.
pub fn build(args: &RunArgs, started: &str) -> Result<(RunPlan, Output), BadInput> {
    let online = online_cpus();
    let cpus = match &args.affinity {
        Some(crate::units::CpuSet(set)) => {
            if let Some(bad) = set.iter().find(|c| !online.contains(c)) {
                return Err(BadInput(format!(
                    "-a/--affinity: CPU {bad} is not online; online CPUs are {}",
                    crate::units::cpu_list_str(&online)
                )));
            }
            set.clone()
        }
        None => online.clone(),
    };
    let threads = args.threads.map(|t| t as usize).unwrap_or(cpus.len());

    let mut probes = Vec::new();
    let mut selected = super::probe_opts::VariantSelection::default();
    for spec in &args.probes {
        let (p, sel) = super::probe_opts::split_spec(spec);
        let Some(probe) = probe_by_name(p) else {
            let names: Vec<&str> = PROBES.iter().map(|(n, _)| *n).collect();
            return Err(BadInput(format!("--probe: unknown probe '{p}'; available: {}", names.join(", "))));
        };
        selected.add(probe.as_ref(), sel)?;
        if !probes.iter().any(|q| q == p) {
            probes.push(p.to_string());
        }
    }
    let probe_settings = super::probe_opts::ProbeSettings::from_opts(
        &args.probe_opts,
        selected.finish(),
        args.affinity.is_some() || args.threads.is_some(),
    );
    super::probe_opts::check_against_system(&probes, &probe_settings, &cpus)?;
    if probes.is_empty() {
        return Err(BadInput("--probe: no probe given; try --probe timer".into()));
    }
    if args.trace_threshold.is_some() && !probes.iter().any(|p| p == "timer") {
        return Err(BadInput(format!(
            "--trace-threshold: only the timer probe hands late samples to the tracer, and --probe {} has none; add timer (--probe timer,...) or drop --trace-threshold",
            probes.join(",")
        )));
    }
    if args.interval > args.duration {
        return Err(BadInput(format!(
            "-i/--interval {} is longer than -D/--duration {}: no period would complete; shorten the interval or lengthen the run",
            crate::units::fmt_ns(args.interval),
            crate::units::fmt_ns(args.duration)
        )));
    }

    let path = match &args.json {
        Some(p) => {
            check_parent(p, "--json")?;
            p.clone()
        }
        None => {
            if args.out.exists() && !args.out.is_dir() {
                return Err(BadInput(format!("--out: '{}' exists and is not a directory", args.out.display())));
            }
            args.out.join(format!("rtscope-{started}.json"))
        }
    };

    let plan = RunPlan {
        probes,
        phases: vec!["idle".to_string()],
        duration_ns: args.duration,
        interval_ns: args.interval,
        priority: args.priority,
        policy: args.policy.into(),
        threads,
        cpus,
        dma_latency: !args.no_dma_latency,
        worst_k: args.worst as usize,
        trace: args.trace_threshold.map(|t| crate::trace::TracePlan {
            threshold_ns: Nanos(t),
            buffer_kb: args.trace_buffer,
            max_snapshots: args.trace_max,
        }),
        probe: probe_settings,
    };
    Ok((plan, Output { path, quiet: args.quiet, ns: args.ns }))
}

fn check_parent(p: &std::path::Path, flag: &str) -> Result<(), BadInput> {
    if p.is_dir() {
        return Err(BadInput(format!("{flag}: '{}' is a directory; give a file name", p.display())));
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(BadInput(format!(
            "{flag}: directory '{}' does not exist; create it first or choose another path",
            parent.display()
        )));
    }
    Ok(())
}
