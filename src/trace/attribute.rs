//! Attribution: from the events of one CPU, what held that CPU between a sample's due time
//! and its wake-up.
//!
//! A pure function over parsed events ([`attribute`]). The window is cut at every event;
//! each piece belongs to the innermost open interrupt context (hard IRQ, x86 vector such as
//! `local_timer`, softirq) or else to the task on the CPU — which is the task shown on the
//! next event's line, since tasks change only at `sched_switch` (the measuring thread's own
//! switch-in is filtered out in the kernel: the time before its first line stays with the
//! task that held the CPU, as a woken thread runs straight to its clock read). Time the idle task "holds"
//! while a woken real-time task waits is explained by nothing the kernel traced: it is
//! reported as "unexplained: hypervisor / SMI / hardware" (a vCPU not scheduled by the host,
//! a system management interrupt, a deep C-state exit).

use super::parse::{Event, EventKind};
pub(crate) use crate::model::trace::{CodePath, Culprit, TraceWindow, WindowStacks};
use crate::model::Nanos;

/// Name of the culprit that stands for time no traced event explains.
pub(crate) const UNEXPLAINED: &str = "unexplained: hypervisor / SMI / hardware";

/// Name of the culprit that stands for the part of a window the trace does not cover.
pub(crate) const UNTRACED: &str = "not traced (tracing was off or the buffer had wrapped)";

/// Name of the culprit that stands for time a virtual CPU did not run (kind `host`).
pub(crate) const HOST: &str = "host / not running";

/// The same on bare metal: the CPU ran no kernel or user code the sampling clock could
/// interrupt, with interrupts on (a system management interrupt, the hardware).
pub(crate) const NOT_RUNNING: &str = "not running (SMI / hardware)";

/// Time on a VM with no sample and no event that the evidence cannot give to the host or
/// to the task (kind `host`): the gap ended in kernel code that does not turn interrupts
/// on, and the CPU's steal time did not grow (a host with no steal clock, e.g. QEMU TCG).
pub(crate) const HOST_OR_OFF: &str = "not running (host, or interrupts off)";

/// Whether a window's largest part is [`HOST_OR_OFF`] time: held by time that is not
/// surely the host's (`TraceWindow::host_held` counts it with the host's).
pub(crate) fn host_unsure(w: &TraceWindow) -> bool {
    w.culprits.first().is_some_and(|c| c.kind == "host" && c.name == HOST_OR_OFF)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Task {
        comm: String,
        pid: u32,
    },
    Irq {
        irq: u32,
        name: String,
    },
    Vector {
        name: String,
    },
    Softirq {
        vec: u32,
        name: String,
    },
    /// The idle task in idle state `state` (power/cpu_idle).
    Idle {
        state: u32,
    },
    Untraced,
    /// The CPU did not run (no sample, no event while a task held it; see [`not_running`]).
    Host,
    /// On a VM, the CPU did not run or ran with interrupts off: the evidence cannot tell
    /// (see [`not_running`]); charged to no task.
    HostOrOff,
}

impl Owner {
    /// The idle task (in a known state or not): the sampling clock does not tick there.
    fn is_idle(&self) -> bool {
        matches!(self, Owner::Idle { .. } | Owner::Task { pid: 0, .. })
    }
}

/// One cpuidle state of the CPU, from sysfs (`cpuidle/stateN/name` and `latency`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdleState {
    pub(crate) name: String,
    pub(crate) exit_latency_ns: u64,
}

/// What the attribution knows besides the events: the measuring thread, when
/// tracing was switched on, the CPU's idle states and the call-chain samples.
#[derive(Debug, Default)]
pub(crate) struct Context<'a> {
    pub(crate) self_pid: Option<u32>,
    pub(crate) traced_since: u64,
    /// Idle states by index (`power/cpu_idle`'s `state=`); empty: idle is unexplained.
    pub(crate) idle_states: &'a [IdleState],
    /// Samples of the CPU in time order (from one period before the window) and the period.
    pub(crate) stacks: Option<(&'a [super::stacks::Sample], u64)>,
    /// The CPU's steal time over the window (see `TraceWindow::steal_ns`), when known.
    pub(crate) steal_ns: Option<u64>,
    /// The host is a virtual machine (`host.virtualized`): time not running is the host's.
    pub(crate) virtualized: bool,
    /// The other sampled CPUs' samples around the window, per CPU in time order
    /// (`Sampling::witness_samples`); empty without sampling or on one CPU.
    pub(crate) witnesses: &'a [Vec<super::stacks::Witnessed>],
}

