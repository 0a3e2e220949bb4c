//! Warnings about a result, as an enum whose `Display` gives the user advice
//! (hyperfine's output/warnings.rs style). Computed from the result model
//! only, so a stored result yields the same warnings when reported later.

use std::fmt;

use crate::model::Run;

/// A `probe` of a warning about one result entry names its variant too
/// (`sem:posix`, [`entry_name`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Warning {
    /// The real-time set-up failed in at least one step.
    NotRealtime { reasons: Vec<String>, here: bool },
    /// Periods were missed. `here`: measured on this host (`rtscope doctor`
    /// audits it); false for a run on a target (an agent).
    Overruns { probe: String, phase: String, overruns: u64, samples: u64, here: bool },
    /// Of those missed periods, `late` started late: their deadline had
    /// passed before the timer loop called its sleep (the result's
    /// `late_starts`). Counted apart, never as wake-ups (issue 64, item 13).
    LateStarts { probe: String, phase: String, late: u64, overruns: u64 },
    /// A target's clock is coarser than what was measured with it: an
    /// interval or the latencies below its resolution (`hello res_ns`); or
    /// the target's tick limits the figure (`tick`, [`TickLimit`]).
    CoarseClock { probe: String, phase: String, resolution_ns: u64, what: String, tick: Option<TickLimit> },
    /// A probe on the target stopped counting; the agent stopped the variant.
    Stalled { detail: String },
    /// A cross-CPU variant whose threads could not be placed on their CPUs
    /// (the agent's result note): its numbers may be a same-CPU hand-off.
    NotPlaced { what: String, note: String },
    /// A `switch` result whose two threads could not be put on one CPU
    /// (the agent's note): they may have run side by side.
    NotASwitch { what: String, note: String },
    /// A variant the agent refused at run time (a call the system did not
    /// accept): not measured, its siblings were. `what` is `probe:variant`,
    /// `detail` the call and errno the agent named.
    Refused { what: String, detail: String },
    /// Run ended by a signal.
    Interrupted { phase: Option<String> },
    /// The file was last written while the run still measured: it was killed.
    Unfinished,
    /// A phase without loads (`idle`) during which other work kept the
    /// measured CPUs busy: `share` of their time (a lower bound), `cpus`.
    BusyIdle { phase: String, cpus: String, share: f64 },
    /// A target that runs on this host (an emulator, an agent started here)
    /// while other work kept the host's CPUs busy: `share` of their time.
    BusyHost { phase: String, share: f64, emulated: bool },
    /// Running under a hypervisor.
    Virtualized,
    /// Running under an instruction-set emulator (QEMU TCG); `by`: the
    /// evidence; `virtual_clock`: its clock counts instructions (`-icount`).
    Emulated { by: String, virtual_clock: bool },
    /// /dev/cpu_dma_latency could not be held.
    NoDmaLatency { detail: String },
    /// --trace-threshold was asked for but tracing could not be set up.
    NoTracing { detail: String },
    /// Events named in --trace-events that this kernel does not have.
    MissingTraceEvents { events: Vec<String> },
    /// A one-way hand-off probe ran under threshold tracing: the events on its
    /// own measured path (the receiver's wake-up and switch-in) cost time.
    TracedHandoff { probe: String },
    /// Call-chain sampling ran beside threshold tracing (`--trace-stacks`), or
    /// was asked for and could not run (`unavailable`).
    StackSampled { hz: u32, unavailable: Option<String> },
    /// Fewer samples than a percentile in the tables needs (10 beyond it).
    TooFewSamples { probe: String, phase: String, percentile: String, samples: u64, needed: u64, rate_hz: f64 },
    /// Enough samples for the tables, but the run is shorter than the
    /// highest percentile in the result (p99.999) needs.
    ShortRun { probe: String, phase: String, percentile: String, seconds: f64, recommended_s: f64 },
}

/// How a target's kernel tick limits a figure (issue 67): its clock is the
/// tick (`hello res_ns` at least `tick_ns`: every figure), or its sleeps
/// wake on the tick (`hello sleep=tick`: the wake-up figures, timer and
/// periodic, whose window ends with a sleep's wake-up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TickLimit {
    Clock { tick_ns: u64 },
    Sleep { tick_ns: Option<u64> },
}

/// Samples a percentile q (in %) needs so that at least 10 samples lie
/// beyond it: 10 / (1 − q/100). Fewer, and the percentile is decided by a
/// handful of the largest samples (p99.99 needs 100 000).
pub(crate) fn samples_needed(q: f64) -> u64 {
    (10.0 / (1.0 - q / 100.0)).round() as u64
}

