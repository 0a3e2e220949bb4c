//! `rtscope monitor`: the probes run continuously in windows, as a lab's
//! long-term monitoring does (OSADL's QA farm: maximum per 5-minute window,
//! idle and load phases alternating). Each window is one probe run of the
//! window's length per probe; when it closes, its [`Window`] summaries go to
//! the caller (who stores them, updates `/metrics`, writes the textfile) and
//! its recorders' distributions are merged (the one checked
//! `Distribution::merge`) into the run's overall ones, which stay lossless
//! (every bucket, exact max, tail) and bounded whatever the run's length. Phases come from `--cycle NAME:DURATION,...` (loads started and
//! stopped by `crate::load`, as for `run`), one phase throughout without it.
//!
//! Same session as `run` (the runner's set-up, probe runs and last write),
//! same result model: the final [`Run`] holds the overall entries per
//! probe/phase/thread plus the merged ones, and `monitor` says where the
//! windows are.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::load::{PhaseLoads, PhaseSpec};
use crate::measure::distribution::{Distribution, Member};
use crate::measure::{probe_by_name, LiveBoard, ThreadOutcome};
use crate::model::{Extras, MonitorRecord, Nanos, ProbeResult, Run, Window};
use crate::plan::{Experiment, RunPlan};
use crate::runner::{finish, results_from, results_of, sleep_unless, Measuring, MemoryLock, Session, Warnings};
use crate::units::rfc3339;

/// A monitor's plan: the run plan (probes, threads, CPUs, priority; its
/// duration is the window), the experiment's phases and loads, and how long
/// each phase lasts before the next (`cycle_ns`, one per phase; empty: the
/// one phase lasts the whole run).
pub(crate) struct MonitorPlan {
    pub(crate) plan: RunPlan,
    pub(crate) exp: Experiment,
    pub(crate) window_ns: u64,
    pub(crate) cycle_ns: Vec<u64>,
    /// `--cycle` as given, for the record.
    pub(crate) cycle: Vec<String>,
    /// Stop after this long (`-D`); `None`: until SIGINT/SIGTERM.
    pub(crate) total_ns: Option<u64>,
}

/// Summaries of one closed window: one per thread and one merged per variant.
fn windows_of(index: u64, started: OffsetDateTime, duration_ns: u64, probe: &str, phase: &str, outcomes: &[ThreadOutcome]) -> anyhow::Result<Vec<Window>> {
    Ok(results_from(probe, phase, outcomes)?.into_iter().map(|r| window_of(index, started, duration_ns, &r)).collect())
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
/// The set-up is `run`'s ([`Session`]); memory stays locked for the whole
/// monitor, as it measures all the time (no warm-up: each window follows
/// the last).
pub(crate) fn execute(
    mp: &MonitorPlan,
    id: &str,
    command_line: Vec<String>,
    started: OffsetDateTime,
    stop: &AtomicBool,
    on_window: &mut dyn FnMut(&[Window]) -> anyhow::Result<()>,
    warnings: Warnings,
) -> anyhow::Result<Run> {
    let mut session = Session::begin(&mp.plan, &mp.exp, command_line, started)?;
    for what in &session.removed {
        eprintln!("removed {what}");
    }
    let _memory = MemoryLock::begin(&mut session.steps);
    session.run.monitor = Some(MonitorRecord::new(id.to_string(), Nanos(mp.window_ns), mp.cycle.clone()));
    let board = LiveBoard::default();
    let t0 = Instant::now();
    let mut monitor = Monitor {
        mp,
        measuring: Measuring { board: &board, stop, trace: None },
        end: mp.total_ns.map(|t| t0 + Duration::from_nanos(t)),
        overall: Overall::default(),
        windows: 0,
        on_window,
    };
    let cycled = monitor.cycle(&mut session);
    session.end_loads();
    cycled?;
    session.run.results = monitor.overall.results()?;
    let interrupted = stop.load(Ordering::Relaxed);
    if interrupted {
        session.run.interrupted_in = session.run.phases.last().map(|p| p.name.clone());
    }
    finish(&mut session.run, &session.steps, interrupted, warnings);
    Ok(session.run)
}

/// The monitor's walk: phases in turn (the cycle), windows within a phase,
/// one probe run per entry within a window.
struct Monitor<'a> {
    mp: &'a MonitorPlan,
    measuring: Measuring<'a>,
    /// `-D` from the start; `None`: until SIGINT/SIGTERM.
    end: Option<Instant>,
    overall: Overall,
    /// Windows closed so far (the next one's index).
    windows: u64,
    on_window: &'a mut dyn FnMut(&[Window]) -> anyhow::Result<()>,
}

