//! One `rtscope run --target` session: open the link, read the agent's
//! announcement, send one plan per probe and phase, take the result blocks
//! in ([`super::replies`]), and build the [`Run`] (docs/agent.md,
//! "Session"). The lines are read by [`super::reader`]; the end of the run
//! (interrupted or not, set-up steps, warnings, the last write) is the
//! runner's.
//!
//! What ends a session, and what is kept:
//! - all plans done: the run, complete;
//! - Ctrl-C / SIGTERM (`stop` raised): `stop` is sent, the agent returns
//!   what the running variant measured and `done status=stopped`; the run is
//!   kept, marked interrupted (exit 130);
//! - the agent gone (end of stream, a read error, silence past the plan's
//!   time): every complete result block is kept, an incomplete one dropped,
//!   the run marked interrupted with a warning saying so (exit 130);
//! - a malformed line, an `error` from the agent, a block that disagrees with
//!   itself: exit 2 naming the line (its number in the session and its text),
//!   and nothing is written — a stream that broke once cannot vouch for the
//!   lines before it. Result files are therefore written once, at the end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;

use crate::error::BadInput;
use crate::measure::recorder::Live;
use crate::measure::{selects, split_spec, LiveBoard, ProbeRun};
use crate::model::{AgentRecord, Calibration, Host, Nanos, Outcome, Plan, Run, SetupStep};
use crate::plan::RunPlan;
use crate::runner::{finish, spawn_live, write_final, Invocation};
use crate::sys::sched::Policy;
use crate::units::rfc3339;

use super::block::Limits;
use super::console::foreign;
use super::proto::{self, Line};
use super::reader::{announcement, Hello, Reader};
use super::replies::{PlanBounds, PlanEnd, Replies};
use super::transcript::Transcript;
use super::transport::{Link, TargetSpec};
/// The native runner's warm-up (`runner::WARM_UP_MIN_NS`), asked of the agent too.
const WARM_UP_NS: u64 = crate::runner::WARM_UP_MIN_NS;

/// What of a run on a target is resolved against the agent's announcement,
/// as the command line asked it: the one plan ([`RunPlan`]) holds everything
/// else. The probes as given (`sem:mutex`: the variants are the agent's to
/// match), `-t` and `-a` (None: one thread per CPU the agent has), the
/// agent's built-in load of each of the plan's phases, and how long the
/// agent may be silent.
#[derive(Debug, Clone)]
pub(crate) struct OnTarget {
    /// `--probe` as given: `timer`, `sem:mutex`, ...
    pub(crate) probes: Vec<String>,
    pub(crate) threads: Option<usize>,
    pub(crate) affinity: Option<Vec<usize>>,
    /// The agent's built-in load of each phase of the plan, in its order: none, cpu, mem.
    pub(crate) loads: Vec<&'static str>,
    /// `--target-silence`: how long the agent may say nothing past a plan's time.
    pub(crate) silence_ns: u64,
    /// `--target-transcript`: where every byte of the session goes.
    pub(crate) transcript: Option<std::path::PathBuf>,
}

/// The agent's name of the built-in load that makes a phase of `loads`
/// (the load layer's kinds), or None: the agent has no such load.
pub(crate) fn agent_load(loads: &[crate::load::LoadKind]) -> Option<&'static str> {
    use crate::load::LoadKind;
    match loads {
        [] => Some("none"),
        [LoadKind::Cpu] => Some("cpu"),
        [LoadKind::Memory] => Some("mem"),
        _ => None,
    }
}

/// The target's fingerprint from `hello`.
fn host_of(h: &Line) -> Host {
    let preempt = h.get("preempt").unwrap_or("unknown");
    let model = match preempt {
        "PREEMPT_RT" => "rt",
        "PREEMPT" => "full",
        "voluntary" => "voluntary",
        "none" => "none",
        // PREEMPT_DYNAMIC: the model chosen at boot is not what uname says.
        _ => "unknown",
    };
    let cpus = h.get("cpus").and_then(|c| c.parse::<usize>().ok()).unwrap_or(0);
    let os = h.get("os").unwrap_or("");
    Host {
        hostname: foreign(h.get("host").unwrap_or("")),
        kernel_release: foreign(&system_name(os, h.get("release").unwrap_or(""))),
        kernel_version: foreign(h.get("version").unwrap_or("")),
        // An RTOS is real-time by kind (issue 64: history said RT = no for NuttX).
        realtime: preempt == "PREEMPT_RT" || (os != "Linux" && crate::model::is_rtos(os)),
        preempt_model: model.to_string(),
        preempt_model_source: format!("rtscope-agent hello: preempt={}", foreign(preempt)),
        cpu_model: foreign(linux_arch(h.get("arch").unwrap_or(""))),
        cpus_online: (0..cpus).collect(),
        smt: "unknown".into(),
        ..Host::default()
    }
}

