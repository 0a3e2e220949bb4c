//! Memory while a probe runs: the page lock of [`MemoryLock`].

use crate::model::SetupStep;
use crate::sys::mman;

/// Memory while a probe runs (warm-up and measurement). Start-up (command
/// line, fingerprint, doctor, database, result files) touches several MiB of
/// code a probe's loop never runs; locking all of it (mlockall(MCL_CURRENT))
/// made rtscope's resident set 4× cyclictest's. So before each probe run
/// the clean pages of the read-only file mappings are unmapped and the
/// heap trimmed ([`mman::drop_clean_file_pages`]), then every page touched
/// from there on is locked as it is faulted in (MCL_ONFAULT) until the run
/// ends: the warm-up faults the loop's pages in, the measurement finds them
/// locked. Each code page is mapped (and locked) alone, not with the 64-256
/// KiB around it ([`mman::map_touched_pages_only`], set up by the command's
/// entry). The result's `faults` show what the measuring threads still took.
pub(crate) struct MemoryLock {
    locked: bool,
}

impl MemoryLock {
    /// Drop, then lock; the first call of a run reports the step in `steps`.
    pub(crate) fn begin(steps: &mut Vec<SetupStep>) -> MemoryLock {
        let reported = steps.iter().any(|s| s.step == "mlockall");
        let mut report = |step: SetupStep| {
            if !reported {
                steps.push(step);
            }
        };
        if let Some(why) = mman::lock_all_would_exhaust() {
            report(SetupStep::failed("mlockall", why));
            return MemoryLock { locked: false };
        }
        let dropped = mman::drop_clean_file_pages();
        match mman::lock_all() {
            Ok(flags) => {
                // Whether a page touched is locked alone or with its neighbours.
                let pages = match mman::map_touched_pages_only() {
                    Ok(_) => "code pages mapped one at a time".to_string(),
                    Err(e) => format!("code pages mapped with their neighbours ({e})"),
                };
                report(SetupStep::ok(
                    "mlockall",
                    format!("{flags} for each probe run (warm-up and measurement), after unmapping {dropped} KiB of start-up pages; {pages}"),
                ));
                MemoryLock { locked: true }
            }
            Err(e) => {
                report(SetupStep::failed("mlockall", format!("{e}: page faults may add latency; run as root or grant CAP_IPC_LOCK")));
                MemoryLock { locked: false }
            }
        }
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        if self.locked {
            let _ = mman::unlock_all();
        }
        // The probe's pages, unlocked, are not needed by what follows (the
        // end of the run: summaries, warnings, files): unmapped, so that the
        // end's code does not add to them (the run's peak RSS was its end,
        // 9.0 MiB, bench/footprint, issue 65).
        mman::drop_clean_file_pages();
    }
}
