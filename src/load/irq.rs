//! The `irq` load: raise interrupt rates. Each worker runs a timer storm (a
//! thread sleeping 20 µs at a time with its timer slack set to 1 ns, so every
//! sleep arms an hrtimer and wakes on its interrupt) and a cross-CPU
//! ping-pong (two threads pinned to different load CPUs passing one byte
//! back and forth over a socket pair: every hand-off is a wake-up of a task
//! on another CPU, i.e. a rescheduling IPI). stress-ng: `--timer N` at
//! 50 kHz (POSIX timers, hrtimer-based) and `--futex N` (cross-process
//! wake-ups).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Counters, Load, WorkerCtx};
use crate::sys::sched::set_current_affinity;

pub(crate) struct IrqLoad;

impl Load for IrqLoad {
    fn name(&self) -> &'static str {
        "irq"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let stop = ctx.stop;
        let n = ctx.cpus.len().max(1);
        let cpu_a = ctx.cpus.get(ctx.index % n).copied();
        let cpu_b = ctx.cpus.get((ctx.index + 1) % n).copied();
        let (mut ping, mut pong) = UnixStream::pair()?;
        ping.set_read_timeout(Some(Duration::from_millis(100)))?;
        pong.set_read_timeout(Some(Duration::from_millis(100)))?;
        std::thread::scope(|s| -> anyhow::Result<Counters> {
            let timer = ctx.spawn(s, "the timer thread", move || {
                // 1 ns slack: without it SCHED_OTHER sleeps are batched 50 µs.
                let _ = crate::sys::prctl::set_timer_slack_ns(1);
                let mut wakeups = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_micros(20));
                    wakeups += 1;
                }
                wakeups
            })?;
            let ponger = ctx.spawn(s, "the ping-pong thread", move || {
                if let Some(c) = cpu_b {
                    let _ = set_current_affinity(&[c]);
                }
                let mut b = [0u8; 1];
                while !stop.load(Ordering::Relaxed) {
                    match pong.read(&mut b) {
                        Ok(1) => {
                            if pong.write_all(&b).is_err() {
                                break;
                            }
                        }
                        Ok(_) => break,
                        Err(_) => {}
                    }
                }
            })?;
            if let Some(c) = cpu_a {
                let _ = set_current_affinity(&[c]);
            }
            let mut round_trips = 0u64;
            let mut b = [1u8; 1];
            while !stop.load(Ordering::Relaxed) {
                // The partner may already have seen `stop` and closed its end.
                if ping.write_all(&b).is_err() {
                    break;
                }
                match ping.read(&mut b) {
                    Ok(1) => round_trips += 1,
                    Ok(_) => break,
                    Err(_) => {}
                }
            }
            drop(ping);
            let wakeups = timer.join().map_err(|_| anyhow::anyhow!("irq load: timer thread panicked"))?;
            ponger.join().map_err(|_| anyhow::anyhow!("irq load: ping-pong thread panicked"))?;
            Ok(Counters::from([("timer_wakeups".to_string(), wakeups), ("cross_cpu_wakeups".to_string(), 2 * round_trips)]))
        })
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        // Not --hrtimers: its many child processes take most of the CPU
        // share in `mixed` (seen: 61 of 64 CPU s), starving the other loads.
        // POSIX timers are hrtimers already; 50 kHz per worker is a storm.
        vec!["--timer".into(), workers.to_string(), "--timer-freq".into(), "50000".into(), "--futex".into(), workers.to_string()]
    }
}
