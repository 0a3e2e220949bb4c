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
    /// The phase was named with `--phase-name` (not `idle`): its load was
    /// started outside rtscope (a kernel-lab guest load, the user's own), so
    /// no load of rtscope's does not make it idle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_load: bool,
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
    /// Busy time of each online CPU over the phase (/proc/stat: everything
    /// but idle and iowait). Empty in results written before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_busy: Vec<CpuBusy>,
    /// CPU time of rtscope's own threads over the phase (getrusage
    /// RUSAGE_SELF): what of the busy time is the measurement's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtscope_cpu_ns: Option<Nanos>,
}

/// The shortest phase whose busy share is computed: /proc/stat counts in
/// ticks of USER_HZ (10 ms), up to a tick off at each end per CPU, so a
/// share over less than a second could be off by more than 2 % (a stop at
/// a phase's start would read as 100 % busy).
pub const MIN_CHECKED_NS: u64 = 1_000_000_000;

/// One CPU's busy time over a phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuBusy {
    pub cpu: usize,
    pub busy_ns: Nanos,
}

impl SystemEvidence {
    /// The share of `cpus`' time over the phase that other work (not
    /// rtscope's threads) kept busy, from 0 to 1; None when the phase has no
    /// per-CPU busy time, none of `cpus` is in it, or it lasted less than
    /// [`MIN_CHECKED_NS`]. rtscope's own time is
    /// all taken off `cpus` (its threads may have run elsewhere): the share
    /// is a lower bound.
    pub fn others_busy_share(&self, cpus: &[usize]) -> Option<f64> {
        let own = self.rtscope_cpu_ns?.0;
        let measured: Vec<&CpuBusy> = self.cpu_busy.iter().filter(|c| cpus.contains(&c.cpu)).collect();
        if measured.is_empty() {
            return None;
        }
        let busy: u64 = measured.iter().map(|c| c.busy_ns.0).fold(0u64, u64::saturating_add);
        others_share(busy, own, self.duration_ns.0, measured.len())
    }
}

/// The share, from 0 to 1, of `cpus` CPUs' time over `duration_ns` that
/// their `busy_ns` leaves once `taken_off_ns` (rtscope's, the target's) is
/// taken off; None without CPUs or under [`MIN_CHECKED_NS`]. The one rule of
/// the idle check, native phases and a target's host alike.
pub(crate) fn others_share(busy_ns: u64, taken_off_ns: u64, duration_ns: u64, cpus: usize) -> Option<f64> {
    if duration_ns < MIN_CHECKED_NS || cpus == 0 {
        return None;
    }
    Some((busy_ns.saturating_sub(taken_off_ns) as f64 / (duration_ns as f64 * cpus as f64)).clamp(0.0, 1.0))
}
