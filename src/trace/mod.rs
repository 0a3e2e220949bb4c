//! Threshold tracing: when a sample is later than `--trace-threshold`, capture what the
//! kernel did on that CPU between the sample's due time and its wake-up, and say who held
//! the CPU.
//!
//! - [`TraceSession::start`] mounts tracefs if needed and creates rtscope's own instance
//!   (`instances/rtscope-<pid>`) with the events of `--trace-events` ([`events::DEFAULT_EVENTS`]:
//!   scheduler, IRQ and softirq events with the measuring threads' own left out by kernel
//!   filters; [`events::FULL_EXTRA_EVENTS`] adds hrtimer, workqueue and x86 vector events),
//!   `trace_clock=mono` (so event times are CLOCK_MONOTONIC, the probes' clock) and per-CPU
//!   buffers of `--trace-buffer` KB on the measured CPUs.
//! - In the hot loop a measuring thread only compares its latency with the threshold and,
//!   when over, stores the due and wake-up times into its [`TraceTrigger`] and raises a flag
//!   (atomic stores, no system call).
//! - The non-RT collector ([`TraceSession::collect`]) sees the flag, stops tracing, reads
//!   that CPU's buffer, runs the pure [`attribute::attribute`] over the parsed events, then
//!   clears the buffer and restarts tracing. At most `--trace-max` snapshots are kept per
//!   run; once they are, only a sample worse than the mildest kept is handed over, and it
//!   replaces that one — so the snapshots end up on the worst samples.
//! - The runner attaches each snapshot to the matching `worst[]` sample (variant, thread,
//!   seq): `measure::spawn_measuring` tells the session which
//!   variant runs ([`TraceSession::begin_variant`]), since each variant restarts `seq`.
//! - Traced probes (`measure::Traced`, said by each probe): the timer method (`timer`, `periodic`, `maxrate`:
//!   the window is due time → wake-up) and the one-way hand-offs (`sem`, `pipe`, `mq`,
//!   `signal`, `preempt`: the sender's clock read before the release → the receiver's after
//!   its wake-up, on the receiver's CPU).
//! - Dropping the session stops tracing and removes the instance; a second Ctrl-C (which
//!   exits at once) removes it from the signal handler ([`register_signal_cleanup`]).

pub(crate) mod attribute;
pub(crate) mod events;
pub(crate) mod parse;
pub(crate) mod report;
pub(crate) mod stacks;
pub(crate) mod steal;

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) use crate::model::trace::{TracePlan, TraceSummary, TraceWindow};
use crate::model::ProbeResult;
use crate::sys::time::now_ns;
use crate::sys::tracefs::{self, Instance};
use events::expand_events;

/// One measuring thread's mailbox to the collector. Written only by its thread (hot path:
/// plain atomic stores), read by the collector after `pending` is seen set.
#[derive(Debug)]
pub(crate) struct TraceTrigger {
    threshold_ns: u64,
    /// Raised by the collector once the run's snapshots are all taken: then only a sample
    /// worse than the mildest one kept is handed over (and replaces it).
    handover_ns: AtomicU64,
    pending: AtomicBool,
    due_ns: AtomicU64,
    wake_ns: AtomicU64,
    seq: AtomicU64,
    over: AtomicU64,
    tid: AtomicU32,
    cpu: AtomicUsize,
}

impl TraceTrigger {
    fn new(threshold_ns: u64) -> TraceTrigger {
        TraceTrigger {
            threshold_ns,
            handover_ns: AtomicU64::new(threshold_ns),
            pending: AtomicBool::new(false),
            due_ns: AtomicU64::new(0),
            wake_ns: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            over: AtomicU64::new(0),
            tid: AtomicU32::new(0),
            cpu: AtomicUsize::new(0),
        }
    }

    /// Samples later than this fire the trigger.
    pub(crate) fn threshold_ns(&self) -> u64 {
        self.threshold_ns
    }

