//! The `sem` probe: hand-off latency from a release to the blocked waiter
//! running, for five mechanisms, each with both threads on one CPU and on two.
//!
//! Variants (`MECHANISM/PLACEMENT`):
//! - `posix`: sem_post → sem_wait returns (unnamed, process-private sem_t).
//! - `sysv`: semop(+1) → semop(−1) returns (as svsematest), on a set whose
//!   key names this process ([`sysv_key`]): a SIGKILLed run's set is found
//!   and removed by the next run ([`remove_stale_sysv`]).
//! - `mutex`: pthread_mutex_unlock → the waiter's pthread_mutex_lock
//!   returns (as ptsematest): the sender holds the mutex, the receiver blocks
//!   on it.
//! - `condvar`: pthread_cond_signal → pthread_cond_wait returns (the waiter
//!   then also needs the mutex the sender releases right after signalling,
//!   as in any real use of a condition variable).
//! - `futex`: FUTEX_WAKE → FUTEX_WAIT returns: the kernel path under all of
//!   the above, without a library.
//!
//! `same-cpu`: both threads on the plan's first CPU, so every release
//! preempts the sender; `cross-cpu`: the sender on the plan's second CPU
//! (skipped when `-a` gives one CPU). The pacing, timestamps and shutdown
//! are `pair`'s.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::pair::{one_way, Events, Handoff, Placement};
use super::registry::ProbeInfo;
use super::{select, Probe, ProbeCtx, ThreadOutcome};
use crate::sys::futex::Event;
use crate::sys::pthread::Mutex;
use crate::sys::semaphore::Semaphore;
use crate::sys::time::now_ns;

pub(crate) struct SemProbe;

const VARIANTS: &[&str] = &[
    "posix/same-cpu",
    "posix/cross-cpu",
    "sysv/same-cpu",
    "sysv/cross-cpu",
    "mutex/same-cpu",
    "mutex/cross-cpu",
    "condvar/same-cpu",
    "condvar/cross-cpu",
    "futex/same-cpu",
    "futex/cross-cpu",
];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "sem",
    about: "hand-off release -> blocked waiter runs: posix, sysv, mutex, condvar, futex; same/cross CPU",
    variants: VARIANTS,
    traced: super::registry::Traced::Handoff,
    flags: &["--iterations", "--back-to-back", "--sender-priority"],
    ..ProbeInfo::PLAIN
};

impl Probe for SemProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let mut variants = select::chosen(ctx, "sem", VARIANTS);
        // With one CPU there is no cross-CPU pair (documented; not an error
        // unless asked for by name, which the plan cannot know here).
        if ctx.run.cpus.len() < 2 {
            variants.retain(|v| !v.ends_with("/cross-cpu"));
        }
        let share = select::share(ctx, variants.len());
        let mut out = Vec::new();
        for v in &variants {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            let (mech, placement) = v.split_once('/').expect("variant names have a placement");
            let place = if placement == "same-cpu" { Placement::same_cpu(ctx) } else { Placement::cross_cpu(ctx).expect("filtered above") };
            let h: Box<dyn Handoff> = match mech {
                "posix" => Box::new(PosixSem(Semaphore::new(0)?)),
                "sysv" => Box::new(SysvSem::new()?),
                "mutex" => Box::new(PthreadMutex(Mutex::plain())),
                "condvar" => Box::new(CondVar::new()),
                _ => Box::new(FutexHandoff(Event::new())),
            };
            ctx.board.reset(&format!("sem {v}"));
            out.push(one_way(ctx, v, h.as_ref(), place, Events::from_plan(ctx, share, 1), 0)?);
        }
        Ok(out)
    }
}

/// An unnamed POSIX semaphore, shared by the threads of this process.
struct PosixSem(Semaphore);

impl Handoff for PosixSem {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.0.post()
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.0.wait()?;
        Ok(now_ns())
    }
}

/// The System V key of the semaphore set of rtscope process `pid`:
/// [`SYSV_KEY_BASE`] | pid. An `IPC_PRIVATE` set cannot be found again by
/// anyone, so a SIGKILLed run's set would stay until reboot; with this key
/// a later run finds the sets whose process is gone and removes them
/// ([`remove_stale_sysv`]). Pids are below 2^22 (`pid_max`'s ceiling).
pub(crate) fn sysv_key(pid: u32) -> libc::key_t {
    SYSV_KEY_BASE | (pid & SYSV_PID_MASK) as libc::key_t
}

