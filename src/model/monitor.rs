//! `rtscope monitor` runs: how the windows were cut ([`MonitorRecord`]) and
//! one closed window's summary ([`Window`]).

use serde::{Deserialize, Serialize};

use super::*;

/// What a monitor run was: its windows are rows of the history's
/// `windows` table under `id`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MonitorRecord {
    /// Unique per monitor run: "HOST/STARTED_AT/PID".
    pub id: String,
    pub window_ns: Nanos,
    /// Phase cycle as given (`idle:5m`, ...); empty: one phase throughout.
    #[serde(default)]
    pub cycle: Vec<String>,
    /// Windows closed (and stored).
    pub windows: u64,
    /// The window rows the history database had not taken when the monitor
    /// ended (it was away): a result file that carries them is the rescue
    /// file, and storing it (`rtscope import`) appends them to the history's
    /// windows. Empty, and not written, otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unstored_windows: Vec<Window>,
}

impl MonitorRecord {
    /// The record of a monitor starting: no window closed yet.
    pub fn new(id: String, window_ns: Nanos, cycle: Vec<String>) -> MonitorRecord {
        MonitorRecord { id, window_ns, cycle, windows: 0, unstored_windows: Vec::new() }
    }

    /// The indices of the windows this monitor closed (`0..windows`) that
    /// are not among `have` (the rows a history holds): what a report of
    /// the stored windows must say it lacks.
    pub fn missing(&self, have: &[Window]) -> Vec<u64> {
        let seen: std::collections::BTreeSet<u64> = have.iter().map(|w| w.index).collect();
        (0..self.windows).filter(|i| !seen.contains(i)).collect()
    }
}

/// One closed window of a monitor run, for one probe/variant/thread (or
/// merged over threads: `thread` and `cpu` null).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Window {
    /// 0, 1, ... in the order the windows closed.
    pub index: u64,
    /// RFC 3339, UTC: when the window's measurement started.
    pub started_at: String,
    pub duration_ns: Nanos,
    pub phase: String,
    pub probe: String,
    pub variant: Option<String>,
    pub thread: Option<usize>,
    pub cpu: Option<usize>,
    pub samples: u64,
    pub overruns: u64,
    pub min_ns: Nanos,
    pub p50_ns: Nanos,
    pub p99_ns: Nanos,
    pub max_ns: Nanos,
    pub sum_ns: f64,
    /// The window's histogram (for Prometheus' buckets); not stored.
    #[serde(skip)]
    pub histogram: Vec<Bucket>,
}
