//! Terminal text for threshold tracing: the top culprits of each traced worst sample,
//! printed after the summary table. A pure function of the result model.

use crate::model::Run;

use super::attribute::Culprit;

/// Up to `max_samples` traced worst samples per probe result (merged entries, or a one-thread run's entries), each
/// with its three longest culprits. Empty when the run has no trace snapshots.
pub(crate) fn culprits_text(run: &Run, max_samples: usize) -> String {
    let mut out = String::new();
    let threshold = run.plan.trace.as_ref().map(|t| t.threshold_ns.0).unwrap_or(0);
    match &run.trace {
        Some(summary) => out.push_str(&format!(
            "trace: {} snapshot(s) ({} on worst samples) of {} sample(s) over {} (instance {}){}\n",
            summary.snapshots,
            summary.on_worst,
            summary.over_threshold,
            us(threshold),
            summary.instance,
            host_summary(run)
        )),
        // timerlat analyses its late samples from its own tracer's events.
        None if run.results.iter().any(|r| r.worst.iter().any(|w| w.trace.is_some())) => {
            out.push_str(&format!("trace: late samples over {} analysed from the tracer's osnoise events\n", us(threshold)))
        }
        None => return out,
    }
    for r in crate::model::merged_or_sole(&run.results, |r| r) {
        for w in r.worst.iter().filter(|w| w.trace.is_some()).take(max_samples) {
            let t = w.trace.as_ref().expect("filtered");
            let top: Vec<String> = t.culprits.iter().take(3).map(|c| culprit_in(c, t)).collect();
            out.push_str(&format!(
                "  {}{} {} thread {} cpu {} seq {}{}: {}{}{}\n",
                r.probe,
                r.variant.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
                us(w.latency_ns.0),
                w.thread,
                t.cpu,
                w.seq,
                match (t.irq_latency_ns, t.from_idle) {
                    (Some(irq), idle) => format!(
                        " (irq latency {}{}{})",
                        us(irq.0),
                        match (t.irq_handler_delay_ns, t.irq_duration_ns) {
                            (Some(d), Some(l)) => format!(": handler delay {}, irq duration {}", us(d.0), us(l.0)),
                            _ => String::new(),
                        },
                        if idle == Some(true) { ", out of idle" } else { "" }
                    ),
                    _ if !t.complete => " (trace incomplete)".to_string(),
                    _ if t.irq_latency_unknown.is_some() => " (irq latency unknown: its IRQ sample was lost)".to_string(),
                    _ => String::new(),
                },
                if top.is_empty() { "no events".to_string() } else { top.join(", ") },
                gaps_text(t, run.host.virtualized),
                running_text(t)
            ));
            if let Some(frames) = &t.irq_stack {
                out.push_str(&format!("    at the timer interrupt: {}\n", interrupted_code(frames)));
            }
        }
    }
    out
}

/// "; N of M traced windows were the host's" when the CPU not running was the largest part
/// of any traced window of the run (empty otherwise); windows held by time that may as
/// well be interrupts off ([`super::attribute::HOST_OR_OFF`]) are counted apart.
pub(crate) fn host_summary(run: &Run) -> String {
    let windows: Vec<&crate::model::TraceWindow> =
        crate::model::merged_or_sole(&run.results, |r| r).into_iter().flat_map(|r| r.worst.iter().filter_map(|w| w.trace.as_ref())).collect();
    let held = windows.iter().filter(|w| w.host_held()).count();
    if held == 0 {
        return String::new();
    }
    let maybe = windows.iter().filter(|w| super::attribute::host_unsure(w)).count();
    let host = held - maybe;
    let more = if maybe == 0 { String::new() } else { format!(", {maybe} the host's or interrupts off (no steal time to tell)") };
    format!(
        "; {host} of {} traced late sample(s) were {}{more}",
        windows.len(),
        if run.host.virtualized { "the host's (it did not run the vCPU)" } else { "the CPU not running (SMI / hardware)" }
    )
}

/// The evidence that the CPU ran, for a window sampled with call chains: samples taken
/// of those the window's length would give, and the CPU's steal time over it.
pub(crate) fn running_text(t: &crate::model::TraceWindow) -> String {
    let Some(s) = &t.stacks else { return String::new() };
    format!("; samples {} of {}{}", s.samples, s.expected, t.steal_ns.map(|n| format!(", steal +{}us", n.0 / 1000)).unwrap_or_default())
}

/// [`culprit`] within its window: the time the CPU did not run says what shows it.
pub(crate) fn culprit_in(c: &Culprit, t: &crate::model::TraceWindow) -> String {
    if c.kind != "host" {
        return culprit(c);
    }
    let witnessed: u64 = t.stacks.as_ref().map_or(0, |s| s.gaps.iter().filter_map(|g| g.witnessed_ns).map(|n| n.0).sum());
    let why = match t.steal_ns.filter(|n| n.0 > 0) {
        Some(n) if c.name == super::attribute::HOST => format!("the host did not run this vCPU (steal +{}us)", n.0 / 1000),
        Some(n) => format!("steal +{}us", n.0 / 1000),
        None if witnessed > 0 && c.name == super::attribute::HOST => {
            format!("no sample, no event; the host stopped the whole VM: a busy vCPU took none either for {}us", witnessed / 1000)
        }
        None => "no sample, no event".to_string(),
    };
    let samples = t.stacks.as_ref().map(|s| format!("; {} of {} samples", s.samples, s.expected)).unwrap_or_default();
    format!("{} {} ({why}{samples})", c.name, us(c.duration_ns.0))
}

