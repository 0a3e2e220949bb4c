//! The `mq` probe: POSIX message queues, the "mailbox" of the source
//! experiments: `oneway` (mq_send → mq_receive returns) and `roundtrip`
//! (task1 → queue A → task2 → queue B → task1), `--msg-size` bytes (16 by
//! default, at most /proc/sys/fs/mqueue/msgsize_max, checked at plan time).
//!
//! Each queue is created with a name unique to this process and unlinked at
//! once: the descriptor stays valid and nothing is left in /dev/mqueue even
//! if rtscope is killed. Pacing, placement and timestamps are `pipe`'s
//! (shared code in `pipe::run_channels`).

use std::ffi::CString;

use super::pair::Channel;
use super::pipe::run_channels;
use super::{Probe, ProbeCtx, ThreadOutcome};

pub struct MqProbe;

impl Probe for MqProbe {
    fn name(&self) -> &'static str {
        "mq"
    }
    fn variants(&self) -> &'static [&'static str] {
        &["oneway", "roundtrip"]
    }
    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let size = ctx.run.probe.msg_size;
        // pmqtest's cycle: `go` through a second queue (pair's module docs).
        run_channels(ctx, "mq", true, |k| MsgQueue::new(k, size))
    }
}

/// An unlinked POSIX message queue of depth 1.
pub struct MsgQueue {
    q: libc::mqd_t,
    size: usize,
}

impl MsgQueue {
    pub fn new(k: usize, size: usize) -> anyhow::Result<MsgQueue> {
        let name = CString::new(format!("/rtscope-{}-{k}", std::process::id())).expect("no NUL in the name");
        // SAFETY: an all-zero mq_attr is valid; the fields used are set below.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = 1;
        attr.mq_msgsize = size as libc::c_long;
        // SAFETY: `name` is a valid C string; mode and attr are the two
        // variadic arguments O_CREAT requires; attr lives across the call.
        let q = unsafe {
            libc::mq_open(name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o600 as libc::c_uint, &attr)
        };
        if q == -1 {
            let e = nix::errno::Errno::last();
            anyhow::bail!("mq_open {} ({size}-byte messages): {e}", name.to_string_lossy());
        }
        // SAFETY: `name` is a valid C string.
        unsafe { libc::mq_unlink(name.as_ptr()) };
        Ok(MsgQueue { q, size })
    }
}

impl Drop for MsgQueue {
    fn drop(&mut self) {
        // SAFETY: `q` is an open queue descriptor owned by self.
        unsafe { libc::mq_close(self.q) };
    }
}

impl Channel for MsgQueue {
    fn send(&self, buf: &[u8]) -> Result<(), String> {
        loop {
            // SAFETY: `buf` is valid for `size` bytes (allocated with msg_size).
            let rc = unsafe { libc::mq_send(self.q, buf.as_ptr().cast(), self.size.min(buf.len()), 0) };
            match nix::errno::Errno::result(rc) {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(format!("mq_send: {e}")),
            }
        }
    }
    fn recv(&self, buf: &mut [u8]) -> Result<(), String> {
        loop {
            // SAFETY: `buf` is valid for writing its full length, which is
            // the queue's message size.
            let rc = unsafe { libc::mq_receive(self.q, buf.as_mut_ptr().cast(), buf.len(), std::ptr::null_mut()) };
            match nix::errno::Errno::result(rc) {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(format!("mq_receive: {e}")),
            }
        }
    }
}