    /// Called by the measuring thread before the start barrier: who and where it is.
    pub(crate) fn arm(&self, cpu: usize) {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        self.tid.store(tid as u32, Ordering::Relaxed);
        self.cpu.store(cpu, Ordering::Relaxed);
    }

    /// Hot path, right after recording a sample `latency_ns` late: [`fire`](Self::fire) with
    /// the window `[now − latency, now]`, `now` read here (tens of ns after the wake-up,
    /// far below the trace's µs resolution; the window keeps the sample's exact length).
    #[inline]
    pub(crate) fn fire_late(&self, latency_ns: u64, seq: u64) {
        let wake = now_ns();
        self.fire(wake.saturating_sub(latency_ns), wake, seq);
    }

    /// Hot path, after a sample later than the threshold: hand its window to the collector
    /// unless the previous one is still being read, or the snapshots are all taken and this
    /// sample is no worse than the mildest one kept.
    #[inline]
    pub(crate) fn fire(&self, due_ns: u64, wake_ns: u64, seq: u64) {
        self.over.fetch_add(1, Ordering::Relaxed);
        if wake_ns.saturating_sub(due_ns) > self.handover_ns.load(Ordering::Relaxed) && !self.pending.load(Ordering::Relaxed) {
            self.due_ns.store(due_ns, Ordering::Relaxed);
            self.wake_ns.store(wake_ns, Ordering::Relaxed);
            self.seq.store(seq, Ordering::Relaxed);
            self.pending.store(true, Ordering::Release);
        }
    }
}

/// A measuring thread's side of threshold tracing: its trigger, armed for the thread, and
/// the threshold; with no session, every check is one comparison with `u64::MAX`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LateSamples<'a> {
    trigger: Option<&'a TraceTrigger>,
    threshold_ns: u64,
}

impl<'a> LateSamples<'a> {
    /// Arms trigger `index` of `session` for the calling thread, which runs on `cpu` (or
    /// wherever it is now when not pinned). Call before the start barrier.
    pub(crate) fn arm(session: Option<&'a TraceSession>, index: usize, cpu: Option<usize>) -> LateSamples<'a> {
        let trigger = session.and_then(|s| s.trigger(index));
        if let Some(t) = trigger {
            t.arm(cpu.or_else(crate::sys::sched::current_cpu).unwrap_or(0));
        }
        LateSamples { trigger, threshold_ns: trigger.map_or(u64::MAX, |t| t.threshold_ns()) }
    }

    /// Hot path, after recording a sample `latency_ns` late (its window ends now).
    #[inline]
    pub(crate) fn after(&self, latency_ns: u64, seq: u64) {
        if latency_ns > self.threshold_ns {
            if let Some(t) = self.trigger {
                t.fire_late(latency_ns, seq);
            }
        }
    }

    /// Hot path, after recording a sample that spans `[start_ns, end_ns]`.
    #[inline]
    pub(crate) fn window(&self, start_ns: u64, end_ns: u64, seq: u64) {
        if end_ns.saturating_sub(start_ns) > self.threshold_ns {
            if let Some(t) = self.trigger {
                t.fire(start_ns, end_ns, seq);
            }
        }
    }
}

/// A snapshot waiting to be attached to its worst sample.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The probe variant that was running (`None` for probes without variants).
    pub(crate) variant: Option<String>,
    pub(crate) thread: usize,
    pub(crate) seq: u64,
    pub(crate) latency_ns: u64,
    pub(crate) window: TraceWindow,
}

