//! `rtscope run` flags for load phases, scenarios and presets, and the step
//! that turns them (plus a scenario file or preset, if any) into the
//! validated [`RunPlan`] and [`Experiment`].
//!
//! Where a value comes from, first match wins: a flag given on the command
//! line; the scenario file or preset; rtscope's default (decided by
//! [`super::given`]). A scenario fixes the
//! experiment's shape, so `--probe` and `--load` cannot be combined with one
//! (the error says so); flags such as `-D` or `--settle` override its values.
//! A bare `rtscope run` (no flag that shapes the experiment) runs the
//! `quick` preset. Everything is checked here, before anything starts: a bad
//! value is [`BadInput`] (exit 2, nothing written).

use std::path::PathBuf;

use clap::Args;

use super::given::{layer, Given};
use super::plan;
use super::RunArgs;
use crate::error::BadInput;
use crate::load::{self, parse_load, Engine, LoadOptions, PhaseSpec};
use crate::plan::{Experiment, Output, ProbeEntry, RunPlan, Site, Table};
use crate::scenario::{self, presets, ProbeFileEntry, Scenario, ScenarioFile};
use crate::units;

pub(crate) use super::describe::describe;

/// `--load-engine`: clap's view of [`load::Engine`] (the load layer knows no clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EngineArg {
    /// stress-ng when it is on PATH, else builtin.
    Auto,
    StressNg,
    Builtin,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Auto => Engine::Auto,
            EngineArg::StressNg => Engine::StressNg,
            EngineArg::Builtin => Engine::Builtin,
        }
    }
}

/// Arguments of the hidden `rtscope __load` subcommand, as rtscope wrote
/// them; the load layer reads them ([`load::worker::LoadWorkerArgs`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct LoadWorkerArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub(crate) args: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct LoadArgs {
    /// Scenario file (TOML) describing phases, probes, periods and durations (see docs/scenarios.md).
    #[arg(value_name = "SCENARIO.toml")]
    pub(crate) scenario: Option<PathBuf>,

    /// Run a built-in preset (see `rtscope presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "scenario")]
    pub(crate) preset: Option<String>,

    /// Print the plan and its total duration, then exit without running.
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Load phases, in order: idle, cpu, memory, io, net, irq, sched, mixed, cmd:"<command line>" [default: idle].
    #[arg(long = "load", value_name = "NAME[,NAME...]")]
    pub(crate) loads: Vec<String>,

    /// Name of the one phase when its load comes from outside rtscope (a load you started, a lab
    /// guest's load), e.g. guest:cpu:2 [default: idle]; not with --load or a scenario.
    #[arg(long, value_name = "NAME")]
    pub(crate) phase_name: Option<String>,

    /// Who makes the load: stress-ng when on PATH (auto), stress-ng, or rtscope's built-in generators.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub(crate) load_engine: Option<EngineArg>,

    /// CPUs the loads run on, e.g. 0-1 [default: every online CPU].
    #[arg(long, value_name = "CPUSET", value_parser = units::parse_cpuset)]
    pub(crate) load_cpus: Option<units::CpuSet>,

    /// Workers per load = intensity × number of load CPUs (at least 1) [default: 1].
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    pub(crate) load_intensity: Option<f64>,

    /// Directory on the filesystem under test; the io load rewrites at most 256 MiB of files
    /// below it [default: $TMPDIR, else /var/tmp].
    #[arg(long, value_name = "DIR")]
    pub(crate) load_dir: Option<PathBuf>,

    /// How long loads run before the probes start in each loaded phase [default: 2s].
    #[arg(long, value_name = "DURATION", value_parser = parse_wait, allow_hyphen_values = true)]
    pub(crate) settle: Option<u64>,

    /// Refuse plans longer than this in total [default: 24h].
    #[arg(long, value_name = "DURATION", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub(crate) max_total: Option<u64>,

    /// Allow a plan that keeps every CPU busy at real-time priority (may starve the machine).
    #[arg(long)]
    pub(crate) force: bool,
}

/// A duration that may be 0 (`--settle 0`).
fn parse_wait(s: &str) -> Result<u64, String> {
    if s.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
        return Ok(0);
    }
    units::parse_duration(s)
}

