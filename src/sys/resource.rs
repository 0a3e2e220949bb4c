//! `<sys/resource.h>`: the calling thread's page-fault counters.
//! See getrusage(2).

/// (minor, major) page faults the calling thread has taken so far:
/// getrusage(RUSAGE_THREAD), the same counters as fields 10 and 12 of
/// /proc/PID/task/TID/stat, read without opening a file (no allocation, no
/// I/O: a measuring thread may call it around its loop).
pub fn thread_faults() -> (u64, u64) {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid, writable storage for one rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_pages_counts_minor_faults() {
        // 8 MiB from calloc is a fresh anonymous mapping: the first write to
        // each of its 2048 pages is a minor fault of this thread (the memory
        // is not locked in the test process); with transparent huge pages
        // one fault may map 2 MiB, so at least 4.
        let mut v = vec![0u8; 8 << 20];
        let (m0, _) = thread_faults();
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let (m1, _) = thread_faults();
        assert!(m1 - m0 >= 4, "{} minor faults for 2048 fresh pages", m1 - m0);
    }
}
