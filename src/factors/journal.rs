//! The restore journal: nothing a factor experiment changes stays changed,
//! and nothing someone else changed is overwritten.
//!
//! Before the first write to any knob, every file the experiment may write
//! or touch (a knob's own files and the [`coupled`](super::knobs::HostKnob::coupled)
//! files of the same kernel setting) is locked and read, and its original
//! text written to a journal file (`/var/lib/rtscope/journal/journal-PID.json`,
//! or under `$RTSCOPE_STATE_DIR`), fsynced with its directory, so it
//! survives a SIGKILL and a power cut. With each original the journal keeps
//! what rtscope **left** in the file (read back after every write), and the
//! originals are written back only where a file still holds that: a value
//! someone else set since is theirs, left as it is and named with rtscope's
//! in a warning. They are written back:
//!
//! - at the end, on an error and on a panic: [`Journal`]'s `Drop`;
//! - on a second ending signal (the first ends the current run and then
//!   the experiment, through the normal path): a signal action that does
//!   only open(2)/read(2)/write(2)/close(2)/unlink(2) — all
//!   async-signal-safe — and compares as the normal path does, on bytes
//!   prepared before the first change and re-armed after every change
//!   (see [`signal`]): an original goes back only where the file reads
//!   exactly what rtscope left; anything else is left, and the journal
//!   kept for the next rtscope to compare and name;
//! - after a SIGKILL or power cut: the next rtscope that measures (`run`,
//!   `monitor`, `factors`) and `doctor` call [`recover`], which finds the
//!   journal of a dead experiment, writes its originals back where the
//!   files still hold what the dead run left, and says so.
//!
//! **Who is alive** is decided by locks, not pids (pids are reused): a
//! running experiment holds `flock(LOCK_EX)` on its own journal file and on
//! every knob file it journaled, for its whole life; the kernel drops the
//! locks when the process dies however it dies. Creating a journal and
//! scanning for others happen under an exclusive lock on the directory's
//! `.lock`; the originals are read under that lock, after the conflict
//! checks, in one step with journaling, so a starting experiment is never
//! mistaken for a dead one, never journals another experiment's level as an
//! original, and two experiments that touch one file cannot both start: the
//! second is refused (exit 2), naming the knob and the other run. The lock
//! on the knob file itself is what holds across journal directories: a
//! second `RTSCOPE_STATE_DIR` does not make a second lock for the same
//! setting (procfs and sysfs files take `flock` like any file).
//!
//! **Whom it trusts**: the directory is created 0700 and must be owned by
//! root or the user running rtscope and writable by no one else; a journal
//! is acted on only if it is a regular file owned by the user recovering it
//! and names only files the knob descriptors write ([`HostKnob::may_touch`]).
//! Anything else is named and left alone.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::knobs::{host_knob, HostKnob, KnobRoot, Write};
use crate::error::BadInput;

mod signal;
pub(crate) use signal::register_signal_restore;
use signal::{SignalFile, SignalRestore};

/// 2: entries keep what rtscope left (`left`). A version-1 journal is
/// restored as before (originals written back wherever they differ).
const VERSION: u32 = 2;

/// A journal larger than this is not one rtscope wrote (an entry per IRQ
/// is ~150 bytes).
const MAX_JOURNAL_BYTES: u64 = 4 << 20;

/// One file changed: the knob, its kernel path and the text that restores it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) knob: String,
    pub(crate) path: String,
    pub(crate) original: String,
    /// What rtscope left in the file, read back after its last write (as
    /// `original` is normalised); at first the original; while a write is
    /// under way, also what the file will read after it. The original is
    /// written back only while the file holds one of these.
    #[serde(default)]
    pub(crate) left: Vec<String>,
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

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
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

