//! The `mq` probe: POSIX message queues, the "mailbox" of the source
//! experiments: `oneway` (mq_send → mq_receive returns) and `roundtrip`
//! (task1 → queue A → task2 → queue B → task1), `--msg-size` bytes (16 by
//! default, at most /proc/sys/fs/mqueue/msgsize_max, checked at plan time).
//!
//! Each queue is created with a name unique to this process and unlinked at
//! once: the descriptor stays valid and nothing is left in /dev/mqueue even
//! if rtscope is killed — but for a kill between the two calls: a later run
//! removes such a name ([`remove_stale_queues`], and `new` when the name is
//! its own pid's). Pacing, placement and timestamps are `pipe`'s
//! (shared code in `pipe::run_channels`).

use std::ffi::CString;

use super::pair::Channel;
use super::pipe::run_channels;
use super::registry::ProbeInfo;
use super::{Probe, ProbeCtx, ThreadOutcome};

pub(crate) struct MqProbe;

/// This probe's facts (see [`super::registry`]).
pub(crate) static INFO: ProbeInfo = ProbeInfo {
    name: "mq",
    about: "POSIX message queue (mailbox) oneway and roundtrip",
    variants: &["oneway", "roundtrip"],
    traced: super::registry::Traced::Handoff,
    flags: &["--msg-size", "--iterations", "--back-to-back", "--sender-priority"],
    ..ProbeInfo::PLAIN
};

impl Probe for MqProbe {
    fn info(&self) -> &'static ProbeInfo {
        &INFO
    }

    fn run(&self, ctx: &ProbeCtx<'_>) -> anyhow::Result<Vec<ThreadOutcome>> {
        let size = ctx.run.probe.msg_size;
        // pmqtest's cycle: `go` through a second queue (pair's module docs).
        run_channels(ctx, "mq", true, |k| MsgQueue::new(k, size))
    }
}

/// Removes `/rtscope-<pid>-<k>` queues whose maker is gone (pid and start time, [`crate::sys::tracefs::maker_alive`])
/// (killed between mq_open and mq_unlink), this user's only. Needs the
/// mqueue filesystem mounted at /dev/mqueue to list names; nothing
/// otherwise. Returns what it removed.
pub(crate) fn remove_stale_queues() -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir("/dev/mqueue") else { return Vec::new() };
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = queue_pid(&name) else { continue };
        // Its maker runs: the pid's process started before the queue was last changed.
        if pid == std::process::id() || crate::sys::tracefs::owner_alive(pid, &e.path()) || !e.metadata().is_ok_and(|m| m.uid() == me) {
            continue;
        }
        let Ok(c) = CString::new(format!("/{name}")) else { continue };
        // SAFETY: `c` is a valid C string.
        if unsafe { libc::mq_unlink(c.as_ptr()) } == 0 {
            removed.push(format!("message queue /{name}"));
        }
    }
    removed
}

/// The pid in a queue name of [`MsgQueue::new`] (`rtscope-<pid>-<k>`).
fn queue_pid(name: &str) -> Option<u32> {
    let (pid, k) = name.strip_prefix("rtscope-")?.split_once('-')?;
    k.parse::<usize>().ok()?;
    pid.parse().ok()
}

/// An unlinked POSIX message queue of depth 1.
pub(crate) struct MsgQueue {
    q: libc::mqd_t,
    size: usize,
}

impl MsgQueue {
    pub(crate) fn new(k: usize, size: usize) -> anyhow::Result<MsgQueue> {
        let name = CString::new(format!("/rtscope-{}-{k}", std::process::id())).expect("no NUL in the name");
        // SAFETY: an all-zero mq_attr is valid; the fields used are set below.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = 1;
        attr.mq_msgsize = size as libc::c_long;
        let open = || {
            // SAFETY: `name` is a valid C string; mode and attr are the two
            // variadic arguments O_CREAT requires; attr lives across the call.
            unsafe { libc::mq_open(name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o600 as libc::c_uint, &attr) }
        };
        let mut q = open();
        if q == -1 && nix::errno::Errno::last() == nix::errno::Errno::EEXIST {
            // Our pid's name exists while we hold none (ours are unlinked
            // at once): left by a killed process that had our pid before.
            // SAFETY: `name` is a valid C string.
            unsafe { libc::mq_unlink(name.as_ptr()) };
            q = open();
        }
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

#[cfg(test)]
mod tests {
    #[test]
    fn queue_names_give_their_pid() {
        assert_eq!(super::queue_pid("rtscope-4242-1"), Some(4242));
        assert_eq!(super::queue_pid("rtscope-4242"), None);
        assert_eq!(super::queue_pid("other-4242-1"), None);
    }
}
