//! The `memory` load: memory bandwidth and page faults. Each worker copies
//! between two 16 MiB halves of a buffer (bandwidth, past the caches), then
//! drops 4 MiB of it with madvise(MADV_DONTNEED) and touches it again (one
//! page fault per page). stress-ng: `--vm N` (mmap/munmap cycles, page
//! faults) and `--memcpy N` (bandwidth).

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Counters, Load, WorkerCtx};
use crate::sys::mman::drop_pages;

pub(crate) struct MemoryLoad;

const HALF: usize = 16 << 20;
const FAULT_SPAN: usize = 4 << 20;

impl Load for MemoryLoad {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters> {
        let mut buf = vec![0x5au8; 2 * HALF];
        let (mut copied, mut faulted) = (0u64, 0u64);
        while !ctx.stop.load(Ordering::Relaxed) {
            let (a, b) = buf.split_at_mut(HALF);
            b.copy_from_slice(a);
            a[0] = a[0].wrapping_add(1);
            copied += HALF as u64;
            let span = &mut buf[..FAULT_SPAN];
            let pages = drop_pages(span)?;
            for i in (0..FAULT_SPAN).step_by(4096) {
                span[i] = 1;
            }
            std::hint::black_box(&buf);
            faulted += pages as u64;
        }
        Ok(Counters::from([("bytes_copied".to_string(), copied), ("pages_faulted".to_string(), faulted)]))
    }

    fn stress_ng_args(&self, workers: usize, _dir: &Path) -> Vec<String> {
        vec!["--vm".into(), workers.to_string(), "--vm-bytes".into(), "64M".into(), "--memcpy".into(), workers.to_string()]
    }
}
