//! The knobs a factor experiment can turn, one descriptor each (as rtla's
//! `struct tool_ops`): its name, what it is, the kernel files it touches, how
//! a level is checked and written, how the original is read back for the
//! restore journal, whether it needs root, and which `rtscope doctor`
//! finding speaks about it. The experiment asks the descriptor, never a name.
//!
//! Two kinds of factor:
//! - **host knobs** ([`HostKnob`]): a kernel setting rtscope writes. Every
//!   file's original text is journaled (`journal`) before the first write
//!   and written back on every exit path.
//! - **run settings** ([`RunSetting`]): what `rtscope run` itself sets for
//!   the length of one run — holding `/dev/cpu_dma_latency`, the load
//!   phase, the measuring threads' priority and policy. They end with the
//!   run (a held file descriptor closes, loads stop), so nothing is journaled.
//! - **boot settings** ([`BootSetting`]): what a kernel-lab guest boots with
//!   — the kernel, extra kernel command-line parameters. One guest boot per
//!   cell (`rtscope factors --lab`); nothing on this host changes.
//!
//! Files are read and written under `RTSCOPE_KNOB_ROOT` when set (the tests'
//! fake `/proc` and `/sys` trees), else under `/`.

use std::path::PathBuf;

use crate::error::BadInput;
use crate::plan::overrides::{Overrides, Setting};

/// Where the knobs' kernel files are: `/`, or a test tree.
#[derive(Debug, Clone)]
pub(crate) struct KnobRoot(PathBuf);

impl KnobRoot {
    /// `RTSCOPE_KNOB_ROOT` (tests), else `/`.
    pub(crate) fn from_env() -> KnobRoot {
        KnobRoot(std::env::var_os("RTSCOPE_KNOB_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/")))
    }
    pub(crate) fn new(base: PathBuf) -> KnobRoot {
        KnobRoot(base)
    }
    pub(crate) fn base(&self) -> PathBuf {
        self.0.clone()
    }
    /// A test tree: knobs need no root there.
    pub(crate) fn is_fake(&self) -> bool {
        self.0 != std::path::Path::new("/")
    }
    pub(crate) fn path(&self, kernel_path: &str) -> PathBuf {
        self.0.join(kernel_path.trim_start_matches('/'))
    }
    pub(crate) fn read(&self, kernel_path: &str) -> Option<String> {
        std::fs::read_to_string(self.path(kernel_path)).ok().map(|s| s.trim().to_string())
    }
    pub(crate) fn exists(&self, kernel_path: &str) -> bool {
        self.path(kernel_path).exists()
    }
}

/// One write a level asks for: the kernel file and the text to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Write {
    pub(crate) path: String,
    pub(crate) text: String,
}

/// The host's facts a level may depend on.
#[derive(Debug, Clone)]
pub(crate) struct HostCtx {
    pub(crate) online: Vec<usize>,
    /// The CPUs the experiment measures on.
    pub(crate) measured: Vec<usize>,
}

impl HostCtx {
    fn off_measured(&self, knob: &str) -> Result<Vec<usize>, BadInput> {
        let rest: Vec<usize> = self.online.iter().copied().filter(|c| !self.measured.contains(c)).collect();
        if rest.is_empty() {
            return Err(BadInput(format!(
                "--factor {knob}=off-measured: every online CPU ({}) is measured, so nothing is left to move onto; \
                 name the measured CPUs with -a/--affinity (e.g. -a {})",
                crate::units::cpu_list_str(&self.online),
                self.online.last().copied().unwrap_or(0)
            )));
        }
        Ok(rest)
    }
}

