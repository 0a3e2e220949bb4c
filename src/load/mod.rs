//! Load phases: what runs beside the probes so that idle and loaded results
//! compare (seed 000 §3.2, seed 001's idle / disk / network / compute /
//! combined tables, seed 004's flood ping + TCP stream).
//!
//! A phase ([`PhaseSpec`]) is a name and a list of [`LoadKind`]s. Each load is
//! one file here implementing [`Load`]: a built-in generator written in Rust
//! (`run_builtin`, threads that loop until told to stop and count what they
//! did) and the stress-ng stressors that make the same kind of load
//! (`stress_ng_args`, the table in docs/loads.md). `cmd.rs` runs any user
//! command instead.
//!
//! Every load, whatever its engine, runs in its own *load process*: rtscope
//! re-executes itself as `rtscope __load` (see [`worker`]), which places itself
//! on the load CPUs at SCHED_OTHER, then either runs the built-in generator
//! or starts the external command (stress-ng, `sh -c ...`) and waits for it.
//! Why a process and not threads inside rtscope: the load then never inherits
//! rtscope's mlockall, real-time policy or affinity; the kernel accounts its
//! CPU time, context switches, faults and storage writes to it (wait4's
//! rusage is the evidence that it ran, the same for every engine); and the
//! whole load can be killed as one process group. [`PhaseLoads`] starts and
//! stops the load processes of a phase and reaps them on every exit path
//! (its `Drop` kills what is still alive).
//!
//! Never leaving a process behind: each load process is the leader of its own
//! process group and gets PR_SET_PDEATHSIG(SIGTERM); it turns that signal,
//! when its parent is gone, into SIGKILL of its whole group (the external
//! command and everything it forked). Temporary files live in
//! `<load dir>/.rtscope-load-<pid>/`, removed when the phase ends; a run
//! removes the ones whose rtscope process is gone (left by a SIGKILL).

pub(crate) mod cmd;
pub(crate) mod cpu;
pub(crate) mod io;
pub(crate) mod irq;
pub(crate) mod memory;
pub(crate) mod net;
pub(crate) mod phase;
pub(crate) mod sched;
pub(crate) mod stress_ng;
pub(crate) mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub(crate) use phase::PhaseLoads;

/// Per-worker counters of a built-in generator, summed by the load process.
pub(crate) type Counters = BTreeMap<String, u64>;

/// What one built-in worker thread gets.
pub(crate) struct WorkerCtx<'a> {
    /// Index of this worker within the load (0-based).
    pub(crate) index: usize,
    /// How many workers the load has.
    pub(crate) workers: usize,
    /// CPUs the load may use (workers that pair up pin to different ones).
    pub(crate) cpus: &'a [usize],
    /// The load's private temporary directory.
    pub(crate) dir: &'a Path,
    /// Raised when the load must stop; loops check it at least every ~50 ms.
    pub(crate) stop: &'a AtomicBool,
}

impl WorkerCtx<'_> {
    /// Start one of this worker's own threads in `s`. One the system
    /// refuses (RLIMIT_NPROC) raises `stop`, so the threads started end,
    /// and is an error naming the limit: the load process ends with it
    /// (never a panic, never a worker left waiting for a partner).
    pub(crate) fn spawn<'scope, 'env, T: Send + 'scope>(
        &self,
        s: &'scope std::thread::Scope<'scope, 'env>,
        what: &str,
        f: impl FnOnce() -> T + Send + 'scope,
    ) -> anyhow::Result<std::thread::ScopedJoinHandle<'scope, T>> {
        std::thread::Builder::new().spawn_scoped(s, f).map_err(|e| {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            crate::sys::pthread::spawn_refused(&format!("{what} of load worker {}", self.index + 1), &e).into()
        })
    }
}

/// One kind of load.
pub(crate) trait Load: Sync {
    fn name(&self) -> &'static str;
    /// The built-in generator: one call per worker thread; runs until
    /// `ctx.stop` is raised and returns what it did.
    fn run_builtin(&self, ctx: &WorkerCtx<'_>) -> anyhow::Result<Counters>;
    /// stress-ng arguments (stressors and their options) for `workers` workers.
    fn stress_ng_args(&self, workers: usize, dir: &Path) -> Vec<String>;
}

/// The loads a phase can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoadKind {
    Cpu,
    Memory,
    Io,
    Net,
    Irq,
    Sched,
    /// Any user command line, run with `sh -c`.
    Cmd(String),
}

