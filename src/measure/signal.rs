//! The `signal` probe: a thread-directed real-time signal → the receiver's
//! sigwaitinfo(2) returns (sigwaittest's measurement).
//!
//! Variants: `pthread_kill` (pthread_kill(3)) and `sigqueue`
//! (pthread_sigqueue(3): rt_tgsigqueueinfo, the queued, value-carrying
//! signal aimed at one thread). Both target the receiver thread, never the
//! process: a process-directed signal could be delivered to another rtscope
//! thread that does not block it. The receiver blocks the signal in its own
//! mask before the start barrier. Pacing and placement as `pipe`.
//!
//! Variant `chain` (signaltest's method, `--chain N` threads, full round and
//! per hop) is in [`super::chain`].

use std::sync::atomic::{AtomicU64, Ordering};

use super::pair::{one_way, Channel, Events, Handoff, Placement};
use super::registry::ProbeInfo;
use super::{select, Probe, ProbeCtx, ThreadOutcome};
use crate::sys::time::now_ns;

pub(crate) struct SignalProbe;

const VARIANTS: &[&str] = &["pthread_kill", "sigqueue", "chain"];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "signal",
    about: "pthread_kill / pthread_sigqueue -> sigwaitinfo returns; chain: a signal passed along --chain threads (signaltest), full round and per hop",
    variants: VARIANTS,
    traced: super::registry::Traced::Handoff,
    flags: &["--chain", "--iterations", "--back-to-back", "--sender-priority"],
    ..ProbeInfo::PLAIN
};

impl Probe for SignalProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let variants = select::chosen(ctx, "signal", VARIANTS);
        let share = select::share(ctx, variants.len());
        let mut out = Vec::new();
        for v in &variants {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            ctx.board.reset(&format!("signal {v}"));
            if v == "chain" {
                out.extend(super::chain::run(ctx, share)?);
                continue;
            }
            let h = SignalHandoff { queue: v == "sigqueue", target: AtomicU64::new(0), go: SignalGo { sender: AtomicU64::new(0) } };
            out.push(one_way(ctx, v, &h, Placement::from_plan(ctx), Events::from_plan(ctx, share, 1), 0)?);
        }
        Ok(out)
    }
}

/// The real-time signal used: SIGRTMIN + 4 (above glibc's reserved ones,
/// which SIGRTMIN() already skips).
pub(super) fn signo() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

fn sigset() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid storage; the signal number is valid.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo());
    }
    set
}

struct SignalHandoff {
    queue: bool,
    /// The receiver's pthread_t, published before the start barrier.
    target: AtomicU64,
    /// `go`: the same signal to the sender (sigwaittest's answer).
    go: SignalGo,
}

/// The `go` channel of sigwaittest's cycle: the receiver signals the sender
/// thread, which waits for it with sigwaitinfo.
struct SignalGo {
    /// The sender's pthread_t, published before the start barrier.
    sender: AtomicU64,
}

impl Channel for SignalGo {
    fn send(&self, _: &[u8]) -> Result<(), String> {
        let sender = self.sender.load(Ordering::Acquire) as libc::pthread_t;
        if sender == 0 {
            return Err("signal: the sender thread did not start".into());
        }
        // SAFETY: the sender is alive while the receiver runs: it ends only
        // after a release the receiver takes (pair's two-step cycle).
        let rc = unsafe { libc::pthread_kill(sender, signo()) };
        if rc != 0 {
            return Err(format!("pthread_kill: {}", nix::errno::Errno::from_raw(rc)));
        }
        Ok(())
    }
    fn recv(&self, _: &mut [u8]) -> Result<(), String> {
        wait_signal().map(drop)
    }
}

/// Block the probe's signal in the calling thread and return its pthread_t.
pub(super) fn block_signal() -> Result<u64, String> {
    let set = sigset();
    // SAFETY: `set` is an initialised sigset; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(format!("pthread_sigmask: {}", nix::errno::Errno::from_raw(rc)));
    }
    // SAFETY: pthread_self has no preconditions.
    Ok(unsafe { libc::pthread_self() } as u64)
}

/// sigwaitinfo(2) for the probe's signal; the clock read right after it.
pub(super) fn wait_signal() -> Result<u64, String> {
    let set = sigset();
    loop {
        // SAFETY: `set` is initialised; a null info pointer is allowed.
        let rc = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
        let t = now_ns();
        match nix::errno::Errno::result(rc) {
            Ok(_) => return Ok(t),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("sigwaitinfo: {e}")),
        }
    }
}

impl Handoff for SignalHandoff {
    fn receiver_setup(&self) -> Result<(), String> {
        self.target.store(block_signal()?, Ordering::Release);
        Ok(())
    }
    fn sender_setup(&self) -> Result<(), String> {
        self.go.sender.store(block_signal()?, Ordering::Release);
        Ok(())
    }
    fn go(&self) -> Option<&dyn Channel> {
        Some(&self.go)
    }
    fn release(&self, t0: &AtomicU64, _: &[u8]) -> Result<(), String> {
        let target = self.target.load(Ordering::Acquire) as libc::pthread_t;
        let rc = if self.queue {
            let value = libc::sigval { sival_ptr: std::ptr::null_mut() };
            t0.store(now_ns(), Ordering::Release);
            // SAFETY: `target` is the receiver, alive until it has taken
            // every signal sent (the sender stops first).
            unsafe { libc::pthread_sigqueue(target, signo(), value) }
        } else {
            t0.store(now_ns(), Ordering::Release);
            // SAFETY: as above.
            unsafe { libc::pthread_kill(target, signo()) }
        };
        if rc != 0 {
            return Err(format!("{}: {}", if self.queue { "pthread_sigqueue" } else { "pthread_kill" }, nix::errno::Errno::from_raw(rc)));
        }
        Ok(())
    }
    fn wait(&self, _: &mut [u8]) -> Result<u64, String> {
        wait_signal()
    }
}