/// How a host knob reads, checks and writes its levels.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Access {
    /// One file holding one word or number; the level is written as given
    /// (after `check`), the original restored as read.
    Word { path: &'static str, check: fn(&str) -> Result<String, String> },
    /// `/proc/sys/kernel/printk`: the level is the first field (console log
    /// level); the whole four-field line is restored.
    Printk,
    /// transparent_hugepage/enabled: `always [madvise] never`; the chosen
    /// word is the level and what is restored.
    Bracketed { path: &'static str, words: &'static [&'static str] },
    /// Every `/proc/irq/N/smp_affinity_list`: `all` or `off-measured`.
    IrqAffinity,
    /// `/sys/devices/virtual/workqueue/cpumask` (a hex mask): `all`,
    /// `off-measured` or a CPU list.
    CpuMask { path: &'static str },
}

/// A kernel setting rtscope writes for a factor level.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostKnob {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    /// The levels it takes, for messages and `docs/factors.md`.
    pub(crate) levels: &'static str,
    /// The `rtscope doctor` finding that speaks about this setting.
    pub(crate) doctor: &'static str,
    pub(crate) access: Access,
    /// Other files of the same kernel setting, which a write to this
    /// knob's file changes too (`watchdog` clears `soft_watchdog` and
    /// `nmi_watchdog`; `soft_watchdog` changes what `watchdog` reads). They
    /// are journaled, locked and checked with the knob's own files, so two
    /// experiments cannot share a setting under two names, and restored
    /// after them (in this order).
    pub(crate) coupled: &'static [&'static str],
}

/// What `rtscope run` sets for the length of one run: one descriptor
/// each — its name, how a level is checked and applied to a run's plan
/// (typed [`Overrides`], layered over the command line's flags), and how it
/// is written as run's flags (a kernel-lab guest's command, a log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunSetting {
    /// held: `/dev/cpu_dma_latency` held at 0 (run's default); released: `--no-dma-latency`.
    DmaLatency,
    /// The load phase (a `--load` name; `idle` is none).
    Load,
    /// The measuring threads' priority (1-99).
    Priority,
    /// The measuring threads' policy (fifo, rr, other, deadline).
    Policy,
    /// The measured CPUs (`-a`): a CPU list, `+` joining CPUs of one level.
    Cpu,
    /// The timer period (`-i`).
    Interval,
}

/// A run setting's level as typed values.
enum RunLevel {
    Dma(bool),
    Loads(Vec<String>),
    Priority(u8),
    Policy(crate::sys::sched::Policy),
    Cpus(Vec<usize>),
    Interval(u64),
}