/// "17 min", "2.5 h", "40 s".
fn human_seconds(s: f64) -> String {
    if s >= 5400.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 90.0 {
        format!("{:.0} min", (s / 60.0).ceil())
    } else {
        format!("{:.0} s", s.ceil())
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NotRealtime { reasons, here } => write!(
                f,
                "not real-time: {}. Latencies include ordinary scheduling delays; {}",
                reasons.join("; "),
                if *here {
                    "run as root or with CAP_SYS_NICE and CAP_IPC_LOCK for a real-time measurement."
                } else {
                    "give the agent on the target what its real-time priority and memory lock need (docs/porting.md)."
                }
            ),
            Warning::Overruns { probe, phase, overruns, samples, here } => {
                let pct = 100.0 * crate::stats::miss_ratio(*overruns, overruns.saturating_add(*samples));
                write!(
                    f,
                    "{probe} ({phase}): {overruns} periods missed ({pct:.2} % of all periods). The system could not keep this interval; the worst case is at least one full period late. Use a longer interval or find the cause {}.",
                    if *here { "(rtscope doctor)" } else { "on the target (its clock, its load, what runs above the probe)" }
                )
            }
            Warning::LateStarts { probe, phase, late, overruns } => write!(
                f,
                "{probe} ({phase}): {late} {} late (the deadline had passed before the sleep was called: the loop had no time to sleep). {} not wake-ups: counted apart among the {overruns} missed periods, never in the distribution.",
                if *late == 1 { "period started" } else { "periods started" },
                if *late == 1 { "It is" } else { "They are" }
            ),
            Warning::CoarseClock { probe, phase, resolution_ns, tick: Some(TickLimit::Clock { tick_ns }), .. } => write!(
                f,
                "{probe} ({phase}): tick-limited: the target's clock is its kernel tick (resolution {} and a {} tick: hello res_ns, tick_ns): every figure comes in whole ticks, so latencies and missed periods reflect the tick, not the system. {}",
                crate::units::fmt_ns(*resolution_ns),
                crate::units::fmt_ns(*tick_ns),
                crate::agent_host::session::coarse_clock_remedy(*resolution_ns)
            ),
            Warning::CoarseClock { probe, phase, tick: Some(TickLimit::Sleep { tick_ns }), .. } => write!(
                f,
                "{probe} ({phase}): tick-limited: the target's sleeps wake on its kernel tick{} (hello sleep=tick): a wake-up waits for the first tick after its deadline, so these latencies are mostly the distance to that tick, not the system's wake-up latency; the hand-off figures are not limited. Give the agent's port a one-shot timer for its sleeps (docs/porting.md, RTSCOPE_PORT_CLOCK), or compare only with runs on the same tick.",
                tick_ns.map(|t| format!(" (every {})", crate::units::fmt_ns(t))).unwrap_or_default()
            ),
            Warning::CoarseClock { probe, phase, resolution_ns, what, tick: None } => write!(
                f,
                "{probe} ({phase}): the target's clock resolution is {} (clock_getres), coarser than {what}: periods and wake-ups come in its ticks, so latencies and missed periods reflect the tick, not the system. {}",
                crate::units::fmt_ns(*resolution_ns),
                crate::agent_host::session::coarse_clock_remedy(*resolution_ns)
            ),
            Warning::Stalled { detail } => write!(
                f,
                "a probe on the target stalled ({detail}): it stopped counting, so the agent stopped it and kept what it had measured. A wake-up lost by the target's system, or a thread starved by a higher-priority one; the results end there."
            ),
            Warning::NotPlaced { what, note } => write!(f, "{what}: {note}; its results are not a cross-CPU measurement."),
            Warning::NotASwitch { what, note } => write!(f, "{what}: {note}; its figures are not task-switch times."),
            Warning::Refused { what, detail } => write!(
                f,
                "{what} was not measured: the target refused it ({detail}); the probe's other variants were. The system lacks what this variant needs (docs/porting.md)."
            ),
            Warning::Interrupted { phase } => write!(
                f,
                "the run was interrupted{}; the results hold only the samples taken before that.",
                phase.as_ref().map(|p| format!(" during phase '{p}'")).unwrap_or_default()
            ),
            Warning::Unfinished => write!(
                f,
                "the run did not finish: its result file was last written while it still measured (the process was killed or crashed), so it holds only the probe runs written before that. Rerun for a complete result."
            ),
            Warning::BusyIdle { .. } | Warning::BusyHost { .. } | Warning::Virtualized | Warning::Emulated { .. } => self.where_it_ran(f),
            Warning::NoDmaLatency { detail } => write!(
                f,
                "could not hold /dev/cpu_dma_latency at 0 ({detail}); deep CPU idle states may add wake-up latency."
            ),
            Warning::NoTracing { detail } => write!(f, "no trace snapshots: {detail}."),
            Warning::MissingTraceEvents { events } => write!(f, "--trace-events: this kernel has no {}: not traced, so the snapshots cannot name what they show.", events.join(", ")),
            Warning::StackSampled { hz, unavailable: None } => write!(
                f,
                "measured with kernel call-chain sampling at {hz} Hz on the measured CPUs (--trace-stacks): each sample is a timer interrupt there; compare only with runs sampled the same way (bench/stack-cost measures the difference; --trace-stacks 0 turns it off)."
            ),
            Warning::StackSampled { unavailable: Some(why), .. } => write!(f, "no code paths in the trace snapshots: {why}."),
            Warning::TracedHandoff { probe } => write!(
                f,
                "{probe}: measured under threshold tracing, whose scheduler events lie on a hand-off's own path (the receiver's wake-up and switch-in: dropped by the kernel's filters, but each still costs), so its samples are longer than untraced ones; compare it only with runs traced the same way (bench/trace-cost --probe {probe} measures the difference)."
            ),
            Warning::TooFewSamples { probe, phase, percentile, samples, needed, rate_hz } => {
                write!(
                    f,
                    "{probe} ({phase}): {samples} samples are too few for {percentile} (it needs {needed} to have 10 samples beyond it); treat it as a rough value."
                )?;
                if *rate_hz > 0.0 {
                    write!(f, " At {rate_hz:.0} samples/s, measure for at least {} (--duration).", human_seconds(*needed as f64 / rate_hz))?;
                }
                Ok(())
            }
            Warning::ShortRun { probe, phase, percentile, seconds, recommended_s } => write!(
                f,
                "{probe} ({phase}): the run measured {} where {} are recommended for {percentile} at this rate; rare events (SMIs, periodic housekeeping) may not have occurred yet. Measure longer before claiming {percentile}.",
                human_seconds(*seconds),
                human_seconds(*recommended_s)
            ),
        }
    }
}

