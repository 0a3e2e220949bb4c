//! The `timerlat` probe: the kernel's timerlat tracer (CONFIG_TIMERLAT_TRACER)
//! splits a timer's latency in two, per CPU, as rtla timerlat does:
//!
//! - `irq`: from the time the tracer's hrtimer was due to the moment its
//!   interrupt handler ran — the *interrupt latency* of the seeds (time with
//!   interrupts off, the hardware and the hypervisor's delay included);
//! - `thread`: from the same due time to the moment the tracer's per-CPU
//!   kernel thread (`timerlat/N`, SCHED_FIFO -p) woke up and ran — the
//!   interrupt latency plus the *dispatch latency* (the scheduler's wake-up,
//!   preemption disabled by whatever ran, the context switch).
//!
//! The `timer` probe's user-space thread sees the `thread` latency plus the
//! return to user space and its own clock reads; `bench/vs-rtla` shows how
//! much that adds.
//!
//! Period: `-i`; CPUs: `-a` (every planned CPU gets the tracer's thread);
//! priority: `-p` under the plan's policy, set on the kernel threads as
//! `rtla timerlat -P f:PRIO` does. Each CPU's activations are numbered: a
//! number never seen counts in `tracer.missing`; `[LOST N EVENTS]` notes in
//! `tracer.lost_events`; the ring buffer's own overrun in `tracer.overrun`.

use std::collections::VecDeque;

use super::registry::ProbeInfo;
use super::tracer::{self, Kind, Series, TracerRun};
use super::{Probe, ProbeCtx, ThreadOutcome};
use crate::model::Extras;
use crate::model::{Culprit, Nanos, TraceWindow};

pub(crate) struct TimerlatProbe;

pub(crate) const VARIANTS: &[&str] = &["irq", "thread"];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "timerlat",
    about: "kernel timerlat tracer: timer IRQ latency and its kernel thread's latency, per CPU (CONFIG_TIMERLAT_TRACER)",
    variants: VARIANTS,
    warms_up: false,
    traced: super::registry::Traced::ByItsTracer,
    kernel_tracer: Some(super::tracer::Kind::Timerlat),
    ..ProbeInfo::PLAIN
};