impl RunSetting {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RunSetting::DmaLatency => "dma-latency",
            RunSetting::Load => "load",
            RunSetting::Priority => "priority",
            RunSetting::Policy => "policy",
            RunSetting::Cpu => "cpu",
            RunSetting::Interval => "interval",
        }
    }

    /// The setting of the plan it sets (a flag giving it too is a clash).
    pub(crate) fn setting(self) -> Setting {
        match self {
            RunSetting::DmaLatency => Setting::DmaLatency,
            RunSetting::Load => Setting::Loads,
            RunSetting::Priority => Setting::Priority,
            RunSetting::Policy => Setting::Policy,
            RunSetting::Cpu => Setting::Cpus,
            RunSetting::Interval => Setting::Interval,
        }
    }

    fn what(self) -> &'static str {
        match self {
            RunSetting::DmaLatency => "/dev/cpu_dma_latency held at 0 by rtscope during each run (held) or not (released)",
            RunSetting::Load => "rtscope's load phase during each run (a --load name; idle is none)",
            RunSetting::Priority => "the measuring threads' real-time priority",
            RunSetting::Policy => "the measuring threads' scheduling policy",
            RunSetting::Cpu => "the CPUs measured on (as -a takes them; + joins several CPUs in one level)",
            RunSetting::Interval => "the timer period (as -i takes it)",
        }
    }

    fn levels_help(self) -> &'static str {
        match self {
            RunSetting::DmaLatency => "held, released",
            RunSetting::Load => "idle, cpu, memory, io, net, irq, sched, mixed",
            RunSetting::Priority => "1-99",
            RunSetting::Policy => "fifo, rr, other, deadline",
            RunSetting::Cpu => "CPU numbers or lists, e.g. cpu=0,1 or cpu=0+2,1-3",
            RunSetting::Interval => "periods, e.g. interval=250us,1ms (a bare number is µs)",
        }
    }

    /// A level as typed values; exit 2 naming the factor and the level.
    fn parse(self, level: &str) -> Result<RunLevel, BadInput> {
        let bad = |why: String| BadInput(format!("--factor {}={level}: {why}", self.name()));
        Ok(match self {
            RunSetting::DmaLatency => match level {
                "held" => RunLevel::Dma(true),
                "released" => RunLevel::Dma(false),
                _ => return Err(bad("expected held or released".into())),
            },
            RunSetting::Load if level == "idle" => RunLevel::Loads(Vec::new()),
            RunSetting::Load => {
                for spec in crate::load::split_load_list(level).map_err(|e| bad(e.to_string()))? {
                    crate::load::parse_load(&spec).map_err(|e| bad(e.to_string()))?;
                }
                RunLevel::Loads(vec![level.to_string()])
            }
            RunSetting::Priority => match level.parse::<u8>() {
                Ok(p @ 1..=99) => RunLevel::Priority(p),
                _ => return Err(bad("expected a real-time priority 1-99".into())),
            },
            RunSetting::Policy => RunLevel::Policy(match level {
                "fifo" => crate::sys::sched::Policy::Fifo,
                "rr" => crate::sys::sched::Policy::RoundRobin,
                "other" => crate::sys::sched::Policy::Other,
                "deadline" => crate::sys::sched::Policy::Deadline,
                _ => return Err(bad("expected fifo, rr, other or deadline".into())),
            }),
            RunSetting::Cpu => {
                let cpus = crate::units::parse_cpu_list(&level.replace('+', ","))
                    .ok()
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| bad("expected CPU numbers and ranges, + joining several (e.g. 0, 2-3 or 0+2)".into()))?;
                let online = crate::sys::sched::online_cpus();
                if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
                    return Err(bad(format!("CPU {c} is not online; online CPUs are {}", crate::units::cpu_list_str(&online))));
                }
                if let Ok(allowed) = crate::sys::sched::current_affinity() {
                    if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                        return Err(bad(format!(
                            "CPU {c} is not allowed to rtscope (its affinity, e.g. from taskset or a cpuset, is {})",
                            crate::units::cpu_list_str(&allowed)
                        )));
                    }
                }
                RunLevel::Cpus(cpus)
            }
            RunSetting::Interval => match crate::units::parse_interval(level) {
                Ok(ns) if ns > 0 => RunLevel::Interval(ns),
                Ok(_) => return Err(bad("a period must be longer than 0".into())),
                Err(e) => return Err(bad(e)),
            },
        })
    }

    /// Check a level now (before anything is measured or changed).
    pub(crate) fn check(self, level: &str) -> Result<(), BadInput> {
        self.parse(level).map(|_| ())
    }

    /// Put this setting at `level` in `o`.
    pub(crate) fn apply(self, level: &str, o: &mut Overrides) -> Result<(), BadInput> {
        match self.parse(level)? {
            RunLevel::Dma(held) => o.dma_latency = Some(held),
            RunLevel::Loads(l) => o.loads = Some(l),
            RunLevel::Priority(p) => o.priority = Some(p),
            RunLevel::Policy(p) => o.policy = Some(p),
            RunLevel::Cpus(c) => o.cpus = Some(c),
            RunLevel::Interval(i) => o.interval_ns = Some(i),
        }
        Ok(())
    }

    /// `level` as `rtscope run`'s flags (a kernel-lab guest's run, a log);
    /// none for run's default (`held`, `idle`).
    pub(crate) fn flags(self, level: &str) -> Result<Vec<String>, BadInput> {
        Ok(match self.parse(level)? {
            RunLevel::Dma(true) => vec![],
            RunLevel::Dma(false) => vec!["--no-dma-latency".into()],
            RunLevel::Loads(l) if l.is_empty() => vec![],
            RunLevel::Loads(_) => vec!["--load".into(), level.into()],
            RunLevel::Priority(p) => vec!["-p".into(), p.to_string()],
            RunLevel::Policy(p) => vec!["--policy".into(), p.name().into()],
            RunLevel::Cpus(c) => vec!["-a".into(), crate::units::cpu_list_str(&c)],
            RunLevel::Interval(_) => vec!["-i".into(), level.into()],
        })
    }
}

