//! Runs a validated plan: real-time set-up, every probe in every phase, the
//! result model, and the result file — rewritten after each probe, so a crash
//! or a signal loses nothing already measured (hyperfine style).
//!
//! The pieces `run` and `monitor` share:
//! - [`session`]: the set-up before measuring (calibration, fingerprint,
//!   doctor, global real-time set-up, leftovers, the [`Run`], the load
//!   session) and each phase's loads;
//! - [`entry`]: one probe run (warm-up, measurement, the threads' set-up
//!   steps, result entries);
//! - [`memory`]: memory locked while a probe runs;
//! - [`write`]: the checkpoint after each probe and the last write.
//!
//! This file is `run`'s outline ([`execute`]): set up, then each phase in
//! turn — loads started and settled, every entry measured (within the hard
//! cap, `--max-total`), loads stopped —, then the last write.
//!
//! Threads: the calling (main) thread orchestrates and writes files; it is
//! moved off the measuring CPUs when a spare CPU exists. A non-RT progress
//! thread reads the probes' atomics for the live view. Measuring threads are
//! spawned by each probe.

mod entry;
mod memory;
mod session;
mod write;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::load::{PhaseLoads, PhaseSpec};
use crate::measure::{probe_by_name, LiveBoard};
use crate::model::{ProbeResult, Run};
use crate::plan::{Experiment, ProbeEntry, RunPlan};
use crate::trace::TraceSession;
use crate::units::fmt_ns;

pub(crate) use entry::{add_step, warm_up, Measuring};
pub(crate) use entry::{results_from, results_of, WARM_UP_MIN_NS};
pub(crate) use memory::MemoryLock;
pub(crate) use session::sleep_unless;
pub(crate) use session::{remove_leftovers, spawn_live, start_tracing, Session};
pub(crate) use write::{finish, Checkpoint};
pub(crate) use write::{write_final, write_kept, Invocation, Kept, Warnings};

/// Run the plan. `stop` is raised by SIGINT/SIGTERM.
/// `exp` adds the load phases (started, settled and stopped around each
/// phase by `crate::load`) and the probe runs (a probe at each of its periods).
/// `warnings` reads the run as it stands and says what its reader must know
/// (the face passes `analysis::warnings`, a layer above this one); they are
/// on file with every write.
pub(crate) fn execute(plan: &RunPlan, exp: &Experiment, call: Invocation) -> anyhow::Result<Run> {
    let Invocation { output, command_line, started, stop, warnings } = call;
    let mut session = Session::begin(plan, exp, command_line, started)?;
    for what in session.removed.iter().filter(|_| !output.quiet) {
        eprintln!("removed {what}");
    }
    // Dropped before the session, on every return path: stops tracing, removes the instance.
    let trace = start_tracing(plan, &mut session.steps);
    session.run.scenario = exp.scenario.clone();
    let board = LiveBoard::default();
    let finished = AtomicBool::new(false);
    let capped = std::thread::scope(|s| -> anyhow::Result<bool> {
        spawn_live(s, output.quiet, &board, exp.total_ns(), &finished, stop)?;
        if let Err(e) = spawn_trace_collector(s, trace.as_ref(), &finished) {
            // The live view's thread, if it started, ends at `finished`.
            finished.store(true, Ordering::Relaxed);
            return Err(e.into());
        }
        let mut phases = Phases {
            plan,
            exp,
            stop,
            measuring: Measuring { board: &board, stop, trace: trace.as_ref() },
            checkpoint: Checkpoint::new(&output.path, warnings),
            deadline: Instant::now() + Duration::from_nanos(exp.max_total_ns),
            capped: false,
        };
        let ran = phases.run(&mut session);
        if ran.is_err() {
            // What was measured before the error stays on file (`complete: false`).
            phases.save(&mut session);
        }
        session.end_loads();
        finished.store(true, Ordering::Relaxed);
        ran.map(|()| phases.capped)
    })?;
    finish(&mut session.run, &session.steps, stop.load(Ordering::Relaxed), warnings);
    if capped {
        session.run.warnings.push(format!(
            "the run reached --max-total ({}) and stopped before its next probe run; the results hold what was measured until then. Raise --max-total or shorten the plan",
            fmt_ns(exp.max_total_ns)
        ));
    }
    write_final(&output.path, &session.run)?;
    Ok(session.run)
}

/// The tracer's reader thread, when tracing runs. Small stack as the live
/// thread's (locked under MCL_FUTURE); buffers go on the heap.
fn spawn_trace_collector<'scope>(s: &'scope Scope<'scope, '_>, trace: Option<&'scope TraceSession>, finished: &'scope AtomicBool) -> std::io::Result<()> {
    if let Some(t) = trace {
        std::thread::Builder::new()
            .name("rtscope-trace".into())
            .stack_size(256 * 1024)
            .spawn_scoped(s, move || t.collect(finished))
            .map_err(|e| crate::sys::pthread::spawn_refused("the tracer's reader thread", &e))?;
    }
    Ok(())
}