/// The system's name and release as `host.kernel_release` keeps it: Linux's
/// release alone (`6.1.0-18-amd64`); another OS's name and release, a bare
/// version saying nothing ("NuttX 12.4.0", issue 48). A release of zeros is
/// what an RTOS built from a tree with no version announces (NuttX from
/// git: `0.0.0`): the system is "NuttX unversioned", not a release 0.0.0
/// (issue 64).
fn system_name(os: &str, release: &str) -> String {
    if os.is_empty() || os == "Linux" {
        return release.to_string();
    }
    let unversioned = !release.is_empty() && release.chars().all(|c| c == '0' || c == '.');
    format!("{os} {}", if unversioned { "unversioned" } else { release }).trim().to_string()
}

/// The architecture by Linux's name for it (`uname -m`), so a run on NuttX
/// and one on Linux on the same CPU read one name: NuttX (and the BSDs) say
/// `arm64` and `amd64` where Linux says `aarch64` and `x86_64` (issue 64).
/// Any other name is kept as announced; `agent.arch` keeps the announced one.
fn linux_arch(arch: &str) -> &str {
    match arch {
        "arm64" => "aarch64",
        "amd64" => "x86_64",
        a => a,
    }
}

/// Each probe to run with the agent's variants it selects (empty: the probe
/// has none, or all of them).
fn resolve_probes(on: &OnTarget, hello: &Hello, spec: &TargetSpec) -> Result<Vec<(String, Vec<String>)>, BadInput> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for s in &on.probes {
        let (name, sel) = split_spec(s);
        let Some((_, have)) = hello.probes.iter().find(|(n, _)| n == name) else {
            // The agent's names as foreign text: no escapes, no line of their own.
            let names: Vec<String> = hello.probes.iter().map(|(n, _)| foreign(n)).collect();
            return Err(BadInput(format!("--probe {name}: the agent at {spec} has no such probe; it has {}", names.join(", "))));
        };
        let picked: Vec<String> = match sel {
            None => Vec::new(),
            Some(sel) => {
                let p: Vec<String> = have.iter().filter(|v| selects(sel, v)).cloned().collect();
                if p.is_empty() {
                    let have: Vec<String> = have.iter().map(|v| foreign(v)).collect();
                    return Err(BadInput(format!("--probe {s}: the agent's {name} has no variant '{sel}'; it has {}", have.join(", "))));
                }
                p
            }
        };
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, vs)) if vs.is_empty() || picked.is_empty() => vs.clear(),
            Some((_, vs)) => vs.extend(picked.into_iter().filter(|v| !vs.contains(v)).collect::<Vec<_>>()),
            None => out.push((name.to_string(), picked)),
        }
    }
    Ok(out)
}

/// The variants protocol 1 defines per probe: the full set, what the
/// agent's Linux port announces (docs/agent.md, "probe"). A port leaves out
/// what its system lacks (FreeRTOS's mutexes always inherit: no `pi:none`,
/// `pi:protect`); a probe named without a selection then measures the rest,
/// and the run says which were not there.
const PROTOCOL_VARIANTS: &[(&str, &[&str])] = &[
    ("sem", &["posix/same-cpu", "posix/cross-cpu", "mutex/same-cpu", "mutex/cross-cpu", "condvar/same-cpu", "condvar/cross-cpu"]),
    ("pipe", &["oneway", "roundtrip"]),
    ("mq", &["oneway", "roundtrip"]),
    ("signal", &["pthread_kill", "sigqueue"]),
    ("switch", &["futex", "yield"]),
    ("preempt", &["futex/same-cpu"]),
    ("pi", &["none", "inherit", "protect", "deadlock-break"]),
];

