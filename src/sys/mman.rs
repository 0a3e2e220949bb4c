//! `<sys/mman.h>`: lock the memory measuring touches, so no page fault lands
//! in a measurement, drop what start-up touched and measuring does not need,
//! and map code pages one at a time as they are touched. See mlockall(2),
//! madvise(2), malloc_trim(3), userfaultfd(2).

use nix::sys::mman::{mlockall, munlockall, MlockAllFlags};

/// Lock every page as it is touched, now and later:
/// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) (Linux ≥ 4.4). Pages
/// already resident stay locked, pages faulted in later are locked then, and
/// pages never touched are never made resident. Where the kernel refuses
/// MCL_ONFAULT (EINVAL), everything is locked as before
/// (MCL_CURRENT | MCL_FUTURE). Returns the flags that took.
pub(crate) fn lock_all() -> nix::Result<&'static str> {
    // SAFETY: mlockall takes flags only and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    match nix::errno::Errno::result(rc) {
        Ok(_) => Ok("MCL_CURRENT|MCL_FUTURE|MCL_ONFAULT"),
        Err(nix::errno::Errno::EINVAL) => mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE).map(|_| "MCL_CURRENT|MCL_FUTURE"),
        Err(e) => Err(e),
    }
}

/// munlockall(): the pages stay where they are, they can be reclaimed again.
pub(crate) fn unlock_all() -> nix::Result<()> {
    munlockall()
}

/// Unmap from this process the pages of its read-only file mappings (the
/// program's and the libraries' code and constants) that were never written
/// (no anonymous copy in them), and give the heap's free memory back
/// (malloc_trim). The pages stay in the page cache: the next touch maps them
/// again (a minor fault). Start-up (command line, host fingerprint, doctor,
/// database) touches far more code than a probe's loop; without this the
/// locked resident set is all of it. Call it unlocked (madvise refuses
/// locked mappings). Returns the KiB unmapped.
pub(crate) fn drop_clean_file_pages() -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else { return 0 };
    let mut dropped_kib = 0usize;
    // (start, end, read-only file mapping, rss KiB, anonymous KiB) of the mapping being read.
    let mut cur: Option<(usize, usize, bool, usize, usize)> = None;
    let mut flush = |m: Option<(usize, usize, bool, usize, usize)>| {
        if let Some((start, end, clean_file, rss, anon)) = m {
            if clean_file && rss > 0 && anon == 0 {
                // SAFETY: [start, end) is a whole mapping of this process, read-only
                // and file-backed with no private (written) page: MADV_DONTNEED only
                // unmaps pages that the next access maps again from the same file.
                if unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) } == 0 {
                    dropped_kib += rss;
                }
            }
        }
    };
    for line in smaps.lines() {
        let mut f = line.split_whitespace();
        let first = f.next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-').filter(|(a, _)| a.bytes().all(|c| c.is_ascii_hexdigit())) {
            flush(cur.take());
            let perms = f.next().unwrap_or("");
            let path = f.nth(3).unwrap_or("");
            let clean_file = perms.starts_with('r')
                && perms.as_bytes().get(1) == Some(&b'-')
                && perms.ends_with('p')
                && path.starts_with('/')
                && !path.starts_with("/dev/")
                && !path.starts_with("/memfd:");
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                cur = Some((a, b, clean_file, 0, 0));
            }
        } else if let Some(m) = cur.as_mut() {
            let kib = f.next().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
            match first {
                "Rss:" => m.3 = kib,
                "Anonymous:" => m.4 = kib,
                _ => {}
            }
        }
    }
    flush(cur.take());
    // SAFETY: malloc_trim only returns free heap memory to the kernel.
    unsafe { libc::malloc_trim(0) };
    dropped_kib
}

