//! `rtscope monitor`: `crate::monitor` wired to its outputs — each closed
//! window appended to the history (SQLite or PostgreSQL), folded into the
//! Prometheus metrics served on `--listen` (GET /metrics only, localhost
//! unless told otherwise) and written to `--textfile DIR/rtscope.prom`;
//! at the end (SIGINT/SIGTERM, or `-D`) the overall result is written and
//! stored like a `run`'s. Every flag is checked before measuring (exit 2).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use super::end;
use crate::cli::{self, MonitorArgs};
use crate::error::{BadInput, EXIT_INTERRUPTED};
use crate::model::Window;
use crate::monitor::{self, MonitorPlan};
use crate::plan::Output;
use crate::report::prometheus::Metrics;
use crate::runner::Kept;
use crate::store::Store;

/// `--cycle idle:5m,mixed:5m` → phase names and their lengths.
fn parse_cycle(s: &str) -> Result<Vec<(String, u64)>, BadInput> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (name, d) = item.rsplit_once(':').ok_or_else(|| BadInput(format!("--cycle {item:?}: expected PHASE:DURATION, e.g. idle:5m,mixed:5m")))?;
        let ns = crate::units::parse_duration(d).map_err(|e| BadInput(format!("--cycle {item:?}: {e}")))?;
        if out.iter().any(|(n, _): &(String, u64)| n == name.trim()) {
            return Err(BadInput(format!("--cycle: phase '{}' is listed twice; list each phase once", name.trim())));
        }
        out.push((name.trim().to_string(), ns));
    }
    if out.is_empty() {
        return Err(BadInput("--cycle: no phase given; expected PHASE:DURATION,..., e.g. idle:5m,mixed:5m".into()));
    }
    Ok(out)
}

/// Write `text` to `dir/rtscope.prom` atomically (temp file + rename in the
/// same directory, as node_exporter's textfile collector asks; the temp
/// file's `.tmp` name is not one it reads).
fn write_textfile(dir: &Path, text: &str) -> anyhow::Result<()> {
    // write_atomic ends the file with its own newline.
    crate::store::json::write_atomic(&dir.join("rtscope.prom"), |w| Ok(w.write_all(text.strip_suffix('\n').unwrap_or(text).as_bytes())?))
}

pub(crate) fn cmd(args: &MonitorArgs) -> anyhow::Result<u8> {
    let started = OffsetDateTime::now_utc();
    refuse_run_only_flags(args)?;
    let cycle = args.cycle.as_deref().map(parse_cycle).transpose()?;
    let listen = args.listen.as_deref().map(|s| crate::cli::parse_listen(s, "127.0.0.1:9469")).transpose()?;
    if let Some(dir) = &args.textfile {
        if !dir.is_dir() {
            return Err(BadInput(format!("--textfile: '{}' is not a directory; give the collector's directory", dir.display())).into());
        }
        cli::plan::check_writable(dir, "--textfile")?;
    }
    let (mp, output) = monitor_plan(args, cycle.as_deref(), started)?;
    crate::factors::journal::recover_and_say();
    // Bind before measuring: a port in use is bad input, not a surprise later.
    let server = match listen {
        Some(addr) => Some(crate::serve::bind(addr)?),
        None => None,
    };
    let store = end::open_for_run(&args.run.store)?;
    if let Some(s) = &store {
        // Bounded memory for days of windows (bench/monitor-cost).
        s.limit_cache(256)?;
    }
    let stop = crate::commands::run::stop_on_signals()?;
    let host = crate::sysinfo::fingerprint(&crate::sysinfo::SysRoot::default());
    let id = format!("{}/{}/{}", host.hostname, crate::units::rfc3339(started), std::process::id());
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"), &host.kernel_release, &host.preempt_model, &host.hostname);
    let shared = Arc::new(Mutex::new(metrics.render()));
    let server = server.map(|l| crate::serve::metrics::MetricsServer::start(l, Arc::clone(&shared))).transpose()?;
    if !output.quiet {
        eprintln!("{}", crate::store::pgconn::redact_secrets(&announcement(&mp, server.as_ref().map(|s| s.addr().to_string()), args.textfile.as_deref())));
    }
    let mut sinks = Sinks {
        shown_db: store.as_ref().map(|s| s.shown()).unwrap_or_default(),
        store,
        pending: Pending::default(),
        id: id.clone(),
        metrics,
        shared,
        textfile: args.textfile.clone(),
        quiet: output.quiet,
        unit: output.unit,
    };
    let result = monitor::execute(&mp, &id, args.run.command_line.clone(), started, &stop, &mut |w| sinks.window(w), crate::commands::run::warnings);
    if let Some(s) = server {
        s.stop();
    }
    end_of_monitor(result?, &output, &mut sinks, &stop)
}

