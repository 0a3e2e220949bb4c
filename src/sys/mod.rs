//! Thin wrappers over the system calls rtscope needs, named after the C header
//! they wrap (nix style). Each `unsafe` block holds the one libc call and a
//! `SAFETY:` comment; results come back as `nix::Result` / `std::io::Result`.

pub mod dma_latency;
pub mod futex;
pub mod mman;
pub mod resource;
pub mod sched;
pub mod semaphore;
pub mod stat;
pub mod time;
pub mod prctl;
pub mod pthread;
pub mod wait;
pub mod tracefs;
