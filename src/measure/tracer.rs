//! The kernel's latency tracers behind the `timerlat`, `osnoise` and `hwlat`
//! probes (Linux Documentation/trace/timerlat-tracer.rst,
//! osnoise-tracer.rst, hwlat_detector.rst): whether this kernel has one and
//! no one else uses it ([`check`]), setting it up and putting every setting
//! back ([`TracerRun`]).
//!
//! Hygiene, as for threshold tracing:
//! - timerlat and osnoise run in a tracefs instance of rtscope's own
//!   (`instances/rtscope-<pid>-<tracer>`); hwlat, which the kernel allows at
//!   the top level only, runs there, and only when the top level is unused
//!   (current_tracer `nop`, no event set).
//! - Their settings are global (`osnoise/*`, `tracing_thresh`,
//!   `hwlat_detector/*`; for hwlat also the top level's `tracing_cpumask`,
//!   `trace_clock`): the old value of every file rtscope writes is kept, in
//!   memory and in `/run/rtscope/tracer-<pid>`, and written back when the
//!   probe run ends — normally, on an error, on Ctrl-C (the guard's `Drop`).
//!   After a SIGKILL the next tracer run finds the file of the dead process,
//!   writes its values back and removes it, as it removes the dead run's
//!   instance.
//! - A second run that asks for a tracer in use is refused with exit 2
//!   before anything is measured or written ([`check`]). rtscope runs also
//!   hold `/run/rtscope/tracer.lock` while their tracer runs, so two that
//!   start at once cannot both find it free; the later one is refused with
//!   exit 2 when its tracer probe starts.
//!
//! The samples are read as text from `trace_pipe`, once a second as rtla
//! does (more often below a 1 ms period: [`read_interval_ns`]); at 1 ms that is
//! two lines per CPU per millisecond (timerlat), which the kernel formats in
//! about a microsecond each; reading `trace_pipe_raw` would save that but
//! needs the ring buffer's page format and each event's binary layout.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::BadInput;
use crate::model::SetupStep;
use crate::sys::sched::Policy;
use crate::sys::tracefs::{self, Instance, Pipe};

/// One of the kernel's latency tracers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Timerlat,
    Osnoise,
    Hwlat,
}

impl Kind {
    /// The kernel tracer's name (available_tracers).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Timerlat => "timerlat",
            Kind::Osnoise => "osnoise",
            Kind::Hwlat => "hwlat",
        }
    }
    /// The kernel option that builds it.
    pub(crate) fn config(self) -> &'static str {
        match self {
            Kind::Timerlat => "CONFIG_TIMERLAT_TRACER",
            Kind::Osnoise => "CONFIG_OSNOISE_TRACER",
            Kind::Hwlat => "CONFIG_HWLAT_TRACER",
        }
    }
    /// The user-space probe that measures the nearest thing without it.
    fn instead(self) -> &'static str {
        match self {
            Kind::Timerlat => "--probe timer (the timer latency of a user thread, cyclictest's method)",
            Kind::Osnoise | Kind::Hwlat => "--probe noise (gaps in a busy user-space loop, oslat's method)",
        }
    }
    /// The kernel allows it in an instance (hwlat: top level only).
    fn in_instance(self) -> bool {
        self != Kind::Hwlat
    }
    /// Tracers that cannot run beside it: timerlat and osnoise share the
    /// `osnoise/` settings and the kernel runs one of them at a time.
    fn rivals(self) -> &'static [&'static str] {
        match self {
            Kind::Timerlat | Kind::Osnoise => &["timerlat", "osnoise"],
            Kind::Hwlat => &["hwlat"],
        }
    }
}

/// The tracers this kernel offers (the top level's `available_tracers`),
/// or None when tracefs is not mounted or not readable.
pub(crate) fn available() -> Option<Vec<String>> {
    let dir = tracefs::find_mounted()?;
    let text = tracefs::read_ctl(&dir.join("available_tracers")).ok()?;
    Some(text.split_whitespace().map(str::to_string).collect())
}

