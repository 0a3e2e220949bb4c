//! Attribution: from the events of one CPU, what held that CPU between a sample's due time
//! and its wake-up.
//!
//! A pure function over parsed events ([`attribute`]). The window is cut at every event;
//! each piece belongs to the innermost open interrupt context (hard IRQ, x86 vector such as
//! `local_timer`, softirq) or else to the task on the CPU — which is the task shown on the
//! next event's line, since tasks change only at `sched_switch`. Time the idle task "holds"
//! while a woken real-time task waits is explained by nothing the kernel traced: it is
//! reported as "unexplained: hypervisor / SMI / hardware" (a vCPU not scheduled by the host,
//! a system management interrupt, a deep C-state exit).


use super::parse::{Event, EventKind};
use crate::model::Nanos;
pub(crate) use crate::model::trace::{Culprit, TraceWindow};

/// Name of the culprit that stands for time no traced event explains.
pub(crate) const UNEXPLAINED: &str = "unexplained: hypervisor / SMI / hardware";

/// Name of the culprit that stands for the part of a window the trace does not cover.
pub(crate) const UNTRACED: &str = "not traced (tracing was off or the buffer had wrapped)";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Task { comm: String, pid: u32 },
    Irq { irq: u32, name: String },
    Vector { name: String },
    Softirq { vec: u32, name: String },
    Untraced,
}

/// Attributes `[start_ns, end_ns]` on one CPU. `events` are that CPU's events in time
/// order (earlier ones set the state at `start_ns`); `self_pid` is the measuring thread;
/// `traced_since` is when tracing was last switched on — the window before it, or before
/// the oldest event in the buffer, is charged to `untraced`, never guessed.
pub(crate) fn attribute(
    events: &[Event],
    cpu: usize,
    start_ns: u64,
    end_ns: u64,
    self_pid: Option<u32>,
    traced_since: u64,
) -> TraceWindow {
    let end_ns = end_ns.max(start_ns);
    let traced_from = events.first().map_or(u64::MAX, |e| e.ts_ns.max(traced_since));
    let complete = traced_from <= start_ns;
    let t0 = traced_from.clamp(start_ns, end_ns);
    let mut stack: Vec<Owner> = Vec::new();
    let mut current: Option<(String, u32)> = None;
    let mut prio_of: Vec<(u32, i32)> = Vec::new();

    // State where the traced part of the window starts.
    let first_in = events.partition_point(|e| e.ts_ns < t0);
    for e in &events[..first_in] {
        apply(e, cpu, self_pid, &mut stack, &mut current, &mut prio_of);
    }

    let mut charges = Charges::default();
    charges.add(Owner::Untraced, t0 - start_ns);
    let mut t = t0;
    let mut inside = 0u32;
    let mut wakeup_after_ns = None;
    for e in events[first_in..].iter().take_while(|e| e.ts_ns <= end_ns) {
        inside += 1;
        // Between the previous cut and this event, the task on the CPU is this line's task.
        let task = (e.comm.clone(), e.pid);
        let owner = stack.last().cloned().unwrap_or(Owner::Task { comm: task.0, pid: task.1 });
        charges.add(owner, e.ts_ns.saturating_sub(t));
        t = e.ts_ns.max(t);
        if let EventKind::Wakeup { pid, .. } = &e.kind {
            if Some(*pid) == self_pid && wakeup_after_ns.is_none() {
                wakeup_after_ns = Some(Nanos(e.ts_ns.saturating_sub(start_ns)));
            }
        }
        apply(e, cpu, self_pid, &mut stack, &mut current, &mut prio_of);
    }
    let tail_owner = stack.last().cloned().or_else(|| current.clone().map(|(comm, pid)| Owner::Task { comm, pid }));
    charges.add(tail_owner.unwrap_or(Owner::Untraced), end_ns.saturating_sub(t));

    let tasks = Tasks { comm_of: task_names(events), prio_of, self_pid };
    let culprits = culprits(charges.acc, &tasks);
    TraceWindow::new(cpu, (start_ns, end_ns), inside, complete, wakeup_after_ns, culprits)
}

/// The time charged to each owner, in first-charged order, with the number
/// of separate stretches it held the CPU.
#[derive(Default)]
struct Charges {
    acc: Vec<(Owner, u64, u32)>,
    last_owner: Option<Owner>,
}

