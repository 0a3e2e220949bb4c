//! The `throughput` probe: Thread-Metric's eight tests (Express Logic /
//! Eclipse ThreadX), re-implemented with POSIX threads and the same
//! structure: how many operations the system completes per interval
//! (`--tm-interval`, 30 s as Thread-Metric by default).
//!
//! All threads of a test run on one CPU (the plan's last, as `noise`), at
//! the plan's policy; priorities count down from -p − 1 (the reporter, which
//! reads the counters at each interval's end, runs at -p above them all, as
//! Thread-Metric's reporting thread). One variant per test:
//!
//! | variant | Thread-Metric test | here |
//! |---|---|---|
//! | `basic` | basic processing: one thread, a fixed computation | one thread updates a 1024-word array per op |
//! | `cooperative` | 5 threads, same priority, relinquish | 5 threads at -p − 1, counter + sched_yield(2) |
//! | `preemptive` | 5 threads, unique priorities; each resumes the next higher, which suspends | futex events: post = resume, wait = suspend |
//! | `interrupt` | thread raises an interrupt; ISR counts and posts a semaphore; thread gets it | a signal (pthread_kill to itself) as the interrupt; the handler sem_post(3)s |
//! | `interrupt-preemption` | as above; the ISR resumes a higher-priority thread | the handler sem_post(3)s a semaphore a thread one priority higher waits on |
//! | `message` | send a 16-byte message to a queue, receive it back | POSIX message queue (mq_send/mq_receive), 16 bytes |
//! | `synchronization` | get a semaphore, put it back | sem_wait/sem_post on an unnamed POSIX semaphore |
//! | `memory` | allocate a 128-byte block from a pool, release it | malloc(3)/free(3) of 128 bytes (POSIX has no block pool) |
//!
//! An op is one pass of a test thread's loop; `ops` is the sum over the
//! test's threads (as Thread-Metric sums its counters). The interrupt tests'
//! handler counts are checked against their threads' and reported in the
//! entry's note. The entry's `throughput` holds the counts per interval
//! (exact: the deltas of the threads' counters at each interval's end sum
//! to `ops`); its samples are the mean time per op of each interval (ns), so
//! histograms, percentiles and ratios work as for every probe. Only whole
//! intervals count; a run stopped by Ctrl-C keeps the intervals completed.
//!
//! The test threads keep their CPU 100 % busy at real-time priority, so RT
//! throttling (as the system has it, 950 ms per s by default) takes its share
//! of every interval, equally for every test; the note says what it was.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use super::registry::ProbeInfo;
use super::{select, spawn_measuring_with, Probe, ProbeCtx, ThreadOutcome, ThreadSpec};
use crate::model::{Nanos, Throughput};
use crate::sys::futex::Event;
use crate::sys::semaphore::Semaphore;
use crate::sys::time::{now_ns, sleep_until_ns};

pub(crate) struct ThroughputProbe;

pub(crate) const VARIANTS: &[&str] = &["basic", "cooperative", "preemptive", "interrupt", "interrupt-preemption", "message", "synchronization", "memory"];

/// Message size of the `message` test (Thread-Metric: 16 bytes).
pub(crate) const MSG_BYTES: usize = 16;
/// Block size of the `memory` test (Thread-Metric: 128 bytes).
pub(crate) const BLOCK_BYTES: usize = 128;
/// Test threads of `cooperative` and `preemptive`.
const FIVE: usize = 5;
/// The reporter checks the stop flag at least this often.
const STOP_CHECK_NS: u64 = 100_000_000;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "throughput",
    about: "Thread-Metric's eight tests: operations completed per --tm-interval (basic ... memory)",
    variants: VARIANTS,
    counts_operations: true,
    priority_levels: 6,
    flags: &["--tm-interval"],
    ..ProbeInfo::PLAIN
};

