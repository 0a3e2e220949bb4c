//! Checks of the probe selection against the probes and this system:
//! [`VariantSelection`] collects `--probe NAME[:VARIANT]` items (each
//! selector checked against the probe's variants), and
//! [`check_against_system`] checks what needs the CPU set or a system limit.

use std::collections::BTreeMap;

use crate::error::BadInput;
use crate::measure::{selects, Probe, ProbeSettings};

/// Largest `--msg-size` for `pipe` (pipes have no per-message limit; this
/// only keeps the buffers small). `mq` is bounded by the system's limit.
pub const MAX_MSG_SIZE: usize = 1 << 20;
/// The system's POSIX message-queue size limit, read at plan time.
pub const MQ_MSGSIZE_MAX_PATH: &str = "/proc/sys/fs/mqueue/msgsize_max";

/// The system's mq message size limit (8192 on a default Linux).
pub fn mq_msgsize_max() -> usize {
    std::fs::read_to_string(MQ_MSGSIZE_MAX_PATH).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(8192)
}

/// Collects `--probe NAME[:VARIANT]` items, checking each selector against
/// the probe's variants.
#[derive(Debug, Default)]
pub struct VariantSelection {
    // None: every variant of the probe.
    chosen: BTreeMap<String, Option<Vec<String>>>,
}

impl VariantSelection {
    pub fn add(&mut self, probe: &dyn Probe, sel: Option<&str>) -> Result<(), BadInput> {
        let name = probe.name();
        let Some(sel) = sel else {
            self.chosen.insert(name.to_string(), None);
            return Ok(());
        };
        let all = probe.variants();
        if all.is_empty() {
            return Err(BadInput(format!(
                "--probe {name}:{sel}: the probe '{name}' has no variants to choose from{}; use --probe {name}",
                if matches!(name, "periodic" | "maxrate") { " (its variants are the --periods)" } else { "" }
            )));
        }
        if sel.is_empty() || !all.iter().any(|v| selects(sel, v)) {
            return Err(BadInput(format!(
                "--probe {name}:{sel}: unknown variant '{sel}' of '{name}'; allowed: {} (or a leading part such as '{}')",
                all.join(", "),
                all[0].split('/').next().unwrap_or(all[0])
            )));
        }
        let entry = self.chosen.entry(name.to_string()).or_insert_with(|| Some(Vec::new()));
        if let Some(v) = entry {
            if !v.iter().any(|x| x == sel) {
                v.push(sel.to_string());
            }
        }
        Ok(())
    }

    /// Selectors of the probes that run only some variants.
    pub fn finish(self) -> BTreeMap<String, Vec<String>> {
        self.chosen.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
    }
}

/// Checks that need the system (the mq size limit) or the CPU set: a
/// cross-CPU variant asked for by name needs two CPUs in -a.
pub fn check_against_system(probes: &[String], s: &ProbeSettings, cpus: &[usize]) -> Result<(), BadInput> {
    if cpus.len() < 2 {
        for (probe, sels) in &s.variants {
            let all = crate::measure::probe_by_name(probe).map(|p| p.variants()).unwrap_or(&[]);
            for sel in sels {
                let picked: Vec<&&str> = all.iter().filter(|v| selects(sel, v)).collect();
                if !picked.is_empty() && picked.iter().all(|v| v.ends_with("/cross-cpu")) {
                    return Err(BadInput(format!(
                        "--probe {probe}:{sel}: a cross-CPU variant needs two CPUs, but -a/--affinity gives only {}; give two CPUs (e.g. -a 0,1) or choose a same-cpu variant",
                        crate::units::cpu_list_str(cpus)
                    )));
                }
            }
        }
    }
    if probes.iter().any(|p| p == "mq") {
        let max = mq_msgsize_max();
        if s.msg_size > max {
            return Err(BadInput(format!(
                "--msg-size {}: larger than this system's message-queue limit of {max} bytes ({MQ_MSGSIZE_MAX_PATH}); use 1 to {max}, or raise the limit as root",
                s.msg_size
            )));
        }
    }
    Ok(())
}

/// Checks of `pi` and `throughput` against the plan: their priorities (pi
/// uses -p, -p − 1 and -p − 2; throughput's preemptive test -p down to
/// -p − 5) and, for throughput, that each test's share of the probe's
/// duration holds at least one whole `--tm-interval`.
pub fn check_suites(plan: &crate::plan::RunPlan, entries: &[crate::plan::ProbeEntry]) -> Result<(), BadInput> {
    use crate::sys::sched::Policy;
    let rt = plan.policy != Policy::Other;
    for e in entries {
        if let Some(why) = crate::measure::tracer::Kind::of_probe(&e.probe).and_then(crate::measure::tracer::check) {
            return Err(BadInput(why));
        }
        let need = match e.probe.as_str() {
            "pi" => 3,
            "throughput" => 6,
            _ => continue,
        };
        if rt && plan.priority < need {
            return Err(BadInput(format!(
                "-p/--priority {}: the {} probe runs threads at -p down to -p - {}, so it needs -p {need} or more; raise -p (e.g. -p 80)",
                plan.priority,
                e.probe,
                need - 1
            )));
        }
        if e.probe == "throughput" {
            let all = crate::measure::throughput::VARIANTS;
            let n = all.iter().filter(|v| plan.probe.wants("throughput", v)).count().max(1) as u64;
            let share = e.duration_ns / n;
            let interval = plan.probe.tm_interval_ns;
            if share < interval {
                return Err(BadInput(format!(
                    "--tm-interval {}: each of the {n} throughput test(s) gets {} of the probe's duration {}, less than one interval; give -D {} or more, or a shorter --tm-interval",
                    crate::units::fmt_ns(interval),
                    crate::units::fmt_ns(share),
                    crate::units::fmt_ns(e.duration_ns),
                    crate::units::fmt_ns(interval * n)
                )));
            }
        }
    }
    Ok(())
}