impl Monitor<'_> {
    fn over(&self) -> bool {
        self.measuring.stop.load(Ordering::Relaxed) || self.end.is_some_and(|e| Instant::now() >= e)
    }

    fn cycle(&mut self, session: &mut Session) -> anyhow::Result<()> {
        let mp = self.mp;
        let phases = &mp.exp.phases;
        let mut k = 0usize;
        while !self.over() {
            let spec = &phases[k % phases.len()];
            let phase_ns = mp.cycle_ns.get(k % phases.len().max(1)).copied();
            self.phase(session, spec, phase_ns)?;
            k += 1;
        }
        Ok(())
    }

    /// One phase of the cycle: loads started and settled, windows until the
    /// phase's time (`phase_ns`; `None`: the whole run) is up, loads stopped.
    fn phase(&mut self, session: &mut Session, spec: &PhaseSpec, phase_ns: Option<u64>) -> anyhow::Result<()> {
        let mp = self.mp;
        let exp = &mp.exp;
        let planned_s = phase_ns.unwrap_or(mp.total_ns.unwrap_or(365 * 86_400 * 1_000_000_000)) / 1_000_000_000 + 1;
        let mut loads = session.start_loads(spec, exp.settle_ns, planned_s)?;
        if !spec.loads.is_empty() {
            sleep_unless(Duration::from_nanos(exp.settle_ns), &|| self.over());
        }
        let phase_end = phase_ns.map(|p| Instant::now() + Duration::from_nanos(p));
        while !self.over() && phase_end.is_none_or(|e| Instant::now() < e) {
            let closed = self.window(session, spec, &mut loads)?;
            if closed.iter().any(|w| w.samples > 0 || w.overruns > 0) {
                (self.on_window)(&closed)?;
                self.windows += 1;
                if let Some(m) = session.run.monitor.as_mut() {
                    m.windows = self.windows;
                }
            }
        }
        session.stop_loads(loads)
    }

    /// One window: each entry's probe run of the window's length, its
    /// summaries, and its distributions merged into the overall ones.
    fn window(&mut self, session: &mut Session, spec: &PhaseSpec, loads: &mut PhaseLoads) -> anyhow::Result<Vec<Window>> {
        let mp = self.mp;
        let mut closed = Vec::new();
        for entry in &mp.exp.entries {
            loads.check()?;
            if self.over() {
                break;
            }
            let name = &entry.probe;
            let probe = probe_by_name(name).expect("plan holds only known probes");
            let mut sub = mp.plan.probe_run(entry, false);
            sub.duration_ns = self.window_ns();
            let at = OffsetDateTime::now_utc();
            let began = Instant::now();
            let outcomes = self.measuring.measure(probe, &sub, &mut session.steps)?;
            // A window cut short by Ctrl-C records the time it measured, not
            // the window's length (~18.9 s were stored as 30 s).
            let measured = if self.measuring.stop.load(Ordering::Relaxed) {
                sub.duration_ns.min(began.elapsed().as_nanos().min(u64::MAX as u128) as u64)
            } else {
                sub.duration_ns
            };
            closed.extend(windows_of(self.windows, at, measured, name, &spec.name, &outcomes)?);
            self.overall.add(name, &spec.name, outcomes)?;
        }
        Ok(closed)
    }

    /// The last window ends with -D: `monitor -D 35s` runs 35 s (three
    /// 10 s windows and one of 5 s), not four whole windows.
    fn window_ns(&self) -> u64 {
        let left = self.end.map_or(u64::MAX, |e| e.saturating_duration_since(Instant::now()).as_nanos().min(u64::MAX as u128) as u64);
        self.mp.window_ns.min(left.max(1_000_000))
    }
}

