//! Integration tests for `rtscope doctor`: the real binary against fake `proc/`, `sys/` and
//! `dev/` trees (`--root` / `RTSCOPE_SYSROOT`). Each finding is checked both ways — starting
//! from a well-tuned PREEMPT_RT host and breaking one setting at a time — plus the JSON shape,
//! the terminal grouping, bad `--cpus` input and a run on the real host.

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A fake host tree under a temporary directory.
struct Host {
    dir: TempDir,
}

impl Host {
    fn empty() -> Host {
        Host { dir: tempfile::tempdir().unwrap() }
    }

    /// A 4-CPU bare-metal PREEMPT_RT host tuned for measuring on CPUs 2-3.
    fn tuned() -> Host {
        let h = Host::empty();
        h.set("/sys/devices/system/cpu/online", "0-3\n");
        h.set("/sys/kernel/realtime", "1\n");
        h.set("/proc/sys/kernel/version", "#1 SMP PREEMPT_RT Mon Jan  5 10:00:00 UTC 2026\n");
        h.set(
            "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet isolcpus=domain,managed_irq,2-3 \
             nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1\n",
        );
        h.set("/sys/devices/system/cpu/isolated", "2-3\n");
        h.set("/sys/devices/system/cpu/nohz_full", "2-3\n");
        h.set("/sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n");
        h.set("/sys/devices/system/cpu/cpuidle/current_governor", "menu\n");
        for cpu in 0..4 {
            for (i, (name, lat, dis)) in [("POLL", 0, 0), ("C1", 2, 0), ("C6", 133, 1)].iter().enumerate() {
                let d = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{i}");
                h.set(&format!("{d}/name"), &format!("{name}\n"));
                h.set(&format!("{d}/latency"), &format!("{lat}\n"));
                h.set(&format!("{d}/disable"), &format!("{dis}\n"));
            }
            h.set(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"), "performance\n");
        }
        h.set("/dev/cpu_dma_latency", "");
        h.set("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
        h.set("/sys/devices/system/cpu/smt/active", "0\n");
        h.set("/sys/devices/system/cpu/smt/control", "off\n");
        h.set("/proc/1/comm", "systemd\n");
        h.set("/proc/245/comm", "sshd\n");
        h.set(
            "/proc/interrupts",
            "           CPU0       CPU1       CPU2       CPU3       \n  \
               0:         40          0          0          0   IO-APIC   2-edge      timer\n  \
              30:      90000        100          0          0   PCI-MSI 524288-edge      eth0\n  \
              31:         12          0          5          0   PCI-MSI 524289-edge      ahci\n \
             LOC:      10000      10000      10000      10000   Local timer interrupts\n",
        );
        h.set("/proc/irq/0/smp_affinity_list", "0-3\n");
        h.set("/proc/irq/30/smp_affinity_list", "0-1\n");
        h.set("/proc/irq/31/smp_affinity_list", "0-3\n");
        h.set("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
        h.set("/proc/sys/kernel/sched_rt_period_us", "1000000\n");
        h.set("/proc/sys/kernel/timer_migration", "0\n");
        h.set("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
        h.set("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        h.set("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n");
        h.set("/sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm \n");
        h.set("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc msr constant_tsc nonstop_tsc tsc_known_freq\n\n");
        h.set("/proc/sys/kernel/printk", "3\t4\t1\t3\n");
        h.set("/proc/sys/kernel/nmi_watchdog", "0\n");
        h.set("/proc/sys/kernel/watchdog", "0\n");
        h.set("/proc/sys/kernel/soft_watchdog", "0\n");
        h.set("/sys/devices/system/cpu/vulnerabilities/meltdown", "Not affected\n");
        h.set("/sys/devices/system/cpu/vulnerabilities/spectre_v2", "Mitigation: Enhanced / Automatic IBRS\n");
        h.set("/sys/class/dmi/id/product_name", "PowerEdge R650\n");
        h.set("/sys/class/dmi/id/sys_vendor", "Dell Inc.\n");
        h
    }

    fn path(&self, p: &str) -> std::path::PathBuf {
        self.dir.path().join(p.trim_start_matches('/'))
    }

    fn set(&self, p: &str, content: &str) {
        let path = self.path(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn rm(&self, p: &str) {
        std::fs::remove_file(self.path(p)).unwrap();
    }

    /// Runs `rtscope doctor --json --root <dir> <extra>` and returns the parsed document.
    fn json(&self, extra: &[&str]) -> Value {
        serde_json::from_str(&self.raw_json(extra)).expect("doctor --json prints JSON")
    }

    /// What `rtscope doctor --json --root <dir> <extra>` prints, the tree's
    /// temporary path written as `<root>`.
    fn raw_json(&self, extra: &[&str]) -> String {
        let out = Command::cargo_bin("rtscope").unwrap().args(["doctor", "--json", "--root"]).arg(self.dir.path()).args(extra).output().unwrap();
        assert!(out.status.success(), "doctor failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().replace(self.dir.path().to_str().unwrap(), "<root>")
    }

    /// The finding `id` when measuring `cpus`.
    fn finding(&self, id: &str, cpus: &str) -> Finding {
        let doc = self.json(&["--cpus", cpus]);
        let f = doc["findings"].as_array().unwrap().iter().find(|f| f["id"] == id).unwrap_or_else(|| panic!("no finding {id} in {doc:#}")).clone();
        Finding(f)
    }
}

struct Finding(Value);

impl Finding {
    fn severity(&self) -> &str {
        self.0["severity"].as_str().unwrap()
    }
    fn title(&self) -> &str {
        self.0["title"].as_str().unwrap()
    }
    fn fix(&self) -> &str {
        self.0["fix"].as_str().unwrap_or("")
    }
    fn evidence(&self, path: &str) -> String {
        self.0["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["path"] == path)
            .map(|e| e["value"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(" | ")
    }
    /// Asserts severity, with the whole finding in the message.
    fn is(&self, sev: &str) -> &Finding {
        assert_eq!(self.severity(), sev, "{:#}", self.0);
        self
    }
    fn title_has(&self, s: &str) -> &Finding {
        assert!(self.title().contains(s), "title {:?} lacks {s:?}", self.title());
        self
    }
    fn fix_has(&self, s: &str) -> &Finding {
        assert!(self.fix().contains(s), "fix {:?} lacks {s:?}", self.fix());
        self
    }
}

#[test]
fn preempt_rt_vs_voluntary_vs_dynamic_full() {
    let h = Host::tuned();
    h.finding("preempt.model", "2-3").is("ok").title_has("PREEMPT_RT");

    h.rm("/sys/kernel/realtime");
    h.set("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Mon Jan 5\n");
    h.set("/proc/cmdline", "root=/dev/sda1 preempt=voluntary\n");
    let f = h.finding("preempt.model", "2-3");
    f.is("bad").title_has("voluntary").fix_has("preempt=full").fix_has("PREEMPT_RT");
    assert_eq!(f.evidence("/proc/cmdline"), "preempt=voluntary");

    h.set("/sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
    let f = h.finding("preempt.model", "2-3");
    f.is("warn").title_has("full");
    assert_eq!(f.evidence("/sys/kernel/debug/sched/preempt"), "none voluntary (full) lazy");

    h.rm("/sys/kernel/debug/sched/preempt");
    h.set("/proc/sys/kernel/version", "#1 SMP Mon Jan 5\n");
    h.set("/proc/cmdline", "root=/dev/sda1\n");
    h.finding("preempt.model", "2-3").is("bad").title_has("none-or-voluntary");
}

#[test]
fn cpuidle_deep_state_disabled_vs_enabled_vs_no_driver() {
    let h = Host::tuned();
    h.finding("cpuidle.states", "2-3").is("ok").title_has("intel_idle");

    h.set("/sys/devices/system/cpu/cpu3/cpuidle/state2/disable", "0\n");
    let f = h.finding("cpuidle.states", "2-3");
    f.is("warn").title_has("CPUs 3 ").title_has("C6").title_has("133 µs");
    f.fix_has("/sys/devices/system/cpu/cpu3/cpuidle/state2/disable");
    assert!(f.evidence("/sys/devices/system/cpu/cpu3/cpuidle/state2").contains("latency=133us"));
    // CPU 3 is not measured: no warning.
    h.finding("cpuidle.states", "2").is("ok");

    let h = Host::tuned();
    h.set("/sys/devices/system/cpu/cpuidle/current_driver", "none\n");
    for cpu in 0..4 {
        std::fs::remove_dir_all(h.path(&format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle"))).unwrap();
    }
    h.finding("cpuidle.states", "2-3").is("ok").title_has("No cpuidle driver");
}

#[test]
fn cpu_dma_latency_present_vs_missing() {
    let h = Host::tuned();
    h.finding("cpuidle.pm_qos", "2-3").is("ok");
    h.rm("/dev/cpu_dma_latency");
    let f = h.finding("cpuidle.pm_qos", "2-3");
    f.is("warn");
    assert_eq!(f.evidence("/dev/cpu_dma_latency"), "missing");
}

#[test]
fn governor_performance_vs_powersave_vs_absent() {
    let h = Host::tuned();
    h.finding("cpufreq.governor", "2-3").is("ok");
    h.set("/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor", "powersave\n");
    let f = h.finding("cpufreq.governor", "2-3");
    f.is("warn").title_has("powersave on CPUs 3");
    f.fix_has("/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor");
    // Only CPU 2 measured: fine.
    h.finding("cpufreq.governor", "2").is("ok");
    for cpu in 0..4 {
        std::fs::remove_dir_all(h.path(&format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq"))).unwrap();
    }
    h.finding("cpufreq.governor", "2-3").is("info").title_has("No cpufreq");
}

#[test]
fn boost_off_vs_on() {
    let h = Host::tuned();
    h.finding("cpufreq.boost", "2-3").is("ok");
    h.set("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
    h.finding("cpufreq.boost", "2-3").is("info").title_has("enabled").fix_has("no_turbo");
    h.rm("/sys/devices/system/cpu/intel_pstate/no_turbo");
    h.set("/sys/devices/system/cpu/cpufreq/boost", "1\n");
    h.finding("cpufreq.boost", "2-3").is("info").fix_has("echo 0 > /sys/devices/system/cpu/cpufreq/boost");
}

#[test]
fn isolcpus_covering_cpus_vs_not() {
    let h = Host::tuned();
    h.finding("isolation.isolcpus", "2-3").is("ok");
    let f = h.finding("isolation.isolcpus", "1-2");
    f.is("warn").title_has("CPUs 1 are not isolated (only 2 are)");
    f.fix_has("isolcpus=domain,managed_irq,1-2").fix_has("irqaffinity=0,3");
    // Only on the command line (sysfs file empty) still counts.
    h.set("/sys/devices/system/cpu/isolated", "\n");
    h.finding("isolation.isolcpus", "2-3").is("ok");
    // Nothing isolated at all, measuring every CPU: the fix says to keep one for housekeeping.
    h.set("/proc/cmdline", "root=/dev/sda1\n");
    h.finding("isolation.isolcpus", "0-3").is("warn").title_has("0-3 are not isolated").fix_has("leave at least one");
}

#[test]
fn nohz_full_and_rcu_nocbs_covering_vs_not() {
    let h = Host::tuned();
    h.finding("isolation.nohz_full", "2-3").is("ok");
    h.finding("isolation.rcu_nocbs", "2-3").is("ok");
    h.finding("isolation.nohz_full", "1").is("info").fix_has("nohz_full=1");
    h.finding("isolation.rcu_nocbs", "1").is("info").fix_has("rcu_nocbs=1");
    // nohz_full implies rcu_nocbs.
    h.set("/proc/cmdline", "root=/dev/sda1 nohz_full=2-3\n");
    h.finding("isolation.rcu_nocbs", "2-3").is("ok");
    // Kernel without NO_HZ_FULL and no boot parameter.
    h.rm("/sys/devices/system/cpu/nohz_full");
    h.set("/proc/cmdline", "root=/dev/sda1\n");
    let f = h.finding("isolation.nohz_full", "2-3");
    f.is("info");
    assert_eq!(f.evidence("/sys/devices/system/cpu/nohz_full"), "(not exposed by this kernel)");
}

#[test]
fn smt_off_vs_on() {
    let h = Host::tuned();
    h.finding("cpu.smt", "2-3").is("ok");
    h.set("/sys/devices/system/cpu/smt/active", "1\n");
    h.finding("cpu.smt", "2-3").is("warn").fix_has("smt/control");
}

#[test]
fn irqbalance_running_vs_not() {
    let h = Host::tuned();
    let f = h.finding("irq.irqbalance", "2-3");
    f.is("ok");
    assert_eq!(f.evidence("/proc/*/comm"), "2 processes, none named irqbalance");
    h.set("/proc/812/comm", "irqbalance\n");
    let f = h.finding("irq.irqbalance", "2-3");
    f.is("warn").fix_has("IRQBALANCE_BANNED_CPULIST=2-3");
    assert_eq!(f.evidence("/proc/812/comm"), "irqbalance");
}

#[test]
fn busy_irq_affinity_outside_vs_overlapping() {
    let h = Host::tuned();
    // eth0 (90100 interrupts) is on 0-1; ahci (17) may hit 2-3 but is not busy.
    h.finding("irq.affinity", "2-3").is("ok");
    h.set("/proc/irq/30/smp_affinity_list", "0-3\n");
    let f = h.finding("irq.affinity", "2-3");
    f.is("warn").title_has("1 busy IRQ(s)").title_has("30 (eth0)");
    f.fix_has("for i in 30; do echo 0-1 > /proc/irq/$i/smp_affinity_list; done");
    assert_eq!(f.evidence("/proc/irq/30/smp_affinity_list"), "0-3 (eth0, 90100 interrupts since boot, 0 on CPUs 2-3)");
    // Measuring CPU 1, where eth0 already fired 100 times.
    h.set("/proc/irq/30/smp_affinity_list", "0-1\n");
    let f = h.finding("irq.affinity", "1");
    f.is("warn");
    assert!(f.evidence("/proc/irq/30/smp_affinity_list").contains("100 on CPUs 1"));
}

#[test]
fn rt_throttling_off_vs_on() {
    let h = Host::tuned();
    h.finding("sched.rt_throttling", "2-3").is("ok");
    h.set("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
    h.finding("sched.rt_throttling", "2-3").is("info").title_has("950000 µs of every 1000000 µs (95%)").fix_has("kernel.sched_rt_runtime_us=-1");
}

#[test]
fn deadline_bandwidth_hrtick_and_root_domain() {
    let h = Host::tuned();
    // Throttling off is admission control off for SCHED_DEADLINE.
    h.finding("sched.dl_bandwidth", "2-3").is("info").fix_has("sched_rt_runtime_us=950000");
    h.set("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
    h.finding("sched.dl_bandwidth", "2-3").is("info").title_has("up to 95% of each CPU");
    h.set("/proc/sys/kernel/sched_rt_runtime_us", "0\n");
    h.finding("sched.dl_bandwidth", "2-3").is("warn").title_has("every SCHED_DEADLINE task is refused");
    // No debugfs in the fake root: unknown, with the mount as the fix.
    h.finding("sched.hrtick", "2-3").is("info").fix_has("mount -t debugfs");
    h.set("/sys/kernel/debug/sched/features", "GENTLE_FAIR_SLEEPERS NO_HRTICK NO_HRTICK_DL\n");
    h.finding("sched.hrtick", "2-3").is("info").fix_has("echo HRTICK");
    h.set("/sys/kernel/debug/sched/features", "GENTLE_FAIR_SLEEPERS HRTICK NO_HRTICK_DL\n");
    h.finding("sched.hrtick", "2-3").is("ok");
    // The tuned host isolates 2-3: outside the deadline tasks' root domain.
    h.finding("sched.dl_root_domain", "2-3").is("info").title_has("CPUs 2-3 are isolated").fix_has("cpuset");
    h.set("/sys/devices/system/cpu/isolated", "\n");
    h.finding("sched.dl_root_domain", "2-3").is("ok");
}

#[test]
fn timer_migration_off_vs_on() {
    let h = Host::tuned();
    h.finding("sched.timer_migration", "2-3").is("ok");
    h.set("/proc/sys/kernel/timer_migration", "1\n");
    h.finding("sched.timer_migration", "2-3").is("info").fix_has("kernel.timer_migration=0");
}

#[test]
fn thp_never_vs_always() {
    let h = Host::tuned();
    h.finding("mm.thp", "2-3").is("ok").title_has("never");
    h.set("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
    h.finding("mm.thp", "2-3").is("warn").title_has("always").fix_has("transparent_hugepage=never");
    h.rm("/sys/kernel/mm/transparent_hugepage/enabled");
    h.finding("mm.thp", "2-3").is("info").title_has("not exposed");
}

#[test]
fn swap_off_vs_on() {
    let h = Host::tuned();
    h.finding("mm.swap", "2-3").is("ok");
    h.set("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sda2  partition\t8388604\t\t0\t\t-2\n");
    h.finding("mm.swap", "2-3").is("warn").title_has("/dev/sda2").fix_has("swapoff -a");
}

#[test]
fn clocksource_tsc_vs_hpet_vs_kvm_clock() {
    let h = Host::tuned();
    h.finding("clock.clocksource", "2-3").is("ok").title_has("tsc");
    h.set("/sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n");
    h.finding("clock.clocksource", "2-3").is("bad").title_has("hpet").fix_has("echo tsc >");
    h.set("/sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n");
    h.finding("clock.clocksource", "2-3").is("info").title_has("paravirtual");
}

#[test]
fn tsc_invariant_vs_not_vs_declared_unstable() {
    let h = Host::tuned();
    h.finding("clock.tsc", "2-3").is("ok").title_has("invariant");
    h.set("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc msr\n");
    h.finding("clock.tsc", "2-3").is("warn").title_has("not invariant");
    h.set("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n");
    h.set("/proc/cmdline", "root=/dev/sda1 tsc=unstable\n");
    let f = h.finding("clock.tsc", "2-3");
    f.is("warn").title_has("tsc=unstable");
    assert_eq!(f.evidence("/proc/cmdline"), "tsc=unstable");
}

#[test]
fn console_loglevel_quiet_vs_debug() {
    let h = Host::tuned();
    h.finding("console.loglevel", "2-3").is("ok").title_has("level is 3");
    h.set("/proc/sys/kernel/printk", "7\t4\t1\t7\n");
    h.set("/proc/cmdline", "root=/dev/sda1 console=ttyS0,115200\n");
    h.finding("console.loglevel", "2-3").is("warn").title_has("level 0–6").title_has("(serial)").fix_has("kernel.printk");
}

#[test]
fn watchdogs_off_vs_on() {
    let h = Host::tuned();
    h.finding("watchdog.nmi", "2-3").is("ok");
    h.finding("watchdog.soft", "2-3").is("ok");
    h.set("/proc/sys/kernel/nmi_watchdog", "1\n");
    h.set("/proc/sys/kernel/watchdog", "1\n");
    h.set("/proc/sys/kernel/soft_watchdog", "1\n");
    h.finding("watchdog.nmi", "2-3").is("warn").fix_has("nmi_watchdog=0");
    h.finding("watchdog.soft", "2-3").is("info").fix_has("echo 0-1 > /proc/sys/kernel/watchdog_cpumask");
}

#[test]
fn mitigations_active_vs_off() {
    let h = Host::tuned();
    let f = h.finding("cpu.mitigations", "2-3");
    f.is("info").title_has("1 CPU vulnerability mitigation(s) active: spectre_v2").fix_has("mitigations=off");
    h.set("/sys/devices/system/cpu/vulnerabilities/spectre_v2", "Vulnerable\n");
    h.set("/proc/cmdline", "root=/dev/sda1 mitigations=off\n");
    let f = h.finding("cpu.mitigations", "2-3");
    f.is("info").title_has("Mitigations off: vulnerable to spectre_v2");
    assert_eq!(f.fix(), "");
}

#[test]
fn bare_metal_vs_vm() {
    let h = Host::tuned();
    h.finding("vm.hypervisor", "2-3").is("ok");
    h.set("/sys/class/dmi/id/product_name", "KVM\n");
    h.finding("vm.hypervisor", "2-3").is("warn").title_has("(KVM)");
    h.set("/sys/class/dmi/id/product_name", "PowerEdge R650\n");
    h.set("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc hypervisor\n");
    h.finding("vm.hypervisor", "2-3").is("warn").title_has("unknown hypervisor");
    h.set("/sys/hypervisor/type", "xen\n");
    h.finding("vm.hypervisor", "2-3").is("warn").title_has("(xen)");
}

#[test]
fn json_has_documented_shape() {
    let doc = Host::tuned().json(&["--cpus", "2-3"]);
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["cpus"], serde_json::json!([2, 3]));
    let findings = doc["findings"].as_array().unwrap();
    let ids: Vec<&str> = findings.iter().map(|f| f["id"].as_str().unwrap()).collect();
    for id in [
        "preempt.model",
        "cpuidle.states",
        "cpuidle.pm_qos",
        "cpufreq.governor",
        "cpufreq.boost",
        "isolation.isolcpus",
        "isolation.nohz_full",
        "isolation.rcu_nocbs",
        "cpu.smt",
        "irq.irqbalance",
        "irq.affinity",
        "sched.rt_throttling",
        "sched.timer_migration",
        "sched.dl_bandwidth",
        "sched.hrtick",
        "sched.dl_root_domain",
        "mm.thp",
        "mm.swap",
        "clock.clocksource",
        "clock.tsc",
        "console.loglevel",
        "watchdog.nmi",
        "watchdog.soft",
        "cpu.mitigations",
        "vm.hypervisor",
    ] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{id} exactly once in {ids:?}");
    }
    for f in findings {
        let obj = f.as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys.len(), 6, "{keys:?}");
        assert!(["ok", "info", "warn", "bad"].contains(&f["severity"].as_str().unwrap()));
        assert!(!f["title"].as_str().unwrap().is_empty());
        assert!(!f["why"].as_str().unwrap().is_empty());
        assert!(f["fix"].is_null() || f["fix"].is_string());
        for e in f["evidence"].as_array().unwrap() {
            assert!(e["path"].as_str().unwrap().starts_with('/'), "{e}");
            assert!(e["value"].is_string());
        }
    }
    // The tuned host has nothing worse than info.
    let bad: Vec<&Value> = findings.iter().filter(|f| f["severity"] == "warn" || f["severity"] == "bad").collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn empty_tree_reports_not_exposed_without_failing() {
    let h = Host::empty();
    let doc = h.json(&[]);
    assert_eq!(doc["cpus"], serde_json::json!([0]));
    let f = doc["findings"].as_array().unwrap();
    // The same findings on every host, whatever it exposes: a tree without
    // tracefs (a fresh boot has it unmounted) says the tracers are unknown.
    assert_eq!(f.len(), 27);
    let swaps = f.iter().find(|f| f["id"] == "mm.swap").unwrap();
    assert_eq!(swaps["severity"], "info");
    assert_eq!(swaps["evidence"][0]["value"], "(not exposed by this kernel)");
    let tracers = f.iter().find(|f| f["id"] == "tracing.tracers").expect("tracing.tracers without tracefs");
    assert_eq!(tracers["severity"], "info");
    assert!(tracers["title"].as_str().unwrap().contains("unknown") && tracers["fix"].as_str().unwrap().contains("mount -t tracefs"), "{tracers}");
}

#[test]
fn garbage_content_does_not_panic() {
    let h = Host::tuned();
    for p in [
        "/proc/interrupts",
        "/proc/cmdline",
        "/proc/sys/kernel/printk",
        "/proc/cpuinfo",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/proc/sys/kernel/sched_rt_runtime_us",
        "/sys/devices/system/cpu/cpu2/cpuidle/state1/latency",
        "/sys/kernel/debug/sched/preempt",
    ] {
        h.set(p, "\u{0}\u{ff}]]] [[ ( -- : 99999999999999999999999 x-y,,\n");
    }
    std::fs::write(h.path("/proc/swaps"), [0xff, 0xfe, b'\n', 0x80]).unwrap();
    let doc = h.json(&["--cpus", "2"]);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 27);
}

#[test]
fn text_listing_groups_by_severity() {
    let h = Host::tuned();
    h.set("/sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n"); // bad
    h.set("/sys/devices/system/cpu/smt/active", "1\n"); // warn
    let out = Command::cargo_bin("rtscope")
        .unwrap()
        .args(["doctor", "--cpus", "2-3"])
        .env("RTSCOPE_SYSROOT", h.dir.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} missing in:\n{text}"));
    assert!(pos("BAD") < pos("WARN"));
    assert!(pos("WARN") < pos("INFO"));
    assert!(pos("INFO") < pos("\nOK"));
    assert!(pos("[bad ] clock.clocksource") < pos("[warn] cpu.smt"));
    // Piped: 80 columns, a long evidence line continues under itself.
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("/sys/devices/system/clocksource/clocksource0/current_clocksource = hpet"), "{text}");
    assert!(text.contains("fix: `echo tsc >"));
    assert!(text.contains("1 bad, 1 warn, "), "{text}");
}

#[test]
fn cpus_outside_online_is_exit_2_naming_flag_and_online_cpus() {
    let h = Host::tuned();
    let out = Command::cargo_bin("rtscope").unwrap().args(["doctor", "--cpus", "999", "--root"]).arg(h.dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--cpus") && err.contains("999") && err.contains("online CPUs are 0-3"), "{err}");
    assert!(out.stdout.is_empty());

    let out = Command::cargo_bin("rtscope").unwrap().args(["doctor", "--cpus", "1-x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cpus"));
}

#[test]
fn real_host_run_succeeds() {
    let out = Command::cargo_bin("rtscope").unwrap().args(["doctor"]).env_remove("RTSCOPE_SYSROOT").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("preempt.model") && text.contains(" ok\n"), "{text}");
    let out = Command::cargo_bin("rtscope").unwrap().args(["doctor", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["findings"].as_array().unwrap().len(), 27);
}

/// Golden: the doctor JSON of the tuned host, byte for byte (findings,
/// evidence, severities and the host fingerprint keep their shape).
#[test]
fn doctor_json_golden() {
    let h = Host::tuned();
    insta::assert_snapshot!("golden_doctor_json", h.raw_json(&["--cpus", "2-3"]));
}

/// `-a`/`--affinity` (as in `rtscope run`) names the same CPUs as `--cpus`.
#[test]
fn doctor_takes_run_s_affinity_flag() {
    let h = Host::tuned();
    let by_cpus = h.raw_json(&["--cpus", "2-3"]);
    assert_eq!(h.raw_json(&["-a", "2-3"]), by_cpus);
    assert_eq!(h.raw_json(&["--affinity", "2-3"]), by_cpus);
    assert_ne!(h.raw_json(&["-a", "0-1"]), by_cpus, "the CPU set changes the isolation findings");
}
