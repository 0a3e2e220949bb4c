//! `rtscope monitor`: `crate::monitor` wired to its outputs — each closed
//! window appended to the history (SQLite or PostgreSQL), folded into the
//! Prometheus metrics served on `--listen` (GET /metrics only, localhost
//! unless told otherwise) and written to `--textfile DIR/rtscope.prom`;
//! at the end (SIGINT/SIGTERM, or `-D`) the overall result is written and
//! stored like a `run`'s. Every flag is checked before measuring (exit 2).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use time::OffsetDateTime;

use crate::cli::{self, MonitorArgs};
use crate::error::{BadInput, EXIT_INTERRUPTED, EXIT_OK};
use crate::monitor::{self, MonitorPlan};
use crate::report::prometheus::Metrics;
use crate::store::Store;

/// `--cycle idle:5m,mixed:5m` → phase names and their lengths.
fn parse_cycle(s: &str) -> Result<Vec<(String, u64)>, BadInput> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (name, d) = item.rsplit_once(':').ok_or_else(|| {
            BadInput(format!("--cycle {item:?}: expected PHASE:DURATION, e.g. idle:5m,mixed:5m"))
        })?;
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

pub fn cmd(args: &MonitorArgs) -> anyhow::Result<u8> {
    let started = OffsetDateTime::now_utc();
    let r = &args.run;
    for (given, flag) in [
        (r.load.scenario.is_some(), "a scenario file"),
        (r.load.preset.is_some(), "--preset"),
        (!r.load.loads.is_empty(), "--load (use --cycle PHASE:DURATION,...)"),
        (r.load.phase_name.is_some(), "--phase-name"),
        (r.analysis.deadline.is_some(), "--deadline (use `rtscope check` on the stored run)"),
    ] {
        if given {
            return Err(BadInput(format!("rtscope monitor does not take {flag}")).into());
        }
    }
    if args.window == 0 {
        return Err(BadInput("--window 0: a window must be longer than 0, e.g. 5m".into()).into());
    }
    let cycle = args.cycle.as_deref().map(parse_cycle).transpose()?;
    let listen = args.listen.as_deref().map(|s| crate::cli::parse_listen(s, "127.0.0.1:9469")).transpose()?;
    if let Some(dir) = &args.textfile {
        if !dir.is_dir() {
            return Err(BadInput(format!("--textfile: '{}' is not a directory; give the collector's directory", dir.display())).into());
        }
        cli::plan::check_writable(dir, "--textfile")?;
    }
    // The plan: run's flags with the window as each probe run's length and
    // the cycle's phases as the load phases (never a preset).
    let mut a = r.clone();
    a.duration = args.window;
    if let Some(c) = &cycle {
        a.load.loads = vec![c.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>().join(",")];
    }
    // Never the default preset: the monitor's probes are its flags' own.
    a.given.probes = true;
    let (mut plan, output, exp) = cli::load::build(&a, &crate::commands::run::stamp(started))?;
    plan.trace = None;
    let total_ns = r.given.duration.then_some(r.duration);
    if let Some(c) = &cycle {
        if c.iter().any(|(_, d)| *d < args.window) {
            return Err(BadInput(format!(
                "--cycle: every phase must last at least one --window ({}); a phase shorter than a window would never close one",
                crate::units::fmt_ns(args.window)
            ))
            .into());
        }
    }
    // Bind before measuring: a port in use is bad input, not a surprise later.
    let server = match listen {
        Some(addr) => Some(crate::serve::bind(addr)?),
        None => None,
    };
    let mut store = crate::commands::history::open_for_run(&r.store)?;
    if let Some(s) = &store {
        // Bounded memory for days of windows (bench/monitor-cost).
        s.limit_cache(256)?;
    }
    let stop = crate::commands::run::stop_on_signals()?;
    let host = crate::sysinfo::fingerprint(&crate::sysinfo::SysRoot::default());
    let id = format!("{}/{}/{}", host.hostname, crate::units::rfc3339(started), std::process::id());
    let mp = MonitorPlan {
        window_ns: args.window,
        cycle_ns: cycle.as_ref().map(|c| c.iter().map(|(_, d)| *d).collect()).unwrap_or_default(),
        cycle: cycle.as_ref().map(|c| c.iter().map(|(n, d)| format!("{n}:{}", crate::units::fmt_ns(*d))).collect()).unwrap_or_default(),
        total_ns,
        plan,
        exp,
    };
    let mut metrics = Metrics::new(env!("CARGO_PKG_VERSION"), &host.kernel_release, &host.preempt_model, &host.hostname);
    let shared = Arc::new(Mutex::new(metrics.render()));
    let server = server.map(|l| crate::serve::metrics::MetricsServer::start(l, Arc::clone(&shared))).transpose()?;
    if !output.quiet {
        eprintln!(
            "monitoring: {} in windows of {}, phases {}{}{}; Ctrl-C stops and saves",
            mp.plan.probes.join(","),
            crate::units::fmt_ns(mp.window_ns),
            if mp.cycle.is_empty() { "idle throughout".to_string() } else { mp.cycle.join(" → ") },
            server.as_ref().map(|s| format!("; metrics on http://{}/metrics", s.addr())).unwrap_or_default(),
            args.textfile.as_ref().map(|d| format!("; textfile {}", d.join("rtscope.prom").display())).unwrap_or_default(),
        );
    }
    let textfile: Option<PathBuf> = args.textfile.clone();
    let quiet = output.quiet;
    let ns = output.ns;
    let un = if ns { "ns" } else { "us" };
    let mut pending = Pending::default();
    let shown_db = store.as_ref().map(|s| s.shown()).unwrap_or_default();
    let mut on_window = |w: &[crate::model::Window]| -> anyhow::Result<()> {
        if let Some(s) = store.as_mut() {
            pending.store(s, &id, w, &shown_db);
        }
        metrics.add_window(w);
        let text = metrics.render();
        if let Some(dir) = &textfile {
            if let Err(e) = write_textfile(dir, &text) {
                eprintln!("warning: could not write {}: {e:#}", dir.join("rtscope.prom").display());
            }
        }
        if let Ok(mut m) = shared.lock() {
            *m = text;
        }
        if !quiet {
            for x in w.iter().filter(|x| x.thread.is_none()) {
                eprintln!(
                    // One unit per line, the tables' (µs, or ns with --ns).
                    "window {} {} {}{}: {} samples, max {} {un}, p99 {} {un}, overruns {}",
                    x.index,
                    x.phase,
                    x.probe,
                    x.variant.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
                    x.samples,
                    crate::report::term::fmt_latency(x.max_ns.0 as f64, ns),
                    crate::report::term::fmt_latency(x.p99_ns.0 as f64, ns),
                    x.overruns
                );
            }
        }
        Ok(())
    };
    let result = monitor::execute(&mp, &id, r.command_line.clone(), started, &stop, &mut on_window);
    if let Some(s) = server {
        s.stop();
    }
    let mut run = result?;
    run.warnings = crate::analysis::warnings::for_run(&run).iter().map(ToString::to_string).collect();
    // The result file first, whatever the database does.
    crate::runner::write_final(&output.path, &run)?;
    if let Some(s) = store.as_mut() {
        if !pending.rows.is_empty() {
            pending.next_try = Instant::now();
            pending.store(s, &id, &[], &shown_db);
            if !pending.rows.is_empty() {
                return Err(BadInput(format!(
                    "history database {shown_db} is still away: {} window rows of this monitor could not be stored; \
                     the result file {} is complete and kept: store it later with `rtscope import {}`",
                    pending.rows.len(),
                    output.path.display(),
                    output.path.display()
                ))
                .into());
            }
        }
        crate::commands::history::save_native(s, &run, &output.path, output.quiet)?;
    }
    if !output.quiet {
        println!("result: {} ({} windows)", output.path.display(), run.monitor.as_ref().map_or(0, |m| m.windows));
    }
    Ok(if stop.load(Ordering::Relaxed) { EXIT_INTERRUPTED } else { EXIT_OK })
}

/// Window rows the history database has not taken yet. A monitor runs for
/// days and a database restart is normal: a failed append keeps the rows
/// here and tries again — reconnecting — after a backoff (1 s doubling to
/// [`Pending::MAX_BACKOFF`]), storing everything kept once the database is
/// back. At most [`Pending::MAX_ROWS`] rows are kept (the oldest go first,
/// counted and reported); the result file has the whole run either way.
struct Pending {
    rows: Vec<crate::model::Window>,
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
    fn store(&mut self, s: &mut Store, monitor: &str, w: &[crate::model::Window], shown: &str) {
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
                    eprintln!("warning: history database {shown} is away ({e:#}); monitoring on, windows kept until it is back");
                }
                self.away = true;
            }
        }
    }
}