const DEFAULT_SETTLE_NS: u64 = 2_000_000_000;
const DEFAULT_MAX_TOTAL_NS: u64 = 86_400_000_000_000;

/// Build the plan and experiment from the arguments: a scenario file, a
/// preset, or (a bare `rtscope run`) the default preset, merged with the
/// flags given; else the flags alone. A flag that would do nothing is
/// refused ([`super::applies`]).
pub(crate) fn build(args: &RunArgs, started: &str) -> Result<(RunPlan, Output, Experiment), BadInput> {
    let la = &args.load;
    let scenario: Option<Scenario> = match (&la.scenario, &la.preset) {
        (Some(p), _) => Some(scenario::from_file(p)?),
        (None, Some(name)) => Some(presets::get(name)?),
        (None, None) if args.given.is_bare() => Some(presets::get(presets::DEFAULT)?),
        (None, None) => None,
    };
    let built = match scenario {
        Some(s) => from_scenario(args, started, &s)?,
        None => from_flags(args, started)?,
    };
    let (plan, _, exp) = &built;
    let shape = super::applies::RunShape {
        probes: exp.entries.iter().map(|e| e.probe.as_str()).collect(),
        policy: plan.measuring.policy,
        noise_policy: plan.measuring.probe.noise_policy.into(),
        target: false,
    };
    super::applies::check_flags(&args.given, &shape)?;
    Ok(built)
}

fn from_flags(args: &RunArgs, started: &str) -> Result<(RunPlan, Output, Experiment), BadInput> {
    let (mut plan, output) = plan::build(args, started, Site::Here)?;
    let phases = phases_from_flags(&args.load)?;
    let entries = plan
        .probes
        .iter()
        .map(|p| ProbeEntry {
            probe: p.clone(),
            interval_ns: plan.measuring.interval_ns,
            periods_ns: Vec::new(),
            duration_ns: plan.measuring.duration_ns,
            warmup_ns: 0,
        })
        .collect();
    let exp = finish(args, &mut plan, phases, entries, None)?;
    Ok((plan, output, exp))
}

/// The load phases of `--load` (each load its own phase, `cmd` phases
/// numbered), or the one phase `--phase-name` names, else `idle`.
pub(crate) fn phases_from_flags(la: &LoadArgs) -> Result<Vec<PhaseSpec>, BadInput> {
    let mut phases: Vec<PhaseSpec> = Vec::new();
    for raw in &la.loads {
        let list = load::split_load_list(raw).map_err(|e| BadInput(format!("--load: {e}")))?;
        for spec in list {
            let loads = parse_load(&spec).map_err(|e| BadInput(format!("--load: {e}")))?;
            let mut name = if spec.starts_with("cmd:") { "cmd".to_string() } else { spec.trim().to_string() };
            if name == "none" {
                name = "idle".into();
            }
            if phases.iter().any(|p| p.name == name) {
                if name != "cmd" {
                    return Err(BadInput(format!("--load: phase '{name}' is listed twice; list each phase once")));
                }
                let n = phases.iter().filter(|p| p.name.starts_with("cmd")).count() + 1;
                name = format!("cmd{n}");
            }
            phases.push(PhaseSpec { name, loads, outside: false });
        }
    }
    if let Some(name) = &la.phase_name {
        if phases.iter().any(|p| !p.loads.is_empty()) {
            return Err(BadInput(format!(
                "--phase-name {name}: rtscope makes the load of this run (--load), and names its phases after it; use --phase-name only for a run whose load you started outside rtscope"
            )));
        }
        check_phase_name(name)?;
        phases = vec![PhaseSpec { name: name.clone(), loads: vec![], outside: name != "idle" }];
    }
    if phases.is_empty() {
        phases.push(PhaseSpec { name: "idle".into(), loads: vec![], outside: false });
    }
    Ok(phases)
}

/// A phase name people can type and tables can show: 1-64 characters of
/// letters, digits and `-_.:,+=`.
fn check_phase_name(name: &str) -> Result<(), BadInput> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.:,+=".contains(c);
    if name.is_empty() || name.len() > 64 || !name.chars().all(ok) {
        return Err(BadInput(format!("--phase-name '{name}': use 1-64 letters, digits or -_.:,+= (e.g. guest:cpu:2)")));
    }
    Ok(())
}

