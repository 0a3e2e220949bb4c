//! The load process: `rtscope __load` (hidden), started by [`super::phase`]
//! once per load of a phase. It is the leader of its own process group, runs
//! at SCHED_OTHER on the load CPUs, and either runs a built-in generator
//! (one thread per worker) or starts an external command (stress-ng, or
//! `sh -c` for `cmd:`) in its group and waits for it.
//!
//! It stops on SIGTERM. Two cases, told apart by `getppid()`:
//! - rtscope asked (the parent is alive): stop the workers or the command
//!   (SIGTERM, SIGKILL after 2 s), then print one JSON line on stdout,
//!   `{"counters": {...}, "exit": "..."}`, and exit 0;
//! - rtscope died (the kernel sent the parent-death signal): SIGKILL the whole
//!   process group at once, itself included, so no load outlives rtscope.
//!
//! Its stderr (and the command's) goes to a log file that rtscope shows when
//! a load fails.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{Counters, LoadKind, WorkerCtx};
use crate::sys::sched::{set_current_affinity, set_current_policy, Policy};
use crate::sys::{prctl, wait};

/// What the hidden `rtscope __load` subcommand is asked to run (set by
/// rtscope only): written as arguments by [`LoadWorkerArgs::to_args`]
/// (`super::phase`) and read back by [`LoadWorkerArgs::from_args`], so one
/// type says both.
#[derive(Debug, Clone)]
pub(crate) struct LoadWorkerArgs {
    /// Process id of the rtscope that started this load.
    pub(crate) parent: i32,
    /// A built-in load (cpu, memory, io, net, irq, sched) or `exec`.
    pub(crate) kind: String,
    pub(crate) workers: usize,
    pub(crate) cpus: Option<crate::units::CpuSet>,
    /// The load's temp dir (the working directory of an external command).
    pub(crate) dir: PathBuf,
    /// The command to run for `--kind exec`.
    pub(crate) argv: Vec<String>,
}

impl LoadWorkerArgs {
    /// The arguments after `rtscope __load`: `--parent P --workers W
    /// [--cpus LIST] --dir DIR --kind KIND`, `--kind` last; for `exec`, `--`
    /// and the command follow.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut v = vec!["--parent".to_string(), self.parent.to_string(), "--workers".into(), self.workers.to_string()];
        if let Some(c) = &self.cpus {
            v.extend(["--cpus".to_string(), crate::units::cpu_list_str(&c.0)]);
        }
        v.extend(["--dir".to_string(), self.dir.display().to_string(), "--kind".into(), self.kind.clone()]);
        if self.kind == "exec" {
            v.push("--".into());
            v.extend(self.argv.iter().cloned());
        }
        v
    }

    /// Read back what [`LoadWorkerArgs::to_args`] wrote. Everything after
    /// `--kind KIND` is the command (a leading `--` dropped).
    pub(crate) fn from_args(args: &[String]) -> anyhow::Result<LoadWorkerArgs> {
        let (mut parent, mut workers, mut cpus, mut dir) = (None, 1, None, None);
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("__load: {flag} needs a value"))?;
            match flag.as_str() {
                "--parent" => parent = Some(value.parse().with_context(|| format!("__load --parent {value}"))?),
                "--workers" => workers = value.parse().with_context(|| format!("__load --workers {value}"))?,
                "--cpus" => cpus = Some(crate::units::parse_cpuset(value).map_err(anyhow::Error::msg)?),
                "--dir" => dir = Some(PathBuf::from(value)),
                "--kind" => {
                    let rest: Vec<String> = it.cloned().collect();
                    let argv = match rest.split_first() {
                        Some((first, cmd)) if first == "--" => cmd.to_vec(),
                        _ => rest,
                    };
                    let parent = parent.context("__load: --parent missing")?;
                    let dir = dir.context("__load: --dir missing")?;
                    return Ok(LoadWorkerArgs { parent, kind: value.clone(), workers, cpus, dir, argv });
                }
                _ => anyhow::bail!("__load: unknown argument {flag}"),
            }
        }
        anyhow::bail!("__load: --kind missing")
    }
}

const POLL: Duration = Duration::from_millis(20);

fn parent_gone(parent: i32) -> bool {
    nix::unistd::getppid().as_raw() != parent
}

/// rtscope is gone: take the whole load down, this process included.
fn kill_everything() -> ! {
    let _ = wait::kill_group(0, libc::SIGKILL);
    std::process::exit(137);
}

pub(crate) fn main(args: &LoadWorkerArgs) -> anyhow::Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    // The parent may have died between fork and the parent-death signal
    // being armed; then no signal will ever come.
    if parent_gone(args.parent) {
        kill_everything();
    }
    set_current_policy(Policy::Other, 0).context("load process: setting SCHED_OTHER")?;
    if let Some(crate::units::CpuSet(cpus)) = &args.cpus {
        set_current_affinity(cpus).with_context(|| format!("load process: pinning to CPUs {cpus:?}"))?;
    }
    let (counters, exit) = if args.kind == "exec" {
        run_command(args, &stop)?
    } else {
        let kind = LoadKind::from_builtin_name(&args.kind).with_context(|| format!("unknown load kind '{}'", args.kind))?;
        (run_builtin(args, &kind, &stop)?, String::new())
    };
    let line = serde_json::json!({ "counters": counters, "exit": exit });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(0)
}