/// A warning naming the protocol's variants the agent does not announce,
/// for each probe asked for whole (`--probe pi`, not `--probe pi:inherit`):
/// they were not measured because the target lacks them (issue 67).
fn not_announced(on: &OnTarget, hello: &Hello) -> Option<String> {
    let mut missing: Vec<String> = Vec::new();
    for s in &on.probes {
        let (name, sel) = split_spec(s);
        let (Some((_, have)), None) = (hello.probes.iter().find(|(n, _)| n == name), sel) else { continue };
        let Some((_, all)) = PROTOCOL_VARIANTS.iter().find(|(p, _)| *p == name) else { continue };
        for v in all.iter().filter(|v| !have.iter().any(|h| h == *v)) {
            let m = format!("{name}:{v}");
            if !missing.contains(&m) {
                missing.push(m);
            }
        }
    }
    (!missing.is_empty()).then(|| {
        format!(
            "not measured, the agent does not have them on this target (it leaves out what the system lacks): {}; the probes' other variants were measured",
            missing.join(", ")
        )
    })
}

/// CPUs and threads on the target: `-a` must name CPUs it has.
fn cpus_threads(on: &OnTarget, ncpus: usize, spec: &TargetSpec) -> Result<(Vec<usize>, usize), BadInput> {
    let cpus = match &on.affinity {
        Some(set) => {
            if let Some(bad) = set.iter().find(|c| ncpus > 0 && **c >= ncpus) {
                return Err(BadInput(format!("-a/--affinity: CPU {bad} is not on the target {spec}, which has CPUs 0-{}", ncpus - 1)));
            }
            set.clone()
        }
        // Without -a the threads go round-robin over the target's CPUs from
        // 0: thread i on CPU i, the cross-cpu variants on 0 and 1. The plan
        // names those CPUs only (a 256-CPU target's full list would not fit
        // the protocol's 1 024 bytes, and the agent's own threads keep the
        // CPUs no thread measures on).
        None => match on.threads {
            Some(t) => (0..ncpus.max(1).min(t.max(2))).collect(),
            None => (0..ncpus.max(1)).collect(),
        },
    };
    let threads = on.threads.unwrap_or(cpus.len());
    Ok((cpus, threads))
}

/// The set-up step of this rtscope's own threads while the agent measures.
/// An agent of this same system (a local build or qemu-user through
/// `exec:`, `tcp:127.0.0.1`: its hello names this host's nodename and
/// kernel release) shares the CPUs with them: the session thread (parses
/// every line), the link's reader thread (wakes for every read) and the
/// live bar (made later, it inherits the session thread's CPUs) go to the
/// CPUs the plan does not measure, as the native main thread does. Only
/// such an agent moves them: a target that runs on this machine under
/// another system (`here`: NuttX's `sim`, a local QEMU, see
/// [`super::beside::runs_here`]) numbers CPUs of its own, which are not
/// this host's, and an agent on another machine shares nothing with them:
/// skipped, saying which.
fn place_host_threads(reader_tid: Option<i32>, h: &Line, cpus: &[usize], here: bool) -> SetupStep {
    const STEP: &str = "host reader placement";
    let (host, release) = (h.get("host").unwrap_or(""), h.get("release").unwrap_or(""));
    if !super::beside::names_this_host(host, release) {
        let host = if host.is_empty() { "-" } else { host };
        let system = match h.get("os").unwrap_or("") {
            "Linux" => format!("Linux {release}").trim_end().to_string(),
            os => system_name(os, release),
        };
        let system = foreign(if system.is_empty() { "-" } else { &system });
        let host = foreign(host);
        let whose = if here { "the target runs on this machine under another system" } else { "the agent names another system" };
        return SetupStep::skipped(
            STEP,
            format!("{whose} ({system}, host {host}): its CPUs are not this host's, so the session and reader threads are not placed against them"),
        );
    }
    let allowed = match crate::sys::sched::current_affinity() {
        Ok(a) => a,
        Err(e) => return SetupStep::failed(STEP, format!("sched_getaffinity: {e}")),
    };
    let spare: Vec<usize> = allowed.into_iter().filter(|c| !cpus.contains(c)).collect();
    if spare.is_empty() {
        return SetupStep::skipped(STEP, "no CPU outside the measured set; the session and reader threads share them (they sleep between lines)");
    }
    let placed = crate::sys::sched::set_current_affinity(&spare).and_then(|()| reader_tid.map_or(Ok(()), |t| crate::sys::sched::set_affinity_of(t, &spare)));
    match placed {
        Ok(()) => SetupStep::ok(STEP, format!("cpus {} (the agent runs on this system)", crate::units::cpu_list_str(&spare))),
        Err(e) => SetupStep::failed(STEP, format!("sched_setaffinity: {e}")),
    }
}