impl Probe for TimerlatProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let (cpus, period_us) = tracer::cpus_and_period(ctx.run);
        let interval_ns = period_us * 1000;
        let (run, setup) = start_tracer(ctx, &cpus, period_us)?;
        let variants: Vec<&'static str> = VARIANTS.iter().copied().filter(|v| ctx.run.probe.wants("timerlat", v)).collect();
        let threshold = ctx.run.trace_threshold_ns;
        let mut series = Series::new(ctx, &cpus, &variants, interval_ns);
        let mut pipe = run.pipe()?;
        // Samples from here on: the kernel threads run at their priority.
        let start = crate::sys::time::now_ns();
        let mut last_id: Vec<Option<u64>> = vec![None; cpus.len()];
        // Per CPU: the first activation in the run (`in_run`).
        let mut first_irq: Vec<Option<u64>> = vec![None; cpus.len()];
        // Per CPU: the interference since the current activation's due
        // time, its IRQ sample, the analysed late samples.
        let mut recent: Vec<VecDeque<Noise>> = vec![VecDeque::new(); cpus.len()];
        let mut last_irq: Vec<Option<IrqSample>> = vec![None; cpus.len()];
        let mut windows: Vec<Vec<(u64, TraceWindow)>> = vec![Vec::new(); cpus.len()];
        let keep = ctx.run.worst_k.max(1);
        // Per CPU: the late sample whose IRQ stack the tracer prints next
        // (`print_stack`), and the frames read of it so far.
        let mut stack_of: Vec<Option<u64>> = vec![None; cpus.len()];
        let mut frames: Vec<Option<(u64, Vec<String>)>> = vec![None; cpus.len()];
        ctx.board.running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = tracer::read_until(&run, &mut pipe, (start, start + ctx.run.duration_ns), tracer::read_interval_ns(interval_ns), ctx.stop, &mut |l| {
            let Some(i) = cpus.iter().position(|&c| c == l.cpu) else { return };
            if let Some(frame) = l.task.is_empty().then_some(l.body) {
                // The kernel prints the saved array's unused entries as `0`.
                if let Some((_, f)) = frames[i].as_mut().filter(|(_, f)| f.len() < MAX_IRQ_STACK && frame_name(frame) != "0") {
                    f.push(frame_name(frame).to_string());
                }
                return;
            }
            if let Some((id, f)) = frames[i].take() {
                attach_stack(&mut windows[i], id, f);
            }
            if l.body == "<stack trace>" {
                frames[i] = stack_of[i].take().map(|id| (id, Vec::new()));
                return;
            }
            let Some(s) = parse_sample(l.body).filter(|s| match s.context {
                "irq" => in_run(l.ts_ns, s.latency_ns, start),
                // The IRQ sample decided (the two due times differ by the
                // trace's µs rounding): from the first activation in the run.
                _ => first_irq[i].is_some_and(|f| s.id >= f),
            }) else {
                if threshold.is_some() {
                    if let Some(n) = parse_noise(l.body, l.ts_ns) {
                        push_bounded(&mut recent[i], n);
                    }
                }
                return;
            };
            if s.context == "irq" {
                first_irq[i].get_or_insert(s.id);
                if let Some(prev) = last_id[i] {
                    series.missing[i] += s.id.saturating_sub(prev + 1);
                }
                last_id[i] = Some(s.id);
                // The windows of earlier activations are closed (the thread
                // arms the next timer after its own sample): interference
                // that ended before this one's due time is of no use now.
                let due = l.ts_ns.saturating_sub(s.latency_ns);
                while recent[i].front().is_some_and(|f: &Noise| f.end_ns <= due) {
                    recent[i].pop_front();
                }
                last_irq[i] = Some(IrqSample { id: s.id, latency_ns: s.latency_ns, ts_ns: l.ts_ns, from_idle: l.task.starts_with("<idle>") });
            }
            if let Some(v) = variants.iter().position(|&v| v == s.context) {
                if let Some(rec) = series.get(l.cpu, v) {
                    rec.record(s.latency_ns, l.ts_ns - start, s.id);
                }
            }
            if s.context == "thread" {
                // A stack printed after this sample is this sample's.
                stack_of[i] = None;
            }
            if s.context == "thread" && threshold.is_some_and(|t| s.latency_ns > t) {
                let irq = last_irq[i].filter(|irq| irq.id == s.id);
                let due = l.ts_ns.saturating_sub(s.latency_ns);
                recent[i].make_contiguous();
                let mut w = window(l.cpu, due, l.ts_ns, recent[i].as_slices().0, irq);
                if irq.is_none() {
                    // Its IRQ sample came after the due time, so inside
                    // the run (`in_run`): the trace lost it.
                    w.irq_latency_unknown = Some(IRQ_SAMPLE_LOST.into());
                }
                keep_longest(&mut windows[i], (s.id, w), keep);
                stack_of[i] = Some(s.id);
            }
        });
        for (i, f) in frames.into_iter().enumerate() {
            if let Some((id, f)) = f {
                attach_stack(&mut windows[i], id, f);
            }
        }
        ctx.board.running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        read?;
        series.check_any(Kind::Timerlat, ctx)?;
        let note = note_of(ctx, period_us);
        let mut out = series.into_outcomes(&run, &pipe, interval_ns, setup, &|_, _| Extras { note: Some(note.clone()), ..Extras::default() });
        // The late samples analysed here belong to the thread variant's entries.
        for o in out.iter_mut().filter(|o| o.variant.as_deref() == Some("thread")) {
            o.windows = windows[o.thread].clone();
        }
        Ok(out)
    }
}

