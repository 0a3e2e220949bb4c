//! The kernel lab, shared by tests/kernel_lab.rs and tests/kernel_lab_trace.rs:
//! one guest at a time, the lab script, the rtscope it runs, and QEMU installed
//! when it can be.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::have;

/// One guest at a time, across the tests of this file.
pub static GUEST: Mutex<()> = Mutex::new(());

pub fn guest_lock() -> MutexGuard<'static, ()> {
    // A failed test poisons the lock; the other tests may still run.
    GUEST.lock().unwrap_or_else(|e| e.into_inner())
}

/// The guest lock, when the lab can boot x86 guests here (else a SKIP line, None).
pub fn lab_guest() -> Option<MutexGuard<'static, ()>> {
    let guard = guest_lock();
    lab_available().then_some(guard)
}

pub fn kernel_lab() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/kernel-lab")
}

/// The rtscope the lab runs: RTSCOPE_LAB_RTSCOPE lets one check the lab
/// against another build.
pub fn lab_rtscope() -> PathBuf {
    std::env::var_os("RTSCOPE_LAB_RTSCOPE").map(PathBuf::from).unwrap_or_else(super::rtscope_path)
}

/// True when QEMU is usable, installing it with apt-get if needed and possible.
pub fn lab_available() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        if have("qemu-system-x86_64") && have("cpio") {
            return true;
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root && have("apt-get") {
            eprintln!("kernel_lab: installing qemu-system-x86 busybox-static cpio with apt-get");
            let _ = Command::new("sh")
                .arg("-c")
                .arg(
                    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                     apt-get install -y -qq qemu-system-x86 busybox-static cpio",
                )
                .status();
        }
        let ok = have("qemu-system-x86_64") && have("cpio");
        if !ok {
            super::skipped(
                "kernel_lab: qemu-system-x86_64 is not installed and could not be \
                 installed (apt-get install qemu-system-x86 busybox-static cpio, as root)",
            );
        }
        ok
    })
}

/// Runs lab/kernel-lab with `lab_args`, then `--` and `run_args`. A guest
/// whose kernel stopped before /init (QEMU TCG with two vCPUs on a loaded
/// 2-CPU host once froze the -rt kernel's boot at 2.9 s of guest time for
/// the whole 150 s) is booted once more: that is the emulator, not rtscope;
/// a second hang fails the test. Boot hangs are cut at 240 s; the whole
/// guest gets 600 s: with `stress-ng --cpu 2 --io 1` and other builds on
/// the host (load average 20) one 4 s timerlat run took 214 s from boot to
/// power-off, past the 150 s this used to allow. Since then 1 200 s: the
/// three tracer probes (3 s each, hwlat spinning with interrupts off) under
/// `stress-ng --cpu 2 --io 1` at load average 5 were still sending their
/// result over the console when 600 s ran out. A guest that finishes
/// powers off at once, so the bound costs a passing run nothing.
pub fn run_lab(lab_args: &[&str], run_args: &[&str]) -> Output {
    let once = || {
        let mut cmd = Command::new(kernel_lab());
        cmd.args(lab_args).arg("--rtscope").arg(lab_rtscope()).args(["--boot-timeout", "240", "--timeout", "1200"]).arg("--").args(run_args);
        let out = cmd.output().expect("cannot start lab/kernel-lab");
        eprintln!("kernel-lab {:?} -- {:?}: {}\n{}", lab_args, run_args, out.status, String::from_utf8_lossy(&out.stderr));
        out
    };
    let out = once();
    if out.status.code() == Some(124) && String::from_utf8_lossy(&out.stderr).contains("did not boot to /init") {
        eprintln!("kernel_lab: the guest kernel hung before /init; booting it once more");
        return once();
    }
    out
}

/// Pids of processes whose command line contains `needle`.
pub fn pids_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).map(|c| String::from_utf8_lossy(&c).contains(needle)).unwrap_or(false))
        .collect()
}
