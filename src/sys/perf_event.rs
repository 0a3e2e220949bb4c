//! `<linux/perf_event.h>`: per-CPU call-chain sampling with a software clock
//! event, read from the event's mmap ring. See perf_event_open(2).
//!
//! [`CpuSampler::open`] opens one `PERF_COUNT_SW_CPU_CLOCK` event for every
//! task on one CPU (`pid = -1`, needs root or `perf_event_paranoid` ≤ 0), with
//! `PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN`, the sample
//! time on CLOCK_MONOTONIC (`use_clockid`, the probes' and the trace's clock),
//! kernel call chains only (`exclude_callchain_user`: walking a user stack
//! without frame pointers gives garbage and costs more), and maps its ring.
//! The clock event is an hrtimer in the kernel, so it works in VMs without
//! hardware counters; it cannot fire while interrupts are off on the CPU,
//! which is what makes a gap in the samples evidence of an interrupts-off
//! region. [`CpuSampler::drain`] copies the records the kernel wrote since the
//! last call and hands the ring's space back (the ring protocol: read
//! `data_head` with acquire ordering, copy, store `data_tail` with release).
//!
//! Nothing here outlives the process: the descriptor and the ring go with it
//! on every exit path, SIGKILL included.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
/// Call-chain context markers (`PERF_CONTEXT_KERNEL`, `PERF_CONTEXT_USER`, ...): any entry at or above this.
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// Attribute flag bits (the C bit-field, in order from bit 0).
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
const ATTR_USE_CLOCKID: u64 = 1 << 25;
/// Where `data_head` / `data_tail` sit in `struct perf_event_mmap_page`.
const DATA_HEAD_OFFSET: usize = 1024;
const DATA_TAIL_OFFSET: usize = 1032;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes, Linux ≥ 4.8).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

/// What one [`CpuSampler::drain`] found besides the samples it handed over.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    pub(crate) samples: u64,
    /// Samples the kernel dropped because the ring was full (`PERF_RECORD_LOST`), and
    /// the records skipped after an impossible header (see [`CpuSampler::drain`]).
    pub(crate) lost: u64,
}

/// One CPU's sampling event and its mapped ring.
pub(crate) struct CpuSampler {
    fd: OwnedFd,
    /// The mapping: one metadata page, then `data_size` bytes of ring.
    base: *mut u8,
    map_len: usize,
    data_size: usize,
    /// One record copied out of the ring (records are at most 64 KiB: a u16 size).
    rec: Vec<u8>,
    /// The kernel frames of the sample being handed over.
    ips: Vec<u64>,
}

// SAFETY: the mapping is owned by this value alone and only read or written
// through `&mut self` (drain) or at drop; the kernel side is synchronised by
// the ring protocol (acquire on data_head, release on data_tail).
unsafe impl Send for CpuSampler {}