/// What a kernel-lab guest boots with (`rtscope factors --lab`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BootSetting {
    /// The guest's kernel: lab/kernel-lab `--kernel` (rt, stock or a vmlinuz path).
    Kernel,
    /// Kernel command-line parameters added after the lab's own (`none`: nothing added).
    Cmdline,
}

impl BootSetting {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BootSetting::Kernel => "kernel",
            BootSetting::Cmdline => "cmdline",
        }
    }
    /// The lab command's flag that sets it (`lab/kernel-lab`).
    pub(crate) fn lab_flag(self) -> &'static str {
        match self {
            BootSetting::Kernel => "--kernel",
            BootSetting::Cmdline => "--append-more",
        }
    }
    /// `level` as the lab command's arguments; none for `cmdline=none`.
    pub(crate) fn lab_args(self, level: &str) -> Vec<String> {
        match self {
            BootSetting::Cmdline if level == "none" => vec![],
            _ => vec![self.lab_flag().to_string(), level.to_string()],
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Host(HostKnob),
    Run(RunSetting),
    Boot(BootSetting),
}

/// One knob: a name on the command line and what it is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Knob {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
}

impl Knob {
    pub(crate) fn what(&self) -> &'static str {
        match self.kind {
            Kind::Host(h) => h.what,
            Kind::Run(r) => r.what(),
            Kind::Boot(BootSetting::Kernel) => "the kernel a kernel-lab guest boots (one guest boot per run; needs --lab)",
            Kind::Boot(BootSetting::Cmdline) => "kernel command-line parameters a kernel-lab guest boots with, after the lab's own (needs --lab)",
        }
    }
    pub(crate) fn levels_help(&self) -> &'static str {
        match self.kind {
            Kind::Host(h) => h.levels,
            Kind::Run(r) => r.levels_help(),
            Kind::Boot(BootSetting::Kernel) => "rt, stock or a vmlinuz path",
            Kind::Boot(BootSetting::Cmdline) => "none, or parameters such as idle=poll or 'nohz_full=0 isolcpus=0' (no commas)",
        }
    }
    pub(crate) fn doctor(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Host(h) => Some(h.doctor),
            Kind::Run(RunSetting::DmaLatency) => Some("cpuidle.pm_qos"),
            Kind::Run(_) | Kind::Boot(_) => None,
        }
    }
}

fn bool01(s: &str) -> Result<String, String> {
    match s {
        "0" | "off" => Ok("0".into()),
        "1" | "on" => Ok("1".into()),
        _ => Err("expected 0/off or 1/on".into()),
    }
}

fn ksm_run(s: &str) -> Result<String, String> {
    // 2 (unmerge every page) is an action, not a setting to compare.
    bool01(s)
}

fn rt_runtime(s: &str) -> Result<String, String> {
    // -1 turns RT throttling off: a FIFO busy loop then owns its CPU for
    // good. On a shared host that is how a machine is lost; it is refused
    // here and belongs in a kernel-lab guest.
    if s.trim() == "-1" {
        return Err("-1 (RT throttling off) is refused: a runaway SCHED_FIFO thread would own its CPU; \
                    compare e.g. 950000 with 990000, or run the -1 level in a kernel-lab guest"
            .into());
    }
    match s.parse::<u32>() {
        Ok(v) if v <= 1_000_000 => Ok(v.to_string()),
        _ => Err("expected microseconds 0..=sched_rt_period_us (e.g. 950000)".into()),
    }
}