/// Run the plan on the agent `spec` names. `warnings` words what the reader
/// must know (the face passes `analysis::warnings`, as to the runner).
pub(crate) fn execute(spec: &TargetSpec, plan: &RunPlan, on: &OnTarget, call: Invocation) -> anyhow::Result<Run> {
    let Invocation { output, command_line, started, stop, warnings } = call;
    check_plan_lines(plan, on)?;
    let transcript = on.transcript.as_deref().map(|p| Transcript::create(p, &spec.to_string())).transpose()?;
    let mut link = Link::open(spec, transcript)?;
    if matches!(spec, TargetSpec::Serial { .. }) {
        // The agent on a serial line may have announced itself long ago.
        link.send(&Line::new("hi").encode()).map_err(|e| BadInput(format!("{spec}: cannot write to the line: {e}")))?;
    }
    let mut r = Reader::new(&mut link);
    let hello = announcement(&mut r, stop)?;
    let host = host_of(&hello.line);
    let agreed = agree(plan, on, &hello, host.cpus_online.len(), spec)?;
    let absent = not_announced(on, &hello);
    if let Some(w) = coarse_clock_before(plan, &hello.line, spec) {
        eprintln!("{w}");
    }
    let (host_name, release) = (hello.line.get("host").unwrap_or(""), hello.line.get("release").unwrap_or(""));
    let here = matches!(spec, TargetSpec::Exec(cmd) if super::beside::runs_here(cmd, host_name, release));
    let mut steps = agent_steps(&hello.line, &agreed.cpus, r.link.reader_tid(), here);
    let mut run = run_of(plan, &hello.line, &agreed, spec, host, command_line, started);
    let beside = if here { r.link.group() } else { None };
    // QEMU with -icount: the guest's time counts instructions, and a plan's
    // time may take longer than that in wall time; a probe busy at a
    // real-time priority may keep the agent's reporter from running for the
    // whole plan (issue 64): the silence limit is then at least the plan's,
    // and a plan without progress is waited for up to VIRTUAL_SLOWDOWN × its
    // time + that limit (super::replies).
    let virtual_clock = matches!(spec, TargetSpec::Exec(cmd) if crate::model::exec_emulation(cmd).is_some() && crate::model::exec_virtual_clock(cmd));
    let plans = Plans { plan, on, agreed: &agreed, stop, beside, virtual_clock };
    let Ending { gone, not_run } = plans.measure(&mut r, &mut run, &mut steps, output.quiet)?;
    if gone.is_none() {
        let _ = r.link.send(&Line::new("bye").encode());
        // The answer is a courtesy: the link is closed either way.
        let _ = r.next(Duration::from_secs(2));
    }
    // `r` only borrows the link (no drop glue): closing the link ends the session.
    drop(link);
    finish(&mut run, &steps, stop.load(Ordering::Relaxed) || gone.is_some(), warnings);
    if let Some(w) = not_run.warning() {
        run.warnings.insert(0, w);
    }
    run.warnings.extend(absent);
    if let Some(why) = gone {
        run.warnings.insert(
            0,
            format!("in the middle of the run, {why}. The results hold the result blocks that arrived complete; the probe runs after it were not measured"),
        );
    }
    run.check_invariants().map_err(|e| BadInput(format!("{spec}: the agent's results do not hold together ({e}); nothing was stored")))?;
    write_final(&output.path, &run)?;
    Ok(run)
}

/// What the session and the agent agreed on: each probe with the variants
/// chosen (empty: all), the target's CPUs to measure on and the threads.
struct Agreed {
    probes: Vec<(String, Vec<String>)>,
    cpus: Vec<usize>,
    threads: usize,
    /// The CPUs the target announced (`hello cpus`; 0: it did not say).
    announced_cpus: usize,
}

/// The probes, CPUs and threads of `plan` and `on` as the agent can run them
/// (`ncpus`: the CPUs it has; it preallocated `max_threads`).
fn agree(plan: &RunPlan, on: &OnTarget, hello: &Hello, ncpus: usize, spec: &TargetSpec) -> Result<Agreed, BadInput> {
    let probes = resolve_probes(on, hello, spec)?;
    target_priority(plan, &hello.line, &probes, spec)?;
    let (cpus, threads) = cpus_threads(on, ncpus, spec)?;
    if let Some(max) = hello.line.get("max_threads").and_then(|m| m.parse::<usize>().ok()) {
        if threads > max {
            return Err(BadInput(format!(
                "-t/--threads {threads}: the agent preallocated {max} threads; start it with --max-threads {threads} or measure with fewer"
            )));
        }
    }
    Ok(Agreed { probes, cpus, threads, announced_cpus: ncpus })
}

