//! `<sys/wait.h>` and `<signal.h>` for load processes: reap a child with its
//! resource usage, peek at it without reaping, signal a process group.
//! See wait4(2), waitid(2), killpg(3).

use nix::errno::Errno;

/// What the kernel accounted to a reaped child (and the children it reaped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Usage {
    pub(crate) user_s: f64,
    pub(crate) system_s: f64,
    pub(crate) voluntary_ctxt_switches: u64,
    pub(crate) involuntary_ctxt_switches: u64,
    pub(crate) minor_faults: u64,
    pub(crate) major_faults: u64,
    /// Blocks (512 bytes) the child wrote to storage.
    pub(crate) blocks_out: u64,
    pub(crate) blocks_in: u64,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

fn tv_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Blocking wait4(pid): reap the child and return how it ended and its usage.
pub(crate) fn wait4(pid: i32) -> nix::Result<(Exit, Usage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = loop {
        // SAFETY: `status` and `ru` are valid, writable and live for the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == -1 && Errno::last() == Errno::EINTR {
            continue;
        }
        break rc;
    };
    Errno::result(rc)?;
    let exit = if libc::WIFSIGNALED(status) { Exit::Signal(libc::WTERMSIG(status)) } else { Exit::Code(libc::WEXITSTATUS(status)) };
    let usage = Usage {
        user_s: tv_s(ru.ru_utime),
        system_s: tv_s(ru.ru_stime),
        voluntary_ctxt_switches: ru.ru_nvcsw as u64,
        involuntary_ctxt_switches: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        blocks_out: ru.ru_oublock as u64,
        blocks_in: ru.ru_inblock as u64,
    };
    Ok((exit, usage))
}

/// True when child `pid` has exited (it stays a zombie: not reaped, so its
/// process-group id stays reserved until [`wait4`]).
pub(crate) fn has_exited(pid: i32) -> nix::Result<bool> {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid and writable; WNOWAIT leaves the child waitable.
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    Errno::result(rc)?;
    // SAFETY: waitid filled `info` (or left it zeroed when nothing exited).
    Ok(unsafe { info.si_pid() } == pid)
}

/// Send `signal` to every process in process group `pgid`. ESRCH (the group
/// is empty) is not an error.
pub(crate) fn kill_group(pgid: i32, signal: libc::c_int) -> nix::Result<()> {
    // SAFETY: killpg takes two integers; no memory is passed.
    let rc = unsafe { libc::killpg(pgid, signal) };
    match Errno::result(rc) {
        Err(Errno::ESRCH) => Ok(()),
        r => r.map(drop),
    }
}

/// Send `signal` to one process. ESRCH (already gone) is not an error.
pub(crate) fn kill(pid: i32, signal: libc::c_int) -> nix::Result<()> {
    // SAFETY: kill takes two integers; no memory is passed.
    let rc = unsafe { libc::kill(pid, signal) };
    match Errno::result(rc) {
        Err(Errno::ESRCH) => Ok(()),
        r => r.map(drop),
    }
}
