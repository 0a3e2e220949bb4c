//! `<pthread.h>`: a mutex with a chosen priority protocol (none, priority
//! inheritance, priority ceiling), for the `pi` probe. See
//! pthread_mutexattr_setprotocol(3) and pthread_mutexattr_setprioceiling(3).
//! And what a thread the system refuses to create is
//! ([`spawn_refused`]; pthread_create(3)).
//!
//! With `PTHREAD_PRIO_INHERIT` glibc uses the kernel's PI futexes
//! (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI): a thread blocked on the mutex lends
//! its priority to the owner. With `PTHREAD_PRIO_PROTECT` the owner runs at
//! the mutex's ceiling while it holds it (glibc changes the thread's
//! priority on lock and unlock).

use std::cell::UnsafeCell;

use nix::errno::Errno;

/// The priority protocol of a [`Mutex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    None,
    Inherit,
    /// Priority ceiling: the owner runs at this priority.
    Protect(u8),
}

extern "C" {
    // In glibc (pthread.h) but not in the libc crate.
    fn pthread_mutexattr_setprioceiling(attr: *mut libc::pthread_mutexattr_t, prioceiling: libc::c_int) -> libc::c_int;
}

/// A pthread mutex that never moves (boxed), destroyed on drop.
pub(crate) struct Mutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread_mutex_t is made to be locked and unlocked from several
// threads; it is only touched through pthread_mutex_* and never moved.
unsafe impl Sync for Mutex {}
// SAFETY: as for Sync: the boxed mutex does not move; any thread may use it.
unsafe impl Send for Mutex {}

impl Mutex {
    /// A default mutex (no priority protocol, PTHREAD_MUTEX_INITIALIZER):
    /// cannot fail.
    pub(crate) fn plain() -> Mutex {
        Mutex { m: Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)) }
    }

    /// The pthread_mutex_t, for pthread_cond_wait (valid while self lives).
    pub(crate) fn as_ptr(&self) -> *mut libc::pthread_mutex_t {
        self.m.get()
    }

    pub(crate) fn new(protocol: Protocol) -> Result<Mutex, String> {
        // SAFETY: all-zero storage is valid for pthread_mutexattr_init to fill.
        let mut attr: libc::pthread_mutexattr_t = unsafe { std::mem::zeroed() };
        // SAFETY: `attr` is writable storage for an attribute object.
        let rc = unsafe { libc::pthread_mutexattr_init(&mut attr) };
        if rc != 0 {
            return Err(format!("pthread_mutexattr_init: {}", Errno::from_raw(rc)));
        }
        let (raw, ceiling) = match protocol {
            Protocol::None => (libc::PTHREAD_PRIO_NONE, None),
            Protocol::Inherit => (libc::PTHREAD_PRIO_INHERIT, None),
            Protocol::Protect(c) => (libc::PTHREAD_PRIO_PROTECT, Some(c)),
        };
        // SAFETY: `attr` was initialised above; `raw` is a valid protocol.
        let mut rc = unsafe { libc::pthread_mutexattr_setprotocol(&mut attr, raw) };
        let mut what = "pthread_mutexattr_setprotocol";
        if rc == 0 {
            if let Some(c) = ceiling {
                // SAFETY: as above; the ceiling is a SCHED_FIFO priority.
                rc = unsafe { pthread_mutexattr_setprioceiling(&mut attr, c as libc::c_int) };
                what = "pthread_mutexattr_setprioceiling";
            }
        }
        let m = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        if rc == 0 {
            // SAFETY: `m` is storage that lives as long as self; `attr` is initialised.
            rc = unsafe { libc::pthread_mutex_init(m.get(), &attr) };
            what = "pthread_mutex_init";
        }
        // SAFETY: `attr` was initialised and is not used after this.
        unsafe { libc::pthread_mutexattr_destroy(&mut attr) };
        if rc != 0 {
            return Err(format!("{what} ({protocol:?}): {}", Errno::from_raw(rc)));
        }
        Ok(Mutex { m })
    }

    /// Lock; an error (e.g. EINVAL: the caller's priority is above a ceiling)
    /// is returned, never ignored.
    #[inline]
    pub(crate) fn lock(&self) -> Result<(), String> {
        // SAFETY: the mutex was initialised in new() and does not move.
        checked("pthread_mutex_lock", unsafe { libc::pthread_mutex_lock(self.m.get()) })
    }

    #[inline]
    pub(crate) fn unlock(&self) -> Result<(), String> {
        // SAFETY: as for lock; only the owner calls unlock.
        checked("pthread_mutex_unlock", unsafe { libc::pthread_mutex_unlock(self.m.get()) })
    }
}

