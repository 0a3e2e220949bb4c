//! Where each run setting comes from, decided once: a flag given on the
//! command line, else the scenario file or preset, else rtscope's default
//! (clap's default value). A scenario and a preset exclude each other, so
//! this is the whole order: flag > scenario > preset > default.
//!
//! [`Given`] records which flags were on the command line, read from clap's
//! value sources (`ArgMatches::value_source`) when argv is parsed, once
//! ([`super::parse_or_exit`]); [`layer`] applies a scenario's value under
//! that rule, field by field and by type (`cli::load`).

use std::collections::BTreeSet;

use clap::parser::ValueSource;
use clap::ArgMatches;

/// Declares [`Given`]: one `bool` per named setting, filled from the clap
/// ids of the flags given (a setting's id is its field name in `RunArgs`).
macro_rules! given_settings {
    ($($id:ident),* $(,)?) => {
        /// The run flags given on the command line. The named fields are the
        /// settings a scenario can also give, or that shape the experiment;
        /// every flag given is kept too (clap ids), for the rules of which
        /// flags apply (`super::applies`).
        #[derive(Debug, Clone, Default)]
        pub(crate) struct Given {
            $(pub $id: bool,)*
            ids: BTreeSet<String>,
        }

        impl Given {
            /// From the clap ids of the flags given on the command line.
            pub(crate) fn from_ids(ids: BTreeSet<String>) -> Given {
                Given { $($id: ids.contains(stringify!($id)),)* ids }
            }
        }
    };
}

given_settings!(duration, interval, priority, policy, threads, affinity, probes, loads, worst, json, out, dl_runtime, dl_deadline, msg_size);

impl Given {
    /// The flags of a `run`/`monitor` whose values came from the command
    /// line (not clap's defaults).
    pub(crate) fn from_matches(m: &ArgMatches) -> Given {
        let given = m.ids().filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine));
        Given::from_ids(given.map(|id| id.as_str().to_string()).collect())
    }

    /// Was the flag with this clap id given? For the rules that go by a
    /// probe's list of flags (`measure::ProbeInfo::flags`).
    pub(crate) fn has(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Every flag given, as clap ids, in id order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(String::as_str)
    }

    /// No flag that shapes the experiment was given: a bare `rtscope run`,
    /// which runs the default preset.
    pub(crate) fn is_bare(&self) -> bool {
        let shaping = [self.duration, self.interval, self.priority, self.policy, self.threads, self.affinity, self.probes, self.loads, self.worst];
        !shaping.contains(&true)
    }
}

/// flag > scenario > default for one setting: `slot` holds the flag's value
/// (or clap's default) and takes the scenario's unless the flag was given.
pub(crate) fn layer<T>(slot: &mut T, given: bool, scenario: Option<T>) {
    if let (false, Some(v)) = (given, scenario) {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_flag_wins_over_the_scenario_and_the_scenario_over_the_default() {
        let g = Given::from_ids(["duration".to_string(), "pi_burst".to_string()].into());
        assert!(g.duration && !g.interval && g.has("pi_burst") && !g.is_bare());
        let (mut d, mut i) = (5u64, 1u64);
        layer(&mut d, g.duration, Some(9));
        layer(&mut i, g.interval, Some(9));
        layer(&mut i, g.interval, None);
        assert_eq!((d, i), (5, 9));
        assert!(Given::from_ids(["pi_burst".to_string()].into()).is_bare());
    }
}