impl Warning {
    /// What ran beside the measurement, and on what: the idle check's two
    /// warnings ([`busy_idle`]), a hypervisor, an emulator.
    fn where_it_ran(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::BusyIdle { phase, cpus, share } => write!(
                f,
                "phase {phase} runs no load, but other work kept the measured CPUs ({cpus}) at least {:.0} % busy (per-CPU busy time, rtscope's own threads taken off): its figures are not idle figures. Stop the other work, or keep it off the measured CPUs, before comparing phases.",
                share * 100.0
            ),
            Warning::BusyHost { phase, share, emulated } => write!(
                f,
                "phase {phase}: the target runs on this host, and other work than rtscope and the target kept the host's CPUs about {:.0} % busy beside it (per-CPU busy time; rtscope's and the target's processes taken off): {} Stop the other work on the host before measuring, or compare only against runs beside the same work.",
                share * 100.0,
                if *emulated {
                    "the emulated target's clock, timers and interrupts run in the CPU time the emulator gets, so its figures include that contention, and a phase it ran idle was not idle."
                } else {
                    "the target's threads (a simulator, an agent started here) shared the CPUs with it, so its figures include that contention, and a phase it ran idle was not idle."
                }
            ),
            Warning::Virtualized => write!(
                f,
                "running under a hypervisor: latencies include the host's scheduling of this VM; compare only against results from the same VM."
            ),
            Warning::Emulated { by, virtual_clock: false } => write!(
                f,
                "emulated ({by}): every instruction, timer and interrupt is the emulator's, so these figures rank kernels and settings on this emulator; they are not the latencies of a board. Compare only against results emulated the same way; measure a board with the agent on the board."
            ),
            Warning::Emulated { by, virtual_clock: true } => write!(
                f,
                "emulated ({by}) on a virtual clock (QEMU -icount: the guest's time counts its instructions): every figure is the length of the code path between two events in instructions, not the time a board takes, and the host's load does not change it; they compare kernels and settings on this emulator, not latencies. Compare only against results emulated the same way; measure a board with the agent on the board. The silence limit was extended: a plan that sent no progress was waited for up to {} × its time + --target-silence before the agent counted as gone, as the guest's time is not wall time and a probe busy at real-time priority can keep the agent from reporting for a whole plan.",
                crate::agent_host::VIRTUAL_SLOWDOWN
            ),
            _ => Ok(()),
        }
    }
}

