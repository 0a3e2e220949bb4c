//! Checks of the probe selection against the probes and this system:
//! [`VariantSelection`] collects `--probe NAME[:VARIANT]` items (each
//! selector checked against the probe's variants), and
//! [`check_against_system`] checks what needs the CPU set or a system limit.

use std::collections::BTreeMap;

use crate::error::BadInput;
use crate::measure::{selects, Probe};
use crate::model::ProbeOptions;

/// Largest `--msg-size` for `pipe` (pipes have no per-message limit; this
/// only keeps the buffers small). `mq` is bounded by the system's limit.
pub(crate) const MAX_MSG_SIZE: usize = 1 << 20;
/// The system's POSIX message-queue size limit, read at plan time.
pub(crate) const MQ_MSGSIZE_MAX_PATH: &str = "/proc/sys/fs/mqueue/msgsize_max";

/// The system's mq message size limit (8192 on a default Linux).
pub(crate) fn mq_msgsize_max() -> usize {
    std::fs::read_to_string(MQ_MSGSIZE_MAX_PATH).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(8192)
}

/// Collects `--probe NAME[:VARIANT]` items, checking each selector against
/// the probe's variants.
#[derive(Debug, Default)]
pub(crate) struct VariantSelection {
    // None: every variant of the probe.
    chosen: BTreeMap<String, Option<Vec<String>>>,
}