/// Attributes `[start_ns, end_ns]` on one CPU. `events` are that CPU's events in time
/// order (earlier ones set the state at `start_ns`); `self_pid` is the measuring thread;
/// `traced_since` is when tracing was last switched on — the window before it, or before
/// the oldest event in the buffer, is charged to `untraced`, never guessed.
#[cfg(test)]
pub(crate) fn attribute(events: &[Event], cpu: usize, start_ns: u64, end_ns: u64, self_pid: Option<u32>, traced_since: u64) -> TraceWindow {
    attribute_in(events, cpu, start_ns, end_ns, &Context { self_pid, traced_since, ..Default::default() })
}

/// [`attribute`] with idle states (the idle task's time in a known state is
/// charged to that state) and call-chain samples (each sample's code path goes
/// under the culprit that held the CPU at its time; gaps are listed).
pub(crate) fn attribute_in(events: &[Event], cpu: usize, start_ns: u64, end_ns: u64, ctx: &Context) -> TraceWindow {
    let self_pid = ctx.self_pid;
    let end_ns = end_ns.max(start_ns);
    let traced_from = events.first().map_or(u64::MAX, |e| e.ts_ns.max(ctx.traced_since));
    let complete = traced_from <= start_ns;
    let t0 = traced_from.clamp(start_ns, end_ns);
    let mut st = CpuState::default();

    // State where the traced part of the window starts.
    let first_in = events.partition_point(|e| e.ts_ns < t0);
    for e in &events[..first_in] {
        apply(e, cpu, self_pid, &mut st);
    }

    let mut charges = Charges::default();
    charges.add(Owner::Untraced, start_ns, t0);
    let mut t = t0;
    let mut inside = 0u32;
    let mut wakeup_after_ns = None;
    let idle_known = |state: Option<u32>| state.filter(|s| (*s as usize) < ctx.idle_states.len());
    let holder = |(comm, pid): &(String, u32), idle: Option<u32>| match idle_known(idle) {
        Some(state) if *pid == 0 => Owner::Idle { state },
        _ => Owner::Task { comm: comm.clone(), pid: *pid },
    };
    for e in events[first_in..].iter().take_while(|e| e.ts_ns <= end_ns) {
        inside += 1;
        // Between the previous cut and this event, the task on the CPU is this line's task —
        // except on the measuring thread's first line after another task held the CPU: its
        // switch-in is filtered out in the kernel, and a woken thread runs straight to its
        // clock read (the window's end), so the time before is the last holder's.
        let owner = match (st.stack.last(), idle_known(st.idle)) {
            (Some(o), _) => o.clone(),
            (None, Some(state)) if e.pid == 0 => Owner::Idle { state },
            (None, idle) => match &st.current {
                Some(cur) if Some(e.pid) == self_pid && cur.1 != e.pid => holder(cur, idle),
                _ => Owner::Task { comm: e.comm.clone(), pid: e.pid },
            },
        };
        charges.add(owner, t, e.ts_ns);
        t = e.ts_ns.max(t);
        if let EventKind::Wakeup { pid, .. } = &e.kind {
            if Some(*pid) == self_pid && wakeup_after_ns.is_none() {
                wakeup_after_ns = Some(Nanos(e.ts_ns.saturating_sub(start_ns)));
            }
        }
        apply(e, cpu, self_pid, &mut st);
    }
    let tail_owner = st.stack.last().cloned().or_else(|| st.current.as_ref().map(|cur| holder(cur, st.idle)));
    charges.add(tail_owner.unwrap_or(Owner::Untraced), t, end_ns);

    let mut gaps = Vec::new();
    if let Some((samples, period_ns)) = ctx.stacks {
        let times: Vec<u64> = events.iter().map(|e| e.ts_ns).filter(|t| (start_ns..=end_ns).contains(t)).collect();
        let host = Host { steal_ns: ctx.steal_ns, virtualized: ctx.virtualized, witnesses: ctx.witnesses, idle_states: ctx.idle_states };
        gaps = not_running(&mut charges, samples, period_ns, &times, (start_ns, end_ns), &host);
    }
    let tasks = Tasks { comm_of: task_names(events), prio_of: st.prio_of, self_pid, idle_states: ctx.idle_states, virtualized: ctx.virtualized };
    let mut culprits = culprits(&charges.acc, &tasks);
    let mut stacks = None;
    if let Some((samples, period_ns)) = ctx.stacks {
        let mut s = add_paths(&mut culprits, &charges, &tasks, samples, period_ns, (start_ns, end_ns));
        s.gaps = gaps;
        stacks = Some(s);
    }
    let mut w = TraceWindow::new(cpu, (start_ns, end_ns), inside, complete, wakeup_after_ns, culprits);
    w.stacks = stacks;
    w.steal_ns = ctx.steal_ns.map(Nanos);
    w
}

