//! The journal's second-signal action: on the second ending signal (the
//! first ends the current run and then the experiment through the normal
//! path; the second exits at once) the originals are written back with
//! async-signal-safe calls only — and, as on the normal path, only where a
//! file still holds what rtscope left there.
//!
//! A signal action cannot parse or allocate, so what it compares is
//! prepared for it: each file's bytes **as read** (not normalised) when it
//! held its original, and when rtscope last left it — read back after every
//! write, and while a write is under way also what the file will read after
//! it (THP's `always madvise [never]` after `never` was written). The
//! journal re-arms this plan around every change ([`arm`]). The action reads
//! each file (read(2) into a stack buffer) and writes the original back
//! only where the bytes are exactly one of those; a file holding anything
//! else is someone else's: left as it is, and the journal file is kept, so
//! the next rtscope (or `rtscope doctor`) compares it and names both values.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use nix::errno::Errno;

/// One file the signal action may write back.
pub(super) struct SignalFile {
    pub(super) path: CString,
    /// The text written back (the journal's `original`).
    pub(super) original: Vec<u8>,
    /// The file's bytes, as read, at its original: nothing to write.
    pub(super) at_original: Vec<u8>,
    /// The file's bytes, as read, as rtscope left them.
    pub(super) left: Vec<Vec<u8>>,
}

/// What the signal action restores: every file of the journal, and the
/// journal file itself.
pub(super) struct SignalRestore {
    pub(super) files: Vec<SignalFile>,
    pub(super) journal: CString,
}

/// The plan armed now. Ownership moves by `swap` only: the action swaps a
/// plan out to use it (and never gives it back); [`arm`] and [`disarm`] swap
/// the previous one out to free it, which is then one no action holds.
static SIGNAL_RESTORE: AtomicPtr<SignalRestore> = AtomicPtr::new(std::ptr::null_mut());

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// The longest file the action compares: a page, the most a sysfs file
/// holds; every knob file rtscope writes is far shorter. A longer one is
/// not compared (left as it is, the journal kept). On the interrupted
/// thread's stack: rtscope's smallest thread stack is 64 KiB.
const READ_MAX: usize = 4096;

/// Make `plan` the one the action restores, freeing the previous one.
pub(super) fn arm(plan: SignalRestore) {
    let old = SIGNAL_RESTORE.swap(Box::into_raw(Box::new(plan)), Ordering::SeqCst);
    free(old);
}

/// No plan: the normal path restores from here on.
pub(super) fn disarm() {
    free(SIGNAL_RESTORE.swap(std::ptr::null_mut(), Ordering::SeqCst));
}

fn free(old: *mut SignalRestore) {
    if !old.is_null() {
        // SAFETY: every plan stored comes from Box::into_raw in `arm`;
        // `old` was swapped out of SIGNAL_RESTORE just now, and an action
        // takes a plan only by swapping it out too, so no action holds it
        // and nothing else will free it.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// A file's bytes as the action reads them.
enum Now {
    Read(usize),
    /// No such file (an IRQ freed since): nothing to restore.
    Gone,
    /// Cannot be read, or longer than [`READ_MAX`]: cannot be compared.
    Unknown,
}

/// Read `path` into `buf`: open(2), read(2), close(2) only; no allocation.
fn read_now(path: &CStr, buf: &mut [u8]) -> Now {
    // SAFETY: open(2) of a NUL-terminated path; O_NONBLOCK so no file blocks the action.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return if Errno::last() == Errno::ENOENT { Now::Gone } else { Now::Unknown };
    }
    let mut n = 0;
    let now = loop {
        if n == buf.len() {
            break Now::Unknown;
        }
        let rest = &mut buf[n..];
        // SAFETY: read(2) into `rest`, writable for `rest.len()` bytes.
        let r = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match r {
            0 => break Now::Read(n),
            r if r > 0 => n += r as usize,
            _ if Errno::last() == Errno::EINTR => {}
            _ => break Now::Unknown,
        }
    };
    // SAFETY: close(2) of the descriptor opened above, used no more.
    unsafe { libc::close(fd) };
    now
}

/// Write `text` to `path` as `echo text > path` does: open(2), write(2),
/// close(2) only. Whether all of it was taken.
fn write_back(path: &CStr, text: &[u8]) -> bool {
    // SAFETY: open(2) of a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: write(2) of `text`, readable for `text.len()` bytes.
    let all = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) } == text.len() as isize;
    // SAFETY: close(2) of the descriptor opened above, used no more.
    unsafe { libc::close(fd) };
    all
}

/// Put back every file of `plan` that holds what rtscope left; whether the
/// journal may go (every file is at its original, gone or written back).
fn put_back(plan: &SignalRestore) -> bool {
    let mut all = true;
    for f in &plan.files {
        let mut buf = [0u8; READ_MAX];
        let now = match read_now(&f.path, &mut buf) {
            Now::Read(n) => &buf[..n],
            Now::Gone => continue,
            Now::Unknown => {
                all = false;
                continue;
            }
        };
        if now == f.at_original.as_slice() {
            continue;
        }
        // Empty: a write cut off between truncating and writing (a test
        // tree's plain file; no kernel knob reads empty) is rtscope's, as
        // on the normal path.
        let rtscopes = now.is_empty() || f.left.iter().any(|l| l.as_slice() == now);
        // Not rtscope's: someone else's, left as it is; the journal stays
        // for the next rtscope to compare and name it.
        all &= rtscopes && write_back(&f.path, &f.original);
    }
    all
}

/// On the second ending signal (`sys::signal::ENDING`; the first ends the
/// current run and then the experiment through the normal path; the second
/// exits at once), put back the originals where rtscope's values are still
/// in place. Register before `commands::run::stop_on_signals`, whose exit
/// runs after this action.
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
            // SAFETY: `p` came from Box::into_raw in `arm` and was swapped
            // out just now, so this action owns it: `arm` and `disarm` free
            // only plans they swap out themselves, and it is never freed
            // here (the process exits after this action).
            let plan = unsafe { &*p };
            // As the normal path: a journal with a file not restored (not
            // rtscope's value, a write refused, a file unreadable) stays
            // for the next rtscope.
            if put_back(plan) {
                // SAFETY: unlink(2) of a NUL-terminated path.
                unsafe { libc::unlink(plan.journal.as_ptr()) };
            }
        };
        // SAFETY: the action is async-signal-safe: it calls only open(2),
        // read(2), write(2), close(2) and unlink(2) (and reads errno),
        // compares bytes prepared before, takes no lock and allocates
        // nothing (its read buffer is on the stack).
        unsafe { signal_hook::low_level::register(sig, action)? };
    }
    Ok(())
}