/// The method of a run at `period_us`, recorded with each entry.
fn note_of(ctx: &ProbeCtx<'_>, period_us: u64) -> String {
    format!(
        "kernel timerlat tracer, period {period_us} us, threads timerlat/N at {} {}: irq = timer due -> its interrupt handler ran (interrupt latency); thread = timer due -> the tracer's kernel thread ran (interrupt + dispatch latency)",
        ctx.run.policy.name(),
        ctx.run.priority
    )
}

/// Frames kept of one IRQ stack (the kernel saves at most 64).
const MAX_IRQ_STACK: usize = 64;

/// A frame line's function: `func`, `func+0x1f/0x40` or `func [module]` → `func`.
fn frame_name(frame: &str) -> &str {
    frame.split(|c: char| c == '+' || c.is_whitespace()).next().unwrap_or(frame)
}

/// The IRQ stack the tracer printed for late sample `id`, into its window
/// (gone when a longer window displaced it).
fn attach_stack(ws: &mut [(u64, TraceWindow)], id: u64, frames: Vec<String>) {
    if let Some((_, w)) = ws.iter_mut().find(|(wid, _)| *wid == id) {
        if !frames.is_empty() {
            w.irq_stack = Some(frames);
        }
    }
}

/// A CPU's interference since its current activation, bounded when IRQ
/// samples (which prune it) are lost.
fn push_bounded(q: &mut VecDeque<Noise>, n: Noise) {
    if q.len() >= MAX_NOISE_KEPT {
        q.pop_front();
    }
    q.push_back(n);
}

/// A CPU's analysed late samples: past 4 × `keep`, only the `keep` longest windows stay.
fn keep_longest(ws: &mut Vec<(u64, TraceWindow)>, w: (u64, TraceWindow), keep: usize) {
    ws.push(w);
    if ws.len() > 4 * keep {
        ws.sort_by_key(|(_, w)| std::cmp::Reverse(w.end_ns.0 - w.start_ns.0));
        ws.truncate(keep);
    }
}

/// The timerlat instance on `cpus` at `period_us`, its kernel threads at the
/// run's policy and priority (their set-up steps), with the interference
/// events on when late samples are analysed (`--trace-threshold`).
fn start_tracer(ctx: &ProbeCtx<'_>, cpus: &[usize], period_us: u64) -> anyhow::Result<(TracerRun, Vec<crate::model::SetupStep>)> {
    let mut run = TracerRun::start(
        Kind::Timerlat,
        &[
            ("osnoise/cpus", crate::units::cpu_list_str(cpus)),
            ("osnoise/timerlat_period_us", period_us.to_string()),
            ("osnoise/stop_tracing_us", "0".into()),
            ("osnoise/stop_tracing_total_us", "0".into()),
            // With --trace-threshold, the tracer saves the stack in each
            // timer IRQ and prints it after a thread sample at least this
            // late (µs), as rtla's -a does: what ran when the timer fired.
            ("osnoise/print_stack", ctx.run.trace_threshold_ns.map_or(0, |t| t.div_ceil(1000).max(1)).to_string()),
        ],
    )?;
    let setup = run.set_kthreads("timerlat", cpus, ctx.run.policy, ctx.run.priority);
    run.settings.insert("priority".into(), format!("{} {}", ctx.run.policy.name(), ctx.run.priority));
    if ctx.run.trace_threshold_ns.is_some() {
        let lacking = run.enable_events(NOISE_EVENTS);
        if !lacking.is_empty() {
            anyhow::bail!("--trace-threshold: this kernel's timerlat instance lacks the events {}; drop --trace-threshold", lacking.join(", "));
        }
        run.settings.insert("events".into(), NOISE_EVENTS.join(" "));
    }
    Ok((run, setup))
}