/// The built-in kinds, in the order `mixed` starts them.
pub(crate) const KINDS: [LoadKind; 6] = [LoadKind::Cpu, LoadKind::Memory, LoadKind::Io, LoadKind::Net, LoadKind::Irq, LoadKind::Sched];

/// Names a phase may use, with what each does (for help and errors).
pub(crate) const PHASE_NAMES: &[(&str, &str)] = &[
    ("idle", "no load"),
    ("cpu", "busy arithmetic on every load CPU"),
    ("memory", "memory bandwidth (large copies) and page faults"),
    ("io", "file writes with fsync and reads, in a temp dir on the filesystem under test"),
    ("net", "loopback TCP stream and UDP flood on 127.0.0.1 only"),
    ("irq", "timer/hrtimer storm and cross-CPU wake-ups"),
    ("sched", "hackbench-like message groups"),
    ("mixed", "all of the above at once"),
    ("cmd:\"<command line>\"", "any command, run with sh -c"),
];

impl LoadKind {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            LoadKind::Cpu => "cpu",
            LoadKind::Memory => "memory",
            LoadKind::Io => "io",
            LoadKind::Net => "net",
            LoadKind::Irq => "irq",
            LoadKind::Sched => "sched",
            LoadKind::Cmd(_) => "cmd",
        }
    }

    /// The generator of a built-in kind (None for `cmd`).
    pub(crate) fn load(&self) -> Option<&'static dyn Load> {
        Some(match self {
            LoadKind::Cpu => &cpu::CpuLoad,
            LoadKind::Memory => &memory::MemoryLoad,
            LoadKind::Io => &io::IoLoad,
            LoadKind::Net => &net::NetLoad,
            LoadKind::Irq => &irq::IrqLoad,
            LoadKind::Sched => &sched::SchedLoad,
            LoadKind::Cmd(_) => return None,
        })
    }

    pub(crate) fn from_builtin_name(s: &str) -> Option<LoadKind> {
        KINDS.iter().find(|k| k.name() == s).cloned()
    }
}

/// Parse one load name as a phase's load list: `idle` → none, `mixed` →
/// every built-in kind, `cmd:...` → a command. Err holds what is allowed.
pub(crate) fn parse_load(spec: &str) -> Result<Vec<LoadKind>, String> {
    let s = spec.trim();
    if let Some(rest) = s.strip_prefix("cmd:") {
        let line = unquote(rest.trim());
        if line.trim().is_empty() {
            return Err("cmd: needs a command line, e.g. cmd:\"make -j4\"".into());
        }
        return Ok(vec![LoadKind::Cmd(line.to_string())]);
    }
    match s {
        "idle" | "none" => Ok(vec![]),
        "mixed" => Ok(KINDS.to_vec()),
        _ => LoadKind::from_builtin_name(s).map(|k| vec![k]).ok_or_else(|| {
            let names: Vec<&str> = PHASE_NAMES.iter().map(|(n, _)| *n).collect();
            format!("unknown load '{s}'; allowed: {}", names.join(", "))
        }),
    }
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// Split the value of `--load` into phase specs: commas separate phases,
/// except that `cmd:` takes a quoted command line (commas allowed inside)
/// or, unquoted, the rest of the value.
pub(crate) fn split_load_list(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("cmd:") {
            let after = after.trim_start();
            if let Some(q) = after.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let body = &after[1..];
                let end = body.find(q).ok_or_else(|| format!("unterminated quote in '{s}'; write cmd:\"<command line>\""))?;
                out.push(format!("cmd:{}", &body[..end]));
                rest = body[end + 1..].trim_start();
                match rest.strip_prefix(',') {
                    Some(r) => rest = r.trim_start(),
                    None if rest.is_empty() => {}
                    None => return Err(format!("expected ',' after the quoted command in '{s}'")),
                }
            } else {
                out.push(format!("cmd:{after}"));
                rest = "";
            }
            continue;
        }
        let (head, tail) = match rest.find(',') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        if !head.trim().is_empty() {
            out.push(head.trim().to_string());
        }
        rest = tail.trim_start();
    }
    Ok(out)
}

