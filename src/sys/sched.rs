//! `<sched.h>`: scheduling policy, priority and CPU affinity of the calling
//! thread. See sched_setscheduler(2), sched_setattr(2) (SCHED_DEADLINE),
//! sched_setaffinity(2), sched_getcpu(3).

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The scheduling policies a measuring thread can run under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    Fifo,
    RoundRobin,
    Other,
    /// SCHED_DEADLINE (EDF with CBS reservations); its runtime, deadline and
    /// period are a [`DlParams`], set with [`set_current_deadline`].
    Deadline,
}

impl Policy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::RoundRobin => "rr",
            Policy::Other => "other",
            Policy::Deadline => "deadline",
        }
    }
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::RoundRobin => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
            Policy::Deadline => SCHED_DEADLINE,
        }
    }
}

/// Would this process get `policy` at `priority`? Tried for real on a
/// throwaway thread (so capabilities, RLIMIT_RTPRIO and cgroup limits all
/// answer), which exits at once. A thread that cannot be made
/// (RLIMIT_NPROC reached, no memory) is that error (EAGAIN, as
/// `pthread_create`'s), never a panic.
pub(crate) fn policy_permitted(policy: Policy, priority: u8) -> nix::Result<()> {
    match std::thread::Builder::new().name("rtscope-policy".into()).stack_size(64 * 1024).spawn(move || set_current_policy(policy, priority)) {
        Ok(t) => t.join().unwrap_or(Err(nix::errno::Errno::EINVAL)),
        Err(e) => Err(nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN))),
    }
}

/// Set the calling thread's policy and priority (priority is ignored, i.e.
/// 0, for SCHED_OTHER). SCHED_DEADLINE needs its reservation: EINVAL here,
/// use [`set_current_deadline`].
pub(crate) fn set_current_policy(policy: Policy, priority: u8) -> nix::Result<()> {
    if policy == Policy::Deadline {
        return Err(nix::errno::Errno::EINVAL);
    }
    let prio = if policy == Policy::Other { 0 } else { priority as libc::c_int };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 names the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, policy.raw(), &param) };
    nix::errno::Errno::result(rc).map(drop)
}

/// Set the scheduling policy of another task (a kernel thread, e.g. the
/// timerlat tracer's `timerlat/N`), as `chrt -p`.
pub(crate) fn set_policy_of(pid: i32, policy: Policy, priority: u8) -> nix::Result<()> {
    if policy == Policy::Deadline {
        return Err(nix::errno::Errno::EINVAL);
    }
    let prio = if policy == Policy::Other { 0 } else { priority as libc::c_int };
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: `param` is a valid sched_param; a bad pid is an ESRCH, not UB.
    let rc = unsafe { libc::sched_setscheduler(pid, policy.raw(), &param) };
    nix::errno::Errno::result(rc).map(drop)
}

/// Pin the calling thread to the given CPUs.
pub(crate) fn set_current_affinity(cpus: &[usize]) -> nix::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// Pin the thread `tid` (a kernel thread id of this process, from
/// [`current_tid`]) to the given CPUs, as `taskset -p`.
pub(crate) fn set_affinity_of(tid: i32, cpus: &[usize]) -> nix::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(tid), &set)
}

/// The CPUs the calling thread may run on (its affinity mask).
pub(crate) fn current_affinity() -> nix::Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(Pid::from_raw(0))?;
    Ok((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
}

/// The calling thread's kernel thread id (gettid(2)).
pub(crate) fn current_tid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Renames the calling thread (its `comm`, what ps, top and tracefs show; at most 15
/// bytes are kept). A failure leaves the old name, which is harmless.
pub(crate) fn set_thread_name(name: &str) {
    if let Ok(c) = std::ffi::CString::new(name) {
        let _ = nix::sys::prctl::set_name(&c);
    }
}

/// The CPU the calling thread runs on now (vDSO getcpu; no system call).
#[inline]
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// CPUs online now, from /sys/devices/system/cpu/online (falls back to
/// 0..available_parallelism).
pub(crate) fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| crate::units::parse_cpu_list(s.trim()).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            (0..n).collect()
        })
}

