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
        gaps = not_running(&mut charges, samples, period_ns, &times, (start_ns, end_ns), ctx.steal_ns);
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
/// - idle, when the idle task held any of it (the clock does not tick in idle): not a
///   gap at all, dropped;
/// - the CPU not running, when its steal time grew over the window (the hypervisor ran
///   something else while the vCPU was runnable), or the sample that ended the gap
///   interrupted user code (user code runs with interrupts on: the clock would have
///   fired on time in it): those stretches are the host's, not the task's;
/// - otherwise interrupts off: the task's own time, the gap listed with where
///   interrupts came back on.
fn not_running(
    charges: &mut Charges,
    samples: &[super::stacks::Sample],
    period_ns: u64,
    event_times: &[u64],
    (start_ns, end_ns): (u64, u64),
    steal_ns: Option<u64>,
) -> Vec<crate::model::trace::SampleGap> {
    let mut out = Vec::new();
    for (mut g, (due, came)) in super::stacks::gaps(samples, period_ns, start_ns, end_ns) {
        let (from, to) = (due.max(start_ns), came.min(end_ns));
        if charges.pieces.iter().any(|p| p.2.is_idle() && p.0 < to && p.1 > from) {
            continue;
        }
        // The stretches of the gap with no event either, each at least a gap long.
        let mut cuts: Vec<u64> = event_times.iter().copied().filter(|t| *t > from && *t < to).collect();
        cuts.insert(0, from);
        cuts.push(to);
        let quiet: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| b - a >= super::stacks::GAP_MIN_NS).collect();
        let user_code = g.ended_by.is_empty();
        if !quiet.is_empty() && (steal_ns.is_some_and(|s| s > 0) || user_code) {
            g.not_running = true;
            for (a, b) in quiet {
                charges.recharge(a, b, Owner::Host);
            }
        }
        out.push(g);
    }
    out
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

    /// Gives `[from, to)` to `owner`, taken from whoever held it (never from the idle
    /// task, whose time is idle), and recounts the stretches.
    fn recharge(&mut self, from: u64, to: u64, owner: Owner) {
        let mut out = Charges::default();
        for (a, b, o) in std::mem::take(&mut self.pieces) {
            if o.is_idle() || b <= from || a >= to {
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
mod tests {
    use super::super::parse::parse_trace;
    use super::super::report;
    use super::*;

    /// Captured shape of the test's latency killer: the probe thread (pid 500, FIFO 50) is
    /// woken by the local timer while rtscope-hog (FIFO 99) spins; it runs only when the
    /// hog sleeps, 2 ms later.
    const HOG: &str = "\
 rtscope-hog-400     [001] d..2.   100.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-hog next_pid=400 next_prio=0
     rtscope-hog-400     [001] d.h..   100.000100: local_timer_entry: vector=236
     rtscope-hog-400     [001] d.h..   100.000102: hrtimer_expire_entry: hrtimer=0000 function=hrtimer_wakeup now=100000101000
     rtscope-hog-400     [001] d.h2.   100.000103: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
     rtscope-hog-400     [001] d.h..   100.000104: hrtimer_expire_exit: hrtimer=0000
     rtscope-hog-400     [001] d.h..   100.000106: local_timer_exit: vector=236
     rtscope-hog-400     [001] d.h..   100.001000: irq_handler_entry: irq=36 name=virtio1-req.0
     rtscope-hog-400     [001] d.h..   100.001010: irq_handler_exit: irq=36 ret=handled
     rtscope-hog-400     [001] ..s..   100.001011: softirq_entry: vec=4 [action=BLOCK]
     rtscope-hog-400     [001] ..s..   100.001031: softirq_exit: vec=4 [action=BLOCK]
     rtscope-hog-400     [001] d..2.   100.002000: sched_switch: prev_comm=rtscope-hog prev_pid=400 prev_prio=0 prev_state=S ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";

    #[test]
    fn names_the_hog_with_its_time_and_priority() {
        let ev = parse_trace(HOG);
        // Due at 100.000100 (timer fires on time), read the clock at 100.002004.
        let w = attribute(&ev, 1, 100_000_100_000, 100_002_004_000, Some(500), 0);
        assert!(w.complete);
        assert_eq!(w.events, 10);
        assert_eq!(w.wakeup_after_ns, Some(Nanos(3_000)));
        let top = &w.culprits[0];
        assert_eq!((top.kind.as_str(), top.name.as_str(), top.pid, top.prio), ("task", "rtscope-hog", Some(400), Some(0)));
        // 100.000106 → 100.001000, 100.001010 → 100.001011, 100.001031 → 100.002000.
        assert_eq!(top.duration_ns, Nanos(894_000 + 1_000 + 969_000));
        assert_eq!(top.count, 3);
        let find = |k: &str| w.culprits.iter().find(|c| c.kind == k).unwrap_or_else(|| panic!("{k}: {w:#?}"));
        assert_eq!(find("vector").duration_ns, Nanos(6_000));
        assert_eq!(find("vector").name, "local_timer");
        assert_eq!((find("irq").irq, find("irq").duration_ns), (Some(36), Nanos(10_000)));
        assert_eq!((find("softirq").name.as_str(), find("softirq").duration_ns), ("BLOCK", Nanos(20_000)));
        assert_eq!(find("self").duration_ns, Nanos(4_000));
        let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
        assert_eq!(total, 1_904_000, "durations add up to the window");
    }

    #[test]
    fn idle_cpu_that_wakes_late_is_unexplained() {
        let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h..    50.000900: local_timer_entry: vector=236
          <idle>-0       [001] d.h2.    50.000902: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
          <idle>-0       [001] d.h..    50.000905: local_timer_exit: vector=236
          <idle>-0       [001] d..2.    50.000907: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";
        let w = attribute(&parse_trace(t), 1, 50_000_100_000, 50_000_910_000, Some(500), 0);
        assert_eq!(w.culprits[0].kind, "unexplained");
        assert_eq!(w.culprits[0].name, UNEXPLAINED);
        // 50.000100 → 50.000900 and 50.000905 → 50.000907.
        assert_eq!(w.culprits[0].duration_ns, Nanos(802_000));
        assert_eq!(w.culprits[0].count, 2);
    }

    #[test]
    fn the_part_before_the_trace_is_untraced_not_guessed() {
        let ev = parse_trace(HOG);
        // Window from 99.999 s: the buffer starts at 100.000000.
        let w = attribute(&ev, 1, 99_999_000_000, 100_000_050_000, Some(500), 0);
        assert!(!w.complete);
        assert_eq!(w.culprits[0].kind, "untraced");
        assert_eq!(w.culprits[0].duration_ns, Nanos(1_000_000));
        assert_eq!(w.culprits[1].name, "rtscope-hog");
        assert_eq!(w.culprits[1].duration_ns, Nanos(50_000));
        // Tracing was switched back on at 100.001600 (after reading another snapshot): the
        // events before it are only used for the state, the time before it is untraced.
        let w = attribute(&ev, 1, 100_001_000_000, 100_002_004_000, Some(500), 100_001_600_000);
        assert!(!w.complete);
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("untraced", Nanos(600_000)));
        assert_eq!((w.culprits[1].name.as_str(), w.culprits[1].duration_ns), ("rtscope-hog", Nanos(400_000)));
        let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
        assert_eq!(total, 1_004_000);
    }

    /// The default event set on a kernel that drops the switch out of idle
    /// (this VM's 6.18): the hog's switch-in is missing and no event falls
    /// inside the window; the hog's wake-up onto this CPU while it idled,
    /// and a tick interrupting the hog, still name it.
    #[test]
    fn hog_named_without_its_switch_in() {
        let t = "\
      rtscope-m0-500     [001] d..2.    70.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] dNh4.    70.000100: sched_wakeup: comm=rtscope-hog pid=400 prio=0 target_cpu=001
";
        let w = attribute(&parse_trace(t), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
        assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("rtscope-hog", Nanos(1_800_000)));
        // A wake-up of a task queued on another CPU, or of the measuring thread itself, does not.
        let other = t.replace("target_cpu=001", "target_cpu=000");
        let w = attribute(&parse_trace(&other), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
        assert_eq!(w.culprits[0].kind, "unexplained");
        let own = t.replace("comm=rtscope-hog pid=400", "comm=rtscope-m0 pid=500");
        let w = attribute(&parse_trace(&own), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
        assert_eq!(w.culprits[0].kind, "unexplained");
        // A tick that interrupts the hog before the window names it too.
        let tick = format!("{other}         rtscope-hog-400     [001] d.h..    70.000150: local_timer_entry: vector=236\n         rtscope-hog-400     [001] d.h..    70.000152: local_timer_exit: vector=236\n");
        let w = attribute(&parse_trace(&tick), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
        assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].pid), ("rtscope-hog", Some(400)));
    }

    /// The kernel filter drops the measuring thread's switch-in (the hog's switch-out with
    /// it), so the first sign of the thread is an interrupt on its line just before its
    /// clock read: the 2 ms before are still the hog's, not the thread's own (a loaded run
    /// once named rtscope-m0 for 1.93 ms of its own 1.93 ms window).
    #[test]
    fn filtered_switch_in_leaves_the_time_before_with_the_last_holder() {
        let filtered: String = HOG.lines().filter(|l| !l.contains("next_comm=rtscope-m0")).map(|l| format!("{l}\n")).collect();
        let t = format!(
            "{filtered}      rtscope-m0-500     [001] d.h..   100.002001: irq_handler_entry: irq=36 name=virtio1-req.0\n      rtscope-m0-500     [001] d.h..   100.002002: irq_handler_exit: irq=36 ret=handled\n"
        );
        let w = attribute(&parse_trace(&t), 1, 100_000_100_000, 100_002_004_000, Some(500), 0);
        let top = &w.culprits[0];
        assert_eq!((top.kind.as_str(), top.name.as_str()), ("task", "rtscope-hog"), "{w:#?}");
        // As with the switch recorded, plus the millisecond up to the interrupt.
        assert_eq!(top.duration_ns, Nanos(894_000 + 1_000 + 970_000));
        // After the interrupt the thread is on the CPU: the last 2 µs are its own.
        let own = w.culprits.iter().find(|c| c.kind == "self").unwrap();
        assert_eq!((own.name.as_str(), own.duration_ns), ("rtscope-m0", Nanos(2_000)));
        let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
        assert_eq!(total, 1_904_000);
        // Seen from the idle task, the same gap is unexplained (a woken thread waited).
        let idle = "\
      rtscope-m0-500     [001] d..2.    70.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
      rtscope-m0-500     [001] d.h..    70.001000: local_timer_entry: vector=236
      rtscope-m0-500     [001] d.h..    70.001002: local_timer_exit: vector=236
";
        let w = attribute(&parse_trace(idle), 1, 70_000_100_000, 70_001_010_000, Some(500), 0);
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(900_000)), "{w:#?}");
    }

    #[test]
    fn idle_time_in_a_traced_state_is_named_by_it() {
        let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..1.    50.000050: cpu_idle: state=1 cpu_id=1
          <idle>-0       [001] d..1.    50.000900: cpu_idle: state=4294967295 cpu_id=1
          <idle>-0       [001] d.h..    50.000901: local_timer_entry: vector=236
          <idle>-0       [001] d.h2.    50.000902: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
          <idle>-0       [001] d.h..    50.000905: local_timer_exit: vector=236
          <idle>-0       [001] d..2.    50.000907: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";
        let ev = parse_trace(t);
        let states = [IdleState { name: "POLL".into(), exit_latency_ns: 0 }, IdleState { name: "haltpoll".into(), exit_latency_ns: 1_000 }];
        let ctx = Context { self_pid: Some(500), idle_states: &states, ..Default::default() };
        let w = attribute_in(&ev, 1, 50_000_100_000, 50_000_910_000, &ctx);
        let top = &w.culprits[0];
        assert_eq!((top.kind.as_str(), top.name.as_str(), top.duration_ns, top.exit_latency_ns), ("idle", "haltpoll", Nanos(800_000), Some(Nanos(1_000))));
        // Only the idle time outside the state stays unexplained: 900 → 901 and 905 → 907.
        let u = w.culprits.iter().find(|c| c.kind == "unexplained").expect("unexplained rest");
        assert_eq!(u.duration_ns, Nanos(3_000));
        // Without the states (no sysfs cpuidle) or with the entry before the trace, the idle time is unexplained.
        let w = attribute_in(&ev, 1, 50_000_100_000, 50_000_910_000, &Context { self_pid: Some(500), ..Default::default() });
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(803_000)));
        let w = attribute_in(&ev[2..], 1, 50_000_100_000, 50_000_910_000, &ctx);
        assert!(w.culprits.iter().all(|c| c.kind != "idle"), "{w:#?}");
        // Another CPU's idle event changes nothing here.
        let other = parse_trace(&t.replace("cpu_id=1", "cpu_id=0"));
        let w = attribute_in(&other, 1, 50_000_100_000, 50_000_910_000, &ctx);
        assert!(w.culprits.iter().all(|c| c.kind != "idle"), "{w:#?}");
    }

    #[test]
    fn samples_go_under_the_culprit_of_their_time_grouped_by_path() {
        use super::super::stacks::Sample;
        let ev = parse_trace(HOG);
        let s = |t: u64, tid: u32, f: &[&str]| Sample { time_ns: t, tid, frames: f.iter().map(|x| x.to_string()).collect() };
        let read = ["read_zero", "vfs_read", "ksys_read"];
        let samples = [
            s(99_999_900_000, 400, &read),
            s(100_000_500_000, 400, &read),
            s(100_001_005_000, 400, &["vring_interrupt", "vp_vring_interrupt"]),
            s(100_001_500_000, 400, &read),
            s(100_001_800_000, 400, &[]),
        ];
        let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 500_000)), ..Default::default() };
        let w = attribute_in(&ev, 1, 100_000_100_000, 100_002_004_000, &ctx);
        let st = w.stacks.as_ref().expect("stacks");
        assert_eq!((st.samples, st.period_ns), (4, Nanos(500_000)));
        let hog = &w.culprits[0];
        assert_eq!(hog.name, "rtscope-hog");
        assert_eq!(hog.paths.len(), 2, "{hog:#?}");
        assert_eq!((hog.paths[0].frames.as_slice(), hog.paths[0].samples, hog.paths[0].share), (&read.map(String::from)[..], 2, 0.5));
        assert_eq!((hog.paths[1].frames.as_slice(), hog.paths[1].share), (&["[user] rtscope-hog".to_string()][..], 0.25));
        let irq = w.culprits.iter().find(|c| c.kind == "irq").unwrap();
        assert_eq!(irq.paths[0].frames[0], "vring_interrupt");
        // The 99.9999 s sample is before the window, for gaps only: the next was due 500 µs
        // after it and came 100 µs later (a gap); the others came within the period.
        assert_eq!(st.gaps.len(), 1, "{st:#?}");
        assert_eq!((st.gaps[0].start_after_ns, st.gaps[0].length_ns), (Nanos(300_000), Nanos(100_000)));
        assert_eq!(st.gaps[0].ended_by, read.map(String::from).to_vec());
        assert_eq!(report::culprit(hog), "rtscope-hog (pid 400, rt prio 99) 1864.0us: read_zero ← vfs_read ← ksys_read");
    }

    /// An ordinary task in user code is current; the CPU takes its samples at the rate,
    /// then none for 24.75 ms and no event either, then one in user code: the CPU did
    /// not run (user code runs with interrupts on), the host's time, not the task's.
    const SH: &str = "      sh-300     [001] d..2.    80.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=sh next_pid=300 next_prio=120\n";

    fn sh_samples(gap_end: &[&str]) -> Vec<super::super::stacks::Sample> {
        use super::super::stacks::Sample;
        let mut v: Vec<Sample> = (0..25).map(|k| Sample { time_ns: 79_999_000_000 + k * 250_000, tid: 300, frames: Vec::new() }).collect();
        v.push(Sample { time_ns: 80_030_000_000, tid: 300, frames: gap_end.iter().map(|f| f.to_string()).collect() });
        v.push(Sample { time_ns: 80_030_250_000, tid: 300, frames: Vec::new() });
        v.push(Sample { time_ns: 80_030_500_000, tid: 300, frames: Vec::new() });
        v
    }

    #[test]
    fn time_with_no_sample_and_no_event_is_the_hosts_not_the_tasks() {
        let ev = parse_trace(SH);
        let samples = sh_samples(&[]);
        let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
        let host = &w.culprits[0];
        assert_eq!((host.kind.as_str(), host.name.as_str(), host.duration_ns), ("host", HOST, Nanos(24_750_000)), "{w:#?}");
        // The task keeps what its samples cover: 80.001 → 80.00525 and 80.030 → 80.031.
        let sh = &w.culprits[1];
        assert_eq!((sh.name.as_str(), sh.duration_ns, sh.count), ("sh", Nanos(5_250_000), 2));
        let st = w.stacks.as_ref().unwrap();
        assert_eq!((st.samples, st.expected), (20, 120));
        assert_eq!(st.gaps.len(), 1);
        assert!(st.gaps[0].not_running);
        assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000, "durations add up to the window");
        assert_eq!(report::culprit_in(host, &w), "host / not running 24750.0us (no sample, no event; 20 of 120 samples)");
        // On bare metal it is named so.
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { virtualized: false, ..ctx });
        assert_eq!(w.culprits[0].name, NOT_RUNNING);
    }

    #[test]
    fn a_gap_ended_in_kernel_code_is_interrupts_off_unless_steal_grew() {
        let ev = parse_trace(SH);
        let samples = sh_samples(&["_raw_spin_unlock_irqrestore", "ext4_finish_bio"]);
        let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
        assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
        let g = &w.stacks.as_ref().unwrap().gaps;
        assert!(g.len() == 1 && !g[0].not_running && g[0].ended_by[0] == "_raw_spin_unlock_irqrestore");
        // The CPU's steal time grew over the window: the host did not run it.
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { steal_ns: Some(20_000_000), ..ctx });
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("host", Nanos(24_750_000)));
        assert_eq!(w.steal_ns, Some(Nanos(20_000_000)));
        assert!(report::culprit_in(&w.culprits[0], &w).contains("the host did not run this vCPU (steal +20000us)"));
        // Steal that did not grow is no evidence.
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { steal_ns: Some(0), ..ctx });
        assert_eq!(w.culprits[0].kind, "task");
    }

    #[test]
    fn an_event_in_a_gap_shows_the_cpu_ran_then() {
        // An interrupt at 80.017 on the task's line: the CPU ran; the stretches before and
        // after it with neither sample nor event are the host's.
        let t = format!("{SH}      sh-300     [001] d.h..    80.017000: irq_handler_entry: irq=36 name=virtio1-req.0\n      sh-300     [001] d.h..    80.017010: irq_handler_exit: irq=36 ret=handled\n");
        let ev = parse_trace(&t);
        let samples = sh_samples(&[]);
        let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
        let host = w.culprits.iter().find(|c| c.kind == "host").unwrap();
        // 80.00525 → 80.017 and 80.01701 → 80.030.
        assert_eq!((host.duration_ns, host.count), (Nanos(11_750_000 + 12_990_000), 2), "{w:#?}");
        assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000);
    }

    /// The sampling clock does not tick in idle: a gap while the idle task held the CPU
    /// is idle, neither interrupts off nor the host, and the window is idle time.
    #[test]
    fn a_gap_over_idle_time_is_idle() {
        use super::super::stacks::Sample;
        let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h..    50.000900: irq_handler_entry: irq=36 name=virtio1-req.0
          <idle>-0       [001] d.h..    50.000905: irq_handler_exit: irq=36 ret=handled
";
        let samples = [
            Sample { time_ns: 49_999_990_000, tid: 500, frames: vec!["x".into()] },
            Sample { time_ns: 50_000_908_000, tid: 0, frames: vec!["default_idle".into()] },
        ];
        let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
        let w = attribute_in(&parse_trace(t), 1, 50_000_100_000, 50_000_910_000, &ctx);
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(805_000)), "{w:#?}");
        assert!(w.stacks.as_ref().unwrap().gaps.is_empty(), "{w:#?}");
        assert!(w.culprits.iter().all(|c| c.kind != "host"));
    }

    #[test]
    fn empty_trace_is_all_untraced() {
        let w = attribute(&[], 1, 10, 5, None, 0);
        assert_eq!(w.end_ns, Nanos(10));
        assert!(w.culprits.is_empty());
        let w = attribute(&[], 1, 10, 20, None, 0);
        assert!(!w.complete);
        assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("untraced", Nanos(10)));
    }
}
