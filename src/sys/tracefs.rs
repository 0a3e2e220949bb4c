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
pub fn find_or_mount() -> io::Result<(PathBuf, bool)> {
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
pub fn find_mounted() -> Option<PathBuf> {
    MOUNT_POINTS.iter().map(PathBuf::from).find(|p| p.join("instances").is_dir())
}

/// Removes `instances/rtscope-<pid>` left by rtscope processes that are gone
/// (SIGKILL, a second Ctrl-C, a crash): tracing stopped, events off, the
/// directory removed. Instances of live processes and of other tools are
/// left alone. Returns the names removed.
pub fn remove_stale_instances(tracefs: &Path) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(tracefs.join("instances")) else { return removed };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("rtscope-").and_then(|p| p.parse::<u32>().ok()) else { continue };
        let alive = std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "rtscope");
        if !alive && (Instance { dir: e.path() }).remove().is_ok() {
            removed.push(name);
        }
    }
    removed
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
pub struct Instance {
    dir: PathBuf,
}

impl Instance {
    /// Creates `instances/<name>`; an existing one of that name (left by a crashed run with
    /// the same pid) is removed first.
    pub fn create(tracefs: &Path, name: &str) -> io::Result<Instance> {
        let dir = tracefs.join("instances").join(name);
        if dir.exists() {
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir)?;
        Ok(Instance { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to a control file of the instance (`tracing_on`, `trace_clock`, ...).
    pub fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.dir.join(file).display())))
    }

    /// Reads a file of the instance as text (invalid UTF-8 replaced).
    pub fn read(&self, file: &str) -> io::Result<String> {
        let bytes = std::fs::read(self.dir.join(file))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Enables event `group/name` if this kernel has it; returns whether it is on.
    pub fn enable_event(&self, event: &str) -> bool {
        let f = format!("events/{event}/enable");
        self.dir.join(&f).exists() && self.write(&f, "1").is_ok()
    }

    /// Event names (`name`, not `group/name`) of a group, for groups like `irq_vectors`.
    pub fn group_events(&self, group: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.join("events").join(group))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Stops tracing, disables every event and removes the directory. Retries briefly while
    /// the kernel reports it busy (a reader still has a file open).
    pub fn remove(&self) -> io::Result<()> {
        let _ = self.write("tracing_on", "0");
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
