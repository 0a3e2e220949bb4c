//! The session `run` and `monitor` share: what is set up before the first
//! probe runs and held until the last write.
//!
//! [`Session::begin`], in this order: the cost of a clock read
//! (calibration), the host fingerprint and its audit (doctor) — both before
//! the real-time set-up, as they read many files and allocate as they go —,
//! the global real-time set-up ([`global_setup`]: /dev/cpu_dma_latency, the
//! main thread off the measured CPUs), what killed rtscope runs left behind
//! (tracing instances, load temp dirs, IPC objects), the [`Run`] every
//! result goes into, and the load session when a phase has loads. Each
//! phase then starts its loads ([`Session::start_loads`]), settles
//! ([`sleep_unless`]) and stops them ([`Session::stop_loads`]); what the
//! set-up did is a list of [`SetupStep`]s the run carries.

use std::sync::atomic::AtomicBool;
use std::thread::Scope;
use std::time::Duration;

use time::OffsetDateTime;

use crate::load::phase::LoadSession;
use crate::load::{PhaseLoads, PhaseSpec};
use crate::measure::LiveBoard;
use crate::model::{Calibration, Host, Nanos, Run, SetupStep};
use crate::plan::{Experiment, RunPlan};
use crate::sys::dma_latency::DmaLatencyGuard;
use crate::sys::{sched, time as clock};
use crate::sysinfo::{self, SysRoot};
use crate::trace::{TracePlan, TraceSession};
use crate::units::{cpu_list_str, rfc3339};

/// Rounds of 1 000 clock reads for the calibration (median and min per
/// read): 21 rounds take about a millisecond here; 101 took five and gave
/// the same median.
pub(crate) const CLOCK_CALIBRATION_ROUNDS: usize = 21;

/// Set up for measuring; held until the last write.
pub(crate) struct Session {
    pub(crate) run: Run,
    pub(crate) steps: Vec<SetupStep>,
    /// What killed rtscope runs had left and the set-up removed, one line each.
    pub(crate) removed: Vec<String>,
    /// The run's load temp dir; `None` when no phase has loads.
    loads: Option<LoadSession>,
    /// Holds /dev/cpu_dma_latency for as long as the session lives.
    _dma: Option<DmaLatencyGuard>,
    /// Puts the main thread back on its own CPUs when the session ends.
    _placed: Placed,
}

/// The main thread's CPUs before [`global_setup`] moved it off the measured
/// ones, put back when the session ends: a process that runs several
/// sessions (factors' cells, monitor's windows) starts each from its own
/// affinity, not from the last session's spare CPUs (a factors experiment
/// over `cpu=0,1` refused `cpu=1` after a `cpu=1` cell had left the main
/// thread on CPU 0).
struct Placed(Option<Vec<usize>>);

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(cpus) = self.0.take() {
            let _ = sched::set_current_affinity(&cpus);
        }
    }
}

impl Session {
    pub(crate) fn begin(plan: &RunPlan, exp: &Experiment, command_line: Vec<String>, started: OffsetDateTime) -> anyhow::Result<Session> {
        let (clock_med, clock_min) = clock::calibrate_clock_read(CLOCK_CALIBRATION_ROUNDS);
        let root = SysRoot::default();
        let host = sysinfo::fingerprint(&root);
        let host = Host { doctor: crate::doctor::audit_host(&root, &host, &plan.measured_cpus()), ..host };
        let mut steps = Vec::new();
        let (dma, placed) = global_setup(plan, &mut steps);
        remove_stale_trace_instances(&mut steps);
        let removed = remove_leftovers(&exp.load.dir, &mut steps);
        let calibration = Calibration::new(Nanos(clock_med), Nanos(clock_min), "CLOCK_MONOTONIC (vDSO clock_gettime)");
        let run = Run::native(command_line, host, plan.to_model(), calibration, rfc3339(started));
        let loads = match exp.phases.iter().any(|p| !p.loads.is_empty()) {
            true => Some(LoadSession::new(&exp.load)?),
            false => None,
        };
        Ok(Session { run, steps, removed, loads, _dma: dma, _placed: placed })
    }

