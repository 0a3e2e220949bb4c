//! Thin wrappers over the system calls rtscope needs, named after the C header
//! they wrap (nix style). Each `unsafe` block holds the one libc call and a
//! `SAFETY:` comment; results come back as `nix::Result` / `std::io::Result`.

pub(crate) mod dma_latency;
pub(crate) mod futex;
pub(crate) mod mman;
pub(crate) mod perf_event;
pub(crate) mod prctl;
pub(crate) mod pthread;
pub(crate) mod resource;
pub(crate) mod sched;
pub(crate) mod semaphore;
pub(crate) mod signal;
pub(crate) mod stat;
pub(crate) mod time;
pub(crate) mod tracefs;
pub(crate) mod wait;