/// How far below `-p` a probe's lowest thread runs (the agent's probe
/// descriptors' `prio_below`): the pair probes' lower thread −1, `pi`'s
/// low thread −2, the others none.
fn prio_below(probe: &str) -> i64 {
    match probe {
        "pi" => 2,
        "sem" | "pipe" | "mq" | "signal" | "preempt" => 1,
        _ => 0,
    }
}

/// `-p` on the target's scale (issue 48): it is the priority the measuring
/// threads get on the target, as given. It must be within the system's
/// range (`hello prio_min..prio_max`, and 1..99 as `-p`) and, when the
/// agent's own threads run at a real-time priority (`own_prio` > 0, an
/// RTOS's first task), put every probe's lowest thread above them. Checked
/// here, before any plan is sent: exit 2 naming the range (the agent checks
/// the same, for hosts that do not).
fn target_priority(plan: &RunPlan, h: &Line, probes: &[(String, Vec<String>)], spec: &TargetSpec) -> Result<(), BadInput> {
    let num = |k: &str| h.get(k).and_then(|v| v.parse::<i64>().ok());
    let (lo, hi) = (num("prio_min").unwrap_or(1).max(1), num("prio_max").unwrap_or(99).min(99));
    let own = if plan.measuring.policy == Policy::Other { 0 } else { num("own_prio").unwrap_or(0).max(0) };
    let (worst, below) = probes.iter().map(|(p, _)| (p.as_str(), prio_below(p))).max_by_key(|(_, b)| *b).unwrap_or(("", 0));
    let low = if own > 0 { lo.max(own + 1 + below) } else { lo };
    let p = i64::from(plan.measuring.priority);
    if p >= low && p <= hi {
        return Ok(());
    }
    let os = h.get("os").filter(|o| !o.is_empty()).unwrap_or("its system");
    let own_said = if own > 0 {
        format!(
            ", the agent's own threads at {own} (the lowest it allows){}",
            if below > 0 { format!(", and {worst}'s lowest thread runs at -p − {below}") } else { String::new() }
        )
    } else {
        String::new()
    };
    let range = if low <= hi {
        format!("use -p {low}..{hi}")
    } else {
        "no -p can measure there; lower the agent's own priority on the target (docs/porting.md)".to_string()
    };
    Err(BadInput(format!(
        "-p/--priority {p}: -p is the priority on the target's scale; the target {spec} ({os}) schedules at {}..{}{own_said}: {range}",
        num("prio_min").unwrap_or(1),
        num("prio_max").unwrap_or(99),
    )))
}

/// The target's clock resolution (`hello res_ns`) against the intervals of
/// the plan, said before measuring (the end of the run says it again with
/// the latencies): a period below a tick measures the tick (issue 48).
fn coarse_clock_before(plan: &RunPlan, h: &Line, spec: &TargetSpec) -> Option<String> {
    let res = h.get("res_ns").and_then(|v| v.parse::<u64>().ok()).filter(|r| *r > 1_000)?;
    let fmt = crate::units::fmt_ns;
    let below: Vec<String> =
        std::iter::once(plan.measuring.interval_ns).chain(plan.measuring.probe.periods_ns.iter().copied()).filter(|i| *i > 0 && *i < res).map(fmt).collect();
    let what = if below.is_empty() {
        format!("latencies under {} cannot be told apart", fmt(res))
    } else {
        format!("the interval {} is below it: periods and wake-ups come in its ticks", below.join(", "))
    };
    Some(format!("warning: the target {spec} announces a clock resolution of {} (hello res_ns, clock_getres); {what}. {}", fmt(res), coarse_clock_remedy(res)))
}

/// What a user does about a target clock coarser than the plan's interval:
/// said before measuring (here) and with the results (analysis::warnings,
/// a layer above).
pub(crate) fn coarse_clock_remedy(resolution_ns: u64) -> String {
    format!("Use a tickless or high-resolution clock on the target (docs/porting.md) or an interval of at least {}.", crate::units::fmt_ns(resolution_ns))
}