/// Whether an IRQ sample stamped `ts_ns` with `latency_ns` belongs to a run
/// that began at `start_ns`: its activation's timer was due at or after the
/// start. An activation due before is left out whole — a CPU's thread
/// samples count from the activation of its first IRQ sample in the run —
/// as its IRQ sample may predate the run (read_until never hands it on),
/// and its thread ran before the priority was set. A thread held off
/// across the start (a SCHED_FIFO hog; an emulated guest on a busy host,
/// where one loaded run had such a first late sample on both CPUs) was
/// kept, without its IRQ latency when that IRQ sample came before the start.
fn in_run(ts_ns: u64, latency_ns: u64, start_ns: u64) -> bool {
    ts_ns.saturating_sub(latency_ns) >= start_ns
}

/// `TraceWindow::irq_latency_unknown` of a late thread sample whose IRQ
/// sample is not in the trace.
pub(crate) const IRQ_SAMPLE_LOST: &str =
    "lost: the tracer's IRQ sample of this activation is not in the trace (the ring buffer dropped it: see tracer.lost_events, tracer.missing)";

/// One timerlat sample: `#12 context thread timer_latency 5678 ns`.
#[derive(Debug, PartialEq)]
pub(crate) struct Sample<'a> {
    pub(crate) id: u64,
    pub(crate) context: &'a str,
    pub(crate) latency_ns: u64,
}

/// Parses a sample line's body (after the timestamp); None for other lines.
pub(crate) fn parse_sample(body: &str) -> Option<Sample<'_>> {
    let mut it = body.split_whitespace();
    let id = it.next()?.strip_prefix('#')?.parse().ok()?;
    if it.next()? != "context" {
        return None;
    }
    let context = it.next()?;
    if it.next()? != "timer_latency" {
        return None;
    }
    let value: u64 = it.next()?.parse().ok()?;
    let latency_ns = match it.next()? {
        "ns" => value,
        "us" => value * 1000,
        _ => return None,
    };
    Some(Sample { id, context, latency_ns })
}

/// The osnoise events that name what ran on a CPU while a timer was late
/// (`--trace-threshold`), enabled in the timerlat instance.
pub(crate) const NOISE_EVENTS: &[&str] = &["osnoise/irq_noise", "osnoise/nmi_noise", "osnoise/softirq_noise", "osnoise/thread_noise"];

/// At most this many interference events are kept per CPU for one window
/// (its whole length: a thread held off for seconds keeps every tick).
const MAX_NOISE_KEPT: usize = 1 << 16;

/// A timerlat IRQ sample, kept for the thread sample of the same activation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IrqSample {
    pub(crate) id: u64,
    pub(crate) latency_ns: u64,
    /// Its line's time: inside the timer's interrupt handler.
    pub(crate) ts_ns: u64,
    /// The interrupted task was the idle task.
    pub(crate) from_idle: bool,
}

/// One stretch of interference: what, and when in the trace clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Noise {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) pid: Option<u32>,
    pub(crate) irq: Option<u32>,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// The event's own `start` field, in the kernel's local clock.
    pub(crate) local_start_ns: Option<u64>,
}

/// Parses an osnoise event line's body. The event is written when the
/// interference ends, so it spans about [line time − duration, line time]
/// (its `start` field is in the kernel's local clock, not the instance's:
/// kept as `local_start_ns`).
pub(crate) fn parse_noise(body: &str, ts_ns: u64) -> Option<Noise> {
    let (event, rest) = body.split_once(':')?;
    let kind = match event.trim() {
        "irq_noise" => "irq",
        "nmi_noise" => "nmi",
        "softirq_noise" => "softirq",
        "thread_noise" => "task",
        _ => return None,
    };
    let (what, times) = match rest.find("start ") {
        Some(i) => (rest[..i].trim(), &rest[i..]),
        None => return None,
    };
    let duration: u64 = times.split_whitespace().skip_while(|w| *w != "duration").nth(1)?.parse().ok()?;
    let (name, number) = match what.rsplit_once(':') {
        Some((n, num)) => (n.trim().to_string(), num.trim().parse::<u32>().ok()),
        None => (if kind == "nmi" { "nmi".to_string() } else { what.to_string() }, None),
    };
    let (pid, irq) = if kind == "task" { (number, None) } else { (None, number) };
    let local_start_ns = times.split_whitespace().nth(1).and_then(crate::sys::tracefs::parse_ts);
    Some(Noise { kind, name, pid, irq, start_ns: ts_ns.saturating_sub(duration), end_ns: ts_ns, local_start_ns })
}

