//! Boot factors of `rtscope factors` (docs/factors.md, "Boot factors in the
//! kernel lab"): each run of a cell is one lab/kernel-lab guest booted with
//! the cell's kernel and extra command-line parameters, running `rtscope run`
//! with the experiment's run flags and the cell's run settings. Nothing on
//! this host changes, so nothing is journaled; the guest's result file comes
//! back through the lab, is read as any result file is (`store::json`, which
//! checks its invariants) and joins the experiment like a local run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::BadInput;
use crate::factors::design::Design;
use crate::factors::knobs::Kind;
use crate::model::Run;

/// The lab command (`--lab CMD`, split at spaces) and the guest's run flags.
pub(crate) struct Lab {
    words: Vec<String>,
    run_args: Vec<String>,
}

impl Lab {
    /// Checks the pairing of `--lab` with the factors: boot factors need it,
    /// host knobs cannot be in the same experiment (they would change this
    /// host, not the guests), and a flag the cells set is not also in CMD.
    pub(crate) fn new(lab: Option<&str>, design: &Design, command_line: &[String]) -> Result<Option<Lab>, BadInput> {
        let boot: Vec<&str> = design.factors.iter().filter(|f| matches!(f.knob.kind, Kind::Boot(_))).map(|f| f.knob.name).collect();
        let host: Vec<&str> = design.factors.iter().filter(|f| matches!(f.knob.kind, Kind::Host(_))).map(|f| f.knob.name).collect();
        let Some(lab) = lab else {
            if boot.is_empty() {
                return Ok(None);
            }
            return Err(BadInput(format!(
                "--factor {}: each run boots a kernel-lab guest; give the lab command, e.g. --lab 'lab/kernel-lab --icount 1' (docs/factors.md)",
                boot.join(", ")
            )));
        };
        if boot.is_empty() {
            return Err(BadInput("--lab runs each cell in a kernel-lab guest: it needs a boot factor (--factor kernel=… or --factor cmdline=…)".into()));
        }
        if !host.is_empty() {
            return Err(BadInput(format!(
                "--factor {} changes this host, while --factor {} runs in kernel-lab guests: one experiment is one or the other \
                 (in a guest, vary such a setting with --factor cmdline=… or a guest script)",
                host.join(", "),
                boot.join(", ")
            )));
        }
        let words = split_words(lab).map_err(|e| BadInput(format!("--lab {lab:?}: {e}")))?;
        if words.is_empty() {
            return Err(BadInput("--lab '': give the lab command, e.g. --lab lab/kernel-lab".into()));
        }
        let cell_sets = |flag: &str| -> Option<&'static str> {
            design.factors.iter().find_map(|f| match f.knob.kind {
                Kind::Boot(b) if b.lab_flag() == flag => Some(f.knob.name),
                _ => None,
            })
        };
        for w in &words[1..] {
            let flag = w.split('=').next().unwrap_or(w);
            if let Some(k) = cell_sets(flag) {
                return Err(BadInput(format!("--lab '{lab}': {flag} is what --factor {k} sets for each cell; drop it from --lab")));
            }
            if ["--out", "--out-dir", "--guest-script", "--agent", "--check-only", "--initrd-only", "--"].contains(&flag) {
                return Err(BadInput(format!("--lab '{lab}': {flag} is not for a factor experiment (rtscope factors writes each guest's result itself)")));
            }
        }
        Ok(Some(Lab { words, run_args: crate::cli::factors::guest_run_args(command_line) }))
    }

    /// The lab command for one cell, up to and including the guest's run flags.
    /// Each factor's descriptor writes its level: a boot setting as the
    /// lab's flags, a run setting as the guest's run flags.
    fn command(&self, design: &Design, cell: usize, extra: &[String]) -> Result<Command, BadInput> {
        let mut c = Command::new(&self.words[0]);
        c.args(&self.words[1..]);
        let mut guest: Vec<String> = self.run_args.clone();
        for (f, factor) in design.factors.iter().enumerate() {
            let level = design.level(cell, f);
            match factor.knob.kind {
                Kind::Boot(b) => {
                    c.args(b.lab_args(level));
                }
                Kind::Run(r) => guest.extend(r.flags(level)?),
                Kind::Host(_) => {}
            }
        }
        c.args(extra);
        c.arg("--");
        c.args(guest);
        Ok(c)
    }

    /// Every cell through the lab's `--check-only` (its options, the run
    /// flags through the host's `rtscope run --dry-run`): exit 2 before any
    /// guest boots.
    pub(crate) fn check(&self, design: &Design) -> Result<(), BadInput> {
        for cell in 0..design.cells.len() {
            let mut c = self.command(design, cell, &["--check-only".to_string()])?;
            let out =
                c.stdin(Stdio::null()).output().map_err(|e| BadInput(format!("--lab: cannot run {}: {e}; give the path of lab/kernel-lab", self.words[0])))?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<&str> =
                    err.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Try '") && !l.starts_with("For more information")).collect();
                return Err(BadInput(format!(
                    "--lab: the lab refused the cell {} ({}): {}",
                    design.cell_label(cell),
                    out.status,
                    tail[tail.len().saturating_sub(6)..].join(" / ")
                )));
            }
        }
        Ok(())
    }

    /// One run of `cell` in a guest; the result file is `json`. The lab's
    /// progress goes to this stderr. On `stop` the lab is sent SIGTERM (it
    /// stops its guest and cleans up) and whatever result it wrote is kept.
    pub(crate) fn run(&self, design: &Design, cell: usize, json: &Path, stop: &AtomicBool) -> anyhow::Result<Run> {
        let mut c = self.command(design, cell, &["--out".to_string(), json.display().to_string()])?;
        // Its own process group: a Ctrl-C reaches rtscope, which forwards a
        // SIGTERM once. Should rtscope die (SIGKILL), the kernel sends the
        // lab SIGTERM, on which it stops its guest and removes its files.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        // SAFETY: the closure runs between fork and exec and only makes the
        // async-signal-safe prctl system call.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, || crate::sys::prctl::set_parent_death_signal(libc::SIGTERM).map_err(std::io::Error::from));
        }
        let mut child = c.stdin(Stdio::null()).spawn().map_err(|e| anyhow::anyhow!("--lab: cannot run {}: {e}", self.words[0]))?;
        let mut signalled = false;
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if stop.load(Ordering::SeqCst) && !signalled {
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM);
                signalled = true;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        match crate::store::json::read_run_text(json) {
            Ok((run, _)) => Ok(run),
            // Exit 2: the lab or the guest's rtscope refused an input (said above).
            Err(e) if status.code() == Some(2) => {
                Err(BadInput(format!("--lab: the guest refused the run of {} (its message is above): {e}", design.cell_label(cell))).into())
            }
            Err(e) => Err(anyhow::anyhow!("the lab ({}) gave no result for {}: {e}", status, design.cell_label(cell))),
        }
    }
}

