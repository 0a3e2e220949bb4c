//! The built-in presets: scenario TOML embedded in the binary, parsed by the
//! same code as a scenario file (so they cannot drift), listed by
//! `rtscope presets` and run with `rtscope run --preset NAME`. Each source
//! experiment's preset is documented in docs/presets.md with the publication
//! it mirrors and what was changed to run on Linux.

use super::{parse, Scenario};
use crate::error::BadInput;

/// (name, TOML text), in the order `rtscope presets` lists them.
pub(crate) const PRESETS: &[(&str, &str)] = &[
    ("quick", include_str!("presets/quick.toml")),
    ("standard", include_str!("presets/standard.toml")),
    ("sched-latency", include_str!("presets/sched-latency.toml")),
    ("irq-latency-bins", include_str!("presets/irq-latency-bins.toml")),
    ("periodic-jitter", include_str!("presets/periodic-jitter.toml")),
    ("irq-ctxsw-4khz", include_str!("presets/irq-ctxsw-4khz.toml")),
    ("rhealstone", include_str!("presets/rhealstone.toml")),
    ("thread-metric", include_str!("presets/thread-metric.toml")),
];

/// The preset a bare `rtscope run` runs.
pub(crate) const DEFAULT: &str = "quick";

pub(crate) fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// Parse the preset called `name`.
pub(crate) fn get(name: &str) -> Result<Scenario, BadInput> {
    let (_, text) = PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| BadInput(format!("--preset: unknown preset '{name}'; available: {} (see `rtscope presets`)", names().join(", "))))?;
    parse(text, &format!("preset {name}"), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_is_named_as_listed() {
        for (name, _) in PRESETS {
            let s = get(name).unwrap_or_else(|e| panic!("preset {name}: {e}"));
            assert_eq!(s.file.name.as_deref(), Some(*name));
            assert!(s.file.description.as_deref().is_some_and(|d| !d.is_empty()), "{name} has no description");
        }
    }

    #[test]
    fn quick_is_timer_idle_then_mixed() {
        let s = get("quick").unwrap();
        let names: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["idle", "mixed"]);
        assert_eq!(s.phases[1].loads.len(), 6);
    }
}