/// The gaps of a window's samples, each judged by what held the CPU in it, and the time
/// the CPU did not run taken off the tasks and given to [`Owner::Host`].
///
/// The sampling clock ticks while the CPU runs anything but the idle task, so a gap
/// (`stacks::gaps`) means, in its stretches with no trace event either:
/// - idle, when the idle task held any of it in a halting state (the clock does not tick
///   in idle): not a gap at all, dropped; a polling state (`POLL`) runs code and ticks,
///   so a gap there is judged like a task's (haltpoll guests poll before they halt: the
///   host stopping a polling vCPU read `idle in POLL 6691us`, 1 of 26 samples, steal
///   +10 ms, before);
/// - the CPU not running, when its steal time grew over the window (the hypervisor ran
///   something else while the vCPU was runnable), or the sample that ended the gap
///   interrupted user code (user code runs with interrupts on: the clock would have
///   fired on time in it): those stretches are the host's, not the task's;
/// - interrupts off, the task's own time, when the sample that ended the gap is where
///   the kernel turns interrupts back on ([`irq_enable_site`]: a held-off clock fires
///   right after the instruction that enables them), or on bare metal;
/// - otherwise, on a VM: the host stopped the vCPU in kernel code that ran with
///   interrupts on, or interrupts were off and came back on somewhere the site list
///   does not know — the evidence cannot tell (a host without a steal clock, such as
///   QEMU's TCG, shows no steal): [`Owner::HostOrOff`], charged to no task (a hard
///   interrupt handler, which runs with interrupts off, keeps its time).
///
/// Before those rules, on a VM: the part of a stretch that a busy other vCPU saw as the
/// host's ([`witnessed`]) is the host's whatever ended this CPU's gap — a stop of the
/// whole VM that landed while this CPU had interrupts off ends at the site that turned
/// them back on, and only the part after the VM ran again is the task's.
fn not_running(
    charges: &mut Charges,
    samples: &[super::stacks::Sample],
    period_ns: u64,
    event_times: &[u64],
    (start_ns, end_ns): (u64, u64),
    host: &Host<'_>,
) -> Vec<crate::model::trace::SampleGap> {
    let Host { steal_ns, virtualized, witnesses, idle_states } = *host;
    let mut out = Vec::new();
    for (mut g, (due, came)) in super::stacks::gaps(samples, period_ns, start_ns, end_ns) {
        let (from, to) = (due.max(start_ns), came.min(end_ns));
        let halting = |c: &Charges, a: u64, b: u64| c.pieces.iter().any(|p| p.2.is_idle() && !polling(&p.2, idle_states) && p.0 < b && p.1 > a);
        // The stretches of the gap with no event either, each at least a gap long, and
        // none in a halting idle state.
        let mut cuts: Vec<u64> = event_times.iter().copied().filter(|t| *t > from && *t < to).collect();
        cuts.insert(0, from);
        cuts.push(to);
        let mut quiet: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| b - a >= super::stacks::GAP_MIN_NS).collect();
        quiet.retain(|&(a, b)| !halting(charges, a, b));
        if quiet.is_empty() && halting(charges, from, to) {
            continue;
        }
        let user_code = g.ended_by.is_empty();
        if virtualized && !quiet.is_empty() {
            let (host_ns, rest) = charge_witnessed(charges, &quiet, &witnessed(witnesses, period_ns, from, to));
            quiet = rest;
            if host_ns > 0 {
                g.not_running = true;
                g.witnessed_ns = Some(Nanos(host_ns));
            }
        }
        if quiet.is_empty() {
            out.push(g);
            continue;
        }
        if steal_ns.is_some_and(|s| s > 0) || user_code {
            g.not_running = true;
            for (a, b) in quiet {
                charges.recharge(a, b, &Owner::Host, |_| true);
            }
        } else if virtualized && (super::stacks::interrupted_user_mode(&g.ended_by) || !g.ended_by.first().is_some_and(|leaf| irq_enable_site(leaf))) {
            g.not_running = true;
            g.maybe_interrupts_off = true;
            for (a, b) in quiet {
                charges.recharge(a, b, &Owner::HostOrOff, |o| !matches!(o, Owner::Irq { .. } | Owner::Vector { .. }));
            }
        }
        out.push(g);
    }
    out
}

