//! One `rtscope run --target` session: open the link, read the agent's
//! announcement, send one plan per probe and phase, take the result blocks
//! in, and build the [`Run`] (docs/agent.md, "Session").
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
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::error::BadInput;
use crate::measure::recorder::Live;
use crate::measure::{selects, split_spec, LiveBoard};
use crate::model::{AgentRecord, Calibration, Host, Nanos, Plan, Run, SetupStep};
use crate::plan::Output;
use crate::sys::sched::Policy;
use crate::units::rfc3339;

use super::block::{results_of, Block};
use super::proto::{self, Line, Parsed};
use super::transport::{Incoming, Link, TargetSpec};

/// How long the agent has to announce itself (a board booting under qemu
/// takes a while: lab/kernel-lab's arm64 guest under `--icount` with a guest
/// load, on a host at load average 15, took over 60 s to its agent's hello;
/// a serial agent answers `hi` at once).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(180);
/// Silence allowed past a plan's planned end before the agent counts as gone
/// (progress lines come every 250 ms while it measures).
pub const GRACE: Duration = Duration::from_secs(30);
/// The native runner's warm-up (`runner::WARM_UP_MIN_NS`), asked of the agent too.
const WARM_UP_NS: u64 = crate::runner::WARM_UP_MIN_NS;

/// What `rtscope run --target` asks, in the target's terms (the face builds
/// it from the flags; CPUs are checked against the target once it has said
/// how many it has).
#[derive(Debug, Clone)]
pub struct TargetPlan {
    /// `--probe` as given: `timer`, `sem:mutex`, ...
    pub probes: Vec<String>,
    pub duration_ns: u64,
    pub interval_ns: u64,
    pub priority: u8,
    pub policy: Policy,
    pub threads: Option<usize>,
    pub affinity: Option<Vec<usize>>,
    pub periods_ns: Vec<u64>,
    pub worst_k: usize,
    pub iterations: Option<u64>,
    pub msg_size: Option<usize>,
    /// (phase name, the agent's built-in load: none, cpu, mem, cpu+mem).
    pub phases: Vec<(String, String)>,
}

/// What the agent announced.
#[derive(Debug)]
struct Hello {
    line: Line,
    /// (probe, variants).
    probes: Vec<(String, Vec<String>)>,
}

/// The session's reading side: numbers every line it takes, keeps the
/// last few for messages, and turns malformed lines into [`BadInput`].
struct Reader<'a> {
    link: &'a mut Link,
    number: u64,
}

enum Got {
    Line(Line),
    Gone(String),
    Quiet,
}

impl Reader<'_> {
    fn malformed(&self, text: &str, why: &str) -> BadInput {
        let shown: String = text.chars().take(200).collect();
        let more = if text.chars().count() > 200 { "..." } else { "" };
        BadInput(format!(
            "{}: line {} from the agent is malformed ({why}): {shown:?}{more}; nothing was stored. Check the link (baud rate, a noisy line) and that agent and rtscope speak protocol {}",
            self.link.spec,
            self.number,
            proto::PROTOCOL
        ))
    }

    /// The next protocol line from the agent within `wait`: noise and the
    /// host's own echoed lines are skipped.
    fn next(&mut self, wait: Duration) -> Result<Got, BadInput> {
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let Some(item) = self.link.next(left.min(Duration::from_millis(100))) else {
                if Instant::now() >= end {
                    return Ok(Got::Quiet);
                }
                continue;
            };
            match item {
                Incoming::Eof => {
                    // Let the agent's exit status be seen, if it has one.
                    std::thread::sleep(Duration::from_millis(50));
                    let how = self.link.exit_status().map(|s| format!(" ({s})")).unwrap_or_default();
                    return Ok(Got::Gone(format!("the agent closed the link{how}")));
                }
                Incoming::Failed(e) => return Ok(Got::Gone(format!("reading from the agent failed: {e}"))),
                Incoming::Line(text) => {
                    self.number += 1;
                    let text = match text {
                        Ok(t) => t,
                        Err(t) if t.starts_with("RTS") => {
                            return Err(self.malformed(&t, &format!("longer than {} bytes", proto::MAX_PROTOCOL_LINE)))
                        }
                        Err(_) => continue,
                    };
                    match proto::parse(&text) {
                        Ok(Parsed::Noise) => continue,
                        Ok(Parsed::Line(l)) if proto::HOST_KINDS.contains(&l.kind.as_str()) && l.kind != "bye" => continue,
                        Ok(Parsed::Line(l)) => {
                            if l.kind == "error" {
                                return Err(BadInput(format!(
                                    "{}: the agent refused (line {} {text:?}): {} [{}]",
                                    self.link.spec,
                                    self.number,
                                    l.get("msg").unwrap_or("no message"),
                                    l.get("code").unwrap_or("?")
                                )));
                            }
                            return Ok(Got::Line(l));
                        }
                        Err(why) => return Err(self.malformed(&text, &why)),
                    }
                }
            }
        }
    }
}

