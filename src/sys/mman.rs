//! `<sys/mman.h>`: lock all memory so no page fault lands in a measurement.
//! See mlockall(2).

use nix::sys::mman::{mlockall, MlockAllFlags};

/// Below this RLIMIT_MEMLOCK an unprivileged process does not lock all memory.
const MIN_MEMLOCK_UNPRIVILEGED: u64 = 1 << 30;

/// mlockall(MCL_CURRENT | MCL_FUTURE).
///
/// Not attempted (ENOMEM) when not root and RLIMIT_MEMLOCK is finite and
/// under 1 GiB: with MCL_FUTURE every later mapping counts against that
/// limit (the binary, thread stacks, recorders, the result), and once it
/// is reached an allocation fails and the process aborts, losing the run —
/// far worse than the page faults locking avoids. (Seen: the default 8 MiB
/// limit aborted a 500 ms unprivileged run once the binary grew by 0.8 MB.)
pub fn lock_all() -> nix::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK)?;
        if soft != nix::sys::resource::RLIM_INFINITY && soft < MIN_MEMLOCK_UNPRIVILEGED {
            return Err(nix::errno::Errno::ENOMEM);
        }
    }
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
