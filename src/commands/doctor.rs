//! `rtscope doctor`: audit the host (see `crate::doctor`) and print the findings as a
//! listing or JSON. Findings never change the exit code; a `--cpus` naming a CPU that is
//! not online is bad input (exit 2).

use crate::units::CpuSet;
use crate::cli::DoctorArgs;
use crate::doctor::{self, DoctorReport, SysRoot};
use crate::error::{BadInput, EXIT_OK};

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
    let findings = doctor::audit_host(&root, &host, &cpus);
    let cpus = if cpus.is_empty() { vec![0] } else { cpus };
    let report = DoctorReport { schema_version: doctor::SCHEMA_VERSION, cpus, findings };
    let text = if args.json { doctor::render_json(&report)? } else { doctor::render_text(&report) };
    print!("{text}");
    Ok(EXIT_OK)
}