/// Whether `dir` may hold journals: a directory (not a link) owned by root
/// or this user, writable by no one else. One of this user's with looser
/// modes is tightened to 0700.
fn check_dir(dir: &Path) -> Result<(), String> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if m.uid() != 0 && m.uid() != euid() {
        return Err(format!("{} is owned by uid {}, neither root nor you: a journal there could have been planted", dir.display(), m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        if m.uid() == euid() && std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_ok() {
            return Ok(());
        }
        return Err(format!("{} is writable by others (mode {:o}): a journal there could have been planted", dir.display(), m.mode() & 0o7777));
    }
    Ok(())
}

/// The directory, created 0700 and checked, and its lock taken (released on drop).
fn lock_dir(dir: &Path) -> anyhow::Result<File> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).with_context(|| format!("creating the restore journal directory {}", dir.display()))?;
    check_dir(dir)
        .map_err(|why| BadInput(format!("the restore journal directory: {why}; point RTSCOPE_STATE_DIR at a directory only you (or root) can write")))?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(".lock"))
        .with_context(|| format!("opening {}", dir.join(".lock").display()))?;
    flock(&f, true).with_context(|| format!("locking {}", dir.join(".lock").display()))?;
    Ok(f)
}

/// Write `text` to a kernel file (as `echo text > path` does).
pub(crate) fn write_knob(root: &KnobRoot, path: &str, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(root.path(path))?;
    f.write_all(text.as_bytes())
}

/// What `path` holds now, normalised as `knob`'s originals are.
fn reading(root: &KnobRoot, knob: &str, path: &str) -> Option<String> {
    read_raw(root, path).map(|raw| normalised(knob, &raw))
}

/// What `path` holds now, byte for byte (what the signal action compares).
fn read_raw(root: &KnobRoot, path: &str) -> Option<Vec<u8>> {
    std::fs::read(root.path(path)).ok()
}

/// `raw` as `knob`'s originals are kept.
fn normalised(knob: &str, raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    match host_knob(knob) {
        Some(h) => h.restorable(&raw),
        None => raw.trim().to_string(),
    }
}

/// Lock every knob file (`flock`, not waiting): the lock that holds across
/// journal directories. `Err(path)` names a file another process holds.
fn lock_files<'a>(root: &KnobRoot, paths: impl Iterator<Item = &'a str>) -> Result<Vec<File>, String> {
    let mut held = Vec::new();
    for p in paths {
        // A file that has gone (an IRQ freed) has nothing left to lock.
        let Ok(f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK).open(root.path(p)) else {
            continue;
        };
        match flock(&f, false) {
            Ok(true) => held.push(f),
            Ok(false) => return Err(p.to_string()),
            // A file system without flock: the journal directory's lock is what there is.
            Err(_) => {}
        }
    }
    Ok(held)
}

/// The journal files in `dir`, in order.
fn journals(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("journal-") && n.ends_with(".json")))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A journal's record, if it is one to act on: a regular file owned by
/// this user, a record this rtscope reads, naming only files the knob
/// descriptors write. `Err` says why not.
fn read_trusted(p: &Path) -> Result<Record, String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| format!("cannot be opened ({e})"))?;
    let m = f.metadata().map_err(|e| e.to_string())?;
    if !m.is_file() {
        return Err("is not a regular file".into());
    }
    if m.uid() != euid() {
        let who = if m.uid() == 0 { "root (run rtscope as root to restore it)".to_string() } else { format!("uid {}", m.uid()) };
        return Err(format!("is owned by {who}, not by you"));
    }
    if m.len() > MAX_JOURNAL_BYTES {
        return Err(format!("is {} bytes, more than any journal rtscope writes", m.len()));
    }
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(|e| format!("cannot be read ({e})"))?;
    let rec: Record = serde_json::from_str(&text).map_err(|e| format!("is not a restore journal ({e})"))?;
    if rec.version == 0 || rec.version > VERSION {
        return Err(format!("has version {}, which this rtscope does not know", rec.version));
    }
    if !rec.root.is_absolute() {
        return Err(format!("names a relative tree {}", rec.root.display()));
    }
    if let Some(e) = rec.entries.iter().find(|e| !host_knob(&e.knob).is_some_and(|h| h.may_touch(&e.path))) {
        return Err(format!("names {} for knob {}, which no knob writes", e.path, e.knob));
    }
    Ok(rec)
}

