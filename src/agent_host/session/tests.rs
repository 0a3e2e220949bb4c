use super::*;

#[test]
fn a_plan_line_has_the_keys_of_the_table_in_its_order() {
    let probe = crate::model::ProbeOptions { periods_ns: vec![10_000_000], iterations: Some(5), msg_size: 8, ..Default::default() };
    let m = ProbeRun {
        duration_ns: 1_000_000_000,
        interval_ns: 1_000_000,
        priority: 95,
        policy: Policy::Fifo,
        threads: 1,
        cpus: vec![0],
        worst_k: 32,
        probe,
        trace_threshold_ns: None,
    };
    // Every optional key present: variants, periods, iterations, a size and a load.
    let line = plan_line(&m, &[0, 1], 2, 7, "sem", &["mutex".to_string()], "cpu");
    let keys: Vec<&str> = line.fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, PLAN_KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>());
}

#[test]
fn host_threads_stay_put_for_an_agent_on_another_system() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let hello = Line::new("hello").with("host", "a-board-elsewhere").with("release", release.trim());
    let before = crate::sys::sched::current_affinity().unwrap();
    let step = place_host_threads(None, &hello, &[0], false);
    assert_eq!(step.step, "host reader placement");
    assert_eq!(step.outcome, Outcome::Skipped, "{}", step.detail);
    assert!(step.detail.contains("a-board-elsewhere"), "{}", step.detail);
    assert!(step.detail.starts_with("the agent names another system"), "{}", step.detail);
    assert_eq!(crate::sys::sched::current_affinity().unwrap(), before, "not moved");
}

/// A simulator or a local QEMU (issue 64): a process of this host, but
/// its CPUs are the other system's; the step says so, nothing moves.
#[test]
fn host_threads_stay_put_for_a_target_on_this_machine_under_another_system() {
    let hello = Line::new("hello").with("os", "NuttX").with("release", "0.0.0").with("host", "");
    let before = crate::sys::sched::current_affinity().unwrap();
    let step = place_host_threads(None, &hello, &[0], true);
    assert_eq!(step.outcome, Outcome::Skipped, "{}", step.detail);
    assert_eq!(
        step.detail,
        "the target runs on this machine under another system (NuttX unversioned, host -): its CPUs are not this host's, \
         so the session and reader threads are not placed against them"
    );
    assert_eq!(crate::sys::sched::current_affinity().unwrap(), before, "not moved");
}

#[test]
fn an_unversioned_rtos_and_arm64_read_as_linux_would_name_them() {
    let host = |os: &str, release: &str, arch: &str| host_of(&Line::new("hello").with("os", os).with("release", release).with("arch", arch));
    let nuttx = host("NuttX", "0.0.0", "arm64");
    assert_eq!(nuttx.kernel_release, "NuttX unversioned");
    assert_eq!(nuttx.cpu_model, "aarch64");
    assert_eq!(host("NuttX", "12.4.0", "amd64").kernel_release, "NuttX 12.4.0");
    assert_eq!(host("NuttX", "12.4.0", "amd64").cpu_model, "x86_64");
    assert_eq!(host("NuttX", "", "sim").kernel_release, "NuttX", "no release is not a release 0");
    assert_eq!(host("NuttX", "10.0", "sim").kernel_release, "NuttX 10.0");
    // Linux's own names, and its release alone.
    let linux = host("Linux", "6.1.0-18-arm64", "aarch64");
    assert_eq!((linux.kernel_release.as_str(), linux.cpu_model.as_str()), ("6.1.0-18-arm64", "aarch64"));
    assert_eq!(host("Linux", "6.1.0", "armv7l").cpu_model, "armv7l");
}
