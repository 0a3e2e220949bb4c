//! `rtscope monitor`: the probes run continuously in windows, as a lab's
//! long-term monitoring does (OSADL's QA farm: maximum per 5-minute window,
//! idle and load phases alternating). Each window is one probe run of the
//! window's length per probe; when it closes, its [`Window`] summaries go to
//! the caller (who stores them, updates `/metrics`, writes the textfile) and
//! its recorders are merged into the run's overall recorders, which stay
//! lossless (HDR histogram, exact max, tail) and bounded whatever the run's
//! length. Phases come from `--cycle NAME:DURATION,...` (loads started and
//! stopped by `crate::load`, as for `run`), one phase throughout without it.
//!
//! Same real-time set-up as `run` (the runner's), same result model: the
//! final [`Run`] holds the overall entries per probe/phase/thread plus the
//! merged ones, and `monitor` says where the windows are.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::measure::{probe_by_name, LiveBoard, ProbeCtx, ThreadOutcome};
use crate::model::{Calibration, Host, MonitorRecord, Nanos, ProbeResult, RealtimeSetup, Run, Window};
use crate::plan::{Experiment, RunPlan};
use crate::sys::time as clock;
use crate::sysinfo::{self, SysRoot};
use crate::units::rfc3339;

/// A monitor's plan: the run plan (probes, threads, CPUs, priority; its
/// duration is the window), the experiment's phases and loads, and how long
/// each phase lasts before the next (`cycle_ns`, one per phase; empty: the
/// one phase lasts the whole run).
pub struct MonitorPlan {
    pub plan: RunPlan,
    pub exp: Experiment,
    pub window_ns: u64,
    pub cycle_ns: Vec<u64>,
    /// `--cycle` as given, for the record.
    pub cycle: Vec<String>,
    /// Stop after this long (`-D`); `None`: until SIGINT/SIGTERM.
    pub total_ns: Option<u64>,
}

/// Summaries of one closed window: one per thread and one merged per variant.
fn windows_of(index: u64, started: OffsetDateTime, duration_ns: u64, probe: &str, phase: &str, outcomes: &[ThreadOutcome]) -> Vec<Window> {
    crate::runner::results_from(probe, phase, outcomes)
        .into_iter()
        .map(|r| window_of(index, started, duration_ns, &r))
        .collect()
}

fn window_of(index: u64, started: OffsetDateTime, duration_ns: u64, r: &ProbeResult) -> Window {
    let p = |k: &str| r.percentiles_ns.get(k).copied().unwrap_or(Nanos(0));
    Window {
        index,
        started_at: rfc3339(started),
        duration_ns: Nanos(duration_ns),
        phase: r.phase.clone(),
        probe: r.probe.clone(),
        variant: r.variant.clone(),
        thread: r.thread,
        cpu: r.cpu,
        samples: r.samples,
        overruns: r.overruns,
        min_ns: r.min_ns,
        p50_ns: p("50"),
        p99_ns: p("99"),
        max_ns: r.max_ns,
        sum_ns: r.mean_ns * r.samples as f64,
        histogram: r.histogram.clone(),
    }
}

