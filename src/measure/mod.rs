//! The hot path: probes and the machinery every probe shares.
//!
//! A probe is one file in this module implementing [`Probe`]. It spawns its
//! measuring threads with [`spawn_measuring`] (which does the per-thread
//! real-time set-up: affinity, scheduling policy, stack prefault, recorder
//! allocation), waits on a start [`Gate`], and from then on its loop only
//! reads the clock, computes a latency and calls [`Recorder::record`]; it stops
//! when its planned end passes or the shared stop flag (an `AtomicBool`, set by
//! the signal handler) is raised. The probe returns one [`ThreadOutcome`] per
//! measuring thread; the runner merges them into the result model.
//!
//! Registry: each probe describes itself once in a [`ProbeInfo`]; [`REGISTRY`]
//! lists them and [`info`] answers for a name (see [`registry`]).

pub(crate) mod chain;
pub(crate) mod distribution;
pub(crate) mod dl;
pub(crate) mod hwlat;
pub(crate) mod maxrate;
pub(crate) mod migrate;
pub(crate) mod mq;
pub(crate) mod noise;
pub(crate) mod osnoise;
pub(crate) mod pair;
pub(crate) mod periodic;
pub(crate) mod pi;
pub(crate) mod pipe;
pub(crate) mod preempt;
pub mod recorder;
pub mod registry;
pub(crate) mod run;
pub(crate) mod select;
pub(crate) mod sem;
pub(crate) mod signal;
pub(crate) mod switch;
pub(crate) mod throughput;
pub(crate) mod timer;
pub(crate) mod timerlat;
pub(crate) mod tracer;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use crate::model::{Extras, SetupStep};
use crate::sys::pthread::Launch;
use crate::sys::sched::{self, Policy};
use recorder::{Live, Recorder};
pub use registry::{info, infos, names, probe_by_name, ProbeInfo};
pub(crate) use registry::{is, Busy, Paced, Traced};
pub(crate) use run::{selects, split_spec, ProbeRun, DEFAULT_MSG_SIZE};

/// Stack of a measuring thread. mlockall(MCL_FUTURE) makes the whole stack
/// resident, so it is kept small: the hot loops use a few KiB; half of it is
/// prefaulted before the start barrier.
pub(crate) const MEASURING_STACK: usize = 256 * 1024;

/// Does the probe called `name` run under `--policy deadline`
/// (SCHED_DEADLINE)? Its descriptor says ([`ProbeInfo::runs_under_deadline`]).
pub(crate) fn runs_under_deadline(name: &str) -> bool {
    is(name, |i| i.runs_under_deadline)
}

/// One measurement method.
pub trait Probe: Send + Sync {
    /// The probe's facts, said once in its own file ([`registry`]).
    fn info(&self) -> &'static ProbeInfo;
    fn name(&self) -> &'static str {
        self.info().name
    }
    /// See [`ProbeInfo::variants`].
    fn variants(&self) -> &'static [&'static str] {
        self.info().variants
    }
    /// Run every variant of this probe for the plan's duration (each) and
    /// return one outcome per measuring thread and variant.
    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>>;
}

/// What a probe gets from the runner.
pub struct ProbeCtx<'a> {
    /// This probe run: duration, period, threads, CPUs, priority, settings.
    pub(crate) run: &'a ProbeRun,
    /// Raised by SIGINT/SIGTERM: every loop must end soon after.
    pub(crate) stop: &'a AtomicBool,
    pub(crate) board: &'a LiveBoard,
    /// Threshold tracing, when asked for and available.
    pub(crate) trace: Option<&'a crate::trace::TraceSession>,
}

/// What one measuring thread produced.
pub struct ThreadOutcome {
    pub(crate) thread: usize,
    pub(crate) cpu: Option<usize>,
    pub(crate) variant: Option<String>,
    pub(crate) interval_ns: u64,
    pub(crate) recorder: Recorder,
    pub(crate) setup: Vec<SetupStep>,
    /// Set when the thread's loop ended on an error (e.g. clock_nanosleep).
    pub(crate) error: Option<String>,
    /// What the probe adds to the result entry (`model::Extras`: noise,
    /// signed error, operations, a note, ...); merged over threads by
    /// `Extras::combine`.
    pub(crate) extra: Extras,
    /// Late samples the probe analysed itself (`timerlat` with
    /// `--trace-threshold`), by the sample's `seq`: attached to the entry's
    /// worst samples of the same CPU and seq.
    pub(crate) windows: Vec<(u64, crate::model::TraceWindow)>,
}

