//! Advice from the evidence of the traced windows: the common culprits that the
//! attribution and the code paths reveal, mapped to the fix a user applies. The texts of
//! fixes that doctor also gives are doctor's (one place for each); each piece of advice
//! says what it rests on, and none is given without a window that shows it.
//!
//! Each rule says what it needs from a window, and is silent without it. The time a CPU
//! did not run (culprit kind `host`: no sample and no event while a task held it, and
//! steal grew or the clock fired in user code) is nobody's: it is taken off the tasks
//! before any rule reads them, and no task rule takes it as evidence.
//!
//! Rules (a culprit "held" a window when it had at least [`HELD_SHARE`] of it):
//! - the CPU not running held most of a window (its top culprit is `host`) → on a VM,
//!   what makes the host run the vCPU (pinned vCPUs, a dedicated host core, a guest
//!   that polls instead of halting, bare metal), once per run; on bare metal, SMIs;
//! - a code path or a gap's end in the kernel's console write (`console_unlock`,
//!   `serial8250_console_write`, `vprintk_emit`, ...) → the console log level, and the
//!   serial console;
//! - a code path through `devkmsg_open` (a process opening `/dev/kmsg`: each open scans
//!   the printk ring for its first record, with no preemption point on a voluntary or
//!   no-preemption kernel) → keep the device open, or move the writer;
//! - an idle state with an exit latency held a window → `/dev/cpu_dma_latency` and the
//!   idle state limits;
//! - a device IRQ held a window → its affinity;
//! - a `kworker/` task held a window and was sampled in it (when the window was
//!   sampled) → the workqueue cpumask;
//! - another real-time task held a window and was sampled in it (idem) → its placement
//!   or priority;
//! - an ordinary task held a window in a kernel code path (its most sampled path is no
//!   `[user]` one) on a kernel that cannot preempt kernel code (`none`, `voluntary`) →
//!   doctor's preemption-model fix: a woken real-time thread waits for that path's
//!   next preemption point;
//! - RT throttling: the measuring threads are real-time, throttling is on (the run's
//!   `sched.rt_throttling` doctor evidence: `sched_rt_runtime_us` < `sched_rt_period_us`),
//!   and in a window ordinary tasks (kernel priority ≥ 100) that the kernel could preempt
//!   held the CPU for at least [`HELD_SHARE`] of it, at least a tenth of the throttled
//!   stretch (`period − runtime`, and 1 ms) and at most that stretch: a runnable real-time
//!   thread loses the CPU to an ordinary task only while its class is throttled. "Could
//!   preempt": the kernel is preemptible (full, lazy, rt), or the task was sampled in user
//!   mode; an ordinary task inside a non-preemptible kernel section is not throttling.
//!   The tasks must have been sampled running: their samples cover at least half of
//!   their time (a throttled CPU running them takes samples at the sampling rate), so a
//!   window without call-chain samples is no evidence. Idle time is no evidence (in a
//!   VM a halted vCPU's timer can come late), nor is time the CPU did not run. The
//!   ordinary tasks of such a window are not blamed by the other rules.

use crate::doctor::{
    console::FIX_CONSOLE_LOGLEVEL, cpuidle::FIX_DMA_LATENCY, irq::fix_irq_affinity, preempt::FIX_RT_KERNEL, sched::FIX_RT_THROTTLING, vm::FIX_VM,
};
use crate::model::{Run, TraceWindow};

/// A culprit that held a window: name, IRQ number, exit latency (ns), kernel priority,
/// whether it was sampled (true when the window has no sampling), its top code path.
type Held = (String, Option<u32>, Option<u64>, Option<i32>, bool, Option<Vec<String>>);

/// A culprit holding at least this share of a window is said to have held it.
pub(crate) const HELD_SHARE: f64 = 0.2;

/// Kernel functions of the console write path (legacy and nbcon consoles, 8250 UART).
const CONSOLE_FRAMES: &[&str] = &[
    "console_unlock",
    "console_flush_all",
    "console_emit_next_record",
    "serial8250_console_write",
    "univ8250_console_write",
    "nbcon_emit_next_record",
    "vprintk_emit",
];

/// Kernel functions of an open of `/dev/kmsg` and its scan of the printk ring.
const KMSG_OPEN_FRAMES: &[&str] = &["devkmsg_open", "prb_first_valid_seq"];

