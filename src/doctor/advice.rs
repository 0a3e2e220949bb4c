//! Advice from the evidence of the traced windows: the common culprits that the
//! attribution and the code paths reveal, mapped to the fix a user applies. The texts of
//! fixes that doctor also gives are doctor's (one place for each); each piece of advice
//! says what it rests on, and none is given without a window that shows it.
//!
//! Rules (a culprit "held" a window when it had at least [`HELD_SHARE`] of it):
//! - a code path or a gap's end in the kernel's console write (`console_unlock`,
//!   `serial8250_console_write`, `vprintk_emit`, ...) → the console log level, and the
//!   serial console;
//! - an idle state with an exit latency held a window → `/dev/cpu_dma_latency` and the
//!   idle state limits;
//! - a device IRQ held a window → its affinity;
//! - a `kworker/` task held a window → the workqueue cpumask;
//! - another real-time task held a window → its placement or priority.

use crate::doctor::{console::FIX_CONSOLE_LOGLEVEL, cpuidle::FIX_DMA_LATENCY, irq::fix_irq_affinity};
use crate::model::{Run, TraceWindow};

/// A culprit that held a window: name, IRQ number, exit latency (ns), kernel priority.
type Held = (String, Option<u32>, Option<u64>, Option<i32>);

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

/// One piece of advice per cause seen in the run's traced windows, in the order: console,
/// idle states, IRQs, workqueues, real-time tasks. Empty when nothing traced shows a cause.
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
    let hk = crate::units::cpu_list_str(&housekeeping);
    let mut out = Vec::new();

    let console: Vec<&str> = windows
        .iter()
        .filter_map(|w| {
            let path_frames = w.culprits.iter().flat_map(|c| c.paths.iter()).flat_map(|p| p.frames.iter());
            let gap_frames = w.stacks.iter().flat_map(|s| s.gaps.iter()).flat_map(|g| g.ended_by.iter());
            path_frames.chain(gap_frames).find_map(|f| CONSOLE_FRAMES.iter().find(|c| f == *c).copied())
        })
        .collect();
    if let Some(frame) = console.first() {
        let serial = run.host.cmdline.split_whitespace().any(|t| t.starts_with("console=ttyS") || t.starts_with("console=ttyAMA"));
        out.push(format!(
            "console printing ({frame} in {} traced sample(s)): {FIX_CONSOLE_LOGLEVEL}{}",
            console.len(),
            if serial { " Or move the console off the serial line (the boot line has a serial console=)." } else { "" }
        ));
    }

    let held = |w: &TraceWindow, kind: &str| -> Vec<Held> {
        let span = w.end_ns.0.saturating_sub(w.start_ns.0).max(1) as f64;
        w.culprits
            .iter()
            .filter(|c| c.kind == kind && c.duration_ns.0 as f64 / span >= HELD_SHARE)
            .map(|c| (c.name.clone(), c.irq, c.exit_latency_ns.map(|n| n.0), c.prio))
            .collect()
    };
    let mut idle: Vec<(String, u64)> = Vec::new();
    let mut irqs: Vec<(u32, String)> = Vec::new();
    let mut kworkers: Vec<String> = Vec::new();
    let mut rt: Vec<(String, i32)> = Vec::new();
    for w in &windows {
        for (name, _, lat, _) in held(w, "idle") {
            if let Some(l) = lat.filter(|l| *l > 0) {
                if !idle.iter().any(|(n, _)| *n == name) {
                    idle.push((name, l));
                }
            }
        }
        for (name, irq, _, _) in held(w, "irq") {
            if let Some(n) = irq.filter(|n| !irqs.iter().any(|(i, _)| i == n)) {
                irqs.push((n, name));
            }
        }
        for (name, _, _, prio) in held(w, "task") {
            if name.starts_with("kworker/") {
                if !kworkers.contains(&name) {
                    kworkers.push(name);
                }
            } else if let Some(p) = prio.filter(|p| *p < 100) {
                if !rt.iter().any(|(n, _)| *n == name) {
                    rt.push((name, p));
                }
            }
        }
    }
    if !idle.is_empty() {
        let states: Vec<String> = idle.iter().map(|(n, l)| format!("{n} (exit latency {:.1}us)", *l as f64 / 1e3)).collect();
        out.push(format!(
            "idle state{} {} held late samples: {FIX_DMA_LATENCY}, or disable the state{}: `echo 1 > /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable`.",
            if idle.len() == 1 { "" } else { "s" },
            states.join(", "),
            if idle.len() == 1 { "" } else { "s" }
        ));
    }
    if !irqs.is_empty() {
        let names: Vec<String> = irqs.iter().map(|(n, d)| format!("{n} ({d})")).collect();
        let fix = if housekeeping.is_empty() {
            "every online CPU is measured: leave one out for housekeeping and steer the IRQs there.".to_string()
        } else {
            fix_irq_affinity(&irqs.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>(), &hk, &crate::units::cpu_list_str(&measured))
        };
        out.push(format!("device IRQ{} {} held late samples: {fix}", if irqs.len() == 1 { "" } else { "s" }, names.join(", ")));
    }
    if !kworkers.is_empty() {
        out.push(format!(
            "workqueue worker{} {} held late samples: keep unbound work off the measured CPUs with `echo {} > /sys/devices/virtual/workqueue/cpumask` (a hex mask of the housekeeping CPUs {}); work bound to a CPU stays: its code path names its source.",
            if kworkers.len() == 1 { "" } else { "s" },
            kworkers.join(", "),
            cpumask_hex(&housekeeping),
            if hk.is_empty() { "-".to_string() } else { hk.clone() }
        ));
    }
    if !rt.is_empty() {
        let names: Vec<String> = rt.iter().map(|(n, p)| format!("{n} (rt prio {})", 99 - p)).collect();
        out.push(format!(
            "real-time task{} {} held late samples: move {} off the measured CPUs (`taskset -p`), or below the measuring threads' priority (`chrt -p`).",
            if rt.len() == 1 { "" } else { "s" },
            names.join(", "),
            if rt.len() == 1 { "it" } else { "them" }
        ));
    }
    out
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
        let gap = SampleGap { start_after_ns: Nanos(0), length_ns: Nanos(400_000), ended_by: vec!["_raw_spin_unlock_irqrestore".into(), "console_unlock".into()] };
        set_windows(&mut run, vec![hog, irq, idle, c("task", "kworker/1:2", 200_000)], Some(WindowStacks { period_ns: Nanos(250_000), samples: 3, gaps: vec![gap] }));
        let a = advice(&run);
        let cpu = run.results.iter().flat_map(|r| r.worst.iter()).find_map(|w| w.trace.as_ref()).unwrap().cpu;
        assert_eq!(a.len(), 5, "{a:#?}");
        assert!(a[0].starts_with("console printing (console_unlock in ") && a[0].contains(FIX_CONSOLE_LOGLEVEL) && a[0].contains("serial"), "{}", a[0]);
        assert!(a[1].contains("haltpoll (exit latency 1.0us)") && a[1].contains(FIX_DMA_LATENCY), "{}", a[1]);
        let hk = if cpu == 0 { "1" } else { "0" };
        assert!(a[2].contains("25 (virtio0-input.0)") && a[2].contains(&format!("echo {hk} > /proc/irq/$i/smp_affinity_list")), "{}", a[2]);
        assert!(a[3].contains("kworker/1:2") && a[3].contains(&format!("echo {} > /sys/devices/virtual/workqueue/cpumask", if cpu == 0 { "2" } else { "1" })), "{}", a[3]);
        assert!(a[4].contains("dd (rt prio 99)"), "{}", a[4]);
    }

    #[test]
    fn mask() {
        assert_eq!(cpumask_hex(&[0, 2]), "5");
        assert_eq!(cpumask_hex(&[33]), "2,0");
        assert_eq!(cpumask_hex(&[]), "0");
    }
}
