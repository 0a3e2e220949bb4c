//! The live view: a non-RT thread that reads the probes' atomic counters
//! (never their recorders) and draws an indicatif progress bar on a TTY:
//! elapsed, remaining, samples, overruns and the current max.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::measure::LiveBoard;

/// The bar's layout: elapsed time over the planned total, both hh:mm:ss.
/// The total is the plan's, fixed (indicatif's `{duration}` is an estimate
/// from the rate so far, which jumps about in the first seconds).
fn template(total_ms: u64) -> String {
    let s = total_ms.div_ceil(1000);
    format!("{{prefix:>8}} [{{bar:30}}] {{elapsed_precise}}/{:02}:{:02}:{:02} {{msg}}", s / 3600, s / 60 % 60, s % 60)
}

pub(crate) fn progress(board: &LiveBoard, total_ns: u64, finished: &AtomicBool, stop: &AtomicBool) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let total_ms = (total_ns / 1_000_000).max(1);
    let bar = ProgressBar::new(total_ms);
    bar.set_style(ProgressStyle::with_template(&template(total_ms)).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "));
    let t0 = Instant::now();
    while !finished.load(Ordering::Relaxed) {
        let (samples, overruns, max) = board.totals();
        bar.set_prefix(board.current.lock().map(|s| s.clone()).unwrap_or_default());
        bar.set_position((t0.elapsed().as_millis() as u64).min(total_ms));
        bar.set_message(format!("samples {samples}  overruns {overruns}  max {:.1} us", max as f64 / 1000.0));
        if stop.load(Ordering::Relaxed) {
            bar.set_message("interrupted: saving the samples taken");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bar.finish_and_clear();
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bar_shows_the_planned_total() {
        assert_eq!(super::template(70_000), "{prefix:>8} [{bar:30}] {elapsed_precise}/00:01:10 {msg}");
        assert!(super::template(3_600_500).contains("/01:00:01 "), "partial seconds round up");
        assert!(indicatif::ProgressStyle::with_template(&super::template(52_000)).is_ok());
    }
}
