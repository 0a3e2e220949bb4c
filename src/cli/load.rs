//! `rtscope run` flags for load phases, scenarios and presets, and the step
//! that turns them (plus a scenario file or preset, if any) into the
//! validated [`RunPlan`] and [`Experiment`].
//!
//! Where a value comes from, first match wins: a flag given on the command
//! line; the scenario file or preset; rtscope's default. A scenario fixes the
//! experiment's shape, so `--probe` and `--load` cannot be combined with one
//! (the error says so); flags such as `-D` or `--settle` override its values.
//! A bare `rtscope run` (no flag that shapes the experiment) runs the
//! `quick` preset. Everything is checked here, before anything starts: a bad
//! value is [`BadInput`] (exit 2, nothing written).

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory};

use super::plan;
use crate::plan::{Output, RunPlan};
use super::RunArgs;
use crate::units;
use crate::error::BadInput;
use crate::load::{self, parse_load, Engine, LoadOptions, PhaseSpec};
use crate::plan::{Experiment, ProbeEntry, Table};
use crate::scenario::{self, presets, Scenario};

/// `--load-engine`: clap's view of [`load::Engine`] (the load layer knows no clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
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

/// Arguments of the hidden `rtscope __load` subcommand (set by rtscope only).
#[derive(Debug, Clone, Args)]
pub struct LoadWorkerArgs {
    /// Process id of the rtscope that started this load.
    #[arg(long)]
    pub parent: i32,
    /// A built-in load (cpu, memory, io, net, irq, sched) or `exec`.
    #[arg(long)]
    pub kind: String,
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    #[arg(long, value_parser = crate::units::parse_cpuset)]
    pub cpus: Option<crate::units::CpuSet>,
    /// The load's temp dir (the working directory of an external command).
    #[arg(long)]
    pub dir: PathBuf,
    /// The command to run for `--kind exec`.
    #[arg(last = true)]
    pub argv: Vec<String>,
}

