//! The result file: the checkpoint that keeps it current while a run goes
//! on, and the last write, which never drops the samples.
//!
//! Every intermediate write says the run has not finished (`complete:
//! false`), so a run killed after it is not taken for a finished one; the
//! last write says `complete: true`, or falls back to another place.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use time::OffsetDateTime;

use crate::model::{RealtimeSetup, Run, SetupStep};
use crate::plan::Output;
use crate::units::rfc3339;

/// How the face words what the reader of a run must know
/// (`analysis::warnings`, a layer above the runner).
pub(crate) type Warnings = fn(&Run) -> Vec<String>;

/// What a run is given besides its plan, the same for a native run
/// (`runner::execute`) and one on an agent (`agent_host::execute`): where the
/// result goes, the command line and start time it records, the flag that
/// SIGINT/SIGTERM raise, and how the face words the warnings (written with
/// every checkpoint and the last write).
pub(crate) struct Invocation<'a> {
    pub(crate) output: &'a Output,
    pub(crate) command_line: Vec<String>,
    pub(crate) started: OffsetDateTime,
    pub(crate) stop: &'a AtomicBool,
    pub(crate) warnings: Warnings,
}

/// The "write after each probe" checkpoint. A step that changes the run
/// (loads started, a probe run's results, loads stopped) marks it
/// [`changed`](Checkpoint::changed); before rtscope waits again (settling,
/// the next probe run, stopping loads) or when the run ends on an error,
/// [`save`](Checkpoint::save) puts it on file. So whatever was measured is on
/// file before rtscope can be stopped or killed while waiting, and the last
/// change of a run is written once, by the last write.
pub(crate) struct Checkpoint<'a> {
    path: &'a Path,
    warnings: Warnings,
    changed: bool,
}

impl<'a> Checkpoint<'a> {
    pub(crate) fn new(path: &'a Path, warnings: Warnings) -> Checkpoint<'a> {
        Checkpoint { path, warnings, changed: false }
    }

    pub(crate) fn changed(&mut self) {
        self.changed = true;
    }

    /// Write the run as it stands if it changed since the last write.
    pub(crate) fn save(&mut self, run: &mut Run, steps: &[SetupStep], interrupted: bool) {
        if std::mem::take(&mut self.changed) {
            finish(run, steps, interrupted, self.warnings);
            save_progress(self.path, run);
        }
    }
}

/// The run as it stands: end time, whether it was interrupted (and in which
/// phase, when the loop that broke off did not say), the set-up steps and
/// the warnings. Called before every write.
pub(crate) fn finish(run: &mut Run, steps: &[SetupStep], interrupted: bool, warnings: Warnings) {
    run.finished_at = rfc3339(OffsetDateTime::now_utc());
    run.interrupted = interrupted;
    if run.interrupted && run.interrupted_in.is_none() {
        run.interrupted_in = run.plan.phases.last().cloned();
    }
    run.realtime_setup = RealtimeSetup::from_steps(steps.to_vec());
    run.warnings = warnings(run).iter().map(|w| crate::store::pgconn::redact_secrets(w)).collect();
    // The loads' command lines (and warnings that may quote them) as the
    // result keeps them: a URL's password in a `cmd:` load (`cmd:pgbench
    // postgresql://u:pw@h/db`) is redacted as the command line was where it
    // was captured.
    for load in run.phases.iter_mut().flat_map(|p| p.loads.iter_mut()) {
        for c in &mut load.commands {
            *c = crate::store::pgconn::redact_secrets(c);
        }
    }
}

/// The last write of a finished (or interrupted) run: if `path` cannot take
/// it, the samples are never dropped — the run goes to a fallback place and
/// the error says where and how to store it.
pub(crate) fn write_final(path: &Path, run: &Run) -> anyhow::Result<()> {
    match write_kept(path, run) {
        Kept::Here => Ok(()),
        Kept::Rescued(_, e) | Kept::Lost(e) => Err(e),
    }
}

/// Where the last write put a run.
pub(crate) enum Kept {
    /// At its own path.
    Here,
    /// In a fallback place (the path), and the message that says so.
    Rescued(PathBuf, anyhow::Error),
    /// Nowhere on file.
    Lost(anyhow::Error),
}

/// [`write_final`], telling where the run went: a caller that still has
/// another place for it (`monitor`, whose history may take the run whatever
/// happened to the files) goes on.
pub(crate) fn write_kept(path: &Path, run: &Run) -> Kept {
    let Err(e) = crate::store::json::write_run(path, run) else { return Kept::Here };
    // Never drop the samples: a second place, and how to store them.
    match write_fallback(path, run) {
        Ok(saved) => {
            let msg = anyhow::anyhow!(
                "could not write the result to {} ({e:#}); the measurement is saved in {} instead: `rtscope import {}` stores it in the history",
                path.display(),
                saved.display(),
                saved.display()
            );
            Kept::Rescued(saved, msg)
        }
        Err(e2) => {
            Kept::Lost(anyhow::anyhow!("could not write the result to {} ({e:#}) nor to a fallback place ({e2:#}); the measurement is lost", path.display()))
        }
    }
}

/// An intermediate write (`complete: false`). A failed write (disk full,
/// directory removed) does not stop the measurement: the samples stay in
/// memory for the last write, which has a fallback.
fn save_progress(path: &Path, run: &mut Run) {
    run.complete = false;
    if let Err(e) = crate::store::json::write_run(path, run) {
        eprintln!("warning: could not update {} ({e:#}); measuring on, the result is kept in memory", path.display());
    }
    run.complete = true;
}

/// Where a result goes when its own path cannot be written at the end:
/// `$XDG_STATE_HOME/rtscope/unsaved/`, else `~/.local/state/rtscope/unsaved/`,
/// else the temp directory; the first that takes the file.
fn write_fallback(path: &Path, run: &Run) -> anyhow::Result<PathBuf> {
    let name = path.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "rtscope-result.json".into());
    let var = |v: &str| std::env::var_os(v).filter(|x| !x.is_empty()).map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = var("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        dirs.push(d.join("rtscope/unsaved"));
    }
    if let Some(h) = var("HOME") {
        dirs.push(h.join(".local/state/rtscope/unsaved"));
    }
    dirs.push(std::env::temp_dir());
    let mut last = anyhow::anyhow!("no fallback place");
    for d in dirs {
        let p = d.join(&name);
        match crate::sys::stat::create_dirs(&d).map_err(anyhow::Error::from).and_then(|_| write_new(&p, run)) {
            Ok(saved) => return Ok(saved),
            Err(e) => last = e.context(format!("writing {}", p.display())),
        }
    }
    Err(last)
}

