//! The load phases as they ran ([`PhaseRecord`]): their loads, the exact
//! commands and the evidence that they ran.

use serde::{Deserialize, Serialize};

use super::*;

/// One load phase as it ran: when, which loads, and what they did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseRecord {
    pub name: String,
    /// RFC 3339, UTC: when the loads were started.
    pub started_at: String,
    /// RFC 3339, UTC: when the loads were stopped ("" while running).
    #[serde(default)]
    pub finished_at: String,
    /// How long the loads ran before the first probe started.
    pub settle_ns: Nanos,
    /// Every load of the phase (empty for `idle`).
    #[serde(default)]
    pub loads: Vec<LoadRecord>,
    /// System-wide counters over the phase, loads start → loads stop.
    #[serde(default)]
    pub system: SystemEvidence,
    /// False until the loads were stopped and their evidence recorded.
    #[serde(default)]
    pub complete: bool,
}

/// One load of a phase: what was started and the evidence that it ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadRecord {
    /// cpu, memory, io, net, irq, sched, or cmd.
    pub name: String,
    /// builtin, stress-ng or cmd.
    pub engine: String,
    /// The exact command lines started (argv, joined shell-style).
    pub commands: Vec<String>,
    /// CPUs the load was placed on.
    #[serde(default)]
    pub cpus: Vec<usize>,
    pub workers: usize,
    /// Process id of the load process (also its process-group id).
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub evidence: LoadEvidence,
}

/// What the kernel accounted to a load's processes (wait4 rusage of the load
/// process, including every child it reaped) plus the counters the built-in
/// generators keep.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadEvidence {
    /// User + system CPU seconds consumed by the load.
    pub cpu_s: f64,
    pub voluntary_ctxt_switches: u64,
    pub involuntary_ctxt_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Bytes the load wrote to storage (rusage blocks out × 512).
    pub storage_bytes_written: u64,
    /// Counters of the built-in generators (e.g. bytes_written, fsyncs,
    /// packets_sent, messages, wakeups, ops); empty for external commands.
    #[serde(default)]
    pub counters: std::collections::BTreeMap<String, u64>,
    /// How the load process ended: "exit 0", "killed by signal 9", ...
    #[serde(default)]
    pub exit: String,
}

/// System-wide deltas over a phase (from /proc/stat, /proc/vmstat and
/// /sys/class/net/lo/statistics).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SystemEvidence {
    pub duration_ns: Nanos,
    pub interrupts: u64,
    pub context_switches: u64,
    pub page_faults: u64,
    pub loopback_tx_packets: u64,
    pub loopback_tx_bytes: u64,
}
