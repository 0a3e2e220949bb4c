//! The restore journal: nothing a factor experiment changes stays changed.
//!
//! Before the first write to any knob, every file the experiment may write
//! is read and its original text written to a journal file
//! (`/var/lib/rtscope/journal/journal-PID.json`, or under
//! `$RTSCOPE_STATE_DIR`), fsynced with its directory, so it survives a
//! SIGKILL and a power cut. The originals are written back:
//!
//! - at the end, on an error and on a panic: [`Journal`]'s `Drop`;
//! - on a second Ctrl-C/SIGTERM (the first ends the current run and then
//!   the experiment, through the normal path): a signal action that does
//!   only open(2)/write(2)/close(2)/unlink(2) on texts prepared before the
//!   first change — all async-signal-safe;
//! - after a SIGKILL or power cut: the next rtscope that measures (`run`,
//!   `monitor`, `factors`) and `doctor` call [`recover`], which finds the
//!   journal of a dead experiment, writes its originals back and says so.
//!
//! **Who is alive** is decided by a lock, not a pid (pids are reused): a
//! running experiment holds `flock(LOCK_EX)` on its own journal file for its
//! whole life; the kernel drops the lock when the process dies however it
//! dies. A journal whose lock can be taken belongs to a dead run.
//! Creating a journal and scanning for others both happen under an
//! exclusive lock on the directory's `.lock`, so a starting experiment is
//! never mistaken for a dead one, and two experiments that want the same
//! knob file cannot both start: the second is refused (exit 2), naming the
//! knob and the other run.

use std::ffi::CString;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::knobs::KnobRoot;
use crate::error::BadInput;

const VERSION: u32 = 1;

/// One file changed: the knob, its kernel path and the text that restores it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) knob: String,
    pub(crate) path: String,
    pub(crate) original: String,
}

/// The journal file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) version: u32,
    pub(crate) pid: u32,
    pub(crate) started_at: String,
    /// The command line of the experiment (what changed the knobs).
    pub(crate) command: String,
    /// The tree the paths are under (`/`, or a test tree).
    pub(crate) root: PathBuf,
    pub(crate) entries: Vec<Entry>,
}

/// The journal directory: `$RTSCOPE_STATE_DIR/journal`, else
/// `/var/lib/rtscope/journal` (persistent across a power cut, unlike /run).
pub(crate) fn dir() -> PathBuf {
    match std::env::var_os("RTSCOPE_STATE_DIR") {
        Some(d) => PathBuf::from(d).join("journal"),
        None => PathBuf::from("/var/lib/rtscope/journal"),
    }
}

