//! Second stage of argument handling: check the arguments against this system
//! and build the validated [`RunPlan`] (`crate::plan`) plus where results go.
//! Everything that can be wrong with the input is found here, before anything
//! is started or written, and reported as [`BadInput`] (exit code 2).

use std::path::PathBuf;

use super::RunArgs;
use crate::error::BadInput;
use crate::measure::ProbeRun;
use crate::measure::{probe_by_name, split_spec, Traced};
use crate::model::Nanos;
use crate::plan::probes::{check_against_system, VariantSelection};
use crate::plan::{Output, RunPlan, Site};
use crate::sys::sched::online_cpus;

/// Build the plan from parsed arguments, the probes run at `site`; `started`
/// names the result file. The one builder of a [`RunPlan`]: `run`, `run
/// --target`, `monitor` and `factors` all come through here.
pub(crate) fn build(args: &RunArgs, started: &str, site: Site) -> Result<(RunPlan, Output), BadInput> {
    let here = site == Site::Here;
    let (threads, cpus) = match site {
        Site::Here => {
            let cpus = measured_cpus(args)?;
            (args.threads.map(|t| t as usize).unwrap_or(cpus.len()), cpus)
        }
        // The agent's to settle (`agent_host::OnTarget`): the plan holds what
        // was asked until then.
        Site::Agent => (args.threads.map_or(0, |t| t as usize), args.affinity.as_ref().map(|c| c.0.clone()).unwrap_or_default()),
    };
    let (probes, selected) = probes_of(args, site)?;
    let cpus_explicit = args.affinity.is_some() || args.threads.is_some();
    let probe_settings = super::probe_opts::settings(&args.probe_opts, &args.given, selected.finish(), cpus_explicit, &probes, site);
    if here {
        check_against_system(&probes, &probe_settings, &cpus)?;
        if probes.is_empty() {
            return Err(BadInput("--probe: no probe given; try --probe timer".into()));
        }
        check_trace(args, &probes)?;
    }
    check_interval(args)?;
    if site == Site::Agent {
        check_agent_range(args)?;
    }

    let output = output(args, started)?;

    let plan = RunPlan {
        probes,
        phases: vec!["idle".to_string()],
        measuring: measuring(args, threads, cpus, probe_settings),
        dma_latency: here && !args.no_dma_latency,
        trace: args.trace_threshold.filter(|_| here).map(|t| crate::trace::TracePlan {
            threshold_ns: Nanos(t),
            buffer_kb: args.trace_buffer,
            max_snapshots: args.trace_max,
            events: if args.trace_events.0 == ["default"] { Vec::new() } else { args.trace_events.0.clone() },
            stack_hz: (args.trace_stacks > 0).then_some(args.trace_stacks),
        }),
    };
    Ok((plan, output))
}

/// `-i` no longer than `-D`: whatever measures the run, a period must complete.
fn check_interval(args: &RunArgs) -> Result<(), BadInput> {
    if args.interval > args.duration {
        return Err(BadInput(format!(
            "-i/--interval {} is longer than -D/--duration {}: no period would complete; shorten the interval or lengthen the run",
            crate::units::fmt_ns(args.interval),
            crate::units::fmt_ns(args.duration)
        )));
    }
    Ok(())
}

/// The agent's plan limit on the interval (agent/plan.c: 1 ns to 1 h),
/// checked here so that a plan the agent would refuse is exit 2 before
/// anything is started or connected (its 365-day limit on a run is every
/// duration's: `units::parse_duration`).
fn check_agent_range(args: &RunArgs) -> Result<(), BadInput> {
    const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;
    if args.interval > MAX_INTERVAL_NS {
        return Err(BadInput(format!("-i/--interval {}: an agent takes intervals of up to 1 h; shorten the interval", crate::units::fmt_ns(args.interval))));
    }
    Ok(())
}

/// What every measuring thread is told from the flags (`-D`, `-i`, `-p`,
/// `--policy`, `--worst`), whatever measures the run, on the `threads` and
/// `cpus` decided for it, with the probes' `probe` options.
fn measuring(args: &RunArgs, threads: usize, cpus: Vec<usize>, probe: crate::model::ProbeOptions) -> ProbeRun {
    ProbeRun {
        duration_ns: args.duration,
        interval_ns: args.interval,
        priority: args.priority,
        policy: args.policy.into(),
        threads,
        cpus,
        worst_k: args.worst as usize,
        probe,
        trace_threshold_ns: None,
    }
}

/// `-a` (every CPU of it online), else every online CPU.
fn measured_cpus(args: &RunArgs) -> Result<Vec<usize>, BadInput> {
    let online = online_cpus();
    match &args.affinity {
        Some(crate::units::CpuSet(set)) => match set.iter().find(|c| !online.contains(c)) {
            Some(bad) => Err(BadInput(format!("-a/--affinity: CPU {bad} is not online; online CPUs are {}", crate::units::cpu_list_str(&online)))),
            None => Ok(set.clone()),
        },
        None => Ok(online),
    }
}