    /// Start the loads of `spec` (none for an idle phase) and put the
    /// phase's record (which load processes run, their pids) in the run.
    /// `planned_s`: how long the phase should take (the loads' own timeout).
    /// Loads start from this (main) thread: their parent-death signal is
    /// tied to the thread that forks them (see load::phase).
    pub(crate) fn start_loads(&mut self, spec: &PhaseSpec, settle_ns: u64, planned_s: u64) -> anyhow::Result<PhaseLoads> {
        let loads = match &self.loads {
            Some(sess) if !spec.loads.is_empty() => sess.start(spec, settle_ns, planned_s)?,
            _ => PhaseLoads::idle(spec),
        };
        self.run.phases.push(loads.record());
        Ok(loads)
    }

    /// Stop the phase's loads; their record (CPU time, counters) replaces
    /// the one [`start_loads`](Session::start_loads) put in.
    pub(crate) fn stop_loads(&mut self, loads: PhaseLoads) -> anyhow::Result<()> {
        let record = loads.stop()?;
        if let Some(last) = self.run.phases.last_mut() {
            *last = record;
        }
        Ok(())
    }

    /// The load temp dir goes when no load runs any more.
    pub(crate) fn end_loads(&mut self) {
        self.loads = None;
    }
}

/// Global (process-wide) real-time set-up. The returned guards hold
/// /dev/cpu_dma_latency and the main thread's own CPUs (put back when the
/// session ends) for as long as they live. Memory is locked per probe run
/// ([`super::MemoryLock`]).
fn global_setup(plan: &RunPlan, steps: &mut Vec<SetupStep>) -> (Option<DmaLatencyGuard>, Placed) {
    let guard = hold_dma_latency(plan.dma_latency, steps);
    let measured = plan.measured_cpus();
    let own = sched::current_affinity().ok();
    let spare: Vec<usize> = sched::online_cpus().into_iter().filter(|c| !measured.contains(c)).collect();
    let mut placed = Placed(None);
    if spare.is_empty() {
        steps.push(SetupStep::skipped(
            "main thread placement",
            "no CPU outside the measured set; the reporting thread shares them (it sleeps while probes run)",
        ));
    } else {
        steps.push(match sched::set_current_affinity(&spare) {
            Ok(()) => {
                placed = Placed(own);
                SetupStep::ok("main thread placement", format!("cpus {}", cpu_list_str(&spare)))
            }
            Err(e) => SetupStep::failed("main thread placement", e.to_string()),
        });
    }
    (guard, placed)
}

fn hold_dma_latency(asked: bool, steps: &mut Vec<SetupStep>) -> Option<DmaLatencyGuard> {
    if !asked {
        steps.push(SetupStep::skipped("cpu_dma_latency", "--no-dma-latency"));
        return None;
    }
    match DmaLatencyGuard::hold(0) {
        Ok(g) => {
            steps.push(SetupStep::ok("cpu_dma_latency", "held at 0 us"));
            Some(g)
        }
        Err(e) => {
            steps.push(SetupStep::failed("cpu_dma_latency", format!("{}: {e}", crate::sys::dma_latency::PATH)));
            None
        }
    }
}

/// Tracing instances left by rtscope processes that are gone (SIGKILL, a
/// second Ctrl-C) would trace on the measured CPUs forever: removed (root).
fn remove_stale_trace_instances(steps: &mut Vec<SetupStep>) {
    if let Some(tracefs) = crate::sys::tracefs::find_mounted().filter(|_| nix::unistd::geteuid().is_root()) {
        let stale = crate::sys::tracefs::remove_stale_instances(&tracefs);
        if !stale.is_empty() {
            steps.push(SetupStep::ok("remove_stale_trace_instances", format!("removed {} left by rtscope processes that are gone", stale.join(", "))));
        }
    }
}