/// The monitor's end, through the one end of a run's parts
/// (`commands::end`): the result file first, whatever the database does;
/// the warnings; then the history, whatever happened to the file (a full
/// disk at Ctrl-C lost no run that the database could take); the exit code.
fn end_of_monitor(mut run: crate::model::Run, output: &Output, sinks: &mut Sinks, stop: &AtomicBool) -> anyhow::Result<u8> {
    let (file, trouble) = match crate::runner::write_kept(&output.path, &run) {
        Kept::Here => (Some(output.path.clone()), None),
        Kept::Rescued(p, e) => (Some(p), Some(e)),
        Kept::Lost(e) => (None, Some(e)),
    };
    end::warn(&run);
    let stored = match sinks.store_run(&mut run, output, file.as_deref()) {
        Ok(stored) => stored,
        Err(e) => {
            if let Some(t) = &trouble {
                eprintln!("warning: {t:#}");
            }
            return Err(e);
        }
    };
    if let (Some(f), false) = (&file, output.quiet) {
        println!("result: {} ({} windows)", f.display(), run.monitor.as_ref().map_or(0, |m| m.windows));
    }
    // A signal during the last writes still says the monitor was stopped.
    let stopped = stop.load(Ordering::Relaxed);
    match trouble {
        None if stopped => Ok(EXIT_INTERRUPTED),
        None => Ok(end::exit_code(&run)),
        // The run is in the history: the file's trouble is a warning.
        Some(t) if stored => {
            eprintln!("warning: {t:#}");
            Ok(if stopped { EXIT_INTERRUPTED } else { crate::error::EXIT_FAILURE })
        }
        Some(t) => Err(t),
    }
}

/// `run`'s flags that have no meaning for a monitor, and a window of 0.
fn refuse_run_only_flags(args: &MonitorArgs) -> Result<(), BadInput> {
    let r = &args.run;
    for (given, flag) in [
        (r.load.scenario.is_some(), "a scenario file"),
        (r.load.preset.is_some(), "--preset"),
        (!r.load.loads.is_empty(), "--load (use --cycle PHASE:DURATION,...)"),
        (r.load.phase_name.is_some(), "--phase-name"),
        (r.analysis.deadline.is_some(), "--deadline (use `rtscope check` on the stored run)"),
    ] {
        if given {
            return Err(BadInput(format!("rtscope monitor does not take {flag}")));
        }
    }
    if args.window == 0 {
        return Err(BadInput("--window 0: a window must be longer than 0, e.g. 5m".into()));
    }
    Ok(())
}

