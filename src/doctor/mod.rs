//! `rtscope doctor`: audits a host for the settings that decide its worst-case latency.
//!
//! Each check reads a few kernel files through a [`SysRoot`] and returns [`Finding`]s: a
//! severity, the evidence (kernel path and the value read there), why it matters for latency
//! and the exact fix. [`audit`] is a pure function of the tree it reads and the CPUs to be
//! measured, so the core can store its output in every run's host fingerprint and tests can
//! run it against fake `proc/` and `sys/` trees. A file the kernel does not expose is never
//! an error: the finding says so.
//!
//! One file per group of checks: `preempt`, `cpuidle`, `cpufreq`, `isolation` (isolcpus,
//! nohz_full, rcu_nocbs, SMT), `irq`, `sched`, `mm`, `clock`, `console`, `watchdog`,
//! `tracing` (other active kernel tracing), `mitigations`, `vm`. Rendering (terminal and JSON) lives in `render`.

pub(crate) mod advice;
mod clock;
pub(crate) mod console;
mod cpufreq;
pub(crate) mod cpuidle;
pub(crate) mod irq;
mod isolation;
mod mitigations;
mod mm;
mod preempt;
mod render;
pub(crate) mod sched;
mod tracing;
mod vm;
mod watchdog;

use crate::model::Host;
use crate::units::parse_cpu_list;

pub(crate) use crate::model::doctor::{Evidence, Finding, Severity};
pub(crate) use crate::sysinfo::SysRoot;
pub(crate) use render::{render_json, render_text, DoctorReport};

/// Version of the `rtscope doctor --json` document (see docs/schema.md, "doctor").
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Words shown when a file is missing.
pub(crate) const NOT_EXPOSED: &str = "(not exposed by this kernel)";

/// What every check can see: the tree, the CPUs to be measured and a few shared facts.
pub(crate) struct Ctx<'a> {
    pub(crate) root: &'a SysRoot,
    /// The host fingerprint: the one reader of the facts it holds (preempt model,
    /// clocksource, governors, isolated and nohz_full CPUs, hypervisor flag, cmdline).
    pub(crate) host: &'a Host,
    /// CPUs the user wants to measure (sorted, deduplicated, non-empty).
    pub(crate) cpus: &'a [usize],
    /// Online CPUs (empty if not exposed).
    pub(crate) online: Vec<usize>,
    /// `/proc/cmdline`, if exposed.
    pub(crate) cmdline: Option<String>,
}

impl<'a> Ctx<'a> {
    fn new(root: &'a SysRoot, host: &'a Host, cpus: &'a [usize]) -> Ctx<'a> {
        let cmdline = (!host.cmdline.is_empty()).then(|| host.cmdline.clone());
        Ctx { root, host, cpus, online: host.cpus_online.clone(), cmdline }
    }

    /// Reads a kernel file and returns the evidence plus the value (if present).
    pub(crate) fn read(&self, path: &str) -> (Evidence, Option<String>) {
        let v = self.value(path);
        (evidence(path, v.as_deref()), v)
    }

    /// A kernel file's trimmed content; `None` when missing or unreadable.
    pub(crate) fn value(&self, path: &str) -> Option<String> {
        self.root.read(path)
    }

    /// A multi-line kernel file, untrimmed; invalid UTF-8 is replaced, not rejected.
    pub(crate) fn text(&self, path: &str) -> Option<String> {
        let bytes = std::fs::read(self.root.path(path)).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub(crate) fn exists(&self, path: &str) -> bool {
        self.root.path(path).exists()
    }

    /// Entry names of a kernel directory in natural order (`state2` before `state10`);
    /// empty when it is missing.
    pub(crate) fn list(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = match std::fs::read_dir(self.root.path(dir)) {
            Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
            Err(_) => Vec::new(),
        };
        names.sort_by_key(|n| {
            let i = n.find(|c: char| c.is_ascii_digit()).unwrap_or(n.len());
            (n[..i].to_string(), n[i..].parse::<u64>().ok(), n.clone())
        });
        names
    }

    /// The `flags` of the first CPU in `/proc/cpuinfo` (x86); `None` when there is none.
    pub(crate) fn cpu_flags(&self) -> Option<Vec<String>> {
        let text = self.text("/proc/cpuinfo")?;
        let flags: Vec<String> = crate::sysinfo::cpu_flags(&text).map(str::to_string).collect();
        (!flags.is_empty()).then_some(flags)
    }

    /// The value of boot parameter `name=` (last one wins, as in the kernel), if any.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        let line = self.cmdline.as_deref()?;
        // Parameters after a bare `--` go to init, not to the kernel.
        let kernel_part = line.split(" -- ").next().unwrap_or(line);
        kernel_part.split_whitespace().filter_map(|tok| tok.split_once('=')).rev().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Whether bare boot flag `name` (no `=`) is present.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.cmdline.as_deref().is_some_and(|l| l.split(" -- ").next().unwrap_or(l).split_whitespace().any(|t| t == name))
    }

    /// Evidence for one boot parameter (`/proc/cmdline` `name=value`).
    pub(crate) fn param_evidence(&self, name: &str) -> Evidence {
        let value = match (&self.cmdline, self.param(name)) {
            (None, _) => NOT_EXPOSED.to_string(),
            (Some(_), Some(v)) => format!("{name}={v}"),
            (Some(_), None) => format!("no {name}= parameter"),
        };
        Evidence { path: "/proc/cmdline".into(), value }
    }

    /// Online CPUs that are not measured (candidates for housekeeping).
    pub(crate) fn housekeeping(&self) -> Vec<usize> {
        self.online.iter().copied().filter(|c| !self.cpus.contains(c)).collect()
    }

    /// The measured CPUs as a list string (`1-3`).
    pub(crate) fn cpus_str(&self) -> String {
        fmt_cpus(self.cpus)
    }
}

/// Evidence from an already-read value.
pub(crate) fn evidence(path: &str, value: Option<&str>) -> Evidence {
    let value = match value {
        Some(v) => shorten(v, 200),
        None => NOT_EXPOSED.to_string(),
    };
    Evidence { path: path.to_string(), value }
}

/// Keeps evidence readable: one line, at most `max` characters.
pub(crate) fn shorten(v: &str, max: usize) -> String {
    let one_line = v.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max).collect();
        s.push('…');
        s
    }
}