/// The run every result block goes into: the plan as agreed, the agent's
/// record and clock, the target's fingerprint.
fn run_of(plan: &RunPlan, h: &Line, agreed: &Agreed, spec: &TargetSpec, host: Host, command_line: Vec<String>, started: OffsetDateTime) -> Run {
    let agent = AgentRecord {
        version: foreign(h.get("agent").unwrap_or("")),
        protocol: proto::PROTOCOL,
        transport: spec.kind().to_string(),
        target: spec.to_string(),
        os: foreign(h.get("os").unwrap_or("")),
        arch: foreign(h.get("arch").unwrap_or("")),
        clock: foreign(h.get("clock").unwrap_or("")),
        clock_resolution_ns: Nanos(h.get("res_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        tick_ns: h.get("tick_ns").and_then(|v| v.parse().ok()).filter(|t| *t > 0).map(Nanos),
        sleep: foreign(h.get("sleep").unwrap_or("")),
        mlock: foreign(h.get("mlock").unwrap_or("")),
        ..AgentRecord::default()
    };
    let calibration = calibration_of(h, &agent.clock);
    Run::by_agent(command_line, host, plan_of(plan, agreed), calibration, rfc3339(started), agent)
}

/// The one plan's model as the agent agreed it: its probes, variants,
/// threads and CPUs.
fn plan_of(plan: &RunPlan, agreed: &Agreed) -> Plan {
    let mut p = plan.to_model();
    p.probes = agreed.probes.iter().map(|(p, _)| p.clone()).collect();
    p.threads = agreed.threads;
    p.cpus = agreed.cpus.clone();
    for (probe, vs) in &agreed.probes {
        if !vs.is_empty() {
            p.probe_options.variants.insert(probe.clone(), vs.clone());
        }
    }
    p
}

/// The agent does not measure the cost of a clock read (protocol 1): 0
/// with the clock named as not calibrated, never a number made up.
fn calibration_of(h: &Line, clock: &str) -> Calibration {
    Calibration::new(
        Nanos(h.get("clock_read_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        Nanos(h.get("clock_read_min_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        match h.get("clock_read_ns") {
            Some(_) => format!("{clock} on the target (rtscope-agent)"),
            None => format!("{clock} on the target (rtscope-agent; read cost not measured)"),
        },
    )
}

/// The set-up steps known before any plan: the agent's memory lock (from
/// `hello`), and where this rtscope's own threads run (`here`: the target
/// runs on this machine, [`place_host_threads`]).
fn agent_steps(h: &Line, cpus: &[usize], reader_tid: Option<i32>, here: bool) -> Vec<SetupStep> {
    let mut steps = Vec::new();
    if let Some(m) = h.get("mlock").filter(|m| *m != "ok") {
        steps.push(SetupStep::failed("mlockall", format!("on the target: {}", foreign(m))));
    }
    steps.push(place_host_threads(reader_tid, h, cpus, here));
    steps
}

/// One plan per probe and phase, sent and read in turn.
struct Plans<'a> {
    plan: &'a RunPlan,
    on: &'a OnTarget,
    agreed: &'a Agreed,
    stop: &'a AtomicBool,
    /// The exec command's process group when the target runs on this host:
    /// each phase then records the host beside it ([`super::beside`]).
    beside: Option<u32>,
    /// The target is an emulator on a virtual clock (`-icount`).
    virtual_clock: bool,
}

/// How the plans ended: `gone` says why when the agent went away; `not_run`
/// what a stall left unmeasured.
struct Ending {
    gone: Option<String>,
    not_run: NotRun,
}

/// What a stall on the target left unmeasured (issue 64): the variants of
/// the stalled plan the agent did not come to, and the plans after it the
/// agent refused while its stuck thread held it. The run keeps everything
/// measured and says what is missing; the plans after a refused one are
/// still sent, so an agent that recovers measures them.
#[derive(Default)]
struct NotRun {
    /// `probe[:variant] (phase)`, in order.
    what: Vec<String>,
    /// The agent's words when it refused a plan.
    refusal: Option<String>,
}

impl NotRun {
    fn warning(&self) -> Option<String> {
        if self.what.is_empty() {
            return None;
        }
        let why = match &self.refusal {
            Some(msg) => format!("the agent refused to run a plan after the stall ({msg}); restart the agent (or the target) and measure them again"),
            None => "the agent stopped the plan at the stall; measure them again".to_string(),
        };
        Some(format!("not measured after a probe stalled on the target: {}. {why}", self.what.join(", ")))
    }
}

impl Plans<'_> {
    /// Every plan, with the live bar.
    fn measure(&self, r: &mut Reader, run: &mut Run, steps: &mut Vec<SetupStep>, quiet: bool) -> anyhow::Result<Ending> {
        let board = LiveBoard::default();
        let live = Arc::new(Live::default());
        let total_ns = (self.plan.measuring.duration_ns + WARM_UP_NS) * (self.agreed.probes.len() * self.plan.phases.len()) as u64;
        let finished = AtomicBool::new(false);
        std::thread::scope(|s| {
            spawn_live(s, quiet, &board, total_ns, &finished, self.stop)?;
            let gone = self.each(r, run, steps, &board, &live);
            finished.store(true, Ordering::Relaxed);
            gone
        })
    }

    fn each(&self, r: &mut Reader, run: &mut Run, steps: &mut Vec<SetupStep>, board: &LiveBoard, live: &Arc<Live>) -> anyhow::Result<Ending> {
        let mut id = 0u64;
        let mut not_run = NotRun::default();
        for (phase, load) in self.plan.phases.iter().zip(&self.on.loads) {
            let beside = self.beside.map(super::beside::Sample::read);
            // Some(why): the session ends in this phase (None: stopped).
            let end: Option<Option<String>> = 'phase: {
                for (probe, variants) in &self.agreed.probes {
                    if self.stop.load(Ordering::Relaxed) {
                        break 'phase Some(None);
                    }
                    id += 1;
                    let line = self.plan_line(id, probe, variants, load);
                    fits(&line, probe)?;
                    if let Err(e) = r.link.send(&line.encode()) {
                        // The link dropped between two plans: what arrived is kept.
                        break 'phase Some(Some(format!("the link failed when the plan for {probe} was sent ({e})")));
                    }
                    board.reset(&format!("{phase}: {probe} (agent)"));
                    board.register(Arc::clone(live));
                    let planned = Duration::from_nanos(self.plan.measuring.duration_ns + WARM_UP_NS);
                    let silence = Duration::from_nanos(if self.virtual_clock { self.on.silence_ns.max(planned.as_nanos() as u64) } else { self.on.silence_ns });
                    let bounds = PlanBounds { probe: probe.clone(), threads: self.agreed.threads, limits: self.limits(probe) };
                    let mut replies = Replies::new(id, phase, live, board, bounds);
                    replies.after_stall = steps.iter().any(|s| s.step == "stall watch" && s.outcome == Outcome::Failed);
                    replies.virtual_clock = self.virtual_clock;
                    match replies.read(r, planned, silence, self.stop, steps)? {
                        PlanEnd::Done(results, missed) => {
                            run.results.extend(results);
                            not_run.what.extend(missed.into_iter().map(|m| format!("{m} ({phase})")));
                        }
                        PlanEnd::Refused(msg) => {
                            not_run.what.push(format!("{probe} ({phase})"));
                            not_run.refusal.get_or_insert(msg);
                        }
                        PlanEnd::Gone(results, why) => {
                            run.results.extend(results);
                            break 'phase Some(Some(why));
                        }
                    }
                    if self.stop.load(Ordering::Relaxed) {
                        break 'phase Some(None);
                    }
                }
                None
            };
            if let (Some(b), Some(agent)) = (beside, run.agent.as_mut()) {
                agent.host_beside.push(b.since(phase));
            }
            if let Some(why) = end {
                run.interrupted_in = Some(phase.clone());
                return Ok(Ending { gone: why, not_run });
            }
        }
        Ok(Ending { gone: None, not_run })
    }

    /// What the plan of `probe` lets a result block state (src/agent_host/bounds.rs).
    fn limits(&self, probe: &str) -> Limits {
        let m = &self.plan.measuring;
        let info = crate::measure::info(probe);
        let periods_ns = match info.filter(|i| i.multi_period()) {
            Some(i) => m.probe.periods_or(i.default_periods),
            None => Vec::new(),
        };
        Limits {
            tail: plan_tail(m) as u64,
            worst: m.worst_k as u64,
            duration_ns: m.duration_ns,
            interval_ns: m.interval_ns,
            periods_ns,
            paced: info.map_or(crate::measure::Paced::Interval, |i| i.paced),
            cpus: self.agreed.cpus.clone(),
            announced_cpus: self.agreed.announced_cpus,
        }
    }

    /// The `plan` line of one probe (its `variants`) under the agent's built-in `load`.
    fn plan_line(&self, id: u64, probe: &str, variants: &[String], load: &str) -> Line {
        plan_line(&self.plan.measuring, &self.agreed.cpus, self.agreed.threads, id, probe, variants, load)
    }
}

/// Every line the host sends fits the protocol's [`proto::MAX_PROTOCOL_LINE`]
/// bytes (an agent answers a longer one `too-long`): `Err` names the plan and
/// what shortens it.
fn fits(line: &Line, probe: &str) -> Result<(), BadInput> {
    let n = line.encode().len();
    if n > proto::MAX_PROTOCOL_LINE {
        return Err(BadInput(format!(
            "the plan for {probe} would be a protocol line of {n} bytes, more than the {} an agent takes: name fewer CPUs with -a/--affinity (e.g. -a 0-63), or give fewer --periods or variants",
            proto::MAX_PROTOCOL_LINE
        )));
    }
    Ok(())
}

/// Before connecting: the plan lines with what is known (the CPUs of `-a`,
/// every variant of a probe left to the agent) fit the protocol.
pub(crate) fn check_plan_lines(plan: &RunPlan, on: &OnTarget) -> Result<(), BadInput> {
    let cpus = on.affinity.clone().unwrap_or_else(|| vec![0]);
    for s in &on.probes {
        let (probe, _) = split_spec(s);
        for load in &on.loads {
            fits(&plan_line(&plan.measuring, &cpus, on.threads.unwrap_or(1), 1, probe, &[], load), probe)?;
        }
    }
    Ok(())
}

/// The tail capacity a plan asks of every thread (the native recorder's).
fn plan_tail(m: &ProbeRun) -> usize {
    crate::measure::recorder::tail_capacity(m.duration_ns, m.interval_ns).max(m.worst_k)
}

/// The keys of a `plan` line in the order [`plan_line`] writes them (the
/// optional ones last), each with the clap id of the `rtscope run` flag that
/// sets it, or None for what the host works out itself (the plan's number,
/// the tail capacity, the warm-up, the progress cadence). These are the
/// flags that reach the agent: `cli::applies` takes them from here, so a key
/// added to the line brings its flag into what `--target` accepts (a unit
/// test below holds this table to the line).
pub(crate) const PLAN_KEYS: &[(&str, Option<&str>)] = &[
    ("id", None),
    ("probe", Some("probes")),
    ("interval_ns", Some("interval")),
    ("duration_ns", Some("duration")),
    ("priority", Some("priority")),
    ("policy", Some("policy")),
    ("cpus", Some("affinity")),
    ("threads", Some("threads")),
    ("worst", Some("worst")),
    ("tail", None),
    ("warmup_ns", None),
    ("progress_ms", None),
    ("variants", Some("probes")),
    ("periods_ns", Some("periods")),
    ("iterations", Some("iterations")),
    ("msg_size", Some("msg_size")),
    ("load", Some("loads")),
];

/// The `plan` line of one probe (its `variants`) on `cpus` with `threads`
/// under the agent's built-in `load`; its keys are [`PLAN_KEYS`].
fn plan_line(m: &ProbeRun, cpus: &[usize], threads: usize, id: u64, probe: &str, variants: &[String], load: &str) -> Line {
    let mut l = Line::new("plan")
        .with("id", id)
        .with("probe", probe)
        .with("interval_ns", m.interval_ns)
        .with("duration_ns", m.duration_ns)
        .with("priority", m.priority)
        .with("policy", m.policy.name())
        .with("cpus", cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
        .with("threads", threads)
        .with("worst", m.worst_k)
        .with("tail", plan_tail(m))
        .with("warmup_ns", WARM_UP_NS)
        .with("progress_ms", 250);
    if !variants.is_empty() {
        l = l.with("variants", variants.join(","));
    }
    if !m.probe.periods_ns.is_empty() {
        l = l.with("periods_ns", m.probe.periods_ns.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
    }
    if let Some(n) = m.probe.iterations {
        l = l.with("iterations", n);
    }
    // 0: not given, the agent's own default (a given size is at least 1).
    if m.probe.msg_size > 0 {
        l = l.with("msg_size", m.probe.msg_size);
    }
    if load != "none" {
        l = l.with("load", load);
    }
    l
}

#[cfg(test)]
mod tests;
