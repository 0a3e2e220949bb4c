//! The `maxrate` probe: the maximum sustainable event rate (seed 001's "max
//! interrupt rate" table). The timer method (`timer::timer_loop_with`) runs
//! at each of `--periods` (default 200 µs, 100 µs, 50 µs, 20 µs, 10 µs), one
//! after another, each for its share of -D; per period the entry reports
//! samples, overruns (missed deadlines, rule 3) and the latency
//! distribution, and `rtscope run` prints the seed's table (period,
//! samples, overruns, missed-period ratio, p99, max; `report::maxrate`).
//!
//! One thread on the plan's last CPU unless -a/-t is given (a 10 µs timer at
//! SCHED_FIFO keeps its CPU nearly busy). Variant: the period, e.g. `50us`.

use std::sync::atomic::Ordering;

use super::registry::ProbeInfo;
use super::timer::timer_loop_with;
use super::{select, spawn_measuring, Probe, ProbeCtx, ThreadOutcome};
use crate::trace::LateSamples;
use crate::units::fmt_ns;

pub(crate) struct MaxrateProbe;

/// Seed 001's periods, longest first.
pub(crate) const DEFAULT_PERIODS: [u64; 5] = [200_000, 100_000, 50_000, 20_000, 10_000];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "maxrate",
    about: "max sustainable timer rate: overruns and missed-period ratio at each --periods",
    traced: super::registry::Traced::TimerMethod,
    default_periods: &DEFAULT_PERIODS,
    busy: super::registry::Busy::UnderRunPolicy,
    rate_search: true,
    flags: &["--periods"],
    reads_threads: true,
    ..ProbeInfo::PLAIN
};

impl Probe for MaxrateProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let periods = ctx.run.probe.periods_or(&DEFAULT_PERIODS);
        let share = select::share(ctx, periods.len());
        let specs = select::one_cpu_unless_told(ctx, ctx.run.policy);
        let mut out = Vec::new();
        for &period in &periods {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            let variant = fmt_ns(period);
            ctx.board.reset(&format!("maxrate {variant}"));
            out.extend(spawn_measuring(ctx, &specs, Some(variant), period, |spec, rec, stop, barrier| {
                let late = LateSamples::arm(ctx.trace, spec.index, spec.cpu);
                barrier.wait();
                timer_loop_with(rec, stop, period, share, u64::MAX, |latency, _, seq| late.after(latency, seq))
            })?);
        }
        Ok(out)
    }
}
