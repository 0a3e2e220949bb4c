//! The host fingerprint stored with every run (rule 6).
//!
//! Everything is read from files under a [`SysRoot`] (normally `/`), so tests
//! and `rtscope doctor` can point it at a fake `proc/` + `sys/` tree. A file
//! the kernel does not expose gives an empty or "unknown" value, never an
//! error: a fingerprint is always produced.

use std::path::PathBuf;

use crate::model::{CpuValue, Host, IdleState};
use crate::units::parse_cpu_list;

/// Base directory under which `proc/`, `sys/` and `boot/` are read.
#[derive(Debug, Clone)]
pub(crate) struct SysRoot(PathBuf);

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot(PathBuf::from("/"))
    }
}

impl SysRoot {
    pub(crate) fn new(base: impl Into<PathBuf>) -> SysRoot {
        SysRoot(base.into())
    }
    /// The root from `RTSCOPE_SYSROOT` (tests), else `/`.
    pub(crate) fn from_env() -> SysRoot {
        std::env::var_os("RTSCOPE_SYSROOT").map(SysRoot::new).unwrap_or_default()
    }
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel.trim_start_matches('/'))
    }
    /// File content, trimmed; None when absent or unreadable.
    pub(crate) fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok().map(|s| s.trim().to_string())
    }
    pub(crate) fn read_or_empty(&self, rel: &str) -> String {
        self.read(rel).unwrap_or_default()
    }
}

