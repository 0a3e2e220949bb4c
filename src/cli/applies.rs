//! Flags that do nothing are refused: a flag given on the command line that
//! nothing in the run reads is bad input, exit 2, naming the flag and what
//! reads it, before anything is measured or written. Silence would let a
//! user believe a setting shaped a measurement it never touched.
//!
//! One check, [`check_flags`], for both paths of `rtscope run`:
//! - with `--target`, a flag neither the agent nor the host reads
//!   ([`target_flags`]: the flags of the agent's plan line, the host's own
//!   and the target path's, each list where its fact is declared);
//! - a probe option none of the run's probes reads (`--pi-burst` with only
//!   `timer`, `--iterations` with `noise`, ...). The rule is the probes' own
//!   descriptors: each probe lists the flags it reads in its `INFO.flags`
//!   (src/measure, checked against the probe files by tests/layers.rs);
//!   [`probe_flags`] turns them into flag → probes;
//! - `-p` under `--policy other`: SCHED_OTHER threads have no real-time
//!   priority, so only the probes that run their threads at
//!   `--noise-policy` (they read that flag) read `-p`, and only when it is
//!   `fifo`.
//!
//! Only flags given on the command line are checked; a default is never an
//! error. The tables of which flags apply with `--target` are here, in one
//! file: the host's ([`HOST_SIDE_FLAGS`], with the analysis and store
//! groups) and the target session's ([`SESSION_FLAGS`]); the agent's are the
//! keys of its plan line (`agent_host::session::PLAN_KEYS`).

use super::given::Given;
use crate::error::BadInput;
use crate::sys::sched::Policy;

/// What a run's flags are checked against: its probes (names without
/// variants), its policies, and whether an agent measures it.
pub(crate) struct RunShape<'a> {
    pub(crate) probes: Vec<&'a str>,
    pub(crate) policy: Policy,
    pub(crate) noise_policy: Policy,
    pub(crate) target: bool,
}

/// Refuse the first flag given on the command line that nothing in `run`
/// reads.
pub(crate) fn check_flags(given: &Given, run: &RunShape<'_>) -> Result<(), BadInput> {
    if run.target {
        check_target_flags(given)?;
    } else if given.has("target") {
        // Only `rtscope monitor` gets here with --target (run takes the target path).
        return Err(BadInput("--target: rtscope monitor measures this system only; drop --target (rtscope run --target measures another system)".into()));
    } else if given.has("target_silence") {
        return Err(BadInput(
            "--target-silence: only a run with --target reads it (how long the agent may say nothing); drop --target-silence or measure a target".into(),
        ));
    } else if given.has("target_transcript") {
        return Err(BadInput("--target-transcript: only a run with --target has a session to record; drop it or measure a target".into()));
    }
    check_probe_flags(given, run.probes.iter().copied())?;
    check_threads(given, run)?;
    check_priority(given, run)
}

/// `-t` given where no probe of the run runs `-t` threads (the pair
/// probes run one recording thread, `migrate` CPUs + 1, ...).
fn check_threads(given: &Given, run: &RunShape<'_>) -> Result<(), BadInput> {
    if !given.threads || run.probes.iter().any(|p| crate::measure::is(p, |i| i.reads_threads)) {
        return Ok(());
    }
    let readers: Vec<&str> = crate::measure::infos().filter(|i| i.reads_threads).map(|i| i.name).collect();
    Err(BadInput(format!(
        "-t/--threads: only the probes {} run -t measuring threads, and this run measures {} (each sizes its own threads): the flag would do nothing; drop -t or measure one of them too",
        readers.join(", "),
        crate::units::first_seen(run.probes.iter().copied()).join(", ")
    )))
}

/// Flags of [`super::RunArgs`] (with its [`super::load::LoadArgs`]) outside the host's
/// groups (see [`host_side_flags`]) that the host acts on whoever runs the
/// probes: none of them reaches the probes, so they apply with `--target`
/// as they do natively.
const HOST_SIDE_FLAGS: &[&str] = &[
    // The name the result gives the one phase when its load is not rtscope's
    // (on a target: a load the user started there).
    "phase_name",
    // Where the result file is written.
    "json",
    "out",
    // What this terminal prints, and in which unit.
    "quiet",
    "ns",
];

/// The clap ids of the `rtscope run` flags the host acts on whoever runs
/// the probes: two groups that are the host's as a whole,
/// [`super::analysis_opts::AnalysisOpts`] (the end-of-run analysis is made from the
/// result, wherever it was measured) and [`super::store_opts::StoreOpts`] (the
/// history database is on this host), then [`HOST_SIDE_FLAGS`]. The groups'
/// flags are read from their own declarations, so a flag added to one of
/// them comes with it.
fn host_side_flags() -> Vec<String> {
    fn ids_of<T: clap::Args>() -> Vec<String> {
        T::augment_args(clap::Command::new("group")).get_arguments().map(|a| a.get_id().to_string()).collect()
    }
    let groups = [ids_of::<super::analysis_opts::AnalysisOpts>(), ids_of::<super::store_opts::StoreOpts>()];
    groups.into_iter().flatten().chain(HOST_SIDE_FLAGS.iter().map(|id| id.to_string())).collect()
}