/// The probes of `--probe`, each once in the order given, and the variants
/// selected (`NAME:VARIANT`, checked against the probe's variants). An
/// agent's probes and variants are its own: their names are kept as asked
/// (checked against its announcement in the session), no variant selected.
fn probes_of(args: &RunArgs, site: Site) -> Result<(Vec<String>, VariantSelection), BadInput> {
    let mut probes = Vec::new();
    let mut selected = VariantSelection::default();
    for spec in &args.probes {
        let (p, sel) = split_spec(spec);
        if site == Site::Here {
            let Some(probe) = probe_by_name(p) else {
                return Err(BadInput(format!("--probe: unknown probe '{p}'; available: {}", crate::measure::names().join(", "))));
            };
            selected.add(probe, sel)?;
        }
        if !probes.iter().any(|q| q == p) {
            probes.push(p.to_string());
        }
    }
    Ok((probes, selected))
}

/// `--trace-threshold` needs a probe whose late samples are analysed.
fn check_trace(args: &RunArgs, probes: &[String]) -> Result<(), BadInput> {
    let analyses_late = |p: &String| crate::measure::is(p, |i| i.traced != Traced::No);
    if args.trace_threshold.is_none() || probes.iter().any(analyses_late) {
        return Ok(());
    }
    Err(BadInput(format!(
        "--trace-threshold: late samples are analysed for the probes timerlat, {}, and --probe {} has none of them; add one (--probe timer,...) or drop --trace-threshold",
        // The timer-method probes, then the hand-off ones (registry order in each).
        [Traced::TimerMethod, Traced::Handoff]
            .iter()
            .flat_map(|t| crate::measure::infos().filter(move |i| i.traced == *t).map(|i| i.name))
            .collect::<Vec<_>>()
            .join(", "),
        probes.join(",")
    )))
}

/// What the run writes and prints, whatever measures it: the result file
/// ([`output_path`]), `-q`, and the unit of `--ns`.
fn output(args: &RunArgs, started: &str) -> Result<Output, BadInput> {
    Ok(Output { path: output_path(args, started)?, quiet: args.quiet, unit: crate::units::Unit::of_ns_flag(args.ns) })
}

/// Where the result goes: `--json FILE`, else `--out DIR`/rtscope-STARTED-XXXXXXXX.json
/// ([`run_name`]); checked writable now (exit 2), before anything is measured.
fn output_path(args: &RunArgs, started: &str) -> Result<PathBuf, BadInput> {
    Ok(match &args.json {
        Some(p) => {
            check_parent(p, "--json")?;
            p.clone()
        }
        None => {
            if args.out.exists() && !args.out.is_dir() {
                return Err(BadInput(format!("--out: '{}' exists and is not a directory", args.out.display())));
            }
            if args.out.is_dir() {
                check_writable(&args.out, "--out")?;
            } else {
                // Created when the result is written; its nearest existing
                // parent must take it.
                let mut up = args.out.as_path();
                while let Some(p) = up.parent() {
                    up = if p.as_os_str().is_empty() { std::path::Path::new(".") } else { p };
                    if up.is_dir() {
                        break;
                    }
                }
                check_writable(up, "--out")?;
            }
            args.out.join(run_name(started))
        }
    })
}

/// A result file's name in `--out`: the start time and 32 random bits,
/// `rtscope-20261122T090135Z-9f3a04c2.json`. Runs started in the same second
/// into one directory (a fleet started by cron, on one host or sharing the
/// directory over NFS) each get a file of their own; the time alone named
/// 32 runs' results with 4 files, each rewritten by several runs.
fn run_name(started: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS's random source per process; the
    // pid and the clock make two states of one process differ too.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    format!("rtscope-{started}-{:08x}.json", h.finish() as u32)
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
        return Err(BadInput(format!("{flag}: directory '{}' does not exist; create it first or choose another path", parent.display())));
    }
    check_writable(&parent, flag)
}

/// Can a file be created in `dir`? Tried with a temp file (removed again),
/// before anything is measured: permissions, a read-only or full
/// filesystem, /proc all answer here.
pub(crate) fn check_writable(dir: &std::path::Path, flag: &str) -> Result<(), BadInput> {
    tempfile::Builder::new()
        .prefix(".rtscope-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| BadInput(format!("{flag}: cannot write in '{}': {e}; choose a directory you can write to", dir.display())))?;
    check_free(dir, flag)
}

/// Refuse (exit 2) a directory whose filesystem has less than
/// [`crate::sys::stat::MIN_FREE_BYTES`] free.
pub(crate) fn check_free(dir: &std::path::Path, flag: &str) -> Result<(), BadInput> {
    match crate::sys::stat::free_bytes(dir) {
        Ok(free) if free < crate::sys::stat::MIN_FREE_BYTES => Err(BadInput(format!(
            "{flag}: the filesystem of '{}' has only {} free, less than the {} a result needs; free some space or choose another place",
            dir.display(),
            crate::units::fmt_bytes(free),
            crate::units::fmt_bytes(crate::sys::stat::MIN_FREE_BYTES)
        ))),
        _ => Ok(()),
    }
}