/// The plan: run's flags with the window as each probe run's length and
/// the cycle's phases as the load phases (never a preset).
fn monitor_plan(args: &MonitorArgs, cycle: Option<&[(String, u64)]>, started: OffsetDateTime) -> anyhow::Result<(MonitorPlan, Output)> {
    let r = &args.run;
    let o = crate::plan::overrides::Overrides {
        duration_ns: Some(args.window),
        loads: cycle.map(|c| vec![c.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>().join(",")]),
        // Never the default preset: the monitor's probes are its flags' own.
        own_probes: true,
        ..Default::default()
    };
    let (mut plan, output, exp) = cli::overrides::build(r, &o, &crate::commands::run::stamp(started))?;
    plan.trace = None;
    let total_ns = r.given.duration.then_some(r.duration);
    let cycle = cycle.unwrap_or_default();
    if cycle.iter().any(|(_, d)| *d < args.window) {
        return Err(BadInput(format!(
            "--cycle: every phase must last at least one --window ({}); a phase shorter than a window would never close one",
            crate::units::fmt_ns(args.window)
        ))
        .into());
    }
    let mp = MonitorPlan {
        window_ns: args.window,
        cycle_ns: cycle.iter().map(|(_, d)| *d).collect(),
        // Kept in the result: a `cmd:` phase's URL loses its password.
        cycle: cycle.iter().map(|(n, d)| crate::store::pgconn::redact_secrets(&format!("{n}:{}", crate::units::fmt_ns(*d)))).collect(),
        total_ns,
        plan,
        exp,
    };
    Ok((mp, output))
}

/// The line that says what the monitor does and where its outputs go.
fn announcement(mp: &MonitorPlan, metrics_addr: Option<String>, textfile: Option<&Path>) -> String {
    format!(
        "monitoring: {} in windows of {}, phases {}{}{}; Ctrl-C stops and saves",
        mp.plan.probes.join(","),
        crate::units::fmt_ns(mp.window_ns),
        if mp.cycle.is_empty() { "idle throughout".to_string() } else { mp.cycle.join(" → ") },
        metrics_addr.map(|a| format!("; metrics on http://{a}/metrics")).unwrap_or_default(),
        textfile.map(|d| format!("; textfile {}", d.join("rtscope.prom").display())).unwrap_or_default(),
    )
}

/// Where each closed window goes: the history database (through
/// [`Pending`]), the metrics served and written to the textfile, and a
/// line per merged summary on stderr.
struct Sinks {
    store: Option<Store>,
    pending: Pending,
    shown_db: String,
    id: String,
    metrics: Metrics,
    shared: Arc<Mutex<String>>,
    textfile: Option<PathBuf>,
    quiet: bool,
    unit: crate::units::Unit,
}

impl Sinks {
    fn window(&mut self, w: &[Window]) -> anyhow::Result<()> {
        if let Some(s) = self.store.as_mut() {
            self.pending.store(s, &self.id, w, &self.shown_db);
        }
        self.metrics.add_window(w);
        let text = self.metrics.render();
        if let Some(dir) = &self.textfile {
            if let Err(e) = write_textfile(dir, &text) {
                eprintln!("warning: could not write {}: {e:#}", dir.join("rtscope.prom").display());
            }
        }
        if let Ok(mut m) = self.shared.lock() {
            *m = text;
        }
        if !self.quiet {
            for x in w.iter().filter(|x| x.thread.is_none()) {
                eprintln!("{}", self.window_line(x));
            }
        }
        Ok(())
    }

    /// One unit per line, the tables' (µs, or ns with --ns).
    fn window_line(&self, x: &Window) -> String {
        let (u, un) = (self.unit, self.unit.name());
        format!(
            "window {} {} {}{}: {} samples, max {} {un}, p99 {} {un}, overruns {}",
            x.index,
            x.phase,
            x.probe,
            x.variant.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
            x.samples,
            u.fmt_n(x.max_ns),
            u.fmt_n(x.p99_ns),
            x.overruns
        )
    }

