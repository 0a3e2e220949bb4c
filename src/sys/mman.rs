//! `<sys/mman.h>`: lock all memory so no page fault lands in a measurement.
//! See mlockall(2).

use nix::sys::mman::{mlockall, MlockAllFlags};

/// mlockall(MCL_CURRENT | MCL_FUTURE).
pub fn lock_all() -> nix::Result<()> {
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
}

/// Why `lock_all` must not be called, if so. Without CAP_IPC_LOCK, MCL_FUTURE counts every
/// later allocation against RLIMIT_MEMLOCK; once past it an allocation fails and the
/// process aborts ("memory allocation of N bytes failed") — mlockall itself succeeds when
/// the current mappings still fit. See getrlimit(2), capabilities(7).
pub fn future_lock_hazard() -> Option<String> {
    if has_cap_ipc_lock() {
        return None;
    }
    let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK).ok()?;
    if soft == nix::sys::resource::RLIM_INFINITY {
        return None;
    }
    Some(format!(
        "skipped: RLIMIT_MEMLOCK is {} KiB and rtscope lacks CAP_IPC_LOCK, so locking future \
         allocations would make them fail; page faults may add latency; run as root, grant \
         CAP_IPC_LOCK or raise the limit (ulimit -l unlimited)",
        soft / 1024
    ))
}

/// CAP_IPC_LOCK (bit 14) in the effective set, from /proc/self/status.
fn has_cap_ipc_lock() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim().to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 14) != 0)
}

/// Touch `bytes` of stack so its pages are mapped (and locked) before the
/// start barrier, as cyclictest does.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    fn touch(left: usize) {
        let mut page = [0u8; CHUNK];
        std::hint::black_box(&mut page);
        if left > CHUNK {
            touch(left - CHUNK);
        }
        std::hint::black_box(&page);
    }
    touch(bytes);
}
