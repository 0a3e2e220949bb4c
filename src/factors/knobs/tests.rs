use super::*;

#[test]
fn masks_and_brackets() {
    assert_eq!(hex_mask(&[0, 1]), "3");
    assert_eq!(hex_mask(&[0]), "1");
    assert_eq!(hex_mask(&[33]), "2,00000000");
    assert_eq!(bracketed("always [madvise] never"), Some("madvise"));
}

#[test]
fn every_knob_has_a_name_and_a_doctor_finding() {
    for n in names() {
        let k = find(n).unwrap();
        assert!(!k.what().is_empty() && !k.levels_help().is_empty());
    }
    assert!(find("nosuch").unwrap_err().0.contains("printk"));
}

#[test]
fn levels_are_checked() {
    let host = HostCtx { online: vec![0, 1], measured: vec![1] };
    let rt = HOST_KNOBS.iter().find(|k| k.name == "rt-runtime").unwrap();
    assert!(rt.check_level("-1", &host).unwrap_err().0.contains("refused"));
    assert!(rt.check_level("950000", &host).is_ok());
    let irq = HOST_KNOBS.iter().find(|k| k.name == "irq-affinity").unwrap();
    assert!(irq.check_level("off-measured", &host).is_ok());
    let all = HostCtx { online: vec![0, 1], measured: vec![0, 1] };
    assert!(irq.check_level("off-measured", &all).unwrap_err().0.contains("-a"));
    let p = HOST_KNOBS.iter().find(|k| k.name == "printk").unwrap();
    assert!(p.check_level("9", &host).is_err());
    assert_eq!(p.restorable("4\t4\t1\t7"), "4 4 1 7");
    assert_eq!(p.reads_after("4 4 1 7", "1"), "1 4 1 7");
    assert_eq!(host_knob("thp").unwrap().reads_after("madvise", "never"), "never");
}

#[test]
fn raw_read_backs_are_the_kernels_rendering_and_the_text() {
    let thp = host_knob("thp").unwrap();
    let b = |s: &str| s.as_bytes().to_vec();
    assert_eq!(thp.raw_after(b"always [madvise] never\n", "never"), [b("always madvise [never]\n"), b("never")]);
    assert_eq!(thp.raw_after(b"[always] madvise never", "madvise"), [b("always [madvise] never"), b("madvise")]);
    let printk = host_knob("printk").unwrap();
    assert_eq!(printk.raw_after(b"4\t4\t1\t7\n", "1"), [b("1\t4\t1\t7\n"), b("1")]);
    let tm = host_knob("timer-migration").unwrap();
    assert_eq!(tm.raw_after(b"1\n", "0"), [b("0\n"), b("0")]);
    assert_eq!(tm.raw_after(b"1\n", "0\n"), [b("0\n")]);
}

#[test]
fn a_run_setting_checks_applies_and_writes_its_level_one_way() {
    let mut o = Overrides::default();
    for (r, level) in [
        (RunSetting::Priority, "42"),
        (RunSetting::Policy, "rr"),
        (RunSetting::DmaLatency, "released"),
        (RunSetting::Load, "cpu"),
        (RunSetting::Cpu, "0"),
        (RunSetting::Interval, "250us"),
    ] {
        r.apply(level, &mut o).unwrap();
    }
    assert_eq!(
        (o.priority, o.policy, o.dma_latency, o.cpus.clone(), o.interval_ns),
        (Some(42), Some(crate::sys::sched::Policy::RoundRobin), Some(false), Some(vec![0]), Some(250_000))
    );
    assert_eq!(o.loads, Some(vec!["cpu".to_string()]));
    RunSetting::Load.apply("idle", &mut o).unwrap();
    assert_eq!(o.loads, Some(vec![]));
    assert_eq!(RunSetting::Priority.flags("42").unwrap(), ["-p", "42"]);
    assert_eq!(RunSetting::DmaLatency.flags("held").unwrap(), Vec::<String>::new());
    assert_eq!(RunSetting::Cpu.flags("0").unwrap(), ["-a", "0"]);
    // No silent fallback: a level that does not parse names the factor and the level.
    for (r, level) in [
        (RunSetting::Priority, "high"),
        (RunSetting::Policy, "batch"),
        (RunSetting::DmaLatency, "on"),
        (RunSetting::Cpu, "99999"),
        (RunSetting::Interval, "soon"),
    ] {
        let e = r.apply(level, &mut o).unwrap_err().0;
        assert!(e.starts_with(&format!("--factor {}={level}: ", r.name())), "{e}");
        assert!(r.flags(level).is_err() && r.check(level).is_err());
    }
    assert_eq!(find("cpu").unwrap().levels_help(), RunSetting::Cpu.levels_help());
}

#[test]
fn coupled_files_are_touched_and_nothing_else() {
    let irq = host_knob("irq-affinity").unwrap();
    assert!(irq.may_touch("/proc/irq/24/smp_affinity_list"));
    assert!(!irq.may_touch("/proc/irq/../../etc/smp_affinity_list") && !irq.may_touch("/proc/irq//smp_affinity_list"));
    let soft = host_knob("soft-watchdog").unwrap();
    assert!(soft.may_touch("/proc/sys/kernel/soft_watchdog") && soft.may_touch("/proc/sys/kernel/watchdog"));
    assert!(!soft.may_touch("/etc/shadow") && !host_knob("printk").unwrap().may_touch("/proc/sys/kernel/watchdog"));
    // Every coupling goes both ways: the files of one setting lock each other.
    let own = |k: &HostKnob| match k.access {
        Access::Word { path, .. } => path,
        _ => "",
    };
    for k in HOST_KNOBS {
        for c in k.coupled {
            let owner = HOST_KNOBS.iter().find(|o| own(o) == *c).unwrap();
            assert!(owner.coupled.contains(&own(k)), "{} touches {c}, but {} does not touch {}", k.name, owner.name, own(k));
        }
    }
}
