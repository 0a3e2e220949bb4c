//! The journal's second-signal action: on the second ending signal (the
//! first ends the current run and then the experiment through the normal
//! path; the second exits at once) the originals prepared before the first
//! change are written back with async-signal-safe calls only.

use std::ffi::CString;
use std::sync::atomic::{AtomicPtr, Ordering};

/// What the signal action restores: prepared before the first change.
pub(super) struct SignalRestore {
    pub(super) writes: Vec<(CString, Vec<u8>)>,
    pub(super) journal: CString,
}

pub(super) static SIGNAL_RESTORE: AtomicPtr<SignalRestore> = AtomicPtr::new(std::ptr::null_mut());

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
                let mut all = true;
                for (path, text) in &plan.writes {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC);
                    if fd >= 0 {
                        all &= libc::write(fd, text.as_ptr().cast(), text.len()) == text.len() as isize;
                        libc::close(fd);
                    } else {
                        all = false;
                    }
                }
                // As the normal path: a journal whose restore failed stays
                // for the next rtscope (a file the kernel refuses back may
                // hold its original already; the next one sees that).
                if all {
                    libc::unlink(plan.journal.as_ptr());
                }
            }
        };
        // SAFETY: the action is async-signal-safe (see above).
        unsafe { signal_hook::low_level::register(sig, action)? };
    }
    Ok(())
}