/// Charges the parts of the `quiet` stretches that `seen` (sorted, disjoint) covers to the
/// host; returns how long that was and what is left of the stretches (each piece at
/// least a gap long), in time order.
fn charge_witnessed(charges: &mut Charges, quiet: &[(u64, u64)], seen: &[(u64, u64)]) -> (u64, Vec<(u64, u64)>) {
    let mut rest = Vec::new();
    let mut host_ns = 0;
    let mut keep = |a: u64, b: u64| {
        if b > a && b - a >= super::stacks::GAP_MIN_NS {
            rest.push((a, b));
        }
    };
    for &(a, b) in quiet {
        let mut at = a;
        for &(c, d) in seen {
            let (x, y) = (c.max(at), d.min(b));
            if y > x {
                charges.recharge(x, y, &Owner::Host, |_| true);
                host_ns += y - x;
                keep(at, x);
                at = y;
            }
        }
        keep(at, b);
    }
    (host_ns, rest)
}

/// What [`not_running`] knows of the host: the CPU's steal over the window, whether the
/// host is a VM, and the other vCPUs' samples.
#[derive(Clone, Copy)]
struct Host<'a> {
    steal_ns: Option<u64>,
    virtualized: bool,
    witnesses: &'a [Vec<super::stacks::Witnessed>],
    /// The CPU's idle states ([`Context::idle_states`]): a polling state runs code.
    idle_states: &'a [IdleState],
}

/// Whether idle time in `state` is a polling loop (cpuidle's `POLL`): the CPU runs the idle
/// task's loop with interrupts on, so the sampling clock ticks in it and a timer due in it
/// fires at once (exit latency 0). A gap there is no idle state's: the CPU did not run.
fn polling(owner: &Owner, states: &[IdleState]) -> bool {
    matches!(owner, Owner::Idle { state } if states.get(*state as usize).is_some_and(|s| s.name == "POLL"))
}

/// Samples a witness must have taken in the [`BUSY_PERIODS`] periods before its gap to
/// count as busy: a CPU that idles takes no sample, so an idle witness's quiet says
/// nothing about the host.
const BUSY_SAMPLES: usize = 8;
const BUSY_PERIODS: u64 = 10;