/// The flags of the target path itself: `--target` (the agent, and how it
/// is reached), `--target-silence` (how long it may say nothing) and
/// `--target-transcript` (where the session's bytes are kept). Every
/// other flag a target takes reaches the agent in a plan line or is the
/// host's ([`HOST_SIDE_FLAGS`]).
const SESSION_FLAGS: &[&str] = &["target_silence", "target", "target_transcript"];

/// The clap ids of the `rtscope run` flags that apply with `--target`, in
/// the order the refusal lists them, each taken from where its fact lives:
/// the flags that set a key of the agent's plan line
/// ([`PLAN_KEYS`](crate::agent_host::session::PLAN_KEYS), in the line's order),
/// the flags the host acts on whoever measures ([`host_side_flags`]),
/// then the target path's own ([`SESSION_FLAGS`]).
pub(crate) fn target_flags() -> Vec<String> {
    let to_agent = crate::agent_host::session::PLAN_KEYS.iter().filter_map(|(_, flag)| flag.map(str::to_string));
    let session = SESSION_FLAGS.iter().map(|id| id.to_string());
    crate::units::first_seen(to_agent.chain(host_side_flags()).chain(session))
}

/// clap's `rtscope run`, for the flags it declares.
fn run_command() -> clap::Command {
    use clap::CommandFactory;
    super::Cli::command().find_subcommand("run").cloned().expect("rtscope has a run subcommand")
}

/// A flag of `rtscope run` as its short form when it has one (`-D`), else
/// as [`flag_of`]; `--load` with the loads an agent runs.
fn short_of(id: &str) -> String {
    if id == "loads" {
        return "--load cpu|memory".into();
    }
    let short = run_command().get_arguments().find(|a| a.get_id() == id).and_then(|a| a.get_short());
    short.map_or_else(|| flag_of(id), |c| format!("-{c}"))
}

/// The flag as a user writes it, from its clap id.
pub(crate) fn flag_of(id: &str) -> String {
    match id {
        "probes" => "--probe".into(),
        "loads" => "--load".into(),
        "scenario" => "SCENARIO.toml".into(),
        _ => format!("--{}", id.replace('_', "-")),
    }
}

/// With `--target`: refuse the first flag given that is not one of
/// [`target_flags`], listing those that are.
fn check_target_flags(given: &Given) -> Result<(), BadInput> {
    // Ids of flattened groups (`LoadArgs`, `StoreOpts`) come with their flags: not flags.
    // `--width` and `--wide` are every command's (the layout, not the measurement).
    let is_group = |id: &str| id.starts_with(|c: char| c.is_ascii_uppercase()) || id == "width" || id == "wide";
    let takes = target_flags();
    match given.ids().find(|&id| !is_group(id) && !takes.iter().any(|t| t == id)) {
        Some(bad) => Err(BadInput(format!(
            "{} does not apply with --target (the agent measures on the target); flags that do: {}. Drop {}",
            flag_of(bad),
            takes.iter().filter(|id| *id != "target").map(|id| short_of(id)).collect::<Vec<_>>().join(", "),
            flag_of(bad)
        ))),
        None => Ok(()),
    }
}

/// `-p` given with SCHED_OTHER measuring threads: refused unless a probe of
/// the run runs its threads at `--noise-policy fifo`, where -p is read.
fn check_priority(given: &Given, run: &RunShape<'_>) -> Result<(), BadInput> {
    if run.policy == Policy::Deadline && given.priority {
        return Err(BadInput(
            "-p/--priority: --policy deadline runs the measuring threads under SCHED_DEADLINE, which has no priority (its runtime, deadline and period order them): the flag would do nothing; drop -p or give --policy fifo".into(),
        ));
    }
    if run.policy != Policy::Other || !given.priority {
        return Ok(());
    }
    let by_noise_policy: Vec<&str> = crate::measure::infos().filter(|i| i.flags.contains(&"--noise-policy")).map(|i| i.name).collect();
    if run.noise_policy != Policy::Other && run.probes.iter().any(|p| by_noise_policy.contains(p)) {
        return Ok(());
    }
    Err(BadInput(format!(
        "-p/--priority: with --policy other the measuring threads run SCHED_OTHER, which has no real-time priority, and only the probes {} read -p then (with --noise-policy fifo); this run measures {}: the flag would do nothing; drop -p or give --policy fifo",
        by_noise_policy.join(", "),
        crate::units::first_seen(run.probes.iter().copied()).join(", ")
    )))
}