/// Every warning that applies to `run`.
pub(crate) fn for_run(run: &Run) -> Vec<Warning> {
    let mut out = Vec::new();
    let failed: Vec<String> = run
        .realtime_setup
        .steps
        .iter()
        .filter(|s| {
            s.outcome == crate::model::Outcome::Failed
                && !["cpu_dma_latency", "tracing", "stall watch"].contains(&s.step.as_str())
                && s.refused_variant().is_none()
        })
        .map(|s| format!("{} failed ({})", s.step, s.detail))
        .collect();
    if !failed.is_empty() {
        out.push(Warning::NotRealtime { reasons: failed, here: run.agent.is_none() });
    } else if run.plan.policy == "other" {
        out.push(Warning::NotRealtime { reasons: vec!["running as SCHED_OTHER because --policy other was asked".into()], here: run.agent.is_none() });
    }
    if let Some(s) = run.realtime_setup.steps.iter().find(|s| s.step == "cpu_dma_latency" && s.outcome == crate::model::Outcome::Failed) {
        out.push(Warning::NoDmaLatency { detail: s.detail.clone() });
    }
    // A rate search's missed periods are its measurement (maxrate's table
    // shows them), not a defect of the run.
    let rate_search = |p: &str| crate::measure::is(p, |i| i.rate_search);
    for r in run.results.iter().filter(|r| r.thread.is_none() && r.overruns > 0 && !rate_search(&r.probe)) {
        out.push(Warning::Overruns { probe: entry_name(r), phase: r.phase.clone(), overruns: r.overruns, samples: r.samples, here: run.agent.is_none() });
        if let Some(late) = r.extras.late_starts.filter(|&n| n > 0) {
            out.push(Warning::LateStarts { probe: entry_name(r), phase: r.phase.clone(), late, overruns: r.overruns });
        }
    }
    out.extend(target_clock(run));
    out.extend(not_placed(run));
    for s in &run.realtime_setup.steps {
        if let Some(what) = s.refused_variant() {
            out.push(Warning::Refused { what: what.to_string(), detail: s.detail.clone() });
        }
    }
    out.extend(trace_warnings(run));
    out.extend(sample_warnings(run));
    out.extend(busy_idle(run));
    if run.host.emulated {
        let virtual_clock = run.agent.as_ref().is_some_and(|a| a.transport == "exec" && crate::model::exec_virtual_clock(&a.target));
        out.push(Warning::Emulated { by: run.host.emulated_by.clone(), virtual_clock });
    } else if run.host.virtualized {
        out.push(Warning::Virtualized);
    }
    if run.interrupted {
        out.push(Warning::Interrupted { phase: run.interrupted_in.clone() });
    }
    if !run.complete {
        out.push(Warning::Unfinished);
    }
    out
}

/// How a warning names a result entry: its probe, and its variant when it
/// has one (`sem:posix`, as `--probe` takes it), so that the warnings of two
/// variants of a probe in one phase tell which is which.
fn entry_name(r: &crate::model::ProbeResult) -> String {
    match &r.variant {
        Some(v) => format!("{}:{v}", r.probe),
        None => r.probe.clone(),
    }
}

/// The agent's note on a cross-CPU variant it could not place (issue 48,
/// item 6): once per probe, phase and variant, from its merged or first
/// thread's entry.
fn not_placed(run: &Run) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut placed: Vec<(String, String, String)> = Vec::new();
    let placement = |n: &str| n.starts_with("cross-CPU not placed") || n.starts_with("not a switch");
    for r in run.results.iter().filter(|r| r.extras.note.as_deref().is_some_and(placement)) {
        let key = (r.probe.clone(), r.phase.clone(), r.variant.clone().unwrap_or_default());
        if placed.contains(&key) {
            continue;
        }
        let what = format!("{} ({})", entry_name(r), key.1);
        let note = r.extras.note.clone().unwrap_or_default();
        out.push(if note.starts_with("not a switch") { Warning::NotASwitch { what, note } } else { Warning::NotPlaced { what, note } });
        placed.push(key);
    }
    out
}

