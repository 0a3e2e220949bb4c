//! Flags that do nothing are refused: a probe option given on the command
//! line to a run none of whose probes reads it (`--pi-burst` with only
//! `timer`, `--iterations` with `noise`, ...) is bad input, exit 2, naming
//! the flag and the probes that read it. Silence would let a user believe a
//! setting shaped a measurement it never touched.
//!
//! The rule is the probes' own descriptors: each probe lists the flags it
//! reads in its `INFO.flags` (src/measure, checked against the probe files
//! by tests/layers.rs); [`probe_flags`] turns them into flag → probes. Only
//! flags given on the command line are checked; a default is never an error.

use std::collections::BTreeSet;

use crate::error::BadInput;

/// A probe option of `rtscope run`/`monitor` and the probes that read it.
pub struct ProbeFlag {
    /// As the user types it.
    pub flag: &'static str,
    /// clap's id of the argument (the field name in `ProbeOpts`).
    pub id: String,
    pub probes: Vec<&'static str>,
}

/// Every probe option and the probes that read it, in registry order.
pub fn probe_flags() -> Vec<ProbeFlag> {
    let flags = crate::units::first_seen(crate::measure::infos().flat_map(|i| i.flags.iter().copied()));
    flags
        .into_iter()
        .map(|flag| ProbeFlag {
            flag,
            id: flag.trim_start_matches("--").replace('-', "_"),
            probes: crate::measure::infos().filter(|i| i.flags.contains(&flag)).map(|i| i.name).collect(),
        })
        .collect()
}

/// Refuse the first flag in `explicit` (clap ids given on the command line)
/// that none of `probes` (the run's probe names, without variants) reads.
pub fn check_probe_flags<'a>(explicit: &BTreeSet<String>, probes: impl IntoIterator<Item = &'a str>) -> Result<(), BadInput> {
    let run: Vec<&str> = crate::units::first_seen(probes);
    for f in probe_flags() {
        if explicit.contains(&f.id) && !f.probes.iter().any(|p| run.contains(p)) {
            let (one, readers) = match f.probes.as_slice() {
                [p] => (true, format!("the {p} probe")),
                ps => (false, format!("the probes {}", ps.join(", "))),
            };
            return Err(BadInput(format!(
                "{}: only {readers} {} it, and this run measures {}: the flag would do nothing; drop {} or measure {} too",
                f.flag,
                if one { "reads" } else { "read" },
                run.join(", "),
                f.flag,
                if one { "that probe" } else { "one of them" },
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_flag_read_by_one_of_the_probes_passes() {
        assert!(check_probe_flags(&ids(&["iterations", "duration"]), ["timer", "sem"]).is_ok());
        assert!(check_probe_flags(&ids(&[]), ["timer"]).is_ok());
    }

    #[test]
    fn a_flag_no_probe_reads_is_refused_by_name() {
        let e = check_probe_flags(&ids(&["pi_burst"]), ["timer", "timer"]).unwrap_err().0;
        assert!(e.starts_with("--pi-burst: only the pi probe reads it, and this run measures timer:"), "{e}");
        let e = check_probe_flags(&ids(&["noise_policy"]), ["timer", "sem"]).unwrap_err().0;
        assert!(e.contains("the probes noise, osnoise read it") && e.contains("timer, sem"), "{e}");
    }

    #[test]
    fn every_flag_names_probes_and_a_distinct_id() {
        let fs = probe_flags();
        for (i, f) in fs.iter().enumerate() {
            assert!(!f.probes.is_empty() && f.flag.starts_with("--"));
            assert_eq!(f.flag.trim_start_matches("--").replace('-', "_"), f.id);
            assert!(fs[..i].iter().all(|g| g.id != f.id));
        }
    }
}
