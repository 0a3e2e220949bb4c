//! Threshold tracing as stored in a result: what was asked (`plan.trace`),
//! what tracing did (`trace`) and what held the CPU during a late sample
//! (`worst[].trace`). The tracing itself lives in the trace module.

use serde::{Deserialize, Serialize};

use crate::units::Nanos;

/// What `--trace-threshold`, `--trace-buffer` and `--trace-max` asked for (`plan.trace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracePlan {
    /// Samples later than this are traced.
    pub threshold_ns: Nanos,
    /// Ring buffer per measured CPU, KB.
    pub buffer_kb: u32,
    /// At most this many snapshots per run.
    pub max_snapshots: u32,
    /// `--trace-events` as given (`default`, `full` or `group/name`
    /// entries); empty (files from before it existed) = `default`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// `--trace-stacks`: call-chain samples per second on each measured CPU
    /// (perf_event_open, software clock); absent = no sampling (0, or a file
    /// from before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_hz: Option<u32>,
}

/// What tracing did during a run (`trace` at the top level of a result).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// The tracefs instance used, e.g. `/sys/kernel/tracing/instances/rtscope-4242`.
    pub instance: String,
    /// Events enabled (`group/name`).
    pub events: Vec<String>,
    /// The kernel filter of each filtered event (event → filter), e.g. the
    /// measuring threads' own switches left out; absent when none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub filters: std::collections::BTreeMap<String, String>,
    /// Samples later than the threshold.
    pub over_threshold: u64,
    /// Snapshots kept (at most `plan.trace.max_snapshots`; the worst samples win).
    pub snapshots: u32,
    /// Snapshots whose sample is among the worst K kept, i.e. found in `worst[].trace`
    /// (a snapshot of a sample outside the worst K is dropped).
    pub on_worst: u32,
    /// Call-chain sampling during the run (`--trace-stacks`); absent when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<SamplingSummary>,
    /// Events of `--trace-events` this kernel does not have (not enabled; the run
    /// warned); absent when every event named was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_events: Vec<String>,
}

/// What call-chain sampling did during a run (`trace.stacks`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingSummary {
    /// One sample every this much CPU time on each measured CPU.
    pub period_ns: Nanos,
    /// Samples read from the per-CPU rings.
    pub samples: u64,
    /// Samples the kernel dropped because a ring was full.
    pub lost: u64,
    /// Why there was no sampling (perf_event_open refused: `perf_event_paranoid`, no
    /// PERF_EVENTS in the kernel, ...), or why its code paths are not shown (kernel
    /// addresses hidden by `kernel.kptr_restrict`: the samples still count, their
    /// frames are `[kernel]`); absent when it ran with symbols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// What held the CPU during one late sample (stored as `worst[].trace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceWindow {
    /// CPU whose trace was read.
    pub cpu: usize,
    /// The sample's due time, CLOCK_MONOTONIC ns (= trace clock `mono`).
    pub start_ns: Nanos,
    /// When the measuring thread read the clock after waking.
    pub end_ns: Nanos,
    /// Trace events inside the window.
    pub events: u32,
    /// False when the trace does not reach back to the window start (tracing was off or the
    /// buffer had been overwritten); that first part is the culprit of kind `untraced`.
    pub complete: bool,
    /// When the measuring thread was woken (sched_wakeup), ns after `start_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup_after_ns: Option<Nanos>,
    /// Everything that held the CPU, longest first; durations add up to the window.
    pub culprits: Vec<Culprit>,
    /// `timerlat` samples: the IRQ latency of the same activation (due time
    /// → the timer's handler ran); the rest of the window is the thread's
    /// dispatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_latency_ns: Option<Nanos>,
    /// `timerlat` samples: whether the timer's interrupt came out of idle
    /// (the interrupted task was the idle task; the CPU's exit from a deep
    /// C-state is then part of the IRQ latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_idle: Option<bool>,
    /// `timerlat` samples: due time → the timer's interrupt handler started
    /// (rtla's "IRQ handler delay": interrupts off, a previous IRQ, the exit
    /// from idle, the hypervisor). Absent when the tracer's event for that
    /// interrupt was not seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_handler_delay_ns: Option<Nanos>,
    /// `timerlat` samples: how long the timer's interrupt handler ran (rtla's
    /// "timerlat IRQ duration"), net of what interrupted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_duration_ns: Option<Nanos>,
    /// `timerlat` samples without `irq_latency_ns`: why it is unknown
    /// (`lost: …` when the trace dropped the activation's IRQ sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_latency_unknown: Option<String>,
    /// Call-chain sampling of the window (`--trace-stacks`): how many samples
    /// fell in it, and the gaps where none did; each sample's code path is
    /// under its culprit (`culprits[].paths`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<WindowStacks>,
    /// `timerlat` samples with `--trace-threshold`: the kernel stack the
    /// tracer saved in the timer's interrupt (its `print_stack` option, as
    /// rtla's `-a` uses), leaf first — the interrupt path, then the code the
    /// interrupt found running. Absent when the tracer printed none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_stack: Option<Vec<String>>,
    /// The CPU's steal time (`/proc/stat`, the time the hypervisor ran something
    /// else while this vCPU was runnable) over the two readings that bracket the
    /// window (the collector reads it every 10 ms; the kernel shows it in
    /// USER_HZ ticks, 10 ms). Absent when unknown (no reading before the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<Nanos>,
}

