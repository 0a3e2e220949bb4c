//! `<sys/prctl.h>`: the parent-death signal, so a load process learns at
//! once when rtscope dies (even by SIGKILL). See prctl(2), PR_SET_PDEATHSIG.
//!
//! Caveat from the man page that shapes the runner: the signal is sent when
//! the *thread* that forked the child exits, not the whole process. rtscope
//! therefore starts every load from its main (orchestrating) thread, which
//! lives until the run ends.

use nix::errno::Errno;

/// Ask the kernel to send `signal` to the calling process when its parent
/// thread dies. Async-signal-safe: may be called between fork and exec.
pub(crate) fn set_parent_death_signal(signal: libc::c_int) -> nix::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes the signal number as its only argument;
    // no pointer is passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) };
    Errno::result(rc).map(drop)
}

/// Set the calling thread's timer slack (PR_SET_TIMERSLACK): how late the
/// kernel may fire its sleeps to batch wake-ups (default 50 µs).
pub(crate) fn set_timer_slack_ns(ns: u64) -> nix::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes the slack in ns as its only argument.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    Errno::result(rc).map(drop)
}
