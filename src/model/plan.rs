//! What was asked: the run's [`Plan`] with its probe options
//! ([`ProbeOptions`]), and the scenario it came from ([`ScenarioRecord`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;

/// Everything needed to rerun the experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Plan {
    pub probes: Vec<String>,
    pub phases: Vec<String>,
    pub duration_ns: Nanos,
    pub interval_ns: Nanos,
    pub priority: u8,
    /// fifo / rr / other.
    pub policy: String,
    pub threads: usize,
    /// CPUs the measuring threads are pinned to, round-robin.
    pub cpus: Vec<usize>,
    pub dma_latency: bool,
    pub worst_k: usize,
    /// `--trace-threshold` / `--trace-buffer` / `--trace-max`, when tracing was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TracePlan>,
    /// Probe-specific options (absent in files written before they existed).
    #[serde(default)]
    pub probe_options: ProbeOptions,
}

impl Plan {
    /// A plan of `probes` over load `phases`, each probe run measuring for
    /// `duration_ns` at `interval_ns`. What it does not say is unknown: no
    /// priority (0), policy "unknown", no threads or CPUs, no DMA latency
    /// hold, no worst samples, no tracing, default probe options — set the
    /// fields the plan knows.
    pub fn new(probes: Vec<String>, phases: Vec<String>, duration_ns: Nanos, interval_ns: Nanos) -> Plan {
        Plan {
            probes,
            phases,
            duration_ns,
            interval_ns,
            priority: 0,
            policy: "unknown".into(),
            threads: 0,
            cpus: Vec::new(),
            dma_latency: false,
            worst_k: 0,
            trace: None,
            probe_options: ProbeOptions::default(),
        }
    }
}

/// Probe-specific options of the plan (the `rtscope run` flags of
/// `cli::probe_opts`), validated: the one type the plan carries, the probes
/// are told (`measure::ProbeRun`) and the result records. Times in ns.
///
/// In the file (schema v1): an option not known is 0 (`iterations`,
/// `sender_priority`: 0 = not given) or absent; an imported run knows none.
/// `chain` and `migrate_*` are recorded only when a planned probe reads
/// them (`cli::probe_opts::settings`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProbeOptions {
    /// Variants chosen per probe with `--probe NAME:VARIANT`; a probe absent
    /// here runs every variant.
    #[serde(default)]
    pub variants: BTreeMap<String, Vec<String>>,
    /// `--periods` as given (empty: each probe's default).
    #[serde(default)]
    pub periods_ns: Vec<u64>,
    #[serde(default)]
    pub msg_size: usize,
    #[serde(default)]
    pub noise_threshold_ns: u64,
    #[serde(default)]
    pub noise_policy: NoisePolicy,
    /// `--iterations`: events per variant (None, 0 in the file: until the
    /// duration ends).
    #[serde(default, with = "zero_is_none")]
    pub iterations: Option<u64>,
    #[serde(default)]
    pub back_to_back: bool,
    /// `--sender-priority` (None, 0 in the file: one below the plan's priority).
    #[serde(default, with = "zero_is_none")]
    pub sender_priority: Option<u8>,
    /// `--pi-burst`: the `pi` probe's medium-priority burst (0 in files
    /// written before it existed, and then not written back).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub pi_burst_ns: u64,
    /// `--tm-interval`: the `throughput` probe's counting interval.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub tm_interval_ns: u64,
    /// `--policy deadline`: `--dl-runtime` and `--dl-deadline` as given
    /// (absent: the defaults, 60 % of the deadline and the period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_runtime_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_deadline_ns: Option<u64>,
    /// `--chain`: threads in `signal:chain` (0 in files before it existed).
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub chain: usize,
    /// `migrate`: busy time per period, pause between periods, allowed
    /// start difference (0 in files before they existed).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub migrate_run_ns: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub migrate_sleep_ns: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub migrate_max_err_ns: u64,
    /// True when -a or -t was given: probes that default to one CPU
    /// (`noise`, `maxrate`) then use the plan's threads and CPUs. Not
    /// recorded (the plan's `threads` and `cpus` are).
    #[serde(skip)]
    pub cpus_explicit: bool,
}

/// `--noise-policy`: the scheduling policy of the noise probes' busy loop
/// or kernel threads; written "other", "fifo", "rr", or "" when not known
/// (an imported run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoisePolicy {
    #[default]
    #[serde(rename = "")]
    Unknown,
    Other,
    Fifo,
    Rr,
}

/// An optional number written as the number, 0 for None (schema v1's
/// `iterations` and `sender_priority`).
mod zero_is_none {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize + Default + Copy, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        v.unwrap_or_default().serialize(s)
    }

    pub fn deserialize<'de, T: Deserialize<'de> + Default + PartialEq, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
        let v = T::deserialize(d)?;
        Ok((v != T::default()).then_some(v))
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// Where the experiment's plan came from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScenarioRecord {
    /// The scenario's name (a preset's name, or the file's `name`).
    pub name: String,
    /// "preset" or the scenario file's path.
    pub source: String,
    /// The exact scenario text the run followed (TOML).
    pub text: String,
    #[serde(default)]
    pub tags: std::collections::BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_options_are_written_as_schema_v1_says() {
        let o = ProbeOptions { iterations: Some(20), noise_policy: NoisePolicy::Fifo, pi_burst_ns: 0, cpus_explicit: true, ..ProbeOptions::default() };
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!((v["iterations"].as_u64(), v["sender_priority"].as_u64(), v["noise_policy"].as_str()), (Some(20), Some(0), Some("fifo")));
        assert!(v.get("pi_burst_ns").is_none() && v.get("cpus_explicit").is_none() && v.get("chain").is_none());
        let back: ProbeOptions = serde_json::from_value(v).unwrap();
        assert_eq!((back.iterations, back.sender_priority, back.cpus_explicit), (Some(20), None, false));
        let unknown: ProbeOptions = serde_json::from_str(r#"{"noise_policy": "", "iterations": 0}"#).unwrap();
        assert_eq!(unknown, ProbeOptions::default());
    }
}