impl TraceWindow {
    /// A window with its culprits sorted longest first (then by name).
    pub fn new(cpu: usize, span: (u64, u64), events: u32, complete: bool, wakeup_after_ns: Option<Nanos>, mut culprits: Vec<Culprit>) -> TraceWindow {
        culprits.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
        TraceWindow {
            cpu,
            start_ns: Nanos(span.0),
            end_ns: Nanos(span.1),
            events,
            complete,
            wakeup_after_ns,
            culprits,
            irq_latency_ns: None,
            from_idle: None,
            irq_handler_delay_ns: None,
            irq_duration_ns: None,
            irq_latency_unknown: None,
            stacks: None,
            irq_stack: None,
            steal_ns: None,
        }
    }

    /// The time of the window the CPU was not running (culprit kind `host`).
    pub fn host_ns(&self) -> u64 {
        self.culprits.iter().filter(|c| c.kind == "host").map(|c| c.duration_ns.0).sum()
    }

    /// Whether the time the CPU was not running is the largest part of the window.
    pub fn host_held(&self) -> bool {
        self.culprits.first().is_some_and(|c| c.kind == "host")
    }
}

/// Call-chain samples of one traced window (`worst[].trace.stacks`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStacks {
    /// The sampling period (one sample per this much CPU time).
    pub period_ns: Nanos,
    /// Samples whose time falls in the window.
    pub samples: u32,
    /// Samples the CPU would have taken running the whole window: its length
    /// over the period (the software clock does not tick while the CPU idles,
    /// nor while the host does not run it).
    #[serde(default)]
    pub expected: u32,
    /// Stretches of the window longer than the gap threshold with no sample
    /// while a task held the CPU (one that overlaps idle time is idle, not a
    /// gap): the sampling clock (an hrtimer) could not fire, i.e. interrupts
    /// were off on the CPU, or the CPU did not run (`not_running`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<SampleGap>,
}

/// A stretch with no call-chain sample (`worst[].trace.stacks.gaps[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleGap {
    /// Where the sample that ended the gap was due: the previous sample plus
    /// one period, ns after the window start (negative values are clamped to 0).
    pub start_after_ns: Nanos,
    /// From that due time to the sample that came: how long the sampling
    /// clock was held off.
    pub length_ns: Nanos,
    /// The code path of the sample that ended the gap, leaf first: where
    /// interrupts came back on.
    pub ended_by: Vec<String>,
    /// The CPU did not run guest code in the gap's stretches with no event (the
    /// CPU's steal time grew over the window, or the gap ended in user code,
    /// where interrupts are on), or on a VM may not have (`maybe_interrupts_off`):
    /// that time is the culprit of kind `host`, not the task's. False: interrupts
    /// off (the task's time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_running: bool,
    /// With `not_running`, on a VM: the gap ended in kernel code that does not turn
    /// interrupts on and steal did not grow, so the stretches may as well be interrupts
    /// off — the culprit `not running (host, or interrupts off)`, charged to no task.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub maybe_interrupts_off: bool,
    /// Of the gap's stretches with no event, how much a witness saw as the host's: a
    /// busy other vCPU of the same VM took no sample over it either and came back in
    /// user code, where its clock would have fired (the host stopped the whole VM).
    /// That time is `host / not running` whatever ended this CPU's gap; absent when no
    /// witness saw the gap (none sampled, or none busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub witnessed_ns: Option<Nanos>,
}

/// One code path seen while a culprit held the CPU (`culprits[].paths[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodePath {
    /// Kernel functions leaf first (from /proc/kallsyms), then `[user] COMM`
    /// when the sample interrupted user code (user frames are not walked).
    pub frames: Vec<String>,
    /// Samples with this path.
    pub samples: u32,
    /// Those samples' share of all the window's samples (0–1).
    pub share: f64,
}

/// One thing that held the CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// `task`, `irq` (device interrupt handler), `vector` (x86 system vector: local_timer,
    /// reschedule, call_function...), `softirq`, `self` (the measuring thread itself, from
    /// switch-in to reading the clock), `idle`, `host` (the CPU did not run: no sample
    /// and no event while a task held it, and steal grew or the clock fired in user
    /// code), `unexplained` or `untraced`.
    pub kind: String,
    /// comm of a task, handler name of an IRQ, vector or softirq name, or the words of `trace::attribute::UNEXPLAINED`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Kernel priority as traced by sched_switch: 0–98 real-time (rt priority = 99 − prio),
    /// 100–139 normal (120 = nice 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i32>,
    /// IRQ number (kind `irq`) or softirq vector number (kind `softirq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<u32>,
    pub duration_ns: Nanos,
    /// How many separate stretches it held the CPU in the window.
    pub count: u32,
    /// Kind `idle`: the exit latency the kernel gives the idle state (sysfs
    /// `cpuidle/stateN/latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_latency_ns: Option<Nanos>,
    /// The code paths sampled while it held the CPU, most samples first
    /// (`--trace-stacks`); absent without sampling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<CodePath>,
}