/// A SCHED_DEADLINE key the scenario gives (flag, file key, where in the
/// file), to name the file's line in errors.
type FileKey = (&'static str, &'static str, std::ops::Range<usize>);

fn from_scenario(args: &RunArgs, started: &str, s: &Scenario) -> Result<(RunPlan, Output, Experiment), BadInput> {
    refuse_shape_flags(args, s)?;
    let mut a = with_scenario_values(args, s)?;
    let dl_keys = file_dl_keys(&args.given, &s.file);
    let deadline = a.policy == super::PolicyArg::Deadline;
    if let Some((_, key, span)) = dl_keys.first().filter(|_| !deadline) {
        return Err(s.err_at(
            span.clone(),
            format!("{key}: a SCHED_DEADLINE reservation, only with policy = \"deadline\" (or --policy deadline); set the policy or drop {key}"),
        ));
    }
    let (kept, notes) = probes_under_policy(s, deadline)?;
    a.probes = crate::units::first_seen(kept.iter().map(|p| p.name.get_ref().trim().to_string()));
    let (mut plan, output) = plan_of_scenario(&a, s, started)?;
    let entries = entries_of(s, &kept, &plan, args.given.duration)?;
    let mut exp = finish(&a, &mut plan, s.phases.clone(), entries, Some(s)).map_err(|e| at_file_key(s, &dl_keys, e))?;
    exp.notes = notes;
    Ok((plan, output, exp))
}

/// A scenario fixes the experiment's shape: its phases, probes and loads
/// are its own.
fn refuse_shape_flags(args: &RunArgs, s: &Scenario) -> Result<(), BadInput> {
    if let Some(name) = &args.load.phase_name {
        return Err(BadInput(format!("--phase-name {name} cannot be combined with {}: it names its own phases", s.label)));
    }
    for (given, flag, what) in [(args.given.probes, "--probe", "probes"), (args.given.loads, "--load", "phases")] {
        if given {
            return Err(BadInput(format!(
                "{flag} cannot be combined with {}: it lists its own {what}; edit a copy of the scenario instead (the text of a preset is in docs/presets.md)",
                s.label
            )));
        }
    }
    Ok(())
}

/// The arguments with the scenario's values for the settings whose flags
/// were not given (flag > scenario > default, [`layer`]).
fn with_scenario_values(args: &RunArgs, s: &Scenario) -> Result<RunArgs, BadInput> {
    let (f, g) = (&s.file, &args.given);
    let affinity = match &f.affinity {
        Some(aff) if !g.affinity => Some(Some(units::parse_cpuset(aff.get_ref()).map_err(|e| s.err_at(aff.span(), format!("affinity: {e}")))?)),
        _ => None,
    };
    // The file's policy was checked against these names when it was parsed.
    let policy = f.policy.as_ref().map(|p| <super::PolicyArg as clap::ValueEnum>::from_str(p.get_ref(), false).unwrap_or(super::PolicyArg::Fifo));
    let mut a = args.clone();
    layer(&mut a.duration, g.duration, f.duration.map(|d| d.0));
    layer(&mut a.interval, g.interval, f.interval.map(|d| d.0));
    layer(&mut a.priority, g.priority, f.priority.as_ref().map(|p| *p.get_ref()));
    layer(&mut a.policy, g.policy, policy);
    layer(&mut a.threads, g.threads, f.threads.as_ref().map(|t| Some(*t.get_ref())));
    layer(&mut a.affinity, g.affinity, affinity);
    layer(&mut a.json, g.json || g.out, f.output.clone().map(Some));
    layer(&mut a.probe_opts.dl_runtime, g.dl_runtime, f.dl_runtime.as_ref().map(|d| Some(d.get_ref().0)));
    layer(&mut a.probe_opts.dl_deadline, g.dl_deadline, f.dl_deadline.as_ref().map(|d| Some(d.get_ref().0)));
    Ok(a)
}