/// rtscope's tracing instance for one run. Dropping it removes the instance.
pub(crate) struct TraceSession {
    instance: Instance,
    plan: TracePlan,
    cpus: Vec<usize>,
    events: Vec<String>,
    /// Event → kernel filter, for the filtered ones.
    filters: std::collections::BTreeMap<String, String>,
    triggers: Vec<TraceTrigger>,
    /// rtscope mounted tracefs itself (it stays mounted: other tools may now use it).
    pub(crate) mounted_tracefs: bool,
    /// Serialises reading the buffer between the collector and the runner's flush.
    state: Mutex<State>,
    /// Call-chain sampling (`--trace-stacks`), drained by the collector thread.
    sampling: Mutex<Option<stacks::Sampling>>,
    /// Why sampling was asked for and is not running.
    sampling_error: Option<String>,
    /// Each measured CPU's idle states (sysfs cpuidle), for `power/cpu_idle`.
    idle_states: Vec<(usize, Vec<attribute::IdleState>)>,
    /// Events of `--trace-events` this kernel lacks (not enabled).
    missing_events: Vec<String>,
    /// The host is a virtual machine: time a CPU did not run is the host's.
    virtualized: bool,
}

struct State {
    /// The variant running now (see [`TraceSession::begin_variant`]).
    variant: Option<String>,
    /// Snapshots of the probe running now, not yet attached.
    snapshots: Vec<Snapshot>,
    /// Snapshots of earlier probes (they count against the maximum).
    done: u32,
    /// Of those, the ones whose sample was among the worst kept, so they are in the result.
    on_worst: u32,
    /// CLOCK_MONOTONIC when tracing was last switched on: earlier windows are incomplete.
    tracing_since: u64,
    /// Per CPU read: its last switch and the `power/cpu_idle` entry it was idle in when
    /// its buffer was last read and cleared, put back in front of its next read when
    /// nothing of that read was overwritten (see [`carry`]).
    carry: Vec<(usize, parse::Event)>,
    /// The measured CPUs' steal time, read every few ms by the collector.
    steal: steal::StealHistory,
}