impl LoadWorkerArgs {
    /// What the load process runs, as the load layer takes it.
    pub fn to_worker(&self) -> load::worker::LoadWorkerArgs {
        load::worker::LoadWorkerArgs {
            parent: self.parent,
            kind: self.kind.clone(),
            workers: self.workers,
            cpus: self.cpus.clone(),
            dir: self.dir.clone(),
            argv: self.argv.clone(),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Scenario file (TOML) describing phases, probes, periods and durations (see docs/scenarios.md).
    #[arg(value_name = "SCENARIO.toml")]
    pub scenario: Option<PathBuf>,

    /// Run a built-in preset (see `rtscope presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "scenario")]
    pub preset: Option<String>,

    /// Print the plan and its total duration, then exit without running.
    #[arg(long)]
    pub dry_run: bool,

    /// Load phases, in order: idle, cpu, memory, io, net, irq, sched, mixed, cmd:"<command line>" [default: idle].
    #[arg(long = "load", value_name = "NAME[,NAME...]")]
    pub loads: Vec<String>,

    /// Name of the one phase when its load comes from outside rtscope (a load you started, a lab
    /// guest's load), e.g. guest:cpu:2 [default: idle]; not with --load or a scenario.
    #[arg(long, value_name = "NAME")]
    pub phase_name: Option<String>,

    /// Who makes the load: stress-ng when on PATH (auto), stress-ng, or rtscope's built-in generators.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub load_engine: Option<EngineArg>,

    /// CPUs the loads run on, e.g. 0-1 [default: every online CPU].
    #[arg(long, value_name = "CPUSET", value_parser = units::parse_cpuset)]
    pub load_cpus: Option<units::CpuSet>,

    /// Workers per load = intensity × number of load CPUs (at least 1) [default: 1].
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    pub load_intensity: Option<f64>,

    /// Directory on the filesystem under test; the io load rewrites at most 256 MiB of files
    /// below it [default: $TMPDIR, else /var/tmp].
    #[arg(long, value_name = "DIR")]
    pub load_dir: Option<PathBuf>,

    /// How long loads run before the probes start in each loaded phase [default: 2s].
    #[arg(long, value_name = "DURATION", value_parser = parse_wait, allow_hyphen_values = true)]
    pub settle: Option<u64>,

    /// Refuse plans longer than this in total [default: 24h].
    #[arg(long, value_name = "DURATION", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub max_total: Option<u64>,

    /// Allow a plan that keeps every CPU busy at real-time priority (may starve the machine).
    #[arg(long)]
    pub force: bool,
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

/// Ids of `rtscope run` arguments given on the command line (not defaults).
pub fn explicit_run_args() -> BTreeSet<String> {
    let matches = match super::Cli::command().try_get_matches_from(std::env::args_os()) {
        Ok(m) => m,
        Err(_) => return BTreeSet::new(),
    };
    let m = match matches.subcommand() {
        Some(("run" | "monitor", m)) => m,
        _ => return BTreeSet::new(),
    };
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect()
}

/// Flags that shape the experiment: without any of them, `rtscope run` is bare.
const SHAPING: &[&str] = &["duration", "interval", "priority", "policy", "threads", "affinity", "probes", "loads", "worst"];

/// Build the plan and experiment from the arguments. `explicit` holds the
/// ids of flags given on the command line (see [`explicit_run_args`]).
pub fn build(args: &RunArgs, explicit: &BTreeSet<String>, started: &str) -> Result<(RunPlan, Output, Experiment), BadInput> {
    let la = &args.load;
    let bare = !SHAPING.iter().any(|f| explicit.contains(*f));
    let scenario: Option<Scenario> = match (&la.scenario, &la.preset) {
        (Some(p), _) => Some(scenario::from_file(p)?),
        (None, Some(name)) => Some(presets::get(name)?),
        (None, None) if bare => Some(presets::get(presets::DEFAULT)?),
        (None, None) => None,
    };
    let built = match scenario {
        Some(s) => from_scenario(args, explicit, started, &s)?,
        None => from_flags(args, started)?,
    };
    let (plan, _, exp) = &built;
    let shape = super::applies::RunShape {
        probes: exp.entries.iter().map(|e| e.probe.as_str()).collect(),
        policy: plan.policy,
        noise_policy: plan.probe.noise_policy,
        target: false,
    };
    super::applies::check_flags(explicit, &shape)?;
    Ok(built)
}

fn from_flags(args: &RunArgs, started: &str) -> Result<(RunPlan, Output, Experiment), BadInput> {
    let (mut plan, output) = plan::build(args, started)?;
    let mut phases: Vec<PhaseSpec> = Vec::new();
    for raw in &args.load.loads {
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
            phases.push(PhaseSpec { name, loads });
        }
    }
    if let Some(name) = &args.load.phase_name {
        if phases.iter().any(|p| !p.loads.is_empty()) {
            return Err(BadInput(format!(
                "--phase-name {name}: rtscope makes the load of this run (--load), and names its phases after it; use --phase-name only for a run whose load you started outside rtscope"
            )));
        }
        check_phase_name(name)?;
        phases = vec![PhaseSpec { name: name.clone(), loads: vec![] }];
    }
    if phases.is_empty() {
        phases.push(PhaseSpec { name: "idle".into(), loads: vec![] });
    }
    let entries =
        plan.probes.iter().map(|p| ProbeEntry { probe: p.clone(), interval_ns: plan.interval_ns, periods_ns: Vec::new(), duration_ns: plan.duration_ns, warmup_ns: 0 }).collect();
    let exp = finish(args, &mut plan, phases, entries, None)?;
    Ok((plan, output, exp))
}

/// A phase name people can type and tables can show: 1-64 characters of
/// letters, digits and `-_.:,+=`.
fn check_phase_name(name: &str) -> Result<(), BadInput> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.:,+=".contains(c);
    if name.is_empty() || name.len() > 64 || !name.chars().all(ok) {
        return Err(BadInput(format!(
            "--phase-name '{name}': use 1-64 letters, digits or -_.:,+= (e.g. guest:cpu:2)"
        )));
    }
    Ok(())
}

fn from_scenario(args: &RunArgs, explicit: &BTreeSet<String>, started: &str, s: &Scenario) -> Result<(RunPlan, Output, Experiment), BadInput> {
    if let Some(name) = &args.load.phase_name {
        return Err(BadInput(format!(
            "--phase-name {name} cannot be combined with {}: it names its own phases",
            s.label
        )));
    }
    for flag in ["probes", "loads"] {
        if explicit.contains(flag) {
            let f = if flag == "probes" { "--probe" } else { "--load" };
            return Err(BadInput(format!(
                "{f} cannot be combined with {}: it lists its own {}; edit a copy of the scenario instead (the text of a preset is in docs/presets.md)",
                s.label,
                if flag == "probes" { "probes" } else { "phases" }
            )));
        }
    }
    let f = &s.file;
    let mut a = args.clone();
    let unset = |id: &str| !explicit.contains(id);
    if unset("duration") {
        if let Some(d) = f.duration {
            a.duration = d.0;
        }
    }
    if unset("interval") {
        if let Some(d) = f.interval {
            a.interval = d.0;
        }
    }
    if unset("priority") {
        if let Some(p) = &f.priority {
            a.priority = *p.get_ref();
        }
    }
    if unset("policy") {
        if let Some(p) = &f.policy {
            a.policy = match p.get_ref().as_str() {
                "rr" => super::PolicyArg::Rr,
                "other" => super::PolicyArg::Other,
                "deadline" => super::PolicyArg::Deadline,
                _ => super::PolicyArg::Fifo,
            };
        }
    }
    if unset("threads") {
        if let Some(t) = &f.threads {
            a.threads = Some(*t.get_ref());
        }
    }
    if unset("affinity") {
        if let Some(aff) = &f.affinity {
            a.affinity = Some(units::parse_cpuset(aff.get_ref()).map_err(|e| s.err_at(aff.span(), format!("affinity: {e}")))?);
        }
    }
    if unset("json") && unset("out") {
        if let Some(o) = &f.output {
            a.json = Some(o.clone());
        }
    }
    if unset("dl_runtime") {
        if let Some(d) = &f.dl_runtime {
            a.probe_opts.dl_runtime = Some(d.get_ref().0);
        }
    }
    if unset("dl_deadline") {
        if let Some(d) = &f.dl_deadline {
            a.probe_opts.dl_deadline = Some(d.get_ref().0);
        }
    }
    // The reservation's keys from the file, to name them in errors.
    let dl_keys: Vec<(&str, &str, std::ops::Range<usize>)> = [("--dl-runtime", "dl_runtime", &f.dl_runtime), ("--dl-deadline", "dl_deadline", &f.dl_deadline)]
        .into_iter()
        .filter(|(_, key, _)| unset(key))
        .filter_map(|(flag, key, v)| v.as_ref().map(|v| (flag, key, v.span())))
        .collect();
    let deadline = a.policy == super::PolicyArg::Deadline;
    if let Some((_, key, span)) = dl_keys.first().filter(|_| !deadline) {
        return Err(s.err_at(span.clone(), format!("{key}: a SCHED_DEADLINE reservation, only with policy = \"deadline\" (or --policy deadline); set the policy or drop {key}")));
    }
    // Under SCHED_DEADLINE a scenario runs the probes that run there and
    // says which it leaves out (a preset such as `standard` lists them all).
    let (kept, left): (Vec<&scenario::ProbeFileEntry>, Vec<&scenario::ProbeFileEntry>) =
        f.probes.iter().partition(|p| !deadline || crate::measure::runs_under_deadline(crate::measure::split_spec(p.name.get_ref()).0));
    let mut notes = Vec::new();
    if !left.is_empty() {
        let names: Vec<&str> = crate::units::first_seen(left.iter().map(|p| crate::measure::split_spec(p.name.get_ref()).0));
        let runs = crate::plan::probes::deadline_probes().join(", ");
        if kept.is_empty() {
            return Err(BadInput(format!(
                "{}: --policy deadline: none of its probes ({}) runs under SCHED_DEADLINE (only {runs} do); run it with --policy fifo, or add a [[probe]] {runs}",
                s.label,
                names.join(", ")
            )));
        }
        notes.push(format!(
            "{}: --policy deadline runs {} only; left out: {} (they do not run under SCHED_DEADLINE; run them with --policy fifo)",
            s.label,
            runs,
            names.join(", ")
        ));
    }
    a.probes = crate::units::first_seen(kept.iter().map(|p| p.name.get_ref().trim().to_string()));
    let from_file = unset("json") && unset("out") && f.output.is_some();
    let (mut plan, output) = plan::build(&a, started).map_err(|e| {
        let msg = match e.0.strip_prefix("--json:") {
            Some(rest) if from_file => format!("output:{rest}"),
            _ => e.0,
        };
        BadInput(format!("{}: {msg}", s.label))
    })?;
    let mut entries: Vec<ProbeEntry> = Vec::new();
    for p in kept {
        // `sem:mutex` and `sem:posix` are one run of `sem` with both
        // variants selected (the plan holds the selection).
        let (base, _) = crate::measure::split_spec(p.name.get_ref());
        let own_periods = crate::measure::is(base, crate::measure::ProbeInfo::multi_period);
        let periods: Vec<u64> = p.periods.as_ref().map(|v| v.iter().map(|d| d.0).collect()).unwrap_or_default();
        let intervals: Vec<u64> = if periods.is_empty() || own_periods {
            vec![p.interval.map(|d| d.0).unwrap_or(plan.interval_ns)]
        } else {
            periods.clone()
        };
        let duration_ns = if unset("duration") { p.duration.map(|d| d.0).unwrap_or(plan.duration_ns) } else { plan.duration_ns };
        let warmup_ns = p.warmup.or(f.warmup).map(|d| d.0).unwrap_or(0);
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
            let e = ProbeEntry {
                probe: base.to_string(),
                interval_ns,
                periods_ns: if own_periods { periods.clone() } else { Vec::new() },
                duration_ns,
                warmup_ns,
            };
            if !entries.contains(&e) {
                entries.push(e);
            }
        }
    }
    let mut exp = finish(&a, &mut plan, s.phases.clone(), entries, Some(s)).map_err(|e| {
        // A reservation the kernel's rules refuse names the file's key.
        match dl_keys.iter().find_map(|(flag, key, span)| e.0.strip_prefix(flag).map(|rest| (key, span, rest))) {
            Some((key, span, rest)) => s.err_at(span.clone(), format!("{key}{rest}")),
            None => e,
        }
    })?;
    exp.notes = notes;
    Ok((plan, output, exp))
}

