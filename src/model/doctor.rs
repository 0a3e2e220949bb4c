//! `rtscope doctor`'s findings as stored in every run's host fingerprint
//! (`host.doctor`) and printed by `rtscope doctor --json` (docs/schema.md,
//! "doctor"). The checks that make them live in the doctor module.

use serde::{Deserialize, Serialize};

/// How much a finding matters for worst-case latency, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Set as a real-time host wants it.
    Ok,
    /// Worth knowing when reading results; not a defect by itself.
    Info,
    /// Likely adds latency or noise; fix it before trusting worst cases.
    Warn,
    /// Makes real-time measurements meaningless or bounded only loosely.
    Bad,
}

impl Severity {
    /// Lower-case name as used in JSON and the terminal listing.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Bad => "bad",
        }
    }
}

/// One file read and the value found there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The kernel path (`/proc/cmdline`), independent of any fake root.
    pub path: String,
    /// What was read (trimmed, possibly shortened), or the doctor's words for a file the kernel does not expose.
    pub value: String,
}

/// One audited fact about the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable dotted identifier, e.g. `preempt.model`, `mm.thp`.
    pub id: String,
    pub severity: Severity,
    /// One line saying what was found.
    pub title: String,
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Why this matters for latency.
    pub why: String,
    /// The exact change to make (boot parameter, sysctl, command); `None` when nothing to do.
    #[serde(default)]
    pub fix: Option<String>,
}

impl Finding {
    /// A finding with no evidence, no explanation and no fix yet.
    pub fn new(id: &str, severity: Severity, title: impl Into<String>) -> Finding {
        Finding { id: id.to_string(), severity, title: title.into(), evidence: Vec::new(), why: String::new(), fix: None }
    }

    /// Why it matters for latency.
    pub fn why(mut self, why: impl Into<String>) -> Finding {
        self.why = why.into();
        self
    }

    /// The exact change to make.
    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }

    /// The files read and the values found.
    pub fn evidence(mut self, ev: Vec<Evidence>) -> Finding {
        self.evidence = ev;
        self
    }
}