/// Read the whole fingerprint.
pub(crate) fn fingerprint(root: &SysRoot) -> Host {
    let kernel_release = root.read_or_empty("proc/sys/kernel/osrelease");
    let kernel_version = root.read_or_empty("proc/sys/kernel/version");
    let cmdline = root.read_or_empty("proc/cmdline");
    let realtime = is_realtime(root, &kernel_version);
    let (preempt_model, preempt_model_source) = preempt_model(root, realtime, &kernel_release, &kernel_version, &cmdline);
    let cpuinfo = root.read_or_empty("proc/cpuinfo");
    let cpus_online = root.read("sys/devices/system/cpu/online").and_then(|s| parse_cpu_list(&s).ok()).unwrap_or_default();
    let governors = cpus_online
        .iter()
        .map(|&cpu| CpuValue { cpu, value: root.read_or_empty(&format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")) })
        .collect();
    let virtualized = cpu_flags(&cpuinfo).any(|f| f == "hypervisor");
    let mut host = Host {
        hostname: root.read_or_empty("proc/sys/kernel/hostname"),
        kernel_release,
        kernel_version,
        realtime,
        preempt_model: preempt_model.to_string(),
        preempt_model_source,
        cmdline,
        cpu_model: cpuinfo_field(&cpuinfo, "model name").unwrap_or_default(),
        cpus_online,
        isolcpus: root.read_or_empty("sys/devices/system/cpu/isolated"),
        nohz_full: root.read("sys/devices/system/cpu/nohz_full").filter(|s| s != "(null)").unwrap_or_default(),
        clocksource: root.read_or_empty("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        governors,
        cpuidle_states: idle_states(root),
        smt: root.read("sys/devices/system/cpu/smt/control").unwrap_or_else(|| "unknown".into()),
        virtualized,
        // Judged against the measured CPUs, so the runner fills it in (doctor::audit).
        doctor: Vec::new(),
        ..Host::default()
    };
    host.set_emulated(emulation(root, &cpuinfo));
    host
}

/// QEMU without KVM (TCG, an instruction-set emulator), from inside the
/// guest: QEMU's own CPU model name (`QEMU Virtual CPU version 2.5+`, what
/// TCG's default CPU shows) with no trace of an accelerator (KVM gives its
/// guests the `kvm-clock` clocksource). Returns the evidence, or None: a
/// board, another hypervisor, or a guest whose CPU model is a real one's
/// name (`-cpu host` under KVM; a named model under TCG is not told).
pub(crate) fn emulation(root: &SysRoot, cpuinfo: &str) -> Option<String> {
    let model = cpuinfo_field(cpuinfo, "model name").filter(|m| m.starts_with("QEMU "))?;
    let clocks = root.read_or_empty("sys/devices/system/clocksource/clocksource0/available_clocksource");
    if clocks.split_whitespace().any(|c| c == "kvm-clock") {
        return None;
    }
    let vendor = root.read_or_empty("sys/class/dmi/id/sys_vendor");
    let dmi = if vendor.is_empty() { String::new() } else { format!(", DMI vendor '{vendor}'") };
    Some(format!("CPU '{model}'{dmi} and no kvm-clock clocksource: QEMU without KVM (TCG emulation)"))
}

/// First value of `key` in /proc/cpuinfo text.
pub(crate) fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The flags of the first CPU in /proc/cpuinfo text.
pub(crate) fn cpu_flags(cpuinfo: &str) -> impl Iterator<Item = &str> {
    cpuinfo.lines().find(|l| l.starts_with("flags")).and_then(|l| l.split_once(':')).map(|(_, v)| v).unwrap_or("").split_whitespace()
}

/// PREEMPT_RT: /sys/kernel/realtime reads 1, or uname -v says PREEMPT_RT.
pub(crate) fn is_realtime(root: &SysRoot, kernel_version: &str) -> bool {
    root.read("sys/kernel/realtime").as_deref() == Some("1") || kernel_version.split_whitespace().any(|w| w == "PREEMPT_RT")
}

/// The preemption model and where it was read, best source first:
/// PREEMPT_RT; the PREEMPT_DYNAMIC current mode in debugfs
/// (`sched/preempt` shows e.g. `none voluntary (full) lazy`); a `preempt=`
/// boot parameter; the kernel config in /boot; the uname -v banner.
pub(crate) fn preempt_model(root: &SysRoot, realtime: bool, release: &str, version: &str, cmdline: &str) -> (&'static str, String) {
    if realtime {
        return ("rt", "/sys/kernel/realtime or uname -v PREEMPT_RT".into());
    }
    if let Some(s) = root.read("sys/kernel/debug/sched/preempt") {
        if let Some(cur) = s.split_whitespace().find(|w| w.starts_with('(')) {
            if let Some(m) = model_name(cur.trim_matches(|c| c == '(' || c == ')')) {
                return (m, "/sys/kernel/debug/sched/preempt".into());
            }
        }
    }
    let dynamic = version.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC");
    if dynamic {
        if let Some(p) = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")) {
            if let Some(m) = model_name(p) {
                return (m, "/proc/cmdline preempt=".into());
            }
        }
    }
    if let Some((cfg, cfg_src)) = kernel_config(root, release) {
        let on = |k: &str| cfg.lines().any(|l| l.strip_prefix(k) == Some("=y"));
        let m = if on("CONFIG_PREEMPT_RT") {
            Some("rt")
        } else if on("CONFIG_PREEMPT_LAZY") {
            Some("lazy")
        } else if on("CONFIG_PREEMPT") {
            Some("full")
        } else if on("CONFIG_PREEMPT_VOLUNTARY") {
            Some("voluntary")
        } else if on("CONFIG_PREEMPT_NONE") {
            Some("none")
        } else {
            None
        };
        if let Some(m) = m {
            let src = format!("{cfg_src}{}", if dynamic { " (PREEMPT_DYNAMIC default)" } else { "" });
            return (m, src);
        }
    }
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_LAZY") {
        return ("lazy", "uname -v".into());
    }
    if words.contains(&"PREEMPT") && !dynamic {
        return ("full", "uname -v".into());
    }
    ("unknown", "not exposed (mount debugfs for sched/preempt)".into())
}

/// The kernel's build configuration and where it was found:
/// /boot/config-RELEASE, else /proc/config.gz (CONFIG_IKCONFIG_PROC).
pub(crate) fn kernel_config(root: &SysRoot, release: &str) -> Option<(String, String)> {
    let boot = format!("boot/config-{release}");
    if let Some(c) = root.read(&boot) {
        return Some((c, format!("/{boot}")));
    }
    let f = std::fs::File::open(root.path("proc/config.gz")).ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text).ok()?;
    Some((text, "/proc/config.gz".into()))
}

fn model_name(s: &str) -> Option<&'static str> {
    Some(match s {
        "none" => "none",
        "voluntary" => "voluntary",
        "full" => "full",
        "lazy" => "lazy",
        "rt" => "rt",
        _ => return None,
    })
}