/// A thread the system would not start, as an error naming `what` and,
/// for EAGAIN, the limit: "could not start the hashing thread: Resource
/// temporarily unavailable (RLIMIT_NPROC?)".
///
/// `std::thread::Builder::spawn` is pthread_create(3), which fails with
/// EAGAIN when the user's process limit (RLIMIT_NPROC, `ulimit -u`; it
/// counts threads), a cgroup's pids.max or the system's threads-max is
/// reached, and with EAGAIN or ENOMEM when no stack can be mapped.
/// `std::thread::spawn` and `Scope::spawn` panic on it: rtscope calls
/// `Builder` and turns the refusal into this, every time.
pub(crate) fn spawn_refused(what: &str, e: &std::io::Error) -> std::io::Error {
    // strerror's words, without std's " (os error 11)".
    let text = e.to_string();
    let words = text.split(" (os error").next().unwrap_or(&text);
    let hint = if e.raw_os_error() == Some(libc::EAGAIN) { " (RLIMIT_NPROC?)" } else { "" };
    std::io::Error::new(e.kind(), format!("could not start {what}: {words}{hint}"))
}

/// The go/no-go of threads started together, said once all are spawned:
/// each waits for it ([`Launch::go`]) before its work, so when one cannot
/// be started ([`spawn_refused`]) the ones started end without doing it
/// (and nothing waits for the one that never came).
#[derive(Default)]
pub(crate) struct Launch {
    decided: std::sync::Mutex<Option<bool>>,
    said: std::sync::Condvar,
}

impl Launch {
    pub(crate) fn decide(&self, go: bool) {
        *self.decided.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.said.notify_all();
    }
    /// Wait for the decision (it follows the last spawn at once).
    pub(crate) fn go(&self) -> bool {
        let mut d = self.decided.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *d {
                Some(go) => return go,
                None => d = self.said.wait(d).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// A pthread call's return code as a result naming the call (pthread
/// functions return the error number instead of setting errno).
#[inline]
fn checked(call: &str, rc: libc::c_int) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{call}: {}", Errno::from_raw(rc)))
    }
}

impl Drop for Mutex {
    fn drop(&mut self) {
        // SAFETY: initialised in new(); no thread holds or waits on it any more.
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_thread_names_the_limit() {
        let e = spawn_refused("thread 9 of 16", &std::io::Error::from_raw_os_error(libc::EAGAIN));
        assert_eq!(e.to_string(), "could not start thread 9 of 16: Resource temporarily unavailable (RLIMIT_NPROC?)");
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        let e = spawn_refused("the hashing thread", &std::io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(e.to_string(), "could not start the hashing thread: Cannot allocate memory");
    }

    #[test]
    fn every_protocol_locks_and_unlocks() {
        for p in [Protocol::None, Protocol::Inherit] {
            let m = Mutex::new(p).unwrap();
            m.lock().unwrap();
            m.unlock().unwrap();
        }
        // A ceiling mutex: the locker must be a real-time thread at or below
        // the ceiling (glibc refuses SCHED_OTHER callers with EINVAL).
        std::thread::spawn(|| {
            if crate::sys::sched::set_current_policy(crate::sys::sched::Policy::Fifo, 5).is_err() {
                return; // not permitted here (not root): nothing to lock with
            }
            let m = Mutex::new(Protocol::Protect(10)).unwrap();
            m.lock().unwrap();
            m.unlock().unwrap();
            let low = Mutex::new(Protocol::Protect(3)).unwrap();
            assert!(low.lock().unwrap_err().contains("EINVAL"), "priority 5 above a ceiling of 3 must be refused");
        })
        .join()
        .unwrap();
    }
}