/// Read the announcement: `hello`, `probe` lines, `ready`.
fn announcement(r: &mut Reader, stop: &AtomicBool) -> anyhow::Result<Hello> {
    let mut hello: Option<Hello> = None;
    let end = Instant::now() + HELLO_TIMEOUT;
    loop {
        if stop.load(Ordering::Relaxed) {
            anyhow::bail!(crate::error::BadInput(format!("{}: interrupted before the agent announced itself; nothing was measured", r.link.spec)));
        }
        if Instant::now() > end {
            return Err(BadInput(format!(
                "{}: no `RTS1 hello` from the agent within {} s; is rtscope-agent running at the other end (and the baud rate right)?",
                r.link.spec,
                HELLO_TIMEOUT.as_secs()
            ))
            .into());
        }
        let l = match r.next(Duration::from_millis(200))? {
            Got::Line(l) => l,
            Got::Quiet => continue,
            Got::Gone(why) => return Err(BadInput(format!("{}: {why} before announcing itself; nothing was measured", r.link.spec)).into()),
        };
        let at = r.number;
        match l.kind.as_str() {
            "hello" => {
                let v = l.num("proto").map_err(|e| r.malformed(&l.encode(), &e))?;
                if v != u64::from(proto::PROTOCOL) {
                    return Err(BadInput(format!("{}: the agent speaks protocol {v}, this rtscope {}", r.link.spec, proto::PROTOCOL)).into());
                }
                hello = Some(Hello { line: l, probes: Vec::new() });
            }
            "probe" => {
                let h = hello.as_mut().ok_or_else(|| r.malformed(&l.encode(), "a probe line before hello"))?;
                let name = l.req("name").map_err(|e| r.malformed(&l.encode(), &e))?.to_string();
                let variants = proto::list(l.get("variants").unwrap_or("")).into_iter().map(str::to_string).collect();
                h.probes.push((name, variants));
            }
            "ready" => match hello.take() {
                Some(h) => return Ok(h),
                None => return Err(r.malformed(&l.encode(), "ready before hello").into()),
            },
            k => return Err(r.malformed(&l.encode(), &format!("a {k} line (line {at}) before the agent was ready")).into()),
        }
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
    Host {
        hostname: h.get("host").unwrap_or("").to_string(),
        kernel_release: h.get("release").unwrap_or("").to_string(),
        kernel_version: h.get("version").unwrap_or("").to_string(),
        realtime: preempt == "PREEMPT_RT",
        preempt_model: model.to_string(),
        preempt_model_source: format!("rtscope-agent hello: preempt={preempt}"),
        cpu_model: h.get("arch").unwrap_or("").to_string(),
        cpus_online: (0..cpus).collect(),
        smt: "unknown".into(),
        ..Host::default()
    }
}

/// Each probe to run with the agent's variants it selects (empty: the probe
/// has none, or all of them).
fn resolve_probes(tp: &TargetPlan, hello: &Hello, spec: &TargetSpec) -> Result<Vec<(String, Vec<String>)>, BadInput> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for s in &tp.probes {
        let (name, sel) = split_spec(s);
        let Some((_, have)) = hello.probes.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = hello.probes.iter().map(|(n, _)| n.as_str()).collect();
            return Err(BadInput(format!("--probe {name}: the agent at {spec} has no such probe; it has {}", names.join(", "))));
        };
        let picked: Vec<String> = match sel {
            None => Vec::new(),
            Some(sel) => {
                let p: Vec<String> = have.iter().filter(|v| selects(sel, v)).cloned().collect();
                if p.is_empty() {
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

/// CPUs and threads on the target: `-a` must name CPUs it has.
fn cpus_threads(tp: &TargetPlan, ncpus: usize, spec: &TargetSpec) -> Result<(Vec<usize>, usize), BadInput> {
    let cpus = match &tp.affinity {
        Some(set) => {
            if let Some(bad) = set.iter().find(|c| ncpus > 0 && **c >= ncpus) {
                return Err(BadInput(format!("-a/--affinity: CPU {bad} is not on the target {spec}, which has CPUs 0-{}", ncpus - 1)));
            }
            set.clone()
        }
        None => (0..ncpus.max(1)).collect(),
    };
    let threads = tp.threads.unwrap_or(cpus.len());
    Ok((cpus, threads))
}

/// The set-up step of this rtscope's own threads while the agent measures.
/// An agent on this machine (a local build or qemu-user through `exec:`,
/// `tcp:127.0.0.1`: its hello names this host's nodename and kernel
/// release) shares the CPUs with them: the session thread (parses every
/// line), the link's reader thread (wakes for every read) and the live bar
/// (made later, it inherits the session thread's CPUs) go to the CPUs the
/// plan does not measure, as the native main thread does. An agent on
/// another machine shares nothing with them: skipped, saying so.
fn place_host_threads(reader_tid: Option<i32>, h: &Line, cpus: &[usize]) -> SetupStep {
    const STEP: &str = "host reader placement";
    let here = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).map(|s| s.trim().to_string()).unwrap_or_default();
    let (host, release) = (h.get("host").unwrap_or(""), h.get("release").unwrap_or(""));
    if host.is_empty() || host != here("hostname") || release != here("osrelease") {
        return SetupStep::skipped(STEP, format!("the agent runs on another system ({host}, {release}): it shares no CPU with this rtscope"));
    }
    let allowed = match crate::sys::sched::current_affinity() {
        Ok(a) => a,
        Err(e) => return SetupStep::failed(STEP, format!("sched_getaffinity: {e}")),
    };
    let spare: Vec<usize> = allowed.into_iter().filter(|c| !cpus.contains(c)).collect();
    if spare.is_empty() {
        return SetupStep::skipped(STEP, "no CPU outside the measured set; the session and reader threads share them (they sleep between lines)");
    }
    let placed = crate::sys::sched::set_current_affinity(&spare)
        .and_then(|()| reader_tid.map_or(Ok(()), |t| crate::sys::sched::set_affinity_of(t, &spare)));
    match placed {
        Ok(()) => SetupStep::ok(STEP, format!("cpus {} (the agent runs on this system)", crate::units::cpu_list_str(&spare))),
        Err(e) => SetupStep::failed(STEP, format!("sched_setaffinity: {e}")),
    }
}

/// Run the plan on the agent `spec` names. `warnings` words what the reader
/// must know (the face passes `analysis::warnings`, as to the runner).
pub fn execute(
    spec: &TargetSpec,
    tp: &TargetPlan,
    output: &Output,
    command_line: Vec<String>,
    started: OffsetDateTime,
    stop: &AtomicBool,
    warnings: fn(&Run) -> Vec<String>,
) -> anyhow::Result<Run> {
    let mut link = Link::open(spec)?;
    if matches!(spec, TargetSpec::Serial { .. }) {
        // The agent on a serial line may have announced itself long ago.
        link.send(&Line::new("hi").encode()).map_err(|e| BadInput(format!("{spec}: cannot write to the line: {e}")))?;
    }
    let mut r = Reader { link: &mut link, number: 0 };
    let hello = announcement(&mut r, stop)?;
    let h = &hello.line;
    let host = host_of(h);
    let ncpus = host.cpus_online.len();
    let probes = resolve_probes(tp, &hello, spec)?;
    let (cpus, threads) = cpus_threads(tp, ncpus, spec)?;
    if let Some(max) = h.get("max_threads").and_then(|m| m.parse::<usize>().ok()) {
        if threads > max {
            return Err(BadInput(format!("-t/--threads {threads}: the agent preallocated {max} threads; start it with --max-threads {threads} or measure with fewer")).into());
        }
    }

    let mut plan = Plan::new(
        probes.iter().map(|(p, _)| p.clone()).collect(),
        tp.phases.iter().map(|(n, _)| n.clone()).collect(),
        Nanos(tp.duration_ns),
        Nanos(tp.interval_ns),
    );
    plan.priority = tp.priority;
    plan.policy = tp.policy.name().to_string();
    plan.threads = threads;
    plan.cpus = cpus.clone();
    plan.worst_k = tp.worst_k;
    plan.probe_options.periods_ns = tp.periods_ns.clone();
    plan.probe_options.iterations = tp.iterations;
    plan.probe_options.msg_size = tp.msg_size.unwrap_or(0);
    for (p, vs) in &probes {
        if !vs.is_empty() {
            plan.probe_options.variants.insert(p.clone(), vs.clone());
        }
    }
    let agent = AgentRecord {
        version: h.get("agent").unwrap_or("").to_string(),
        protocol: proto::PROTOCOL,
        transport: spec.kind().to_string(),
        target: spec.to_string(),
        os: h.get("os").unwrap_or("").to_string(),
        arch: h.get("arch").unwrap_or("").to_string(),
        clock: h.get("clock").unwrap_or("").to_string(),
        clock_resolution_ns: Nanos(h.get("res_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        mlock: h.get("mlock").unwrap_or("").to_string(),
    };
    // The agent does not measure the cost of a clock read (protocol 1): 0
    // with the clock named as not calibrated, never a number made up.
    let calibration = Calibration::new(
        Nanos(h.get("clock_read_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        Nanos(h.get("clock_read_min_ns").and_then(|v| v.parse().ok()).unwrap_or(0)),
        match h.get("clock_read_ns") {
            Some(_) => format!("{} on the target (rtscope-agent)", agent.clock),
            None => format!("{} on the target (rtscope-agent; read cost not measured)", agent.clock),
        },
    );
    let mut run = Run::by_agent(command_line, host, plan, calibration, rfc3339(started), agent);
    let mut steps: Vec<SetupStep> = Vec::new();
    if let Some(m) = h.get("mlock").filter(|m| *m != "ok") {
        steps.push(SetupStep::failed("mlockall", format!("on the target: {m}")));
    }
    steps.push(place_host_threads(r.link.reader_tid(), h, &cpus));

    let board = LiveBoard::default();
    let live = Arc::new(Live::default());
    let total_ns = (tp.duration_ns + WARM_UP_NS) * (probes.len() * tp.phases.len()) as u64;
    let finished = AtomicBool::new(false);
    let mut gone: Option<String> = None;
    let outcome = std::thread::scope(|s| -> anyhow::Result<()> {
        if !output.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let (board, finished) = (&board, &finished);
            std::thread::Builder::new()
                .name("rtscope-live".into())
                .stack_size(256 * 1024)
                .spawn_scoped(s, move || crate::live::progress(board, total_ns, finished, stop))?;
        }
        let res = (|| -> anyhow::Result<()> {
            let mut id = 0u64;
            'phases: for (phase, load) in &tp.phases {
                for (probe, variants) in &probes {
                    if stop.load(Ordering::Relaxed) {
                        run.interrupted_in = Some(phase.clone());
                        break 'phases;
                    }
                    id += 1;
                    let mut l = Line::new("plan")
                        .with("id", id)
                        .with("probe", probe)
                        .with("interval_ns", tp.interval_ns)
                        .with("duration_ns", tp.duration_ns)
                        .with("priority", tp.priority)
                        .with("policy", tp.policy.name())
                        .with("cpus", cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
                        .with("threads", threads)
                        .with("worst", tp.worst_k)
                        .with("tail", crate::measure::recorder::tail_capacity(tp.duration_ns, tp.interval_ns).max(tp.worst_k))
                        .with("warmup_ns", WARM_UP_NS)
                        .with("progress_ms", 250);
                    if !variants.is_empty() {
                        l = l.with("variants", variants.join(","));
                    }
                    if !tp.periods_ns.is_empty() {
                        l = l.with("periods_ns", tp.periods_ns.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
                    }
                    if let Some(n) = tp.iterations {
                        l = l.with("iterations", n);
                    }
                    if let Some(m) = tp.msg_size {
                        l = l.with("msg_size", m);
                    }
                    if load != "none" {
                        l = l.with("load", load);
                    }
                    r.link.send(&l.encode()).map_err(|e| anyhow::anyhow!("{spec}: cannot send the plan: {e}"))?;
                    board.reset(&format!("{phase}: {probe} (agent)"));
                    board.register(Arc::clone(&live));
                    let planned = Duration::from_nanos(tp.duration_ns + WARM_UP_NS);
                    match one_plan(&mut r, id, phase, planned, stop, &live, &board, &mut steps)? {
                        PlanEnd::Done(results) => run.results.extend(results),
                        PlanEnd::Gone(results, why) => {
                            run.results.extend(results);
                            run.interrupted_in = Some(phase.clone());
                            gone = Some(why);
                            break 'phases;
                        }
                    }
                    if stop.load(Ordering::Relaxed) {
                        run.interrupted_in = Some(phase.clone());
                        break 'phases;
                    }
                }
            }
            Ok(())
        })();
        finished.store(true, Ordering::Relaxed);
        res
    });
    outcome?;
    if gone.is_none() {
        let _ = r.link.send(&Line::new("bye").encode());
        // The answer is a courtesy: the link is closed either way.
        let _ = r.next(Duration::from_secs(2));
    }
    // `r` only borrows the link (no drop glue): closing the link ends the session.
    drop(link);

    run.finished_at = rfc3339(OffsetDateTime::now_utc());
    run.interrupted = stop.load(Ordering::Relaxed) || gone.is_some();
    if run.interrupted && run.interrupted_in.is_none() {
        run.interrupted_in = run.plan.phases.last().cloned();
    }
    run.realtime_setup = crate::model::RealtimeSetup::from_steps(steps);
    run.warnings = warnings(&run);
    if let Some(why) = gone {
        run.warnings.insert(
            0,
            format!("{why} in the middle of the run: the results hold the result blocks that arrived complete; the probe runs after it were not measured"),
        );
    }
    run.check_invariants().map_err(|e| BadInput(format!("{spec}: the agent's results do not hold together ({e}); nothing was stored")))?;
    crate::runner::write_final(&output.path, &run)?;
    Ok(run)
}

enum PlanEnd {
    Done(Vec<crate::model::ProbeResult>),
    /// The agent went away: the complete blocks, and why.
    Gone(Vec<crate::model::ProbeResult>, String),
}

/// Read one plan's replies up to its `done`.
#[allow(clippy::too_many_arguments)]
fn one_plan(
    r: &mut Reader,
    id: u64,
    phase: &str,
    planned: Duration,
    stop: &AtomicBool,
    live: &Live,
    board: &LiveBoard,
    steps: &mut Vec<SetupStep>,
) -> anyhow::Result<PlanEnd> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut open: Option<Block> = None;
    let mut stop_sent = false;
    let mut silent_until = Instant::now() + planned + GRACE;
    let ids = id.to_string();
    loop {
        if stop.load(Ordering::Relaxed) && !stop_sent {
            stop_sent = true;
            // A failed write means the agent is gone: the read below says so.
            let _ = r.link.send(&Line::new("stop").with("id", id).encode());
            silent_until = Instant::now() + GRACE;
        }
        let l = match r.next(Duration::from_millis(100))? {
            Got::Line(l) => l,
            Got::Quiet if Instant::now() > silent_until => {
                return Ok(PlanEnd::Gone(results_of(&blocks, phase), format!("the agent said nothing for {} s", GRACE.as_secs())));
            }
            Got::Quiet => continue,
            Got::Gone(why) => return Ok(PlanEnd::Gone(results_of(&blocks, phase), why)),
        };
        let at = r.number;
        let bad = |e: String| r.malformed(&l.encode(), &e);
        if l.kind == "bye" {
            return Ok(PlanEnd::Gone(results_of(&blocks, phase), "the agent ended the session".into()));
        }
        let reannounce = matches!(l.kind.as_str(), "hello" | "probe" | "ready");
        if !reannounce && l.get("id") != Some(ids.as_str()) && l.get("id") != Some("-") {
            return Err(bad(format!("id={} where plan {id} runs", l.get("id").unwrap_or("(none)"))).into());
        }
        silent_until = silent_until.max(Instant::now() + GRACE);
        match (l.kind.as_str(), open.as_mut()) {
            ("ack", None) => {}
            // The announcement again (a serial agent answering `hi` after it had announced itself).
            ("hello" | "probe" | "ready", None) => {}
            ("setup", None) => {
                let mut b = empty_block();
                b.add(&l).map_err(bad)?;
                for st in b.setup {
                    if !steps.iter().any(|x| x.step == st.step && x.outcome == st.outcome) {
                        steps.push(st);
                    }
                }
            }
            ("begin", None) => {
                let v = l.get("variant").filter(|v| *v != "-");
                let now = board.current.lock().map(|c| c.split(" [").next().unwrap_or("").to_string()).unwrap_or_default();
                *board.current.lock().expect("board lock") = match v {
                    Some(v) => format!("{now} [{v}]"),
                    None => now,
                };
                live.samples.store(0, Ordering::Relaxed);
                live.overruns.store(0, Ordering::Relaxed);
            }
            ("progress", _) => {
                live.samples.store(l.num("samples").map_err(bad)?, Ordering::Relaxed);
                live.overruns.store(l.num("overruns").map_err(bad)?, Ordering::Relaxed);
                live.max_ns.fetch_max(l.num("max_ns").map_err(bad)?, Ordering::Relaxed);
            }
            ("result", None) => {
                let b = Block::start(&l).map_err(bad)?;
                if b.n != blocks.len() as u64 {
                    return Err(bad(format!("result n={} where n={} was next", b.n, blocks.len())).into());
                }
                open = Some(b);
            }
            ("setup" | "hist" | "tail" | "sec" | "note", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("a line of result n={} inside block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.add(&l).map_err(bad)?;
            }
            ("end", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("end of n={} closes block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.finish().map_err(bad)?;
                if let Some(e) = &b.error {
                    anyhow::bail!("probe {}, thread {} on the target: {e}", b.probe, b.thread.unwrap_or(0));
                }
                for st in &b.setup {
                    if !steps.iter().any(|x| x.step == st.step && x.outcome == st.outcome) {
                        steps.push(st.clone());
                    }
                }
                blocks.push(open.take().expect("open block"));
            }
            ("done", None) => {
                let n = l.num("results").map_err(bad)?;
                if n != blocks.len() as u64 {
                    return Err(bad(format!("results={n} but {} result blocks arrived", blocks.len())).into());
                }
                if let Some(a) = l.get("allocs").filter(|a| *a != "0") {
                    steps.push(SetupStep::failed("no allocation after start-up", format!("the agent counted {a} heap allocations while measuring")));
                }
                if l.get("status") == Some("failed") {
                    anyhow::bail!("the agent failed the plan: {}", l.get("msg").unwrap_or("no message"));
                }
                return Ok(PlanEnd::Done(results_of(&blocks, phase)));
            }
            (k, Some(b)) => return Err(bad(format!("a {k} line inside result block n={} (line {at})", b.n)).into()),
            (k, None) => return Err(bad(format!("a {k} line outside a result block")).into()),
        }
    }
}

/// A block to collect plan-wide `setup n=-` lines into.
fn empty_block() -> Block {
    let l = Line::new("result")
        .with("n", 0)
        .with("probe", "-")
        .with("variant", "-")
        .with("thread", 0)
        .with("cpu", "-")
        .with("interval_ns", 0)
        .with("samples", 0)
        .with("overruns", 0)
        .with("min_ns", 0)
        .with("max_ns", 0)
        .with("sum", 0)
        .with("sumsq", 0)
        .with("hist", 0)
        .with("tail", 0)
        .with("tail_k", 0)
        .with("worst", 0)
        .with("sec", 0)
        .with("width_s", 1)
        .with("setup", 0);
    Block::start(&l).expect("a well-formed empty block")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    #[test]
    fn host_threads_stay_put_for_an_agent_on_another_system() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let hello = Line::new("hello").with("host", "a-board-elsewhere").with("release", release.trim());
        let before = crate::sys::sched::current_affinity().unwrap();
        let step = place_host_threads(None, &hello, &[0]);
        assert_eq!(step.step, "host reader placement");
        assert_eq!(step.outcome, Outcome::Skipped, "{}", step.detail);
        assert!(step.detail.contains("a-board-elsewhere"), "{}", step.detail);
        assert_eq!(crate::sys::sched::current_affinity().unwrap(), before, "not moved");
    }
}