/// Why the probe of `kind` cannot run here now — the text of an exit-2
/// error naming what to do — or None when it can.
pub(crate) fn check(kind: Kind) -> Option<String> {
    let flag = format!("--probe {}", kind.name());
    // Not mounted (a fresh boot until a tool mounts it): mounted here, as
    // threshold tracing and rtla do; it stays mounted for other tools.
    let dir = match tracefs::find_or_mount() {
        Ok((dir, _)) => dir,
        Err(e) => {
            return Some(format!(
                "{flag}: tracefs is not mounted (looked at /sys/kernel/tracing and /sys/kernel/debug/tracing) and mounting it failed ({e}); mount it as root (mount -t tracefs nodev /sys/kernel/tracing) or use {}",
                kind.instead()
            ))
        }
    };
    let tracers = available().unwrap_or_default();
    if !tracers.iter().any(|t| t == kind.name()) {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string()).unwrap_or_else(|_| "unknown".into());
        return Some(format!(
            "{flag}: this kernel ({release}) has no {} tracer: it was built without {}=y (tracers it has: {}); use {} instead, or boot a kernel built with it (Debian's linux-image-rt-amd64 has it; see lab/kernel-lab)",
            kind.name(),
            kind.config(),
            if tracers.is_empty() { "none".to_string() } else { tracers.join(" ") },
            kind.instead()
        ));
    }
    if !writable(&dir.join("current_tracer")) {
        return Some(format!(
            "{flag}: setting up the kernel's {} tracer needs root (tracefs is writable by root only); run as root or use {}",
            kind.name(),
            kind.instead()
        ));
    }
    if let Err(Busy(who)) = take_lock() {
        return Some(in_use(kind, &who));
    }
    user_of(&dir, kind).map(|who| in_use(kind, &who))
}

/// The exit-2 text for a tracer that `who` uses.
fn in_use(kind: Kind, who: &str) -> String {
    format!(
        "--probe {}: the kernel's {} tracer is in use by {who}; the kernel runs one at a time and its settings are shared. Wait for it to finish, or stop it (echo nop > <that directory>/current_tracer)",
        kind.name(),
        kind.name()
    )
}

/// Held by the rtscope process whose tracer probe runs (pid inside): two
/// rtscope runs that start at the same moment could otherwise both find
/// the tracer free before either has set it up.
const LOCK_FILE: &str = "/run/rtscope/tracer.lock";

/// Another rtscope process holds [`LOCK_FILE`]: who, in words.
struct Busy(String);

/// Takes [`LOCK_FILE`] without waiting. `Ok(None)` when the file cannot be
/// made (no /run, not root): then only the tracefs check guards the tracer.
fn take_lock() -> Result<Option<nix::fcntl::Flock<std::fs::File>>, Busy> {
    use std::io::{Read, Seek, Write};
    let _ = std::fs::create_dir_all(STATE_DIR);
    let Ok(file) = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(LOCK_FILE) else {
        return Ok(None);
    };
    match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(mut lock) => {
            let _ = lock.set_len(0);
            let _ = lock.rewind();
            let _ = write!(lock, "{}", std::process::id());
            Ok(Some(lock))
        }
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            Err(Busy(match pid.trim() {
                "" => format!("another rtscope run (holding {LOCK_FILE})"),
                pid => format!("another rtscope run (pid {pid}, holding {LOCK_FILE})"),
            }))
        }
        Err(_) => Ok(None),
    }
}