/// The stretches of `[from, to]` (time order, disjoint) in which some other vCPU was
/// busy and did not run: its samples stop and resume around the stretch, the task it
/// ran is the same on both sides (no switch, so no idle in between), it took
/// [`BUSY_SAMPLES`] in the [`BUSY_PERIODS`] periods before, and the sample that ended
/// its gap interrupted user code, where the clock would have fired on time had the
/// vCPU run. A host that stops the whole VM (QEMU paused, a host that deschedules
/// every vCPU) stops every busy vCPU at once, so such a stretch is the host's on this
/// CPU too, whatever its own gap ended in.
fn witnessed(witnesses: &[Vec<super::stacks::Witnessed>], period_ns: u64, from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for w in witnesses {
        for (k, pair) in w.windows(2).enumerate() {
            let (x, y) = (pair[0], pair[1]);
            let quiet_from = x.time_ns + period_ns;
            if y.time_ns < quiet_from + super::stacks::GAP_MIN_NS || !y.user || x.tid != y.tid || x.tid == 0 {
                continue;
            }
            let since = x.time_ns.saturating_sub(BUSY_PERIODS * period_ns);
            let before = w[..=k].iter().rev().take_while(|s| s.time_ns >= since).count();
            let (a, b) = (quiet_from.max(from), y.time_ns.min(to));
            if before >= BUSY_SAMPLES && b > a {
                spans.push((a, b));
            }
        }
    }
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Whether a sample's leaf frame is where the kernel turns interrupts back on: the
/// unlock-and-enable helpers (`_raw_spin_unlock_irq`, `…_irqrestore`), the enable and
/// restore primitives when they are not inlined, and the paths that enable them inline
/// (the end of a context switch, softirq processing, the idle loop's halt, the return
/// to user mode's work loop). A clock held off by interrupts being off fires right
/// after the enabling instruction, so its sample lands in such a function; one stopped
/// by the host lands anywhere.
pub(crate) fn irq_enable_site(leaf: &str) -> bool {
    const SITES: [&str; 12] = [
        "unlock_irq",
        "irq_enable",
        "irqrestore",
        "irq_restore",
        "hardirqs_on",
        "finish_task_switch",
        "handle_softirqs",
        "__do_softirq",
        "safe_halt",
        "default_idle",
        "do_idle",
        "exit_to_user_mode",
    ];
    SITES.iter().any(|s| leaf.contains(s))
}

/// Puts each sample inside the window under the culprit that held the CPU at
/// its time (the sampling tick's own `local_timer` vector stands for what it
/// interrupted), groups them by code path, and lists the gaps.
fn add_paths(
    culprits: &mut [Culprit],
    charges: &Charges,
    tasks: &Tasks,
    samples: &[super::stacks::Sample],
    period_ns: u64,
    (start_ns, end_ns): (u64, u64),
) -> WindowStacks {
    let inside: Vec<&super::stacks::Sample> = samples.iter().filter(|s| s.time_ns >= start_ns && s.time_ns <= end_ns).collect();
    let total = inside.len() as u32;
    for s in &inside {
        let k = charges.pieces.partition_point(|p| p.0 <= s.time_ns).saturating_sub(1);
        let mut owner = charges.pieces.get(k).map(|p| &p.2);
        if matches!(owner, Some(Owner::Vector { name }) if name == "local_timer") && k > 0 {
            owner = charges.pieces.get(k - 1).map(|p| &p.2);
        }
        let Some(owner) = owner else { continue };
        let key = culprit(owner.clone(), Nanos(0), 0, tasks);
        let Some(c) = culprits.iter_mut().find(|x| same_culprit(x, &key)) else { continue };
        let mut frames = s.frames.clone();
        if frames.is_empty() {
            frames.push(format!("[user] {}", c.name));
        }
        match c.paths.iter_mut().find(|p| p.frames == frames) {
            Some(p) => p.samples += 1,
            None => c.paths.push(CodePath { frames, samples: 1, share: 0.0 }),
        }
    }
    for c in culprits.iter_mut() {
        for p in c.paths.iter_mut() {
            p.share = f64::from(p.samples) / f64::from(total.max(1));
        }
        c.paths.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.frames.cmp(&b.frames)));
    }
    let expected = ((end_ns - start_ns) / period_ns.max(1)) as u32;
    WindowStacks { period_ns: Nanos(period_ns), samples: total, expected, gaps: Vec::new() }
}

fn same_culprit(a: &Culprit, b: &Culprit) -> bool {
    a.kind == b.kind && a.name == b.name && a.pid == b.pid && a.irq == b.irq
}

/// The time charged to each owner, in first-charged order, with the number
/// of separate stretches it held the CPU, and the stretches in time order.
#[derive(Default)]
struct Charges {
    acc: Vec<(Owner, u64, u32)>,
    last_owner: Option<Owner>,
    /// (from, to, owner) of every charge, in time order.
    pieces: Vec<(u64, u64, Owner)>,
}