/// `3` or `{1,2,3}` — a shell brace expansion over CPU numbers.
pub(crate) fn shell_set(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    if v.len() == 1 {
        v[0].to_string()
    } else {
        format!("{{{}}}", v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","))
    }
}

/// CPUs as a compact list (`0-3,5`).
pub(crate) fn fmt_cpus(cpus: &[usize]) -> String {
    crate::units::cpu_list_str(cpus)
}

/// The CPU numbers in a kernel value, skipping flag words (`isolcpus=domain,managed_irq,2-3`)
/// and anything else that is not a CPU range (`nohz_full=(null)`).
pub(crate) fn cpus_in(s: &str) -> Vec<usize> {
    let mut cpus: Vec<usize> = s.split(',').filter_map(|part| parse_cpu_list(part.trim()).ok()).flatten().collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Audits the host behind `root` for measuring on `cpus` (all online CPUs when empty).
///
/// Pure with respect to its inputs: it only reads files under `root` and never fails;
/// findings come back ordered as the checks run (group by group).
#[cfg(test)]
pub(crate) fn audit(root: &SysRoot, cpus: &[usize]) -> Vec<Finding> {
    audit_host(root, &crate::sysinfo::fingerprint(root), cpus)
}

/// [`audit`] given the host fingerprint already read from `root` (as every run has).
pub(crate) fn audit_host(root: &SysRoot, host: &Host, cpus: &[usize]) -> Vec<Finding> {
    let online = host.cpus_online.clone();
    let chosen: Vec<usize> = if cpus.is_empty() {
        if online.is_empty() {
            vec![0]
        } else {
            online
        }
    } else {
        let mut v = cpus.to_vec();
        v.sort_unstable();
        v.dedup();
        v
    };
    let ctx = Ctx::new(root, host, &chosen);
    let mut out = Vec::new();
    out.extend(preempt::check(&ctx));
    out.extend(cpuidle::check(&ctx));
    out.extend(cpufreq::check(&ctx));
    out.extend(isolation::check(&ctx));
    out.extend(irq::check(&ctx));
    out.extend(sched::check(&ctx));
    out.extend(mm::check(&ctx));
    out.extend(clock::check(&ctx));
    out.extend(console::check(&ctx));
    out.extend(watchdog::check(&ctx));
    out.extend(tracing::check(&ctx));
    out.extend(mitigations::check(&ctx));
    out.extend(vm::check(&ctx));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx_with_cmdline(dir: &std::path::Path, line: &str) -> SysRoot {
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/cmdline"), line).unwrap();
        SysRoot::new(dir)
    }

    #[test]
    fn params_last_wins_and_stop_at_double_dash() {
        let d = tempfile::tempdir().unwrap();
        let root = ctx_with_cmdline(d.path(), "quiet isolcpus=1 isolcpus=2-3 -- isolcpus=9 x");
        let host = crate::sysinfo::fingerprint(&root);
        let ctx = Ctx::new(&root, &host, &[0]);
        assert_eq!(ctx.param("isolcpus"), Some("2-3"));
        assert!(ctx.flag("quiet"));
        assert!(!ctx.flag("x"));
    }

    #[test]
    fn audit_on_empty_tree_does_not_panic() {
        let d = tempfile::tempdir().unwrap();
        let f = audit(&SysRoot::new(d.path()), &[]);
        assert!(f.len() > 10);
        assert!(f.iter().all(|f| !f.why.is_empty()), "every finding explains itself");
    }

    #[test]
    fn cpus_in_skips_flags() {
        assert_eq!(cpus_in("domain,managed_irq,2-3"), vec![2, 3]);
        assert_eq!(cpus_in("nohz,1,0"), vec![0, 1]);
        assert_eq!(cpus_in("(null)"), Vec::<usize>::new());
    }

    #[test]
    fn list_is_in_natural_order() {
        let d = tempfile::tempdir().unwrap();
        for n in ["state10", "state2", "state1", "cpufreq"] {
            std::fs::create_dir_all(d.path().join("x").join(n)).unwrap();
        }
        let root = SysRoot::new(d.path());
        let host = Host::default();
        let ctx = Ctx::new(&root, &host, &[0]);
        assert_eq!(ctx.list("/x"), ["cpufreq", "state1", "state2", "state10"]);
    }

    #[test]
    fn shorten_keeps_one_line() {
        assert_eq!(shorten("a\n b\tc", 10), "a b c");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }
}
