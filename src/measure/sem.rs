//! The `sem` probe: hand-off latency from a release to the blocked waiter
//! running, for five mechanisms, each with both threads on one CPU and on two.
//!
//! Variants (`MECHANISM/PLACEMENT`):
//! - `posix`: sem_post → sem_wait returns (unnamed, process-private sem_t).
//! - `sysv`: semop(+1) → semop(−1) returns (as svsematest).
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
use super::{select, Probe, ProbeCtx, ThreadOutcome};
use crate::sys::futex::Event;
use crate::sys::time::now_ns;

pub struct SemProbe;

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

impl Probe for SemProbe {
    fn name(&self) -> &'static str {
        "sem"
    }
    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
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
            let place = if placement == "same-cpu" {
                Placement::same_cpu(ctx)
            } else {
                Placement::cross_cpu(ctx).expect("filtered above")
            };
            let h: Box<dyn Handoff> = match mech {
                "posix" => Box::new(PosixSem::new()?),
                "sysv" => Box::new(SysvSem::new()?),
                "mutex" => Box::new(PthreadMutex::new()),
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
struct PosixSem {
    sem: Box<UnsafeCell<libc::sem_t>>,
}

// SAFETY: a sem_t is made to be used from several threads at once; it is
// only ever accessed through the sem_* calls, never moved (boxed).
unsafe impl Sync for PosixSem {}
// SAFETY: as for Sync: the boxed sem_t does not move and any thread may post or wait on it.
unsafe impl Send for PosixSem {}

impl PosixSem {
    fn new() -> anyhow::Result<PosixSem> {
        // SAFETY: an all-zero sem_t is valid storage for sem_init to fill.
        let sem = Box::new(UnsafeCell::new(unsafe { std::mem::zeroed::<libc::sem_t>() }));
        // SAFETY: `sem` points to writable storage that lives as long as self.
        let rc = unsafe { libc::sem_init(sem.get(), 0, 0) };
        nix::errno::Errno::result(rc).map_err(|e| anyhow::anyhow!("sem_init: {e}"))?;
        Ok(PosixSem { sem })
    }
}

impl Drop for PosixSem {
    fn drop(&mut self) {
        // SAFETY: initialised in new(); no thread waits on it any more.
        unsafe { libc::sem_destroy(self.sem.get()) };
    }
}

impl Handoff for PosixSem {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        // SAFETY: `sem` was initialised by sem_init.
        let rc = unsafe { libc::sem_post(self.sem.get()) };
        nix::errno::Errno::result(rc).map(drop).map_err(|e| format!("sem_post: {e}"))
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        loop {
            // SAFETY: `sem` was initialised by sem_init.
            let rc = unsafe { libc::sem_wait(self.sem.get()) };
            let t = now_ns();
            match nix::errno::Errno::result(rc) {
                Ok(_) => return Ok(t),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(format!("sem_wait: {e}")),
            }
        }
    }
}

/// A private System V semaphore set of one, removed on drop.
struct SysvSem {
    id: libc::c_int,
}

impl SysvSem {
    fn new() -> anyhow::Result<SysvSem> {
        // SAFETY: plain system call on integer arguments.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
        let id = nix::errno::Errno::result(id).map_err(|e| anyhow::anyhow!("semget: {e}"))?;
        Ok(SysvSem { id })
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
struct PthreadMutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex exists to be shared between threads; it is only
// touched through pthread_mutex_* and never moved (boxed).
unsafe impl Sync for PthreadMutex {}
// SAFETY: the boxed mutex does not move; it is unlocked by the thread that locked it.
unsafe impl Send for PthreadMutex {}

impl PthreadMutex {
    fn new() -> PthreadMutex {
        PthreadMutex { m: Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)) }
    }
    fn lock(&self) {
        // SAFETY: statically initialised mutex, alive as long as self.
        unsafe { libc::pthread_mutex_lock(self.m.get()) };
    }
    fn unlock(&self) {
        // SAFETY: called only by the thread that holds the lock.
        unsafe { libc::pthread_mutex_unlock(self.m.get()) };
    }
}

impl Handoff for PthreadMutex {
    /// The sender takes the mutex so that the receiver blocks on it.
    fn arm(&self) {
        self.lock();
    }
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.unlock();
        Ok(())
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.lock();
        Ok(now_ns())
    }
    fn after_wait(&self) {
        self.unlock();
    }
}

/// A condition variable with its mutex and predicate.
struct CondVar {
    m: PthreadMutex,
    c: Box<UnsafeCell<libc::pthread_cond_t>>,
    // The predicate; read and written only with `m` held.
    ready: AtomicU32,
}

// SAFETY: as for PthreadMutex; the cond is only used through pthread_cond_*.
unsafe impl Sync for CondVar {}
// SAFETY: as for Sync: the boxed cond and mutex do not move.
unsafe impl Send for CondVar {}

impl CondVar {
    fn new() -> CondVar {
        CondVar { m: PthreadMutex::new(), c: Box::new(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER)), ready: AtomicU32::new(0) }
    }
}

impl Handoff for CondVar {
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        self.m.lock();
        self.ready.store(1, Ordering::Relaxed);
        t0.store(now_ns(), Ordering::Release);
        // SAFETY: statically initialised cond, alive as long as self.
        unsafe { libc::pthread_cond_signal(self.c.get()) };
        self.m.unlock();
        Ok(())
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        self.m.lock();
        while self.ready.load(Ordering::Relaxed) == 0 {
            // SAFETY: we hold `m`, the mutex this cond is always used with.
            unsafe { libc::pthread_cond_wait(self.c.get(), self.m.m.get()) };
        }
        let t = now_ns();
        self.ready.store(0, Ordering::Relaxed);
        self.m.unlock();
        Ok(t)
    }
}

/// FUTEX_WAKE → FUTEX_WAIT, through [`Event`].
pub struct FutexHandoff(pub Event);

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