/// The reservation keys the file gives whose flags were not given.
fn file_dl_keys(g: &Given, f: &ScenarioFile) -> Vec<FileKey> {
    [("--dl-runtime", "dl_runtime", g.dl_runtime, &f.dl_runtime), ("--dl-deadline", "dl_deadline", g.dl_deadline, &f.dl_deadline)]
        .into_iter()
        .filter(|(_, _, given, _)| !given)
        .filter_map(|(flag, key, _, v)| v.as_ref().map(|v| (flag, key, v.span())))
        .collect()
}

/// A reservation the kernel's rules refuse names the file's key, when the
/// file gave it.
fn at_file_key(s: &Scenario, dl_keys: &[FileKey], e: BadInput) -> BadInput {
    match dl_keys.iter().find_map(|(flag, key, span)| e.0.strip_prefix(flag).map(|rest| (key, span, rest))) {
        Some((key, span, rest)) => s.err_at(span.clone(), format!("{key}{rest}")),
        None => e,
    }
}

/// A `[[probe]]`'s name without its variant.
fn base_name(p: &ProbeFileEntry) -> &str {
    crate::measure::split_spec(p.name.get_ref()).0
}

/// The scenario's probes that run under the plan's policy, and notes on
/// the ones left out: under SCHED_DEADLINE a scenario runs the probes that
/// run there and says which it leaves out (a preset such as `standard`
/// lists them all); none left is an error.
fn probes_under_policy(s: &Scenario, deadline: bool) -> Result<(Vec<&ProbeFileEntry>, Vec<String>), BadInput> {
    let (kept, left): (Vec<&ProbeFileEntry>, Vec<&ProbeFileEntry>) =
        s.file.probes.iter().partition(|p| !deadline || crate::measure::runs_under_deadline(base_name(p)));
    if left.is_empty() {
        return Ok((kept, Vec::new()));
    }
    let names: Vec<&str> = crate::units::first_seen(left.iter().map(|p| base_name(p)));
    let runs = crate::plan::probes::deadline_probes().join(", ");
    if kept.is_empty() {
        return Err(BadInput(format!(
            "{}: --policy deadline: none of its probes ({}) runs under SCHED_DEADLINE (only {runs} do); run it with --policy fifo, or add a [[probe]] {runs}",
            s.label,
            names.join(", ")
        )));
    }
    let note = format!(
        "{}: --policy deadline runs {} only; left out: {} (they do not run under SCHED_DEADLINE; run them with --policy fifo)",
        s.label,
        runs,
        names.join(", ")
    );
    Ok((kept, vec![note]))
}

/// The plan of the merged arguments; errors name the scenario (and its
/// `output` key for a result path the file gave).
fn plan_of_scenario(a: &RunArgs, s: &Scenario, started: &str) -> Result<(RunPlan, Output), BadInput> {
    let from_file = !a.given.json && !a.given.out && s.file.output.is_some();
    plan::build(a, started, Site::Here).map_err(|e| {
        let msg = match e.0.strip_prefix("--json:") {
            Some(rest) if from_file => format!("output:{rest}"),
            _ => e.0,
        };
        BadInput(format!("{}: {msg}", s.label))
    })
}

/// The scenario's probe runs. `sem:mutex` and `sem:posix` are one run of
/// `sem` with both variants selected (the plan holds the selection); a
/// probe that runs several periods itself takes `periods` as its own, any
/// other makes one run per period.
fn entries_of(s: &Scenario, kept: &[&ProbeFileEntry], plan: &RunPlan, duration_given: bool) -> Result<Vec<ProbeEntry>, BadInput> {
    let mut entries: Vec<ProbeEntry> = Vec::new();
    for p in kept {
        let base = base_name(p);
        let own_periods = crate::measure::is(base, crate::measure::ProbeInfo::multi_period);
        let periods: Vec<u64> = p.periods.as_ref().map(|v| v.iter().map(|d| d.0).collect()).unwrap_or_default();
        let intervals: Vec<u64> =
            if periods.is_empty() || own_periods { vec![p.interval.map(|d| d.0).unwrap_or(plan.measuring.interval_ns)] } else { periods.clone() };
        let duration_ns = if duration_given { plan.measuring.duration_ns } else { p.duration.map(|d| d.0).unwrap_or(plan.measuring.duration_ns) };
        let warmup_ns = p.warmup.or(s.file.warmup).map(|d| d.0).unwrap_or(0);
        for interval_ns in intervals {
            let longest = periods.iter().copied().max().unwrap_or(0).max(interval_ns);
            if longest > duration_ns {
                return Err(s.err_at(
                    p.name.span(),
                    format!(
                        "[[probe]] {}: period {} is longer than the duration {}; no period would complete",
                        p.name.get_ref(),
                        units::fmt_ns(longest),
                        units::fmt_ns(duration_ns)
                    ),
                ));
            }
            let periods_ns = if own_periods { periods.clone() } else { Vec::new() };
            let e = ProbeEntry { probe: base.to_string(), interval_ns, periods_ns, duration_ns, warmup_ns };
            if !entries.contains(&e) {
                entries.push(e);
            }
        }
    }
    Ok(entries)
}

