//! Which variants of a probe run, and for how long each.
//!
//! `-D` is the time of one probe; its selected variants share it equally
//! (a 2 s run of `sem` still runs all ten variants, 200 ms each), so the
//! progress bar's total (probes × phases × -D) stays true. `--iterations`
//! can end a variant earlier.

use super::ProbeCtx;

/// The variants of `probe` this plan runs, in the probe's order.
pub(crate) fn chosen(ctx: &ProbeCtx<'_>, probe: &str, all: &[&str]) -> Vec<String> {
    all.iter().filter(|v| ctx.run.probe.wants(probe, v)).map(|v| v.to_string()).collect()
}

/// One variant's share of the probe's duration when `n` variants run.
pub(crate) fn share(ctx: &ProbeCtx<'_>, n: usize) -> u64 {
    ctx.run.duration_ns / n.max(1) as u64
}

/// Events per variant: `--iterations`, or no limit.
pub(crate) fn max_events(ctx: &ProbeCtx<'_>) -> u64 {
    ctx.run.probe.iterations.unwrap_or(u64::MAX)
}

/// Threads for probes that default to one CPU (`noise`, `maxrate`): one
/// thread on the plan's last CPU, unless `-a`/`-t` was given, then the
/// plan's threads round-robin over its CPUs. Why: a busy or very fast loop
/// at SCHED_FIFO on every CPU can starve a small machine; that must be
/// asked for explicitly.
pub(crate) fn one_cpu_unless_told(ctx: &ProbeCtx<'_>, policy: crate::sys::sched::Policy) -> Vec<super::ThreadSpec> {
    if ctx.run.probe.cpus_explicit {
        (0..ctx.run.threads)
            .map(|i| super::ThreadSpec { policy, dl: None, cpu: Some(ctx.run.cpus[i % ctx.run.cpus.len()]), ..super::ThreadSpec::from_run(ctx.run, i) })
            .collect()
    } else {
        vec![super::ThreadSpec { index: 0, cpu: ctx.run.cpus.last().copied(), policy, priority: ctx.run.priority, dl: None }]
    }
}