fn run_builtin(args: &LoadWorkerArgs, kind: &LoadKind, stop: &AtomicBool) -> anyhow::Result<Counters> {
    let load = kind.load().expect("built-in kind");
    let cpus = args.cpus.clone().map(|c| c.0).unwrap_or_else(crate::sys::sched::online_cpus);
    let mut total = Counters::new();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers = args.workers.max(1);
        let mut handles = Vec::with_capacity(workers);
        for index in 0..workers {
            let (cpus, dir) = (&cpus, args.dir.as_path());
            let spawned = std::thread::Builder::new()
                .name(format!("load-{}-{index}", load.name()))
                .spawn_scoped(s, move || load.run_builtin(&WorkerCtx { index, workers, cpus, dir, stop }));
            match spawned {
                Ok(h) => handles.push(h),
                // The workers started end at `stop` (the scope waits for them).
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(crate::sys::pthread::spawn_refused(&format!("{} load worker {} of {workers}", load.name(), index + 1), &e).into());
                }
            }
        }
        // Wait for the stop signal; a worker that ends before it has failed.
        while !stop.load(Ordering::Relaxed) && !handles.iter().any(|h| h.is_finished()) {
            std::thread::sleep(POLL);
        }
        if parent_gone(args.parent) {
            kill_everything();
        }
        let early = !stop.load(Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            let counters = h.join().map_err(|_| anyhow::anyhow!("a {} worker panicked", load.name()))??;
            for (k, v) in counters {
                *total.entry(k).or_default() += v;
            }
        }
        if early {
            anyhow::bail!("a {} worker ended before the phase did", load.name());
        }
        Ok(())
    })?;
    Ok(total)
}

fn run_command(args: &LoadWorkerArgs, stop: &AtomicBool) -> anyhow::Result<(Counters, String)> {
    let (prog, rest) = args.argv.split_first().context("--kind exec needs a command after --")?;
    let mut cmd = Command::new(prog);
    cmd.args(rest).current_dir(&args.dir).stdin(Stdio::null()).stdout(Stdio::null());
    // SAFETY: the closure runs between fork and exec and only makes the
    // async-signal-safe prctl system call.
    unsafe {
        cmd.pre_exec(|| prctl::set_parent_death_signal(libc::SIGKILL).map_err(std::io::Error::from));
    }
    let mut child = cmd.spawn().with_context(|| format!("starting {prog}"))?;
    let mut status = None;
    while !stop.load(Ordering::Relaxed) {
        if status.is_none() {
            status = child.try_wait()?;
            // A command that fails before the phase ends did not make the
            // load; end now so that rtscope sees it and shows the log.
            if let Some(s) = status.filter(|s| !s.success()) {
                anyhow::bail!("{prog} ended early with {s}; its messages are above");
            }
        }
        std::thread::sleep(POLL);
    }
    if parent_gone(args.parent) {
        kill_everything();
    }
    if status.is_none() {
        let pid = child.id() as i32;
        let _ = wait::kill(pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(2);
        while status.is_none() && Instant::now() < deadline {
            std::thread::sleep(POLL);
            status = child.try_wait()?;
        }
        if status.is_none() {
            let _ = wait::kill(pid, libc::SIGKILL);
            status = Some(child.wait()?);
        }
    }
    let exit = match status {
        Some(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "unknown".into(),
        },
        None => "unknown".into(),
    };
    Ok((Counters::new(), exit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_read_back_as_written() {
        let w = LoadWorkerArgs {
            parent: 42,
            kind: "exec".into(),
            workers: 3,
            cpus: Some(crate::units::CpuSet(vec![0, 2, 3])),
            dir: PathBuf::from("/tmp/x y"),
            argv: vec!["sh".into(), "-c".into(), "--kind x -- y".into()],
        };
        let args = w.to_args();
        assert_eq!(args[..4], ["--parent", "42", "--workers", "3"]);
        let back = LoadWorkerArgs::from_args(&args).unwrap();
        assert_eq!((back.parent, back.kind.as_str(), back.workers, back.dir.clone(), back.argv.clone()), (42, "exec", 3, w.dir.clone(), w.argv.clone()));
        assert_eq!(back.cpus.unwrap().0, vec![0, 2, 3]);
        let cpu = LoadWorkerArgs { kind: "cpu".into(), argv: Vec::new(), cpus: None, ..w };
        let back = LoadWorkerArgs::from_args(&cpu.to_args()).unwrap();
        assert!(back.kind == "cpu" && back.argv.is_empty() && back.cpus.is_none());
        assert!(LoadWorkerArgs::from_args(&["--parent".into()]).is_err());
        assert!(LoadWorkerArgs::from_args(&["--dir".into(), "/".into(), "--kind".into(), "cpu".into()]).is_err());
    }
}