/// Load options, settle, caps and checks common to both paths.
fn finish(
    args: &RunArgs,
    plan: &mut RunPlan,
    phases: Vec<PhaseSpec>,
    entries: Vec<ProbeEntry>,
    s: Option<&Scenario>,
) -> Result<Experiment, BadInput> {
    let la = &args.load;
    let section = s.and_then(|s| s.file.load.as_ref());
    let online = crate::sys::sched::online_cpus();
    let label = s.map(|s| s.label.clone()).unwrap_or_default();

    let asked = la.load_engine.map(Engine::from).or(section.and_then(|l| l.engine)).unwrap_or(Engine::Auto);
    let any_generated = phases.iter().any(|p| p.loads.iter().any(|k| k.load().is_some()));
    let (engine, stress_ng) = if any_generated {
        load::resolve_engine(asked).map_err(BadInput)?
    } else {
        (if asked == Engine::StressNg { Engine::StressNg } else { Engine::Builtin }, None)
    };
    let cpus = match (&la.load_cpus, section.and_then(|l| l.cpus.as_ref())) {
        (Some(c), _) => c.0.clone(),
        (None, Some(c)) => units::parse_cpuset(c.get_ref()).map(|c| c.0).map_err(|e| s.unwrap().err_at(c.span(), format!("[load] cpus: {e}")))?,
        (None, None) => online.clone(),
    };
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(BadInput(format!(
            "--load-cpus: CPU {bad} is not online; online CPUs are {}",
            units::cpu_list_str(&online)
        )));
    }
    let intensity = match la.load_intensity {
        Some(x) if !(x.is_finite() && x > 0.0 && x <= 16.0) => {
            return Err(BadInput(format!("--load-intensity: {x} is out of range; allowed: more than 0, at most 16 (1 = one worker per load CPU)")))
        }
        Some(x) => x,
        None => section.and_then(|l| l.intensity.as_ref()).map(|i| *i.get_ref()).unwrap_or(1.0),
    };
    // Errors name where the directory came from: the flag, or the
    // scenario's `[load] dir` line.
    let (dir, origin) = match (&la.load_dir, section.and_then(|l| l.dir.as_ref())) {
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
    let settle_ns = la.settle.or(s.and_then(|s| s.file.settle).map(|d| d.0)).unwrap_or(DEFAULT_SETTLE_NS);
    let max_total_ns = la.max_total.or(s.and_then(|s| s.file.max_total).map(|d| d.0)).unwrap_or(DEFAULT_MAX_TOTAL_NS);

    let exp = Experiment {
        phases,
        entries,
        settle_ns,
        load: LoadOptions { engine, stress_ng, cpus, intensity, dir },
        max_total_ns,
        table: s.and_then(|s| s.file.table).unwrap_or(Table::Summary),
        bin_ns: s.and_then(|s| s.file.bin).map(|d| d.0).unwrap_or(5_000),
        scenario: s.map(|s| s.record()),
        notes: Vec::new(),
    };
    let total = exp.total_ns();
    if total > exp.max_total_ns {
        return Err(BadInput(format!(
            "{}the plan takes {} in total, more than --max-total {}; shorten it (fewer phases or probes, a shorter -D) or raise --max-total",
            if label.is_empty() { String::new() } else { format!("{label}: ") },
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
        Some(crate::measure::Busy::UnderRunPolicy) => plan.policy != Policy::Other,
        Some(crate::measure::Busy::UnderNoisePolicy) => plan.probe.noise_policy != Policy::Other,
        _ => false,
    };
    if force || !plan.probe.cpus_explicit {
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

/// The plan as text, for `--dry-run` and the start of a run.
/// Where loads write when neither `--load-dir` nor the scenario says:
/// `$TMPDIR` when set, else `/var/tmp` (kept on disk, unlike a tmpfs `/tmp`),
/// else the current directory. Never the current directory by default: a
/// run started in a source tree must not write there.
pub fn default_load_dir() -> PathBuf {
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

/// The plan in words. `dry_run`: the result line says it will not be written.
pub fn describe(plan: &RunPlan, exp: &Experiment, output: &Output, dry_run: bool) -> String {
    let mut s = String::new();
    if let Some(sc) = &exp.scenario {
        s.push_str(&format!("scenario: {} ({})\n", sc.name, sc.source));
    }
    for n in &exp.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    // Said now, not discovered in the result: a policy this user may not
    // have falls back to SCHED_OTHER at set-up.
    let fallback = match plan.policy {
        crate::sys::sched::Policy::Other | crate::sys::sched::Policy::Deadline => String::new(),
        p => match crate::sys::sched::policy_permitted(p, plan.priority) {
            Ok(()) => String::new(),
            Err(e) => format!(
                " — not permitted here ({e}: needs root, CAP_SYS_NICE or RLIMIT_RTPRIO ≥ {}): the threads will run SCHED_OTHER",
                plan.priority
            ),
        },
    };
    if plan.policy == crate::sys::sched::Policy::Deadline {
        let dl = plan.probe.dl_params(plan.interval_ns);
        s.push_str(&format!(
            "measuring: {} thread(s), SCHED_DEADLINE runtime {} deadline {} per period (-i, or each --periods), not pinned (a deadline task spans its root domain)\n",
            plan.threads,
            plan.probe.dl_runtime_ns.map(units::fmt_ns).unwrap_or_else(|| format!("{} (60% of the deadline)", units::fmt_ns(dl.runtime_ns))),
            plan.probe.dl_deadline_ns.map(units::fmt_ns).unwrap_or_else(|| "= period".into()),
        ));
    } else {
        s.push_str(&format!(
            "measuring: {} thread(s) on CPUs {}, SCHED_{} priority {}{fallback}\n",
            plan.threads,
            // The CPUs the threads are pinned to (`-t 1` on 0-1 is CPU 0), not the whole set.
            units::cpu_list_str(&plan.measured_cpus()),
            plan.policy.name().to_uppercase(),
            plan.priority
        ));
    }
    let generated = exp.phases.iter().any(|p| p.loads.iter().any(|k| k.load().is_some()));
    let commands: Vec<&str> = exp
        .phases
        .iter()
        .flat_map(|p| &p.loads)
        .filter_map(|k| if let load::LoadKind::Cmd(line) = k { Some(line.as_str()) } else { None })
        .collect();
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
    for (i, p) in exp.phases.iter().enumerate() {
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
        s.push_str(&format!("phase {} {}: {} — {}\n", i + 1, p.name, loads, units::fmt_ns(exp.phase_ns(p))));
        for e in &exp.entries {
            let warm = if e.warmup_ns > 0 { format!(" after {} warm-up", units::fmt_ns(e.warmup_ns)) } else { String::new() };
            let counts = crate::measure::is(&e.probe, |i| i.counts_operations);
            let every = if counts {
                format!("{} interval (--tm-interval)", units::fmt_ns(plan.probe.tm_interval_ns))
            } else if e.periods_ns.is_empty() {
                units::fmt_ns(e.interval_ns)
            } else {
                e.periods_ns.iter().map(|p| units::fmt_ns(*p)).collect::<Vec<_>>().join(", ")
            };
            let sel = plan.probe.variants.get(&e.probe).map(|v| format!(" ({})", v.join(", "))).unwrap_or_default();
            let every = if counts { format!("counting per {every}") } else { format!("every {every}") };
            s.push_str(&format!("  probe {}{sel} {every} for {}{warm}\n", e.probe, units::fmt_ns(e.duration_ns)));
        }
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