/// Every host knob, in the order `docs/factors.md` lists them.
pub(crate) const HOST_KNOBS: &[HostKnob] = &[
    HostKnob {
        name: "printk",
        what: "console log level: messages below it are printed on the console (first field of /proc/sys/kernel/printk)",
        levels: "0-8, e.g. printk=7,1",
        doctor: "console.loglevel",
        access: Access::Printk,
        coupled: &[],
    },
    HostKnob {
        name: "irq-affinity",
        what: "device interrupts' CPUs (/proc/irq/N/smp_affinity_list): every online CPU, or off the measured CPUs",
        levels: "all, off-measured",
        doctor: "irq.affinity",
        access: Access::IrqAffinity,
        coupled: &[],
    },
    HostKnob {
        name: "rt-runtime",
        what: "RT throttling: the µs per sched_rt_period_us that real-time threads may use (/proc/sys/kernel/sched_rt_runtime_us)",
        levels: "microseconds, e.g. 950000,990000 (-1 is refused on a shared host)",
        doctor: "sched.rt_throttling",
        access: Access::Word { path: "/proc/sys/kernel/sched_rt_runtime_us", check: rt_runtime },
        coupled: &[],
    },
    HostKnob {
        name: "timer-migration",
        what: "timers may migrate to a busy CPU (/proc/sys/kernel/timer_migration)",
        levels: "0/off, 1/on",
        doctor: "sched.timer_migration",
        access: Access::Word { path: "/proc/sys/kernel/timer_migration", check: bool01 },
        coupled: &[],
    },
    HostKnob {
        name: "thp",
        what: "transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled)",
        levels: "always, madvise, never",
        doctor: "mm.thp",
        access: Access::Bracketed { path: "/sys/kernel/mm/transparent_hugepage/enabled", words: &["always", "madvise", "never"] },
        coupled: &[],
    },
    HostKnob {
        name: "ksm",
        what: "kernel same-page merging scanner (/sys/kernel/mm/ksm/run)",
        levels: "0/off, 1/on",
        doctor: "mm.ksm",
        access: Access::Word { path: "/sys/kernel/mm/ksm/run", check: ksm_run },
        coupled: &[],
    },
    HostKnob {
        name: "watchdog",
        what: "the soft and NMI lockup detectors together (/proc/sys/kernel/watchdog)",
        levels: "0/off, 1/on",
        doctor: "watchdog.soft",
        access: Access::Word { path: "/proc/sys/kernel/watchdog", check: bool01 },
        coupled: &["/proc/sys/kernel/soft_watchdog", "/proc/sys/kernel/nmi_watchdog"],
    },
    HostKnob {
        name: "soft-watchdog",
        what: "the soft lockup detector (/proc/sys/kernel/soft_watchdog)",
        levels: "0/off, 1/on",
        doctor: "watchdog.soft",
        access: Access::Word { path: "/proc/sys/kernel/soft_watchdog", check: bool01 },
        coupled: &["/proc/sys/kernel/watchdog"],
    },
    HostKnob {
        name: "nmi-watchdog",
        what: "the hard lockup (NMI) detector (/proc/sys/kernel/nmi_watchdog)",
        levels: "0/off, 1/on",
        doctor: "watchdog.nmi",
        access: Access::Word { path: "/proc/sys/kernel/nmi_watchdog", check: bool01 },
        coupled: &["/proc/sys/kernel/watchdog"],
    },
    HostKnob {
        name: "workqueue-cpumask",
        what: "CPUs unbound workqueue workers run on (/sys/devices/virtual/workqueue/cpumask)",
        levels: "all, off-measured, or a CPU list such as 0",
        doctor: "isolation.isolcpus",
        access: Access::CpuMask { path: "/sys/devices/virtual/workqueue/cpumask" },
        coupled: &[],
    },
];

