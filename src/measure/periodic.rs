//! The `periodic` probe: periodic tasks at each of `--periods` (default
//! 10 ms, 30 ms, 50 ms, the Korean paper's), one variant per period, run one
//! after another, each for its share of -D.
//!
//! Each task is the timer method (`timer::timer_loop_with`: absolute
//! clock_nanosleep, overruns counted) and records two things:
//! - variant `PERIOD` (e.g. `10ms`): the wake-up latency, now − due;
//! - variant `PERIOD/period-error`: the period error, the actual
//!   start-to-start interval minus the nominal one. It is signed, so the
//!   entry's histogram, percentiles and worst samples hold |error| and its
//!   `signed` field the signed min, max and mean (negative: a start came
//!   early relative to the one before).
//!
//! Since start_k = due_k + latency_k, the error of start k is latency_k −
//! latency_{k−1}: exact, and also right across an overrun (due then jumps by
//! whole periods, which are nominal). There is one error sample per pair of
//! consecutive starts (samples − 1 per thread). The mean telescopes to
//! (last latency − first latency)/(n − 1), so it is near 0 unless the
//! latencies drift.
//!
//! Under `--policy deadline` each variant's threads are SCHED_DEADLINE tasks
//! whose reservation period is the variant's period (see [`super::dl`]).

use std::sync::atomic::Ordering;

use super::recorder::{tail_capacity, Recorder};
use super::registry::ProbeInfo;
use super::timer::timer_loop_with;
use super::{select, spawn_measuring_with, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::model::SignedStats;
use crate::trace::LateSamples;
use crate::units::fmt_ns;

pub(crate) struct PeriodicProbe;

/// The Korean paper's periods.
pub(crate) const DEFAULT_PERIODS: [u64; 3] = [10_000_000, 30_000_000, 50_000_000];

/// Running signed summary, O(1) per sample.
#[derive(Debug, Clone, Copy)]
struct Signed {
    n: u64,
    min: i64,
    max: i64,
    sum: i128,
}

impl Signed {
    fn new() -> Signed {
        Signed { n: 0, min: i64::MAX, max: i64::MIN, sum: 0 }
    }
    #[inline]
    fn add(&mut self, x: i64) {
        self.n += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        self.sum += x as i128;
    }
    fn stats(&self) -> SignedStats {
        if self.n == 0 {
            return SignedStats { samples: 0, min_ns: 0, max_ns: 0, mean_ns: 0.0, clamped: false };
        }
        SignedStats { samples: self.n, min_ns: self.min, max_ns: self.max, mean_ns: self.sum as f64 / self.n as f64, clamped: false }
    }
}

/// This probe's facts (see [`super::registry`]).
/// The suffix of a variant's period-error series.
const PERIOD_ERROR: &str = "/period-error";

pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "periodic",
    about: "periodic tasks at each --periods: wake-up latency and signed period error",
    traced: super::registry::Traced::TimerMethod,
    default_periods: &DEFAULT_PERIODS,
    runs_under_deadline: true,
    flags: &["--periods", "--iterations"],
    reads_threads: true,
    series_suffix: Some(PERIOD_ERROR),
    ..ProbeInfo::PLAIN
};

impl Probe for PeriodicProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let periods = ctx.run.probe.periods_or(&DEFAULT_PERIODS);
        let share = select::share(ctx, periods.len());
        let max = select::max_events(ctx);
        let specs: Vec<ThreadSpec> = (0..ctx.run.threads).map(|i| ThreadSpec::from_run(ctx.run, i)).collect();
        let mut out = Vec::new();
        for &period in &periods {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            let variant = fmt_ns(period);
            ctx.board.reset(&format!("periodic {variant}"));
            let specs: Vec<ThreadSpec> = specs.iter().cloned().map(|s| s.with_period(ctx.run, period)).collect();
            // Each thread hands back its period-error recorder and signed
            // sums, and (SCHED_DEADLINE) the kernel's runtime overruns.
            let measured = spawn_measuring_with(ctx, &specs, Some(variant.clone()), period, |spec, rec, stop, barrier| {
                let mut abs = Recorder::with_tail(spec.index, share, ctx.run.worst_k, tail_capacity(share, period));
                let mut signed = Signed::new();
                let mut prev: Option<u64> = None;
                let late = LateSamples::arm(ctx.trace, spec.index, spec.cpu);
                let dl = spec.dl.filter(|_| super::dl::current_is_deadline());
                barrier.wait();
                let on_sample = |latency: u64, at: u64, seq: u64| {
                    late.after(latency, seq);
                    if let Some(p) = prev {
                        let e = latency as i64 - p as i64;
                        abs.record(e.unsigned_abs(), at, seq - 1);
                        signed.add(e);
                    }
                    prev = Some(latency);
                };
                let (err, dl_overruns) = if let Some(dl) = dl {
                    match super::dl::deadline_loop_with(rec, stop, dl, share, max, on_sample) {
                        Ok(n) => (None, Some(n)),
                        Err(e) => (Some(e), None),
                    }
                } else {
                    (timer_loop_with(rec, stop, period, share, max, on_sample), None)
                };
                (err, (abs, signed, dl_overruns))
            })?;
            let mut outs = Vec::with_capacity(measured.len());
            let mut extra_outs = Vec::new();
            for (mut o, (abs, signed, dl_overruns)) in measured {
                o.extra.runtime_overruns = dl_overruns;
                let mut eo = ThreadOutcome {
                    thread: o.thread,
                    cpu: o.cpu,
                    variant: Some(format!("{variant}{PERIOD_ERROR}")),
                    interval_ns: period,
                    recorder: abs,
                    setup: Vec::new(),
                    error: None,
                    extra: Default::default(),
                    windows: Vec::new(),
                };
                eo.extra.signed = Some(signed.stats());
                extra_outs.push(eo);
                outs.push(o);
            }
            out.append(&mut outs);
            out.append(&mut extra_outs);
        }
        Ok(out)
    }
}
