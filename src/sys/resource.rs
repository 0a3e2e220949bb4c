//! `<sys/resource.h>`: the calling thread's page-fault counters and the
//! process's CPU time (see getrusage(2)), a process group's CPU time (proc(5)), USER_HZ (sysconf(3)) and the file-descriptor limit (see setrlimit(2)).

/// (minor, major) page faults the calling thread has taken so far:
/// getrusage(RUSAGE_THREAD), the same counters as fields 10 and 12 of
/// /proc/PID/task/TID/stat, read without opening a file (no allocation, no
/// I/O: a measuring thread may call it around its loop).
pub(crate) fn thread_faults() -> (u64, u64) {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid, writable storage for one rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// CPU time (user + system, ns) of this process's threads so far:
/// getrusage(RUSAGE_SELF), which leaves out children (the load processes).
pub(crate) fn own_cpu_ns() -> u64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid, writable storage for one rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_usec as u64 * 1000);
    ns(ru.ru_utime).saturating_add(ns(ru.ru_stime))
}

/// CPU time (user + system, ns) of every live process in process group
/// `pgid`, with what each has reaped of its children (/proc/PID/stat fields
/// 14 to 17, in ticks of USER_HZ): an exec target's shell, emulator and
/// their helpers. A process that exits unreaped by the group takes its time
/// with it, so this is a lower bound.
pub(crate) fn group_cpu_ns(pgid: u32) -> u64 {
    let hz = clock_ticks_per_s();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    let mut ticks = 0u64;
    for e in dir.flatten() {
        if !e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        if let Some((group, t)) = group_ticks(&stat) {
            if group == pgid {
                ticks = ticks.saturating_add(t);
            }
        }
    }
    ticks.saturating_mul(1_000_000_000) / hz.max(1)
}

/// (process group, utime + stime + cutime + cstime ticks) from one
/// /proc/PID/stat line; the command name may hold spaces and parentheses,
/// so the fields are counted from its last `)`.
fn group_ticks(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): pgrp is field 5, utime..cstime fields 14-17.
    let group = f.get(2)?.parse().ok()?;
    let ticks = f.get(11..15)?.iter().map(|x| x.parse::<u64>().unwrap_or(0)).fold(0u64, u64::saturating_add);
    Some((group, ticks))
}

/// The kernel's clock ticks per second (USER_HZ: /proc/stat's unit).
pub(crate) fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// Raise this process's soft RLIMIT_NOFILE to its hard limit (as a server
/// that holds many connections should) and return the soft limit now in
/// force; 1024 when it cannot be read.
pub(crate) fn raise_nofile() -> usize {
    // SAFETY: rlimit is plain old data; all-zero is a valid value.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is valid, writable storage for one rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 1024;
    }
    if rl.rlim_cur < rl.rlim_max {
        let raised = libc::rlimit { rlim_cur: rl.rlim_max, rlim_max: rl.rlim_max };
        // SAFETY: `raised` is a valid rlimit; raising the soft limit up to
        // the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            rl.rlim_cur = rl.rlim_max;
        }
    }
    usize::try_from(rl.rlim_cur).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_pages_counts_minor_faults() {
        // A fresh private anonymous mapping (mmap, not malloc: the allocator
        // may hand out pages already touched): the first write to each of
        // its 2048 pages is a minor fault of this thread. With transparent
        // huge pages one fault may map 2 MiB, so at least 4. Unless another
        // test of this process locked memory without MCL_ONFAULT (the mapping
        // is then populated at once): MAP_NORESERVE does not change that, so
        // the test locks nothing itself and skips when the process is locked.
        const LEN: usize = 8 << 20;
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), LEN, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        let (m0, _) = thread_faults();
        for i in (0..LEN).step_by(4096) {
            // SAFETY: i < LEN, inside the mapping made above.
            unsafe { std::ptr::write_volatile((p as *mut u8).add(i), 1) };
        }
        let (m1, _) = thread_faults();
        // SAFETY: unmaps exactly the mapping made above.
        unsafe { libc::munmap(p, LEN) };
        let locked = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmLck:").map(|v| v.trim().to_string())))
            .is_some_and(|v| v != "0 kB");
        if m1 - m0 == 0 && locked {
            eprintln!("skipped: another test locked this process's memory");
            return;
        }
        assert!(m1 - m0 >= 4, "{} minor faults for 2048 fresh pages", m1 - m0);
    }

    #[test]
    fn a_stat_line_gives_its_group_and_cpu_ticks_past_a_name_with_parentheses() {
        let line = "4242 (qemu (x) 1) S 4200 4100 4100 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 5 0 99 0 0";
        assert_eq!(group_ticks(line), Some((4100, 250 + 50 + 7 + 3)));
        assert_eq!(group_ticks("garbage"), None);
        assert_eq!(group_ticks("1 (x) S 0"), None, "a line cut short");
        // This test process's own group holds at least the CPU it has used
        // (made at least 50 ms, five ticks of USER_HZ 100).
        let start = own_cpu_ns();
        while own_cpu_ns() - start < 50_000_000 {
            std::hint::black_box((0..1000u64).sum::<u64>());
        }
        let me = nix::unistd::getpgrp().as_raw() as u32;
        let group = group_cpu_ns(me);
        assert!(group >= 30_000_000 && group + 20_000_000 >= own_cpu_ns(), "group {group} ns, this process {} ns", own_cpu_ns());
    }
}
