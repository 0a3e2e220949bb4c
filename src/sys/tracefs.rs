//! tracefs (`/sys/kernel/tracing`): finding or mounting it, and private trace instances.
//!
//! An [`Instance`] is a directory under `instances/` with its own ring buffers, events,
//! clock and on/off switch, so rtscope never touches the top-level buffer other tools
//! (trace-cmd, perf, rteval) use. See Documentation/trace/ftrace.rst ("Instances") and
//! mount(2) for the one system call here.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

/// The usual mount point, and the old one under debugfs.
const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Finds a mounted tracefs (a directory with `instances/`), mounting it on
/// `/sys/kernel/tracing` when it is not. Returns the path and whether rtscope mounted it.
pub(crate) fn find_or_mount() -> io::Result<(PathBuf, bool)> {
    for p in MOUNT_POINTS {
        if Path::new(p).join("instances").is_dir() {
            return Ok((PathBuf::from(p), false));
        }
    }
    let target = MOUNT_POINTS[0];
    mount_tracefs(target)?;
    if Path::new(target).join("instances").is_dir() {
        Ok((PathBuf::from(target), true))
    } else {
        Err(io::Error::new(io::ErrorKind::NotFound, format!("mounted tracefs on {target} but it has no instances/")))
    }
}

/// The mounted tracefs, if any (never mounts).
pub(crate) fn find_mounted() -> Option<PathBuf> {
    MOUNT_POINTS.iter().map(PathBuf::from).find(|p| p.join("instances").is_dir())
}

/// Removes `instances/rtscope-<pid>` left by rtscope processes that are gone
/// (SIGKILL, a second Ctrl-C, a crash): tracing stopped, events off, the
/// directory removed. Instances of live processes and of other tools are
/// left alone. Returns the names removed.
pub(crate) fn remove_stale_instances(tracefs: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(tracefs.join("instances")) else { return removed };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = instance_pid(&name) else { continue };
        if !owner_alive(pid, &e.path()) && (Instance { dir: e.path() }).remove().is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The pid in an rtscope instance's name: `rtscope-<pid>` (threshold
/// tracing) or `rtscope-<pid>-<tracer>` (a tracer probe); None for others'.
pub(crate) fn instance_pid(name: &str) -> Option<u32> {
    name.strip_prefix("rtscope-")?.split('-').next()?.parse().ok()
}

/// True while the process that created the instance at `dir` (named after its pid)
/// runs: process `pid` exists and started no later than the instance was made (its
/// directory's time). A process that took the pid over since started later; the
/// process's name is no evidence (a copy of rtscope under another name is one).
pub(crate) fn owner_alive(pid: u32, dir: &Path) -> bool {
    maker_alive(pid, made_at(dir))
}

/// True while the process that made something at `made` (a load's temp
/// directory, a message queue, a SysV set, a tracing instance — each
/// named after its maker's pid) runs: process `pid` exists and started no
/// later than `made` ([`started_by`]). A process that took the pid over
/// since started later, whatever its name; an rtscope installed under
/// another name is still the maker.
pub(crate) fn maker_alive(pid: u32, made: Option<std::time::Duration>) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let proc_stat = std::fs::read_to_string("/proc/stat").ok();
    started_by(stat.as_deref(), proc_stat.as_deref(), made)
}

/// When `path` was made (its modification time, since the epoch).
pub(crate) fn made_at(path: &Path) -> Option<std::time::Duration> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
}

/// [`owner_alive`]'s rule on what it read: `stat` is the process's
/// `/proc/PID/stat` (None: no such process), `proc_stat` the system's
/// `/proc/stat` (its `btime`), `made` when the instance was made. The process
/// is the maker when it started no later than that (whole seconds on both
/// sides: a second's slack); when a time is not knowable, an existing process
/// keeps its instance.
pub(crate) fn started_by(stat: Option<&str>, proc_stat: Option<&str>, made: Option<std::time::Duration>) -> bool {
    let Some(stat) = stat else { return false };
    let btime = proc_stat.and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<u64>().ok())));
    // starttime: the 22nd field, the 20th after the parenthesised name (which may hold spaces).
    let ticks = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split_whitespace().nth(19)?.parse::<u64>().ok());
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    match (made, btime, ticks) {
        (Some(made), Some(btime), Some(ticks)) => btime + ticks / hz <= made.as_secs() + 1,
        _ => true,
    }
}