impl TraceSession {
    /// Sets up the instance for `cpus` and `threads` measuring threads. The error says why
    /// tracing is unavailable (not root, no tracefs) and that the run goes on without it.
    pub(crate) fn start(plan: &TracePlan, cpus: &[usize], threads: usize) -> Result<TraceSession, String> {
        // SAFETY: geteuid takes no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("tracing needs root (tracefs instances are root-only): running without --trace-threshold snapshots; rerun as root to get them".into());
        }
        let (tracefs, mounted) = tracefs::find_or_mount()
            .map_err(|e| format!("tracefs unavailable ({e}); try `mount -t tracefs nodev /sys/kernel/tracing`; running without tracing"))?;
        let name = format!("rtscope-{}", std::process::id());
        let instance = Instance::create(&tracefs, &name)
            .map_err(|e| format!("cannot create tracing instance {}/instances/{name}: {e}; running without tracing", tracefs.display()))?;
        let mut session = TraceSession {
            instance,
            plan: plan.clone(),
            cpus: cpus.to_vec(),
            events: Vec::new(),
            filters: Default::default(),
            triggers: (0..threads.max(1)).map(|_| TraceTrigger::new(plan.threshold_ns.0)).collect(),
            mounted_tracefs: false,
            state: Mutex::new(State {
                variant: None,
                snapshots: Vec::new(),
                done: 0,
                on_worst: 0,
                tracing_since: 0,
                carry: Vec::new(),
                steal: steal::StealHistory::new(cpus),
            }),
            sampling: Mutex::new(None),
            sampling_error: None,
            idle_states: cpus.iter().map(|&c| (c, idle_states(c))).collect(),
            missing_events: Vec::new(),
            virtualized: virtualized(),
        };
        // From here on, errors drop `session`, which removes the instance; so does a second
        // Ctrl-C, through the signal handler.
        register_instance_path(session.instance.dir());
        session.configure().map_err(|e| format!("tracing set-up failed: {e}; running without tracing"))?;
        session.mounted_tracefs = mounted;
        if !session.missing_events.is_empty() {
            eprintln!("warning: --trace-events: this kernel has no {} (not traced)", session.missing_events.join(", "));
        }
        if let Some(hz) = plan.stack_hz {
            // On a VM, up to three CPUs the run does not measure are sampled as witnesses of
            // the host (`attribute::witnessed`; `Sampling::start` leaves the measured ones
            // out); on bare metal there is no host to witness.
            let witnesses: Vec<usize> = if session.virtualized { crate::sys::sched::online_cpus() } else { Vec::new() };
            match stacks::Sampling::start(cpus, &witnesses, hz) {
                Ok(mut s) => {
                    // The symbols are read here, before anything is measured: reading
                    // /proc/kallsyms is kernel work in long stretches (376 µs each in the
                    // kernel lab's one-CPU stock guest, where the collector shares the
                    // measured CPU), so read during the run it made the very latencies it was
                    // to explain.
                    if let Some(e) = s.set_symbols(stacks::Kallsyms::load()) {
                        eprintln!("warning: {e}");
                        session.sampling_error = Some(e);
                    }
                    *session.sampling.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(s)
                }
                Err(e) => session.sampling_error = Some(e),
            }
        }
        let _ = session.instance.write("trace", "");
        session.instance.write("tracing_on", "1").map_err(|e| format!("cannot start tracing: {e}; running without tracing"))?;
        session.state().tracing_since = now_ns();
        Ok(session)
    }

    fn configure(&mut self) -> std::io::Result<()> {
        let i = &self.instance;
        i.write("tracing_on", "0")?;
        i.write("trace_clock", "mono")?;
        i.write("tracing_cpumask", &cpumask_hex(&self.cpus))?;
        // Smallest buffers on the CPUs not traced (an instance starts with ~1.4 MB per CPU),
        // then the asked size on the measured ones.
        let _ = i.write("buffer_size_kb", "4");
        for &cpu in &self.cpus {
            i.write(&format!("per_cpu/cpu{cpu}/buffer_size_kb"), &self.plan.buffer_kb.to_string())?;
        }
        for ev in expand_events(&self.plan.events) {
            if let Some(group) = ev.name.strip_suffix("/*") {
                let before = self.events.len();
                for name in i.group_events(group) {
                    if (name.ends_with("_entry") || name.ends_with("_exit")) && i.enable_event(&format!("{group}/{name}")) {
                        self.events.push(format!("{group}/{name}"));
                    }
                }
                if self.events.len() == before {
                    self.missing_events.push(ev.name);
                }
                continue;
            }
            // The filter first: an event enabled before it would record unfiltered for a moment.
            if let Some(f) = ev.filter {
                if i.dir().join(format!("events/{}/filter", ev.name)).exists() {
                    i.write(&format!("events/{}/filter", ev.name), f)?;
                }
            }
            if i.enable_event(&ev.name) {
                if let Some(f) = ev.filter {
                    self.filters.insert(ev.name.clone(), f.to_string());
                }
                self.events.push(ev.name);
            } else {
                self.missing_events.push(ev.name);
            }
        }
        // Idle states: the idle task's time is charged to the state it was in (cheap: two
        // events per idle period, none while the CPU is busy).
        if i.dir().join("events/power/cpu_idle").exists() && !self.events.iter().any(|e| e == "power/cpu_idle") && i.enable_event("power/cpu_idle") {
            self.events.push("power/cpu_idle".into());
        }
        if !self.events.iter().any(|e| e == "sched/sched_switch") {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "this kernel has no sched/sched_switch event"));
        }
        Ok(())
    }

    /// The shared state; a panic elsewhere while holding it leaves nothing half-written
    /// that matters here, so a poisoned lock is used as is.
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The trigger of measuring thread `index`.
    pub(crate) fn trigger(&self, index: usize) -> Option<&TraceTrigger> {
        self.triggers.get(index)
    }

    pub(crate) fn instance_dir(&self) -> PathBuf {
        self.instance.dir().to_path_buf()
    }

    pub(crate) fn events(&self) -> &[String] {
        &self.events
    }

    /// The collector thread's loop: handle raised triggers every millisecond until `done`.
    /// It stays SCHED_OTHER (never competes with real-time work) but asks for nice -10, so
    /// that on a loaded host it still reads a late sample's buffer before it is overwritten.
    pub(crate) fn collect(&self, done: &AtomicBool) {
        // SAFETY: gettid cannot fail; setpriority on our own thread id only changes its nice
        // value, and failure (no CAP_SYS_NICE) just leaves it at 0.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -10);
        }
        while !done.load(Ordering::Relaxed) {
            self.drain_stacks();
            self.state().steal.read(now_ns(), false);
            self.handle_pending();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Takes a snapshot for every raised trigger (tracing is off while the buffers are read).
    /// Once `max_snapshots` are kept, a worse sample replaces the mildest one kept.
    pub(crate) fn handle_pending(&self) {
        let mut st = self.state();
        let raised: Vec<usize> = (0..self.triggers.len()).filter(|&i| self.triggers[i].pending.load(Ordering::Acquire)).collect();
        if raised.is_empty() {
            return;
        }
        let room = (self.plan.max_snapshots.saturating_sub(st.done)) as usize;
        let _ = self.instance.write("tracing_on", "0");
        self.drain_stacks();
        // A reading after every window's end, for its steal time.
        st.steal.read(now_ns(), true);
        let sampling = self.sampling.lock().unwrap_or_else(|p| p.into_inner());
        let mut read_cpus: Vec<usize> = Vec::new();
        let mut new_carry: Vec<(usize, Vec<parse::Event>)> = Vec::new();
        for &i in &raised {
            let t = &self.triggers[i];
            let (due, wake, seq) = (t.due_ns.load(Ordering::Relaxed), t.wake_ns.load(Ordering::Relaxed), t.seq.load(Ordering::Relaxed));
            let latency_ns = wake.saturating_sub(due);
            let mildest = st.snapshots.iter().enumerate().min_by_key(|(_, s)| s.latency_ns).map(|(k, s)| (k, s.latency_ns));
            let replace = match mildest {
                _ if st.snapshots.len() < room => None,
                Some((k, l)) if latency_ns > l => Some(k),
                _ => continue,
            };
            let (cpu, tid) = (t.cpu.load(Ordering::Relaxed), t.tid.load(Ordering::Relaxed));
            let text = self.instance.read(&format!("per_cpu/cpu{cpu}/trace")).unwrap_or_default();
            read_cpus.push(cpu);
            // What the CPU was doing when its buffer was last cleared holds until its first
            // event here, when nothing of this read was overwritten (else the trace begins
            // at its oldest event left, and the time before is untraced).
            let mut events: Vec<parse::Event> = Vec::new();
            if parse::nothing_overwritten(&text) {
                events.extend(st.carry.iter().filter(|(c, _)| *c == cpu).map(|(_, e)| e.clone()));
            }
            events.extend(parse::parse_trace(&text));
            if !new_carry.iter().any(|(c, _)| *c == cpu) {
                new_carry.push((cpu, carry(&events, cpu)));
            }
            let samples = sampling.as_ref().map(|s| (s.window_samples(cpu, due, wake), s.period_ns));
            // The other vCPUs over their whole history before the window (a witness's gap
            // may begin long before it, and it must be seen busy before its gap) to a
            // little after it (its first sample after a stop).
            let witnesses = match sampling.as_ref() {
                Some(s) if self.virtualized => s.witness_samples(cpu, due.saturating_sub(stacks::HISTORY_NS), wake + 2 * s.period_ns),
                _ => Vec::new(),
            };
            let ctx = attribute::Context {
                self_pid: (tid != 0).then_some(tid),
                traced_since: st.tracing_since,
                idle_states: self.idle_states.iter().find(|(c, _)| *c == cpu).map_or(&[][..], |(_, v)| &v[..]),
                stacks: samples.as_ref().map(|(v, p)| (&v[..], *p)),
                steal_ns: st.steal.over(cpu, due, wake),
                virtualized: self.virtualized,
                witnesses: &witnesses,
            };
            let window = attribute::attribute_in(&events, cpu, due, wake, &ctx);
            let snap = Snapshot { variant: st.variant.clone(), thread: i, seq, latency_ns, window };
            match replace {
                Some(k) => st.snapshots[k] = snap,
                None => st.snapshots.push(snap),
            }
        }
        drop(sampling);
        self.raise_handover(&st, room);
        // Only the buffers read are cleared; every window is cut by time anyway.
        for (cpu, carry) in new_carry {
            st.carry.retain(|(c, _)| *c != cpu);
            st.carry.extend(carry.into_iter().map(|e| (cpu, e)));
        }
        for cpu in read_cpus {
            let _ = self.instance.write(&format!("per_cpu/cpu{cpu}/trace"), "");
        }
        let _ = self.instance.write("tracing_on", "1");
        st.tracing_since = now_ns();
        // Every raised trigger is re-armed only now: a window handed over while tracing was
        // still off (a loaded collector can be held up between the two) could only be
        // reported untraced.
        for i in raised {
            self.triggers[i].pending.store(false, Ordering::Release);
        }
    }

    /// Moves the sampled call chains from the rings to the histories.
    fn drain_stacks(&self) {
        if let Some(s) = self.sampling.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            s.drain();
        }
    }

    /// A new variant's threads are about to start: the windows still pending are the
    /// previous variant's (its threads have ended), so they are taken first; later ones are
    /// labelled `variant`. Not on a measuring thread's hot path.
    pub(crate) fn begin_variant(&self, variant: Option<&str>) {
        self.handle_pending();
        self.state().variant = variant.map(str::to_string);
    }

    /// With every snapshot slot used, only samples worse than the mildest kept are handed
    /// over; with no room at all, none are.
    fn raise_handover(&self, st: &State, room: usize) {
        let floor = if room == 0 {
            u64::MAX
        } else if st.snapshots.len() >= room {
            st.snapshots.iter().map(|s| s.latency_ns).min().unwrap_or(0).max(self.plan.threshold_ns.0)
        } else {
            self.plan.threshold_ns.0
        };
        for t in &self.triggers {
            t.handover_ns.store(floor, Ordering::Relaxed);
        }
    }

    /// Attaches the snapshots of the probe that just ran to the matching `worst[]` samples
    /// of `results` (same variant, thread and sequence number). Call after each probe has run.
    pub(crate) fn attach(&self, results: &mut [ProbeResult]) {
        self.handle_pending();
        let mut st = self.state();
        let mut placed = vec![false; st.snapshots.len()];
        for r in results.iter_mut() {
            for w in r.worst.iter_mut() {
                if let Some(k) = st.snapshots.iter().position(|s| s.variant == r.variant && s.thread == w.thread && s.seq == w.seq) {
                    w.trace = Some(st.snapshots[k].window.clone());
                    placed[k] = true;
                }
            }
        }
        st.on_worst += placed.iter().filter(|p| **p).count() as u32;
        st.done += st.snapshots.len() as u32;
        st.snapshots.clear();
        // Sequence numbers restart with the next probe.
        let room = self.plan.max_snapshots.saturating_sub(st.done) as usize;
        self.raise_handover(&st, room);
        for t in &self.triggers {
            t.pending.store(false, Ordering::Release);
        }
    }

    pub(crate) fn summary(&self) -> TraceSummary {
        let st = self.state();
        TraceSummary {
            instance: self.instance.dir().display().to_string(),
            events: self.events.clone(),
            filters: self.filters.clone(),
            over_threshold: self.triggers.iter().map(|t| t.over.load(Ordering::Relaxed)).sum(),
            snapshots: st.done + st.snapshots.len() as u32,
            on_worst: st.on_worst,
            stacks: self.plan.stack_hz.map(|hz| {
                let sampling = self.sampling.lock().unwrap_or_else(|p| p.into_inner());
                crate::model::trace::SamplingSummary {
                    period_ns: crate::model::Nanos(1_000_000_000 / u64::from(hz.max(1))),
                    samples: sampling.as_ref().map_or(0, |s| s.samples),
                    lost: sampling.as_ref().map_or(0, |s| s.lost),
                    unavailable: self.sampling_error.clone(),
                }
            }),
            missing_events: self.missing_events.clone(),
        }
    }
}

