//! The classic RTOS benchmark suites as rtscope entries: which probe and
//! variant stands for each Rhealstone component and each Thread-Metric
//! test. Shared by the `rhealstone` / `thread-metric` presets' tables
//! (analysis) and the importers of published results (`rhealstone-csv`,
//! `thread-metric-csv`), so an imported result lands in the rows a run of
//! the preset fills.

/// One Rhealstone component (Kar & Porter 1989) and the entry measuring it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// The name in the suite's table and in `rhealstone-csv`.
    pub metric: &'static str,
    pub probe: &'static str,
    /// The variants that stand for it, preferred first.
    pub variants: &'static [&'static str],
}

/// The six Rhealstone components, in the paper's order.
pub const RHEALSTONE: &[Component] = &[
    Component { metric: "task-switch", probe: "switch", variants: &["yield", "futex"] },
    Component { metric: "preemption", probe: "preempt", variants: &["futex/same-cpu"] },
    Component { metric: "interrupt-latency", probe: "timer", variants: &[] },
    Component { metric: "semaphore-shuffle", probe: "sem", variants: &["posix/same-cpu"] },
    Component { metric: "deadlock-break", probe: "pi", variants: &["deadlock-break"] },
    Component { metric: "message-latency", probe: "mq", variants: &["oneway"] },
];

/// The eight Thread-Metric tests: (name in the suite, `throughput` variant).
pub const THREAD_METRIC: &[(&str, &str)] = &[
    ("basic-processing", "basic"),
    ("cooperative-scheduling", "cooperative"),
    ("preemptive-scheduling", "preemptive"),
    ("interrupt-processing", "interrupt"),
    ("interrupt-preemption-processing", "interrupt-preemption"),
    ("message-processing", "message"),
    ("synchronization-processing", "synchronization"),
    ("memory-allocation", "memory"),
];