impl Probe for ThroughputProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let variants = select::chosen(ctx, "throughput", VARIANTS);
        let share = select::share(ctx, variants.len());
        let interval = ctx.run.probe.tm_interval_ns;
        let intervals = (share / interval.max(1)).max(1);
        let cpu = ctx.run.cpus.last().copied();
        let mut out = Vec::new();
        for v in &variants {
            if ctx.stop.load(Ordering::Relaxed) {
                break;
            }
            ctx.board.reset(&format!("throughput {v}"));
            out.push(run_test(ctx, v, cpu, interval, intervals)?);
        }
        Ok(out)
    }
}

/// A counter on a cache line of its own (one writer each).
#[repr(align(64))]
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    #[inline]
    fn bump(&self) {
        // One writer: a plain load and store, no locked instruction.
        self.0.store(self.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What the test threads of one variant share.
struct Test {
    variant: String,
    counters: Vec<Counter>,
    done: AtomicBool,
    /// `preemptive`: one event per thread (resume = post, suspend = wait).
    events: Vec<Event>,
    sem: Option<Semaphore>,
    queue: Option<super::mq::MsgQueue>,
}

/// Test threads of a variant, lowest priority first.
fn threads_of(variant: &str) -> usize {
    match variant {
        "cooperative" | "preemptive" => FIVE,
        "interrupt-preemption" => 2,
        _ => 1,
    }
}

fn run_test(ctx: &ProbeCtx<'_>, v: &str, cpu: Option<usize>, interval: u64, intervals: u64) -> anyhow::Result<ThreadOutcome> {
    let n = threads_of(v);
    let p = ctx.run.priority;
    let policy = ctx.run.policy;
    // Thread 0 reports (records); 1..=n are the test threads.
    let mut specs = vec![ThreadSpec { index: 0, cpu, policy, priority: p, dl: None }];
    for k in 0..n {
        let priority = match v {
            "preemptive" | "interrupt-preemption" => p.saturating_sub((n - k) as u8).max(1),
            _ => p.saturating_sub(1).max(1),
        };
        specs.push(ThreadSpec { index: k + 1, cpu, policy, priority, dl: None });
    }
    let sem = match v {
        "interrupt" | "interrupt-preemption" => Some(Semaphore::new(0)?),
        "synchronization" => Some(Semaphore::new(1)?),
        _ => None,
    };
    let queue = if v == "message" { Some(super::mq::MsgQueue::new(900, MSG_BYTES)?) } else { None };
    let test = Test {
        variant: v.to_string(),
        counters: (0..n).map(|_| Counter::default()).collect(),
        done: AtomicBool::new(false),
        events: (0..n).map(|_| Event::new()).collect(),
        sem,
        queue,
    };
    let _handler = match v {
        "interrupt" | "interrupt-preemption" => Some(Isr::install(test.sem.as_ref().expect("made above"))?),
        _ => None,
    };
    // The reporting thread hands back its counts per interval.
    let measured = spawn_measuring_with(ctx, &specs, Some(v.to_string()), interval, |spec, rec, stop, barrier| {
        barrier.wait();
        if spec.index == 0 {
            (None, Some(report(&test, rec, stop, interval, intervals)))
        } else {
            (worker(&test, spec.index - 1), None)
        }
    })?;
    let mut per_interval = Vec::new();
    let mut outs = Vec::with_capacity(measured.len());
    for (o, counts) in measured {
        per_interval = counts.unwrap_or(per_interval);
        outs.push(o);
    }
    let mut o = super::first_with_all_steps(outs)?;
    let ops: u64 = per_interval.iter().sum();
    let thread_ops: u64 = test.counters.iter().map(Counter::get).sum();
    let isr = ISR_COUNT.swap(0, Ordering::Relaxed);
    o.extra.throughput = Some(Throughput { ops, interval_ns: Nanos(interval), per_interval });
    o.extra.note = Some(note(v, &specs, isr, thread_ops));
    Ok(o)
}

/// The reporter: at the end of each interval, the sum of the counters; the
/// delta is that interval's ops, recorded as ns per op.
fn report(t: &Test, rec: &mut super::recorder::Recorder, stop: &AtomicBool, interval: u64, intervals: u64) -> Vec<u64> {
    let sum = || t.counters.iter().map(Counter::get).sum::<u64>();
    let start = now_ns();
    let mut prev = sum();
    let mut prev_t = start;
    // Sized before the first interval (intervals are at least 100 ms: a
    // week's fit in 8 MB), so measuring allocates nothing.
    let mut per = Vec::with_capacity(usize::try_from(intervals).unwrap_or(0).min(1 << 20));
    'outer: for k in 1..=intervals {
        let due = start + k * interval;
        loop {
            let now = now_ns();
            if now >= due {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                break 'outer;
            }
            if sleep_until_ns(due.min(now + STOP_CHECK_NS)).is_err() {
                break 'outer;
            }
        }
        let s = sum();
        let t = now_ns();
        let ops = s - prev;
        per.push(ops);
        let ns_per_op = if ops == 0 { t - prev_t } else { ((t - prev_t) as f64 / ops as f64).round().max(1.0) as u64 };
        rec.record(ns_per_op, t - start, k - 1);
        prev = s;
        prev_t = t;
    }
    t.done.store(true, Ordering::Release);
    for e in &t.events {
        let _ = e.post();
    }
    if let Some(s) = &t.sem {
        // interrupt-preemption: the high thread waits on it.
        let _ = s.post();
    }
    per
}

/// Test thread `k` (0 = the lowest priority) of the variant.
fn worker(t: &Test, k: usize) -> Option<String> {
    let c = &t.counters[k];
    let done = || t.done.load(Ordering::Relaxed);
    match t.variant.as_str() {
        "basic" => {
            let mut a = [0u32; 1024];
            let mut round = 0u32;
            while !done() {
                for (i, x) in a.iter_mut().enumerate() {
                    *x = x.wrapping_add(i as u32) ^ round;
                }
                std::hint::black_box(&mut a);
                round = round.wrapping_add(1);
                c.bump();
            }
        }
        "cooperative" => {
            while !done() {
                c.bump();
                // SAFETY: sched_yield takes no arguments.
                unsafe { libc::sched_yield() };
            }
        }
        "preemptive" => {
            if k == 0 {
                while !done() {
                    c.bump();
                    if let Err(e) = t.events[1].post() {
                        return Some(format!("futex wake: {e}"));
                    }
                }
            } else {
                loop {
                    t.events[k].wait();
                    if done() {
                        return None;
                    }
                    c.bump();
                    if k + 1 < t.events.len() {
                        if let Err(e) = t.events[k + 1].post() {
                            return Some(format!("futex wake: {e}"));
                        }
                    }
                }
            }
        }
        "interrupt" | "interrupt-preemption" => {
            let sem = t.sem.as_ref().expect("made for the interrupt tests");
            let preempt = t.variant == "interrupt-preemption";
            if preempt && k == 1 {
                // The higher thread: resumed by the handler.
                loop {
                    if let Err(e) = sem.wait() {
                        return Some(e);
                    }
                    if done() {
                        return None;
                    }
                    c.bump();
                }
            }
            // SAFETY: pthread_self has no preconditions.
            let me = unsafe { libc::pthread_self() };
            while !done() {
                // SAFETY: `me` is this thread; the handler is installed.
                let rc = unsafe { libc::pthread_kill(me, isr_signal()) };
                if rc != 0 {
                    return Some(format!("pthread_kill: {}", nix::errno::Errno::from_raw(rc)));
                }
                if !preempt {
                    if let Err(e) = sem.wait() {
                        return Some(e);
                    }
                }
                c.bump();
            }
        }
        "message" => {
            use super::pair::Channel;
            let q = t.queue.as_ref().expect("made for the message test");
            let mut out = [7u8; MSG_BYTES];
            let mut back = [0u8; MSG_BYTES];
            while !done() {
                out[0] = out[0].wrapping_add(1);
                if let Err(e) = q.send(&out) {
                    return Some(e);
                }
                if let Err(e) = q.recv(&mut back) {
                    return Some(e);
                }
                c.bump();
            }
        }
        "synchronization" => {
            let sem = t.sem.as_ref().expect("made for the synchronization test");
            while !done() {
                if let Err(e) = sem.wait() {
                    return Some(e);
                }
                if let Err(e) = sem.post() {
                    return Some(e);
                }
                c.bump();
            }
        }
        _ => {
            while !done() {
                // SAFETY: malloc of a non-zero size; checked for null below.
                let b = unsafe { libc::malloc(BLOCK_BYTES) };
                if b.is_null() {
                    return Some("malloc(128) returned NULL".into());
                }
                // Touch the block so neither call can be optimised away.
                // SAFETY: `b` is a live 128-byte allocation.
                unsafe { b.cast::<u8>().write_volatile(1) };
                // SAFETY: `b` came from malloc above and is freed once.
                unsafe { libc::free(std::hint::black_box(b)) };
                c.bump();
            }
        }
    }
    None
}

/// The "interrupt" of the interrupt tests: SIGRTMIN + 5 (the `signal`
/// probe uses + 4).
fn isr_signal() -> libc::c_int {
    libc::SIGRTMIN() + 5
}

/// Handler calls so far (the interrupt tests' "ISR counter").
static ISR_COUNT: AtomicU64 = AtomicU64::new(0);
/// The semaphore the handler posts.
static ISR_SEM: AtomicPtr<libc::sem_t> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn isr(_: libc::c_int) {
    ISR_COUNT.fetch_add(1, Ordering::Relaxed);
    let s = ISR_SEM.load(Ordering::Acquire);
    if !s.is_null() {
        // SAFETY: `s` is the live semaphore of the running test (cleared
        // before it is dropped); sem_post is async-signal-safe.
        unsafe { libc::sem_post(s) };
    }
}

/// The installed handler; the previous action is restored on drop.
struct Isr {
    old: libc::sigaction,
}

impl Isr {
    fn install(sem: &Semaphore) -> anyhow::Result<Isr> {
        ISR_COUNT.store(0, Ordering::Relaxed);
        ISR_SEM.store(sem.as_ptr(), Ordering::Release);
        // SAFETY: all-zero sigaction structs are valid to fill.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = isr as extern "C" fn(libc::c_int) as usize;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act` is initialised (empty mask, handler set); `old` is storage.
        let rc = unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(isr_signal(), &act, &mut old)
        };
        if rc != 0 {
            ISR_SEM.store(std::ptr::null_mut(), Ordering::Release);
            anyhow::bail!("sigaction: {}", nix::errno::Errno::last());
        }
        Ok(Isr { old })
    }
}

impl Drop for Isr {
    fn drop(&mut self) {
        // SAFETY: restores the action saved by install(); the test threads
        // have ended, so no signal is in flight.
        unsafe { libc::sigaction(isr_signal(), &self.old, std::ptr::null_mut()) };
        ISR_SEM.store(std::ptr::null_mut(), Ordering::Release);
    }
}

fn note(v: &str, specs: &[ThreadSpec], isr: u64, thread_ops: u64) -> String {
    let prios: Vec<String> = specs[1..].iter().map(|s| s.priority.to_string()).collect();
    let policy = specs[0].policy.name().to_uppercase();
    let mut s = format!(
        "Thread-Metric '{v}': ops = passes of the test threads' loops, per interval; samples = mean ns per op of each interval. {} test thread(s) at SCHED_{policy} {}, reporter at {}, all on CPU {}.",
        specs.len() - 1,
        prios.join("/"),
        specs[0].priority,
        specs[0].cpu.map(|c| c.to_string()).unwrap_or_else(|| "any".into()),
    );
    if v.starts_with("interrupt") {
        s.push_str(&format!(" Signal handler calls: {isr}; test-thread passes: {thread_ops}."));
    }
    s
}