impl Drop for TraceSession {
    fn drop(&mut self) {
        // The path stays registered until the directory is gone: a second
        // signal arriving in the middle of this removal must still find it
        // (the handler's rmdir then fails harmlessly or wins the race).
        if let Err(e) = self.instance.remove() {
            eprintln!("warning: could not remove tracing instance {}: {e}; remove it with rmdir", self.instance.dir().display());
        }
        unregister_instance_path();
    }
}

/// What carries across a clear of `cpu`'s buffer: its last switch (who is on the CPU until
/// the next one) and [`idle_carry`]'s idle entry after it, in time order.
fn carry(events: &[parse::Event], cpu: usize) -> Vec<parse::Event> {
    let mut out: Vec<parse::Event> = events.iter().rev().find(|e| matches!(e.kind, parse::EventKind::Switch { .. })).cloned().into_iter().collect();
    out.extend(idle_carry(events, cpu));
    out
}

/// Whether the host is a virtual machine (the `hypervisor` CPU flag, or QEMU's
/// emulation), as the host fingerprint says.
fn virtualized() -> bool {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    crate::sysinfo::cpu_flags(&cpuinfo).any(|f| f == "hypervisor") || crate::sysinfo::emulation(&crate::sysinfo::SysRoot::default(), &cpuinfo).is_some()
}