/// What tracing says of itself: a stall, tracing that failed, stack
/// sampling's rate, and the hand-off probes whose windows it cannot split.
fn trace_warnings(run: &Run) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut stalls = run.realtime_setup.steps.iter().filter(|s| s.step == "stall watch" && s.outcome == crate::model::Outcome::Failed);
    if let Some(s) = stalls.next() {
        out.push(Warning::Stalled { detail: s.detail.clone() });
    }
    if let Some(s) = run.realtime_setup.steps.iter().find(|s| s.step == "tracing" && s.outcome == crate::model::Outcome::Failed) {
        out.push(Warning::NoTracing { detail: s.detail.clone() });
    }
    if let Some(t) = run.trace.as_ref().filter(|t| !t.missing_events.is_empty()) {
        out.push(Warning::MissingTraceEvents { events: t.missing_events.clone() });
    }
    if let (Some(hz), Some(t)) = (run.plan.trace.as_ref().and_then(|p| p.stack_hz), run.trace.as_ref()) {
        out.push(Warning::StackSampled { hz, unavailable: t.stacks.as_ref().and_then(|s| s.unavailable.clone()) });
    }
    if run.trace.is_some() {
        let mut seen: Vec<&str> = Vec::new();
        for r in run.results.iter().filter(|r| crate::measure::is(&r.probe, |i| i.traced == crate::measure::Traced::Handoff)) {
            if !seen.contains(&r.probe.as_str()) {
                seen.push(&r.probe);
                out.push(Warning::TracedHandoff { probe: r.probe.clone() });
            }
        }
    }
    out
}

/// Too few samples for the tail percentiles, or too short a run for p99.999.
/// A throughput entry's samples are its intervals (Thread-Metric counts
/// ops): its tail percentiles are not what it reports, so it has neither.
fn sample_warnings(run: &Run) -> Vec<Warning> {
    let mut out = Vec::new();
    for r in run.results.iter().filter(|r| r.thread.is_none() && r.samples > 0 && r.extras.throughput.is_none()) {
        let rate = crate::analysis::deadline::measured_rate_hz(r);
        let needed = samples_needed(99.99);
        if r.samples < needed {
            out.push(Warning::TooFewSamples {
                probe: entry_name(r),
                phase: r.phase.clone(),
                percentile: "p99.99".into(),
                samples: r.samples,
                needed,
                rate_hz: rate,
            });
        } else if rate > 0.0 && (r.samples as f64) < samples_needed(99.999) as f64 {
            out.push(Warning::ShortRun {
                probe: entry_name(r),
                phase: r.phase.clone(),
                percentile: "p99.999".into(),
                seconds: r.samples as f64 / rate,
                recommended_s: samples_needed(99.999) as f64 / rate,
            });
        }
    }
    out
}

/// A share of the measured CPUs' time other work must take in a phase
/// without loads before the phase is said not to be idle.
pub(crate) const BUSY_IDLE_SHARE: f64 = 0.10;

/// The idle check of one phase (issue 49, item 2): the share of the CPUs
/// that matter which other work kept busy. In report JSON as a run's
/// `other_work`.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct OtherWork {
    pub(crate) phase: String,
    /// From 0 to 1.
    pub(crate) share: f64,
    /// What was checked: `cpus 0-1` (a native phase without loads: the
    /// measured CPUs) or `host` (this host beside a target that runs on it).
    pub(crate) of: String,
    /// Whether the share can move the figures and is at least
    /// [`BUSY_IDLE_SHARE`]: the run warns. An emulator on a virtual clock
    /// (`--icount`) is never warned about: the host's load stretches its
    /// wall time, not its latencies.
    pub(crate) warned: bool,
}

