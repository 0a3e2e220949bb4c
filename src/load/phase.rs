//! Starting, watching and stopping the load processes of one phase, and the
//! evidence that they ran.
//!
//! [`LoadSession`] owns the run's temp dir (`<load dir>/.rtscope-load-<pid>`)
//! and removes stale ones left by a killed rtscope. [`PhaseLoads`] holds the
//! phase's load processes; [`PhaseLoads::stop`] stops them (SIGTERM to each
//! load process, SIGKILL to its process group after a grace period), reaps
//! each with wait4 (the kernel's account of its CPU time, context switches,
//! faults and writes) and reads the counters it printed. Its `Drop` does the
//! same without waiting politely, so an error or a panic anywhere in the run
//! still leaves no process and no temp file behind.
//!
//! Load processes are started from the calling thread; the parent-death
//! signal fires when *that thread* exits, so call this from the runner's main
//! thread (which lives for the whole run).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::worker::LoadWorkerArgs;
use super::{cmd, shell_join, stress_ng, Engine, LoadKind, LoadOptions, PhaseSpec};
use crate::model::{CpuBusy, LoadEvidence, LoadRecord, Nanos, PhaseRecord, SystemEvidence};
use crate::sys::{prctl, wait};

/// Prefix of the per-run temp dirs under the load dir.
pub(crate) const TEMP_PREFIX: &str = ".rtscope-load-";

/// How long load processes get to stop after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// The run's temp dir for loads; removed on drop.
pub(crate) struct LoadSession {
    pub(crate) opts: LoadOptions,
    pub(crate) dir: PathBuf,
}

impl LoadSession {
    /// Remove stale temp dirs (whose rtscope is gone) and create this run's.
    pub(crate) fn new(opts: &LoadOptions) -> anyhow::Result<LoadSession> {
        // (Every run also removes them at its start: runner::remove_leftovers.)
        clean_stale(&opts.dir);
        // Absolute: load processes and their commands run in other directories.
        let base = std::fs::canonicalize(&opts.dir).with_context(|| format!("--load-dir {}", opts.dir.display()))?;
        let dir = base.join(format!("{TEMP_PREFIX}{}", std::process::id()));
        crate::sys::stat::create_dirs(&dir).with_context(|| format!("creating the load temp dir {}", dir.display()))?;
        Ok(LoadSession { opts: opts.clone(), dir })
    }

    /// Start every load of `phase`. `planned_s` is how long the phase should
    /// take (stress-ng gets it plus a minute as its own timeout).
    pub(crate) fn start(&self, phase: &PhaseSpec, settle_ns: u64, planned_s: u64) -> anyhow::Result<PhaseLoads> {
        let pdir = self.dir.join(sanitize(&phase.name));
        crate::sys::stat::create_dirs(&pdir).with_context(|| format!("creating {}", pdir.display()))?;
        let mut loads = PhaseLoads::begin(phase, settle_ns, Some(pdir.clone()));
        for (i, kind) in phase.loads.iter().enumerate() {
            let ldir = pdir.join(format!("{}-{i}", kind.name()));
            crate::sys::stat::create_dirs(&ldir).with_context(|| format!("creating {}", ldir.display()))?;
            let p = spawn(&self.opts, kind, &ldir, planned_s + 60)?;
            loads.procs.push(p);
        }
        Ok(loads)
    }
}

impl Drop for LoadSession {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove `<dir>/.rtscope-load-<pid>` dirs whose process is gone or is no
/// longer an rtscope (left behind by a SIGKILL) — only this user's own: in
/// a shared directory another user's run (or its leftovers) is not ours to
/// delete, even for root. Every run calls it (`runner::remove_leftovers`),
/// with a load or not. Returns the dirs removed.
pub(crate) fn clean_stale(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return removed };
    let me = nix::unistd::geteuid().as_raw();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name.strip_prefix(TEMP_PREFIX).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() {
            continue;
        }
        // symlink_metadata: a link planted under the name is not followed.
        match std::fs::symlink_metadata(e.path()) {
            Ok(m) if m.is_dir() && m.uid() == me => {}
            _ => continue,
        }
        // Its maker runs: the pid's process started before the directory was last changed.
        if !crate::sys::tracefs::owner_alive(pid, &e.path()) && std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    out.truncate(40);
    out
}

