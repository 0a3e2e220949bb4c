//! The probe registry: one place per fact about a probe.
//!
//! Each probe file states its facts once, in a [`ProbeInfo`] its [`Probe`]
//! returns (name, one line for `rtscope probes`, variants, warm-up, how
//! `--trace-threshold` traces it, its own periods, whether it keeps a CPU busy
//! at real-time priority, …). [`REGISTRY`] lists every probe once, in the
//! order `rtscope probes` shows them; every other module asks [`info`] about a
//! name instead of matching the name itself (rtla's `struct tool_ops` is the
//! model: the common code asks the descriptor, never a name).
//!
//! Adding a probe = its own file (the loop, its `INFO`, `impl Probe`) + one
//! line in [`REGISTRY`]. `tests/layers.rs` holds the rule: a quoted probe name
//! is matched only in the probe's own file, bar a short documented list.

use super::Probe;

/// What `--trace-threshold` does with a probe's late samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Traced {
    /// Not analysed.
    No,
    /// The timer method: the window runs from the due time to the wake-up
    /// (`trace::TraceSession`).
    TimerMethod,
    /// A one-way hand-off: the window runs from the sender's clock read before
    /// the release to the receiver's after its wake-up; the events of that
    /// path lie on the measured path (`analysis::warnings` says so).
    Handoff,
    /// The probe analyses its samples itself from its kernel tracer's events
    /// (`timerlat`).
    ByItsTracer,
}

/// When a probe keeps its CPU (nearly) busy at real-time priority, so that a
/// run on every online CPU could starve the machine (`cli::load`'s check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Busy {
    /// Never: it sleeps between events.
    Never,
    /// When the run's `--policy` is real-time (a timer so fast its CPU is
    /// nearly never idle).
    UnderRunPolicy,
    /// When `--noise-policy` is real-time (a busy loop reading the clock).
    UnderNoisePolicy,
}

/// What paces a probe's events, as its results' `interval_ns` says (a
/// multi-period probe's variants are paced by their periods instead, each
/// result's `interval_ns` its period). The host holds an agent's results to
/// it (src/agent_host/bounds.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paced {
    /// `-i`: a timer's period or the pause between events (`interval_ns` = `-i`).
    Interval,
    /// `-i` or longer: a pace the probe widens to fit its own events
    /// (`interval_ns` ≥ `-i`).
    AtLeastInterval,
    /// Nothing: each event follows the one before (`interval_ns` 0).
    Unpaced,
}

/// A probe's facts, said once in its own file.
#[derive(Debug)]
pub struct ProbeInfo {
    /// The name `--probe` takes and results carry.
    pub name: &'static str,
    /// One line for `rtscope probes`.
    pub about: &'static str,
    /// Variants `--probe NAME:VARIANT` may select (empty: none selectable,
    /// e.g. variants made from `--periods`). A selector matches a variant it
    /// equals or a leading part of it: `mutex` selects `mutex/same-cpu` and
    /// `mutex/cross-cpu`.
    pub variants: &'static [&'static str],
    /// Whether the runner's implicit warm-up pass (at least 50 ms, samples
    /// discarded) helps: it brings the pages the measuring loop touches into
    /// memory. The kernel tracer probes say no: their measurement runs in the
    /// kernel, whose tracer, threads and buffers are made anew for each run,
    /// so a warm-up would only set the tracer up and tear it down once more.
    pub(crate) warms_up: bool,
    /// How `--trace-threshold` analyses its late samples.
    pub(crate) traced: Traced,
    /// The periods it runs one after another when `--periods` is not given
    /// (its variants are the periods); empty: it runs at `-i`, and a
    /// scenario's `periods` make one plan entry per period.
    pub(crate) default_periods: &'static [u64],
    /// When it keeps a CPU busy at real-time priority.
    pub(crate) busy: Busy,
    /// Its samples are operation counts per `--tm-interval`, not latencies
    /// (`throughput`).
    pub(crate) counts_operations: bool,
    /// The kernel tracer it drives, if any.
    pub(crate) kernel_tracer: Option<super::tracer::Kind>,
    /// Whether it runs under `--policy deadline` (SCHED_DEADLINE).
    pub(crate) runs_under_deadline: bool,
    /// Real-time priorities it uses, from -p down (-p needs at least this
    /// many levels); 0: just -p, nothing to check.
    pub(crate) priority_levels: u8,
    /// It counts priority-order violations (the `violations` metric of
    /// `rtscope check` applies to it).
    pub(crate) counts_violations: bool,
    /// It searches the highest sustainable rate: overruns are its result
    /// (shown in its own table), not a defect of the run.
    pub(crate) rate_search: bool,
    /// The probe-specific `rtscope run` flags it reads (besides -i, -D, -p,
    /// --policy, -a, which every probe reads).
    pub flags: &'static [&'static str],
    /// It runs `-t` measuring threads (the pair probes, `migrate`, `pi`,
    /// `throughput` and the tracers size their threads themselves).
    pub(crate) reads_threads: bool,
    /// The second series each variant's threads carry besides their
    /// latency, as a suffix of the variant (`periodic`: `/period-error`).
    pub(crate) series_suffix: Option<&'static str>,
    /// What paces its events (and so its results' `interval_ns`).
    pub(crate) paced: Paced,
}

