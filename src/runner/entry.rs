//! One probe run of a plan entry: the warm-up, the measurement, and what it
//! leaves — the threads' set-up steps ([`absorb`]) and the result entries
//! ([`results_from`]). `run` warms up and locks memory per probe run
//! ([`warm_up`], [`super::MemoryLock`]); `monitor` locks once for all its
//! windows and measures each window with [`Measuring::measure`].

use std::sync::atomic::AtomicBool;

use crate::measure::distribution::{self, Member};
use crate::measure::{LiveBoard, Probe, ProbeCtx, ProbeRun, ThreadOutcome};
use crate::model::{Extras, ProbeResult, SetupStep, TraceWindow};
use crate::trace::TraceSession;

/// How long every probe run warms up at least (its samples discarded): one
/// pass of the probe's loop brings the pages it touches into memory, where
/// the [`super::MemoryLock`] keeps them, so the measurement takes no page fault.
pub(crate) const WARM_UP_MIN_NS: u64 = 50_000_000;

/// What every probe run of a session is given besides its own run description.
pub(crate) struct Measuring<'a> {
    pub(crate) board: &'a LiveBoard,
    pub(crate) stop: &'a AtomicBool,
    pub(crate) trace: Option<&'a TraceSession>,
}

impl Measuring<'_> {
    /// Run `probe` as `run` describes it; its threads' set-up
    /// steps go into `steps`, and a thread that failed fails the probe run.
    pub(crate) fn measure(&self, probe: &dyn Probe, run: &ProbeRun, steps: &mut Vec<SetupStep>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let outcomes = probe.run(&ProbeCtx { run, stop: self.stop, board: self.board, trace: self.trace })?;
        absorb(probe.info().name, &outcomes, steps)?;
        Ok(outcomes)
    }

    /// The warm-up: the probe's loop as `run` describes it, samples
    /// discarded and not traced.
    pub(crate) fn warm_up(&self, probe: &dyn Probe, run: &ProbeRun) -> anyhow::Result<()> {
        probe.run(&ProbeCtx { run, stop: self.stop, board: self.board, trace: None })?;
        Ok(())
    }
}

/// The warm-up of `probe`'s run `warm` (the entry's own, from the plan): an
/// explicit warm-up runs for every probe; the implicit one of at least
/// [`WARM_UP_MIN_NS`] only where the probe's descriptor says it helps.
pub(crate) fn warm_up(probe: &dyn Probe, warm: ProbeRun) -> ProbeRun {
    if probe.info().warms_up {
        warm.warm_up_of_at_least(WARM_UP_MIN_NS)
    } else {
        warm
    }
}

/// Each thread's set-up steps into `steps` (once per step and outcome);
/// a thread whose loop ended on an error fails the probe run.
pub(crate) fn absorb(probe: &str, outcomes: &[ThreadOutcome], steps: &mut Vec<SetupStep>) -> anyhow::Result<()> {
    for o in outcomes {
        for st in &o.setup {
            add_step(steps, st);
        }
        if let Some(e) = &o.error {
            anyhow::bail!("probe {probe}, thread {}: {e}", o.thread);
        }
    }
    Ok(())
}

/// `step` into `steps` unless a step of that name and outcome is there.
pub(crate) fn add_step(steps: &mut Vec<SetupStep>, step: &SetupStep) {
    if !steps.iter().any(|x| x.step == step.step && x.outcome == step.outcome) {
        steps.push(step.clone());
    }
}

/// Copy a thread's (or the merged) extras into its result entry, and
/// attach the late samples the probe analysed itself to the entry's worst
/// samples of the same CPU and seq.
fn apply_extras(extra: &Extras, windows: &[(u64, TraceWindow)], r: &mut ProbeResult) {
    r.extras = extra.clone();
    for w in r.worst.iter_mut() {
        if let Some((_, t)) = windows.iter().find(|(seq, t)| *seq == w.seq && t.cpu == w.cpu) {
            w.trace = Some(t.clone());
        }
    }
}

/// Per-thread results plus one merged entry per variant, from a probe's
/// outcomes: through the one distribution type and grouping
/// ([`results_of`]).
pub(crate) fn results_from(probe: &str, phase: &str, outcomes: &[ThreadOutcome]) -> anyhow::Result<Vec<ProbeResult>> {
    let members: Vec<Member> = outcomes
        .iter()
        .map(|o| Member {
            variant: o.variant.as_deref(),
            thread: o.thread,
            cpu: o.cpu,
            interval_ns: o.interval_ns,
            dist: o.recorder.distribution(),
            source: format!("probe {probe}, thread {}", o.thread),
        })
        .collect();
    results_of(probe, phase, &members, |i| (&outcomes[i].extra, outcomes[i].windows.as_slice()))
}

/// Per-thread results plus one merged entry per variant, from the threads'
/// distributions (`members`; `run`'s probe runs, `monitor`'s overall
/// shares): through the one grouping ([`distribution::per_thread_and_merged`],
/// as an agent's blocks), each entry given its thread's extras and late
/// samples (`of(i)` for member i; the merged entry, every thread's merged).
pub(crate) fn results_of<'a>(
    probe: &str,
    phase: &str,
    members: &[Member<'_>],
    of: impl Fn(usize) -> (&'a Extras, &'a [(u64, TraceWindow)]),
) -> anyhow::Result<Vec<ProbeResult>> {
    let grouped = distribution::per_thread_and_merged(probe, phase, members).map_err(|e| anyhow::anyhow!(e))?;
    Ok(grouped
        .into_iter()
        .map(|g| {
            let mut r = g.result;
            let extra = match (r.thread, g.members.as_slice()) {
                (Some(_), [i]) => of(*i).0.clone(),
                _ => g.members.iter().fold(Extras::default(), |e, &i| e.combine(of(i).0)),
            };
            let windows: Vec<(u64, TraceWindow)> = g.members.iter().flat_map(|&i| of(i).1.iter().cloned()).collect();
            apply_extras(&extra, &windows, &mut r);
            r
        })
        .collect())
}