/// Whether the journal at `p` is held by a live experiment.
fn is_live(p: &Path) -> bool {
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK).open(p) {
        Ok(f) => !flock(&f, false).unwrap_or(false),
        Err(_) => false,
    }
}

/// What putting originals back did.
#[derive(Debug, Default)]
pub(crate) struct PutBack {
    /// Files written back (or found at their original).
    pub(crate) restored: Vec<Entry>,
    /// Files someone else changed since rtscope wrote them: left as they
    /// are, one sentence each naming both values.
    pub(crate) theirs: Vec<String>,
    /// Files that could not be written back.
    pub(crate) failed: Vec<String>,
}

/// Write the originals of `entries` back where the files still hold what
/// rtscope left (every file first, then the writes in journal order: a
/// knob's own file before its coupled ones). The one restore of every
/// path (end, error, check step, recovery).
fn put_back(root: &KnobRoot, entries: &[Entry]) -> PutBack {
    let mut out = PutBack::default();
    let mut todo = Vec::new();
    for e in entries {
        if !root.exists(&e.path) {
            continue;
        }
        match reading(root, &e.knob, &e.path) {
            Some(now) if now == e.original => out.restored.push(e.clone()),
            // Empty: a write cut off between truncating and writing (a
            // test tree's plain file; no kernel knob reads empty) is rtscope's.
            Some(now) if e.left.is_empty() || e.left.contains(&now) || now.is_empty() => todo.push(e),
            Some(now) => out.theirs.push(format!(
                "{} ({}) holds {now}, not {} as rtscope left it: someone changed it since, so it is left as it is (its original was {})",
                e.knob,
                e.path,
                e.left.last().map(String::as_str).unwrap_or("?"),
                e.original
            )),
            None => out.failed.push(format!("{} ({}: cannot read it)", e.knob, e.path)),
        }
    }
    for e in todo {
        // A coupled file may be back already (writing `watchdog` sets `soft_watchdog`).
        if reading(root, &e.knob, &e.path).as_deref() == Some(e.original.as_str()) {
            out.restored.push(e.clone());
            continue;
        }
        match write_knob(root, &e.path, &e.original) {
            Ok(()) => out.restored.push(e.clone()),
            // An IRQ that refused the change refuses the restore too.
            Err(_) if reading(root, &e.knob, &e.path).as_deref() == Some(e.original.as_str()) => out.restored.push(e.clone()),
            Err(err) => out.failed.push(format!("{} ({}: {err})", e.knob, e.path)),
        }
    }
    out
}

/// Restore the journals of dead experiments under `dir`; returns one line
/// per journal saying what was restored, left or ignored (for the caller
/// to print). A journal that is not trusted is left and named.
fn recover_in(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut said = Vec::new();
    if !dir.is_dir() {
        return Ok(said);
    }
    let _lock = lock_dir(dir)?;
    for p in journals(dir) {
        if is_live(&p) {
            continue;
        }
        let rec = match read_trusted(&p) {
            Ok(r) => r,
            Err(why) => {
                said.push(format!("{} {why}: not acted on (nothing restored from it); read it, restore by hand if needed, and remove it", p.display()));
                continue;
            }
        };
        let root = KnobRoot::new(rec.root.clone());
        // A live experiment journaled elsewhere (another RTSCOPE_STATE_DIR) holds these files now.
        let _files = match lock_files(&root, rec.entries.iter().map(|e| e.path.as_str())) {
            Ok(f) => f,
            Err(held) => {
                said.push(format!("{} (of a dead experiment, pid {}) is left for later: a live rtscope experiment holds {held}", p.display(), rec.pid));
                continue;
            }
        };
        let done = put_back(&root, &rec.entries);
        let who = format!("a dead rtscope experiment (pid {}, started {}: {})", rec.pid, rec.started_at, rec.command);
        if !done.restored.is_empty() {
            let mut line = format!("restored {} left changed by {who}", summarise(&done.restored));
            if !done.failed.is_empty() {
                line.push_str(&format!("; could not restore {}", done.failed.join(", ")));
            }
            said.push(line);
        } else if !done.failed.is_empty() {
            said.push(format!("could not restore {} left changed by {who}", done.failed.join(", ")));
        }
        for t in &done.theirs {
            said.push(format!("{t} (changed by {who})"));
        }
        if done.failed.is_empty() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        } else {
            said.push(format!("{} keeps the originals", p.display()));
        }
    }
    Ok(said)
}