impl ProbeInfo {
    /// The facts of a plain probe; each probe's `INFO` starts from this.
    pub(crate) const PLAIN: ProbeInfo = ProbeInfo {
        name: "",
        about: "",
        variants: &[],
        warms_up: true,
        traced: Traced::No,
        default_periods: &[],
        busy: Busy::Never,
        counts_operations: false,
        kernel_tracer: None,
        runs_under_deadline: false,
        priority_levels: 0,
        counts_violations: false,
        rate_search: false,
        flags: &[],
        reads_threads: false,
        series_suffix: None,
        paced: Paced::Interval,
    };

    /// Whether it runs several periods itself (`--periods`).
    pub fn multi_period(&self) -> bool {
        !self.default_periods.is_empty()
    }

    /// Whether `--trace-threshold` analyses its late samples with the
    /// threshold tracing session (`trace::TraceSession`).
    pub(crate) fn traced_by_session(&self) -> bool {
        matches!(self.traced, Traced::TimerMethod | Traced::Handoff)
    }
}

/// Every probe, once, in the order `rtscope probes` lists them.
pub(crate) static REGISTRY: &[&dyn Probe] = &[
    &super::timer::TimerProbe,
    &super::periodic::PeriodicProbe,
    &super::sem::SemProbe,
    &super::pipe::PipeProbe,
    &super::mq::MqProbe,
    &super::signal::SignalProbe,
    &super::switch::SwitchProbe,
    &super::preempt::PreemptProbe,
    &super::noise::NoiseProbe,
    &super::maxrate::MaxrateProbe,
    &super::migrate::MigrateProbe,
    &super::pi::PiProbe,
    &super::throughput::ThroughputProbe,
    &super::timerlat::TimerlatProbe,
    &super::osnoise::OsnoiseProbe,
    &super::hwlat::HwlatProbe,
];

/// The probe called `name`.
pub fn probe_by_name(name: &str) -> Option<&'static dyn Probe> {
    REGISTRY.iter().copied().find(|p| p.info().name == name)
}

/// The facts of the probe called `name` (None: not a probe of ours, e.g. an
/// imported tool's).
pub fn info(name: &str) -> Option<&'static ProbeInfo> {
    probe_by_name(name).map(|p| p.info())
}

/// Every probe's facts, in registry order.
pub fn infos() -> impl Iterator<Item = &'static ProbeInfo> {
    REGISTRY.iter().map(|p| p.info())
}

/// Every probe's name, in registry order.
pub fn names() -> Vec<&'static str> {
    infos().map(|i| i.name).collect()
}

/// Whether `name` is a probe and `fact` holds for it (false for a name that
/// is not ours).
pub(crate) fn is(name: &str, fact: impl Fn(&ProbeInfo) -> bool) -> bool {
    info(name).is_some_and(fact)
}