impl Charges {
    /// Charges `dur` ns to `owner`; a stretch is new when the previous charge was another owner's.
    fn add(&mut self, owner: Owner, dur: u64) {
        if dur == 0 {
            return;
        }
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
}

/// What the events say of the tasks: names by pid (the first real name seen,
/// for lines that show `<...>`), priorities, and which one is the measuring thread.
struct Tasks {
    comm_of: Vec<(u32, String)>,
    prio_of: Vec<(u32, i32)>,
    self_pid: Option<u32>,
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
fn culprits(acc: Vec<(Owner, u64, u32)>, tasks: &Tasks) -> Vec<Culprit> {
    let mut culprits: Vec<Culprit> = Vec::new();
    for (owner, dur, count) in acc {
        let c = culprit(owner, Nanos(dur), count, tasks);
        match culprits.iter_mut().find(|x| x.kind == c.kind && x.name == c.name && x.pid == c.pid && x.irq == c.irq) {
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
    let other = |kind: &str, name: String, irq: Option<u32>| Culprit { kind: kind.into(), name, pid: None, prio: None, irq, duration_ns, count };
    match owner {
        Owner::Task { pid: 0, .. } => other("unexplained", UNEXPLAINED.into(), None),
        Owner::Task { comm, pid } => {
            let comm = if comm.starts_with('<') {
                tasks.comm_of.iter().find(|(p, _)| *p == pid).map(|(_, c)| c.clone()).unwrap_or(comm)
            } else {
                comm
            };
            Culprit {
                kind: if Some(pid) == tasks.self_pid { "self" } else { "task" }.into(),
                name: comm,
                pid: Some(pid),
                prio: tasks.prio_of.iter().find(|(p, _)| *p == pid).map(|(_, pr)| *pr),
                irq: None,
                duration_ns,
                count,
            }
        }
        Owner::Irq { irq, name } => other("irq", name, Some(irq)),
        Owner::Vector { name } => other("vector", name, None),
        Owner::Softirq { vec, name } => other("softirq", name, Some(vec)),
        Owner::Untraced => other("untraced", UNTRACED.into(), None),
    }
}

/// Updates the state at `e`: the interrupt stack, the task on the CPU and
/// the priorities seen. The task on the CPU follows sched_switch and, for
/// kernels that do not record every switch out of idle (this development
/// VM's 6.18 drops most of them), two more facts: the task named on any
/// event's line was on the CPU at that instant, and a task woken onto this
/// CPU while it idles is the one that runs next (the measuring thread's own
/// wake-up excepted: that time is the sample's, not a culprit's).
fn apply(
    e: &Event,
    cpu: usize,
    self_pid: Option<u32>,
    stack: &mut Vec<Owner>,
    current: &mut Option<(String, u32)>,
    prio_of: &mut Vec<(u32, i32)>,
) {
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
        }
        EventKind::Wakeup { comm, pid, prio, target_cpu } => {
            set_prio(*pid, *prio);
            let idle = current.as_ref().is_none_or(|c| c.1 == 0);
            if idle && *target_cpu == Some(cpu as u32) && Some(*pid) != self_pid {
                *current = Some((comm.clone(), *pid));
            }
        }
        EventKind::IrqEntry { irq, name } => stack.push(Owner::Irq { irq: *irq, name: name.clone() }),
        EventKind::VectorEntry { name } => stack.push(Owner::Vector { name: name.clone() }),
        EventKind::SoftirqEntry { vec, name } => stack.push(Owner::Softirq { vec: *vec, name: name.clone() }),
        EventKind::IrqExit { irq } => pop_until(stack, |o| matches!(o, Owner::Irq { irq: i, .. } if i == irq)),
        EventKind::VectorExit { name } => pop_until(stack, |o| matches!(o, Owner::Vector { name: n } if n == name)),
        EventKind::SoftirqExit { vec } => pop_until(stack, |o| matches!(o, Owner::Softirq { vec: v, .. } if v == vec)),
        EventKind::Other { .. } => {}
    }
    if current.is_none() {
        *current = Some((e.comm.clone(), e.pid));
    }
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