impl VariantSelection {
    pub(crate) fn add(&mut self, probe: &dyn Probe, sel: Option<&str>) -> Result<(), BadInput> {
        let name = probe.name();
        let Some(sel) = sel else {
            self.chosen.insert(name.to_string(), None);
            return Ok(());
        };
        let all = probe.variants();
        if all.is_empty() {
            return Err(BadInput(format!(
                "--probe {name}:{sel}: the probe '{name}' has no variants to choose from{}; use --probe {name}",
                if probe.info().multi_period() { " (its variants are the --periods)" } else { "" }
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
    pub(crate) fn finish(self) -> BTreeMap<String, Vec<String>> {
        self.chosen.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
    }
}

/// Checks that need the system (the mq size limit) or the CPU set: a
/// cross-CPU variant asked for by name needs two CPUs in -a.
pub(crate) fn check_against_system(probes: &[String], s: &ProbeOptions, cpus: &[usize]) -> Result<(), BadInput> {
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
pub(crate) fn check_suites(plan: &crate::plan::RunPlan, entries: &[crate::plan::ProbeEntry]) -> Result<(), BadInput> {
    use crate::sys::sched::Policy;
    let rt = plan.measuring.policy != Policy::Other;
    for e in entries {
        let Some(info) = crate::measure::info(&e.probe) else { continue };
        if let Some(why) = info.kernel_tracer.and_then(crate::measure::tracer::check) {
            return Err(BadInput(why));
        }
        let need = info.priority_levels;
        if need == 0 {
            continue;
        }
        if rt && plan.measuring.priority < need {
            return Err(BadInput(format!(
                "-p/--priority {}: the {} probe runs threads at -p down to -p - {}, so it needs -p {need} or more; raise -p (e.g. -p 80)",
                plan.measuring.priority,
                e.probe,
                need - 1
            )));
        }
        if info.counts_operations {
            let n = info.variants.iter().filter(|v| plan.measuring.probe.wants(info.name, v)).count().max(1) as u64;
            let share = e.duration_ns / n;
            let interval = plan.measuring.probe.tm_interval_ns;
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

/// The scheduler's feature list (debugfs), where the HRTICK rule is read.
pub(crate) const SCHED_FEATURES_PATHS: &[&str] = &["/sys/kernel/debug/sched/features", "/sys/kernel/debug/sched_features"];

/// Is the scheduler's HRTICK feature on? None when debugfs cannot be read.
pub(crate) fn hrtick_enabled() -> Option<bool> {
    SCHED_FEATURES_PATHS.iter().find_map(|p| std::fs::read_to_string(p).ok()).map(|s| s.split_whitespace().any(|w| w == "HRTICK"))
}

/// Runtimes below this need HRTICK (cyclicdeadline's rule): without it the
/// kernel enforces a reservation's runtime only at the scheduler tick.
pub(crate) const HRTICK_BELOW_NS: u64 = 2_000_000;

/// The probes that run under `--policy deadline`, in `rtscope probes` order.
pub(crate) fn deadline_probes() -> Vec<&'static str> {
    crate::measure::infos().filter(|i| i.runs_under_deadline).map(|i| i.name).collect()
}

/// Checks of `--policy deadline` and of `migrate` against the plan and the
/// kernel, before anything runs (exit 2 naming the setting and the fix):
/// the probes that run under SCHED_DEADLINE, the reservation of every
/// period against the kernel's rules, the HRTICK rule, the affinity rule and
/// the kernel's admission test (tried for real); `migrate`'s priorities
/// and period.
pub(crate) fn check_deadline(plan: &crate::plan::RunPlan, entries: &[crate::plan::ProbeEntry]) -> Result<(), BadInput> {
    use crate::sys::sched::{self, Policy};
    check_migrate(plan, entries)?;
    if plan.measuring.policy != Policy::Deadline {
        if plan.measuring.probe.dl_runtime_ns.is_some() || plan.measuring.probe.dl_deadline_ns.is_some() {
            return Err(BadInput("--dl-runtime/--dl-deadline: only with --policy deadline; add --policy deadline or drop them".into()));
        }
        return Ok(());
    }
    if let Some(e) = entries.iter().find(|e| !crate::measure::runs_under_deadline(&e.probe)) {
        return Err(BadInput(format!(
            "--policy deadline: the {} probe does not run under SCHED_DEADLINE ({} do); run it in another run with --policy fifo",
            e.probe,
            deadline_probes().join(" and ")
        )));
    }
    let online = sched::online_cpus();
    if plan.measuring.probe.cpus_explicit && !online.iter().all(|c| plan.measuring.cpus.contains(c)) {
        return Err(BadInput(format!(
            "-a/--affinity {}: a SCHED_DEADLINE thread cannot be pinned (the kernel wants its affinity to span the root domain, here CPUs {}); drop -a (give -t for the thread count), or run rtscope inside an exclusive cpuset partition of those CPUs",
            crate::units::cpu_list_str(&plan.measuring.cpus),
            crate::units::cpu_list_str(&online)
        )));
    }
    let read_us = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let min_us = read_us("/proc/sys/kernel/sched_deadline_period_min_us").unwrap_or(100);
    let max_us = read_us("/proc/sys/kernel/sched_deadline_period_max_us").unwrap_or(4_194_304);
    let periods = deadline_periods(plan, entries);
    for period in periods {
        check_reservation(plan, period, (min_us, max_us))?;
    }
    Ok(())
}

/// `migrate` needs a real-time policy, -p above its threads' priorities
/// and a duration of at least one of its periods.
fn check_migrate(plan: &crate::plan::RunPlan, entries: &[crate::plan::ProbeEntry]) -> Result<(), BadInput> {
    use crate::sys::sched::Policy;
    use crate::units::fmt_ns;
    for e in entries.iter().filter(|e| e.probe == "migrate") {
        if !matches!(plan.measuring.policy, Policy::Fifo | Policy::RoundRobin) {
            return Err(BadInput(format!(
                "--policy {}: the migrate probe measures real-time priority order (rt-migrate-test's method) and needs --policy fifo or rr",
                plan.measuring.policy.name()
            )));
        }
        let n = plan.measuring.cpus.len() + 1;
        if (plan.measuring.priority as usize) < n + 1 {
            return Err(BadInput(format!(
                "-p/--priority {}: migrate runs {n} threads at -p - {n} to -p - 1 (one more than the {} CPUs of -a), so it needs -p {} or more; raise -p (e.g. -p 95)",
                plan.measuring.priority,
                plan.measuring.cpus.len(),
                n + 1
            )));
        }
        let period = plan.measuring.probe.migrate_run_ns + plan.measuring.probe.migrate_sleep_ns;
        if period > e.duration_ns {
            return Err(BadInput(format!(
                "-D/--duration {}: shorter than one migrate period (--migrate-run {} + --migrate-sleep {}); give -D {} or more",
                fmt_ns(e.duration_ns),
                fmt_ns(plan.measuring.probe.migrate_run_ns),
                fmt_ns(plan.measuring.probe.migrate_sleep_ns),
                fmt_ns(2 * period)
            )));
        }
    }
    Ok(())
}

/// Every period a SCHED_DEADLINE thread of the plan runs at, once each,
/// shortest first: each probe's `-i`, or its own periods.
fn deadline_periods(plan: &crate::plan::RunPlan, entries: &[crate::plan::ProbeEntry]) -> Vec<u64> {
    let mut periods: Vec<u64> = Vec::new();
    for e in entries {
        match crate::measure::info(&e.probe) {
            Some(i) if i.multi_period() => {
                let ps = if !e.periods_ns.is_empty() { e.periods_ns.clone() } else { plan.measuring.probe.periods_or(i.default_periods) };
                periods.extend(ps);
            }
            _ => periods.push(e.interval_ns),
        }
    }
    periods.sort_unstable();
    periods.dedup();
    periods
}

/// The reservation of one period against the kernel's rules (period range
/// `min_us..=max_us`, runtime <= deadline <= period), the HRTICK rule and
/// the kernel's admission test.
fn check_reservation(plan: &crate::plan::RunPlan, period: u64, (min_us, max_us): (u64, u64)) -> Result<(), BadInput> {
    use crate::sys::sched;
    use crate::units::fmt_ns;
    let dl = plan.measuring.probe.dl_params(period);
    let what = format!("runtime {} deadline {} period {}", fmt_ns(dl.runtime_ns), fmt_ns(dl.deadline_ns), fmt_ns(dl.period_ns));
    if period < min_us * 1000 || period > max_us * 1000 {
        return Err(BadInput(format!(
            "-i/--interval {}: outside the kernel's SCHED_DEADLINE periods, {} to {} (kernel.sched_deadline_period_min_us / _max_us); give a period in that range",
            fmt_ns(period),
            fmt_ns(min_us * 1000),
            fmt_ns(max_us * 1000)
        )));
    }
    if dl.deadline_ns > dl.period_ns {
        return Err(BadInput(format!(
            "--dl-deadline {}: longer than the period {} (the kernel needs runtime <= deadline <= period); give --dl-deadline {} or less",
            fmt_ns(dl.deadline_ns),
            fmt_ns(period),
            fmt_ns(period)
        )));
    }
    if dl.runtime_ns < sched::DL_MIN_NS || dl.runtime_ns > dl.deadline_ns {
        return Err(BadInput(format!(
            "--dl-runtime {}: the kernel needs 1024ns <= runtime <= deadline ({}); give a runtime in that range",
            fmt_ns(dl.runtime_ns),
            fmt_ns(dl.deadline_ns)
        )));
    }
    if dl.runtime_ns < HRTICK_BELOW_NS && hrtick_enabled() != Some(true) {
        let state = match hrtick_enabled() {
            Some(_) => "it is off (NO_HRTICK in the scheduler features)".to_string(),
            None => format!("its state cannot be read ({} needs debugfs)", SCHED_FEATURES_PATHS[0]),
        };
        return Err(BadInput(format!(
            "--policy deadline ({what}): a runtime under 2ms needs the scheduler's HRTICK feature (as cyclicdeadline says: \"For less than 2ms run times, you need to have HRTICK enabled\"); {state}. Fix: give -i 4ms (runtime 2.4ms) or --dl-runtime 2ms with -i 2ms or more; or as root: mount -t debugfs none /sys/kernel/debug; echo HRTICK > {}",
            SCHED_FEATURES_PATHS[0]
        )));
    }
    match sched::deadline_admitted(dl, plan.measuring.threads) {
        Ok(()) => {}
        // No thread to try it on: the run's own threads would not start either.
        Err(nix::errno::Errno::EAGAIN) => {
            return Err(BadInput(format!(
                "--policy deadline: whether {} thread(s) with {what} are admitted is not known: no thread could be started to try it \
                 (EAGAIN: the user's process limit, RLIMIT_NPROC / ulimit -u, reached?); raise the limit or lower -t",
                plan.measuring.threads
            )))
        }
        Err(err) => {
            return Err(BadInput(format!(
                "--policy deadline: {} thread(s) with {what} were not admitted: {}",
                plan.measuring.threads,
                crate::measure::dl::why(err)
            )))
        }
    }
    Ok(())
}
