//! `<sched.h>`: scheduling policy, priority and CPU affinity of the calling
//! thread. See sched_setscheduler(2), sched_setaffinity(2), sched_getcpu(3).

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The scheduling policies a measuring thread can run under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Fifo,
    RoundRobin,
    Other,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::RoundRobin => "rr",
            Policy::Other => "other",
        }
    }
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::RoundRobin => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
        }
    }
}

/// Would this process get `policy` at `priority`? Tried for real on a
/// throwaway thread (so capabilities, RLIMIT_RTPRIO and cgroup limits all
/// answer), which exits at once.
pub fn policy_permitted(policy: Policy, priority: u8) -> nix::Result<()> {
    std::thread::spawn(move || set_current_policy(policy, priority)).join().unwrap_or(Err(nix::errno::Errno::EINVAL))
}

/// Set the calling thread's policy and priority (priority is ignored, i.e.
/// 0, for SCHED_OTHER).
pub fn set_current_policy(policy: Policy, priority: u8) -> nix::Result<()> {
    let prio = if policy == Policy::Other { 0 } else { priority as libc::c_int };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 names the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, policy.raw(), &param) };
    nix::errno::Errno::result(rc).map(drop)
}

/// Set the scheduling policy of another task (a kernel thread, e.g. the
/// timerlat tracer's `timerlat/N`), as `chrt -p`.
pub fn set_policy_of(pid: i32, policy: Policy, priority: u8) -> nix::Result<()> {
    let prio = if policy == Policy::Other { 0 } else { priority as libc::c_int };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: `param` is a valid sched_param; a bad pid is an ESRCH, not UB.
    let rc = unsafe { libc::sched_setscheduler(pid, policy.raw(), &param) };
    nix::errno::Errno::result(rc).map(drop)
}

/// Pin the calling thread to the given CPUs.
pub fn set_current_affinity(cpus: &[usize]) -> nix::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// Renames the calling thread (its `comm`, what ps, top and tracefs show; at most 15
/// bytes are kept). A failure leaves the old name, which is harmless.
pub fn set_thread_name(name: &str) {
    if let Ok(c) = std::ffi::CString::new(name) {
        let _ = nix::sys::prctl::set_name(&c);
    }
}

/// The CPU the calling thread runs on now (vDSO getcpu; no system call).
#[inline]
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// CPUs online now, from /sys/devices/system/cpu/online (falls back to
/// 0..available_parallelism).
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| crate::units::parse_cpu_list(s.trim()).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            (0..n).collect()
        })
}