/// `mount -t tracefs nodev TARGET`.
fn mount_tracefs(target: &str) -> io::Result<()> {
    let src = CString::new("nodev").expect("no NUL");
    let fstype = CString::new("tracefs").expect("no NUL");
    let tgt = CString::new(target).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: the three pointers are valid NUL-terminated strings that outlive the call;
    // flags 0 and a null data pointer are valid for tracefs, which takes no options.
    let r = unsafe { libc::mount(src.as_ptr(), tgt.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A tracing instance directory (`<tracefs>/instances/<name>`).
#[derive(Debug)]
pub(crate) struct Instance {
    dir: PathBuf,
}

impl Instance {
    /// Creates `instances/<name>`; an existing one of that name (left by a crashed run with
    /// the same pid) is removed first.
    pub(crate) fn create(tracefs: &Path, name: &str) -> io::Result<Instance> {
        let dir = tracefs.join("instances").join(name);
        if dir.exists() {
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir)?;
        Ok(Instance { dir })
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to a control file of the instance (`tracing_on`, `trace_clock`, ...).
    pub(crate) fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.dir.join(file).display())))
    }

    /// Reads a file of the instance as text (invalid UTF-8 replaced).
    pub(crate) fn read(&self, file: &str) -> io::Result<String> {
        let bytes = std::fs::read(self.dir.join(file))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Enables event `group/name` if this kernel has it; returns whether it is on.
    pub(crate) fn enable_event(&self, event: &str) -> bool {
        let f = format!("events/{event}/enable");
        self.dir.join(&f).exists() && self.write(&f, "1").is_ok()
    }

    /// Event names (`name`, not `group/name`) of a group, for groups like `irq_vectors`.
    pub(crate) fn group_events(&self, group: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.join("events").join(group))
            .map(|rd| rd.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Stops tracing, disables every event and removes the directory. Retries briefly while
    /// the kernel reports it busy (a reader still has a file open).
    pub(crate) fn remove(&self) -> io::Result<()> {
        let _ = self.write("tracing_on", "0");
        // An instance with a tracer (timerlat, osnoise) set cannot be removed.
        let _ = self.write("current_tracer", "nop");
        let _ = self.write("events/enable", "0");
        let mut last = Ok(());
        for _ in 0..20 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Err(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        last
    }
}

/// Reads a control file with one large buffer per read: some (osnoise's
/// `cpus`) refuse a read smaller than their whole text with EINVAL, which
/// `std::fs::read_to_string`'s first small read is.
pub(crate) fn read_ctl(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A non-blocking reader of a `trace_pipe` (consuming: each event is read
/// once). The kernel's `CPU:N [LOST M EVENTS]` notes are counted per CPU,
/// not handed on.
pub(crate) struct Pipe {
    file: std::fs::File,
    buf: Vec<u8>,
    carry: Vec<u8>,
    /// Events the ring buffer dropped before they were read, by CPU.
    pub(crate) lost: std::collections::BTreeMap<usize, u64>,
}

impl Pipe {
    /// Opens `<dir>/trace_pipe` (an instance's or the top level's).
    pub(crate) fn open(dir: &Path) -> io::Result<Pipe> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("trace_pipe");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(Pipe { file, buf: vec![0; 64 * 1024], carry: Vec::new(), lost: Default::default() })
    }

    /// Hands every whole line that can be read now to `f` (never waits:
    /// a reader waiting in poll(2) makes the kernel wake it, by an irq_work
    /// on the CPU that wrote, after every event — work done on the measured
    /// CPU right when the tracer's thread should run). Returns the number
    /// of lines; 0 when none came.
    pub(crate) fn read_lines(&mut self, f: &mut dyn FnMut(&str)) -> io::Result<usize> {
        use std::io::Read;
        let mut lines = 0;
        loop {
            let n = match self.file.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            };
            self.carry.extend_from_slice(&self.buf[..n]);
            let Some(end) = self.carry.iter().rposition(|&b| b == b'\n') else { continue };
            let whole: Vec<u8> = self.carry.drain(..=end).collect();
            for line in String::from_utf8_lossy(&whole).lines() {
                if let Some((cpu, n)) = lost_note(line) {
                    *self.lost.entry(cpu).or_default() += n;
                } else {
                    f(line);
                }
                lines += 1;
            }
        }
        Ok(lines)
    }
}

/// `CPU:3 [LOST 120 EVENTS]` → (3, 120).
fn lost_note(line: &str) -> Option<(usize, u64)> {
    let rest = line.trim().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let n = rest.trim().strip_prefix("[LOST ")?.strip_suffix(" EVENTS]")?;
    Some((cpu.parse().ok()?, n.parse().ok()?))
}

/// One text line of a tracer's output, split into what every line has:
/// `TASK-PID [CPU] FLAGS TIMESTAMP: BODY`.
#[derive(Debug, PartialEq)]
pub(crate) struct Line<'a> {
    /// `comm-pid` of the task the event interrupted or ran in (`<idle>-0`).
    pub(crate) task: &'a str,
    pub(crate) cpu: usize,
    /// The timestamp in ns of the instance's trace clock (`mono`: CLOCK_MONOTONIC).
    pub(crate) ts_ns: u64,
    pub(crate) body: &'a str,
}

/// Splits a trace line; None for comments, notes and anything else.
pub(crate) fn split_line(line: &str) -> Option<Line<'_>> {
    // The CPU is the first `[digits]` (a task name may hold spaces, not this).
    let mut from = 0;
    let (task, cpu, after) = loop {
        let open = from + line[from..].find('[')?;
        let close = open + line[open..].find(']')?;
        let inner = &line[open + 1..close];
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
            break (line[..open].trim(), inner.parse().ok()?, &line[close + 1..]);
        }
        from = open + 1;
    };
    // FLAGS, then the timestamp ending in ':'.
    let (_flags, rest) = after.trim_start().split_once(char::is_whitespace)?;
    let (ts, body) = rest.trim_start().split_once(':')?;
    Some(Line { task, cpu, ts_ns: parse_ts(ts)?, body: body.trim() })
}

