//! Runs a validated plan: real-time set-up, every probe in every phase, the
//! result model, and the result file — rewritten after each probe, so a crash
//! or a signal loses nothing already measured (hyperfine style).
//!
//! Threads: the calling (main) thread orchestrates and writes files; it is
//! moved off the measuring CPUs when a spare CPU exists. A non-RT progress
//! thread reads the probes' atomics for the live view. Measuring threads are
//! spawned by each probe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use time::OffsetDateTime;

use crate::measure::{probe_by_name, LiveBoard, ProbeCtx, ThreadOutcome};
use crate::measure::recorder::Recorder;
use crate::model::{Calibration, Host, Nanos, ProbeResult, RealtimeSetup, Run, SetupStep};
use crate::plan::{Experiment, Output, RunPlan};
use crate::sys::dma_latency::DmaLatencyGuard;
use crate::sys::{mman, sched, time as clock};
use crate::sysinfo::{self, SysRoot};
use crate::trace::{TracePlan, TraceSession};
use crate::units::{cpu_list_str, fmt_ns, rfc3339};


/// Rounds of 1 000 clock reads for the calibration (median and min per
/// read): 21 rounds take about a millisecond here; 101 took five and gave
/// the same median.
pub const CLOCK_CALIBRATION_ROUNDS: usize = 21;

/// How long every probe run warms up at least (its samples discarded): one
/// pass of the probe's loop brings the pages it touches into memory, where
/// the [`MemoryLock`] keeps them, so the measurement takes no page fault.
pub const WARM_UP_MIN_NS: u64 = 50_000_000;

/// Memory while a probe runs (warm-up and measurement). Start-up (command
/// line, fingerprint, doctor, database, result files) touches several MiB of
/// code a probe's loop never runs; locking all of it (mlockall(MCL_CURRENT))
/// made rtscope's resident set 4× cyclictest's. So before each probe run
/// the clean pages of the read-only file mappings are unmapped and the
/// heap trimmed ([`mman::drop_clean_file_pages`]), then every page touched
/// from there on is locked as it is faulted in (MCL_ONFAULT) until the run
/// ends: the warm-up faults the loop's pages in, the measurement finds them
/// locked. The result's `faults` show what the measuring threads still took.
pub(crate) struct MemoryLock {
    locked: bool,
}

impl MemoryLock {
    /// Drop, then lock; the first call of a run reports the step in `steps`.
    pub(crate) fn begin(steps: &mut Vec<SetupStep>) -> MemoryLock {
        let reported = steps.iter().any(|s| s.step == "mlockall");
        if let Some(why) = mman::lock_all_would_exhaust() {
            if !reported {
                steps.push(SetupStep::failed("mlockall", why));
            }
            return MemoryLock { locked: false };
        }
        let dropped = mman::drop_clean_file_pages();
        match mman::lock_all() {
            Ok(flags) => {
                if !reported {
                    steps.push(SetupStep::ok(
                        "mlockall",
                        format!("{flags} for each probe run (warm-up and measurement), after unmapping {dropped} KiB of start-up pages"),
                    ));
                }
                MemoryLock { locked: true }
            }
            Err(e) => {
                if !reported {
                    steps.push(SetupStep::failed("mlockall", format!("{e}: page faults may add latency; run as root or grant CAP_IPC_LOCK")));
                }
                MemoryLock { locked: false }
            }
        }
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        if self.locked {
            let _ = mman::unlock_all();
        }
    }
}

/// Global (process-wide) real-time set-up. The returned guard holds
/// /dev/cpu_dma_latency for as long as it lives. Memory is locked per
/// probe run ([`MemoryLock`]).
pub(crate) fn global_setup(plan: &RunPlan, steps: &mut Vec<SetupStep>) -> Option<DmaLatencyGuard> {
    let guard = if plan.dma_latency {
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
    } else {
        steps.push(SetupStep::skipped("cpu_dma_latency", "--no-dma-latency"));
        None
    };
    let measured = plan.measured_cpus();
    let spare: Vec<usize> = sched::online_cpus().into_iter().filter(|c| !measured.contains(c)).collect();
    if spare.is_empty() {
        steps.push(SetupStep::skipped(
            "main thread placement",
            "no CPU outside the measured set; the reporting thread shares them (it sleeps while probes run)",
        ));
    } else {
        let r = sched::set_current_affinity(&spare);
        steps.push(match r {
            Ok(()) => SetupStep::ok("main thread placement", format!("cpus {}", cpu_list_str(&spare))),
            Err(e) => SetupStep::failed("main thread placement", e.to_string()),
        });
    }
    guard
}

