//! The two-thread hand-off pattern shared by `sem`, `pipe`, `mq`, `signal`
//! and `preempt`: a sender releases, a blocked receiver wakes.
//!
//! Timestamps (the issue's rule): the sender reads the clock immediately
//! before the release/send/wake call and publishes it; the receiver reads the
//! clock immediately after its blocking call returns; latency = receiver −
//! sender on the same CLOCK_MONOTONIC, so cross-CPU pairs are valid. A
//! mechanism is a [`Handoff`] (one-way) or a [`Channel`] pair (round trip);
//! this module owns the threads, the pacing and the shutdown.
//!
//! One-way, per event (the shape of ptsematest: the receiver paces, so
//! the sender releases right after it was woken, and the receiver has been
//! blocked only for the hand-off itself):
//!
//! ```text
//! sender                               receiver (records)
//!   h.arm()      (mutex: lock it)
//!   armed.post() ───────────────────>   armed.wait()
//!                                       pause (sleep to the next -i tick)
//!   go.wait()    <───────────────────   go.post()
//!                                       h.wait() blocks
//!   t0 = now; h.release() ──────────>   returns; t1 = now; record t1 − t0
//!                                       h.after_wait() (mutex: unlock)
//!   ack.wait()   <───────────────────   ack.post()
//! ```
//!
//! Why the futex events around the measured hand-off: they make every
//! event start from the same state (mutex held by the sender, `t0` not
//! overwritten before it is read) and they are never inside the timed span.
//! Why the receiver paces: a receiver that sat blocked in the mechanism for
//! a whole interval wakes on cold caches, which doubled the hand-off time
//! on the development VM compared with ptsematest's structure (measured
//! with bench/vs-rt-tests). On one CPU the receiver is always blocked when
//! the sender releases (the sender only runs once the receiver blocks, or
//! preempts nothing when its priority is lower). Across CPUs the sender may,
//! rarely, release before the receiver has blocked — as in rt-tests; that
//! event then measures the non-blocking path.
//!
//! Shutdown: the sender ends the loop (duration share over, `--iterations`
//! reached, or the stop flag), sets `done` and posts `armed`; the receiver
//! sees `done` before blocking again and ends. No thread is left waiting.
//!
//! Two-step cycle (`mq` and `signal`, whose mechanism carries `go` itself:
//! [`Handoff::go`]), the exact sequence of pmqtest and sigwaittest:
//!
//! ```text
//! sender                               receiver (records)
//!                                       pause (sleep to the next -i tick)
//!   go.recv() blocks <──── mechanism ──  go.send()   (sync queue / signal)
//!                                       h.wait() blocks
//!   t0 = now; h.release() ──────────>   returns; t1 = now; record t1 − t0
//!   go.recv() blocks
//! ```
//!
//! Why: the state the timed path starts from decides its cost, and the
//! peers' `go` runs the very mechanism under test just before the timed
//! message. With the futex cycle the send path had not run for a whole
//! interval: the kernel trace of the same messages (bench/ipc-truth,
//! docs/probes.md) showed mq_timedsend's entry → receiver wake-up taking
//! 3.3 µs against pmqtest's 1.3 µs on one CPU of the development VM, the
//! rest of the span equal. There is no `ack`: the sender can store the next
//! `t0` only after the next `go`, which the receiver sends after reading
//! this one. At the end the sender sets `done` and releases once more; the
//! receiver takes that release as the end, not as a sample.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::recorder::Recorder;
use super::{spawn_measuring, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::sys::futex::Event;
use crate::sys::sched::Policy;
use crate::sys::time::{now_ns, sleep_until_ns};
use crate::trace::LateSamples;

/// The sender thread's name (the receiver is `rtscope-m0`).
pub(crate) const SENDER_NAME: &str = "rtscope-sender";

/// One hand-off mechanism, seen from both sides.
pub(crate) trait Handoff: Sync {
    /// Receiver, before the start barrier (e.g. block the signal it waits for).
    fn receiver_setup(&self) -> Result<(), String> {
        Ok(())
    }
    /// Sender, before each pause: make the receiver's next wait block.
    fn arm(&self) {}
    /// Sender: store the clock into `t0` immediately before the release call,
    /// then make it.
    fn release(&self, t0: &AtomicU64, buf: &[u8]) -> Result<(), String>;
    /// Receiver: block until released; return the clock read immediately
    /// after the blocking call returned.
    fn wait(&self, buf: &mut [u8]) -> Result<u64, String>;
    /// Receiver, after recording: give back what `wait` took.
    fn after_wait(&self) {}
    /// Sender, before the start barrier (e.g. block the signal `go` comes by).
    fn sender_setup(&self) -> Result<(), String> {
        Ok(())
    }
    /// The mechanism's own channel for `go` (receiver → sender), when the
    /// pair runs rt-tests' two-step cycle (see the module docs); None: the
    /// futex cycle.
    fn go(&self) -> Option<&dyn Channel> {
        None
    }
}

/// A one-directional byte-message channel (pipe, message queue).
pub(crate) trait Channel: Sync {
    fn send(&self, buf: &[u8]) -> Result<(), String>;
    fn recv(&self, buf: &mut [u8]) -> Result<(), String>;
}

/// Any channel is a hand-off: send is the release, recv the wait. With
/// `go`, a second channel of the same kind carries the `go` step (receiver
/// → sender, a whole message), as pmqtest's sync queue does.
pub(crate) struct ChannelHandoff<C: Channel> {
    pub(crate) ch: C,
    pub(crate) go: Option<C>,
}

impl<C: Channel> ChannelHandoff<C> {
    /// `go` carried by a second channel made by `make` (two-step cycle), or
    /// by futex events (`via_channel` false).
    pub(crate) fn new(ch: C, via_channel: bool, make: impl FnOnce() -> anyhow::Result<C>) -> anyhow::Result<Self> {
        Ok(ChannelHandoff { ch, go: if via_channel { Some(make()?) } else { None } })
    }
}

impl<C: Channel> Handoff for ChannelHandoff<C> {
    fn release(&self, t0: &AtomicU64, buf: &[u8]) -> Result<(), String> {
        t0.store(now_ns(), Ordering::Release);
        self.ch.send(buf)
    }
    fn wait(&self, buf: &mut [u8]) -> Result<u64, String> {
        self.ch.recv(buf)?;
        Ok(now_ns())
    }
    fn go(&self) -> Option<&dyn Channel> {
        self.go.as_ref().map(|g| g as &dyn Channel)
    }
}

/// How the pair is paced between events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pause {
    /// Sleep (absolute) to the next tick of `interval` (rt-tests' -i).
    Sleep { interval: u64 },
    /// No pause (`--back-to-back`).
    None,
}

