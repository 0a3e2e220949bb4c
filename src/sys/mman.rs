//! `<sys/mman.h>`: lock all memory so no page fault lands in a measurement.
//! See mlockall(2).

use nix::sys::mman::{mlockall, MlockAllFlags};

/// mlockall(MCL_CURRENT | MCL_FUTURE).
pub fn lock_all() -> nix::Result<()> {
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
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

/// madvise(MADV_DONTNEED) on the whole pages inside `buf`: the kernel drops
/// them, so the next touch of each one is a page fault (the memory load's
/// page-fault generator). Returns how many pages were dropped.
pub fn drop_pages(buf: &mut [u8]) -> nix::Result<usize> {
    const PAGE: usize = 4096;
    let start = buf.as_mut_ptr() as usize;
    let aligned = (start + PAGE - 1) & !(PAGE - 1);
    let end = (start + buf.len()) & !(PAGE - 1);
    if end <= aligned {
        return Ok(0);
    }
    // SAFETY: [aligned, end) lies inside `buf`, which we borrow mutably, and is
    // page-aligned; MADV_DONTNEED on private anonymous memory only zeroes it.
    let rc = unsafe { libc::madvise(aligned as *mut libc::c_void, end - aligned, libc::MADV_DONTNEED) };
    nix::errno::Errno::result(rc).map(|_| (end - aligned) / PAGE)
}

/// Why locking all memory would starve rtscope, or None when it is safe:
/// without CAP_IPC_LOCK, mlockall(MCL_FUTURE) succeeds but every later
/// mapping then counts against RLIMIT_MEMLOCK (often 8 MiB), and the
/// allocations of a multi-probe run fail (abort) once it is used up.
pub fn lock_all_would_exhaust() -> Option<String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is valid, writable storage for one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // CAP_IPC_LOCK (bit 14 of the effective set) lifts the limit.
    let cap_eff = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
    });
    if cap_eff.is_some_and(|c| c & (1 << 14) != 0) {
        return None;
    }
    Some(format!(
        "not attempted: RLIMIT_MEMLOCK is {} KiB and rtscope lacks CAP_IPC_LOCK, so locking all memory would make its later allocations fail; page faults may add latency; run as root or grant CAP_IPC_LOCK",
        lim.rlim_cur / 1024
    ))
}