fn writable(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: a valid NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Who runs a tracer that `kind` cannot run beside (the top level or an
/// instance), described for the user; instances of dead rtscope runs do
/// not count (the next run removes them).
fn user_of(tracefs: &Path, kind: Kind) -> Option<String> {
    let current = |d: &Path| tracefs::read_ctl(&d.join("current_tracer")).map(|s| s.trim().to_string()).unwrap_or_default();
    let top = current(tracefs);
    if kind.rivals().contains(&top.as_str()) || (kind == Kind::Hwlat && top != "nop") {
        return Some(format!("the top level of {} (current_tracer: {top})", tracefs.display()));
    }
    if kind == Kind::Hwlat {
        let events = tracefs::read_ctl(&tracefs.join("set_event")).unwrap_or_default();
        if !events.trim().is_empty() {
            return Some(format!(
                "the top level of {} (events enabled: {}); hwlat can run only at the top level",
                tracefs.display(),
                events.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
            ));
        }
    }
    for e in std::fs::read_dir(tracefs.join("instances")).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let t = current(&e.path());
        if !kind.rivals().contains(&t.as_str()) {
            continue;
        }
        match tracefs::instance_pid(&name) {
            Some(pid) if !tracefs::owner_alive(pid, &e.path()) => continue,
            Some(pid) => return Some(format!("another rtscope run (pid {pid}, instance {name}, tracer {t})")),
            None => return Some(format!("tracefs instance {} (tracer {t})", e.path().display())),
        }
    }
    None
}

/// Where the old values of the settings a tracer run changed are kept
/// until it ends (one file per run, `tracer-<pid>`).
const STATE_DIR: &str = "/run/rtscope";

/// A kernel tracer set up for one probe run. Dropping it stops the tracer,
/// removes the instance and writes every changed setting back.
pub(crate) struct TracerRun {
    kind: Kind,
    tracefs: PathBuf,
    /// The instance, or None at the top level (hwlat).
    instance: Option<Instance>,
    /// (file relative to tracefs, old value), in the order written.
    saved: Vec<(String, String)>,
    state: PathBuf,
    /// What rtscope wrote, for the result (`tracer.settings`).
    pub(crate) settings: BTreeMap<String, String>,
    /// [`LOCK_FILE`], released after `Drop` has put the settings back.
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl TracerRun {
    /// Undoes what dead runs left, then sets `global` (files relative to
    /// tracefs, written in this order) and starts the tracer.
    pub(crate) fn start(kind: Kind, global: &[(&str, String)]) -> anyhow::Result<TracerRun> {
        let (tracefs, _) = tracefs::find_or_mount().map_err(|e| anyhow::anyhow!("tracefs: {e}"))?;
        // Checked before the run ([`check`]); taken here, as another run may
        // have started since. Refused the same way: exit 2.
        let lock = take_lock().map_err(|Busy(who)| BadInput(in_use(kind, &who)))?;
        tracefs::remove_stale_instances(&tracefs);
        restore_stale(&tracefs);
        if let Some(who) = user_of(&tracefs, kind) {
            return Err(BadInput(in_use(kind, &who)).into());
        }
        let pid = std::process::id();
        let instance = if kind.in_instance() {
            let i = Instance::create(&tracefs, &format!("rtscope-{pid}-{}", kind.name()))?;
            i.write("tracing_on", "0")?;
            i.write("trace_clock", "mono")?;
            Some(i)
        } else {
            None
        };
        let _ = std::fs::create_dir_all(STATE_DIR);
        let mut run = TracerRun {
            kind,
            tracefs,
            instance,
            saved: Vec::new(),
            state: Path::new(STATE_DIR).join(format!("tracer-{pid}")),
            settings: BTreeMap::new(),
            _lock: lock,
        };
        if run.instance.is_none() {
            run.set("tracing_on", "0")?;
            run.set("current_tracer", "nop")?;
            run.set("trace_clock", "mono")?;
        }
        for (file, value) in global {
            run.set(file, value)?;
            run.settings.insert(file.to_string(), value.clone());
        }
        run.write_here("trace", "")?;
        run.write_here("current_tracer", kind.name())?;
        run.write_here("tracing_on", "1")?;
        Ok(run)
    }

    /// Where the tracer writes: the instance's directory or tracefs itself.
    pub(crate) fn dir(&self) -> &Path {
        self.instance.as_ref().map(|i| i.dir()).unwrap_or(&self.tracefs)
    }

    /// "rtscope-<pid>-timerlat" or "top level".
    pub(crate) fn where_name(&self) -> String {
        match &self.instance {
            Some(i) => i.dir().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            None => "top level".to_string(),
        }
    }

    /// Sets a global (or top-level) file, keeping its old value first.
    pub(crate) fn set(&mut self, file: &str, value: &str) -> anyhow::Result<()> {
        let path = self.tracefs.join(file);
        let old = tracefs::read_ctl(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        self.saved.push((file.to_string(), current_value(&old)));
        self.save_state();
        std::fs::write(&path, value).map_err(|e| anyhow::anyhow!("could not set {} to {value:?} for the {} tracer: {e}", path.display(), self.kind.name()))
    }

    /// Writes a file of the tracer's own directory (not kept: the instance
    /// goes, and the top level's files written here were saved by `start`).
    fn write_here(&self, file: &str, value: &str) -> anyhow::Result<()> {
        let path = self.dir().join(file);
        std::fs::write(&path, value).map_err(|e| anyhow::anyhow!("could not write {value:?} to {} for the {} tracer: {e}", path.display(), self.kind.name()))
    }

    /// Enables events (`group/name`) in the tracer's instance; the names of
    /// those this kernel lacks.
    pub(crate) fn enable_events(&self, events: &[&str]) -> Vec<String> {
        match &self.instance {
            Some(i) => events.iter().filter(|e| !i.enable_event(e)).map(|e| e.to_string()).collect(),
            None => events.iter().map(|e| e.to_string()).collect(),
        }
    }

    /// The tracer's output, to read samples from.
    pub(crate) fn pipe(&self) -> io::Result<Pipe> {
        Pipe::open(self.dir())
    }

    /// Stops recording (the samples in the buffer can still be read).
    pub(crate) fn stop(&self) {
        let _ = self.write_here("tracing_on", "0");
    }

    /// Events the ring buffer of `cpu` overwrote or dropped.
    pub(crate) fn overrun(&self, cpu: usize) -> u64 {
        tracefs::cpu_overrun(self.dir(), cpu)
    }

    /// Sets the tracer's per-CPU kernel threads (`<prefix>/<cpu>`, e.g.
    /// `timerlat/0`) to `policy`/`priority`, waiting up to a second for them
    /// to appear; one set-up step per CPU.
    pub(crate) fn set_kthreads(&self, prefix: &str, cpus: &[usize], policy: Policy, priority: u8) -> Vec<SetupStep> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let mut found = kthreads(prefix);
        while cpus.iter().any(|c| !found.contains_key(c)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            found = kthreads(prefix);
        }
        cpus.iter()
            .map(|cpu| {
                let step = format!("sched_{}[{prefix}/{cpu}]", policy.name());
                match found.get(cpu) {
                    None => SetupStep::failed(step, format!("the tracer's thread {prefix}/{cpu} did not appear; it runs at the kernel's default priority")),
                    Some(&pid) => match crate::sys::sched::set_policy_of(pid, policy, priority) {
                        Ok(()) => SetupStep::ok(step, format!("pid {pid}, priority {}", if policy == Policy::Other { 0 } else { priority })),
                        Err(e) => SetupStep::failed(step, format!("pid {pid}: {e}")),
                    },
                }
            })
            .collect()
    }

    fn save_state(&self) {
        let mut text = format!("{}\n", self.tracefs.display());
        for (f, v) in &self.saved {
            text.push_str(&format!("{f}\t{v}\n"));
        }
        let _ = std::fs::write(&self.state, text);
    }
}

impl Drop for TracerRun {
    fn drop(&mut self) {
        let _ = self.write_here("tracing_on", "0");
        let _ = self.write_here("current_tracer", "nop");
        if let Some(i) = &self.instance {
            let _ = i.remove();
        } else {
            let _ = self.write_here("trace", "");
        }
        restore(&self.tracefs, &self.saved);
        let _ = std::fs::remove_file(&self.state);
    }
}

/// Writes saved values back, last first (the kernel checks some pairs,
/// e.g. osnoise's runtime ≤ period, so the reverse order always passes).
fn restore(tracefs: &Path, saved: &[(String, String)]) {
    for (file, value) in saved.iter().rev() {
        let _ = std::fs::write(tracefs.join(file), value);
    }
}

/// The state files of dead rtscope runs: their settings written back, the
/// files removed.
fn restore_stale(tracefs: &Path) {
    let Ok(rd) = std::fs::read_dir(STATE_DIR) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("tracer-").and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || tracefs::owner_alive(pid, &e.path()) {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let mut lines = text.lines();
        let dir = lines.next().map(PathBuf::from).unwrap_or_else(|| tracefs.to_path_buf());
        let saved: Vec<(String, String)> = lines.filter_map(|l| l.split_once('\t')).map(|(f, v)| (f.to_string(), v.to_string())).collect();
        restore(&dir, &saved);
        let _ = std::fs::remove_file(e.path());
    }
}

/// A control file's value as it can be written back: the bracketed choice
/// of a list (`none [round-robin] per-cpu` → `round-robin`), else the text.
fn current_value(text: &str) -> String {
    let t = text.trim();
    match (t.find('['), t.find(']')) {
        (Some(a), Some(b)) if a < b => t[a + 1..b].to_string(),
        _ => t.to_string(),
    }
}

/// pid of each `<prefix>/<cpu>` kernel thread.
fn kthreads(prefix: &str) -> BTreeMap<usize, i32> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else { continue };
        if let Some(cpu) = comm.trim().strip_prefix(prefix).and_then(|r| r.strip_prefix('/')).and_then(|c| c.parse().ok()) {
            out.insert(cpu, pid);
        }
    }
    out
}