impl Pause {
    /// The pause the plan asks for.
    pub(crate) fn from_plan(ctx: &ProbeCtx<'_>) -> Pause {
        if ctx.run.probe.back_to_back {
            Pause::None
        } else {
            Pause::Sleep { interval: ctx.run.interval_ns }
        }
    }
    fn interval(self) -> u64 {
        match self {
            Pause::Sleep { interval } => interval,
            Pause::None => 0,
        }
    }
    /// Wait for the tick `next` (updated to the following tick). A late
    /// tick is not an overrun here: these probes time hand-offs, not periods;
    /// the next tick is then one interval after now.
    #[inline]
    fn wait(self, next: &mut u64) -> Result<(), String> {
        if let Pause::Sleep { interval } = self {
            sleep_until_ns(*next).map_err(|e| format!("clock_nanosleep failed: {e}"))?;
            let now = now_ns();
            *next += interval;
            if *next <= now {
                *next = now + interval;
            }
        }
        Ok(())
    }
}

/// How many events a variant sends, how they are paced, and their size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Events {
    pub(crate) pause: Pause,
    /// The variant's share of -D.
    pub(crate) duration: u64,
    /// `--iterations`, or u64::MAX.
    pub(crate) max: u64,
    /// Bytes per message (channels; 1 for the others).
    pub(crate) msg_size: usize,
}