thread_local! {
    /// The thread's (minor, major) fault counts when it passed the start gate.
    static FAULTS_AT_START: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// The start barrier of a probe run's threads. Passing it also starts the
/// thread's page-fault count (see [`crate::model::Faults`]).
pub(crate) struct Gate {
    barrier: Barrier,
}

impl Gate {
    pub(crate) fn new(threads: usize) -> Gate {
        Gate { barrier: Barrier::new(threads) }
    }
    /// Wait for every thread of the run, then start counting faults.
    pub(crate) fn wait(&self) {
        self.barrier.wait();
        FAULTS_AT_START.with(|c| c.set(Some(crate::sys::resource::thread_faults())));
    }
}

/// Faults since the calling thread passed its [`Gate`] (None if it never did).
fn faults_since_gate() -> Option<crate::model::Faults> {
    let (minor, major) = crate::sys::resource::thread_faults();
    FAULTS_AT_START.with(|c| c.take()).map(|(m0, j0)| crate::model::Faults { minor: minor - m0, major: major - j0 })
}

/// The live view's window on running probes: each measuring thread registers
/// its recorder's [`Live`] counters before the start barrier; the non-RT
/// collector thread only reads atomics (rule 5).
#[derive(Default)]
pub(crate) struct LiveBoard {
    lives: Mutex<Vec<Arc<Live>>>,
    /// Name of what runs now, e.g. "timer" (for the progress bar).
    pub(crate) current: Mutex<String>,
    pub(crate) running: AtomicUsize,
}

impl LiveBoard {
    pub(crate) fn register(&self, live: Arc<Live>) {
        self.lives.lock().unwrap().push(live);
    }
    pub(crate) fn reset(&self, what: &str) {
        self.lives.lock().unwrap().clear();
        *self.current.lock().unwrap() = what.to_string();
    }
    /// (samples, overruns, max ns) over every registered thread.
    pub(crate) fn totals(&self) -> (u64, u64, u64) {
        let lives = self.lives.lock().unwrap();
        lives.iter().fold((0, 0, 0), |(s, o, m), l| {
            (s + l.samples.load(Ordering::Relaxed), o + l.overruns.load(Ordering::Relaxed), m.max(l.max_ns.load(Ordering::Relaxed)))
        })
    }
}

/// Where and how one measuring thread runs.
#[derive(Debug, Clone)]
pub(crate) struct ThreadSpec {
    pub(crate) index: usize,
    pub(crate) cpu: Option<usize>,
    pub(crate) policy: Policy,
    pub(crate) priority: u8,
    /// The reservation under SCHED_DEADLINE (`policy` is `Deadline`).
    pub(crate) dl: Option<sched::DlParams>,
}

impl ThreadSpec {
    /// The run's `index`-th measuring thread: CPUs assigned round-robin;
    /// under SCHED_DEADLINE not pinned (see [`setup_current_thread`]), with
    /// the run's period as the reservation's.
    pub(crate) fn from_run(run: &ProbeRun, index: usize) -> ThreadSpec {
        let dl = (run.policy == Policy::Deadline).then(|| run.probe.dl_params(run.interval_ns));
        ThreadSpec { index, cpu: if dl.is_some() { None } else { Some(run.cpus[index % run.cpus.len()]) }, policy: run.policy, priority: run.priority, dl }
    }

    /// This spec with the SCHED_DEADLINE period `period_ns` (`periodic`'s variants).
    pub(crate) fn with_period(mut self, run: &ProbeRun, period_ns: u64) -> ThreadSpec {
        if self.dl.is_some() {
            self.dl = Some(run.probe.dl_params(period_ns));
        }
        self
    }
}

/// Real-time set-up of the calling thread, every step reported (never silent):
/// pin to the CPU, set the policy (falls back to SCHED_OTHER when not
/// permitted), prefault half of the [`MEASURING_STACK`].
pub(crate) fn setup_current_thread(spec: &ThreadSpec) -> Vec<SetupStep> {
    let mut steps = Vec::new();
    let i = spec.index;
    if let Some(cpu) = spec.cpu {
        steps.push(step(format!("affinity[thread {i}]"), sched::set_current_affinity(&[cpu]), &format!("cpu {cpu}")));
    }
    if let Some(dl) = spec.dl {
        // A SCHED_DEADLINE task's affinity must span its root domain (the
        // kernel refuses it otherwise, EPERM): never pinned, the thread is
        // allowed every online CPU (it may have inherited a narrower mask).
        let online = sched::online_cpus();
        steps.push(step(
            format!("affinity[thread {i}]"),
            sched::set_current_affinity(&online),
            &format!("cpus {} (SCHED_DEADLINE: not pinned, the reservation spans the root domain)", crate::units::cpu_list_str(&online)),
        ));
        if let Err(e) = dl::install_overrun_handler() {
            steps.push(SetupStep::failed(format!("sigxcpu[thread {i}]"), e));
        }
        let detail = format!(
            "runtime {} deadline {} period {}",
            crate::units::fmt_ns(dl.runtime_ns),
            crate::units::fmt_ns(dl.deadline_ns),
            crate::units::fmt_ns(dl.period_ns)
        );
        match sched::set_current_deadline(dl, true) {
            Ok(()) => steps.push(SetupStep::ok(format!("sched_deadline[thread {i}]"), detail)),
            Err(e) => steps.push(SetupStep::failed(
                format!("sched_deadline[thread {i}]"),
                format!("{detail}: {}; running as SCHED_OTHER with the timer method", dl::why(e)),
            )),
        }
        crate::sys::mman::prefault_stack(MEASURING_STACK / 2);
        return steps;
    }
    let r = sched::set_current_policy(spec.policy, spec.priority);
    let name = format!("sched_{}[thread {i}]", spec.policy.name());
    match r {
        Ok(()) => steps.push(SetupStep::ok(name, format!("priority {}", if spec.policy == Policy::Other { 0 } else { spec.priority }))),
        Err(e) => {
            let why = if e == nix::errno::Errno::EPERM {
                "not permitted: run as root or grant CAP_SYS_NICE (setcap cap_sys_nice+ep rtscope), or raise RLIMIT_RTPRIO".to_string()
            } else {
                e.to_string()
            };
            steps.push(SetupStep::failed(name, format!("{why}; running as SCHED_OTHER")));
        }
    }
    crate::sys::mman::prefault_stack(MEASURING_STACK / 2);
    steps
}

fn step(name: String, r: nix::Result<()>, ok_detail: &str) -> SetupStep {
    match r {
        Ok(()) => SetupStep::ok(name, ok_detail.to_string()),
        Err(e) => SetupStep::failed(name, format!("{ok_detail}: {e}")),
    }
}

/// Busy for `ns` on the CPU (reading the clock): the computing part of the
/// probes that need a running thread (`preempt`'s waker, `pi`'s bursts).
#[inline]
pub(crate) fn spin_for(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = crate::sys::time::now_ns() + ns;
    while crate::sys::time::now_ns() < until {
        std::hint::spin_loop();
    }
}

/// The first outcome (the recording thread's) with the set-up steps of all,
/// the first error and the page faults of all: how the multi-thread probes
/// that record in one thread report (`pair`, `pi`, `throughput`).
pub(crate) fn first_with_all_steps(mut outs: Vec<ThreadOutcome>) -> anyhow::Result<ThreadOutcome> {
    if outs.is_empty() {
        anyhow::bail!("no measuring thread ran");
    }
    let rest: Vec<ThreadOutcome> = outs.drain(1..).collect();
    let mut main = outs.pop().expect("one left");
    for r in rest {
        main.setup.extend(r.setup);
        main.error = main.error.or(r.error);
        main.extra.faults = crate::model::Faults::sum(main.extra.faults, r.extra.faults);
    }
    Ok(main)
}

/// Spawn one measuring thread per spec, each running `body` after its set-up
/// and a shared start barrier; returns the outcomes in spec order.
///
/// `body(spec, recorder, stop, start_ns)` is the probe's hot loop; it returns
/// the recorder and an optional error text. The thread's recorder is
/// allocated (and prefaulted) before the barrier, sized for `duration_ns`.
///
/// Every thread exists before any runs `body` (see [`Launch`]): the start
/// [`Gate`] counts on all of them, and the probes publish partner state
/// (thread ids, pipe ends) before it, so a gate that opened with a thread
/// missing would hang the others or hand them a dead partner. A spawn that
/// fails (`ulimit -u`, a container's pids limit) stops the threads started
/// before they run, and is an error naming the thread and the limit. (A
/// stop raised meanwhile is the probes': every thread then reaches the
/// gate, and every loop checks `stop` first.)
pub(crate) fn spawn_measuring<F>(
    ctx: &ProbeCtx<'_>,
    specs: &[ThreadSpec],
    variant: Option<String>,
    interval_ns: u64,
    body: F,
) -> anyhow::Result<Vec<ThreadOutcome>>
where
    F: Fn(&ThreadSpec, &mut Recorder, &AtomicBool, &Gate) -> Option<String> + Sync,
{
    let outs = spawn_measuring_with(ctx, specs, variant, interval_ns, |spec, rec, stop, gate| (body(spec, rec, stop, gate), ()))?;
    Ok(outs.into_iter().map(|(o, ())| o).collect())
}

/// [`spawn_measuring`] for a probe whose threads measure more than their
/// recorder: `body` returns its error text and the thread's own value `X`
/// (a second recorder, a count the kernel kept, what a coordinator found),
/// handed back beside the thread's outcome, in spec order.
pub(crate) fn spawn_measuring_with<F, X>(
    ctx: &ProbeCtx<'_>,
    specs: &[ThreadSpec],
    variant: Option<String>,
    interval_ns: u64,
    body: F,
) -> anyhow::Result<Vec<(ThreadOutcome, X)>>
where
    F: Fn(&ThreadSpec, &mut Recorder, &AtomicBool, &Gate) -> (Option<String>, X) + Sync,
    X: Send,
{
    if let Some(t) = ctx.trace {
        t.begin_variant(variant.as_deref());
    }
    let barrier = Gate::new(specs.len());
    let launch = Launch::default();
    let (body, barrier, launch) = (&body, &barrier, &launch);
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(specs.len());
        for (k, spec) in specs.iter().enumerate() {
            let variant = variant.clone();
            let spawned = std::thread::Builder::new().name(format!("rtscope-m{}", spec.index)).stack_size(MEASURING_STACK).spawn_scoped(s, move || {
                if !launch.go() {
                    return None;
                }
                let setup = setup_current_thread(spec);
                let tail_k = crate::measure::recorder::tail_capacity(ctx.run.duration_ns, interval_ns);
                let mut recorder = Recorder::with_tail(spec.index, ctx.run.duration_ns, ctx.run.worst_k, tail_k);
                ctx.board.register(recorder.live());
                ctx.board.running.fetch_add(1, Ordering::SeqCst);
                let (error, own) = body(spec, &mut recorder, ctx.stop, barrier);
                let faults = faults_since_gate();
                let late_starts = recorder.late_starts();
                ctx.board.running.fetch_sub(1, Ordering::SeqCst);
                let outcome = ThreadOutcome {
                    thread: spec.index,
                    cpu: spec.cpu,
                    variant,
                    interval_ns,
                    recorder,
                    setup,
                    error,
                    extra: Extras { faults, late_starts, ..Extras::default() },
                    windows: Vec::new(),
                };
                Some((outcome, own))
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    launch.decide(false);
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(spawn_error(k, specs.len(), &e));
                }
            }
        }
        launch.decide(true);
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            match h.join() {
                // A go launch runs every thread: each hands back an outcome.
                Ok(o) => out.extend(o),
                Err(_) => anyhow::bail!("a measuring thread panicked"),
            }
        }
        Ok(out)
    })
}

/// "could not start thread 9 of 16: Resource temporarily unavailable
/// (RLIMIT_NPROC?)": the `k`-th spawn of `n` failed.
fn spawn_error(k: usize, n: usize, e: &std::io::Error) -> anyhow::Error {
    crate::sys::pthread::spawn_refused(&format!("thread {} of {n}", k + 1), e).into()
}