impl Charges {
    /// Charges `[from, to)` to `owner`; a stretch is new when the previous charge was another owner's.
    fn add(&mut self, owner: Owner, from: u64, to: u64) {
        let dur = to.saturating_sub(from);
        if dur == 0 {
            return;
        }
        self.pieces.push((from, to, owner.clone()));
        let new_stretch = self.last_owner.as_ref() != Some(&owner);
        match self.acc.iter_mut().find(|(o, _, _)| *o == owner) {
            Some(entry) => {
                entry.1 += dur;
                if new_stretch {
                    entry.2 += 1;
                }
            }
            None => self.acc.push((owner.clone(), dur, 1)),
        }
        self.last_owner = Some(owner);
    }

    /// Gives `[from, to)` to `owner`, taken from whoever held it and `from_whom` accepts,
    /// and recounts the stretches. Callers pass no stretch of a halting idle state (that
    /// time is idle: [`not_running`] leaves it out); a polling one can be taken.
    fn recharge(&mut self, from: u64, to: u64, owner: &Owner, from_whom: impl Fn(&Owner) -> bool) {
        let mut out = Charges::default();
        for (a, b, o) in std::mem::take(&mut self.pieces) {
            if !from_whom(&o) || b <= from || a >= to {
                out.add(o, a, b);
                continue;
            }
            out.add(o.clone(), a, from.max(a));
            out.add(owner.clone(), from.max(a), to.min(b));
            out.add(o, to.min(b), b);
        }
        *self = out;
    }
}

/// What the events say of the tasks: names by pid (the first real name seen,
/// for lines that show `<...>`), priorities, and which one is the measuring thread.
struct Tasks<'a> {
    comm_of: Vec<(u32, String)>,
    prio_of: Vec<(u32, i32)>,
    self_pid: Option<u32>,
    idle_states: &'a [IdleState],
    virtualized: bool,
}

/// The first real name (not `<...>`) of every pid in `events`, from switch
/// lines and from each line's own task.
fn task_names(events: &[Event]) -> Vec<(u32, String)> {
    let mut comm_of: Vec<(u32, String)> = Vec::new();
    let mut note_comm = |pid: u32, comm: &str| {
        if !comm.starts_with('<') && !comm_of.iter().any(|(p, _)| *p == pid) {
            comm_of.push((pid, comm.to_string()));
        }
    };
    for e in events {
        if let EventKind::Switch { prev_comm, prev_pid, next_comm, next_pid, .. } = &e.kind {
            note_comm(*prev_pid, prev_comm);
            note_comm(*next_pid, next_comm);
        }
        note_comm(e.pid, &e.comm);
    }
    comm_of
}

/// The culprits of the charged time, in first-charged order; idle stretches
/// of different idle tasks merge into one "unexplained".
fn culprits(acc: &[(Owner, u64, u32)], tasks: &Tasks) -> Vec<Culprit> {
    let mut culprits: Vec<Culprit> = Vec::new();
    for (owner, dur, count) in acc {
        let c = culprit(owner.clone(), Nanos(*dur), *count, tasks);
        match culprits.iter_mut().find(|x| same_culprit(x, &c)) {
            Some(x) => {
                x.duration_ns.0 += c.duration_ns.0;
                x.count += c.count;
            }
            None => culprits.push(c),
        }
    }
    culprits
}

/// The culprit `owner` stands for: the idle task (pid 0) is [`UNEXPLAINED`],
/// a task is `self` or `task` with its name and priority, an interrupt
/// context is `irq`, `vector` or `softirq`.
fn culprit(owner: Owner, duration_ns: Nanos, count: u32, tasks: &Tasks) -> Culprit {
    let other = |kind: &str, name: String, irq: Option<u32>| Culprit { kind: kind.into(), name, irq, duration_ns, count, ..Default::default() };
    match owner {
        Owner::Task { pid: 0, .. } => other("unexplained", UNEXPLAINED.into(), None),
        Owner::Task { comm, pid } => {
            let comm = if comm.starts_with('<') { tasks.comm_of.iter().find(|(p, _)| *p == pid).map(|(_, c)| c.clone()).unwrap_or(comm) } else { comm };
            Culprit {
                kind: if Some(pid) == tasks.self_pid { "self" } else { "task" }.into(),
                name: comm,
                pid: Some(pid),
                prio: tasks.prio_of.iter().find(|(p, _)| *p == pid).map(|(_, pr)| *pr),
                duration_ns,
                count,
                ..Default::default()
            }
        }
        Owner::Irq { irq, name } => other("irq", name, Some(irq)),
        Owner::Vector { name } => other("vector", name, None),
        Owner::Softirq { vec, name } => other("softirq", name, Some(vec)),
        Owner::Idle { state } => {
            let st = &tasks.idle_states[state as usize];
            Culprit { exit_latency_ns: Some(Nanos(st.exit_latency_ns)), ..other("idle", st.name.clone(), None) }
        }
        Owner::Untraced => other("untraced", UNTRACED.into(), None),
        Owner::Host => other("host", if tasks.virtualized { HOST } else { NOT_RUNNING }.into(), None),
        Owner::HostOrOff => other("host", HOST_OR_OFF.into(), None),
    }
}