/// One piece of advice per cause seen in the run's traced windows, in the order: console,
/// /dev/kmsg opens, idle states, IRQs, workqueues, real-time tasks, RT throttling. Empty when nothing traced
/// shows a cause.
pub(crate) fn advice(run: &Run) -> Vec<String> {
    let windows: Vec<&TraceWindow> =
        crate::model::merged_or_sole(&run.results, |r| r).into_iter().flat_map(|r| r.worst.iter().filter_map(|w| w.trace.as_ref())).collect();
    let measured: Vec<usize> = {
        let mut v: Vec<usize> = windows.iter().map(|w| w.cpu).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let housekeeping: Vec<usize> = run.host.cpus_online.iter().copied().filter(|c| !measured.contains(c)).collect();
    let mut out = Vec::new();
    out.extend(host_advice(run, &windows));
    out.extend(console_advice(run, &windows));
    out.extend(kmsg_open_advice(run, &windows));
    let throttle = rt_throttle(run);
    let seen = Seen::of(run, &windows, throttle);
    seen.advice(&housekeeping, &measured, &mut out);
    if let Some((name, frames, n)) = seen.kernel_paths.first().filter(|_| !kernel_preempts(run)) {
        let fix = run.host.doctor.iter().find(|f| f.id == "preempt.model").and_then(|f| f.fix.clone()).unwrap_or_else(|| FIX_RT_KERNEL.to_string());
        let others = seen.kernel_paths.len() - 1;
        out.push(format!(
            "a non-preemptible kernel path held late samples ({name} in {}{}, {n} traced sample(s)): this kernel ({} preemption) lets a woken real-time thread in only at that path's next preemption point. {fix}",
            crate::trace::report::top_frames(frames),
            if others > 0 { format!(", and {others} more") } else { String::new() },
            run.host.preempt_model
        ));
    }
    if let (Some((runtime, period)), Some((ns, span))) = (throttle, seen.throttled.iter().max_by_key(|(ns, _)| *ns)) {
        out.push(format!(
            "RT throttling ({} traced sample(s): the real-time measuring thread was due while ordinary tasks ran, {:.1}ms of a {:.1}ms window; real-time tasks may use {runtime} of every {period} us here, so they are stopped for up to {} us when they use more): {FIX_RT_THROTTLING} Better: find the real-time task that uses {:.0}% of the CPU (the windows before the throttled one name it).",
            seen.throttled.len(),
            *ns as f64 / 1e6,
            *span as f64 / 1e6,
            period - runtime,
            runtime as f64 * 100.0 / period as f64,
        ));
    }
    out
}

/// The host rule: windows whose largest part is time the CPU did not run, once per run.
/// Windows held by time that may as well be interrupts off (a VM with no steal clock,
/// [`crate::trace::attribute::HOST_OR_OFF`]) are named apart: no claim of the host's.
fn host_advice(run: &Run, windows: &[&TraceWindow]) -> Option<String> {
    let held: Vec<&&TraceWindow> = windows.iter().filter(|w| w.host_held()).collect();
    let (maybe, sure): (Vec<&&TraceWindow>, Vec<&&TraceWindow>) = held.into_iter().partition(|w| crate::trace::attribute::host_unsure(w));
    let Some(longest) = sure.iter().map(|w| w.host_ns()).max() else {
        let longest = maybe.iter().map(|w| w.host_ns()).max()?;
        return Some(format!(
            "the vCPU ran no code the sampling clock could interrupt for up to {:.1}ms in {} of {} traced sample(s), in kernel code, with no steal time to tell why: the host did not run it, or the guest kernel kept interrupts off. Run once more with the vCPU pinned to a host core of its own: what stays is the guest's. {FIX_VM}",
            longest as f64 / 1e6,
            maybe.len(),
            windows.len()
        ));
    };
    let steal: u64 = sure.iter().filter_map(|w| w.steal_ns).map(|n| n.0).max().unwrap_or(0);
    let evidence = format!(
        "{} of {} traced sample(s), up to {:.1}ms with no sample and no event{}{}",
        sure.len(),
        windows.len(),
        longest as f64 / 1e6,
        if steal > 0 { format!(", steal +{}us", steal / 1000) } else { String::new() },
        if maybe.is_empty() { String::new() } else { format!("; {} more the host's or interrupts off", maybe.len()) }
    );
    Some(if run.host.virtualized {
        format!(
            "the host did not run this VM's vCPU ({evidence}): in the guest, poll instead of halting (`idle=poll` on the boot line, or the `cpuidle-haltpoll` driver: a halted vCPU waits for the host to wake it). {FIX_VM}"
        )
    } else {
        format!(
            "the CPU did not run ({evidence}): system management interrupts or the hardware; check the firmware's SMI sources and power management settings, or measure them with the hwlat tracer."
        )
    })
}

/// The console rule: a console-write frame in a window's code paths or at a gap's end.
fn console_advice(run: &Run, windows: &[&TraceWindow]) -> Option<String> {
    let console: Vec<&str> = windows
        .iter()
        .filter_map(|w| {
            let path_frames = w.culprits.iter().flat_map(|c| c.paths.iter()).flat_map(|p| p.frames.iter());
            let gap_frames = w.stacks.iter().flat_map(|s| s.gaps.iter()).flat_map(|g| g.ended_by.iter());
            path_frames.chain(gap_frames).find_map(|f| CONSOLE_FRAMES.iter().find(|c| f == *c).copied())
        })
        .collect();
    let frame = console.first()?;
    let serial = run.host.cmdline.split_whitespace().any(|t| t.starts_with("console=ttyS") || t.starts_with("console=ttyAMA"));
    Some(format!(
        "console printing ({frame} in {} traced sample(s)): {FIX_CONSOLE_LOGLEVEL}{}",
        console.len(),
        if serial { " Or move the console off the serial line (the boot line has a serial console=)." } else { "" }
    ))
}

/// The /dev/kmsg rule: `devkmsg_open` (or its ring scan) in a window's code paths.
fn kmsg_open_advice(run: &Run, windows: &[&TraceWindow]) -> Option<String> {
    let mut who: Vec<String> = Vec::new();
    let mut n = 0;
    for w in windows {
        let mut here = false;
        for c in &w.culprits {
            if c.paths.iter().any(|p| p.frames.iter().any(|f| KMSG_OPEN_FRAMES.contains(&f.as_str()))) {
                here = true;
                // A stretch before tracing began has the path but no task name.
                if c.kind == "task" && !who.contains(&c.name) {
                    who.push(c.name.clone());
                }
            }
        }
        n += usize::from(here);
    }
    (n > 0).then(|| {
        let preemptible = kernel_preempts(run);
        format!(
            "opening /dev/kmsg (devkmsg_open{} in {n} traced sample(s)): each open scans the kernel's printk ring for its first record{}. \
             Have the writer open /dev/kmsg once and keep it open (a shell: exec 3>/dev/kmsg, then echo ... >&3), or log through syslog, \
             or run it off the measured CPUs.",
            if who.is_empty() { String::new() } else { format!(" by {}", who.join(", ")) },
            if preemptible { "" } else { ", and this kernel cannot preempt that scan" }
        )
    })
}

/// The culprits that held windows, each once, by rule: idle states (with their exit
/// latency), device IRQs, workqueue workers, real-time tasks (kernel priority), and
/// the windows with the RT throttling signature (ordinary tasks' time, window span).
#[derive(Default)]
struct Seen {
    idle: Vec<(String, u64)>,
    irqs: Vec<(u32, String)>,
    kworkers: Vec<String>,
    rt: Vec<(String, i32)>,
    throttled: Vec<(u64, u64)>,
    /// Ordinary tasks that held a window in a kernel path: name, path, windows.
    kernel_paths: Vec<(String, Vec<String>, u32)>,
}

impl Seen {
    fn of(run: &Run, windows: &[&TraceWindow], throttle: Option<(u64, u64)>) -> Seen {
        let mut s = Seen::default();
        for w in windows {
            let throttled_here = throttle.and_then(|t| throttled_ns(run, w, t));
            if let Some(ns) = throttled_here {
                s.throttled.push((ns, w.end_ns.0.saturating_sub(w.start_ns.0)));
            }
            for (name, _, lat, ..) in held(w, "idle") {
                if let Some(l) = lat.filter(|l| *l > 0) {
                    if !s.idle.iter().any(|(n, _)| *n == name) {
                        s.idle.push((name, l));
                    }
                }
            }
            for (name, irq, ..) in held(w, "irq") {
                if let Some(n) = irq.filter(|n| !s.irqs.iter().any(|(i, _)| i == n)) {
                    s.irqs.push((n, name));
                }
            }
            for (name, _, _, prio, sampled, path) in held(w, "task") {
                if throttled_here.is_some() && prio.is_some_and(|p| p >= 100) {
                    // Ran because the real-time class was throttled: not its fault.
                    continue;
                }
                if !sampled {
                    // The trace says it was current, no sample says it ran.
                    continue;
                }
                if let Some(frames) = path.filter(|f| prio.is_some_and(|p| p >= 100) && f.first().is_some_and(|f0| !f0.starts_with('['))) {
                    match s.kernel_paths.iter_mut().find(|(n, _, _)| *n == name) {
                        Some(k) => k.2 += 1,
                        None => s.kernel_paths.push((name.clone(), frames, 1)),
                    }
                }
                if name.starts_with("kworker/") {
                    if !s.kworkers.contains(&name) {
                        s.kworkers.push(name);
                    }
                } else if let Some(p) = prio.filter(|p| *p < 100) {
                    if !s.rt.iter().any(|(n, _)| *n == name) {
                        s.rt.push((name, p));
                    }
                }
            }
        }
        s
    }

    /// The idle-state, IRQ, workqueue and real-time-task advice, in that order.
    fn advice(&self, housekeeping: &[usize], measured: &[usize], out: &mut Vec<String>) {
        let hk = crate::units::cpu_list_str(housekeeping);
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        if !self.idle.is_empty() {
            let states: Vec<String> = self.idle.iter().map(|(n, l)| format!("{n} (exit latency {:.1}us)", *l as f64 / 1e3)).collect();
            out.push(format!(
                "idle state{} {} held late samples: {FIX_DMA_LATENCY}, or disable the state{}: `echo 1 > /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable`.",
                plural(self.idle.len()),
                states.join(", "),
                plural(self.idle.len())
            ));
        }
        if !self.irqs.is_empty() {
            let names: Vec<String> = self.irqs.iter().map(|(n, d)| format!("{n} ({d})")).collect();
            let fix = if housekeeping.is_empty() {
                "every online CPU is measured: leave one out for housekeeping and steer the IRQs there.".to_string()
            } else {
                fix_irq_affinity(&self.irqs.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>(), &hk, &crate::units::cpu_list_str(measured))
            };
            out.push(format!("device IRQ{} {} held late samples: {fix}", plural(self.irqs.len()), names.join(", ")));
        }
        if !self.kworkers.is_empty() {
            out.push(format!(
                "workqueue worker{} {} held late samples: keep unbound work off the measured CPUs with `echo {} > /sys/devices/virtual/workqueue/cpumask` (a hex mask of the housekeeping CPUs {}); work bound to a CPU stays: its code path names its source.",
                plural(self.kworkers.len()),
                self.kworkers.join(", "),
                cpumask_hex(housekeeping),
                if hk.is_empty() { "-".to_string() } else { hk.clone() }
            ));
        }
        if !self.rt.is_empty() {
            let names: Vec<String> = self.rt.iter().map(|(n, p)| format!("{n} (rt prio {})", 99 - p)).collect();
            out.push(format!(
                "real-time task{} {} held late samples: move {} off the measured CPUs (`taskset -p`), or below the measuring threads' priority (`chrt -p`).",
                plural(self.rt.len()),
                names.join(", "),
                if self.rt.len() == 1 { "it" } else { "them" }
            ));
        }
    }
}

/// The culprits of `kind` that held window `w` (at least [`HELD_SHARE`] of it).
fn held(w: &TraceWindow, kind: &str) -> Vec<Held> {
    let span = w.end_ns.0.saturating_sub(w.start_ns.0).max(1) as f64;
    w.culprits
        .iter()
        .filter(|c| c.kind == kind && c.duration_ns.0 as f64 / span >= HELD_SHARE)
        .map(|c| {
            let sampled = w.stacks.is_none() || !c.paths.is_empty();
            (c.name.clone(), c.irq, c.exit_latency_ns.map(|n| n.0), c.prio, sampled, c.paths.first().map(|p| p.frames.clone()))
        })
        .collect()
}

/// `(sched_rt_runtime_us, sched_rt_period_us)` from the run's doctor evidence, when RT
/// throttling was on (a runtime below the period; -1 is off).
fn rt_throttle(run: &Run) -> Option<(u64, u64)> {
    let f = run.host.doctor.iter().find(|f| f.id == "sched.rt_throttling")?;
    let value = |file: &str| f.evidence.iter().find(|e| e.path.ends_with(file)).and_then(|e| e.value.trim().parse::<i64>().ok());
    let (runtime, period) = (value("sched_rt_runtime_us")?, value("sched_rt_period_us")?);
    (runtime >= 0 && period > 0 && runtime < period).then_some((runtime as u64, period as u64))
}

/// Whether the run's kernel preempts kernel code (full, lazy or rt preemption).
fn kernel_preempts(run: &Run) -> bool {
    matches!(run.host.preempt_model.as_str(), "full" | "lazy" | "rt") || run.host.realtime
}

/// The time ordinary tasks held window `w` of a real-time measuring thread when it has
/// the RT throttling signature (the module's rules), else `None`.
fn throttled_ns(run: &Run, w: &TraceWindow, (runtime, period): (u64, u64)) -> Option<u64> {
    let realtime = matches!(run.plan.policy.as_str(), "fifo" | "rr") && run.plan.priority > 0;
    if !realtime {
        return None;
    }
    let preemptible = kernel_preempts(run);
    let ordinary: Vec<&crate::model::trace::Culprit> = w
        .culprits
        .iter()
        .filter(|c| c.kind == "task" && c.prio.is_some_and(|p| p >= 100))
        .filter(|c| preemptible || c.paths.iter().any(|p| p.frames.first().is_some_and(|f| f.starts_with("[user]"))))
        .collect();
    let ns: u64 = ordinary.iter().map(|c| c.duration_ns.0).sum();
    // Sampled running: their samples cover at least half of their time.
    let stacks = w.stacks.as_ref()?;
    let samples: u64 = ordinary.iter().flat_map(|c| c.paths.iter()).map(|p| u64::from(p.samples)).sum();
    if samples * stacks.period_ns.0 * 2 < ns {
        return None;
    }
    let span = w.end_ns.0.saturating_sub(w.start_ns.0).max(1);
    let stretch = (period - runtime) * 1_000;
    let least = (stretch / 10).max(1_000_000);
    (ns as f64 / span as f64 >= HELD_SHARE && ns >= least && ns <= stretch + stretch / 10).then_some(ns)
}

/// A CPU list as the hex mask sysfs cpumask files take.
fn cpumask_hex(cpus: &[usize]) -> String {
    let mut words = vec![0u32; cpus.iter().max().map_or(1, |m| m / 32 + 1)];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words.iter().rev().map(|w| format!("{w:x}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trace::{CodePath, Culprit, SampleGap, WindowStacks};
    use crate::units::Nanos;

    fn golden() -> Run {
        serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap()
    }

    fn set_windows(run: &mut Run, culprits: Vec<Culprit>, stacks: Option<WindowStacks>) {
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            w.start_ns = Nanos(0);
            w.end_ns = Nanos(1_000_000);
            w.culprits = culprits.clone();
            w.stacks = stacks.clone();
        }
    }

    fn c(kind: &str, name: &str, ns: u64) -> Culprit {
        Culprit { kind: kind.into(), name: name.into(), duration_ns: Nanos(ns), count: 1, ..Default::default() }
    }

    #[test]
    fn each_cause_gets_its_fix_and_only_with_evidence() {
        let mut run = golden();
        run.host.cpus_online = vec![0, 1];
        run.host.cmdline = "root=/dev/vda console=ttyS0,115200".into();
        // Nothing held a window long enough: no advice.
        set_windows(&mut run, vec![c("irq", "virtio0", 100_000), c("task", "kworker/1:2", 100_000)], None);
        assert!(advice(&run).is_empty(), "{:?}", advice(&run));

        let mut hog = c("task", "dd", 700_000);
        hog.prio = Some(0);
        hog.paths = vec![CodePath { frames: vec!["read_zero".into(), "vfs_read".into()], samples: 3, share: 1.0 }];
        let mut irq = c("irq", "virtio0-input.0", 300_000);
        irq.irq = Some(25);
        let mut idle = c("idle", "haltpoll", 250_000);
        idle.exit_latency_ns = Some(Nanos(1_000));
        let gap = SampleGap {
            start_after_ns: Nanos(0),
            length_ns: Nanos(400_000),
            ended_by: vec!["_raw_spin_unlock_irqrestore".into(), "console_unlock".into()],
            not_running: false,
            maybe_interrupts_off: false,
            witnessed_ns: None,
        };
        let mut kworker = c("task", "kworker/1:2", 200_000);
        kworker.paths = vec![CodePath { frames: vec!["[user] kworker/1:2".into()], samples: 1, share: 0.25 }];
        set_windows(&mut run, vec![hog, irq, idle, kworker], Some(WindowStacks { period_ns: Nanos(250_000), samples: 4, expected: 4, gaps: vec![gap] }));
        let a = advice(&run);
        let cpu = run.results.iter().flat_map(|r| r.worst.iter()).find_map(|w| w.trace.as_ref()).unwrap().cpu;
        assert_eq!(a.len(), 5, "{a:#?}");
        assert!(a[0].starts_with("console printing (console_unlock in ") && a[0].contains(FIX_CONSOLE_LOGLEVEL) && a[0].contains("serial"), "{}", a[0]);
        assert!(a[1].contains("haltpoll (exit latency 1.0us)") && a[1].contains(FIX_DMA_LATENCY), "{}", a[1]);
        let hk = if cpu == 0 { "1" } else { "0" };
        assert!(a[2].contains("25 (virtio0-input.0)") && a[2].contains(&format!("echo {hk} > /proc/irq/$i/smp_affinity_list")), "{}", a[2]);
        assert!(
            a[3].contains("kworker/1:2") && a[3].contains(&format!("echo {} > /sys/devices/virtual/workqueue/cpumask", if cpu == 0 { "2" } else { "1" })),
            "{}",
            a[3]
        );
        assert!(a[4].contains("dd (rt prio 99)"), "{}", a[4]);
    }

    #[test]
    fn a_kmsg_opener_is_told_to_keep_the_device_open() {
        let mut run = golden();
        run.host.preempt_model = "voluntary".into();
        let mut sh = c("task", "sh", 100_000);
        sh.paths = vec![CodePath {
            frames: vec!["desc_read".into(), "_prb_read_valid".into(), "prb_first_valid_seq".into(), "devkmsg_open".into()],
            samples: 3,
            share: 1.0,
        }];
        let mut untraced = c("untraced", "not traced (tracing was off or the buffer had wrapped)", 100_000);
        untraced.paths = sh.paths.clone();
        set_windows(&mut run, vec![sh, untraced], None);
        let a = advice(&run);
        assert_eq!(a.len(), 1, "{a:#?}");
        assert!(
            a[0].starts_with("opening /dev/kmsg (devkmsg_open by sh in ") && a[0].contains("cannot preempt") && a[0].contains("exec 3>/dev/kmsg"),
            "{}",
            a[0]
        );
        run.host.preempt_model = "rt".into();
        assert!(!advice(&run)[0].contains("cannot preempt"));
        // Another path: no such advice.
        let mut dd = c("task", "dd", 100_000);
        dd.paths = vec![CodePath { frames: vec!["read_zero".into()], samples: 3, share: 1.0 }];
        set_windows(&mut run, vec![dd], None);
        assert!(advice(&run).iter().all(|a| !a.contains("/dev/kmsg")));
    }

    /// doctor's RT throttling finding with `runtime` (µs of every 1 s).
    fn throttling(runtime: &str) -> Vec<crate::model::Finding> {
        use crate::model::{Evidence, Finding, Severity};
        let ev = |path: &str, value: &str| Evidence { path: path.into(), value: value.into() };
        let mut f = Finding::new("sched.rt_throttling", Severity::Info, "RT throttling");
        f.evidence = vec![ev("/proc/sys/kernel/sched_rt_runtime_us", runtime), ev("/proc/sys/kernel/sched_rt_period_us", "1000000")];
        vec![f]
    }

    /// Every traced window `span` ns long with `culprits`, sampled every 250 µs.
    fn window(run: &mut Run, span: u64, culprits: Vec<Culprit>) {
        let samples = culprits.iter().flat_map(|c| c.paths.iter()).map(|p| p.samples).sum();
        let stacks = WindowStacks { period_ns: Nanos(250_000), samples, expected: (span / 250_000) as u32, gaps: Vec::new() };
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            (w.start_ns, w.end_ns, w.culprits, w.stacks) = (Nanos(0), Nanos(span), culprits.clone(), Some(stacks.clone()));
        }
    }

    /// A task sampled running: a sample every 250 µs of its `ns`, in `frame`.
    fn task(name: &str, prio: i32, ns: u64, frame: &str) -> Culprit {
        let mut t = c("task", name, ns);
        t.prio = Some(prio);
        t.paths = vec![CodePath { frames: vec![frame.into()], samples: (ns / 250_000) as u32, share: 1.0 }];
        t
    }

    #[test]
    fn rt_throttling_only_with_its_signature() {
        let mut run = golden();
        run.host.cpus_online = vec![0, 1];
        run.plan.policy = "fifo".into();
        run.plan.priority = 95;
        run.host.preempt_model = "voluntary".into();
        run.host.realtime = false;
        let throttled = |a: &[String]| a.iter().any(|l| l.starts_with("RT throttling") && l.contains(FIX_RT_THROTTLING));
        run.host.doctor = throttling("950000");
        // An ordinary task in user mode held 45 ms of a 48 ms window: throttled (50 ms stretch).
        let cfs = || vec![task("make", 120, 45_000_000, "[user] make"), task("kworker/1:1", 120, 2_000_000, "[user] kworker/1:1")];
        window(&mut run, 48_000_000, cfs());
        let a = advice(&run);
        assert!(throttled(&a) && a.len() == 1, "the kworker of a throttled window is not blamed: {a:#?}");
        assert!(a[0].contains("47.0ms of a 48.0ms window") && a[0].contains("950000 of every 1000000 us") && a[0].contains("up to 50000 us"), "{}", a[0]);
        // Throttling off (-1), or its settings unknown: no such advice.
        run.host.doctor = throttling("-1");
        assert!(!throttled(&advice(&run)));
        run.host.doctor.clear();
        assert!(!throttled(&advice(&run)));
        run.host.doctor = throttling("950000");
        // Measuring threads not real-time: an ordinary task may run before them.
        run.plan.policy = "other".into();
        assert!(!throttled(&advice(&run)));
        run.plan.policy = "fifo".into();
        // Too short for the 50 ms stretch (under a tenth of it): not the signature.
        window(&mut run, 4_000_000, vec![task("make", 120, 3_000_000, "[user] make")]);
        assert!(!throttled(&advice(&run)));
        // Longer than the stretch can be: not throttling either.
        window(&mut run, 90_000_000, vec![task("make", 120, 80_000_000, "[user] make")]);
        assert!(!throttled(&advice(&run)));
        // In the kernel on a non-preemptible kernel: a long kernel section, not throttling...
        window(&mut run, 48_000_000, vec![task("make", 120, 45_000_000, "clear_page_erms")]);
        assert!(!throttled(&advice(&run)));
        // ...which a preemptible kernel would have preempted.
        run.host.preempt_model = "full".into();
        assert!(throttled(&advice(&run)));
        // A real-time task holding the window is no throttling (its own rule names it).
        window(&mut run, 48_000_000, vec![task("hog", 98, 45_000_000, "[user] hog")]);
        let a = advice(&run);
        assert!(!throttled(&a) && a.len() == 1 && a[0].contains("hog (rt prio 1)"), "{a:#?}");
        // Idle time is no evidence.
        let mut idle = c("idle", "haltpoll", 45_000_000);
        idle.exit_latency_ns = Some(Nanos(0));
        window(&mut run, 48_000_000, vec![idle, c("unexplained", "unexplained", 2_000_000)]);
        assert!(!throttled(&advice(&run)));
        // The ordinary task must have been sampled running for its time: 2 samples for
        // 45 ms is a CPU that did not run (a throttled CPU running it is sampled at the rate).
        run.host.preempt_model = "voluntary".into();
        let mut make = task("make", 120, 45_000_000, "[user] make");
        make.paths[0].samples = 2;
        window(&mut run, 48_000_000, vec![make.clone()]);
        assert!(!throttled(&advice(&run)), "{:#?}", advice(&run));
        // Nor without call-chain samples at all.
        make.paths[0].samples = 180;
        window(&mut run, 48_000_000, vec![make]);
        assert!(throttled(&advice(&run)));
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            w.stacks = None;
        }
        assert!(!throttled(&advice(&run)));
    }

    #[test]
    fn a_task_rule_needs_the_tasks_samples() {
        let mut run = golden();
        run.host.cpus_online = vec![0, 1];
        run.host.preempt_model = "full".into();
        let sampled = |name: &str, prio: i32, n: u32| {
            let mut t = c("task", name, 600_000);
            t.prio = Some(prio);
            t.paths = (n > 0).then(|| CodePath { frames: vec![format!("[user] {name}")], samples: n, share: 0.5 }).into_iter().collect();
            t
        };
        let stacks = |n| Some(WindowStacks { period_ns: Nanos(250_000), samples: n, expected: 4, gaps: Vec::new() });
        // A kworker and a real-time task current for 60 % of a sampled window, never sampled: no advice.
        set_windows(&mut run, vec![sampled("kworker/1:2", 120, 0)], stacks(0));
        assert!(advice(&run).is_empty(), "{:#?}", advice(&run));
        set_windows(&mut run, vec![sampled("hog", 10, 0)], stacks(0));
        assert!(advice(&run).is_empty(), "{:#?}", advice(&run));
        // Sampled: advised.
        set_windows(&mut run, vec![sampled("kworker/1:2", 120, 2)], stacks(2));
        assert!(advice(&run)[0].starts_with("workqueue worker kworker/1:2"), "{:#?}", advice(&run));
        set_windows(&mut run, vec![sampled("hog", 10, 2)], stacks(2));
        assert!(advice(&run)[0].starts_with("real-time task hog (rt prio 89)"), "{:#?}", advice(&run));
        // A window without sampling has only the trace's word: advised as before.
        set_windows(&mut run, vec![sampled("kworker/1:2", 120, 0)], None);
        assert_eq!(advice(&run).len(), 1);
    }

    #[test]
    fn a_kernel_path_on_a_non_preemptible_kernel_gets_the_preemption_fix() {
        use crate::model::{Finding, Severity};
        let mut run = golden();
        run.host.cpus_online = vec![0, 1];
        run.host.preempt_model = "none".into();
        run.host.realtime = false;
        let mut f = Finding::new("preempt.model", Severity::Bad, "Preemption model is none");
        f.fix = Some("Boot a PREEMPT_RT kernel (doctor's words).".into());
        run.host.doctor = vec![f];
        let mut hdd = c("task", "stress-ng-hdd", 700_000);
        hdd.prio = Some(120);
        hdd.paths = vec![CodePath { frames: vec!["__dquot_alloc_space".into(), "ext4_da_reserve_space".into()], samples: 3, share: 0.75 }];
        let stacks = Some(WindowStacks { period_ns: Nanos(250_000), samples: 4, expected: 4, gaps: Vec::new() });
        set_windows(&mut run, vec![hdd.clone()], stacks.clone());
        let a = advice(&run);
        assert_eq!(a.len(), 1, "{a:#?}");
        assert!(a[0].starts_with("a non-preemptible kernel path held late samples (stress-ng-hdd in __dquot_alloc_space ← ext4_da_reserve_space,"), "{}", a[0]);
        assert!(a[0].contains("(none preemption)") && a[0].ends_with("Boot a PREEMPT_RT kernel (doctor's words)."), "{}", a[0]);
        // A preemptible kernel would have preempted it; user code needs no preemption point.
        run.host.preempt_model = "full".into();
        assert!(advice(&run).is_empty());
        run.host.preempt_model = "voluntary".into();
        hdd.paths[0].frames = vec!["[user] stress-ng-hdd".into()];
        set_windows(&mut run, vec![hdd], stacks);
        assert!(advice(&run).is_empty());
    }

    /// Time the CPU did not run is the host's: VM advice once per run, and none of the
    /// task rules, whatever task was current around it.
    #[test]
    fn host_time_gets_vm_advice_and_no_task_rule() {
        use crate::model::{Evidence, Finding, Severity};
        let mut run = golden();
        run.host.cpus_online = vec![0, 1];
        run.host.virtualized = true;
        run.plan.policy = "fifo".into();
        run.plan.priority = 95;
        run.host.preempt_model = "voluntary".into();
        let ev = |path: &str, value: &str| Evidence { path: path.into(), value: value.into() };
        let mut f = Finding::new("sched.rt_throttling", Severity::Info, "RT throttling");
        f.evidence = vec![ev("/proc/sys/kernel/sched_rt_runtime_us", "950000"), ev("/proc/sys/kernel/sched_rt_period_us", "1000000")];
        run.host.doctor = vec![f];
        // 8.5 ms, 2 of 34 samples: the 8 ms without any is the host's, the rest the tasks'.
        let mut host = c("host", crate::trace::attribute::HOST, 8_000_000);
        host.count = 1;
        let with = |name: &str, prio: i32, ns: u64, frame: &str| {
            let mut t = c("task", name, ns);
            t.prio = Some(prio);
            t.paths = vec![CodePath { frames: vec![frame.into()], samples: 1, share: 0.5 }];
            t
        };
        let culprits = vec![host, with("stress-ng-hdd", 120, 300_000, "[user] stress-ng-hdd"), with("kworker/u8:1", 120, 200_000, "ext4_finish_bio")];
        let gap = SampleGap {
            start_after_ns: Nanos(100_000),
            length_ns: Nanos(8_000_000),
            ended_by: Vec::new(),
            not_running: true,
            maybe_interrupts_off: false,
            witnessed_ns: None,
        };
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            (w.start_ns, w.end_ns, w.culprits) = (Nanos(0), Nanos(8_500_000), culprits.clone());
            w.stacks = Some(WindowStacks { period_ns: Nanos(250_000), samples: 2, expected: 34, gaps: vec![gap.clone()] });
            w.steal_ns = Some(Nanos(10_000_000));
        }
        let n = run.results.iter().flat_map(|r| r.worst.iter()).filter(|w| w.trace.is_some()).count();
        let a = advice(&run);
        assert_eq!(a.len(), 1, "one piece of advice per run, no task rule: {a:#?}");
        assert!(
            a[0].starts_with(&format!(
                "the host did not run this VM's vCPU ({n} of {n} traced sample(s), up to 8.0ms with no sample and no event, steal +10000us)"
            )),
            "{}",
            a[0]
        );
        assert!(a[0].contains("idle=poll") && a[0].contains("cpuidle-haltpoll") && a[0].contains(crate::doctor::vm::FIX_VM), "{}", a[0]);
        // On bare metal the same evidence is the firmware's.
        run.host.virtualized = false;
        let a = advice(&run);
        assert!(a.len() == 1 && a[0].starts_with("the CPU did not run (") && a[0].contains("SMI"), "{a:#?}");
        // Issue 60: on a VM with no steal clock, a window held by time that may as well be
        // interrupts off claims neither the host nor a task: one hedged line, no task rule.
        run.host.virtualized = true;
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            w.culprits[0].name = crate::trace::attribute::HOST_OR_OFF.into();
            w.steal_ns = Some(Nanos(0));
        }
        let a = advice(&run);
        assert_eq!(a.len(), 1, "{a:#?}");
        assert!(
            a[0].starts_with(&format!("the vCPU ran no code the sampling clock could interrupt for up to 8.0ms in {n} of {n} traced sample(s)"))
                && a[0].contains("the host did not run it, or the guest kernel kept interrupts off")
                && !a[0].contains("the host did not run this VM's vCPU"),
            "{}",
            a[0]
        );
        // One window the host's for sure: the claim is made for it, the other counted apart.
        let sure = run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).find_map(|w| w.trace.as_mut()).unwrap();
        sure.culprits[0].name = crate::trace::attribute::HOST.into();
        sure.steal_ns = Some(Nanos(10_000_000));
        let a = advice(&run);
        assert!(a.len() == 1 && a[0].starts_with(&format!("the host did not run this VM's vCPU (1 of {n} traced sample(s), up to 8.0ms with no sample and no event, steal +10000us; {} more the host's or interrupts off)", n - 1)), "{a:#?}");
    }

    #[test]
    fn mask() {
        assert_eq!(cpumask_hex(&[0, 2]), "5");
        assert_eq!(cpumask_hex(&[33]), "2,0");
        assert_eq!(cpumask_hex(&[]), "0");
    }
}