/// Touch `bytes` of stack so its pages are mapped (and locked) before the
/// start barrier, as cyclictest does.
#[inline(never)]
pub(crate) fn prefault_stack(bytes: usize) {
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
pub(crate) fn drop_pages(buf: &mut [u8]) -> nix::Result<usize> {
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
pub(crate) fn lock_all_would_exhaust() -> Option<String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is valid, writable storage for one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    // CAP_IPC_LOCK (bit 14 of the effective set) lifts the limit.
    let cap_eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok()));
    if cap_eff.is_some_and(|c| c & (1 << 14) != 0) {
        return None;
    }
    Some(format!(
        "not attempted: RLIMIT_MEMLOCK is {} KiB and rtscope lacks CAP_IPC_LOCK, so locking all memory would make its later allocations fail; page faults may add latency; run as root or grant CAP_IPC_LOCK",
        lim.rlim_cur / 1024
    ))
}

/// `struct uffdio_api` (linux/userfaultfd.h).
#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

/// `struct uffdio_register` (linux/userfaultfd.h): the range, then the mode.
#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

/// The userfaultfd that keeps [`map_touched_pages_only`]'s registrations: open
/// for the process's life (closing it would undo them).
static NO_FAULT_AROUND: std::sync::OnceLock<Result<usize, String>> = std::sync::OnceLock::new();

/// Makes a page fault on this process's read-only file mappings (the program's
/// code and constants, the libraries') map the page touched and no other. By
/// default the kernel maps the pages around it too (fault-around, 64 KiB, or
/// a whole large folio of the page cache: 64-256 KiB per page touched here),
/// so the resident set is many times the code a command runs (bench/footprint,
/// issue 65: 118 KiB per page touched in a cp(1) copy of the binary, 4.5 KiB
/// with this). The kernel skips fault-around on a mapping registered with a
/// userfaultfd for write-protection (`uffd_disable_fault_around`); in the
/// asynchronous mode (`UFFD_FEATURE_WP_ASYNC`, Linux ≥ 6.7) any mapping may
/// be registered and nothing is ever reported (a write would be resolved by
/// the kernel; these mappings are not writable). The descriptor stays open
/// for the process's life (close-on-exec; a child process starts unregistered).
/// Once per process; returns the number of mappings registered, or why none
/// (an older kernel, no CONFIG_USERFAULTFD, a seccomp filter): then pages are
/// mapped as before.
pub(crate) fn map_touched_pages_only() -> Result<usize, String> {
    NO_FAULT_AROUND.get_or_init(register_no_fault_around).clone()
}

fn register_no_fault_around() -> Result<usize, String> {
    const UFFD_API: u64 = 0xAA;
    const UFFD_USER_MODE_ONLY: libc::c_int = 1;
    const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
    const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    // SAFETY: userfaultfd(2) takes flags only; the result is a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY) } as libc::c_int;
    if fd < 0 {
        return Err(format!("userfaultfd: {}", nix::errno::Errno::last()));
    }
    let mut api = UffdioApi { api: UFFD_API, features: UFFD_FEATURE_WP_ASYNC, ioctls: 0 };
    // SAFETY: `api` is a valid, writable uffdio_api, the size UFFDIO_API encodes.
    if unsafe { libc::ioctl(fd, libc::_IOWR::<UffdioApi>(0xAA, 0x3F), &mut api) } != 0 {
        let e = nix::errno::Errno::last();
        // SAFETY: fd is ours and used nowhere else.
        unsafe { libc::close(fd) };
        return Err(format!("userfaultfd UFFD_FEATURE_WP_ASYNC: {e}"));
    }
    let mut registered = 0;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let path = f.nth(3).unwrap_or("");
        if !perms.starts_with('r') || perms.as_bytes().get(1) != Some(&b'-') || !path.starts_with('/') || path.starts_with("/dev/") {
            continue;
        }
        let Some((Ok(a), Ok(b))) = range.split_once('-').map(|(a, b)| (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16))) else {
            continue;
        };
        let mut reg = UffdioRegister { start: a, len: b - a, mode: UFFDIO_REGISTER_MODE_WP, ioctls: 0 };
        // SAFETY: `reg` is a valid, writable uffdio_register naming a whole mapping of
        // this process; registering changes how its faults are served, not its contents.
        if unsafe { libc::ioctl(fd, libc::_IOWR::<UffdioRegister>(0xAA, 0x00), &mut reg) } == 0 {
            registered += 1;
        }
    }
    Ok(registered)
}
