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
//! - `--metrics-brief` to its log (bogo-ops, for a human reading the log).
//!
//! Placement is inherited: the load process pins itself to `--load-cpus`
//! before starting stress-ng, and stress-ng's workers inherit the affinity and
//! SCHED_OTHER. stress-ng keeps its workers in its process group and stops
//! them on SIGTERM, which is how the load process stops it.

use std::path::Path;

use super::LoadKind;

/// Full argv for stress-ng making `kind` with `workers` workers.
pub fn argv(stress_ng: &Path, kind: &LoadKind, workers: usize, dir: &Path, timeout_s: u64) -> Vec<String> {
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
    ]);
    v
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
            assert_eq!(&v[v.len() - 4..], ["/d", "--timeout", "70s", "--metrics-brief"]);
        }
    }
}
