//! The `pipe` probe: the RT-FIFO test of the source experiments, on Linux
//! pipes.
//!
//! - `oneway`: write(2) of `--msg-size` bytes → the reader's read(2)
//!   returns the whole message (timestamps as in `pair`).
//! - `roundtrip`: task1 → pipe A → task2 → pipe B → task1; task1 records the
//!   time from just before its write to just after its read of the answer.
//!
//! The pair runs on the plan's first and last CPU (`-a 0` puts both on CPU
//! 0, the default all-CPU set puts them on two). Messages up to PIPE_BUF
//! (4096 bytes) are written atomically; larger ones are read in parts and
//! the timestamp is taken when the last byte has arrived.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;

use super::pair::{one_way, round_trip, Channel, ChannelHandoff, Events, Placement};
use super::registry::ProbeInfo;
use super::{select, Probe, ProbeCtx, ThreadOutcome};

pub(crate) struct PipeProbe;

const VARIANTS: &[&str] = &["oneway", "roundtrip"];

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "pipe",
    about: "pipe (RT-FIFO) oneway write -> read, and task1 -> A -> task2 -> B -> task1 roundtrip",
    variants: VARIANTS,
    traced: super::registry::Traced::Handoff,
    flags: &["--msg-size", "--iterations", "--back-to-back", "--sender-priority"],
    ..ProbeInfo::PLAIN
};

impl Probe for PipeProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        run_channels(ctx, "pipe", false, |_| Pipe::new())
    }
}

/// Shared by `pipe` and `mq`: run the selected of oneway / roundtrip with
/// channels made by `make` (called with a distinct number per channel);
/// `go_via_channel`: oneway runs rt-tests' two-step cycle with a second
/// channel carrying `go` (pair's module docs).
pub(crate) fn run_channels<C: Channel>(
    ctx: &ProbeCtx<'_>,
    probe: &str,
    go_via_channel: bool,
    make: impl Fn(usize) -> anyhow::Result<C>,
) -> anyhow::Result<Vec<ThreadOutcome>> {
    let variants = select::chosen(ctx, probe, VARIANTS);
    let share = select::share(ctx, variants.len());
    let size = ctx.run.probe.msg_size;
    let place = Placement::from_plan(ctx);
    let mut out = Vec::new();
    for v in &variants {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        ctx.board.reset(&format!("{probe} {v}"));
        let o = if v == "oneway" {
            let h = ChannelHandoff::new(make(0)?, go_via_channel, || make(3))?;
            one_way(ctx, v, &h, place, Events::from_plan(ctx, share, size), 0)?
        } else {
            let (a, b) = (make(1)?, make(2)?);
            round_trip(ctx, v, &a, &b, place, Events::from_plan(ctx, share, size))?
        };
        out.push(o);
    }
    Ok(out)
}

/// One pipe: (read end, write end).
pub(crate) struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
}

impl Pipe {
    pub(crate) fn new() -> anyhow::Result<Pipe> {
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| anyhow::anyhow!("pipe2: {e}"))?;
        Ok(Pipe { r, w })
    }
}

impl Channel for Pipe {
    fn send(&self, buf: &[u8]) -> Result<(), String> {
        let mut done = 0;
        while done < buf.len() {
            // SAFETY: the slice is valid for reading `len - done` bytes.
            let n = unsafe { libc::write(self.w.as_raw_fd(), buf[done..].as_ptr().cast(), buf.len() - done) };
            match nix::errno::Errno::result(n) {
                Ok(n) => done += n as usize,
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("write to pipe: {e}")),
            }
        }
        Ok(())
    }
    fn recv(&self, buf: &mut [u8]) -> Result<(), String> {
        let mut done = 0;
        while done < buf.len() {
            // SAFETY: the slice is valid for writing `len - done` bytes.
            let n = unsafe { libc::read(self.r.as_raw_fd(), buf[done..].as_mut_ptr().cast(), buf.len() - done) };
            match nix::errno::Errno::result(n) {
                Ok(0) => return Err("pipe closed".into()),
                Ok(n) => done += n as usize,
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("read from pipe: {e}")),
            }
        }
        Ok(())
    }
}
