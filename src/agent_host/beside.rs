//! This host beside a target that runs on it (issue 49, item 2): an
//! `exec:` emulator (QEMU TCG through `lab/kernel-lab --agent`), a
//! simulator (NuttX's `sim`, issue 64) or an agent started here. The target's clock, timers and interrupts get the host's
//! CPU time; other work on the host (a build, stress-ng) takes it from
//! them, so a phase the target runs idle was not idle. At each phase's
//! start and end the session reads the host's per-CPU busy time
//! (/proc/stat), its own CPU time and the exec command's process group's;
//! what is left is the others' share ([`HostBeside::others_share`]).
//! A target on another machine (tcp, serial, `exec:ssh board …`) shares
//! nothing with this host: nothing is read.

use std::time::Instant;

use crate::load::phase::SysCounters;
use crate::model::{HostBeside, Nanos};

/// The counters at one phase's start: the host's, as a native phase reads
/// them ([`SysCounters`]), and the target's process group's CPU time.
pub(crate) struct Sample {
    at: Instant,
    group: u32,
    sys: SysCounters,
    group_ns: u64,
}

impl Sample {
    /// Read the host now, for the target whose exec command leads process
    /// group `group`.
    pub(crate) fn read(group: u32) -> Sample {
        Sample { at: Instant::now(), group, sys: SysCounters::read(), group_ns: crate::sys::resource::group_cpu_ns(group) }
    }

    /// The phase `phase` from this start to now.
    pub(crate) fn since(&self, phase: &str) -> HostBeside {
        let now = Sample::read(self.group);
        let d = now.sys.since(&self.sys, now.at.duration_since(self.at));
        HostBeside {
            phase: phase.to_string(),
            duration_ns: d.duration_ns,
            cpus: d.cpu_busy.len(),
            busy_ns: Nanos(d.cpu_busy.iter().map(|c| c.busy_ns.0).fold(0u64, u64::saturating_add)),
            rtscope_cpu_ns: d.rtscope_cpu_ns.unwrap_or_default(),
            target_cpu_ns: Nanos(now.group_ns.saturating_sub(self.group_ns)),
        }
    }
}

/// Whether the target of the exec command `command`, whose announcement
/// names `host` and `release`, runs on this host: an emulator started
/// here, the agent itself, or any command that does not reach another
/// machine — whatever its `hello` says: a simulator (NuttX's `sim`) names
/// its own system, yet it is a process of this host, and its figures are
/// this host's scheduling of it (issue 64: other load took its missed
/// periods from 0.67 % to 39 % and nothing said so).
pub(crate) fn runs_here(command: &str, host: &str, release: &str) -> bool {
    crate::model::exec_emulation(command).is_some() || names_this_host(host, release) || !reaches_another_machine(command)
}

/// Programs an exec command reaches another machine through: a remote
/// shell, a network pipe, a serial terminal (a board on this host's UART).
const REMOTE: &[&str] =
    &["ssh", "slogin", "rsh", "telnet", "mosh", "nc", "ncat", "netcat", "socat", "picocom", "minicom", "microcom", "cu", "tio", "plink", "adb"];

/// Whether one of the command's words runs a [`REMOTE`] program.
fn reaches_another_machine(command: &str) -> bool {
    command.split(|c: char| c.is_whitespace() || "'\";|&()".contains(c)).any(|w| REMOTE.contains(&w.rsplit('/').next().unwrap_or(w)))
}

/// Whether an agent's hello names this host's nodename and kernel release.
/// Names alone cannot tell every case: a simulator (NuttX's sim, an RTOS
/// on qemu-user) runs here under another name.
pub(crate) fn names_this_host(host: &str, release: &str) -> bool {
    let here = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).map(|s| s.trim().to_string()).unwrap_or_default();
    !host.is_empty() && host == here("hostname") && release == here("osrelease")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exec_target_runs_here_unless_it_reaches_another_machine() {
        // A simulator names its own system and no host: it runs here.
        assert!(runs_here("./nuttx", "", "0.0.0"));
        assert!(runs_here("exec python3 fake_agent.py script", "fake", "1"));
        for remote in
            ["ssh board rtscope-agent", "/usr/bin/ssh -p 22 root@board 'rtscope-agent'", "picocom -b 115200 /dev/ttyUSB0", "sshpass -f pw ssh board agent"]
        {
            assert!(!runs_here(remote, "board", "6.1.0"), "{remote}");
        }
        // QEMU runs here, whatever the guest's hello names.
        assert!(runs_here("qemu-system-aarch64 -M virt -nographic", "board", "6.1.0"));
    }
}