/// `12.345678` (seconds, up to 9 decimals) → ns.
pub(crate) fn parse_ts(ts: &str) -> Option<u64> {
    let (s, frac) = ts.split_once('.').unwrap_or((ts, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = 10u64.pow(9 - frac.len() as u32);
    let f = if frac.is_empty() { 0 } else { frac.parse::<u64>().ok()? };
    s.trim().parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(f * scale)
}

/// The ring buffer's own counters of one CPU (`per_cpu/cpuN/stats`):
/// events overwritten before they were read plus events dropped.
pub(crate) fn cpu_overrun(dir: &Path, cpu: usize) -> u64 {
    let text = std::fs::read_to_string(dir.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instances_owner_is_told_by_pid_and_start_time_not_by_name() {
        let dir = tempfile::tempdir().unwrap();
        // This test process (named after the test binary, not "rtscope") made it: alive.
        assert!(owner_alive(std::process::id(), dir.path()));
        // An instance made before this process started is not this process's: the pid
        // was taken over.
        let f = std::fs::File::open(dir.path()).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000)).unwrap();
        assert!(!owner_alive(std::process::id(), dir.path()));
        // No such process: gone.
        assert!(!owner_alive(u32::MAX - 1, dir.path()));
    }

    #[test]
    fn trace_lines_split_into_cpu_time_and_body() {
        let l = split_line("           <...>-173     [000] .......     4.538311: #1     context thread timer_latency   1397098 ns").unwrap();
        assert_eq!(l, Line { task: "<...>-173", cpu: 0, ts_ns: 4_538_311_000, body: "#1     context thread timer_latency   1397098 ns" });
        let l = split_line("  kworker/u4:1 [x]-55 [001] d..h1..  10.145566123: irq_noise: local_timer:236 start 1.2 duration 5 ns").unwrap();
        assert_eq!((l.cpu, l.ts_ns), (1, 10_145_566_123));
        assert!(l.body.starts_with("irq_noise:"));
        assert_eq!(split_line("# tracer: timerlat"), None);
        assert_eq!(split_line("#              | |         |   |||||||      |         |"), None);
        assert_eq!(lost_note("CPU:1 [LOST 42 EVENTS]"), Some((1, 42)));
        assert_eq!(lost_note("CPU:1 [LOST x EVENTS]"), None);
    }
}