/// The `power/cpu_idle` entry `cpu` was still in at the end of `events` (none after it, no
/// switch after it). Its buffer is cleared after the read, and an idle CPU writes no event
/// until it wakes, so without this the next window on a CPU that stayed idle would have
/// nothing before it (all "not traced"), and the idle time in it no state. Put in front of
/// the next read, it gives the state; any event of the next read that shows the CPU busy
/// (a switch, an exit from idle, a task's line) overrides it.
fn idle_carry(events: &[parse::Event], cpu: usize) -> Option<parse::Event> {
    let last = events.iter().rev().find(|e| match &e.kind {
        parse::EventKind::CpuIdle { cpu_id, .. } => *cpu_id as usize == cpu,
        parse::EventKind::Switch { .. } => true,
        _ => e.pid != 0,
    })?;
    matches!(last.kind, parse::EventKind::CpuIdle { state: Some(_), .. }).then(|| last.clone())
}

/// The cpuidle states of `cpu` from sysfs (`cpuidle/stateN/name`, `latency` in µs), by
/// index. Without a cpuidle driver (no `cpuidle` directory: `current_driver` reads `none`)
/// the kernel's own idle loop still emits `power/cpu_idle`: state 0 from its polling loop
/// (`cpu_idle_poll`, `idle=poll`) and state 1 from its default idle (`default_idle_call`:
/// `arch_cpu_idle`, HLT on x86, WFI on arm64) — [`NO_DRIVER_IDLE`], whose exit latency no
/// driver declares (0 here: no latency advice is drawn from it; a halted vCPU's wait for its
/// host is host time, told by steal).
fn idle_states(cpu: usize) -> Vec<attribute::IdleState> {
    let dir = PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle"));
    if !dir.exists() {
        return NO_DRIVER_IDLE.iter().map(|n| attribute::IdleState { name: (*n).to_string(), exit_latency_ns: 0 }).collect();
    }
    let mut out = Vec::new();
    for k in 0.. {
        let d = dir.join(format!("state{k}"));
        let (Ok(name), Ok(lat)) = (std::fs::read_to_string(d.join("name")), std::fs::read_to_string(d.join("latency"))) else { break };
        out.push(attribute::IdleState { name: name.trim().to_string(), exit_latency_ns: lat.trim().parse::<u64>().unwrap_or(0) * 1000 });
    }
    out
}