/// Write `run` under `path`'s name, or `NAME.1`, `NAME.2`, ... — the
/// first that does not exist: a rescued run may be another run's only copy
/// (it is in no history), so it is never replaced. The file is written
/// whole beside it and then linked to its name, which fails if the name
/// was taken meanwhile.
fn write_new(path: &Path, run: &Run) -> anyhow::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.rescue", std::process::id()));
    crate::store::json::write_run(&tmp, run)?;
    let linked =
        (0..10_000).map(|i| if i == 0 { path.to_path_buf() } else { dir.join(format!("{name}.{i}")) }).find_map(|p| match std::fs::hard_link(&tmp, &p) {
            Ok(()) => Some(Ok(p)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
            Err(e) => Some(Err(anyhow::Error::from(e).context(format!("linking {}", p.display())))),
        });
    let _ = std::fs::remove_file(&tmp);
    linked.unwrap_or_else(|| Err(anyhow::anyhow!("{} and 9 999 numbered names beside it are taken", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Calibration, Host, Nanos, Plan};

    fn run() -> Run {
        let plan = Plan::new(vec!["timer".into()], vec!["idle".into()], Nanos(1_000_000_000), Nanos(1_000_000));
        let calibration = Calibration::new(Nanos(20), Nanos(18), "CLOCK_MONOTONIC (vDSO clock_gettime)");
        Run::native(vec!["rtscope".into()], Host::default(), plan, calibration, "2026-11-25T12:00:00Z".into())
    }

    fn on_file(path: &Path) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn the_checkpoint_writes_a_changed_run_once_as_unfinished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut checkpoint = Checkpoint::new(&path, |r| vec![format!("{} results", r.results.len())]);
        let mut run = run();
        let steps = [SetupStep::failed("mlockall", "not permitted")];
        checkpoint.save(&mut run, &steps, false);
        assert!(!path.exists(), "nothing changed: nothing written");
        checkpoint.changed();
        checkpoint.save(&mut run, &steps, true);
        let j = on_file(&path);
        assert_eq!(j["complete"], false, "an intermediate write says the run has not finished");
        assert_eq!(j["interrupted"], true);
        assert_eq!(j["interrupted_in"], "idle", "the plan's last phase when the loop did not say");
        assert_eq!(j["realtime_setup"]["ok"], false, "{}", j["realtime_setup"]);
        assert_eq!(j["warnings"][0], "0 results", "the warnings are worded at every write");
        assert!(run.complete, "the run in memory stays finished for the last write");
        std::fs::remove_file(&path).unwrap();
        checkpoint.save(&mut run, &steps, true);
        assert!(!path.exists(), "written once per change");
        write_final(&path, &run).unwrap();
        assert!(on_file(&path).get("complete").is_none(), "the last write is a finished run");
    }

    #[test]
    fn the_stored_text_is_the_result_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut run = run();
        run.command_line.push("--note=\u{e9}\"\n".into());
        write_final(&path, &run).unwrap();
        assert_eq!(crate::store::json::run_text(&run).unwrap().into_bytes(), std::fs::read(&path).unwrap());
    }
}