/// The high bits of rtscope's SysV keys (0x724 << 20: `r` then a tag).
pub(crate) const SYSV_KEY_BASE: libc::key_t = 0x7240_0000;
const SYSV_PID_MASK: u32 = (1 << 22) - 1;

/// The pid a key of [`sysv_key`] names, None for any other key.
pub(crate) fn sysv_key_pid(key: i64) -> Option<u32> {
    let key = libc::key_t::try_from(key).ok()?;
    (key & !(SYSV_PID_MASK as libc::key_t) == SYSV_KEY_BASE).then_some((key as u32) & SYSV_PID_MASK)
}

/// Removes the SysV semaphore sets of rtscope processes that are gone (a
/// SIGKILL during `sem:sysv`): keys of [`sysv_key`], created by this user,
/// one semaphore, whose maker is gone (no process of its pid started before
/// the set's last change: [`crate::sys::tracefs::maker_alive`]). Returns what it
/// removed, as `set KEY (pid PID)`. Reads `/proc/sysvipc/sem`; nothing
/// when it is missing.
pub(crate) fn remove_stale_sysv() -> Vec<String> {
    let Ok(table) = std::fs::read_to_string("/proc/sysvipc/sem") else { return Vec::new() };
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    for (key, semid, pid) in stale_sysv_sets(&table, me, std::process::id(), &crate::sys::tracefs::maker_alive) {
        // SAFETY: IPC_RMID takes no further argument; a wrong id fails with EINVAL/EIDRM.
        if unsafe { libc::semctl(semid, 0, libc::IPC_RMID) } == 0 {
            removed.push(format!("SysV semaphore set {key:#x} (pid {pid})"));
        }
    }
    removed
}

/// The (key, semid, pid) of the rows of `/proc/sysvipc/sem` that
/// [`remove_stale_sysv`] removes: rtscope's keys, creator uid `uid`, one
/// semaphore, pid not `own` and not `alive` (asked with the set's `ctime`:
/// when it was made or last set, while its maker ran).
fn stale_sysv_sets(table: &str, uid: u32, own: u32, alive: &dyn Fn(u32, Option<std::time::Duration>) -> bool) -> Vec<(i64, libc::c_int, u32)> {
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        // key semid perms nsems uid gid cuid cgid otime ctime
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(key), Some(semid), Some(nsems), Some(cuid)) = (
            f.first().and_then(|k| k.parse::<i64>().ok()),
            f.get(1).and_then(|k| k.parse::<libc::c_int>().ok()),
            f.get(3).and_then(|k| k.parse::<u32>().ok()),
            f.get(6).and_then(|k| k.parse::<u32>().ok()),
        ) else {
            continue;
        };
        let Some(pid) = sysv_key_pid(key) else { continue };
        let made = f.get(9).and_then(|t| t.parse::<u64>().ok()).map(std::time::Duration::from_secs);
        if nsems == 1 && cuid == uid && pid != own && !alive(pid, made) {
            out.push((key, semid, pid));
        }
    }
    out
}

/// This process holds its SysV set (one at a time: the key is the pid's).
static SYSV_HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A System V semaphore set of one under this process's key
/// ([`sysv_key`]), removed on drop.
struct SysvSem {
    id: libc::c_int,
}