/// One running load process.
struct LoadProc {
    record: LoadRecord,
    pid: i32,
    stdout: Option<ChildStdout>,
    log: PathBuf,
    /// stress-ng's metrics file, read when the load is reaped.
    metrics: Option<PathBuf>,
    reaped: bool,
}

fn spawn(opts: &LoadOptions, kind: &LoadKind, dir: &Path, timeout_s: u64) -> anyhow::Result<LoadProc> {
    let workers = opts.workers();
    let exe = std::env::current_exe().context("finding the rtscope executable to start a load process")?;
    let (engine, payload): (&str, Option<Vec<String>>) = match kind {
        LoadKind::Cmd(line) => ("cmd", Some(cmd::argv(line))),
        _ if opts.engine == Engine::StressNg => {
            let sng = opts.stress_ng.as_deref().context("stress-ng engine without a stress-ng path")?;
            ("stress-ng", Some(stress_ng::argv(sng, kind, workers, dir, timeout_s)))
        }
        _ => ("builtin", None),
    };
    let worker = LoadWorkerArgs {
        parent: std::process::id() as i32,
        kind: if payload.is_some() { "exec".into() } else { kind.name().into() },
        workers,
        cpus: Some(crate::units::CpuSet(opts.cpus.clone())),
        dir: dir.to_path_buf(),
        argv: payload.clone().unwrap_or_default(),
    };
    let argv: Vec<String> = [exe.display().to_string(), "__load".into()].into_iter().chain(worker.to_args()).collect();
    let log = dir.with_extension("log");
    let logf = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(logf).process_group(0);
    // SAFETY: the closure runs between fork and exec and only makes the
    // async-signal-safe prctl system call. SIGTERM, not SIGKILL: the load
    // process catches it and kills its whole group (see worker.rs).
    unsafe {
        c.pre_exec(|| prctl::set_parent_death_signal(libc::SIGTERM).map_err(std::io::Error::from));
    }
    let mut child = c.spawn().with_context(|| format!("starting the {} load process", kind.name()))?;
    let mut commands = vec![shell_join(&argv)];
    if let Some(p) = &payload {
        commands.push(shell_join(p));
    }
    Ok(LoadProc {
        record: LoadRecord {
            name: kind.name().to_string(),
            engine: engine.to_string(),
            commands,
            cpus: opts.cpus.clone(),
            workers: if matches!(kind, LoadKind::Cmd(_)) { 1 } else { workers },
            pid: child.id(),
            evidence: LoadEvidence::default(),
        },
        pid: child.id() as i32,
        stdout: child.stdout.take(),
        log,
        metrics: (engine == "stress-ng").then(|| dir.join(stress_ng::METRICS_FILE)),
        reaped: false,
    })
}

/// The load processes of one running phase.
pub(crate) struct PhaseLoads {
    record: PhaseRecord,
    procs: Vec<LoadProc>,
    dir: Option<PathBuf>,
    sys0: SysCounters,
    t0: Instant,
}

impl PhaseLoads {
    /// A phase with no load (idle): only the system-wide counters are kept,
    /// as the baseline the loaded phases compare with.
    pub(crate) fn idle(phase: &PhaseSpec) -> PhaseLoads {
        PhaseLoads::begin(phase, 0, None)
    }

    fn begin(phase: &PhaseSpec, settle_ns: u64, dir: Option<PathBuf>) -> PhaseLoads {
        PhaseLoads {
            record: PhaseRecord {
                name: phase.name.clone(),
                started_at: crate::units::rfc3339(time::OffsetDateTime::now_utc()),
                settle_ns: Nanos(settle_ns),
                outside_load: phase.outside,
                ..PhaseRecord::default()
            },
            procs: Vec::new(),
            dir,
            sys0: SysCounters::read(),
            t0: Instant::now(),
        }
    }

    /// The phase as started (commands known, no evidence yet).
    pub(crate) fn record(&self) -> PhaseRecord {
        let mut r = self.record.clone();
        r.loads = self.procs.iter().map(|p| p.record.clone()).collect();
        r
    }