/// `printk (/proc/sys/kernel/printk = 4 4 1 7), irq-affinity (24 files)`.
fn summarise(entries: &[Entry]) -> String {
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
        eprint!("{}", crate::report::term::para("note: ", &crate::report::escape::terminal_safe(&line)));
    }
}

/// Write `record` to `dir/journal-PID.json`: a temp file, fsynced and
/// locked, renamed over it, the directory fsynced. Returns the locked file
/// (the lock that says the experiment is alive moves with the content).
/// On failure the temp file is removed.
fn write_record(dir: &Path, record: &Record) -> anyhow::Result<File> {
    let path = dir.join(format!("journal-{}.json", record.pid));
    let tmp = dir.join(format!(".journal-{}.tmp", record.pid));
    let written = (|| -> std::io::Result<File> {
        let mut f =
            std::fs::OpenOptions::new().create(true).write(true).truncate(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(&tmp)?;
        f.write_all(serde_json::to_string_pretty(record).map_err(std::io::Error::other)?.as_bytes())?;
        f.sync_all()?;
        flock(&f, true)?;
        std::fs::rename(&tmp, &path)?;
        File::open(dir)?.sync_all()?;
        Ok(f)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("writing the restore journal {}: {e}", path.display())
    })
}

/// What the second-signal action compares one file with, byte for byte
/// as read (it cannot parse): kept beside each entry of the record, in its
/// order, and not journaled (the next rtscope compares the normalised texts).
struct AsRead {
    /// The file at its original.
    original: Vec<u8>,
    /// What rtscope left, as the entry's `left`: read back after its last
    /// write; while a write is under way, also what the file will read after it.
    left: Vec<Vec<u8>>,
}

/// A live experiment's journal: holds the locks that say it is alive,
/// restores on drop.
pub(crate) struct Journal {
    dir: PathBuf,
    path: PathBuf,
    root: KnobRoot,
    record: Record,
    /// One per entry of `record`.
    as_read: Vec<AsRead>,
    _held: File,
    /// The knob files' own locks.
    _files: Vec<File>,
    restored: bool,
}

/// Why a level could not be put in place.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// Someone else changed a file since rtscope wrote it.
    Changed(String),
    /// The kernel refused a write.
    Refused(String),
    /// The journal could not be saved.
    Journal(anyhow::Error),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::Changed(s) | ApplyError::Refused(s) => f.write_str(s),
            ApplyError::Journal(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl Journal {
    /// Lock and journal every file `knobs` write or touch: refused (exit 2)
    /// if a live experiment holds any of them (its journal in this
    /// directory, or the file's own lock for one journaled elsewhere); the
    /// originals are read now, under the locks and after those checks.
    /// First restores dead experiments' journals. Nothing is changed yet.
    pub(crate) fn begin(root: &KnobRoot, command: &str, knobs: &[HostKnob]) -> anyhow::Result<(Journal, Vec<String>)> {
        let dir = dir();
        let said = recover_in(&dir)?;
        let _lock = lock_dir(&dir)?;
        let mut touched: Vec<(&'static str, String)> = Vec::new();
        for k in knobs {
            for p in k.files(root)? {
                if !touched.iter().any(|(_, q)| *q == p) {
                    touched.push((k.name, p));
                }
            }
        }
        for p in journals(&dir) {
            if !is_live(&p) {
                continue;
            }
            let Ok(rec) = read_trusted(&p) else { continue };
            if rec.root != root.base() {
                continue;
            }
            if let Some((o, (k, _))) = rec.entries.iter().find_map(|o| touched.iter().find(|(_, t)| *t == o.path).map(|t| (o, t))) {
                let shared = if o.knob == *k { String::new() } else { format!(", a file of the same setting as knob {}", o.knob) };
                return Err(BadInput(format!(
                    "knob {k} ({}{shared}) is being changed by another rtscope experiment (pid {}, started {}: {}); \
                     two experiments must not change one setting: wait for it to end (its journal: {})",
                    o.path,
                    rec.pid,
                    rec.started_at,
                    rec.command,
                    p.display()
                ))
                .into());
            }
        }
        let files = lock_files(root, touched.iter().map(|(_, p)| p.as_str())).map_err(|held| {
            let k = touched.iter().find(|(_, p)| *p == held).map_or("?", |(k, _)| k);
            BadInput(format!(
                "knob {k} ({held}) is being changed by another rtscope experiment, one journaled outside {} (another RTSCOPE_STATE_DIR); \
                 two experiments must not change one setting: wait for it to end",
                dir.display()
            ))
        })?;
        let mut entries = Vec::new();
        let mut as_read = Vec::new();
        for (k, path) in touched {
            let raw = read_raw(root, &path).ok_or_else(|| BadInput(format!("--factor {k}: cannot read {path}, so its original cannot be journaled")))?;
            let original = normalised(k, &raw);
            entries.push(Entry { knob: k.to_string(), path, left: vec![original.clone()], original });
            as_read.push(AsRead { left: vec![raw.clone()], original: raw });
        }
        let record = Record {
            version: VERSION,
            pid: std::process::id(),
            started_at: crate::units::now_rfc3339_precise(),
            command: command.to_string(),
            root: root.base(),
            entries,
        };
        let held = write_record(&dir, &record).map_err(|e| {
            anyhow::anyhow!("{e:#}; nothing has been changed: free space in {} or point RTSCOPE_STATE_DIR at a directory on another file system", dir.display())
        })?;
        let path = dir.join(format!("journal-{}.json", record.pid));
        let j = Journal { dir, path, root: root.clone(), record, as_read, _held: held, _files: files, restored: false };
        j.arm_signal_restore();
        Ok((j, said))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn save(&mut self) -> Result<(), ApplyError> {
        self._held = write_record(&self.dir, &self.record).map_err(ApplyError::Journal)?;
        Ok(())
    }

    /// Read back what `knob`'s files hold now as what rtscope left there
    /// (the signal action's too).
    fn read_back(&mut self, knob: &str) -> Result<(), ApplyError> {
        for (e, r) in self.record.entries.iter_mut().zip(self.as_read.iter_mut()).filter(|(e, _)| e.knob == knob) {
            if let Some(raw) = read_raw(&self.root, &e.path) {
                e.left = vec![normalised(knob, &raw)];
                r.left = vec![raw];
            }
        }
        self.arm_signal_restore();
        self.save()
    }

    /// Put `knob` at a level (`writes`): first checks that its files still
    /// hold what rtscope left (else [`ApplyError::Changed`], naming both
    /// values: someone else's setting is not overwritten), journals what
    /// the files will read after the writes as rtscope's too, writes, and
    /// journals what the files then hold.
    /// Returns the files that refused and may ([`HostKnob::may_refuse`]).
    pub(crate) fn apply(&mut self, knob: &HostKnob, level: &str, writes: &[Write]) -> Result<Vec<String>, ApplyError> {
        for e in self.record.entries.iter().filter(|e| e.knob == knob.name) {
            match reading(&self.root, knob.name, &e.path) {
                Some(now) if !e.left.contains(&now) => {
                    return Err(ApplyError::Changed(format!(
                        "{} ({}) holds {now}, not {} as rtscope left it: someone changed it during the experiment; \
                         the experiment stops here and leaves it as it is",
                        knob.name,
                        e.path,
                        e.left.last().map(String::as_str).unwrap_or("?")
                    )))
                }
                _ => {}
            }
        }
        for (e, r) in self.record.entries.iter_mut().zip(self.as_read.iter_mut()).filter(|(e, _)| e.knob == knob.name) {
            let now = e.left.last().cloned().unwrap_or_default();
            let raw = r.left.last().cloned().unwrap_or_default();
            // What the kernel will read back, and the text itself (a test
            // tree's plain file reads just what was written); as the
            // normal path compares it, and byte for byte.
            let (after, raw_after) = match writes.iter().find(|w| w.path == e.path) {
                Some(w) => (vec![knob.reads_after(&now, &w.text), knob.restorable(&w.text)], knob.raw_after(&raw, &w.text)),
                // A coupled file of a one-file knob reads what was written to its setting.
                None if writes.len() == 1 => {
                    let text = &writes[0].text;
                    (vec![text.trim().to_string()], vec![format!("{}\n", text.trim()).into_bytes(), text.clone().into_bytes()])
                }
                None => continue,
            };
            for a in after {
                if !e.left.contains(&a) {
                    e.left.push(a);
                }
            }
            for a in raw_after {
                if !r.left.contains(&a) {
                    r.left.push(a);
                }
            }
        }
        // Before the first write: either text is rtscope's while it is under way.
        self.arm_signal_restore();
        self.save()?;
        let mut refused = Vec::new();
        let mut failed = None;
        for w in writes {
            if let Err(e) = write_knob(&self.root, &w.path, &w.text) {
                if knob.may_refuse(&w.path) {
                    refused.push(w.path.clone());
                } else {
                    failed = Some(format!("setting {} to {level}: the kernel refused {:?} in {}: {e}", knob.name, w.text, w.path));
                    break;
                }
            }
        }
        self.read_back(knob.name)?;
        match failed {
            Some(f) => Err(ApplyError::Refused(f)),
            None => Ok(refused),
        }
    }

    /// Write `knob`'s originals back (the check step, after trying its
    /// levels), and journal what its files hold then.
    pub(crate) fn put_back_knob(&mut self, knob: &HostKnob) -> PutBack {
        let mine: Vec<Entry> = self.record.entries.iter().filter(|e| e.knob == knob.name).cloned().collect();
        let done = put_back(&self.root, &mine);
        let _ = self.read_back(knob.name);
        done
    }

    /// Prepare what the second-signal action compares and writes (the
    /// state now: before the first change, and around every change).
    fn arm_signal_restore(&self) {
        let files = self
            .record
            .entries
            .iter()
            .zip(&self.as_read)
            .filter_map(|(e, r)| {
                Some(SignalFile {
                    path: CString::new(self.root.path(&e.path).into_os_string().into_encoded_bytes()).ok()?,
                    original: e.original.clone().into_bytes(),
                    at_original: r.original.clone(),
                    left: r.left.clone(),
                })
            })
            .collect();
        let journal = CString::new(self.path.clone().into_os_string().into_encoded_bytes()).unwrap_or_default();
        signal::arm(SignalRestore { files, journal });
    }

    /// Write every original back where rtscope's value is still in place;
    /// the journal is removed unless a file could not be restored.
    pub(crate) fn restore(&mut self) -> PutBack {
        signal::disarm();
        let done = put_back(&self.root, &self.record.entries);
        if done.failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        self.restored = true;
        done
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if !self.restored {
            let done = self.restore();
            for t in &done.theirs {
                eprintln!("warning: {t}");
            }
            for f in &done.failed {
                eprintln!("error: could not restore {f}; the journal {} keeps the original", self.path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_knobs_and_counts_files() {
        let a = Entry { knob: "printk".into(), path: "/proc/sys/kernel/printk".into(), original: "4 4 1 7".into(), left: vec![] };
        let b = Entry { knob: "irq-affinity".into(), path: "/proc/irq/1/smp_affinity_list".into(), original: "0-1".into(), left: vec![] };
        let c = Entry { knob: "irq-affinity".into(), path: "/proc/irq/2/smp_affinity_list".into(), original: "0-1".into(), left: vec![] };
        assert_eq!(summarise(&[a, b, c]), "printk (/proc/sys/kernel/printk = 4 4 1 7), irq-affinity (2 files)");
    }
}