/// Load options, settle, caps and checks common to both paths.
fn finish(args: &RunArgs, plan: &mut RunPlan, phases: Vec<PhaseSpec>, entries: Vec<ProbeEntry>, s: Option<&Scenario>) -> Result<Experiment, BadInput> {
    let online = crate::sys::sched::online_cpus();
    let load = load_options(&args.load, &phases, s, &online)?;
    let la = &args.load;
    let exp = Experiment {
        phases,
        entries,
        settle_ns: la.settle.or(s.and_then(|s| s.file.settle).map(|d| d.0)).unwrap_or(DEFAULT_SETTLE_NS),
        load,
        max_total_ns: la.max_total.or(s.and_then(|s| s.file.max_total).map(|d| d.0)).unwrap_or(DEFAULT_MAX_TOTAL_NS),
        table: s.and_then(|s| s.file.table).unwrap_or(Table::Summary),
        bin_ns: s.and_then(|s| s.file.bin).map(|d| d.0).unwrap_or(5_000),
        scenario: s.map(|s| s.record()),
        notes: Vec::new(),
    };
    let total = exp.total_ns();
    if total > exp.max_total_ns {
        return Err(BadInput(format!(
            "{}the plan takes {} in total, more than --max-total {}; shorten it (fewer phases or probes, a shorter -D) or raise --max-total",
            s.map(|s| format!("{}: ", s.label)).unwrap_or_default(),
            units::fmt_ns(total),
            units::fmt_ns(exp.max_total_ns)
        )));
    }
    check_starvation(plan, &exp, &online, la.force)?;
    crate::plan::probes::check_suites(plan, &exp.entries)?;
    crate::plan::probes::check_deadline(plan, &exp.entries)?;
    plan.phases = exp.phases.iter().map(|p| p.name.clone()).collect();
    Ok(exp)
}

/// Who makes the loads, on which CPUs, how many workers, where their files
/// go: each from its flag, else the scenario's `[load]`, else the default.
fn load_options(la: &LoadArgs, phases: &[PhaseSpec], s: Option<&Scenario>, online: &[usize]) -> Result<LoadOptions, BadInput> {
    let section = s.and_then(|s| s.file.load.as_ref());
    let asked = la.load_engine.map(Engine::from).or(section.and_then(|l| l.engine)).unwrap_or(Engine::Auto);
    let any_generated = phases.iter().any(|p| p.loads.iter().any(|k| k.load().is_some()));
    let (engine, stress_ng) = if any_generated {
        load::resolve_engine(asked).map_err(BadInput)?
    } else {
        (if asked == Engine::StressNg { Engine::StressNg } else { Engine::Builtin }, None)
    };
    let cpus = match (&la.load_cpus, section.and_then(|l| l.cpus.as_ref()).zip(s)) {
        (Some(c), _) => c.0.clone(),
        (None, Some((c, s))) => units::parse_cpuset(c.get_ref()).map(|c| c.0).map_err(|e| s.err_at(c.span(), format!("[load] cpus: {e}")))?,
        (None, None) => online.to_vec(),
    };
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(BadInput(format!("--load-cpus: CPU {bad} is not online; online CPUs are {}", units::cpu_list_str(online))));
    }
    let intensity = match la.load_intensity {
        Some(x) if !(x.is_finite() && x > 0.0 && x <= 16.0) => {
            return Err(BadInput(format!("--load-intensity: {x} is out of range; allowed: more than 0, at most 16 (1 = one worker per load CPU)")))
        }
        Some(x) => x,
        None => section.and_then(|l| l.intensity.as_ref()).map(|i| *i.get_ref()).unwrap_or(1.0),
    };
    let dir = load_dir(la, phases, s)?;
    Ok(LoadOptions { engine, stress_ng, cpus, intensity, dir })
}