/// A thread's overall share of a monitor run: every window's distribution
/// merged through the one checked [`Distribution::merge`], and the probe's
/// extras (`Extras::combine`).
struct Share {
    cpu: Option<usize>,
    interval_ns: u64,
    dist: Distribution,
    extra: Extras,
}

/// A thread of a monitor run: (probe, phase, variant, thread).
type ThreadKey = (String, String, Option<String>, usize);

/// Each thread's overall share, keyed by its [`ThreadKey`]: bounded by the
/// plan, not by the run's length.
#[derive(Default)]
struct Overall(BTreeMap<ThreadKey, Share>);

impl Overall {
    fn add(&mut self, probe: &str, phase: &str, outcomes: Vec<ThreadOutcome>) -> anyhow::Result<()> {
        for o in outcomes {
            let mut dist = o.recorder.distribution();
            // Each window's recorder counts its seconds from its own start:
            // the time series of a monitor run is its windows, so no
            // window's seconds are merged (the overall entries keep none)
            // and the overall layout is the first window's.
            dist.seconds.clear();
            let key = (probe.to_string(), phase.to_string(), o.variant.clone(), o.thread);
            match self.0.get_mut(&key) {
                Some(ov) => {
                    if ov.dist.samples > 0 {
                        dist.width_s = ov.dist.width_s;
                    }
                    let source = format!("monitor: probe {probe}, phase {phase}, thread {}", o.thread);
                    ov.dist.merge(&dist, &source).map_err(anyhow::Error::msg)?;
                    ov.extra = ov.extra.combine(&o.extra);
                }
                None => {
                    self.0.insert(key, Share { cpu: o.cpu, interval_ns: o.interval_ns, dist, extra: o.extra });
                }
            }
        }
        Ok(())
    }

    /// Per-thread entries and one merged entry per probe/phase/variant, from
    /// the overall shares (as `run` makes them, `runner::results_of`), each
    /// with a note that its per-second series is the windows.
    fn results(self) -> anyhow::Result<Vec<ProbeResult>> {
        let mut groups: BTreeMap<(String, String), Vec<(ThreadKey, Share)>> = BTreeMap::new();
        for (key, s) in self.0 {
            groups.entry((key.0.clone(), key.1.clone())).or_default().push((key, s));
        }
        let note = "monitor run: per-second series are not kept and worst-sample times count from the start of their window; the windows (history: `rtscope history --windows ID`) are the time series";
        let mut out = Vec::new();
        for ((probe, phase), shares) in groups {
            let (keys, shares): (Vec<_>, Vec<_>) = shares.into_iter().unzip();
            let mut extras = Vec::new();
            let mut members = Vec::new();
            for ((_, _, variant, thread), s) in keys.iter().zip(shares) {
                extras.push(s.extra);
                members.push(Member {
                    variant: variant.as_deref(),
                    thread: *thread,
                    cpu: s.cpu,
                    interval_ns: s.interval_ns,
                    dist: s.dist,
                    source: format!("probe {probe}, thread {thread}"),
                });
            }
            for mut r in results_of(&probe, &phase, &members, |i| (&extras[i], &[][..]))? {
                r.per_second.clear();
                r.extras.note = Some(match r.extras.note.take() {
                    Some(n) => format!("{n}; {note}"),
                    None => note.to_string(),
                });
                out.push(r);
            }
        }
        Ok(out)
    }
}