/// Every phase the idle check covers: a native run's phases without loads
/// and without a load started outside rtscope (`--phase-name`) (their measured CPUs: those the phase's per-thread entries ran on, else
/// every CPU in the phase's busy times), and every phase of a target that
/// ran on this host (loaded or not: the host's other work is none of the
/// target's loads). A target elsewhere, or a result written before the
/// busy times were kept: none.
pub(crate) fn other_work(run: &Run) -> Vec<OtherWork> {
    if let Some(agent) = run.agent.as_ref() {
        let virtual_clock = run.host.emulated && crate::model::exec_virtual_clock(&agent.target);
        return agent
            .host_beside
            .iter()
            .filter_map(|b| {
                let share = b.others_share()?;
                Some(OtherWork { phase: b.phase.clone(), share, of: "host".into(), warned: !virtual_clock && share >= BUSY_IDLE_SHARE })
            })
            .collect();
    }
    let mut out = Vec::new();
    for p in run.phases.iter().filter(|p| p.loads.is_empty() && !p.outside_load && p.complete) {
        let mut cpus: Vec<usize> = run.results.iter().filter(|r| r.phase == p.name && r.thread.is_some()).filter_map(|r| r.cpu).collect();
        if cpus.is_empty() {
            cpus = p.system.cpu_busy.iter().map(|c| c.cpu).collect();
        }
        cpus.sort_unstable();
        cpus.dedup();
        if let Some(share) = p.system.others_busy_share(&cpus) {
            out.push(OtherWork { phase: p.name.clone(), share, of: format!("cpus {}", crate::units::cpu_list_str(&cpus)), warned: share >= BUSY_IDLE_SHARE });
        }
    }
    out
}

/// The phases [`other_work`] warns about: a native phase without loads
/// whose measured CPUs other work kept busy, a target's phase whose host
/// other work kept busy beside it (stress-ng beside an emulated guest).
pub(crate) fn busy_idle(run: &Run) -> Vec<Warning> {
    other_work(run)
        .into_iter()
        .filter(|o| o.warned)
        .map(|o| match o.of.strip_prefix("cpus ") {
            Some(cpus) => Warning::BusyIdle { phase: o.phase, cpus: cpus.to_string(), share: o.share },
            None => Warning::BusyHost { phase: o.phase, share: o.share, emulated: run.host.emulated },
        })
        .collect()
}

/// A target whose clock is coarser than 1 µs (an RTOS's tick, 10 ms on a
/// default NuttX build): every merged entry whose interval or largest
/// latency is below the resolution is named (issue 48). A target whose
/// clock is its tick (`hello tick_ns` at most `res_ns`): every merged
/// entry; whose sleeps wake on the tick (`hello sleep=tick`): every
/// wake-up entry (issue 67). One warning per entry, the tick's first.
fn target_clock(run: &Run) -> Vec<Warning> {
    let Some(a) = run.agent.as_ref() else {
        return Vec::new();
    };
    let res = a.clock_resolution_ns.0;
    let tick_ns = a.tick_ns.map(|t| t.0).filter(|t| *t > 0);
    let tick_clock = tick_ns.filter(|t| res >= *t).map(|tick_ns| TickLimit::Clock { tick_ns });
    let tick_sleep = (a.sleep == "tick").then_some(TickLimit::Sleep { tick_ns });
    let wakeup = |p: &str| crate::measure::is(p, |i| i.traced == crate::measure::Traced::TimerMethod);
    let fmt = crate::units::fmt_ns;
    run.results
        .iter()
        .filter(|r| r.thread.is_none())
        .filter_map(|r| {
            let (what, tick) = if tick_clock.is_some() {
                ("every figure".to_string(), tick_clock)
            } else if res > 1_000 && r.interval_ns.0 > 0 && r.interval_ns.0 < res {
                (format!("its interval {}", fmt(r.interval_ns.0)), None)
            } else if res > 1_000 && r.samples > 0 && r.max_ns.0 < res {
                (format!("every latency it measured (max {})", fmt(r.max_ns.0)), None)
            } else if tick_sleep.is_some() && wakeup(&r.probe) {
                ("its wake-ups".to_string(), tick_sleep)
            } else {
                return None;
            };
            Some(Warning::CoarseClock { probe: entry_name(r), phase: r.phase.clone(), resolution_ns: res, what, tick })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_needed_for_the_table_percentiles() {
        assert_eq!(samples_needed(99.0), 1_000);
        assert_eq!(samples_needed(99.99), 100_000);
        assert_eq!(samples_needed(99.999), 1_000_000);
    }

    #[test]
    fn advice_names_the_time_to_measure() {
        let w = Warning::TooFewSamples {
            probe: "timer".into(),
            phase: "idle".into(),
            percentile: "p99.99".into(),
            samples: 30_000,
            needed: 100_000,
            rate_hz: 1000.0,
        };
        let s = w.to_string();
        assert!(s.contains("30000 samples are too few for p99.99"), "{s}");
        assert!(s.contains("at least 2 min"), "{s}");
        let w = Warning::ShortRun { probe: "timer".into(), phase: "idle".into(), percentile: "p99.999".into(), seconds: 200.0, recommended_s: 1000.0 };
        assert!(w.to_string().contains("measured 4 min where 17 min are recommended"), "{w}");
    }
}
