//! `rtscope doctor`: audit the host (see `crate::doctor`) and print the findings as a
//! listing or JSON. Findings never change the exit code; a `--cpus` naming a CPU that is
//! not online is bad input (exit 2).

use crate::cli::DoctorArgs;
use crate::doctor::{self, DoctorReport, SysRoot};
use crate::error::{BadInput, EXIT_OK};
use crate::units::CpuSet;

pub(crate) fn cmd(args: &DoctorArgs) -> anyhow::Result<u8> {
    let root = match &args.root {
        Some(dir) => SysRoot::new(dir),
        None => SysRoot::from_env(),
    };
    let host = crate::sysinfo::fingerprint(&root);
    let online = host.cpus_online.clone();
    let cpus = match &args.cpus {
        Some(CpuSet(c)) => {
            let absent: Vec<usize> = c.iter().copied().filter(|x| !online.is_empty() && !online.contains(x)).collect();
            if !absent.is_empty() {
                return Err(BadInput(format!(
                    "--cpus {}: CPU {} is not online on this host; online CPUs are {} (from \
                     /sys/devices/system/cpu/online). Pick CPUs from that list.",
                    doctor::fmt_cpus(c),
                    doctor::fmt_cpus(&absent),
                    doctor::fmt_cpus(&online)
                ))
                .into());
            }
            c.clone()
        }
        None => online,
    };
    // On the live system, instances left by killed rtscope runs are removed
    // first (as every `rtscope run` does); the audit reports what remains.
    if args.root.is_none() && nix::unistd::geteuid().is_root() {
        if let Some(tracefs) = crate::sys::tracefs::find_mounted() {
            for name in crate::sys::tracefs::remove_stale_instances(&tracefs) {
                eprintln!("removed tracing instance {name} left by a killed rtscope run");
            }
        }
    }
    if args.root.is_none() {
        // This user's SysV sets, queue names and load temp dirs (the default load dir) of killed runs.
        let dir = crate::cli::load::default_load_dir();
        for what in crate::runner::remove_leftovers(&dir, &mut Vec::new()) {
            eprintln!("removed {what}");
        }
    }
    if args.root.is_none() {
        // Knobs a killed factor experiment left changed: restored before the audit.
        crate::factors::journal::recover_and_say();
    }
    let mut findings = doctor::audit_host(&root, &host, &cpus);
    if args.root.is_none() {
        cite_experiments(&mut findings, &host.hostname, None);
    }
    let cpus = if cpus.is_empty() { vec![0] } else { cpus };
    let report = DoctorReport { schema_version: doctor::SCHEMA_VERSION, cpus, findings };
    let text = if args.json {
        doctor::render_json(&report)?
    } else {
        let width = crate::report::term::width(false);
        doctor::render_text(&report, &|s, first, rest| crate::report::term::paragraph(s, first, rest, width))
    };
    print!("{text}");
    Ok(EXIT_OK)
}

/// Doctor's advice, backed by measurement where there is one: a finding
/// about a knob that a factor experiment in the history varied on this
/// host gets the measured effect ("measured: ×0.60 p99.9 [×0.48, ×0.69] …,
/// experiment fx-…") appended to its reason. No history, no citation.
fn cite_experiments(findings: &mut [crate::doctor::Finding], hostname: &str, db: Option<&std::path::Path>) {
    let Ok(loc) = crate::store::Location::resolve(db) else { return };
    let Ok(Some(mut store)) = crate::store::Store::open_if_exists(&loc) else { return };
    for f in findings.iter_mut() {
        let knobs: Vec<&str> = crate::factors::knobs::names()
            .into_iter()
            .filter(|n| crate::factors::knobs::find(n).ok().and_then(|k| k.doctor()) == Some(f.id.as_str()))
            .collect();
        if knobs.is_empty() {
            continue;
        }
        for (_, c) in crate::factors::stored::measured_for_doctor(&mut store, hostname, &knobs) {
            f.why = format!("{} {c}.", f.why.trim_end());
        }
    }
}