/// `--lab`'s words as a POSIX shell splits them: spaces separate words,
/// '…' quotes everything, "…" quotes all but `\"` and `\\`, and a backslash
/// outside quotes keeps the next character. No expansion of any kind.
fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(cur.take()),
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err("a ' is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\')) => w.push(x),
                            Some(x) => {
                                w.push('\\');
                                w.push(x);
                            }
                            None => return Err("a \" is not closed".into()),
                        },
                        Some(x) => w.push(x),
                        None => return Err("a \" is not closed".into()),
                    }
                }
            }
            '\\' => cur.get_or_insert_with(String::new).push(chars.next().ok_or("it ends in a lone \\")?),
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factors::design::parse_factor;

    fn design(specs: &[&str]) -> Design {
        Design::new(specs.iter().map(|s| parse_factor(s).unwrap()).collect()).unwrap()
    }

    fn line(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn argv(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program()).chain(c.get_args()).map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn each_cell_boots_its_kernel_and_parameters_and_runs_its_settings() {
        let d = design(&["kernel=stock,rt", "cmdline=none,idle=poll nohz=off", "load=idle,cpu"]);
        let cmd = line("rtscope factors --factor kernel=stock,rt --lab x -D 2s -a 0 --out o");
        let lab = Lab::new(Some("lab/kernel-lab --icount 1"), &d, &cmd).unwrap().unwrap();
        let cell = d.cells.iter().position(|c| c == &vec![1, 1, 1]).unwrap();
        assert_eq!(
            argv(&lab.command(&d, cell, &["--out".into(), "f.json".into()]).unwrap()),
            [
                "lab/kernel-lab",
                "--icount",
                "1",
                "--kernel",
                "rt",
                "--append-more",
                "idle=poll nohz=off",
                "--out",
                "f.json",
                "--",
                "-D",
                "2s",
                "-a",
                "0",
                "--load",
                "cpu"
            ]
        );
        let base = d.cells.iter().position(|c| c == &vec![0, 0, 0]).unwrap();
        assert_eq!(argv(&lab.command(&d, base, &[]).unwrap()), ["lab/kernel-lab", "--icount", "1", "--kernel", "stock", "--", "-D", "2s", "-a", "0"]);
    }

    #[test]
    fn lab_words_split_as_a_shell_does() {
        let w = split_words(r#"lab/kernel-lab --icount 1 --guest-load-cmd 'while :; do echo "<4>x" >&3; done' --x "a \"b\" c" d\ e ''"#).unwrap();
        assert_eq!(w, ["lab/kernel-lab", "--icount", "1", "--guest-load-cmd", r#"while :; do echo "<4>x" >&3; done"#, "--x", r#"a "b" c"#, "d e", ""]);
        assert!(split_words("a 'b").is_err() && split_words("a \"b").is_err() && split_words("a\\").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn lab_and_factors_must_match() {
        let cmd = line("rtscope factors");
        let msg = |specs: &[&str], lab: Option<&str>| Lab::new(lab, &design(specs), &cmd).err().map(|e| e.0).unwrap_or_default();
        assert!(msg(&["kernel=stock,rt"], None).contains("--lab"));
        assert!(msg(&["load=idle,cpu"], Some("lab/kernel-lab")).contains("needs a boot factor"));
        assert!(msg(&["kernel=stock,rt", "printk=4,1"], Some("lab/kernel-lab")).contains("changes this host"));
        assert!(msg(&["kernel=stock,rt"], Some("lab/kernel-lab --kernel rt")).contains("--kernel is what --factor kernel sets"));
        assert!(msg(&["cmdline=none,idle=poll"], Some("lab/kernel-lab --append-more=x")).contains("--append-more is what"));
        assert!(msg(&["cmdline=none,idle=poll"], Some("lab/kernel-lab --out x")).contains("not for a factor experiment"));
        assert!(Lab::new(None, &design(&["load=idle,cpu"]), &cmd).unwrap().is_none());
    }
}