/// `SCHED_DEADLINE` (include/uapi/linux/sched.h); not in every libc.
pub(crate) const SCHED_DEADLINE: libc::c_int = 6;
/// `SCHED_FLAG_DL_OVERRUN`: the kernel sends SIGXCPU when the task uses up its
/// runtime before the period ends.
pub(crate) const SCHED_FLAG_DL_OVERRUN: u64 = 0x04;
/// Smallest runtime the kernel accepts (2^10 ns: `__checkparam_dl`).
pub(crate) const DL_MIN_NS: u64 = 1 << 10;

/// A SCHED_DEADLINE reservation: `runtime` of CPU time within `deadline` of
/// the start of every `period` (the kernel's rule: 1024 ns <= runtime <=
/// deadline <= period).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DlParams {
    pub(crate) runtime_ns: u64,
    pub(crate) deadline_ns: u64,
    pub(crate) period_ns: u64,
}

/// `struct sched_attr` as of SCHED_ATTR_SIZE_VER0 (48 bytes), see sched_setattr(2).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Make the calling thread a SCHED_DEADLINE task with reservation `p`;
/// with `overrun_signal`, the kernel sends SIGXCPU on each runtime overrun
/// (install a handler first: the default action ends the process).
///
/// Errors as the kernel gives them: EBUSY, the admission test failed (the
/// deadline bandwidth, `sched_rt_runtime_us / sched_rt_period_us` of each
/// CPU of the root domain, is used up); EPERM, no CAP_SYS_NICE or the
/// thread's affinity does not span its root domain; EINVAL, parameters
/// outside the kernel's rule or its `sched_deadline_period_{min,max}_us`.
pub(crate) fn set_current_deadline(p: DlParams, overrun_signal: bool) -> nix::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE as u32,
        sched_flags: if overrun_signal { SCHED_FLAG_DL_OVERRUN } else { 0 },
        sched_runtime: p.runtime_ns,
        sched_deadline: p.deadline_ns,
        sched_period: p.period_ns,
        ..SchedAttr::default()
    };
    // SAFETY: pid 0 names the calling thread; `attr` is a valid, fully
    // initialised sched_attr whose `size` field says how much the kernel reads.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
    nix::errno::Errno::result(rc).map(drop)
}

/// Would `threads` SCHED_DEADLINE tasks with reservation `p` be admitted
/// together? Tried for real (so the kernel's admission test, capabilities
/// and root-domain rules all answer) on throwaway threads that hold their
/// reservations at once, then return to SCHED_OTHER and exit. Threads that
/// cannot be made are EAGAIN, as in [`policy_permitted`].
pub(crate) fn deadline_admitted(p: DlParams, threads: usize) -> nix::Result<()> {
    let n = threads.max(1);
    let barrier = std::sync::Barrier::new(n);
    // The barrier counts on all n: none tries before all exist.
    let launch = crate::sys::pthread::Launch::default();
    let cpus = online_cpus();
    std::thread::scope(|s| {
        let mut hs = Vec::with_capacity(n);
        for _ in 0..n {
            let spawned = std::thread::Builder::new().name("rtscope-dl".into()).stack_size(64 * 1024).spawn_scoped(s, || {
                if !launch.go() {
                    return Ok(());
                }
                let _ = set_current_affinity(&cpus);
                let r = set_current_deadline(p, false);
                barrier.wait();
                if r.is_ok() {
                    let _ = set_current_policy(Policy::Other, 0);
                }
                r
            });
            match spawned {
                Ok(h) => hs.push(h),
                // As policy_permitted: a thread that cannot be made is EAGAIN.
                Err(e) => {
                    launch.decide(false);
                    return Err(nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EAGAIN)));
                }
            }
        }
        launch.decide(true);
        hs.into_iter().map(|h| h.join().unwrap_or(Err(nix::errno::Errno::EINVAL))).find(|r| r.is_err()).unwrap_or(Ok(()))
    })
}

/// Give up the rest of this period's runtime (SCHED_DEADLINE: sleep until
/// the next period's replenishment; sched_yield(2)).
#[inline]
pub(crate) fn yield_now() {
    // SAFETY: sched_yield takes no arguments.
    unsafe { libc::sched_yield() };
}