/// One culprit in words: who (pid and priority, IRQ number) and for how long.
pub(crate) fn culprit(c: &Culprit) -> String {
    let who = match (c.kind.as_str(), c.pid, c.prio, c.irq) {
        ("task" | "self", Some(pid), Some(prio), _) if prio < 100 => format!("{} (pid {pid}, rt prio {})", c.name, 99 - prio),
        ("task" | "self", Some(pid), Some(prio), _) => format!("{} (pid {pid}, prio {prio})", c.name),
        ("task" | "self", Some(pid), None, _) => format!("{} (pid {pid})", c.name),
        ("irq", _, _, Some(n)) => format!("irq {n} {}", c.name),
        ("softirq", _, _, _) => format!("softirq {}", c.name),
        ("vector", _, _, _) => format!("vector {}", c.name),
        ("idle", _, _, _) => match c.exit_latency_ns {
            Some(l) => format!("idle in {} (exit latency {})", c.name, us(l.0)),
            None => format!("idle in {}", c.name),
        },
        _ => c.name.clone(),
    };
    match c.paths.first() {
        Some(p) => format!("{who} {}: {}", us(c.duration_ns.0), top_frames(&p.frames)),
        None => format!("{who} {}", us(c.duration_ns.0)),
    }
}

/// A code path in a line: its three innermost frames, leaf first.
pub(crate) fn top_frames(frames: &[String]) -> String {
    frames.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(" ← ")
}

/// What a timer interrupt's stack says it found running: the frames past the
/// interrupt's entry (the last `asm_…` frame), three of them; none past it is
/// user code (the kernel stack ends where user mode was interrupted).
pub(crate) fn interrupted_code(frames: &[String]) -> String {
    match frames.iter().rposition(|f| f.starts_with("asm_")) {
        Some(i) if i + 1 == frames.len() => "user code".to_string(),
        Some(i) => top_frames(&frames[i + 1..]),
        None => top_frames(frames),
    }
}

/// The interrupts-off gaps of a window in words (empty when none): the longest, with the
/// path that ended it; in a VM a gap may also be the host not running the vCPU.
pub(crate) fn gaps_text(t: &crate::model::TraceWindow, virtualized: bool) -> String {
    // A gap in which the CPU did not run is the `host` culprit's line already.
    let off = || t.stacks.iter().flat_map(|s| s.gaps.iter()).filter(|g| !g.not_running);
    let Some(g) = off().max_by_key(|g| g.length_ns) else { return String::new() };
    let n = off().count();
    format!(
        "; {} no-sample gap{} (interrupts off{}), longest {} ended at {}",
        n,
        if n == 1 { "" } else { "s" },
        if virtualized { ", or the host not running this vCPU" } else { "" },
        us(g.length_ns.0),
        if g.ended_by.is_empty() { "user code".to_string() } else { top_frames(&g.ended_by) }
    )
}

fn us(ns: u64) -> String {
    format!("{:.1}us", ns as f64 / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_thread_run_shows_its_traced_samples() {
        // The golden result: one thread (no merged entries), two traced worst samples of timer/idle.
        let run: Run = serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap();
        assert!(run.results.iter().all(|r| r.thread.is_some()));
        let text = culprits_text(&run, 5);
        assert_eq!(text.lines().filter(|l| l.starts_with("  timer ")).count(), 2, "{text}");
    }

    #[test]
    fn timerlat_windows_show_without_a_session_with_their_irq_latency() {
        let mut run: Run = serde_json::from_str(include_str!("../../tests/fixtures/golden/result-v1.json")).unwrap();
        run.trace = None;
        for r in run.results.iter_mut() {
            for w in r.worst.iter_mut().filter_map(|w| w.trace.as_mut()) {
                w.irq_latency_ns = Some(crate::units::Nanos(30_000));
                w.from_idle = Some(true);
            }
        }
        let text = culprits_text(&run, 5);
        assert!(text.starts_with("trace: late samples over "), "{text}");
        assert_eq!(text.matches("(irq latency 30.0us, out of idle)").count(), 2, "{text}");
        for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()).filter_map(|w| w.trace.as_mut()) {
            w.irq_handler_delay_ns = Some(crate::units::Nanos(12_000));
            w.irq_duration_ns = Some(crate::units::Nanos(4_500));
        }
        let text = culprits_text(&run, 5);
        assert_eq!(text.matches("(irq latency 30.0us: handler delay 12.0us, irq duration 4.5us, out of idle)").count(), 2, "{text}");
        // Variants restart their sequence numbers: the line names the variant.
        for r in run.results.iter_mut() {
            r.variant = Some("thread".into());
        }
        assert_eq!(culprits_text(&run, 5).lines().filter(|l| l.starts_with("  timer thread ")).count(), 2);
        for r in run.results.iter_mut() {
            r.worst.iter_mut().for_each(|w| w.trace = None);
        }
        assert_eq!(culprits_text(&run, 5), "", "nothing traced, nothing shown");
    }
}
