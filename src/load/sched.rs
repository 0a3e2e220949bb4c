//! The `sched` load: hackbench-like message groups. Each worker is one group
//! of 4 senders and 4 receivers; every sender writes 100-byte messages to
//! every receiver's socket in turn, so the scheduler is kept busy waking and
//! switching many small tasks (hackbench's socket mode, with threads).
//! stress-ng: `--pipe N` (message passing through pipes) and `--switch N`
//! (forced context switches between processes).

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Counters, Load, WorkerCtx};

pub(crate) struct SchedLoad;

const GROUP: usize = 4;
const MSG: usize = 100;

impl Load for SchedLoad {
    fn name(&self) -> &'static str {
        "sched"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let stop = ctx.stop;
        let tick = Some(Duration::from_millis(100));
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        for _ in 0..GROUP {
            let (a, b) = UnixStream::pair()?;
            a.set_read_timeout(tick)?;
            b.set_write_timeout(tick)?;
            rx.push(a);
            tx.push(b);
        }
        // Each sender gets its own handle on every receiver's socket.
        let mut senders: Vec<Vec<UnixStream>> = Vec::new();
        for _ in 0..GROUP {
            senders.push(tx.iter().map(|t| t.try_clone()).collect::<Result<_, _>>()?);
        }
        drop(tx);
        std::thread::scope(|s| -> anyhow::Result<Counters> {
            let receivers: Vec<_> = rx
                .into_iter()
                .map(|mut r| {
                    ctx.spawn(s, "a receiver", move || {
                        let mut buf = [0u8; 4096];
                        let mut bytes = 0u64;
                        loop {
                            match r.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => bytes += n as u64,
                                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                                    if stop.load(Ordering::Relaxed) {
                                        break;
                                    }
                                }
                                Err(_) => break,
                            }
                        }
                        bytes
                    })
                })
                .collect::<anyhow::Result<_>>()?;
            let sent: Vec<_> = senders
                .into_iter()
                .map(|mut outs| {
                    ctx.spawn(s, "a sender", move || {
                        let msg = [0x42u8; MSG];
                        let mut n = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            for o in outs.iter_mut() {
                                if o.write_all(&msg).is_ok() {
                                    n += 1;
                                }
                            }
                        }
                        n
                    })
                })
                .collect::<anyhow::Result<_>>()?;
            let mut messages = 0u64;
            for h in sent {
                messages += h.join().map_err(|_| anyhow::anyhow!("sched load: a sender panicked"))?;
            }
            let mut received = 0u64;
            for h in receivers {
                received += h.join().map_err(|_| anyhow::anyhow!("sched load: a receiver panicked"))?;
            }
            Ok(Counters::from([("messages_sent".to_string(), messages), ("messages_received".to_string(), received / MSG as u64)]))
        })
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec!["--pipe".into(), workers.to_string(), "--switch".into(), workers.to_string()]
    }
}
