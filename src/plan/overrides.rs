//! Run settings set over what the command line, scenario or preset gives:
//! a factor experiment's levels (`factors::knobs::RunSetting`, one
//! descriptor each) and a monitor's window. Typed values, never flags: the
//! face layers them as flags given (`cli::overrides`; a flag wins over the
//! scenario, the scenario over the default) before the plan is validated,
//! so a level is checked by the same rules as the flag it stands for.

use std::path::PathBuf;

use crate::sys::sched::Policy;

/// A run setting an override can set, for the question "did the command
/// line set it too?" (a factor and its flag both given is ambiguous).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    Loads,
    DmaLatency,
    Priority,
    Policy,
    Cpus,
    Interval,
}

/// Typed run settings over the command line's; `None` keeps its value.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Overrides {
    /// The load phases, as `--load` lists them (empty: idle).
    pub(crate) loads: Option<Vec<String>>,
    /// `/dev/cpu_dma_latency` held at 0 (true) or not.
    pub(crate) dma_latency: Option<bool>,
    pub(crate) priority: Option<u8>,
    pub(crate) policy: Option<Policy>,
    /// The measured CPUs (`-a`).
    pub(crate) cpus: Option<Vec<usize>>,
    /// The timer period, ns.
    pub(crate) interval_ns: Option<u64>,
    /// Each probe run's length, ns.
    pub(crate) duration_ns: Option<u64>,
    /// The result file.
    pub(crate) json: Option<PathBuf>,
    /// The probes are the flags' own: never the default preset.
    pub(crate) own_probes: bool,
}
