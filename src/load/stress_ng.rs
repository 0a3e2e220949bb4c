//! The stress-ng backend: the command line that makes a phase's load with
//! stress-ng (the well-kept load generator of this field) instead of the
//! built-in generators. The stressors per load are each load's
//! `stress_ng_args` (table in docs/loads.md); this file adds what every
//! stress-ng load gets:
//!
//! - `--temp-path DIR`: its files go to the load's temp dir on the
//!   filesystem under test, removed with it;
//! - `--timeout`: the planned phase length plus a minute, so even a stress-ng
//!   that lost its parent and its load process ends by itself;
//! - `--metrics-brief` to its log, and `--yaml <load dir>/stress-ng.yaml`:
//!   its bogo-ops per stressor, which become the load's counters
//!   (`bogo_ops.<stressor>`, see [`bogo_ops`]).
//!
//! Placement is inherited: the load process pins itself to `--load-cpus`
//! before starting stress-ng, and stress-ng's workers inherit the affinity and
//! SCHED_OTHER. stress-ng keeps its workers in its process group and stops
//! them on SIGTERM, which is how the load process stops it.

use std::path::Path;

use super::LoadKind;

/// Where stress-ng writes its metrics, inside the load's temp dir.
pub(crate) const METRICS_FILE: &str = "stress-ng.yaml";

/// Full argv for stress-ng making `kind` with `workers` workers.
pub(crate) fn argv(stress_ng: &Path, kind: &LoadKind, workers: usize, dir: &Path, timeout_s: u64) -> Vec<String> {
    let mut v = vec![stress_ng.display().to_string()];
    if let Some(load) = kind.load() {
        v.extend(load.stress_ng_args(workers, dir));
    }
    v.extend([
        "--temp-path".to_string(),
        dir.display().to_string(),
        "--timeout".to_string(),
        format!("{timeout_s}s"),
        "--metrics-brief".to_string(),
        "--yaml".to_string(),
        dir.join(METRICS_FILE).display().to_string(),
    ]);
    v
}

/// Bogo-ops per stressor from stress-ng's YAML metrics: `metrics:` holds
/// `- stressor: NAME` items, each with a `bogo-ops: N` line.
pub(crate) fn bogo_ops(yaml: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stressor: Option<String> = None;
    for line in yaml.lines() {
        let t = line.trim().trim_start_matches("- ");
        if let Some(name) = t.strip_prefix("stressor:") {
            stressor = Some(name.trim().to_string());
        } else if let (Some(n), Some(name)) = (t.strip_prefix("bogo-ops:"), stressor.take()) {
            if let Ok(n) = n.trim().parse::<f64>() {
                out.push((name, n as u64));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_kind_maps_to_stressors() {
        for k in super::super::KINDS.iter() {
            let v = argv(Path::new("/usr/bin/stress-ng"), k, 2, Path::new("/d"), 70);
            assert!(v[1].starts_with("--"), "{k:?}: {v:?}");
            assert!(v.iter().any(|a| a == "2"), "{k:?} workers missing: {v:?}");
            assert_eq!(&v[v.len() - 6..], ["/d", "--timeout", "70s", "--metrics-brief", "--yaml", "/d/stress-ng.yaml"]);
        }
    }
}

#[cfg(test)]
mod metrics_tests {
    #[test]
    fn bogo_ops_per_stressor() {
        let y = "---\nsystem-info:\n      cpus: 2\n\nmetrics:\n    - stressor: cpu\n      bogo-ops: 550\n      bogo-ops-per-second-real-time: 272.9\n\n    - stressor: udp\n      bogo-ops: 83250\n";
        assert_eq!(super::bogo_ops(y), vec![("cpu".to_string(), 550), ("udp".to_string(), 83250)]);
        assert!(super::bogo_ops("").is_empty());
    }
}
