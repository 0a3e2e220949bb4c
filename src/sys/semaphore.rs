//! `<semaphore.h>`: an unnamed, process-private POSIX semaphore, for the
//! `sem` probe's `posix` variant and `throughput`'s tests. See sem_init(3),
//! sem_post(3) (async-signal-safe, so a signal handler may post through
//! [`Semaphore::as_ptr`]) and sem_wait(3).

use std::cell::UnsafeCell;

use nix::errno::Errno;

/// An unnamed POSIX semaphore that never moves (boxed), destroyed on drop.
pub(crate) struct Semaphore(Box<UnsafeCell<libc::sem_t>>);

// SAFETY: a sem_t is made to be used from several threads at once (and from
// signal handlers); it is only touched through the sem_* calls and never
// moved (boxed).
unsafe impl Sync for Semaphore {}
// SAFETY: as for Sync: the boxed sem_t does not move; any thread may post or wait on it.
unsafe impl Send for Semaphore {}

impl Semaphore {
    /// A semaphore of this process's threads with the count `value`.
    pub(crate) fn new(value: u32) -> anyhow::Result<Semaphore> {
        // SAFETY: all-zero storage is valid for sem_init to fill.
        let s = Semaphore(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed::<libc::sem_t>() })));
        // SAFETY: `s.0` is writable storage that lives as long as the Semaphore.
        let rc = unsafe { libc::sem_init(s.0.get(), 0, value) };
        Errno::result(rc).map_err(|e| anyhow::anyhow!("sem_init: {e}"))?;
        Ok(s)
    }

    /// Add one to the count, waking a waiter.
    #[inline]
    pub(crate) fn post(&self) -> Result<(), String> {
        // SAFETY: initialised in new().
        let rc = unsafe { libc::sem_post(self.0.get()) };
        Errno::result(rc).map(drop).map_err(|e| format!("sem_post: {e}"))
    }

    /// Take one from the count, blocking while it is 0; a signal's
    /// interruption (EINTR) waits again.
    #[inline]
    pub(crate) fn wait(&self) -> Result<(), String> {
        loop {
            // SAFETY: initialised in new().
            let rc = unsafe { libc::sem_wait(self.0.get()) };
            match Errno::result(rc) {
                Ok(_) => return Ok(()),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(format!("sem_wait: {e}")),
            }
        }
    }

    /// The sem_t, for a signal handler's sem_post (valid while self lives).
    pub(crate) fn as_ptr(&self) -> *mut libc::sem_t {
        self.0.get()
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: initialised in new(); no thread waits on it any more.
        unsafe { libc::sem_destroy(self.0.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_posts_and_waits() {
        let s = Semaphore::new(1).unwrap();
        s.wait().unwrap();
        s.post().unwrap();
        s.post().unwrap();
        s.wait().unwrap();
        s.wait().unwrap();
        let mut v = 7;
        // SAFETY: the semaphore lives; sem_getvalue writes the count to `v`.
        assert_eq!(unsafe { libc::sem_getvalue(s.as_ptr(), &mut v) }, 0);
        assert_eq!(v, 0);
    }
}