impl CpuSampler {
    /// Opens the clock event on `cpu`, one sample every `period_ns` of CPU
    /// time, call chains of at most `max_stack` kernel frames, a ring of
    /// `ring_pages` pages (a power of two), and starts it.
    pub(crate) fn open(cpu: usize, period_ns: u64, max_stack: u16, ring_pages: usize) -> std::io::Result<CpuSampler> {
        assert!(ring_pages.is_power_of_two(), "perf ring pages must be a power of two");
        let attr = PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: period_ns.max(10_000),
            sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
            flags: ATTR_DISABLED | ATTR_EXCLUDE_HV | ATTR_EXCLUDE_CALLCHAIN_USER | ATTR_USE_CLOCKID,
            clockid: libc::CLOCK_MONOTONIC,
            sample_max_stack: max_stack,
            ..Default::default()
        };
        // SAFETY: `attr` is a valid, fully initialised perf_event_attr whose `size` says how
        // much of it the kernel may read; pid -1 with a CPU is a per-CPU event, no group.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map_len = page * (ring_pages + 1);
        // SAFETY: a fresh shared mapping of the perf descriptor, of the size perf expects
        // (1 + 2^n pages); checked against MAP_FAILED below.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let s = CpuSampler {
            fd,
            base: base as *mut u8,
            map_len,
            data_size: page * ring_pages,
            rec: Vec::with_capacity(usize::from(u16::MAX)),
            ips: Vec::with_capacity(usize::from(max_stack)),
        };
        // SAFETY: ENABLE takes no argument and acts on our own descriptor.
        if unsafe { libc::ioctl(s.fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head is an aligned u64 inside the mapped metadata page, which lives as
        // long as `self`; the kernel writes it, so it is read atomically.
        unsafe { &*(self.base.add(DATA_HEAD_OFFSET) as *const AtomicU64) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`: data_tail is ours to write, the kernel reads it.
        unsafe { &*(self.base.add(DATA_TAIL_OFFSET) as *const AtomicU64) }
    }

    /// Copies `len` bytes of the ring from position `at` (wrapping) into `self.rec`.
    fn copy_out(&mut self, at: u64, len: usize) {
        let off = (at % self.data_size as u64) as usize;
        let first = len.min(self.data_size - off);
        self.rec.clear();
        // SAFETY: the ring's data is `data_size` bytes one page after `base`; both parts
        // lie inside it (off < data_size, first <= data_size - off, len - first <= off
        // since len <= data_size), and `rec` has the capacity for `len` (at most a u16).
        // The bytes are the kernel's, written before the data_head read with acquire
        // ordering; copying them (never a reference into the ring) is perf's own
        // reader's way (perf_mmap__read_event copies into event_copy).
        unsafe {
            let data = self.base.add(self.map_len - self.data_size);
            std::ptr::copy_nonoverlapping(data.add(off), self.rec.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, self.rec.as_mut_ptr().add(first), len - first);
            self.rec.set_len(len);
        }
    }

    /// Hands every sample written since the last call to `sink` (time, tid, kernel
    /// frames leaf first) and frees their space. Each record is copied out of the ring
    /// before it is read, into buffers made once: nothing is allocated per record. A
    /// header the kernel cannot have written (a size under 8 bytes, or past `data_head`)
    /// means the ring is not what it should be: the rest up to the head is skipped and
    /// counted as one lost record, and the next call reads on from there.
    pub(crate) fn drain(&mut self, mut sink: impl FnMut(u64, u32, &[u64])) -> Drained {
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        let mut out = Drained::default();
        while tail + 8 <= head {
            self.copy_out(tail, 8);
            let kind = u32::from_ne_bytes(self.rec[0..4].try_into().expect("4 bytes"));
            let size = u64::from(u16::from_ne_bytes(self.rec[6..8].try_into().expect("2 bytes")));
            if size < 8 || tail + size > head {
                out.lost += 1;
                tail = head;
                break;
            }
            self.copy_out(tail + 8, (size - 8) as usize);
            match kind {
                PERF_RECORD_SAMPLE => {
                    let mut ips = std::mem::take(&mut self.ips);
                    if let Some((time_ns, tid)) = parse_sample(&self.rec, &mut ips) {
                        out.samples += 1;
                        sink(time_ns, tid, &ips);
                    }
                    self.ips = ips;
                }
                PERF_RECORD_LOST if self.rec.len() >= 16 => out.lost += u64::from_ne_bytes(self.rec[8..16].try_into().expect("8 bytes")),
                _ => {}
            }
            tail += size;
        }
        self.tail().store(tail, Ordering::Release);
        out
    }
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        // SAFETY: DISABLE on our own descriptor; munmap of exactly the mapping made in open.
        unsafe {
            libc::ioctl(self.fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE, 0);
            libc::munmap(self.base as *mut libc::c_void, self.map_len);
        }
    }
}

/// A `PERF_RECORD_SAMPLE` body of `TID | TIME | CALLCHAIN`: pid, tid, time,
/// nr, ips[nr]. The chain's context markers are dropped; only kernel
/// addresses (those after `PERF_CONTEXT_KERNEL`) are kept, into `ips` (cleared first).
/// Returns the time and tid; None for a body too short to hold them.
fn parse_sample(rec: &[u8], ips: &mut Vec<u64>) -> Option<(u64, u32)> {
    let u64_at = |i: usize| rec.get(i..i + 8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
    ips.clear();
    let tid = u32::from_ne_bytes(rec.get(4..8)?.try_into().ok()?);
    let time_ns = u64_at(8)?;
    let nr = u64_at(16)? as usize;
    let mut in_kernel = false;
    for k in 0..nr.min((rec.len().saturating_sub(24)) / 8) {
        let ip = u64_at(24 + 8 * k)?;
        if ip >= PERF_CONTEXT_MAX {
            in_kernel = ip == (-128i64) as u64;
        } else if in_kernel && ips.len() < ips.capacity().max(1) {
            ips.push(ip);
        }
    }
    Some((time_ns, tid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_the_kernels_ver5_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
    }

    #[test]
    fn sample_body_keeps_kernel_frames_only() {
        let mut rec = Vec::new();
        rec.extend(7u32.to_ne_bytes());
        rec.extend(9u32.to_ne_bytes());
        rec.extend(1_000u64.to_ne_bytes());
        let chain = [(-128i64) as u64, 0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020, (-512i64) as u64, 0x4000];
        rec.extend((chain.len() as u64).to_ne_bytes());
        for ip in chain {
            rec.extend(ip.to_ne_bytes());
        }
        let mut ips = Vec::with_capacity(48);
        assert_eq!(parse_sample(&rec, &mut ips), Some((1_000, 9)));
        assert_eq!(ips, vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        // A truncated record reads what it holds, never past it.
        assert_eq!(parse_sample(&rec[..30], &mut ips), Some((1_000, 9)));
        assert_eq!(ips, Vec::<u64>::new());
        assert!(parse_sample(&rec[..10], &mut ips).is_none());
    }
}