/// Run the monitor until `stop` (SIGINT/SIGTERM) or `total_ns`. Each
/// closed window's summaries go to `on_window` (an error there ends the
/// monitor: the caller could not store them). `id` names the run's windows.
pub fn execute(
    mp: &MonitorPlan,
    id: &str,
    command_line: Vec<String>,
    started: OffsetDateTime,
    stop: &AtomicBool,
    on_window: &mut dyn FnMut(&[Window]) -> anyhow::Result<()>,
) -> anyhow::Result<Run> {
    let plan = &mp.plan;
    let exp = &mp.exp;
    let (clock_med, clock_min) = clock::calibrate_clock_read(crate::runner::CLOCK_CALIBRATION_ROUNDS);
    let mut steps = Vec::new();
    let root = SysRoot::default();
    let host = sysinfo::fingerprint(&root);
    let host = Host { doctor: crate::doctor::audit_host(&root, &host, &plan.measured_cpus()), ..host };
    for what in crate::runner::remove_leftovers(&exp.load.dir, &mut steps) {
        eprintln!("removed {what}");
    }
    let _dma = crate::runner::global_setup(plan, &mut steps);
    // Locked for the whole monitor: it measures all the time.
    let _memory = crate::runner::MemoryLock::begin(&mut steps);
    let calibration = Calibration::new(Nanos(clock_med), Nanos(clock_min), "CLOCK_MONOTONIC (vDSO clock_gettime)");
    let mut run = Run::native(command_line, host, plan.to_model(), calibration, rfc3339(started));
    run.monitor = Some(MonitorRecord { id: id.to_string(), window_ns: Nanos(mp.window_ns), cycle: mp.cycle.clone(), windows: 0 });

    let board = LiveBoard::default();
    let t0 = Instant::now();
    let end = mp.total_ns.map(|t| t0 + Duration::from_nanos(t));
    let over = || stop.load(Ordering::Relaxed) || end.is_some_and(|e| Instant::now() >= e);
    // Each thread's overall outcome, keyed by (probe, phase, variant,
    // thread): bounded by the plan, not by the run's length.
    let mut overall: BTreeMap<(String, String, Option<String>, usize), ThreadOutcome> = BTreeMap::new();
    let mut index = 0u64;
    let session = match exp.phases.iter().any(|p| !p.loads.is_empty()) {
        true => Some(crate::load::phase::LoadSession::new(&exp.load)?),
        false => None,
    };
    let mut k = 0usize;
    let result = (|| -> anyhow::Result<()> {
        while !over() {
            let spec = &exp.phases[k % exp.phases.len()];
            let phase_ns = mp.cycle_ns.get(k % exp.phases.len().max(1)).copied();
            let mut loads = match &session {
                Some(sess) if !spec.loads.is_empty() => {
                    let secs = phase_ns.unwrap_or(mp.total_ns.unwrap_or(365 * 86_400 * 1_000_000_000)) / 1_000_000_000 + 1;
                    sess.start(spec, exp.settle_ns, secs)?
                }
                _ => crate::load::PhaseLoads::idle(spec),
            };
            run.phases.push(loads.record());
            if !spec.loads.is_empty() {
                sleep_unless(Duration::from_nanos(exp.settle_ns), &over);
            }
            let phase_end = phase_ns.map(|p| Instant::now() + Duration::from_nanos(p));
            while !over() && phase_end.is_none_or(|e| Instant::now() < e) {
                let mut closed = Vec::new();
                for entry in &exp.entries {
                    loads.check()?;
                    if over() {
                        break;
                    }
                    let name = &entry.probe;
                    let probe = probe_by_name(name).expect("plan holds only known probes");
                    let mut sub = plan.probe_run(entry, false);
                    // The last window ends with -D: `monitor -D 35s` runs 35 s
                    // (three 10 s windows and one of 5 s), not four whole windows.
                    let left = end.map_or(u64::MAX, |e| e.saturating_duration_since(Instant::now()).as_nanos().min(u64::MAX as u128) as u64);
                    sub.duration_ns = mp.window_ns.min(left.max(1_000_000));
                    let at = OffsetDateTime::now_utc();
                    let outcomes = probe.run(&ProbeCtx { run: &sub, phase: &spec.name, stop, board: &board, trace: None })?;
                    crate::runner::absorb(name, &outcomes, &mut steps)?;
                    closed.extend(windows_of(index, at, sub.duration_ns, name, &spec.name, &outcomes));
                    for o in outcomes {
                        let key = (name.clone(), spec.name.clone(), o.variant.clone(), o.thread);
                        match overall.get_mut(&key) {
                            Some(ov) => {
                                ov.recorder.merge(&o.recorder);
                                ov.extra = ov.extra.merge(&o.extra);
                            }
                            None => {
                                overall.insert(key, ThreadOutcome { setup: Vec::new(), error: None, ..o });
                            }
                        }
                    }
                }
                if closed.iter().any(|w| w.samples > 0 || w.overruns > 0) {
                    on_window(&closed)?;
                    index += 1;
                    if let Some(m) = run.monitor.as_mut() {
                        m.windows = index;
                    }
                }
            }
            let record = loads.stop()?;
            if let Some(last) = run.phases.last_mut() {
                *last = record;
            }
            k += 1;
        }
        Ok(())
    })();
    drop(session);
    result?;
    run.results = results_of(overall);
    run.interrupted = stop.load(Ordering::Relaxed);
    if run.interrupted {
        run.interrupted_in = run.phases.last().map(|p| p.name.clone());
    }
    run.realtime_setup = RealtimeSetup { ok: steps.iter().all(|s| s.outcome != crate::model::Outcome::Failed), steps };
    run.finished_at = rfc3339(OffsetDateTime::now_utc());
    Ok(run)
}

/// Per-thread entries and one merged entry per probe/phase/variant, from
/// the overall outcomes (as `run` makes them, `runner::results_from`).
/// Their per-second series are cleared: each window's recorder counts time
/// from its own start (the time series of a monitor run is its windows).
fn results_of(overall: BTreeMap<(String, String, Option<String>, usize), ThreadOutcome>) -> Vec<ProbeResult> {
    let mut groups: BTreeMap<(String, String), Vec<ThreadOutcome>> = BTreeMap::new();
    for ((probe, phase, _, _), o) in overall {
        groups.entry((probe, phase)).or_default().push(o);
    }
    let note = "monitor run: per-second series are not kept and worst-sample times count from the start of their window; the windows (history: `rtscope history --windows ID`) are the time series";
    let mut out = Vec::new();
    for ((probe, phase), outcomes) in groups {
        for mut r in crate::runner::results_from(&probe, &phase, &outcomes) {
            r.per_second.clear();
            r.note = Some(match r.note.take() {
                Some(n) => format!("{n}; {note}"),
                None => note.to_string(),
            });
            out.push(r);
        }
    }
    out
}

fn sleep_unless(d: Duration, over: &dyn Fn() -> bool) {
    let end = Instant::now() + d;
    while !over() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())));
    }
}