/// Where the loads write: `--load-dir`, else the scenario's `[load] dir`,
/// else [`default_load_dir`]; checked writable when a phase has loads.
/// Errors name where the directory came from.
fn load_dir(la: &LoadArgs, phases: &[PhaseSpec], s: Option<&Scenario>) -> Result<PathBuf, BadInput> {
    let from_file = s.and_then(|s| s.file.load.as_ref()).and_then(|l| l.dir.as_ref());
    let (dir, origin) = match (&la.load_dir, from_file) {
        (Some(d), _) => (d.clone(), None),
        (None, Some(d)) => (d.get_ref().clone(), Some(d.span())),
        (None, None) => (default_load_dir(), None),
    };
    let dir_err = |msg: String| match (&origin, s) {
        (Some(span), Some(sc)) => sc.err_at(span.clone(), format!("[load] dir: {msg}")),
        _ => BadInput(format!("--load-dir: {msg}")),
    };
    if phases.iter().any(|p| !p.loads.is_empty()) {
        if !dir.is_dir() {
            return Err(dir_err(format!("'{}' is not a directory; give a directory on the filesystem under test", dir.display())));
        }
        // The loads' temp files go there: checked before anything runs.
        super::plan::check_writable(&dir, "--load-dir").map_err(|e| dir_err(e.0.trim_start_matches("--load-dir: ").to_string()))?;
    }
    Ok(dir)
}

/// A real-time busy probe on every online CPU at once leaves nothing for the
/// kernel's own work but RT throttling's 5 %; refuse it without --force.
/// Loads always run SCHED_OTHER, so they never count here.
fn check_starvation(plan: &RunPlan, exp: &Experiment, online: &[usize], force: bool) -> Result<(), BadInput> {
    use crate::sys::sched::Policy;
    // Busy at real-time priority (each probe says when, `measure::Busy`):
    // maxrate (a timer so fast its CPU is nearly never idle) under FIFO/RR,
    // and noise with --noise-policy fifo. Both use one CPU unless -a/-t
    // spread them over the plan's CPUs.
    let busy = |p: &str| match crate::measure::info(p).map(|i| i.busy) {
        Some(crate::measure::Busy::UnderRunPolicy) => plan.measuring.policy != Policy::Other,
        Some(crate::measure::Busy::UnderNoisePolicy) => Policy::from(plan.measuring.probe.noise_policy) != Policy::Other,
        _ => false,
    };
    if force || !plan.measuring.probe.cpus_explicit {
        return Ok(());
    }
    let Some(probe) = exp.entries.iter().map(|e| e.probe.as_str()).find(|p| busy(p)) else { return Ok(()) };
    let measured = plan.measured_cpus();
    if online.iter().all(|c| measured.contains(c)) {
        let throttling = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
        let note = if throttling.trim() == "-1" { " RT throttling is OFF on this machine (sched_rt_runtime_us = -1), so it can hang." } else { "" };
        return Err(BadInput(format!(
            "probe {probe} runs busy at real-time priority on every online CPU ({}): nothing else could run but RT throttling's share, which may starve the machine.{note} Leave a CPU free with -a/--affinity, or pass --force",
            units::cpu_list_str(online)
        )));
    }
    Ok(())
}

/// Where loads write when neither `--load-dir` nor the scenario says:
/// `$TMPDIR` when set, else `/var/tmp` (kept on disk, unlike a tmpfs `/tmp`),
/// else the current directory. Never the current directory by default: a
/// run started in a source tree must not write there.
pub(crate) fn default_load_dir() -> PathBuf {
    if let Some(t) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()).map(PathBuf::from) {
        if t.is_absolute() && t.is_dir() {
            return t;
        }
    }
    let var_tmp = PathBuf::from("/var/tmp");
    if var_tmp.is_dir() {
        return var_tmp;
    }
    PathBuf::from(".")
}
