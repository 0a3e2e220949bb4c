//! `rtscope doctor`: audit the host (see `crate::doctor`) and print the findings as a
//! listing or JSON. Findings never change the exit code; a `--cpus` naming a CPU that is
//! not online is bad input (exit 2).

use crate::units::CpuSet;
use crate::cli::DoctorArgs;
use crate::doctor::{self, DoctorReport, SysRoot};
use crate::error::{BadInput, EXIT_OK};

pub fn cmd(args: &DoctorArgs) -> anyhow::Result<u8> {
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
    let findings = doctor::audit_host(&root, &host, &cpus);
    let cpus = if cpus.is_empty() { vec![0] } else { cpus };
    let report = DoctorReport { schema_version: doctor::SCHEMA_VERSION, cpus, findings };
    let text = if args.json { doctor::render_json(&report)? } else { doctor::render_text(&report) };
    print!("{text}");
    Ok(EXIT_OK)
}