/// Updates the state at `e`: the interrupt stack, the task on the CPU and
/// the priorities seen. The task on the CPU follows sched_switch and, for
/// kernels that do not record every switch out of idle (this development
/// VM's 6.18 drops most of them), two more facts: the task named on any
/// event's line was on the CPU at that instant, and a task woken onto this
/// CPU while it idles is the one that runs next (the measuring thread's own
/// wake-up excepted: that time is the sample's, not a culprit's).
fn apply(e: &Event, cpu: usize, self_pid: Option<u32>, st: &mut CpuState) {
    let CpuState { stack, current, prio_of, idle } = st;
    if !matches!(e.kind, EventKind::Switch { .. }) {
        *current = Some((e.comm.clone(), e.pid));
    }
    let mut set_prio = |pid: u32, prio: i32| match prio_of.iter_mut().find(|(p, _)| *p == pid) {
        Some(x) => x.1 = prio,
        None => prio_of.push((pid, prio)),
    };
    match &e.kind {
        EventKind::Switch { prev_pid, prev_prio, next_comm, next_pid, next_prio, .. } => {
            set_prio(*prev_pid, *prev_prio);
            set_prio(*next_pid, *next_prio);
            *current = Some((next_comm.clone(), *next_pid));
            // A context switch happens outside interrupt context: anything open is stale.
            stack.clear();
            *idle = None;
        }
        EventKind::Wakeup { comm, pid, prio, target_cpu } => {
            set_prio(*pid, *prio);
            let is_idle = current.as_ref().is_none_or(|c| c.1 == 0);
            if is_idle && *target_cpu == Some(cpu as u32) && Some(*pid) != self_pid {
                *current = Some((comm.clone(), *pid));
            }
        }
        EventKind::IrqEntry { irq, name } => stack.push(Owner::Irq { irq: *irq, name: name.clone() }),
        EventKind::VectorEntry { name } => stack.push(Owner::Vector { name: name.clone() }),
        EventKind::SoftirqEntry { vec, name } => stack.push(Owner::Softirq { vec: *vec, name: name.clone() }),
        EventKind::IrqExit { irq } => pop_until(stack, |o| matches!(o, Owner::Irq { irq: i, .. } if i == irq)),
        EventKind::VectorExit { name } => pop_until(stack, |o| matches!(o, Owner::Vector { name: n } if n == name)),
        EventKind::SoftirqExit { vec } => pop_until(stack, |o| matches!(o, Owner::Softirq { vec: v, .. } if v == vec)),
        EventKind::CpuIdle { state, cpu_id } if *cpu_id as usize == cpu => *idle = *state,
        EventKind::CpuIdle { .. } | EventKind::Other { .. } => {}
    }
    if current.is_none() {
        *current = Some((e.comm.clone(), e.pid));
    }
}

/// The CPU's state while walking its events: the open interrupt contexts,
/// the task on the CPU, the priorities seen and the idle state it is in.
#[derive(Default)]
struct CpuState {
    stack: Vec<Owner>,
    current: Option<(String, u32)>,
    prio_of: Vec<(u32, i32)>,
    /// The idle state entered and not yet left (`power/cpu_idle`).
    idle: Option<u32>,
}

/// Pops up to and including the innermost context matching `is`; an exit with no
/// matching entry (its entry was before the trace) leaves the stack as it is.
fn pop_until(stack: &mut Vec<Owner>, is: impl Fn(&Owner) -> bool) {
    if let Some(i) = stack.iter().rposition(is) {
        stack.truncate(i);
    }
}

#[cfg(test)]
mod tests;