/// What held a CPU from a late timer's due time to its thread running:
/// the interference inside the window, longest first, the rest as
/// `unexplained` (IRQ delivery, the scheduler's own path, the hypervisor).
/// With the activation's IRQ sample, also rtla's split of its start: the
/// `irq_noise` event whose span holds the IRQ sample's time is the timer's
/// own interrupt (the tracer takes that sample inside the handler), so its
/// start − due is the handler delay and its length the IRQ duration.
pub(crate) fn window(cpu: usize, start_ns: u64, end_ns: u64, noise: &[Noise], irq: Option<IrqSample>) -> TraceWindow {
    let (culprits, inside) = culprits_in(start_ns, end_ns, noise);
    let mut w = TraceWindow::new(cpu, (start_ns, end_ns), inside, true, irq.map(|i| Nanos(i.latency_ns)), culprits);
    w.irq_latency_ns = irq.map(|i| Nanos(i.latency_ns));
    w.from_idle = irq.map(|i| i.from_idle);
    if let Some(i) = irq {
        split_irq(&mut w, start_ns, noise, i);
    }
    w
}

/// The interference inside `start_ns..end_ns`, longest first, adding up to
/// the window's span (the rest `unexplained`), and how many events fell in it.
fn culprits_in(start_ns: u64, end_ns: u64, noise: &[Noise]) -> (Vec<Culprit>, u32) {
    let mut culprits: Vec<Culprit> = Vec::new();
    let mut inside = 0u32;
    for n in noise.iter().filter(|n| n.end_ns > start_ns && n.start_ns < end_ns) {
        inside += 1;
        let d = n.end_ns.min(end_ns) - n.start_ns.max(start_ns);
        match culprits.iter_mut().find(|c| c.kind == n.kind && c.name == n.name && c.pid == n.pid) {
            Some(c) => {
                c.duration_ns.0 += d;
                c.count += 1;
            }
            None => culprits.push(Culprit {
                kind: n.kind.to_string(),
                name: n.name.clone(),
                pid: n.pid,
                prio: None,
                irq: n.irq,
                duration_ns: Nanos(d),
                count: 1,
                ..Default::default()
            }),
        }
    }
    culprits.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
    let held: u64 = culprits.iter().map(|c| c.duration_ns.0).sum();
    let span = end_ns - start_ns;
    if held > span {
        // Each event is placed back from the time it was written by its
        // duration, which osnoise gives net of what interrupted it, so an
        // interrupt can seem to overlap the thread it interrupted: the
        // longest culprits give back the overlap.
        let mut excess = held - span;
        for c in culprits.iter_mut() {
            let d = excess.min(c.duration_ns.0);
            c.duration_ns.0 -= d;
            excess -= d;
        }
        culprits.retain(|c| c.duration_ns.0 > 0);
    } else if span > held {
        culprits.push(Culprit {
            kind: "unexplained".into(),
            name: "not an interrupt or thread the tracer saw: IRQ delivery, the scheduler, hypervisor".into(),
            pid: None,
            prio: None,
            irq: None,
            duration_ns: Nanos(span - held),
            count: 1,
            ..Default::default()
        });
    }
    (culprits, inside)
}