/// Per-thread results plus one merged entry per variant, from a probe's outcomes.
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

pub fn results_from(probe: &str, phase: &str, outcomes: &[ThreadOutcome]) -> Vec<ProbeResult> {
    let mut out = Vec::new();
    let variants: Vec<Option<String>> = crate::units::first_seen(outcomes.iter().map(|o| o.variant.clone()));
    for v in variants {
        let group: Vec<&ThreadOutcome> = outcomes.iter().filter(|o| o.variant == v).collect();
        let first = group[0];
        let mut merged = Recorder::with_tail(usize::MAX, 0, first.recorder.worst_k(), first.recorder.tail_k());
        let mut extra = crate::measure::Extra::default();
        for o in &group {
            let mut r = o.recorder.to_result(probe, phase, v.clone(), Some(o.thread), o.cpu, o.interval_ns);
            o.extra.apply(&mut r);
            extra = extra.merge(&o.extra);
            out.push(r);
            merged.merge(&o.recorder);
        }
        let mut r = merged.to_result(probe, phase, v.clone(), None, None, first.interval_ns);
        extra.apply(&mut r);
        out.push(r);
    }
    out
}

/// Run the plan. `stop` is raised by SIGINT/SIGTERM.
/// `exp` adds the load phases (started, settled and stopped around each
/// phase by `crate::load`) and the probe runs (a probe at each of its periods).
/// `warnings` reads the run as it stands and says what its reader must know
/// (the face passes `analysis::warnings`, a layer above this one); they are
/// on file with every write.
pub fn execute(
    plan: &RunPlan,
    exp: &Experiment,
    output: &Output,
    command_line: Vec<String>,
    started: OffsetDateTime,
    stop: &AtomicBool,
    warnings: fn(&Run) -> Vec<String>,
) -> anyhow::Result<Run> {
    let (clock_med, clock_min) = clock::calibrate_clock_read(CLOCK_CALIBRATION_ROUNDS);
    let mut steps = Vec::new();
    // Before the real-time set-up: the audit reads many files and allocates as it goes.
    let root = SysRoot::default();
    let host = sysinfo::fingerprint(&root);
    let host = Host { doctor: crate::doctor::audit_host(&root, &host, &plan.measured_cpus()), ..host };
    let _dma = global_setup(plan, &mut steps);
    // Tracing instances left by rtscope processes that are gone (SIGKILL, a
    // second Ctrl-C) would trace on the measured CPUs forever: remove them.
    if let Some(tracefs) = crate::sys::tracefs::find_mounted().filter(|_| nix::unistd::geteuid().is_root()) {
        let stale = crate::sys::tracefs::remove_stale_instances(&tracefs);
        if !stale.is_empty() {
            steps.push(SetupStep::ok("remove_stale_trace_instances", format!("removed {} left by rtscope processes that are gone", stale.join(", "))));
        }
    }
    for what in remove_leftovers(&exp.load.dir, &mut steps) {
        if !output.quiet {
            eprintln!("removed {what}");
        }
    }
    // Dropped before `_dma` and on every return path: stops tracing, removes the instance.
    // The trace session serves the probes whose descriptor says `measure::Traced::TimerMethod`/`Handoff`; timerlat analyses
    // its late samples from its own tracer's events.
    let traced = plan.probes.iter().any(|p| crate::measure::is(p, crate::measure::ProbeInfo::traced_by_session));
    let trace = plan.trace.as_ref().filter(|_| traced).and_then(|tp| start_tracing(tp, plan, &mut steps));

    let calibration = Calibration::new(Nanos(clock_med), Nanos(clock_min), "CLOCK_MONOTONIC (vDSO clock_gettime)");
    let mut run = Run::native(command_line, host, plan.to_model(), calibration, rfc3339(started));
    run.scenario = exp.scenario.clone();

    let board = LiveBoard::default();
    let total_ns = exp.total_ns();
    let finished = AtomicBool::new(false);
    let mut capped = false;
    std::thread::scope(|s| -> anyhow::Result<()> {
        // Only on a terminal (live::progress draws nothing elsewhere): under
        // mlockall(MCL_FUTURE) a thread's whole stack is locked, and an
        // unprivileged user's RLIMIT_MEMLOCK (8 MiB) has no room to spare.
        if !output.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let board = &board;
            let finished = &finished;
            // A small stack: under mlockall(MCL_FUTURE) every thread's whole
            // stack is locked, and an unprivileged run has only
            // RLIMIT_MEMLOCK (often 8 MiB) for all of rtscope; the default
            // 2 MiB stack of this thread alone made allocations fail there.
            std::thread::Builder::new()
                .name("rtscope-live".into())
                .stack_size(256 * 1024)
                .spawn_scoped(s, move || crate::live::progress(board, total_ns, finished, stop))?;
        }
        if let Some(t) = trace.as_ref() {
            let finished = &finished;
            // Small stack as the live thread's (locked under MCL_FUTURE); buffers go on the heap.
            std::thread::Builder::new()
                .name("rtscope-trace".into())
                .stack_size(256 * 1024)
                .spawn_scoped(s, move || t.collect(finished))?;
        }
        let result = (|| -> anyhow::Result<()> {
            // Loads start from this (main) thread: their parent-death signal
            // is tied to the thread that forks them (see load::phase).
            // The hard cap (--max-total): the plan fits in it, so only
            // overheads (load start/stop, thread set-up) can push a probe run
            // past it; such a run is not started and the run ends here.
            let deadline = std::time::Instant::now() + Duration::from_nanos(exp.max_total_ns);
            let session = match exp.phases.iter().any(|p| !p.loads.is_empty()) {
                true => Some(crate::load::phase::LoadSession::new(&exp.load)?),
                false => None,
            };
            for (index, spec) in exp.phases.iter().enumerate() {
                let phase = &spec.name;
                // What the progress bar names: phase k/n, then the probe.
                let tag = format!("{phase} {}/{}", index + 1, exp.phases.len());
                if stop.load(Ordering::Relaxed) {
                    run.interrupted_in = Some(phase.clone());
                    break;
                }
                let mut loads = match &session {
                    Some(sess) if !spec.loads.is_empty() => {
                        board.reset(&format!("{tag}: settle"));
                        sess.start(spec, exp.settle_ns, exp.phase_ns(spec) / 1_000_000_000)?
                    }
                    _ => crate::load::PhaseLoads::idle(spec),
                };
                run.phases.push(loads.record());
                if !spec.loads.is_empty() {
                    // On file at once: which load processes run (their pids).
                    finish(&mut run, &steps, stop, warnings);
                    save_progress(&output.path, &mut run);
                    sleep_unless_stopped(Duration::from_nanos(exp.settle_ns), stop);
                }
                for entry in &exp.entries {
                    loads.check()?;
                    let name = &entry.probe;
                    let probe = probe_by_name(name).expect("plan holds only known probes");
                    let warm = plan.probe_run(entry, true);
                    // An explicit warm-up runs for every probe; the implicit one only where it helps.
                    let warm = if probe.info().warms_up { warm.warm_up_of_at_least(WARM_UP_MIN_NS) } else { warm };
                    if std::time::Instant::now() + Duration::from_nanos(warm.duration_ns + entry.duration_ns) > deadline {
                        capped = true;
                        stop.store(true, Ordering::Relaxed);
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let memory = MemoryLock::begin(&mut steps);
                    if warm.duration_ns > 0 {
                        board.reset(&format!("{tag}: {name} warm-up"));
                        // Warm-up samples are not traced.
                        probe.run(&ProbeCtx { run: &warm, phase, stop, board: &board, trace: None })?;
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    board.reset(&format!("{tag}: {name}"));
                    let sub = plan.probe_run(entry, false);
                    let ctx = ProbeCtx { run: &sub, phase, stop, board: &board, trace: trace.as_ref() };
                    let outcomes = probe.run(&ctx)?;
                    drop(memory);
                    absorb(name, &outcomes, &mut steps)?;
                    let mut results = results_from(name, phase, &outcomes);
                    if let Some(t) = &trace {
                        t.attach(&mut results);
                        run.trace = Some(t.summary());
                    }
                    run.results.extend(results);
                    // On file at once, unless the final write comes next
                    // (last probe of an idle last phase).
                    let last = index + 1 == exp.phases.len() && std::ptr::eq(entry, exp.entries.last().expect("an entry ran"));
                    if !(last && spec.loads.is_empty()) {
                        finish(&mut run, &steps, stop, warnings);
                        save_progress(&output.path, &mut run);
                    }
                }
                board.reset(&format!("{tag}: stopping loads"));
                let record = loads.stop()?;
                if let Some(last) = run.phases.last_mut() {
                    *last = record;
                }
                if stop.load(Ordering::Relaxed) {
                    run.interrupted_in = Some(phase.clone());
                    break;
                }
                // The final write follows the last phase.
                if index + 1 < exp.phases.len() {
                    finish(&mut run, &steps, stop, warnings);
                    save_progress(&output.path, &mut run);
                }
            }
            drop(session);
            Ok(())
        })();
        finished.store(true, Ordering::Relaxed);
        result
    })?;
    finish(&mut run, &steps, stop, warnings);
    if capped {
        run.warnings.push(format!(
            "the run reached --max-total ({}) and stopped before its next probe run; the results hold what was measured until then. Raise --max-total or shorten the plan",
            fmt_ns(exp.max_total_ns)
        ));
    }
    write_final(&output.path, &run)?;
    Ok(run)
}

/// Each thread's set-up steps into `steps` (once per step and outcome);
/// a thread whose loop ended on an error fails the probe run.
pub(crate) fn absorb(probe: &str, outcomes: &[ThreadOutcome], steps: &mut Vec<SetupStep>) -> anyhow::Result<()> {
    for o in outcomes {
        for st in &o.setup {
            if !steps.iter().any(|x| x.step == st.step && x.outcome == st.outcome) {
                steps.push(st.clone());
            }
        }
        if let Some(e) = &o.error {
            anyhow::bail!("probe {probe}, thread {}: {e}", o.thread);
        }
    }
    Ok(())
}

/// The last write of a finished (or interrupted) run: if `path` cannot take
/// it, the samples are never dropped — the run goes to a fallback place and
/// the error says where and how to store it.
pub fn write_final(path: &std::path::Path, run: &Run) -> anyhow::Result<()> {
    if let Err(e) = crate::store::json::write_run(path, run) {
        // Never drop the samples: a second place, and how to store them.
        return Err(match write_fallback(path, run) {
            Ok(saved) => anyhow::anyhow!(
                "could not write the result to {} ({e:#}); the measurement is saved in {} instead: `rtscope import {}` stores it in the history",
                path.display(),
                saved.display(),
                saved.display()
            ),
            Err(e2) => anyhow::anyhow!(
                "could not write the result to {} ({e:#}) nor to a fallback place ({e2:#}); the measurement is lost",
                path.display()
            ),
        });
    }
    Ok(())
}

/// An intermediate write: the file says the run has not finished
/// (`complete: false`), so a run killed after it is not taken for a
/// finished one. A failed write (disk full, directory removed) does not
/// stop the measurement: the samples stay in memory for the last write,
/// which has a fallback.
fn save_progress(path: &std::path::Path, run: &mut Run) {
    run.complete = false;
    if let Err(e) = crate::store::json::write_run(path, run) {
        eprintln!("warning: could not update {} ({e:#}); measuring on, the result is kept in memory", path.display());
    }
    run.complete = true;
}

/// Where a result goes when its own path cannot be written at the end:
/// `$XDG_STATE_HOME/rtscope/unsaved/`, else `~/.local/state/rtscope/unsaved/`,
/// else the temp directory; the first that takes the file.
fn write_fallback(path: &std::path::Path, run: &Run) -> anyhow::Result<std::path::PathBuf> {
    let name = path.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "rtscope-result.json".into());
    let var = |v: &str| std::env::var_os(v).filter(|x| !x.is_empty()).map(std::path::PathBuf::from);
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(d) = var("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        dirs.push(d.join("rtscope/unsaved"));
    }
    if let Some(h) = var("HOME") {
        dirs.push(h.join(".local/state/rtscope/unsaved"));
    }
    dirs.push(std::env::temp_dir());
    let mut last = anyhow::anyhow!("no fallback place");
    for d in dirs {
        let p = d.join(&name);
        match crate::sys::stat::create_dirs(&d).map_err(anyhow::Error::from).and_then(|_| crate::store::json::write_run(&p, run)) {
            Ok(()) => return Ok(p),
            Err(e) => last = e.context(format!("writing {}", p.display())),
        }
    }
    Err(last)
}

/// Starts threshold tracing; a failure (not root, no tracefs) is a set-up step that
/// failed with the reason, and the run goes on without tracing.
fn start_tracing(tp: &TracePlan, plan: &RunPlan, steps: &mut Vec<SetupStep>) -> Option<TraceSession> {
    match TraceSession::start(tp, &plan.measured_cpus(), plan.threads) {
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

fn finish(run: &mut Run, steps: &[SetupStep], stop: &AtomicBool, warnings: fn(&Run) -> Vec<String>) {
    run.finished_at = rfc3339(OffsetDateTime::now_utc());
    run.interrupted = stop.load(Ordering::Relaxed);
    if run.interrupted && run.interrupted_in.is_none() {
        run.interrupted_in = run.plan.phases.last().cloned();
    }
    run.realtime_setup = RealtimeSetup::from_steps(steps.to_vec());
    run.warnings = warnings(run);
}

/// Sleep in short steps until `deadline` passes or `stop` is raised.
pub fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let end = std::time::Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