/// `run`'s walk through the experiment, on the main thread.
struct Phases<'a> {
    plan: &'a RunPlan,
    exp: &'a Experiment,
    stop: &'a AtomicBool,
    measuring: Measuring<'a>,
    checkpoint: Checkpoint<'a>,
    /// The hard cap (--max-total): the plan fits in it, so only overheads
    /// (load start/stop, thread set-up) can push a probe run past it; such a
    /// run is not started and the run ends there (`capped`).
    deadline: Instant,
    capped: bool,
}

impl Phases<'_> {
    fn run(&mut self, session: &mut Session) -> anyhow::Result<()> {
        for (index, spec) in self.exp.phases.iter().enumerate() {
            // What the progress bar names: phase k/n, then the probe.
            let tag = format!("{} {}/{}", spec.name, index + 1, self.exp.phases.len());
            if self.stopped() {
                session.run.interrupted_in = Some(spec.name.clone());
                break;
            }
            let mut loads = self.start_loads(session, spec, &tag)?;
            self.entries(session, spec, &tag, &mut loads)?;
            self.stop_loads(session, loads, spec, &tag)?;
            if self.stopped() {
                session.run.interrupted_in = Some(spec.name.clone());
                break;
            }
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The checkpoint, before rtscope waits again.
    fn save(&mut self, session: &mut Session) {
        let interrupted = self.stopped();
        self.checkpoint.save(&mut session.run, &session.steps, interrupted);
    }

    /// The phase's loads, on file at once (which load processes run, their
    /// pids), then the settling time.
    fn start_loads(&mut self, session: &mut Session, spec: &PhaseSpec, tag: &str) -> anyhow::Result<PhaseLoads> {
        if spec.loads.is_empty() {
            return session.start_loads(spec, self.exp.settle_ns, 0);
        }
        self.measuring.board.reset(&format!("{tag}: settle"));
        let planned_s = self.exp.phase_ns(spec) / 1_000_000_000;
        let loads = session.start_loads(spec, self.exp.settle_ns, planned_s)?;
        self.checkpoint.changed();
        self.save(session);
        sleep_unless(Duration::from_nanos(self.exp.settle_ns), &|| self.stopped());
        Ok(loads)
    }

    fn entries(&mut self, session: &mut Session, spec: &PhaseSpec, tag: &str, loads: &mut PhaseLoads) -> anyhow::Result<()> {
        for entry in &self.exp.entries {
            loads.check()?;
            let Some(results) = self.entry(session, entry, &spec.name, tag)? else {
                break;
            };
            session.run.results.extend(results);
            self.checkpoint.changed();
        }
        Ok(())
    }

    /// One entry: warm-up and measurement under the memory lock, its result
    /// entries (with their traces); `None` when stopped or capped before it
    /// measured.
    fn entry(&mut self, session: &mut Session, entry: &ProbeEntry, phase: &str, tag: &str) -> anyhow::Result<Option<Vec<ProbeResult>>> {
        let name = &entry.probe;
        let probe = probe_by_name(name).expect("plan holds only known probes");
        let warm = warm_up(probe, self.plan.probe_run(entry, true));
        if Instant::now() + Duration::from_nanos(warm.duration_ns + entry.duration_ns) > self.deadline {
            self.capped = true;
            self.stop.store(true, Ordering::Relaxed);
        }
        if self.stopped() {
            return Ok(None);
        }
        self.save(session);
        let memory = MemoryLock::begin(&mut session.steps);
        if warm.duration_ns > 0 {
            self.measuring.board.reset(&format!("{tag}: {name} warm-up"));
            self.measuring.warm_up(probe, &warm)?;
        }
        if self.stopped() {
            return Ok(None);
        }
        self.measuring.board.reset(&format!("{tag}: {name}"));
        let outcomes = self.measuring.measure(probe, &self.plan.probe_run(entry, false), &mut session.steps)?;
        drop(memory);
        let mut results = results_from(name, phase, &outcomes)?;
        if let Some(t) = self.measuring.trace {
            t.attach(&mut results);
            session.run.trace = Some(t.summary());
        }
        Ok(Some(results))
    }

    /// Stop the phase's loads; what was measured under them is on file first.
    fn stop_loads(&mut self, session: &mut Session, loads: PhaseLoads, spec: &PhaseSpec, tag: &str) -> anyhow::Result<()> {
        if !spec.loads.is_empty() {
            self.save(session);
        }
        self.measuring.board.reset(&format!("{tag}: stopping loads"));
        session.stop_loads(loads)?;
        self.checkpoint.changed();
        Ok(())
    }
}