/// One phase of the experiment: a name and its loads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PhaseSpec {
    pub(crate) name: String,
    pub(crate) loads: Vec<LoadKind>,
    /// `--phase-name`: the run's load was started outside rtscope (a guest
    /// load, the user's own), so a phase without rtscope's loads is not idle.
    pub(crate) outside: bool,
}

/// Which generator makes the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Engine {
    /// stress-ng when it is on PATH, else builtin.
    Auto,
    StressNg,
    Builtin,
}

impl Engine {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Engine::Auto => "auto",
            Engine::StressNg => "stress-ng",
            Engine::Builtin => "builtin",
        }
    }
}

/// Where and how hard loads run (validated).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LoadOptions {
    /// Resolved engine: StressNg or Builtin (never Auto).
    pub(crate) engine: Engine,
    /// Path of stress-ng when the engine is stress-ng.
    pub(crate) stress_ng: Option<PathBuf>,
    pub(crate) cpus: Vec<usize>,
    /// Workers per load = max(1, round(intensity × number of load CPUs)).
    pub(crate) intensity: f64,
    /// Directory on the filesystem under test; temp files go below it.
    pub(crate) dir: PathBuf,
}

impl LoadOptions {
    pub(crate) fn workers(&self) -> usize {
        ((self.intensity * self.cpus.len() as f64).round() as usize).max(1)
    }

    /// The engine that makes `kind`: `cmd` for a command, else the run's.
    pub(crate) fn engine_for(&self, kind: &LoadKind) -> &'static str {
        match kind {
            LoadKind::Cmd(_) => "cmd",
            _ => self.engine.name(),
        }
    }
}

/// The first `stress-ng` executable on PATH.
pub(crate) fn find_stress_ng() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("stress-ng")).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    })
}

/// Resolve `auto`: stress-ng when on PATH. Err when stress-ng was asked for
/// and is missing.
pub(crate) fn resolve_engine(asked: Engine) -> Result<(Engine, Option<PathBuf>), String> {
    let found = find_stress_ng();
    match (asked, found) {
        (Engine::Builtin, _) => Ok((Engine::Builtin, None)),
        (Engine::Auto, None) => Ok((Engine::Builtin, None)),
        (_, Some(p)) => Ok((Engine::StressNg, Some(p))),
        (Engine::StressNg, None) => {
            Err("--load-engine stress-ng: stress-ng is not on PATH; install it (apt-get install stress-ng) or use --load-engine builtin".into())
        }
    }
}

/// Quote an argv for display, shell-style (for the recorded command lines).
pub(crate) fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_names_parse() {
        assert_eq!(parse_load("idle").unwrap(), vec![]);
        assert_eq!(parse_load("cpu").unwrap(), vec![LoadKind::Cpu]);
        assert_eq!(parse_load("mixed").unwrap().len(), 6);
        assert_eq!(parse_load("cmd:\"make -j4\"").unwrap(), vec![LoadKind::Cmd("make -j4".into())]);
        let e = parse_load("disk").unwrap_err();
        assert!(e.contains("unknown load 'disk'") && e.contains("io"), "{e}");
        assert!(parse_load("cmd:").is_err());
    }

    #[test]
    fn load_lists_split_outside_quotes() {
        assert_eq!(split_load_list("idle,cpu, io").unwrap(), vec!["idle", "cpu", "io"]);
        assert_eq!(split_load_list("idle,cmd:\"a, b\",net").unwrap(), vec!["idle", "cmd:a, b", "net"]);
        assert_eq!(split_load_list("cpu,cmd:make -j4, x").unwrap(), vec!["cpu", "cmd:make -j4, x"]);
        assert!(split_load_list("cmd:\"oops").is_err());
    }

    #[test]
    fn workers_scale_with_intensity() {
        let mut o = LoadOptions { engine: Engine::Builtin, stress_ng: None, cpus: vec![0, 1], intensity: 1.0, dir: ".".into() };
        assert_eq!(o.workers(), 2);
        o.intensity = 0.1;
        assert_eq!(o.workers(), 1);
        o.intensity = 2.0;
        assert_eq!(o.workers(), 4);
    }

    #[test]
    fn shell_join_quotes_what_needs_it() {
        let v: Vec<String> = ["sh", "-c", "make -j4", "it's"].iter().map(|s| s.to_string()).collect();
        assert_eq!(shell_join(&v), "sh -c 'make -j4' 'it'\\''s'");
    }
}