/// `flock(2)` on `f`; `Ok(false)` when another holder has it and `block` is false.
fn flock(f: &File, block: bool) -> std::io::Result<bool> {
    let op = libc::LOCK_EX | if block { 0 } else { libc::LOCK_NB };
    loop {
        // SAFETY: flock(2) on a descriptor `f` owns for the duration of the call.
        let r = unsafe { libc::flock(f.as_raw_fd(), op) };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if !block => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// The directory, created (0700), and its lock taken (released on drop).
fn lock_dir(dir: &Path) -> anyhow::Result<File> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating the restore journal directory {}", dir.display()))?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join(".lock"))
        .with_context(|| format!("opening {}", dir.join(".lock").display()))?;
    flock(&f, true).with_context(|| format!("locking {}", dir.join(".lock").display()))?;
    Ok(f)
}

/// Write `text` to a kernel file (as `echo text > path` does).
pub(crate) fn write_knob(root: &KnobRoot, path: &str, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(root.path(path))?;
    f.write_all(text.as_bytes())
}

/// The journals in `dir`: path and content (unreadable ones named in `bad`).
fn journals(dir: &Path) -> Vec<(PathBuf, Option<Record>)> {
    let mut v: Vec<(PathBuf, Option<Record>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("journal-") && n.ends_with(".json")))
                .map(|p| {
                    let r = std::fs::read_to_string(&p).ok().and_then(|t| serde_json::from_str::<Record>(&t).ok());
                    (p, r)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Whether the journal at `p` is held by a live experiment.
fn is_live(p: &Path) -> bool {
    match File::open(p) {
        Ok(f) => !flock(&f, false).unwrap_or(false),
        Err(_) => false,
    }
}

/// Restore the journals of dead experiments under `dir`; returns one line per
/// journal saying what was restored (for the caller to print). A journal
/// that cannot be read is left and named.
fn recover_in(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut said = Vec::new();
    if !dir.is_dir() {
        return Ok(said);
    }
    let _lock = lock_dir(dir)?;
    for (p, rec) in journals(dir) {
        if is_live(&p) {
            continue;
        }
        let Some(rec) = rec else {
            said.push(format!("{} is not a readable restore journal: left in place; read it and restore by hand", p.display()));
            continue;
        };
        let root = KnobRoot::new(rec.root.clone());
        let mut restored = Vec::new();
        let mut failed = Vec::new();
        for e in &rec.entries {
            match write_knob(&root, &e.path, &e.original) {
                Ok(()) => restored.push(e),
                Err(err) if already(&root, e) => {
                    let _ = err;
                    restored.push(e)
                }
                Err(err) => failed.push(format!("{} ({}: {err})", e.knob, e.path)),
            }
        }
        let knobs = summarise(&restored);
        said.push(format!(
            "restored {knobs} left changed by a dead rtscope experiment (pid {}, started {}: {}){}",
            rec.pid,
            rec.started_at,
            rec.command,
            if failed.is_empty() { String::new() } else { format!("; could not restore {}", failed.join(", ")) }
        ));
        if failed.is_empty() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    Ok(said)
}

/// The file already holds its original (an IRQ that refused the change
/// refuses the restore too).
fn already(root: &KnobRoot, e: &Entry) -> bool {
    root.read(&e.path).is_some_and(|now| now.split_whitespace().collect::<Vec<_>>().join(" ") == e.original)
}

/// `printk (/proc/sys/kernel/printk = 4 4 1 7), irq-affinity (24 files)`.
fn summarise(entries: &[&Entry]) -> String {
    let mut by: Vec<(&str, Vec<&Entry>)> = Vec::new();
    for e in entries {
        match by.iter_mut().find(|(k, _)| *k == e.knob) {
            Some((_, v)) => v.push(e),
            None => by.push((&e.knob, vec![e])),
        }
    }
    by.iter()
        .map(|(k, v)| if v.len() == 1 { format!("{k} ({} = {})", v[0].path, v[0].original) } else { format!("{k} ({} files)", v.len()) })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Find journals of dead experiments and restore them; one line per
/// journal. Called by every command that measures and by `doctor`. Without
/// the rights to restore (not root), says so instead of failing the command.
pub(crate) fn recover() -> Vec<String> {
    let dir = dir();
    // No journal, nothing to do (and no lock to take: a user who may not
    // write the directory is not bothered when there is nothing to restore).
    if journals(&dir).is_empty() {
        return Vec::new();
    }
    match recover_in(&dir) {
        Ok(v) => v,
        Err(e) => vec![format!(
            "the restore journal in {} could not be checked ({e:#}): a crashed factor experiment may have left knobs changed; run rtscope as root to restore them",
            dir.display()
        )],
    }
}

/// [`recover`], printed to stderr as `note:` lines.
pub(crate) fn recover_and_say() {
    for line in recover() {
        eprintln!("note: {}", crate::report::escape::terminal_safe(&line));
    }
}

/// A live experiment's journal: holds the lock that says it is alive,
/// restores on drop.
pub(crate) struct Journal {
    path: PathBuf,
    root: KnobRoot,
    record: Record,
    _held: File,
    restored: bool,
}

/// What the signal action restores: prepared before the first change.
struct SignalRestore {
    writes: Vec<(CString, Vec<u8>)>,
    journal: CString,
}

static SIGNAL_RESTORE: AtomicPtr<SignalRestore> = AtomicPtr::new(std::ptr::null_mut());

impl Journal {
    /// Journal the originals of `entries` (path → current text, read now),
    /// refusing if a live experiment holds any of the same files; first
    /// restores dead experiments' journals. Nothing is changed yet.
    pub(crate) fn begin(root: &KnobRoot, command: &str, entries: Vec<Entry>) -> anyhow::Result<(Journal, Vec<String>)> {
        let dir = dir();
        let said = recover_in(&dir).unwrap_or_default();
        let _lock = lock_dir(&dir)?;
        for (p, rec) in journals(&dir) {
            if !is_live(&p) {
                continue;
            }
            let Some(rec) = rec else { continue };
            if rec.root != root.base() {
                continue;
            }
            if let Some(e) = rec.entries.iter().find(|o| entries.iter().any(|e| e.path == o.path)) {
                return Err(BadInput(format!(
                    "knob {} ({}) is being changed by another rtscope experiment (pid {}, started {}: {}); \
                     two experiments must not change the same knob: wait for it to end (its journal: {})",
                    e.knob,
                    e.path,
                    rec.pid,
                    rec.started_at,
                    rec.command,
                    p.display()
                ))
                .into());
            }
        }
        let record = Record {
            version: VERSION,
            pid: std::process::id(),
            started_at: crate::units::now_rfc3339_precise(),
            command: command.to_string(),
            root: root.base(),
            entries,
        };
        let path = dir.join(format!("journal-{}.json", record.pid));
        let tmp = dir.join(format!(".journal-{}.tmp", record.pid));
        {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .with_context(|| format!("writing the restore journal {}", tmp.display()))?;
            f.write_all(serde_json::to_string_pretty(&record)?.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &path).with_context(|| format!("writing the restore journal {}", path.display()))?;
        File::open(&dir)?.sync_all()?;
        let held = File::open(&path)?;
        flock(&held, true)?;
        let j = Journal { path, root: root.clone(), record, _held: held, restored: false };
        j.arm_signal_restore();
        Ok((j, said))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        &self.record.entries
    }

    /// Prepare the texts the second-signal action writes, and register it.
    fn arm_signal_restore(&self) {
        let writes = self
            .record
            .entries
            .iter()
            .filter_map(|e| Some((CString::new(self.root.path(&e.path).into_os_string().into_encoded_bytes()).ok()?, e.original.clone().into_bytes())))
            .collect();
        let journal = CString::new(self.path.clone().into_os_string().into_encoded_bytes()).unwrap_or_default();
        let plan = Box::into_raw(Box::new(SignalRestore { writes, journal }));
        // The previous plan (none in one process) is leaked on purpose: a
        // signal action may be reading it.
        SIGNAL_RESTORE.store(plan, Ordering::SeqCst);
    }

    /// Write every original back; returns what could not be restored.
    pub(crate) fn restore(&mut self) -> Vec<String> {
        SIGNAL_RESTORE.store(std::ptr::null_mut(), Ordering::SeqCst);
        let mut failed = Vec::new();
        for e in &self.record.entries {
            if let Err(err) = write_knob(&self.root, &e.path, &e.original) {
                if !already(&self.root, e) {
                    failed.push(format!("{} ({}: {err})", e.knob, e.path));
                }
            }
        }
        if failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        self.restored = true;
        failed
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if !self.restored {
            for f in self.restore() {
                eprintln!("error: could not restore {f}; the journal {} keeps the original", self.path.display());
            }
        }
    }
}

static SIGNALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// On the second ending signal (`sys::signal::ENDING`; the first ends the current run and then
/// the experiment through the normal path; the second exits at once),
/// write the journaled originals back. Register before
/// `commands::run::stop_on_signals`, whose exit runs after this action.
pub(crate) fn register_signal_restore() -> std::io::Result<()> {
    for sig in crate::sys::signal::ENDING {
        let action = move || {
            if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
                return;
            }
            let p = SIGNAL_RESTORE.swap(std::ptr::null_mut(), Ordering::SeqCst);
            if p.is_null() {
                return;
            }
            // SAFETY: `p` came from Box::into_raw and is never freed (leaked
            // on purpose); it was swapped out so it is used once. Only
            // open(2), write(2), close(2) and unlink(2) are called, all
            // async-signal-safe; nothing allocates.
            unsafe {
                let plan = &*p;
                for (path, text) in &plan.writes {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC);
                    if fd >= 0 {
                        libc::write(fd, text.as_ptr().cast(), text.len());
                        libc::close(fd);
                    }
                }
                libc::unlink(plan.journal.as_ptr());
            }
        };
        // SAFETY: the action is async-signal-safe (see above).
        unsafe { signal_hook::low_level::register(sig, action)? };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_knobs_and_counts_files() {
        let a = Entry { knob: "printk".into(), path: "/proc/sys/kernel/printk".into(), original: "4 4 1 7".into() };
        let b = Entry { knob: "irq-affinity".into(), path: "/proc/irq/1/smp_affinity_list".into(), original: "0-1".into() };
        let c = Entry { knob: "irq-affinity".into(), path: "/proc/irq/2/smp_affinity_list".into(), original: "0-1".into() };
        assert_eq!(summarise(&[&a, &b, &c]), "printk (/proc/sys/kernel/printk = 4 4 1 7), irq-affinity (2 files)");
    }
}