    /// At the end: the window rows still kept, then the run, into the
    /// history (`Ok(true)`; `Ok(false)` with `--no-store`). The result file
    /// is already written, to `file` (`None`: it could not be). When the
    /// database is still away, the rows it lacks go into the run
    /// (`monitor.unstored_windows`), which is written again — the rescue
    /// file — for `rtscope import` to store the run and those windows.
    fn store_run(&mut self, run: &mut crate::model::Run, output: &Output, file: Option<&Path>) -> anyhow::Result<bool> {
        let Some(s) = self.store.as_mut() else {
            return Ok(false);
        };
        if !self.pending.rows.is_empty() {
            self.pending.next_try = Instant::now();
            self.pending.store(s, &self.id, &[], &self.shown_db);
            if !self.pending.rows.is_empty() {
                let rows = std::mem::take(&mut self.pending.rows);
                let n = rows.len();
                let dropped = self.pending.dropped;
                if let Some(m) = run.monitor.as_mut() {
                    m.unstored_windows = rows;
                }
                let rescue = match crate::runner::write_kept(&output.path, run) {
                    Kept::Here => output.path.clone(),
                    Kept::Rescued(p, _) => p,
                    Kept::Lost(e) => {
                        return Err(e.context(format!("history database {} is still away: {n} window rows of this monitor are lost", self.shown_db)))
                    }
                };
                return Err(BadInput(format!(
                    "history database {} is still away: the run and {n} window rows of this monitor could not be stored{}; \
                     {} carries them all: `rtscope import {}` stores the run and its windows",
                    self.shown_db,
                    if dropped > 0 { format!(" ({dropped} older rows were dropped while it was away)") } else { String::new() },
                    rescue.display(),
                    rescue.display()
                ))
                .into());
            }
        }
        end::save(s, run, file.unwrap_or(&output.path), output.quiet)?;
        Ok(true)
    }
}

/// Window rows the history database has not taken yet. A monitor runs for
/// days and a database restart is normal: a failed append keeps the rows
/// here and tries again — reconnecting — after a backoff (1 s doubling to
/// [`Pending::MAX_BACKOFF`]), storing everything kept once the database is
/// back. At most [`Pending::MAX_ROWS`] rows are kept (the oldest go first,
/// counted and reported); the result file has the whole run either way.
struct Pending {
    rows: Vec<Window>,
    next_try: Instant,
    backoff: Duration,
    dropped: u64,
    away: bool,
}

impl Default for Pending {
    fn default() -> Self {
        Pending { rows: Vec::new(), next_try: Instant::now(), backoff: Duration::ZERO, dropped: 0, away: false }
    }
}

impl Pending {
    const MAX_BACKOFF: Duration = Duration::from_secs(60);
    /// About 20 MB of rows.
    const MAX_ROWS: usize = 100_000;

    /// Queue `w`, then (when the backoff allows) store everything queued.
    fn store(&mut self, s: &mut Store, monitor: &str, w: &[Window], shown: &str) {
        self.rows.extend_from_slice(w);
        if self.rows.len() > Self::MAX_ROWS {
            let over = self.rows.len() - Self::MAX_ROWS;
            self.rows.drain(..over);
            self.dropped += over as u64;
        }
        if Instant::now() < self.next_try {
            return;
        }
        match s.reconnect_if_closed().and_then(|_| s.append_windows(monitor, &self.rows)) {
            Ok(()) => {
                if self.away {
                    eprintln!(
                        "history database {shown} is back: {} window rows stored{}",
                        self.rows.len(),
                        if self.dropped > 0 { format!(", {} older rows dropped while it was away", self.dropped) } else { String::new() }
                    );
                }
                self.rows.clear();
                self.away = false;
                self.backoff = Duration::ZERO;
            }
            Err(e) => {
                self.backoff = (self.backoff * 2).clamp(Duration::from_secs(1), Self::MAX_BACKOFF);
                self.next_try = Instant::now() + self.backoff;
                if !self.away {
                    // The store's errors name the database already: said once.
                    let why = format!("{e:#}");
                    let why = why.strip_prefix(&format!("history database {shown}: ")).unwrap_or(&why);
                    eprintln!("warning: history database {shown} is away ({why}); monitoring on, windows kept until it is back");
                }
                self.away = true;
            }
        }
    }
}