/// A tracer probe's CPUs (distinct, in order) and period in whole µs (the
/// tracers' unit) from `-a` and `-i`.
pub(crate) fn cpus_and_period(run: &super::ProbeRun) -> (Vec<usize>, u64) {
    (distinct_cpus(&run.cpus), (run.interval_ns / 1000).max(1))
}

/// The distinct CPUs of a run, in order.
pub(crate) fn distinct_cpus(cpus: &[usize]) -> Vec<usize> {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// `cpus` as the hex mask `tracing_cpumask` takes.
pub(crate) fn cpumask(cpus: &[usize]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; top / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// The tracer's summary for one CPU's entries.
pub(crate) fn stats(run: &TracerRun, lost: u64, overrun: u64, missing: u64) -> crate::model::TracerStats {
    crate::model::TracerStats {
        tracer: run.kind.name().to_string(),
        instance: run.where_name(),
        settings: run.settings.clone(),
        lost_events: lost,
        overrun,
        missing,
    }
}

/// How often a tracer's pipe is read when its events come every `period_ns`
/// per CPU: once a second, as rtla does, for periods of 1 ms and longer;
/// proportionally more often for shorter ones, so that one read never
/// holds more than about 1 000 periods of each CPU's events (at 100 µs:
/// every 100 ms). Each wake-up of the reader runs beside the measured
/// activations; in the -rt guest with one vCPU (bench/vs-rtla --icount 1,
/// 1 ms, two runs of 3 rounds each) reading every 100 ms gave thread maxima
/// above 11.1 µs in 5 of 6 rounds (up to 12.64), reading once a second in
/// 1 of 6 (12.97; the others 11.08–11.09), rtla's 11.06–12.00 then.
pub(crate) fn read_interval_ns(period_ns: u64) -> u64 {
    period_ns.saturating_mul(1000).clamp(100_000_000, 1_000_000_000)
}

/// Reads the tracer's lines every `every_ns` until `end_ns` (CLOCK_MONOTONIC)
/// passes or `stop` is raised, then stops the tracer and reads what is
/// left. `f` gets every line stamped within `[start_ns, end_ns]` on one of
/// `cpus`. The thread sleeps the whole interval: `stop` (Ctrl-C) is seen
/// at the next read, at most `every_ns` later, and every sample taken until
/// then is kept. Waking every 100 ms only to look at `stop` raised the
/// thread maxima again (bench/vs-rtla, 3 rounds: 12.06, 11.79, 12.23 µs).
pub(crate) fn read_until(
    run: &TracerRun,
    pipe: &mut Pipe,
    span: (u64, u64),
    every_ns: u64,
    stop: &std::sync::atomic::AtomicBool,
    f: &mut dyn FnMut(tracefs::Line<'_>),
) -> io::Result<()> {
    let (_, end_ns) = span;
    let mut lines = Lines { span, last: None };
    let mut keep = |line: &str| lines.feed(line, f);
    loop {
        let now = crate::sys::time::now_ns();
        if now >= end_ns || stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        // Sleep, then read what came (the ring buffer holds far more than
        // one interval of samples); see `Pipe::read_lines` for why not poll.
        std::thread::sleep(std::time::Duration::from_nanos((end_ns - now).clamp(1_000_000, every_ns)));
        pipe.read_lines(&mut keep)?;
    }
    run.stop();
    while pipe.read_lines(&mut keep)? > 0 {}
    Ok(())
}

/// The tracer's text lines, split, within a span of the trace clock. A stack
/// event's frames follow its header on lines of their own (` => func`): each
/// is handed on with the header's CPU and time, an empty task and the
/// function as its body.
struct Lines {
    span: (u64, u64),
    /// The last header line's CPU and time, when it was in the span.
    last: Option<(usize, u64)>,
}

impl Lines {
    fn feed(&mut self, line: &str, f: &mut dyn FnMut(tracefs::Line<'_>)) {
        if let Some(l) = tracefs::split_line(line) {
            self.last = (l.ts_ns >= self.span.0 && l.ts_ns <= self.span.1).then_some((l.cpu, l.ts_ns));
            if self.last.is_some() {
                f(l);
            }
        } else if let (Some((cpu, ts_ns)), Some(frame)) = (self.last, line.trim_start().strip_prefix("=> ")) {
            f(tracefs::Line { task: "", cpu, ts_ns, body: frame.trim_end() });
        }
    }
}

/// One recorder per (CPU, variant) of a tracer probe, and what the tracer
/// lost per CPU.
pub(crate) struct Series {
    pub(crate) cpus: Vec<usize>,
    pub(crate) variants: Vec<&'static str>,
    /// `recs[cpu index][variant index]`.
    pub(crate) recs: Vec<Vec<super::recorder::Recorder>>,
    pub(crate) missing: Vec<u64>,
}

impl Series {
    /// Recorders for every CPU × variant, registered with the live view.
    pub(crate) fn new(ctx: &super::ProbeCtx<'_>, cpus: &[usize], variants: &[&'static str], interval_ns: u64) -> Series {
        let tail_k = super::recorder::tail_capacity(ctx.run.duration_ns, interval_ns);
        let recs: Vec<Vec<_>> = (0..cpus.len())
            .map(|i| {
                variants
                    .iter()
                    .map(|_| {
                        let r = super::recorder::Recorder::with_tail(i, ctx.run.duration_ns, ctx.run.worst_k, tail_k).of_cpu(cpus[i]);
                        ctx.board.register(r.live());
                        r
                    })
                    .collect()
            })
            .collect();
        Series { cpus: cpus.to_vec(), variants: variants.to_vec(), recs, missing: vec![0; cpus.len()] }
    }

    /// An error when the tracer gave nothing in a whole run (not stopped
    /// early): a tracer that runs but is not read must not look like a
    /// quiet machine.
    pub(crate) fn check_any(&self, kind: Kind, ctx: &super::ProbeCtx<'_>) -> anyhow::Result<()> {
        let samples: u64 = self.recs.iter().flatten().map(|r| r.samples()).sum();
        if samples == 0 && !ctx.stop.load(std::sync::atomic::Ordering::Relaxed) && !self.variants.is_empty() {
            anyhow::bail!(
                "the kernel's {} tracer gave no sample on CPUs {} in {}; see its output with `cat /sys/kernel/tracing/trace` after `echo {} > /sys/kernel/tracing/current_tracer`",
                kind.name(),
                crate::units::cpu_list_str(&self.cpus),
                crate::units::fmt_ns(ctx.run.duration_ns),
                kind.name()
            );
        }
        Ok(())
    }

    /// The recorder of `cpu` (a CPU number) and `variant`, if measured.
    pub(crate) fn get(&mut self, cpu: usize, variant: usize) -> Option<&mut super::recorder::Recorder> {
        let i = self.cpus.iter().position(|&c| c == cpu)?;
        self.recs.get_mut(i)?.get_mut(variant)
    }

    /// One outcome per CPU and variant; the set-up steps ride on the first,
    /// `extra(cpu index, variant index)` fills the rest of each.
    pub(crate) fn into_outcomes(
        self,
        run: &TracerRun,
        pipe: &Pipe,
        interval_ns: u64,
        setup: Vec<SetupStep>,
        extra: &dyn Fn(usize, usize) -> crate::model::Extras,
    ) -> Vec<super::ThreadOutcome> {
        let mut setup = Some(setup);
        let mut out = Vec::new();
        for (i, recs) in self.recs.into_iter().enumerate() {
            let cpu = self.cpus[i];
            let lost = pipe.lost.get(&cpu).copied().unwrap_or(0);
            let tracer = stats(run, lost, run.overrun(cpu), self.missing[i]);
            for (v, recorder) in recs.into_iter().enumerate() {
                let mut e = extra(i, v);
                e.tracer = Some(tracer.clone());
                out.push(super::ThreadOutcome {
                    thread: i,
                    cpu: Some(cpu),
                    variant: Some(self.variants[v].to_string()),
                    interval_ns,
                    recorder,
                    setup: setup.take().unwrap_or_default(),
                    error: None,
                    extra: e,
                    windows: Vec::new(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice_and_cpu_masks() {
        assert_eq!(current_value("none [round-robin] per-cpu\n"), "round-robin");
        assert_eq!(current_value("[local] global counter mono\n"), "local");
        assert_eq!(current_value("1000\n"), "1000");
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[1, 33]), "00000002,00000002");
        assert_eq!(distinct_cpus(&[1, 0, 1]), vec![0, 1]);
    }

    #[test]
    fn a_stack_events_frames_come_with_its_cpu_and_time() {
        let text = "   timerlat/1-77  [001] ....  10.000100: #12 context thread timer_latency 30000 ns\n\
                    \x20  timerlat/1-77  [001] ....  10.000101: <stack trace>\n\
                    \x20=> timerlat_irq\n\
                    \x20=> __hrtimer_run_queues+0x1a/0x40\n\
                    \x20  timerlat/0-76  [000] ....  99.000000: <stack trace>\n\
                    \x20=> outside_the_span\n";
        let mut seen = Vec::new();
        let mut lines = Lines { span: (10_000_000_000, 11_000_000_000), last: None };
        for l in text.lines() {
            lines.feed(l, &mut |l| seen.push((l.task.to_string(), l.cpu, l.ts_ns, l.body.to_string())));
        }
        let frames: Vec<&(String, usize, u64, String)> = seen.iter().filter(|(t, ..)| t.is_empty()).collect();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[0].1, frames[0].2, frames[0].3.as_str()), (1, 10_000_101_000, "timerlat_irq"));
        assert_eq!(frames[1].3, "__hrtimer_run_queues+0x1a/0x40");
    }

    #[test]
    fn probes_name_their_tracer() {
        assert_eq!(Kind::Hwlat.config(), "CONFIG_HWLAT_TRACER");
        assert!(!Kind::Hwlat.in_instance());
    }
}