/// Removes what rtscope runs that are gone (SIGKILL) left behind — load
/// temp dirs under `load_dir`, SysV semaphore sets, POSIX message queue
/// names — at the start of every run, whatever it measures, and records it
/// as the setup step `remove_leftovers`. Returns one line per object, each
/// ending "left by a killed rtscope run".
pub(crate) fn remove_leftovers(load_dir: &std::path::Path, steps: &mut Vec<SetupStep>) -> Vec<String> {
    let mut removed: Vec<String> = crate::load::phase::clean_stale(load_dir).iter().map(|d| format!("load temp dir {}", d.display())).collect();
    removed.extend(crate::measure::sem::remove_stale_sysv());
    removed.extend(crate::measure::mq::remove_stale_queues());
    if !removed.is_empty() {
        steps.push(SetupStep::ok("remove_leftovers", format!("removed {}, left by rtscope runs that are gone", removed.join(", "))));
    }
    removed.into_iter().map(|r| format!("{r} left by a killed rtscope run")).collect()
}

/// Threshold tracing when the plan asks for it and a probe it serves runs
/// (the probes whose descriptor says `measure::Traced::TimerMethod`/`Handoff`;
/// timerlat analyses its late samples from its own tracer's events). A
/// failure (not root, no tracefs) is a set-up step that failed with the
/// reason, and the run goes on without tracing. Dropping the session stops
/// tracing and removes the instance.
pub(crate) fn start_tracing(plan: &RunPlan, steps: &mut Vec<SetupStep>) -> Option<TraceSession> {
    let traced = plan.probes.iter().any(|p| crate::measure::is(p, crate::measure::ProbeInfo::traced_by_session));
    let tp: &TracePlan = plan.trace.as_ref().filter(|_| traced)?;
    match TraceSession::start(tp, &plan.measured_cpus(), plan.measuring.threads) {
        Ok(t) => {
            steps.push(SetupStep::ok(
                "tracing",
                format!(
                    "instance {}{}, {} events, trace_clock mono, {} KB per CPU on cpus {}",
                    t.instance_dir().display(),
                    if t.mounted_tracefs { " (tracefs mounted by rtscope)" } else { "" },
                    t.events().len(),
                    tp.buffer_kb,
                    cpu_list_str(&plan.measured_cpus())
                ),
            ));
            Some(t)
        }
        Err(e) => {
            steps.push(SetupStep::failed("tracing", e));
            None
        }
    }
}

/// The live progress bar's thread, on a terminal only (live::progress draws
/// nothing elsewhere). A small stack: under mlockall(MCL_FUTURE) every
/// thread's whole stack is locked, and an unprivileged run has only
/// RLIMIT_MEMLOCK (often 8 MiB) for all of rtscope; the default 2 MiB stack
/// of this thread alone made allocations fail there.
pub(crate) fn spawn_live<'scope>(
    s: &'scope Scope<'scope, '_>,
    quiet: bool,
    board: &'scope LiveBoard,
    total_ns: u64,
    finished: &'scope AtomicBool,
    stop: &'scope AtomicBool,
) -> std::io::Result<()> {
    if !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        std::thread::Builder::new()
            .name("rtscope-live".into())
            .stack_size(256 * 1024)
            .spawn_scoped(s, move || crate::live::progress(board, total_ns, finished, stop))
            .map_err(|e| crate::sys::pthread::spawn_refused("the live view's thread", &e))?;
    }
    Ok(())
}

/// Sleep in short steps until `d` has passed or `over()` says to stop.
pub(crate) fn sleep_unless(d: Duration, over: &dyn Fn() -> bool) {
    let end = std::time::Instant::now() + d;
    while !over() {
        let now = std::time::Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    #[test]
    fn sleep_unless_asks_between_short_sleeps_and_ends_when_told() {
        let asked = Cell::new(0);
        let over = || {
            asked.set(asked.get() + 1);
            asked.get() >= 3
        };
        // An hour's sleep, ended by the third answer: asked before each step.
        super::sleep_unless(std::time::Duration::from_secs(3600), &over);
        assert_eq!(asked.get(), 3);
        asked.set(0);
        super::sleep_unless(std::time::Duration::ZERO, &|| false);
    }
}