impl Events {
    /// The plan's pacing for a variant of `duration`.
    pub(crate) fn from_plan(ctx: &ProbeCtx<'_>, duration: u64, msg_size: usize) -> Events {
        Events { pause: Pause::from_plan(ctx), duration, max: super::select::max_events(ctx), msg_size }
    }
}

/// Where the two threads of a pair run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    pub(crate) receiver_cpu: Option<usize>,
    pub(crate) sender_cpu: Option<usize>,
}

impl Placement {
    /// Both on the plan's first CPU.
    pub(crate) fn same_cpu(ctx: &ProbeCtx<'_>) -> Placement {
        let c = ctx.run.cpus.first().copied();
        Placement { receiver_cpu: c, sender_cpu: c }
    }
    /// Receiver on the plan's first CPU, sender on its second (None when the
    /// plan has one CPU only).
    pub(crate) fn cross_cpu(ctx: &ProbeCtx<'_>) -> Option<Placement> {
        (ctx.run.cpus.len() >= 2).then(|| Placement { receiver_cpu: Some(ctx.run.cpus[0]), sender_cpu: Some(ctx.run.cpus[1]) })
    }
    /// The plan's first and last CPU (the same one with `-a N`): how the
    /// pipe, mq and signal probes place their pair.
    pub(crate) fn from_plan(ctx: &ProbeCtx<'_>) -> Placement {
        Placement { receiver_cpu: ctx.run.cpus.first().copied(), sender_cpu: ctx.run.cpus.last().copied() }
    }
}

/// Thread 0 (records) at the plan's priority, thread 1 one below it (the
/// receiver has the higher priority) or at `--sender-priority`.
fn pair_specs(ctx: &ProbeCtx<'_>, p: Placement) -> [ThreadSpec; 2] {
    let prio = ctx.run.priority;
    let lower = match ctx.run.probe.sender_priority {
        _ if ctx.run.policy == Policy::Other => prio,
        Some(p) => p,
        None => prio.saturating_sub(1).max(1),
    };
    [
        ThreadSpec { index: 0, cpu: p.receiver_cpu, policy: ctx.run.policy, priority: prio, dl: None },
        ThreadSpec { index: 1, cpu: p.sender_cpu, policy: ctx.run.policy, priority: lower, dl: None },
    ]
}