fn idle_states(root: &SysRoot) -> Vec<IdleState> {
    let mut out = Vec::new();
    for i in 0.. {
        let dir = format!("sys/devices/system/cpu/cpu0/cpuidle/state{i}");
        let Some(name) = root.read(&format!("{dir}/name")) else { break };
        out.push(IdleState {
            name,
            exit_latency_us: root.read(&format!("{dir}/latency")).and_then(|s| s.parse().ok()).unwrap_or(0),
            disabled: root.read(&format!("{dir}/disable")).as_deref() == Some("1"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        d
    }

    #[test]
    fn rt_kernel_is_detected() {
        let d = tree(&[("sys/kernel/realtime", "1\n"), ("proc/sys/kernel/version", "#1 SMP PREEMPT_RT Debian")]);
        let h = fingerprint(&SysRoot::new(d.path()));
        assert!(h.realtime);
        assert_eq!(h.preempt_model, "rt");
    }

    #[test]
    fn dynamic_mode_from_debugfs_and_cmdline() {
        let d = tree(&[("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC"), ("sys/kernel/debug/sched/preempt", "none (voluntary) full lazy\n")]);
        let h = fingerprint(&SysRoot::new(d.path()));
        assert!(!h.realtime);
        assert_eq!(h.preempt_model, "voluntary");
        let d = tree(&[("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC"), ("proc/cmdline", "quiet preempt=full")]);
        assert_eq!(fingerprint(&SysRoot::new(d.path())).preempt_model, "full");
    }

    #[test]
    fn config_file_and_fallbacks() {
        let d = tree(&[
            ("proc/sys/kernel/osrelease", "6.1.0-x"),
            ("proc/sys/kernel/version", "#1 SMP"),
            ("boot/config-6.1.0-x", "CONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n"),
        ]);
        assert_eq!(fingerprint(&SysRoot::new(d.path())).preempt_model, "voluntary");
        // /proc/config.gz when /boot has no config.
        let d = tree(&[("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC")]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT=y\n").unwrap();
        std::fs::write(d.path().join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        let h = fingerprint(&SysRoot::new(d.path()));
        assert_eq!((h.preempt_model.as_str(), h.preempt_model_source.as_str()), ("full", "/proc/config.gz (PREEMPT_DYNAMIC default)"));
        let d = tree(&[("proc/sys/kernel/version", "#1 SMP PREEMPT Tue")]);
        assert_eq!(fingerprint(&SysRoot::new(d.path())).preempt_model, "full");
        let d = tree(&[("proc/sys/kernel/version", "#1 SMP")]);
        assert_eq!(fingerprint(&SysRoot::new(d.path())).preempt_model, "unknown");
    }

    #[test]
    fn cpus_idle_states_and_flags() {
        let d = tree(&[
            ("sys/devices/system/cpu/online", "0-1\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n"),
            ("sys/devices/system/cpu/cpu0/cpuidle/state0/name", "POLL"),
            ("sys/devices/system/cpu/cpu0/cpuidle/state0/latency", "0"),
            ("sys/devices/system/cpu/cpu0/cpuidle/state1/name", "C6"),
            ("sys/devices/system/cpu/cpu0/cpuidle/state1/latency", "133"),
            ("sys/devices/system/cpu/cpu0/cpuidle/state1/disable", "1"),
            ("proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU @ 2GHz\nflags\t\t: fpu tsc hypervisor\n"),
        ]);
        let h = fingerprint(&SysRoot::new(d.path()));
        assert_eq!(h.cpus_online, vec![0, 1]);
        assert_eq!(h.governors[0].value, "powersave");
        assert_eq!(h.governors[1].value, "");
        assert_eq!(h.cpuidle_states.len(), 2);
        assert_eq!(h.cpuidle_states[1].exit_latency_us, 133);
        assert!(h.cpuidle_states[1].disabled);
        assert_eq!(h.cpu_model, "Fake CPU @ 2GHz");
        assert!(h.virtualized);
        assert!(!h.emulated);
        assert_eq!(h.smt, "unknown");
    }

    /// Files as read in a kernel-lab x86_64 guest under QEMU 7.2 TCG, and
    /// the same guest under KVM (kvm-clock offered).
    #[test]
    fn qemu_tcg_is_emulated_kvm_is_not() {
        let cpuinfo = "processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\nflags\t\t: fpu tsc hypervisor lahf_lm svm\n";
        let tcg = tree(&[
            ("proc/cpuinfo", cpuinfo),
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
            ("sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm \n"),
        ]);
        let h = fingerprint(&SysRoot::new(tcg.path()));
        assert!(h.emulated && h.virtualized, "{h:?}");
        assert!(h.emulated_by.contains("QEMU Virtual CPU") && h.emulated_by.contains("TCG"), "{}", h.emulated_by);
        let kvm = tree(&[
            ("proc/cpuinfo", cpuinfo),
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
            ("sys/devices/system/clocksource/clocksource0/available_clocksource", "kvm-clock tsc hpet acpi_pm \n"),
        ]);
        let h = fingerprint(&SysRoot::new(kvm.path()));
        assert!(!h.emulated && h.emulated_by.is_empty(), "{h:?}");
        // A board: nothing says QEMU.
        let board = tree(&[("proc/cpuinfo", "processor\t: 0\nmodel name\t: ARMv8 Processor rev 4 (v8l)\n")]);
        assert!(!fingerprint(&SysRoot::new(board.path())).emulated);
    }

    #[test]
    fn exec_targets_running_qemu_without_kvm_are_emulated() {
        use crate::model::exec_emulation;
        assert!(exec_emulation("lab/kernel-lab --arch arm64 --kernel rt --agent --icount 1").unwrap().contains("kernel-lab"));
        assert!(exec_emulation("/usr/bin/qemu-system-aarch64 -M virt -cpu cortex-a53 -kernel x").unwrap().contains("qemu-system-aarch64"));
        assert_eq!(exec_emulation("lab/kernel-lab --accel kvm --agent"), None);
        assert_eq!(exec_emulation("qemu-system-x86_64 -enable-kvm -cpu host"), None);
        assert_eq!(exec_emulation("qemu-system-x86_64 -machine q35,accel=kvm"), None);
        assert_eq!(exec_emulation("qemu-system-x86_64 -accel hvf"), None);
        assert!(exec_emulation("qemu-system-x86_64 -accel tcg").is_some());
        assert_eq!(exec_emulation("ssh board ./rtscope-agent"), None);
        assert_eq!(exec_emulation("./rtscope-agent --max-threads 4"), None);
        use crate::model::exec_virtual_clock;
        assert!(exec_virtual_clock("lab/kernel-lab --arch arm64 --kernel rt --agent --icount 1"));
        assert!(exec_virtual_clock("qemu-system-aarch64 -M virt -icount shift=1,sleep=off"));
        assert!(!exec_virtual_clock("lab/kernel-lab --arch arm64 --kernel rt --agent"));
        assert!(!exec_virtual_clock("./rtscope-agent --icountdown"));
    }
}