/// The idle states of a CPU without a cpuidle driver, by `power/cpu_idle`'s `state=`.
const NO_DRIVER_IDLE: [&str; 2] = ["poll (no cpuidle driver)", "halt (no cpuidle driver)"];

/// `tracing_cpumask` wants a hex mask, 32-bit groups separated by commas.
fn cpumask_hex(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max / 32 + 1];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
}

/// Path of the live instance as a C string, for the signal handler (never freed: a handler
/// may still be reading it).
static INSTANCE_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

fn register_instance_path(dir: &std::path::Path) {
    if let Ok(c) = CString::new(dir.as_os_str().as_encoded_bytes()) {
        INSTANCE_PATH.store(c.into_raw(), Ordering::SeqCst);
    }
}

fn unregister_instance_path() {
    INSTANCE_PATH.store(std::ptr::null_mut(), Ordering::SeqCst);
}

/// Registers, for the ending signals (`sys::signal::ENDING`), removal of the live instance when `stop` is already
/// raised — i.e. on the second signal, which exits the process at once without running
/// destructors. Must be registered before that exit action so it runs first.
pub(crate) fn register_signal_cleanup(stop: Arc<AtomicBool>) -> std::io::Result<()> {
    for sig in crate::sys::signal::ENDING {
        let stop = Arc::clone(&stop);
        let action = move || {
            if stop.load(Ordering::SeqCst) {
                let p = INSTANCE_PATH.load(Ordering::SeqCst);
                if !p.is_null() {
                    // SAFETY: `p` is a leaked, never-freed NUL-terminated path; rmdir(2),
                    // fork(2), close(2), nanosleep(2) and _exit(2) are async-signal-safe, and the
                    // child calls nothing else (no allocation, no lock).
                    unsafe {
                        if libc::rmdir(p) != 0 {
                            // EBUSY: the reader thread still holds a file of the
                            // instance open, and this process exits right after this
                            // handler. A child outlives it by a moment and retries
                            // once the exit has closed those files (≤ 2 s, then gone).
                            if libc::fork() == 0 {
                                // The child inherited the reader's descriptors,
                                // which keep the instance busy: close them all.
                                for fd in 0..4096 {
                                    libc::close(fd);
                                }
                                let ts = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
                                for _ in 0..200 {
                                    if libc::rmdir(p) == 0 {
                                        libc::_exit(0);
                                    }
                                    libc::nanosleep(&ts, std::ptr::null_mut());
                                }
                                libc::_exit(1);
                            }
                        }
                    }
                }
            }
        };
        // SAFETY: the action only performs atomic loads, rmdir(2), fork(2), close(2),
        // nanosleep(2) and _exit(2), all async-signal-safe; it allocates nothing and takes no lock.
        unsafe { signal_hook::low_level::register(sig, action) }?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumask() {
        assert_eq!(cpumask_hex(&[1]), "00000002");
        assert_eq!(cpumask_hex(&[0, 2, 3]), "0000000d");
        assert_eq!(cpumask_hex(&[33]), "00000002,00000000");
    }

    #[test]
    fn trigger_hands_over_one_window_at_a_time() {
        let t = TraceTrigger::new(500);
        t.fire(10, 900, 3);
        t.fire(20, 800, 4);
        assert!(t.pending.load(Ordering::Acquire));
        assert_eq!((t.due_ns.load(Ordering::Relaxed), t.seq.load(Ordering::Relaxed)), (10, 3));
        assert_eq!(t.over.load(Ordering::Relaxed), 2);
        // Snapshots full, mildest kept is 2000 ns: a 1500 ns sample is counted, not handed over.
        t.pending.store(false, Ordering::Release);
        t.handover_ns.store(2000, Ordering::Relaxed);
        t.fire(0, 1500, 5);
        assert!(!t.pending.load(Ordering::Acquire));
        t.fire(0, 2500, 6);
        assert_eq!((t.pending.load(Ordering::Acquire), t.seq.load(Ordering::Relaxed)), (true, 6));
        assert_eq!(t.over.load(Ordering::Relaxed), 4);
    }
}
