//! `<linux/futex.h>`: the raw futex calls, and [`Event`], a one-shot wake-up
//! built on them. See futex(2).
//!
//! rtscope's two-thread probes (`measure::pair`, `switch`) need to hand the
//! CPU from one thread to another with the least possible machinery in
//! between, so that what is measured is the kernel's wake-up path and not a
//! library's. A futex word is that least: `post` is one atomic store plus one
//! FUTEX_WAKE, `wait` is one atomic swap plus FUTEX_WAIT while nothing was
//! posted. Both use the process-private variants (no shared-memory lookup).

use std::sync::atomic::{AtomicU32, Ordering};

use nix::errno::Errno;

/// FUTEX_WAIT_PRIVATE: sleep while `*word == expected`. Returns on a wake,
/// on a signal (EINTR) or at once when the word already differs (EAGAIN);
/// callers re-check the word in a loop, so those are not errors here.
#[inline]
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a valid, aligned u32 that outlives the call; a null
    // timeout means no timeout; the extra arguments are unused by FUTEX_WAIT.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, expected, std::ptr::null::<libc::timespec>()) };
}

/// FUTEX_WAKE_PRIVATE: wake up to `n` threads sleeping on `word`.
#[inline]
pub(crate) fn wake(word: &AtomicU32, n: i32) -> nix::Result<()> {
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only reads its address.
    let rc = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, n) };
    Errno::result(rc).map(drop)
}

/// A binary event for strictly alternating threads: one thread `post`s, the
/// other `wait`s until it has been posted and consumes it.
#[derive(Debug, Default)]
pub(crate) struct Event {
    word: AtomicU32,
}

impl Event {
    pub(crate) const fn new() -> Event {
        Event { word: AtomicU32::new(0) }
    }

    /// Mark the event and wake its waiter (if any).
    #[inline]
    pub(crate) fn post(&self) -> nix::Result<()> {
        self.word.store(1, Ordering::Release);
        wake(&self.word, 1)
    }

    /// Block until the event is posted, then consume it.
    #[inline]
    pub(crate) fn wait(&self) {
        while self.word.swap(0, Ordering::Acquire) == 0 {
            wait(&self.word, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_hands_off_between_threads() {
        let ping = Event::new();
        let pong = Event::new();
        let n = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..1000 {
                    ping.wait();
                    n.fetch_add(1, Ordering::Relaxed);
                    pong.post().unwrap();
                }
            });
            for i in 0..1000 {
                ping.post().unwrap();
                pong.wait();
                assert_eq!(n.load(Ordering::Relaxed), i + 1);
            }
        });
    }
}