impl SysvSem {
    fn new() -> anyhow::Result<SysvSem> {
        if SYSV_HELD.swap(true, Ordering::SeqCst) {
            anyhow::bail!("sem:sysv: this process already holds its SysV semaphore set");
        }
        match Self::create() {
            Ok(id) => Ok(SysvSem { id }),
            Err(e) => {
                SYSV_HELD.store(false, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    fn create() -> anyhow::Result<libc::c_int> {
        let key = sysv_key(std::process::id());
        for _ in 0..2 {
            // SAFETY: plain system call on integer arguments.
            let id = unsafe { libc::semget(key, 1, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
            match nix::errno::Errno::result(id) {
                Ok(id) => return Ok(id),
                // Our key exists while we hold no set: left by a killed
                // process that had our pid before. Not ours to use; remove it.
                Err(nix::errno::Errno::EEXIST) => {
                    // SAFETY: plain system call on integer arguments (no IPC_CREAT: only finds).
                    let old = unsafe { libc::semget(key, 0, 0) };
                    if old >= 0 {
                        // SAFETY: IPC_RMID takes no further argument.
                        unsafe { libc::semctl(old, 0, libc::IPC_RMID) };
                    }
                }
                Err(e) => anyhow::bail!("semget (key {key:#x}): {e}"),
            }
        }
        anyhow::bail!("semget (key {key:#x}): a SysV semaphore set with this key exists and could not be removed; see `ipcs -s`")
    }
    fn op(&self, delta: libc::c_short) -> nix::Result<()> {
        let mut b = libc::sembuf { sem_num: 0, sem_op: delta, sem_flg: 0 };
        loop {
            // SAFETY: `b` is one valid sembuf; `id` names a set of one.
            let rc = unsafe { libc::semop(self.id, &mut b, 1) };
            match nix::errno::Errno::result(rc) {
                Err(nix::errno::Errno::EINTR) => continue,
                r => return r.map(drop),
            }
        }
    }
}

impl Drop for SysvSem {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID takes no argument; `id` is ours.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
        SYSV_HELD.store(false, Ordering::SeqCst);
    }
}

impl Handoff for SysvSem {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.op(1).map_err(|e| format!("semop(+1): {e}"))
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.op(-1).map_err(|e| format!("semop(-1): {e}"))?;
        Ok(now_ns())
    }
}

/// A default (non-PI) pthread mutex.
struct PthreadMutex(Mutex);

impl Handoff for PthreadMutex {
    /// The sender takes the mutex so that the receiver blocks on it.
    fn arm(&self) {
        // A default mutex's lock by a thread that does not hold it cannot fail.
        let _ = self.0.lock();
    }
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.0.unlock()
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.0.lock()?;
        Ok(now_ns())
    }
    fn after_wait(&self) {
        // The receiver holds it (taken in wait).
        let _ = self.0.unlock();
    }
}

/// A condition variable with its mutex and predicate.
struct CondVar {
    m: Mutex,
    c: Box<UnsafeCell<libc::pthread_cond_t>>,
    // The predicate; read and written only with `m` held.
    ready: AtomicU32,
}

// SAFETY: as for `sys::pthread::Mutex`; the cond is only used through pthread_cond_*.
unsafe impl Sync for CondVar {}
// SAFETY: as for Sync: the boxed cond and mutex do not move.
unsafe impl Send for CondVar {}

impl CondVar {
    fn new() -> CondVar {
        CondVar { m: Mutex::plain(), c: Box::new(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER)), ready: AtomicU32::new(0) }
    }
}

impl Handoff for CondVar {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        self.m.lock()?;
        self.ready.store(1, Ordering::Relaxed);
        t0.store(now_ns(), Ordering::Release);
        // SAFETY: statically initialised cond, alive as long as self.
        unsafe { libc::pthread_cond_signal(self.c.get()) };
        self.m.unlock()
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.m.lock()?;
        while self.ready.load(Ordering::Relaxed) == 0 {
            // SAFETY: we hold `m`, the mutex this cond is always used with.
            unsafe { libc::pthread_cond_wait(self.c.get(), self.m.as_ptr()) };
        }
        let t = now_ns();
        self.ready.store(0, Ordering::Relaxed);
        self.m.unlock()?;
        Ok(t)
    }
}

/// FUTEX_WAKE → FUTEX_WAIT, through [`Event`].
pub(crate) struct FutexHandoff(pub Event);

impl Handoff for FutexHandoff {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.0.post().map_err(|e| format!("futex wake: {e}"))
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.0.wait();
        Ok(now_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysv_keys_name_their_pid_and_only_dead_rtscopes_sets_are_stale() {
        assert_eq!(sysv_key(1), 0x7240_0001);
        assert_eq!(sysv_key_pid(sysv_key(4_194_303) as i64), Some(4_194_303));
        assert_eq!(sysv_key_pid(0), None);
        assert_eq!(sysv_key_pid(0x7280_0001), None);
        let k = |pid: u32| sysv_key(pid) as i64;
        let table = format!(
            "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n\
             {} 1 600 1 0 0 0 0 0 0\n\
             {} 2 600 1 0 0 0 0 0 1700000000\n\
             {} 3 600 1 0 0 0 0 0 0\n\
             {} 4 600 1 1000 1000 1000 1000 0 0\n\
             {} 5 600 3 0 0 0 0 0 0\n\
             12345 6 600 1 0 0 0 0 0 0\n",
            k(100), // dead
            k(200), // alive
            k(300), // our own
            k(400), // another user's
            k(500), // not a set of one
        );
        // The maker is asked with the set's ctime (the last field).
        let stale = stale_sysv_sets(&table, 0, 300, &|pid, made| pid == 200 && made == Some(std::time::Duration::from_secs(1_700_000_000)));
        assert_eq!(stale, vec![(k(100), 1, 100)]);
    }
}