/// Run two threads, thread 0 recording; return thread 0's outcome with both
/// threads' set-up steps and the first error.
pub(crate) fn run_two<F>(ctx: &ProbeCtx<'_>, specs: &[ThreadSpec; 2], variant: &str, interval: u64, body: F) -> anyhow::Result<ThreadOutcome>
where
    F: Fn(usize, &mut Recorder, &AtomicBool, &super::Gate) -> Option<String> + Sync,
{
    let outs = spawn_measuring(ctx, specs, Some(variant.to_string()), interval, |spec, rec, stop, barrier| body(spec.index, rec, stop, barrier))?;
    super::first_with_all_steps(outs)
}

/// Run one one-way variant for `duration` (or `max_events` events).
pub(crate) fn one_way(ctx: &ProbeCtx<'_>, variant: &str, h: &dyn Handoff, place: Placement, ev: Events, sender_spin: u64) -> anyhow::Result<ThreadOutcome> {
    let specs = pair_specs(ctx, place);
    let sync = Sync3 { t0: AtomicU64::new(0), done: AtomicBool::new(false), armed: Event::new(), go: Event::new(), ack: Event::new() };
    run_two(ctx, &specs, variant, ev.pause.interval(), |index, rec, stop, barrier| {
        let mut buf = vec![0u8; ev.msg_size.max(1)];
        if index == 0 {
            let setup = h.receiver_setup();
            // Threshold tracing: the window t0 → t1 on the receiver's CPU.
            let late = LateSamples::arm(ctx.trace, 0, place.receiver_cpu);
            barrier.wait();
            if let Err(e) = setup {
                return sync.fail(h, e);
            }
            match h.go() {
                Some(go) => receiver_two_step(h, go, rec, &sync, &mut buf, ev.pause, late),
                None => receiver(h, rec, &sync, &mut buf, ev.pause, late),
            }
        } else {
            // Not `rtscope-m1`: the trace's kernel filters drop the measuring threads'
            // own switch-ins, and on the receiver's CPU the sender's time is part of what
            // a late sample is made of.
            crate::sys::sched::set_thread_name(SENDER_NAME);
            let setup = h.sender_setup();
            if setup.is_err() {
                // Before the barrier, so the receiver sees it before its first event.
                sync.done.store(true, Ordering::Release);
            }
            barrier.wait();
            if let Err(e) = setup {
                let _ = sync.armed.post();
                return Some(e);
            }
            match h.go() {
                Some(go) => sender_two_step(h, go, stop, &sync, &mut buf, sender_spin, ev.duration, ev.max),
                None => sender(h, stop, &sync, &buf, sender_spin, ev.duration, ev.max),
            }
        }
    })
}

/// The shared state of a one-way pair (see the module docs).
struct Sync3 {
    t0: AtomicU64,
    done: AtomicBool,
    armed: Event,
    go: Event,
    ack: Event,
}

impl Sync3 {
    /// End both threads after an error on the receiver's side.
    fn fail(&self, h: &dyn Handoff, e: String) -> Option<String> {
        self.done.store(true, Ordering::Release);
        match h.go() {
            // The sender waits in the mechanism: one message wakes it.
            Some(go) => drop(go.send(&[0u8; 1])),
            None => drop(self.go.post()),
        }
        let _ = self.ack.post();
        Some(e)
    }
}

fn receiver(h: &dyn Handoff, rec: &mut Recorder, s: &Sync3, buf: &mut [u8], pause: Pause, late: LateSamples<'_>) -> Option<String> {
    let start = now_ns();
    let mut next = start + pause.interval();
    let mut seq = 0u64;
    loop {
        s.armed.wait();
        if s.done.load(Ordering::Acquire) {
            return None;
        }
        if let Err(e) = pause.wait(&mut next) {
            return s.fail(h, e);
        }
        if let Err(e) = s.go.post() {
            return s.fail(h, e.to_string());
        }
        let t1 = match h.wait(buf) {
            Ok(t) => t,
            Err(e) => return s.fail(h, e),
        };
        let sent = s.t0.load(Ordering::Acquire);
        rec.record(t1.saturating_sub(sent), t1.saturating_sub(start), seq);
        late.window(sent, t1, seq);
        seq += 1;
        h.after_wait();
        if let Err(e) = s.ack.post() {
            return s.fail(h, e.to_string());
        }
    }
}

fn sender(h: &dyn Handoff, stop: &AtomicBool, s: &Sync3, buf: &[u8], spin: u64, duration: u64, max_events: u64) -> Option<String> {
    let end = now_ns() + duration;
    let mut sent = 0u64;
    loop {
        if sent >= max_events || stop.load(Ordering::Relaxed) || now_ns() >= end {
            s.done.store(true, Ordering::Release);
            let _ = s.armed.post();
            return None;
        }
        h.arm();
        if let Err(e) = s.armed.post() {
            // The receiver waits for `armed`: nothing else to wake.
            s.done.store(true, Ordering::Release);
            return Some(e.to_string());
        }
        s.go.wait();
        if s.done.load(Ordering::Acquire) {
            return None; // the receiver failed; its error is reported
        }
        // `preempt`: be a running, CPU-bound thread when releasing.
        super::spin_for(spin);
        if let Err(e) = h.release(&s.t0, buf) {
            s.done.store(true, Ordering::Release);
            return Some(e);
        }
        sent += 1;
        s.ack.wait();
        if s.done.load(Ordering::Acquire) {
            return None;
        }
    }
}

/// rt-tests' cycle (pmqtest, sigwaittest): the receiver paces and sends
/// `go` through the mechanism, then blocks in it; the sender waits for `go`
/// in the mechanism, releases, and blocks for the next `go`. `t0` is safe:
/// the sender stores the next one only after the next `go`, which comes
/// after the receiver has read this one.
fn receiver_two_step(h: &dyn Handoff, go: &dyn Channel, rec: &mut Recorder, s: &Sync3, buf: &mut [u8], pause: Pause, late: LateSamples<'_>) -> Option<String> {
    let start = now_ns();
    let mut next = start + pause.interval();
    let mut seq = 0u64;
    loop {
        if s.done.load(Ordering::Acquire) {
            return None; // the sender could not start; its error is reported
        }
        if let Err(e) = pause.wait(&mut next) {
            return s.fail(h, e);
        }
        if let Err(e) = go.send(buf) {
            return s.fail(h, e);
        }
        let t1 = match h.wait(buf) {
            Ok(t) => t,
            Err(e) => return s.fail(h, e),
        };
        if s.done.load(Ordering::Acquire) {
            return None; // the sender's closing release: not a sample
        }
        let sent = s.t0.load(Ordering::Acquire);
        rec.record(t1.saturating_sub(sent), t1.saturating_sub(start), seq);
        late.window(sent, t1, seq);
        seq += 1;
        h.after_wait();
    }
}

/// The sender of [`receiver_two_step`]. It ends with one more release after
/// setting `done`, which wakes the receiver to see it.
#[allow(clippy::too_many_arguments)]
fn sender_two_step(
    h: &dyn Handoff,
    go: &dyn Channel,
    stop: &AtomicBool,
    s: &Sync3,
    buf: &mut [u8],
    spin: u64,
    duration: u64,
    max_events: u64,
) -> Option<String> {
    let end = now_ns() + duration;
    let mut sent = 0u64;
    loop {
        let waited = go.recv(buf);
        if s.done.load(Ordering::Acquire) {
            return None; // the receiver failed; its error is reported
        }
        if let Err(e) = waited {
            // The receiver is about to block in the mechanism: wake it.
            s.done.store(true, Ordering::Release);
            let _ = h.release(&s.t0, buf);
            return Some(e);
        }
        let last = sent >= max_events || stop.load(Ordering::Relaxed) || now_ns() >= end;
        if last {
            s.done.store(true, Ordering::Release);
        }
        super::spin_for(spin);
        if let Err(e) = h.release(&s.t0, buf) {
            s.done.store(true, Ordering::Release);
            return Some(e);
        }
        if last {
            return None;
        }
        sent += 1;
    }
}

/// Run one round-trip variant: thread 0 sends on `a`, thread 1 answers on
/// `b`; thread 0 records t(answer received) − t(sent).
pub(crate) fn round_trip(ctx: &ProbeCtx<'_>, variant: &str, a: &dyn Channel, b: &dyn Channel, place: Placement, ev: Events) -> anyhow::Result<ThreadOutcome> {
    let Events { pause, duration, max: max_events, msg_size } = ev;
    // Thread 0 is task1 (it sends first and records); thread 1 is task2.
    // task2 has the higher priority: it is the one that must run at once.
    let [mut t1, mut t2] = pair_specs(ctx, place);
    std::mem::swap(&mut t1.priority, &mut t2.priority);
    let done = AtomicBool::new(false);
    run_two(ctx, &[t1, t2], variant, pause.interval(), |index, rec, stop, barrier| {
        let mut buf = vec![0u8; msg_size.max(1)];
        barrier.wait();
        if index == 0 {
            let start = now_ns();
            let end = start + duration;
            let mut next = start + pause.interval();
            let mut seq = 0u64;
            let result = loop {
                if seq >= max_events || stop.load(Ordering::Relaxed) || now_ns() >= end || next > end {
                    break None;
                }
                if let Err(e) = pause.wait(&mut next) {
                    break Some(e);
                }
                let sent = now_ns();
                if let Err(e) = a.send(&buf) {
                    break Some(e);
                }
                if let Err(e) = b.recv(&mut buf) {
                    break Some(e);
                }
                let back = now_ns();
                rec.record(back - sent, back - start, seq);
                seq += 1;
            };
            done.store(true, Ordering::Release);
            // Wake task2 so it sees `done` (it answers nothing more).
            let _ = a.send(&buf);
            result
        } else {
            loop {
                if let Err(e) = a.recv(&mut buf) {
                    return Some(e);
                }
                if done.load(Ordering::Acquire) {
                    return None;
                }
                if let Err(e) = b.send(&buf) {
                    return Some(e);
                }
            }
        }
    })
}