/// A probe option of `rtscope run`/`monitor` and the probes that read it.
pub(crate) struct ProbeFlag {
    /// As the user types it.
    pub(crate) flag: &'static str,
    /// clap's id of the argument (the field name in `ProbeOpts`).
    pub(crate) id: String,
    pub(crate) probes: Vec<&'static str>,
}

/// Every probe option and the probes that read it, in registry order.
pub(crate) fn probe_flags() -> Vec<ProbeFlag> {
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

/// Refuse the first flag given that none of `probes` (the run's probe names, without variants) reads.
fn check_probe_flags<'a>(given: &Given, probes: impl IntoIterator<Item = &'a str>) -> Result<(), BadInput> {
    let run: Vec<&str> = crate::units::first_seen(probes);
    for f in probe_flags() {
        if given.has(&f.id) && !f.probes.iter().any(|p| run.contains(p)) {
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

    fn ids(v: &[&str]) -> Given {
        Given::from_ids(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn the_target_refusal_lists_every_flag_a_target_takes() {
        let e = check_target_flags(&ids(&["duration", "trace_threshold"])).unwrap_err().0;
        // Made from target_flags(): the plan line's flags, the host's, the session's.
        let want = "flags that do: --probe, -i, -D, -p, --policy, -a, -t, --worst, --periods, --iterations, --msg-size, --load cpu|memory, --deadline, --db, --no-store, --phase-name, --json, --out, -q, --ns, --target-silence, --target-transcript. Drop --trace-threshold";
        assert!(e.starts_with("--trace-threshold does not apply with --target") && e.ends_with(want), "{e}");
    }

    #[test]
    fn the_target_flags_are_flags_of_run_each_once() {
        let known: Vec<String> = run_command().get_arguments().map(|a| a.get_id().to_string()).collect();
        let takes = target_flags();
        assert!(takes.iter().all(|id| known.contains(id)), "not flags of rtscope run: {takes:?} vs {known:?}");
        assert_eq!(crate::units::first_seen(takes.iter()).len(), takes.len(), "{takes:?}");
        // Every other flag of run is refused, by name.
        for id in known.iter().filter(|id| !takes.contains(id)) {
            let e = check_target_flags(&ids(&[id])).unwrap_err().0;
            assert!(e.starts_with(&format!("{} does not apply with --target", flag_of(id))), "{e}");
        }
    }

    /// The text of `fn NAME` in `src` (to its closing brace at the line's start).
    fn fn_text<'a>(src: &'a str, name: &str) -> &'a str {
        let at = src.find(&format!("fn {name}(")).unwrap_or_else(|| panic!("no fn {name}"));
        &src[at..at + src[at..].find("\n}\n").expect("a closing brace")]
    }

    /// The run flags the target path reads: src/cli/target.rs (off `args`),
    /// the parts of the plan builder every site runs (src/cli/plan.rs) and
    /// the probe options an agent takes (`probe_opts::on_agent`, off `o`):
    /// the first field of each `args.`/`o.` path that is a flag of run
    /// (`args.load.loads` reads `loads`; `args.given` is no flag).
    fn read_by_the_target_path(known: &[String]) -> Vec<String> {
        let plan = include_str!("plan.rs");
        let mut parts = vec![(include_str!("target.rs"), "args."), (fn_text(include_str!("probe_opts.rs"), "on_agent"), "o.")];
        for f in ["measuring", "check_interval", "check_agent_range", "output", "output_path"] {
            parts.push((fn_text(plan, f), "args."));
        }
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let reads = parts.into_iter().flat_map(|(src, on)| {
            src.match_indices(on).filter(|(i, _)| !src[..*i].ends_with(ident)).filter_map(move |(i, m)| {
                let path = src[i + m.len()..].split(|c: char| !ident(c) && c != '.').next().unwrap_or("");
                path.split('.').find(|f| known.iter().any(|k| k == f)).map(str::to_string)
            })
        });
        crate::units::first_seen(reads)
    }

    #[test]
    fn every_flag_the_target_path_reads_applies_with_target() {
        let known: Vec<String> = run_command().get_arguments().map(|a| a.get_id().to_string()).collect();
        let read = read_by_the_target_path(&known);
        assert!(read.len() >= 8 && read.contains(&"periods".to_string()), "the scan found {read:?}");
        let takes = target_flags();
        let missing: Vec<&String> = read.iter().filter(|id| !takes.contains(id)).collect();
        assert!(missing.is_empty(), "the target path reads {missing:?}, which --target refuses: add its plan key to PLAN_KEYS or the flag to HOST_SIDE_FLAGS");
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
