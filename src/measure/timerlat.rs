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

use super::tracer::{self, Kind, Series, TracerRun};
use super::{Extra, Probe, ProbeCtx, ThreadOutcome};

pub struct TimerlatProbe;

pub const VARIANTS: &[&str] = &["irq", "thread"];

impl Probe for TimerlatProbe {
    fn name(&self) -> &'static str {
        "timerlat"
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let cpus = tracer::distinct_cpus(&ctx.run.cpus);
        let period_us = (ctx.run.interval_ns / 1000).max(1);
        let interval_ns = period_us * 1000;
        let mut run = TracerRun::start(
            Kind::Timerlat,
            &[
                ("osnoise/cpus", crate::units::cpu_list_str(&cpus)),
                ("osnoise/timerlat_period_us", period_us.to_string()),
                ("osnoise/stop_tracing_us", "0".into()),
                ("osnoise/stop_tracing_total_us", "0".into()),
                ("osnoise/print_stack", "0".into()),
            ],
        )?;
        let setup = run.set_kthreads("timerlat", &cpus, ctx.run.policy, ctx.run.priority);
        run.settings.insert("priority".into(), format!("{} {}", ctx.run.policy.name(), ctx.run.priority));
        let variants: Vec<&'static str> = VARIANTS.iter().copied().filter(|v| ctx.run.probe.wants("timerlat", v)).collect();
        let mut series = Series::new(ctx, &cpus, &variants, interval_ns);
        let mut pipe = run.pipe()?;
        // Samples from here on: the kernel threads run at their priority.
        let start = crate::sys::time::now_ns();
        let mut last_id: Vec<Option<u64>> = vec![None; cpus.len()];
        ctx.board.running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = tracer::read_until(&run, &mut pipe, (start, start + ctx.run.duration_ns), ctx.stop, &mut |l| {
            let Some(s) = parse_sample(l.body) else { return };
            let Some(i) = cpus.iter().position(|&c| c == l.cpu) else { return };
            if s.context == "irq" {
                if let Some(prev) = last_id[i] {
                    series.missing[i] += s.id.saturating_sub(prev + 1);
                }
                last_id[i] = Some(s.id);
            }
            if let Some(v) = variants.iter().position(|&v| v == s.context) {
                if let Some(rec) = series.get(l.cpu, v) {
                    rec.record(s.latency_ns, l.ts_ns - start, s.id);
                }
            }
        });
        ctx.board.running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        read?;
        series.check_any(Kind::Timerlat, ctx)?;
        let note = format!(
            "kernel timerlat tracer, period {period_us} us, threads timerlat/N at {} {}: irq = timer due -> its interrupt handler ran (interrupt latency); thread = timer due -> the tracer's kernel thread ran (interrupt + dispatch latency)",
            ctx.run.policy.name(),
            ctx.run.priority
        );
        Ok(series.into_outcomes(&run, &pipe, interval_ns, setup, &|_, _| Extra { note: Some(note.clone()), ..Extra::default() }))
    }
}

/// One timerlat sample: `#12 context thread timer_latency 5678 ns`.
#[derive(Debug, PartialEq)]
pub struct Sample<'a> {
    pub id: u64,
    pub context: &'a str,
    pub latency_ns: u64,
}

/// Parses a sample line's body (after the timestamp); None for other lines.
pub fn parse_sample(body: &str) -> Option<Sample<'_>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_of_both_contexts_parse_and_other_lines_do_not() {
        assert_eq!(
            parse_sample("#1     context    irq timer_latency       932 ns"),
            Some(Sample { id: 1, context: "irq", latency_ns: 932 })
        );
        assert_eq!(
            parse_sample("#12    context thread timer_latency     11700 ns"),
            Some(Sample { id: 12, context: "thread", latency_ns: 11_700 })
        );
        assert_eq!(parse_sample("#3 context thread timer_latency 7 us").unwrap().latency_ns, 7_000);
        assert_eq!(parse_sample("irq_noise: local_timer:236 start 10.186443038 duration 43843 ns"), None);
        assert_eq!(parse_sample("#3 context thread timer_latency"), None);
    }
}