    /// Err when a load process has already ended on its own: a built-in
    /// generator never does, so it failed (the message holds its log); an
    /// external command that ended is an error only with a non-zero status.
    pub(crate) fn check(&mut self) -> anyhow::Result<()> {
        for p in &mut self.procs {
            if p.reaped || !wait::has_exited(p.pid).unwrap_or(false) {
                continue;
            }
            let (exit, _) = reap(p)?;
            let ok_end = p.record.engine == "cmd" && exit == wait::Exit::Code(0);
            if !ok_end {
                anyhow::bail!("load '{}' ({}) ended early ({exit}) in phase {}:\n{}", p.record.name, p.record.engine, self.record.name, log_tail(&p.log));
            }
        }
        Ok(())
    }

    /// Stop every load, reap it, and return the phase with its evidence.
    pub(crate) fn stop(mut self) -> anyhow::Result<PhaseRecord> {
        let sys1 = SysCounters::read();
        let dt = self.t0.elapsed();
        for p in self.procs.iter().filter(|p| !p.reaped) {
            let _ = wait::kill(p.pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + GRACE;
        loop {
            let pending: Vec<i32> = self.procs.iter().filter(|p| !p.reaped && !wait::has_exited(p.pid).unwrap_or(true)).map(|p| p.pid).collect();
            if pending.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                for pid in pending {
                    let _ = wait::kill_group(pid, libc::SIGKILL);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut errors = Vec::new();
        for p in &mut self.procs {
            if p.reaped {
                continue;
            }
            match reap(p) {
                // A load process stopped by us exits 0; any other status means
                // it failed while the probes ran, so the phase was not loaded
                // as planned: say so, with its log.
                Ok((wait::Exit::Code(c), _)) if c != 0 => errors.push(anyhow::anyhow!(
                    "load '{}' ({}) failed during phase {} (exit {c}):\n{}",
                    p.record.name,
                    p.record.engine,
                    self.record.name,
                    log_tail(&p.log)
                )),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        self.record.loads = self.procs.iter().map(|p| p.record.clone()).collect();
        self.record.system = sys1.since(&self.sys0, dt);
        self.record.finished_at = crate::units::rfc3339(time::OffsetDateTime::now_utc());
        self.record.complete = true;
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        Ok(self.record.clone())
    }
}

/// Sweep the process group (the leader is a zombie or alive, so the group
/// id is still ours), reap the leader with its rusage, read its counters.
fn reap(p: &mut LoadProc) -> anyhow::Result<(wait::Exit, wait::Usage)> {
    let _ = wait::kill_group(p.pid, libc::SIGKILL);
    let (exit, usage) = wait::wait4(p.pid).with_context(|| format!("reaping load process {}", p.pid))?;
    p.reaped = true;
    let ev = &mut p.record.evidence;
    ev.cpu_s = usage.user_s + usage.system_s;
    ev.voluntary_ctxt_switches = usage.voluntary_ctxt_switches;
    ev.involuntary_ctxt_switches = usage.involuntary_ctxt_switches;
    ev.minor_faults = usage.minor_faults;
    ev.major_faults = usage.major_faults;
    ev.storage_bytes_written = usage.blocks_out * 512;
    ev.exit = exit.to_string();
    let mut text = String::new();
    if let Some(mut out) = p.stdout.take() {
        let _ = out.read_to_string(&mut text);
    }
    if let Some(v) = text.lines().last().and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
        if let Some(m) = v.get("counters").and_then(|c| c.as_object()) {
            ev.counters = m.iter().filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n))).collect();
        }
        // An external command's own exit status, as the load process saw it.
        if let Some(x) = v.get("exit").and_then(|x| x.as_str()).filter(|x| !x.is_empty()) {
            ev.exit = format!("{x} (load process: {exit})");
        }
    }
    if let Some(m) = p.metrics.as_ref().and_then(|m| std::fs::read_to_string(m).ok()) {
        for (stressor, n) in stress_ng::bogo_ops(&m) {
            ev.counters.insert(format!("bogo_ops.{stressor}"), n);
        }
    }
    Ok((exit, usage))
}

impl Drop for PhaseLoads {
    fn drop(&mut self) {
        for p in self.procs.iter_mut().filter(|p| !p.reaped) {
            let _ = wait::kill_group(p.pid, libc::SIGKILL);
            let _ = wait::wait4(p.pid);
            p.reaped = true;
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(15)..].join("\n");
    if tail.trim().is_empty() {
        "(the load wrote nothing to its log)".into()
    } else {
        tail
    }
}

/// System-wide counters read at phase start and stop.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SysCounters {
    pub(crate) interrupts: u64,
    pub(crate) context_switches: u64,
    pub(crate) page_faults: u64,
    pub(crate) lo_tx_packets: u64,
    pub(crate) lo_tx_bytes: u64,
    /// (CPU, busy ns) per online CPU.
    pub(crate) cpu_busy: Vec<(usize, u64)>,
    /// CPU time of this process's threads (ns).
    pub(crate) own_cpu_ns: u64,
}

impl SysCounters {
    pub(crate) fn read() -> SysCounters {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let vmstat = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
        let num = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        SysCounters {
            interrupts: field(&stat, "intr"),
            context_switches: field(&stat, "ctxt"),
            page_faults: field(&vmstat, "pgfault"),
            lo_tx_packets: num("/sys/class/net/lo/statistics/tx_packets"),
            lo_tx_bytes: num("/sys/class/net/lo/statistics/tx_bytes"),
            cpu_busy: cpu_busy(&stat, crate::sys::resource::clock_ticks_per_s()),
            own_cpu_ns: crate::sys::resource::own_cpu_ns(),
        }
    }

    pub(crate) fn since(&self, start: &SysCounters, dt: Duration) -> SystemEvidence {
        let cpu_busy = self
            .cpu_busy
            .iter()
            .filter_map(|&(cpu, busy)| {
                let before = start.cpu_busy.iter().find(|(c, _)| *c == cpu)?.1;
                Some(CpuBusy { cpu, busy_ns: Nanos(busy.saturating_sub(before)) })
            })
            .collect();
        SystemEvidence {
            duration_ns: Nanos(dt.as_nanos() as u64),
            interrupts: self.interrupts.saturating_sub(start.interrupts),
            context_switches: self.context_switches.saturating_sub(start.context_switches),
            page_faults: self.page_faults.saturating_sub(start.page_faults),
            loopback_tx_packets: self.lo_tx_packets.saturating_sub(start.lo_tx_packets),
            loopback_tx_bytes: self.lo_tx_bytes.saturating_sub(start.lo_tx_bytes),
            cpu_busy,
            rtscope_cpu_ns: Some(Nanos(self.own_cpu_ns.saturating_sub(start.own_cpu_ns))),
        }
    }
}

/// Busy ns per CPU from /proc/stat's `cpuN user nice system idle iowait irq
/// softirq steal ...` lines (ticks of `hz`): all but idle and iowait (guest
/// time is inside user already).
pub(crate) fn cpu_busy(stat: &str, hz: u64) -> Vec<(usize, u64)> {
    let hz = hz.max(1);
    stat.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu: usize = it.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = it.map(|x| x.parse().unwrap_or(0)).collect();
            let at = |k: usize| v.get(k).copied().unwrap_or(0);
            let ticks = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
            Some((cpu, ticks.saturating_mul(1_000_000_000) / hz))
        })
        .collect()
}

