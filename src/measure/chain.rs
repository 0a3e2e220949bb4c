//! `signal:chain`: a real-time signal passed along a chain of threads
//! (signaltest's method), the `signal` probe's third variant.
//!
//! `--chain N` threads (default 2, signaltest's `-t`), all SCHED_FIFO at
//! `-p` as signaltest's, on the plan's CPUs in turn (`-a C` puts them all on
//! C, as signaltest `-a C`). Each blocks the signal and waits for it with
//! sigwaitinfo(2); on receiving it, it stamps the clock and passes it on
//! with pthread_kill(3) to the next; the last passes it back to the first.
//!
//! ```text
//!  t0: stamp send_0, kill t1 ── t1: wake (stamp), stamp send_1, kill t2 ── … ── t(N-1): kill t0 ── t0: wake (stamp)
//!      |<------------------------------- round ---------------------------------------------------->|
//!      |<-- hop 1 -->|                                                            |<-- hop N (to t0) -->|
//! ```
//!
//! Two entries: variant `chain`, the full round (t0's wake − t0's send,
//! recorded by t0), and `chain/hop`, every hop (the receiver's wake − its
//! sender's stamp just before pthread_kill; N hops per round, recorded by
//! the receiving thread). So a round is the sum of its hops plus the
//! stamping between them: round > one hop. Rounds start every `-i` (or back
//! to back with `--back-to-back`, as signaltest) until the variant's share of
//! `-D` or `--iterations` rounds.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::recorder::{tail_capacity, Recorder};
use super::signal::{block_signal, signo, wait_signal};
use super::{select, spawn_measuring_with, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::time::{now_ns, sleep_until_ns};

/// signaltest's default thread count.
pub(crate) const DEFAULT_CHAIN: usize = 2;
/// Largest `--chain`.
pub(crate) const MAX_CHAIN: usize = 64;

fn kill(t: u64) -> Result<(), String> {
    // SAFETY: every thread of the chain stays alive, waiting for the signal,
    // until the first has ended the chain (see `run`).
    let rc = unsafe { libc::pthread_kill(t as libc::pthread_t, signo()) };
    if rc != 0 {
        return Err(format!("pthread_kill: {}", nix::errno::Errno::from_raw(rc)));
    }
    Ok(())
}

/// What the chain's threads share.
struct Chain {
    /// Each thread's id, to pass the signal on to it.
    tids: Vec<AtomicU64>,
    /// The stamp of the last send (before pthread_kill), read by the receiver.
    sent: AtomicU64,
    /// Set by the first thread to end the chain.
    quit: AtomicBool,
    /// The first thread's start: sample times count from it.
    origin: AtomicU64,
}

impl Chain {
    /// A thread after the first: records each hop to it and passes the
    /// signal on to `to`, until the first thread ends the chain; the error
    /// that ended it early, if any.
    fn relay(&self, to: u64, rec: &mut Recorder) -> Option<String> {
        loop {
            let t = match wait_signal() {
                Ok(t) => t,
                Err(e) => return Some(e),
            };
            if self.quit.load(Ordering::Acquire) {
                return None;
            }
            rec.record(t.saturating_sub(self.sent.load(Ordering::Acquire)), t.saturating_sub(self.origin.load(Ordering::Acquire)), rec.samples());
            self.sent.store(now_ns(), Ordering::Release);
            if let Err(e) = kill(to) {
                return Some(e);
            }
        }
    }
}

/// Run the chain for `share` ns: the `chain` (rounds) and `chain/hop` outcomes.
pub(crate) fn run(ctx: &ProbeCtx<'_>, share: u64) -> anyhow::Result<Vec<ThreadOutcome>> {
    let n = ctx.run.probe.chain.max(2);
    let specs = specs(ctx, n);
    let chain =
        Chain { tids: (0..n).map(|_| AtomicU64::new(0)).collect(), sent: AtomicU64::new(0), quit: AtomicBool::new(false), origin: AtomicU64::new(now_ns()) };
    let Chain { tids, sent, quit, origin } = &chain;
    let interval = ctx.run.interval_ns;
    let back_to_back = ctx.run.probe.back_to_back;
    let max = select::max_events(ctx);
    // The first thread hands back its round-trip recorder beside its hops.
    let measured = spawn_measuring_with(ctx, &specs, Some("chain/hop".into()), interval, |spec, rec, stop, gate| {
        let i = spec.index;
        match block_signal() {
            Ok(t) => tids[i].store(t, Ordering::Release),
            Err(e) => {
                gate.wait();
                return (Some(e), None);
            }
        }
        let next = if i + 1 == n { 0 } else { i + 1 };
        if i > 0 {
            gate.wait();
            return (chain.relay(tids[next].load(Ordering::Acquire), rec), None);
        }
        // The first thread: starts each round and records it.
        let mut round = Recorder::with_tail(0, share, ctx.run.worst_k, tail_capacity(share, interval.max(1)));
        gate.wait();
        let to = tids[next].load(Ordering::Acquire);
        let start = now_ns();
        origin.store(start, Ordering::Release);
        let end = start + share;
        let mut due = start + interval;
        let mut err = None;
        let mut seq = 0u64;
        while seq < max && !stop.load(Ordering::Relaxed) {
            if !back_to_back {
                if due > end {
                    break;
                }
                if let Err(e) = sleep_until_ns(due) {
                    err = Some(format!("clock_nanosleep failed: {e}"));
                    break;
                }
            } else if now_ns() >= end {
                break;
            }
            let t0 = now_ns();
            sent.store(t0, Ordering::Release);
            if let Err(e) = kill(to) {
                err = Some(e);
                break;
            }
            let t1 = match wait_signal() {
                Ok(t) => t,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            };
            rec.record(t1.saturating_sub(sent.load(Ordering::Acquire)), t1 - start, seq);
            round.record(t1 - t0, t1 - start, seq);
            seq += 1;
            due = (due + interval).max(now_ns());
        }
        // End the chain: every other thread waits in sigwaitinfo now.
        quit.store(true, Ordering::Release);
        for t in tids.iter().skip(1) {
            let _ = kill(t.load(Ordering::Acquire));
        }
        (err, Some(round))
    })?;
    Ok(outcomes(measured, n, interval))
}

/// The chain's `n` threads, all at `-p` under `--policy`, on the plan's
/// CPUs in turn.
fn specs(ctx: &ProbeCtx<'_>, n: usize) -> Vec<ThreadSpec> {
    (0..n)
        .map(|index| ThreadSpec { index, cpu: Some(ctx.run.cpus[index % ctx.run.cpus.len()]), policy: ctx.run.policy, priority: ctx.run.priority, dl: None })
        .collect()
}

/// The `chain` outcome (the first thread's rounds, when it measured any),
/// then every thread's `chain/hop` outcome.
fn outcomes(measured: Vec<(ThreadOutcome, Option<Recorder>)>, n: usize, interval: u64) -> Vec<ThreadOutcome> {
    let mut rounds = None;
    let mut hops = Vec::with_capacity(measured.len());
    for (o, round) in measured {
        rounds = rounds.or(round);
        hops.push(o);
    }
    let mut out = Vec::new();
    if let Some(r) = rounds {
        let first = &hops[0];
        let mut o = ThreadOutcome {
            thread: 0,
            cpu: first.cpu,
            variant: Some("chain".into()),
            interval_ns: interval,
            recorder: r,
            setup: Vec::new(),
            error: None,
            extra: Default::default(),
            windows: Vec::new(),
        };
        o.extra.note = Some(format!("a signal passed along {n} threads and back to the first (signaltest's method); chain/hop: each of the {n} hops"));
        out.push(o);
    }
    out.extend(hops);
    out
}
