//! Steal time of the measured CPUs: how long the hypervisor ran something else while a
//! vCPU was runnable, from `/proc/stat` (the eighth number of each `cpuN` line, in
//! USER_HZ ticks: 10 ms with the usual `USER_HZ=100`). No finer per-CPU source exists
//! in a guest: the kernel adds the paravirtual steal clock's nanoseconds to the CPU's
//! `CPUTIME_STEAL` at each tick and shows it only in ticks.
//!
//! The trace collector reads it every [`EVERY_NS`] into a short history
//! ([`StealHistory::read`]); a window's steal ([`StealHistory::over`]) is the growth
//! between the last reading at or before its start and the first at or after its end
//! (the collector reads once more when it takes the window, so that reading exists).
//! A window far older than the history has none (unknown, not 0).

use std::collections::VecDeque;

/// How often the collector reads `/proc/stat` (its resolution is 10 ms anyway).
pub(crate) const EVERY_NS: u64 = 5_000_000;

/// Readings kept: a little over two seconds at [`EVERY_NS`], longer than any window
/// the collector takes before its sampling history (one second) is gone.
const KEEP: usize = 512;

/// `(CLOCK_MONOTONIC ns, steal ns of each measured CPU)` readings, oldest first.
pub(crate) struct StealHistory {
    cpus: Vec<usize>,
    readings: VecDeque<(u64, Vec<u64>)>,
    ns_per_tick: u64,
}

impl StealHistory {
    pub(crate) fn new(cpus: &[usize]) -> StealHistory {
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let ns_per_tick = if hz > 0 { 1_000_000_000 / hz as u64 } else { 10_000_000 };
        StealHistory { cpus: cpus.to_vec(), readings: VecDeque::new(), ns_per_tick }
    }

    /// Reads `/proc/stat` now (at `now_ns`) when the last reading is older than
    /// [`EVERY_NS`], or at once with `force`. A kernel without the field adds nothing.
    pub(crate) fn read(&mut self, now_ns: u64, force: bool) {
        if !force && self.readings.back().is_some_and(|(t, _)| now_ns < t + EVERY_NS) {
            return;
        }
        let Ok(text) = std::fs::read_to_string("/proc/stat") else { return };
        let Some(v) = parse(&text, &self.cpus, self.ns_per_tick) else { return };
        if self.readings.len() >= KEEP {
            self.readings.pop_front();
        }
        self.readings.push_back((now_ns, v));
    }

    /// Steal time of `cpu` over readings bracketing `[start_ns, end_ns]`.
    pub(crate) fn over(&self, cpu: usize, start_ns: u64, end_ns: u64) -> Option<u64> {
        let k = self.cpus.iter().position(|c| *c == cpu)?;
        let before = self.readings.iter().rev().find(|(t, _)| *t <= start_ns)?;
        let after = self.readings.iter().find(|(t, _)| *t >= end_ns)?;
        Some(after.1[k].saturating_sub(before.1[k]))
    }
}

/// Each of `cpus`' steal time, ns, from `/proc/stat` text; None when a CPU's line or
/// its steal field is missing.
fn parse(text: &str, cpus: &[usize], ns_per_tick: u64) -> Option<Vec<u64>> {
    cpus.iter()
        .map(|c| {
            let name = format!("cpu{c}");
            let line = text.lines().find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
            line.split_whitespace().nth(8)?.parse::<u64>().ok().map(|t| t * ns_per_tick)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str =
        "cpu  93500 0 15729 33225 4517 0 569 200 0 0\ncpu0 45782 0 7738 18202 1857 0 208 100 0 0\ncpu1 47717 0 7991 15022 2660 0 361 99 0 0\nintr 1 2\n";

    #[test]
    fn steal_is_the_eighth_value_in_ticks() {
        assert_eq!(parse(STAT, &[1, 0], 10_000_000), Some(vec![990_000_000, 1_000_000_000]));
        assert_eq!(parse(STAT, &[2], 10_000_000), None, "no such CPU");
        assert_eq!(parse("cpu0 1 2 3 4 5 6 7\n", &[0], 10_000_000), None, "a kernel without steal");
    }

    #[test]
    fn a_window_takes_the_readings_that_bracket_it() {
        let mut h = StealHistory { cpus: vec![1], readings: VecDeque::new(), ns_per_tick: 10_000_000 };
        h.readings.extend([(100, vec![5]), (200, vec![5]), (300, vec![25]), (400, vec![45])]);
        assert_eq!(h.over(1, 250, 290), Some(20));
        assert_eq!(h.over(1, 200, 300), Some(20));
        assert_eq!(h.over(1, 150, 180), Some(0));
        assert_eq!(h.over(1, 50, 180), None, "no reading before the window: unknown");
        assert_eq!(h.over(1, 350, 450), None, "none after it yet");
        assert_eq!(h.over(0, 200, 300), None, "not a measured CPU");
    }
}