const RUN_SETTINGS: &[RunSetting] =
    &[RunSetting::DmaLatency, RunSetting::Load, RunSetting::Priority, RunSetting::Policy, RunSetting::Cpu, RunSetting::Interval];

const BOOT_SETTINGS: &[BootSetting] = &[BootSetting::Kernel, BootSetting::Cmdline];

/// Every knob's name, for messages.
pub(crate) fn names() -> Vec<&'static str> {
    RUN_SETTINGS.iter().map(|r| r.name()).chain(HOST_KNOBS.iter().map(|k| k.name)).chain(BOOT_SETTINGS.iter().map(|b| b.name())).collect()
}

/// The host knob called `name` (a journal's entries name one).
pub(crate) fn host_knob(name: &str) -> Option<&'static HostKnob> {
    HOST_KNOBS.iter().find(|k| k.name == name)
}

/// The knob called `name`; exit 2 naming the knobs there are.
pub(crate) fn find(name: &str) -> Result<Knob, BadInput> {
    if let Some(r) = RUN_SETTINGS.iter().find(|r| r.name() == name) {
        return Ok(Knob { name: r.name(), kind: Kind::Run(*r) });
    }
    if let Some(h) = HOST_KNOBS.iter().find(|k| k.name == name) {
        return Ok(Knob { name: h.name, kind: Kind::Host(*h) });
    }
    if let Some(b) = BOOT_SETTINGS.iter().find(|b| b.name() == name) {
        return Ok(Knob { name: b.name(), kind: Kind::Boot(*b) });
    }
    Err(BadInput(format!("--factor {name}: no such knob; the knobs are {} (docs/factors.md)", names().join(", "))))
}

/// Kernel CPU-list text (`0-1`) as a hex mask (`3`).
fn hex_mask(cpus: &[usize]) -> String {
    let mut words: Vec<u32> = vec![0; cpus.iter().max().map_or(1, |m| m / 32 + 1)];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut s = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        if i == 0 {
            s.push_str(&format!("{w:x}"));
        } else {
            s.push_str(&format!(",{w:08x}"));
        }
    }
    s
}