/// The first number after `key` on the line that starts with it
/// (`intr 12345 0 1 ...`, `ctxt 678`, `pgfault 90`).
pub(crate) fn field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(key)).then(|| it.next().and_then(|n| n.parse().ok())).flatten()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields() {
        let stat = "cpu  1 2 3\nintr 12345 0 7\nctxt 678\nbtime 1\n";
        assert_eq!(field(stat, "intr"), 12345);
        assert_eq!(field(stat, "ctxt"), 678);
        assert_eq!(field(stat, "softirq"), 0);
    }

    #[test]
    fn deltas() {
        let a = SysCounters {
            interrupts: 10,
            context_switches: 5,
            page_faults: 1,
            lo_tx_packets: 3,
            lo_tx_bytes: 100,
            cpu_busy: vec![(0, 1_000), (1, 5_000)],
            own_cpu_ns: 700,
        };
        let b = SysCounters {
            interrupts: 25,
            context_switches: 9,
            page_faults: 4,
            lo_tx_packets: 13,
            lo_tx_bytes: 1100,
            // CPU 2 came online during the phase: no start, no delta.
            cpu_busy: vec![(0, 1_500_000_000), (1, 5_000), (2, 9)],
            own_cpu_ns: 100_000_700,
        };
        let d = b.since(&a, Duration::from_secs(2));
        assert_eq!((d.interrupts, d.context_switches, d.page_faults, d.loopback_tx_packets, d.loopback_tx_bytes), (15, 4, 3, 10, 1000));
        assert_eq!(d.duration_ns, Nanos(2_000_000_000));
        assert_eq!(d.cpu_busy, vec![CpuBusy { cpu: 0, busy_ns: Nanos(1_499_999_000) }, CpuBusy { cpu: 1, busy_ns: Nanos(0) }]);
        assert_eq!(d.rtscope_cpu_ns, Some(Nanos(100_000_000)));
        // CPU 0: 1.5 s busy of 2 s, 0.1 s of it rtscope's: (1.499999 - 0.1) / 2.
        let share = d.others_busy_share(&[0]).unwrap();
        assert!((share - 0.6999995).abs() < 1e-9, "{share}");
        // Both CPUs: the same busy time over twice the capacity.
        assert!((d.others_busy_share(&[0, 1]).unwrap() - 0.34999975).abs() < 1e-9);
        assert_eq!(d.others_busy_share(&[7]), None, "a CPU the phase has no busy time of");
        // A phase under a second (a stop at its start): one 10 ms tick
        // would read as a large share; not computed.
        let short = b.since(&a, Duration::from_millis(20));
        assert_eq!(short.others_busy_share(&[0]), None);
        let beside = |ms: u64| crate::model::HostBeside {
            phase: "idle".into(),
            duration_ns: Nanos(ms * 1_000_000),
            cpus: 2,
            busy_ns: Nanos(10_000_000),
            ..Default::default()
        };
        assert_eq!(beside(5).others_share(), None, "5 ms of a host whose one tick was busy is not 100 % busy");
        assert_eq!(beside(1000).others_share(), Some(0.005));
    }

    #[test]
    fn busy_ticks_per_cpu() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 100 1 20 5000 70 3 4 2 50 0\ncpu1 0 0 0 100 0 0 0 0 0 0\nintr 1\n";
        // cpu0: 100 + 1 + 20 + 3 + 4 + 2 = 130 ticks at 100 Hz = 1.3 s (idle, iowait and guest left out).
        assert_eq!(cpu_busy(stat, 100), vec![(0, 1_300_000_000), (1, 0)]);
    }

    #[test]
    fn stale_dirs_of_dead_processes_are_removed() {
        let d = tempfile::tempdir().unwrap();
        // pid 0 is never a process; our own pid is alive and kept.
        let dead = d.path().join(format!("{TEMP_PREFIX}0"));
        let ours = d.path().join(format!("{TEMP_PREFIX}{}", std::process::id()));
        let other = d.path().join("keep-me");
        for p in [&dead, &ours, &other] {
            std::fs::create_dir(p).unwrap();
        }
        assert_eq!(clean_stale(d.path()), vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(ours.exists() && other.exists());
    }

    /// The maker is told by its start time, not its name: a live process of
    /// any name that started before the directory was made keeps it (an
    /// rtscope installed as `rtscope-dev` is still running); a process that
    /// took the pid over after the directory's last change does not.
    #[test]
    fn a_stale_dir_is_told_by_its_makers_start_not_its_name() {
        let d = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        // Made now, by a process that started before: kept (its name is "sleep").
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let live = d.path().join(format!("{TEMP_PREFIX}{pid}"));
        std::fs::create_dir(&live).unwrap();
        assert!(clean_stale(d.path()).is_empty(), "a live maker's directory was removed");
        assert!(live.exists());
        // Last changed an hour before the process started: the pid was taken over.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(&live).unwrap().set_modified(past).unwrap();
        assert_eq!(clean_stale(d.path()), vec![live.clone()]);
        assert!(!live.exists());
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn another_users_stale_dir_is_left_alone() {
        if !nix::unistd::geteuid().is_root() {
            return; // chown to another user needs root
        }
        let d = tempfile::tempdir().unwrap();
        let theirs = d.path().join(format!("{TEMP_PREFIX}0"));
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        assert!(clean_stale(d.path()).is_empty());
        assert!(theirs.exists(), "nobody's directory was deleted by root's run");
    }
}
