//! The live view: a non-RT thread that reads the probes' atomic counters
//! (never their recorders) and draws an indicatif progress bar on a TTY:
//! elapsed, remaining, samples, overruns and the current max.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::measure::LiveBoard;

pub fn progress(board: &LiveBoard, total_ns: u64, finished: &AtomicBool, stop: &AtomicBool) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let total_ms = (total_ns / 1_000_000).max(1);
    let bar = ProgressBar::new(total_ms);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {elapsed}/{duration} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
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