/// The numbered IRQs under /proc/irq, in order.
pub(crate) fn irqs(root: &KnobRoot) -> Vec<u32> {
    let mut v: Vec<u32> =
        std::fs::read_dir(root.path("/proc/irq")).map(|rd| rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default();
    v.sort_unstable();
    v
}

impl HostKnob {
    /// The files this knob writes and touches on this host: its own files,
    /// then the [`coupled`](Self::coupled) ones this host has. Exit 2 when
    /// the host lacks its own (a knob this system does not have is not a
    /// silent level).
    pub(crate) fn files(&self, root: &KnobRoot) -> Result<Vec<String>, BadInput> {
        let files: Vec<String> = match self.access {
            Access::Word { path, .. } | Access::Bracketed { path, .. } | Access::CpuMask { path } => vec![path.to_string()],
            Access::Printk => vec!["/proc/sys/kernel/printk".to_string()],
            Access::IrqAffinity => irqs(root).into_iter().map(|n| format!("/proc/irq/{n}/smp_affinity_list")).collect(),
        };
        let missing: Vec<&String> = files.iter().filter(|f| !root.exists(f)).collect();
        if files.is_empty() || !missing.is_empty() {
            let shown = missing.first().map(|s| s.as_str()).unwrap_or("/proc/irq/N/smp_affinity_list");
            return Err(BadInput(format!(
                "--factor {}: this system does not have this knob ({shown} does not exist: the kernel lacks the feature or it is not built in); drop the factor",
                self.name
            )));
        }
        Ok(files.into_iter().chain(self.coupled.iter().filter(|f| root.exists(f)).map(|f| f.to_string())).collect())
    }

    /// Whether `path` is a file this knob may write or touch on any host:
    /// a restore journal naming any other file is not trusted.
    pub(crate) fn may_touch(&self, path: &str) -> bool {
        let own = match self.access {
            Access::Word { path: p, .. } | Access::Bracketed { path: p, .. } | Access::CpuMask { path: p } => path == p,
            Access::Printk => path == "/proc/sys/kernel/printk",
            Access::IrqAffinity => path
                .strip_prefix("/proc/irq/")
                .and_then(|r| r.strip_suffix("/smp_affinity_list"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        };
        own || self.coupled.contains(&path)
    }

    /// The text to write back to `path` to restore what was read there.
    pub(crate) fn restorable(&self, raw: &str) -> String {
        match self.access {
            Access::Bracketed { .. } => bracketed(raw).unwrap_or(raw).to_string(),
            // printk's four fields, tab-separated when read, are written back
            // space-separated.
            Access::Printk => raw.split_whitespace().collect::<Vec<_>>().join(" "),
            _ => raw.trim().to_string(),
        }
    }

    /// What a file of this knob that reads `now` (as [`Self::restorable`]
    /// gives it) reads after `text` is written to it: printk's level is its
    /// first field, the other three stay.
    pub(crate) fn reads_after(&self, now: &str, text: &str) -> String {
        match self.access {
            Access::Printk => std::iter::once(text.trim()).chain(now.split_whitespace().skip(1)).collect::<Vec<_>>().join(" "),
            _ => self.restorable(text),
        }
    }

    /// What a file of this knob whose bytes were `before` reads after
    /// `text` is written to it, byte for byte (the second-signal action
    /// compares bytes; it cannot parse): as the kernel renders it — the
    /// text and a newline; THP's brackets moved to the word; printk's first
    /// field replaced, its tabs kept — and the text as written (a test
    /// tree's plain file). Where the kernel renders it otherwise (a CPU
    /// mask's width), the action leaves the file to the next rtscope.
    pub(crate) fn raw_after(&self, before: &[u8], text: &str) -> Vec<Vec<u8>> {
        let before = String::from_utf8_lossy(before);
        let word = text.trim();
        let kernel = match self.access {
            Access::Bracketed { .. } => {
                let words = before.trim_end();
                let marked: Vec<String> = words
                    .split(' ')
                    .map(|w| {
                        let w = w.trim_matches(|c| c == '[' || c == ']');
                        if w == word {
                            format!("[{w}]")
                        } else {
                            w.to_string()
                        }
                    })
                    .collect();
                format!("{}{}", marked.join(" "), &before[words.len()..])
            }
            Access::Printk => match before.find(char::is_whitespace) {
                Some(i) => format!("{word}{}", &before[i..]),
                None => format!("{word}\n"),
            },
            _ => format!("{word}\n"),
        };
        let mut texts = vec![kernel.into_bytes()];
        if texts[0] != text.as_bytes() {
            texts.push(text.as_bytes().to_vec());
        }
        texts
    }

    /// The level this knob is at now, in the words levels are given in.
    pub(crate) fn current(&self, root: &KnobRoot, host: &HostCtx) -> Option<String> {
        match self.access {
            Access::Word { path, .. } => root.read(path),
            Access::Printk => root.read("/proc/sys/kernel/printk").and_then(|s| s.split_whitespace().next().map(str::to_string)),
            Access::Bracketed { path, .. } => root.read(path).and_then(|s| bracketed(&s).map(str::to_string)),
            Access::IrqAffinity => {
                let all = crate::units::cpu_list_str(&host.online);
                let lists: Vec<String> = irqs(root).iter().filter_map(|n| root.read(&format!("/proc/irq/{n}/smp_affinity_list"))).collect();
                Some(if lists.iter().all(|l| *l == all) { "all".into() } else { "mixed".into() })
            }
            Access::CpuMask { path } => root.read(path),
        }
    }

    /// Check a level now (before anything is measured or changed).
    pub(crate) fn check_level(&self, level: &str, host: &HostCtx) -> Result<(), BadInput> {
        let bad = |why: String| BadInput(format!("--factor {}={level}: {why}; levels: {}", self.name, self.levels));
        match self.access {
            Access::Word { check, .. } => check(level).map(|_| ()).map_err(bad),
            Access::Printk => match level.parse::<u8>() {
                Ok(v) if v <= 8 => Ok(()),
                _ => Err(bad("expected a console log level 0-8".into())),
            },
            Access::Bracketed { words, .. } => {
                if words.contains(&level) {
                    Ok(())
                } else {
                    Err(bad(format!("expected one of {}", words.join(", "))))
                }
            }
            Access::IrqAffinity => match level {
                "all" => Ok(()),
                "off-measured" => host.off_measured(self.name).map(|_| ()),
                _ => Err(bad("expected all or off-measured".into())),
            },
            Access::CpuMask { .. } => match level {
                "all" => Ok(()),
                "off-measured" => host.off_measured(self.name).map(|_| ()),
                l => match crate::units::parse_cpu_list(l) {
                    Ok(c) if !c.is_empty() && c.iter().all(|x| host.online.contains(x)) => Ok(()),
                    _ => Err(bad("expected all, off-measured or a list of online CPUs".into())),
                },
            },
        }
    }

    /// The writes that put this knob at `level` (checked by [`Self::check_level`]).
    pub(crate) fn writes(&self, level: &str, root: &KnobRoot, host: &HostCtx) -> Result<Vec<Write>, BadInput> {
        self.check_level(level, host)?;
        let one = |path: &str, text: String| vec![Write { path: path.to_string(), text }];
        Ok(match self.access {
            Access::Word { path, check } => one(path, check(level).map_err(BadInput)?),
            Access::Printk => one("/proc/sys/kernel/printk", level.to_string()),
            Access::Bracketed { path, .. } => one(path, level.to_string()),
            Access::IrqAffinity => {
                let cpus = if level == "all" { host.online.clone() } else { host.off_measured(self.name)? };
                let text = crate::units::cpu_list_str(&cpus);
                self.files(root)?.into_iter().map(|path| Write { path, text: text.clone() }).collect()
            }
            Access::CpuMask { path } => {
                let cpus = match level {
                    "all" => host.online.clone(),
                    "off-measured" => host.off_measured(self.name)?,
                    l => crate::units::parse_cpu_list(l).map_err(BadInput)?,
                };
                one(path, hex_mask(&cpus))
            }
        })
    }

    /// Whether a failed write to `path` may be skipped: an interrupt the
    /// kernel does not let move (per-CPU timers, IPIs) refuses with EIO;
    /// it stays where it is and the experiment says so.
    pub(crate) fn may_refuse(&self, _path: &str) -> bool {
        matches!(self.access, Access::IrqAffinity)
    }
}

/// `always [madvise] never` → `madvise`.
fn bracketed(s: &str) -> Option<&str> {
    let a = s.find('[')?;
    let b = s[a..].find(']')? + a;
    Some(&s[a + 1..b])
}

/// A boot setting's level, checked as text (a kernel path's existence is
/// lab/kernel-lab's own check, made before anything boots).
pub(crate) fn check_boot_level(knob: &str, s: BootSetting, level: &str) -> Result<(), BadInput> {
    let bad = |why: &str| BadInput(format!("--factor {knob}={level}: {why}"));
    if level.chars().any(|c| c.is_control() || c == '\'' || c == '"') {
        return Err(bad("a level may not hold quotes or control characters"));
    }
    match s {
        BootSetting::Kernel if level.contains(char::is_whitespace) => Err(bad("expected rt, stock or a vmlinuz path (without spaces)")),
        BootSetting::Cmdline if level != "none" && !level.split_whitespace().all(|w| w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())) => {
            Err(bad("expected none or kernel parameters such as idle=poll or 'nohz_full=0 isolcpus=0'"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
