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
