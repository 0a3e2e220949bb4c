//! The events a threshold trace records (`--trace-events`): the default
//! set with the kernel filters that keep the measuring threads' own events
//! out, the full set, and their expansion ([`expand_events`]).

/// The kernel filter that keeps a measuring thread's own events out of the
/// trace: every `rtscope-m*` thread is one (see `measure::spawn_measuring`).
/// Its wake-up and its switch in lie on the path the sample measures (after
/// the due time, before the thread reads the clock), so recording them adds
/// to the very latency being explained; and they end the window anyway.
const NOT_INTO_MEASURING: &str = "!(next_comm ~ \"rtscope-m*\")";
const NOT_A_MEASURING_THREAD: &str = "!(comm ~ \"rtscope-m*\")";

/// One event of a set, with the kernel filter it is enabled with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventSpec {
    /// `group/name`, or `group/*` for the group's `*_entry` and `*_exit` events.
    pub(crate) name: String,
    pub(crate) filter: Option<&'static str>,
}

/// `--trace-events default`: the cheapest set that still names the culprit
/// classes (a task, a FIFO hog or a `migration/N` thread by its
/// sched_switch; a hard IRQ; a softirq), measured with bench/trace-cost (see
/// docs/trace.md). Time inside the local timer interrupt itself is not told
/// apart from what it interrupted (`full` does that).
pub(crate) const DEFAULT_EVENTS: &[(&str, Option<&str>)] = &[
    ("sched/sched_switch", Some(NOT_INTO_MEASURING)),
    ("sched/sched_wakeup", Some(NOT_A_MEASURING_THREAD)),
    ("irq/irq_handler_entry", None),
    ("irq/irq_handler_exit", None),
    ("irq/softirq_entry", None),
    ("irq/softirq_exit", None),
];

/// `--trace-events full`: every event the attribution reads, unfiltered:
/// [`DEFAULT_EVENTS`] without their filters (so the measuring thread's own
/// wake-up, i.e. when in the window it was woken) and these: hrtimer expiry,
/// workqueue items and the x86 vectors (local timer, IPIs). It raised the
/// median latency by about a third here.
pub(crate) const FULL_EXTRA_EVENTS: &[&str] =
    &["timer/hrtimer_expire_entry", "timer/hrtimer_expire_exit", "workqueue/workqueue_execute_start", "workqueue/workqueue_execute_end", "irq_vectors/*"];

/// The events of `--trace-events` entries, in order: `default` and `full`
/// expand to their sets; an empty list is `default`; a `group/name` entry
/// is unfiltered. An event named twice keeps its first entry's filter, except
/// that an unfiltered mention wins (`default,sched/sched_wakeup` records
/// every wake-up). `sched/sched_switch` is always there: the attribution
/// cannot tell who held the CPU without it.
pub(crate) fn expand_events(names: &[String]) -> Vec<EventSpec> {
    let mut out: Vec<EventSpec> = Vec::new();
    let default = ["default".to_string()];
    let names = if names.is_empty() { &default[..] } else { names };
    for n in names {
        let set: Vec<(&str, Option<&'static str>)> = match n.as_str() {
            "default" => DEFAULT_EVENTS.to_vec(),
            "full" => DEFAULT_EVENTS.iter().map(|(e, _)| (*e, None)).chain(FULL_EXTRA_EVENTS.iter().map(|e| (*e, None))).collect(),
            other => vec![(other, None)],
        };
        for (e, f) in set {
            match out.iter_mut().find(|x| x.name == e) {
                Some(x) if f.is_none() => x.filter = None,
                Some(_) => {}
                None => out.push(EventSpec { name: e.to_string(), filter: f }),
            }
        }
    }
    if !out.iter().any(|x| x.name == "sched/sched_switch") {
        out.insert(0, EventSpec { name: "sched/sched_switch".into(), filter: Some(NOT_INTO_MEASURING) });
    }
    out
}
