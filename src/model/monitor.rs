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