/// rtla's split of the IRQ latency `i` of window `w` (due at `start_ns`):
/// the timer's own handler's delay and duration, where the clocks can place it.
fn split_irq(w: &mut TraceWindow, start_ns: u64, noise: &[Noise], i: IrqSample) {
    // The handler's start: its `start` field, in the kernel's local clock,
    // moved into the trace clock by the smallest (line time − local end) of
    // the events written within 20 ms of it (the two clocks drift apart:
    // over a whole 130 ms window by 5 µs once under TCG). Line time −
    // duration would be late by the time from the handler's exit to the
    // event's write (3 µs and more under TCG).
    // Hard IRQs do not nest, so the candidate is the first IRQ event (they
    // are in the order written) that ends at or after the IRQ sample.
    let Some(h) = noise.iter().find(|n| n.kind == "irq" && n.end_ns >= i.ts_ns) else {
        return;
    };
    let offset = noise
        .iter()
        .filter(|n| n.end_ns.abs_diff(h.end_ns) <= 20_000_000)
        .filter_map(|n| n.local_start_ns.map(|l| n.end_ns as i128 - (l + (n.end_ns - n.start_ns)) as i128))
        .min();
    let begin = match (h.local_start_ns, offset) {
        (Some(l), Some(o)) => (l as i128 + o).clamp(0, h.start_ns as i128) as u64,
        _ => h.start_ns,
    };
    // The split is shown only where the clocks can place the handler: it
    // starts no earlier than the timer was due and no later than the IRQ
    // sample, which it takes while it runs (1 µs of slack: the event times
    // have µs resolution). A handler the offset cannot place (under load the
    // two clocks' offset is read from events written late) leaves the split
    // unknown rather than a delay and duration that do not add up to the IRQ
    // latency. The IRQ sample is placed at the window's due time + its
    // latency, not at its line's time: the line is written after the
    // latency is taken (6.7 µs later once under TCG on a loaded host), and
    // the delay is counted from the due time, so only that frame keeps
    // delay <= IRQ latency <= delay + duration.
    const SLACK_NS: u64 = 1_000;
    let duration = h.end_ns - h.start_ns;
    let sampled = start_ns + i.latency_ns;
    if begin + SLACK_NS >= start_ns && begin <= sampled && sampled <= begin + duration + SLACK_NS {
        w.irq_handler_delay_ns = Some(Nanos(begin.saturating_sub(start_ns)));
        w.irq_duration_ns = Some(Nanos(duration));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_of_both_contexts_parse_and_other_lines_do_not() {
        assert_eq!(parse_sample("#1     context    irq timer_latency       932 ns"), Some(Sample { id: 1, context: "irq", latency_ns: 932 }));
        assert_eq!(parse_sample("#12    context thread timer_latency     11700 ns"), Some(Sample { id: 12, context: "thread", latency_ns: 11_700 }));
        assert_eq!(parse_sample("#3 context thread timer_latency 7 us").unwrap().latency_ns, 7_000);
        assert_eq!(parse_sample("irq_noise: local_timer:236 start 10.186443038 duration 43843 ns"), None);
        assert_eq!(parse_sample("#3 context thread timer_latency"), None);
    }

    #[test]
    fn an_irq_stack_goes_to_its_own_late_sample() {
        assert_eq!(frame_name("__hrtimer_run_queues+0x1a/0x40"), "__hrtimer_run_queues");
        assert_eq!(frame_name("read_iter_zero [zero]"), "read_iter_zero");
        let mut ws = vec![(7, window(0, 0, 100, &[], None)), (9, window(0, 200, 300, &[], None))];
        attach_stack(&mut ws, 9, vec!["timerlat_irq".into(), "asm_sysvec_apic_timer_interrupt".into(), "read_iter_zero".into()]);
        attach_stack(&mut ws, 8, vec!["elsewhere".into()]);
        attach_stack(&mut ws, 7, Vec::new());
        assert_eq!(ws[0].1.irq_stack, None);
        assert_eq!(ws[1].1.irq_stack.as_deref().map(|f| f.len()), Some(3));
        assert_eq!(crate::trace::report::interrupted_code(ws[1].1.irq_stack.as_ref().unwrap()), "read_iter_zero");
        assert_eq!(crate::trace::report::interrupted_code(&["timerlat_irq".into(), "asm_sysvec_apic_timer_interrupt".into()]), "user code");
    }

    #[test]
    fn an_activation_due_before_the_run_is_left_out() {
        // Started at 1 000 000: an IRQ sample at 1 300 000, 400 µs late,
        // was due at 900 000 — before the start: out, as its IRQ sample.
        assert!(!in_run(1_300_000, 400_000, 1_000_000));
        assert!(in_run(1_300_000, 300_000, 1_000_000));
        // A latency longer than the line's time does not wrap around.
        assert!(!in_run(100, 200, 50));
    }

    #[test]
    fn noise_events_parse_into_spans_ending_at_their_line() {
        let n = parse_noise("irq_noise: local_timer:236 start 10.186443038 duration 43843 ns", 1_000_000).unwrap();
        assert_eq!((n.kind, n.name.as_str(), n.irq, n.start_ns, n.end_ns), ("irq", "local_timer", Some(236), 956_157, 1_000_000));
        let t = parse_noise("thread_noise:       sh:118 start 10.187835441 duration 34184 ns", 50_000).unwrap();
        assert_eq!((t.kind, t.name.as_str(), t.pid, t.start_ns), ("task", "sh", Some(118), 15_816));
        let s = parse_noise("softirq_noise:    TIMER:1 start 1.000000001 duration 10 ns", 100).unwrap();
        assert_eq!((s.kind, s.name.as_str(), s.irq), ("softirq", "TIMER", Some(1)));
        let m = parse_noise("nmi_noise: start 1.000000001 duration 7 ns", 100).unwrap();
        assert_eq!((m.kind, m.name.as_str()), ("nmi", "nmi"));
        assert_eq!(parse_noise("#1 context irq timer_latency 5 ns", 10), None);
    }

    #[test]
    fn a_late_window_names_its_blocking_thread_and_the_rest() {
        let noise = vec![
            parse_noise("thread_noise: hog:77 start 0 duration 600 ns", 1_500).unwrap(), // 900..1500
            parse_noise("irq_noise: local_timer:236 start 0 duration 100 ns", 1_000).unwrap(), // 900..1000
            parse_noise("thread_noise: hog:77 start 0 duration 50 ns", 400).unwrap(),    // before the window
        ];
        let irq = IrqSample { id: 5, latency_ns: 300, ts_ns: 1_300, from_idle: true };
        let w = window(1, 1_000, 2_000, &noise, Some(irq));
        assert_eq!(w.culprits[0].name, "hog");
        assert_eq!(w.culprits[0].duration_ns, Nanos(500), "clipped to the window");
        assert_eq!(w.culprits[1].kind, "unexplained");
        assert_eq!(w.culprits[1].duration_ns, Nanos(500));
        assert_eq!(w.culprits.len(), 2, "the IRQ ended at the window start: {:?}", w.culprits);
        assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 1_000);
        assert_eq!((w.irq_latency_ns, w.from_idle, w.events), (Some(Nanos(300)), Some(true), 1));
        // No interrupt event around the IRQ sample's time: no handler figures.
        assert_eq!((w.irq_handler_delay_ns, w.irq_duration_ns), (None, None));
    }

    #[test]
    fn the_timer_interrupt_is_the_irq_event_around_the_irq_sample() {
        // Due at 10 000; a disk IRQ 9 900..10 200 delays the timer's handler,
        // which runs 10 250..10 400, takes the IRQ sample at 10 300, and whose
        // event is written 3 µs after it ended. The local clock is the trace
        // clock + 1 s.
        let noise = vec![
            parse_noise("irq_noise: virtio0:36 start 1.000009900 duration 300 ns", 10_200).unwrap(),
            parse_noise("irq_noise: local_timer:236 start 1.000010250 duration 150 ns", 13_400).unwrap(),
            parse_noise("irq_noise: local_timer:236 start 1.000013500 duration 100 ns", 13_600).unwrap(),
        ];
        assert_eq!(noise[1].local_start_ns, Some(1_000_010_250));
        let irq = IrqSample { id: 9, latency_ns: 300, ts_ns: 10_300, from_idle: false };
        let w = window(0, 10_000, 14_500, &noise, Some(irq));
        // From the `start` field: not 13 250 (line time − duration).
        assert_eq!(w.irq_handler_delay_ns, Some(Nanos(250)));
        assert_eq!(w.irq_duration_ns, Some(Nanos(150)));
        // The delaying IRQ's part in the window is a culprit (rtla's "previous IRQ").
        let disk = w.culprits.iter().find(|c| c.name == "virtio0").expect("the disk IRQ");
        assert_eq!(disk.duration_ns, Nanos(200));
        assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 4_500);
    }

    #[test]
    fn a_handler_start_the_clocks_cannot_place_leaves_the_split_unknown() {
        // Due at 10 000, IRQ sample at 50 000 (40 µs late). A softirq event
        // written 2 µs after it ended sets the clocks' offset (local = trace
        // + 999 998 000); by it the timer IRQ event starts at 2 000, long
        // before the timer was due, and ends 30 µs later: delay 0 + duration
        // 30 µs cannot make a 40 µs IRQ latency, so no split is shown (seen
        // under load: delay 0, duration 40 065 ns, IRQ latency 47 343 ns).
        let softirq = parse_noise("softirq_noise: TIMER:1 start 1.000002000 duration 1000 ns", 5_000).unwrap();
        let noise = vec![softirq.clone(), parse_noise("irq_noise: local_timer:236 start 1.000000000 duration 30000 ns", 50_100).unwrap()];
        let irq = IrqSample { id: 3, latency_ns: 40_000, ts_ns: 50_000, from_idle: false };
        let w = window(0, 10_000, 60_000, &noise, Some(irq));
        assert_eq!((w.irq_handler_delay_ns, w.irq_duration_ns), (None, None));
        assert_eq!(w.irq_latency_ns, Some(Nanos(40_000)), "the IRQ latency itself is still known");
        // A handler that starts after the due time and runs past the sample
        // keeps its split: it starts at 10 100 and runs 40 µs.
        let noise = vec![softirq, parse_noise("irq_noise: local_timer:236 start 1.000008500 duration 40000 ns", 50_100).unwrap()];
        let w = window(0, 10_000, 60_000, &noise, Some(irq));
        assert_eq!((w.irq_handler_delay_ns, w.irq_duration_ns), (Some(Nanos(100)), Some(Nanos(40_000))));
    }

    #[test]
    fn the_split_never_exceeds_the_irq_latency_when_the_sample_line_is_written_late() {
        // Due at 10 000 with a 40 µs IRQ latency, so sampled at 50 000, but
        // the sample's line is stamped 56 000 (written 6 µs after the
        // latency was taken). The timer IRQ event starts at 55 000 (local
        // clock 1.000053000 moved by the softirq's offset): before the
        // line, after the sample. A 45 µs delay cannot be part of a 40 µs
        // IRQ latency, so no split (seen under load: delay 145 079 701 ns,
        // IRQ latency 145 073 014 ns).
        let softirq = parse_noise("softirq_noise: TIMER:1 start 1.000002000 duration 1000 ns", 5_000).unwrap();
        let late = IrqSample { id: 3, latency_ns: 40_000, ts_ns: 56_000, from_idle: false };
        let noise = vec![softirq.clone(), parse_noise("irq_noise: local_timer:236 start 1.000053000 duration 2000 ns", 57_100).unwrap()];
        let w = window(0, 10_000, 60_000, &noise, Some(late));
        assert_eq!((w.irq_handler_delay_ns, w.irq_duration_ns), (None, None));
        // The same late line with a handler that did start before the sample
        // (at 10 100) and ran past the line (47 µs long) keeps its split,
        // which adds up.
        let noise = vec![softirq, parse_noise("irq_noise: local_timer:236 start 1.000008100 duration 47000 ns", 57_100).unwrap()];
        let w = window(0, 10_000, 60_000, &noise, Some(late));
        assert_eq!((w.irq_handler_delay_ns, w.irq_duration_ns), (Some(Nanos(100)), Some(Nanos(47_000))));
    }
}
