use super::super::parse::parse_trace;
use super::super::report;
use super::*;

/// Captured shape of the test's latency killer: the probe thread (pid 500, FIFO 50) is
/// woken by the local timer while rtscope-hog (FIFO 99) spins; it runs only when the
/// hog sleeps, 2 ms later.
const HOG: &str = "\
 rtscope-hog-400     [001] d..2.   100.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-hog next_pid=400 next_prio=0
     rtscope-hog-400     [001] d.h..   100.000100: local_timer_entry: vector=236
     rtscope-hog-400     [001] d.h..   100.000102: hrtimer_expire_entry: hrtimer=0000 function=hrtimer_wakeup now=100000101000
     rtscope-hog-400     [001] d.h2.   100.000103: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
     rtscope-hog-400     [001] d.h..   100.000104: hrtimer_expire_exit: hrtimer=0000
     rtscope-hog-400     [001] d.h..   100.000106: local_timer_exit: vector=236
     rtscope-hog-400     [001] d.h..   100.001000: irq_handler_entry: irq=36 name=virtio1-req.0
     rtscope-hog-400     [001] d.h..   100.001010: irq_handler_exit: irq=36 ret=handled
     rtscope-hog-400     [001] ..s..   100.001011: softirq_entry: vec=4 [action=BLOCK]
     rtscope-hog-400     [001] ..s..   100.001031: softirq_exit: vec=4 [action=BLOCK]
     rtscope-hog-400     [001] d..2.   100.002000: sched_switch: prev_comm=rtscope-hog prev_pid=400 prev_prio=0 prev_state=S ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";

#[test]
fn names_the_hog_with_its_time_and_priority() {
    let ev = parse_trace(HOG);
    // Due at 100.000100 (timer fires on time), read the clock at 100.002004.
    let w = attribute(&ev, 1, 100_000_100_000, 100_002_004_000, Some(500), 0);
    assert!(w.complete);
    assert_eq!(w.events, 10);
    assert_eq!(w.wakeup_after_ns, Some(Nanos(3_000)));
    let top = &w.culprits[0];
    assert_eq!((top.kind.as_str(), top.name.as_str(), top.pid, top.prio), ("task", "rtscope-hog", Some(400), Some(0)));
    // 100.000106 → 100.001000, 100.001010 → 100.001011, 100.001031 → 100.002000.
    assert_eq!(top.duration_ns, Nanos(894_000 + 1_000 + 969_000));
    assert_eq!(top.count, 3);
    let find = |k: &str| w.culprits.iter().find(|c| c.kind == k).unwrap_or_else(|| panic!("{k}: {w:#?}"));
    assert_eq!(find("vector").duration_ns, Nanos(6_000));
    assert_eq!(find("vector").name, "local_timer");
    assert_eq!((find("irq").irq, find("irq").duration_ns), (Some(36), Nanos(10_000)));
    assert_eq!((find("softirq").name.as_str(), find("softirq").duration_ns), ("BLOCK", Nanos(20_000)));
    assert_eq!(find("self").duration_ns, Nanos(4_000));
    let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
    assert_eq!(total, 1_904_000, "durations add up to the window");
}

#[test]
fn idle_cpu_that_wakes_late_is_unexplained() {
    let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h..    50.000900: local_timer_entry: vector=236
          <idle>-0       [001] d.h2.    50.000902: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
          <idle>-0       [001] d.h..    50.000905: local_timer_exit: vector=236
          <idle>-0       [001] d..2.    50.000907: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";
    let w = attribute(&parse_trace(t), 1, 50_000_100_000, 50_000_910_000, Some(500), 0);
    assert_eq!(w.culprits[0].kind, "unexplained");
    assert_eq!(w.culprits[0].name, UNEXPLAINED);
    // 50.000100 → 50.000900 and 50.000905 → 50.000907.
    assert_eq!(w.culprits[0].duration_ns, Nanos(802_000));
    assert_eq!(w.culprits[0].count, 2);
}

#[test]
fn the_part_before_the_trace_is_untraced_not_guessed() {
    let ev = parse_trace(HOG);
    // Window from 99.999 s: the buffer starts at 100.000000.
    let w = attribute(&ev, 1, 99_999_000_000, 100_000_050_000, Some(500), 0);
    assert!(!w.complete);
    assert_eq!(w.culprits[0].kind, "untraced");
    assert_eq!(w.culprits[0].duration_ns, Nanos(1_000_000));
    assert_eq!(w.culprits[1].name, "rtscope-hog");
    assert_eq!(w.culprits[1].duration_ns, Nanos(50_000));
    // Tracing was switched back on at 100.001600 (after reading another snapshot): the
    // events before it are only used for the state, the time before it is untraced.
    let w = attribute(&ev, 1, 100_001_000_000, 100_002_004_000, Some(500), 100_001_600_000);
    assert!(!w.complete);
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("untraced", Nanos(600_000)));
    assert_eq!((w.culprits[1].name.as_str(), w.culprits[1].duration_ns), ("rtscope-hog", Nanos(400_000)));
    let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
    assert_eq!(total, 1_004_000);
}

/// The default event set on a kernel that drops the switch out of idle
/// (this VM's 6.18): the hog's switch-in is missing and no event falls
/// inside the window; the hog's wake-up onto this CPU while it idled,
/// and a tick interrupting the hog, still name it.
#[test]
fn hog_named_without_its_switch_in() {
    let t = "\
      rtscope-m0-500     [001] d..2.    70.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] dNh4.    70.000100: sched_wakeup: comm=rtscope-hog pid=400 prio=0 target_cpu=001
";
    let w = attribute(&parse_trace(t), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("rtscope-hog", Nanos(1_800_000)));
    // A wake-up of a task queued on another CPU, or of the measuring thread itself, does not.
    let other = t.replace("target_cpu=001", "target_cpu=000");
    let w = attribute(&parse_trace(&other), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
    assert_eq!(w.culprits[0].kind, "unexplained");
    let own = t.replace("comm=rtscope-hog pid=400", "comm=rtscope-m0 pid=500");
    let w = attribute(&parse_trace(&own), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
    assert_eq!(w.culprits[0].kind, "unexplained");
    // A tick that interrupts the hog before the window names it too.
    let tick = format!("{other}         rtscope-hog-400     [001] d.h..    70.000150: local_timer_entry: vector=236\n         rtscope-hog-400     [001] d.h..    70.000152: local_timer_exit: vector=236\n");
    let w = attribute(&parse_trace(&tick), 1, 70_000_200_000, 70_002_000_000, Some(500), 0);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].pid), ("rtscope-hog", Some(400)));
}

/// The kernel filter drops the measuring thread's switch-in (the hog's switch-out with
/// it), so the first sign of the thread is an interrupt on its line just before its
/// clock read: the 2 ms before are still the hog's, not the thread's own (a loaded run
/// once named rtscope-m0 for 1.93 ms of its own 1.93 ms window).
#[test]
fn filtered_switch_in_leaves_the_time_before_with_the_last_holder() {
    let filtered: String = HOG.lines().filter(|l| !l.contains("next_comm=rtscope-m0")).map(|l| format!("{l}\n")).collect();
    let t = format!(
            "{filtered}      rtscope-m0-500     [001] d.h..   100.002001: irq_handler_entry: irq=36 name=virtio1-req.0\n      rtscope-m0-500     [001] d.h..   100.002002: irq_handler_exit: irq=36 ret=handled\n"
        );
    let w = attribute(&parse_trace(&t), 1, 100_000_100_000, 100_002_004_000, Some(500), 0);
    let top = &w.culprits[0];
    assert_eq!((top.kind.as_str(), top.name.as_str()), ("task", "rtscope-hog"), "{w:#?}");
    // As with the switch recorded, plus the millisecond up to the interrupt.
    assert_eq!(top.duration_ns, Nanos(894_000 + 1_000 + 970_000));
    // After the interrupt the thread is on the CPU: the last 2 µs are its own.
    let own = w.culprits.iter().find(|c| c.kind == "self").unwrap();
    assert_eq!((own.name.as_str(), own.duration_ns), ("rtscope-m0", Nanos(2_000)));
    let total: u64 = w.culprits.iter().map(|c| c.duration_ns.0).sum();
    assert_eq!(total, 1_904_000);
    // Seen from the idle task, the same gap is unexplained (a woken thread waited).
    let idle = "\
      rtscope-m0-500     [001] d..2.    70.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
      rtscope-m0-500     [001] d.h..    70.001000: local_timer_entry: vector=236
      rtscope-m0-500     [001] d.h..    70.001002: local_timer_exit: vector=236
";
    let w = attribute(&parse_trace(idle), 1, 70_000_100_000, 70_001_010_000, Some(500), 0);
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(900_000)), "{w:#?}");
}

/// The idle states of this VM's cpuidle driver (haltpoll): state 0 polls, state 1 halts.
fn haltpoll_states() -> [IdleState; 2] {
    [IdleState { name: "POLL".into(), exit_latency_ns: 0 }, IdleState { name: "haltpoll".into(), exit_latency_ns: 1_000 }]
}

#[test]
fn idle_time_in_a_traced_state_is_named_by_it() {
    let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..1.    50.000050: cpu_idle: state=1 cpu_id=1
          <idle>-0       [001] d..1.    50.000900: cpu_idle: state=4294967295 cpu_id=1
          <idle>-0       [001] d.h..    50.000901: local_timer_entry: vector=236
          <idle>-0       [001] d.h2.    50.000902: sched_wakeup: comm=rtscope-m0 pid=500 prio=49 target_cpu=001
          <idle>-0       [001] d.h..    50.000905: local_timer_exit: vector=236
          <idle>-0       [001] d..2.    50.000907: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";
    let ev = parse_trace(t);
    let states = haltpoll_states();
    let ctx = Context { self_pid: Some(500), idle_states: &states, ..Default::default() };
    let w = attribute_in(&ev, 1, 50_000_100_000, 50_000_910_000, &ctx);
    let top = &w.culprits[0];
    assert_eq!((top.kind.as_str(), top.name.as_str(), top.duration_ns, top.exit_latency_ns), ("idle", "haltpoll", Nanos(800_000), Some(Nanos(1_000))));
    // Only the idle time outside the state stays unexplained: 900 → 901 and 905 → 907.
    let u = w.culprits.iter().find(|c| c.kind == "unexplained").expect("unexplained rest");
    assert_eq!(u.duration_ns, Nanos(3_000));
    // Without the states (no sysfs cpuidle) or with the entry before the trace, the idle time is unexplained.
    let w = attribute_in(&ev, 1, 50_000_100_000, 50_000_910_000, &Context { self_pid: Some(500), ..Default::default() });
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(803_000)));
    let w = attribute_in(&ev[2..], 1, 50_000_100_000, 50_000_910_000, &ctx);
    assert!(w.culprits.iter().all(|c| c.kind != "idle"), "{w:#?}");
    // Another CPU's idle event changes nothing here.
    let other = parse_trace(&t.replace("cpu_id=1", "cpu_id=0"));
    let w = attribute_in(&other, 1, 50_000_100_000, 50_000_910_000, &ctx);
    assert!(w.culprits.iter().all(|c| c.kind != "idle"), "{w:#?}");
}

#[test]
fn samples_go_under_the_culprit_of_their_time_grouped_by_path() {
    use super::super::stacks::Sample;
    let ev = parse_trace(HOG);
    let s = |t: u64, tid: u32, f: &[&str]| Sample { time_ns: t, tid, frames: f.iter().map(|x| x.to_string()).collect() };
    let read = ["read_zero", "vfs_read", "ksys_read"];
    let samples = [
        s(99_999_900_000, 400, &read),
        s(100_000_500_000, 400, &read),
        s(100_001_005_000, 400, &["vring_interrupt", "vp_vring_interrupt"]),
        s(100_001_500_000, 400, &read),
        s(100_001_800_000, 400, &[]),
    ];
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 500_000)), ..Default::default() };
    let w = attribute_in(&ev, 1, 100_000_100_000, 100_002_004_000, &ctx);
    let st = w.stacks.as_ref().expect("stacks");
    assert_eq!((st.samples, st.period_ns), (4, Nanos(500_000)));
    let hog = &w.culprits[0];
    assert_eq!(hog.name, "rtscope-hog");
    assert_eq!(hog.paths.len(), 2, "{hog:#?}");
    assert_eq!((hog.paths[0].frames.as_slice(), hog.paths[0].samples, hog.paths[0].share), (&read.map(String::from)[..], 2, 0.5));
    assert_eq!((hog.paths[1].frames.as_slice(), hog.paths[1].share), (&["[user] rtscope-hog".to_string()][..], 0.25));
    let irq = w.culprits.iter().find(|c| c.kind == "irq").unwrap();
    assert_eq!(irq.paths[0].frames[0], "vring_interrupt");
    // The 99.9999 s sample is before the window, for gaps only: the next was due 500 µs
    // after it and came 100 µs later (a gap); the others came within the period.
    assert_eq!(st.gaps.len(), 1, "{st:#?}");
    assert_eq!((st.gaps[0].start_after_ns, st.gaps[0].length_ns), (Nanos(300_000), Nanos(100_000)));
    assert_eq!(st.gaps[0].ended_by, read.map(String::from).to_vec());
    assert_eq!(report::culprit(hog), "rtscope-hog (pid 400, rt prio 99) 1864.0us: read_zero ← vfs_read ← ksys_read");
}

/// An ordinary task in user code is current; the CPU takes its samples at the rate,
/// then none for 24.75 ms and no event either, then one in user code: the CPU did
/// not run (user code runs with interrupts on), the host's time, not the task's.
const SH: &str = "      sh-300     [001] d..2.    80.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=4 prev_state=S ==> next_comm=sh next_pid=300 next_prio=120\n";

fn sh_samples(gap_end: &[&str]) -> Vec<super::super::stacks::Sample> {
    use super::super::stacks::Sample;
    let mut v: Vec<Sample> = (0..25).map(|k| Sample { time_ns: 79_999_000_000 + k * 250_000, tid: 300, frames: Vec::new() }).collect();
    v.push(Sample { time_ns: 80_030_000_000, tid: 300, frames: gap_end.iter().map(|f| f.to_string()).collect() });
    v.push(Sample { time_ns: 80_030_250_000, tid: 300, frames: Vec::new() });
    v.push(Sample { time_ns: 80_030_500_000, tid: 300, frames: Vec::new() });
    v
}

#[test]
fn time_with_no_sample_and_no_event_is_the_hosts_not_the_tasks() {
    let ev = parse_trace(SH);
    let samples = sh_samples(&[]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    let host = &w.culprits[0];
    assert_eq!((host.kind.as_str(), host.name.as_str(), host.duration_ns), ("host", HOST, Nanos(24_750_000)), "{w:#?}");
    // The task keeps what its samples cover: 80.001 → 80.00525 and 80.030 → 80.031.
    let sh = &w.culprits[1];
    assert_eq!((sh.name.as_str(), sh.duration_ns, sh.count), ("sh", Nanos(5_250_000), 2));
    let st = w.stacks.as_ref().unwrap();
    assert_eq!((st.samples, st.expected), (20, 120));
    assert_eq!(st.gaps.len(), 1);
    assert!(st.gaps[0].not_running);
    assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000, "durations add up to the window");
    assert_eq!(report::culprit_in(host, &w), "host / not running 24750.0us (no sample, no event; 20 of 120 samples)");
    // On bare metal it is named so.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { virtualized: false, ..ctx });
    assert_eq!(w.culprits[0].name, NOT_RUNNING);
}

#[test]
fn a_gap_ended_in_kernel_code_is_interrupts_off_unless_steal_grew() {
    let ev = parse_trace(SH);
    let samples = sh_samples(&["_raw_spin_unlock_irqrestore", "ext4_finish_bio"]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
    let g = &w.stacks.as_ref().unwrap().gaps;
    assert!(g.len() == 1 && !g[0].not_running && g[0].ended_by[0] == "_raw_spin_unlock_irqrestore");
    // The CPU's steal time grew over the window: the host did not run it.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { steal_ns: Some(20_000_000), ..ctx });
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("host", Nanos(24_750_000)));
    assert_eq!(w.steal_ns, Some(Nanos(20_000_000)));
    assert!(report::culprit_in(&w.culprits[0], &w).contains("the host did not run this vCPU (steal +20000us)"));
    // Steal that did not grow is no evidence.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { steal_ns: Some(0), ..ctx });
    assert_eq!(w.culprits[0].kind, "task");
}

#[test]
fn an_event_in_a_gap_shows_the_cpu_ran_then() {
    // An interrupt at 80.017 on the task's line: the CPU ran; the stretches before and
    // after it with neither sample nor event are the host's.
    let t = format!("{SH}      sh-300     [001] d.h..    80.017000: irq_handler_entry: irq=36 name=virtio1-req.0\n      sh-300     [001] d.h..    80.017010: irq_handler_exit: irq=36 ret=handled\n");
    let ev = parse_trace(&t);
    let samples = sh_samples(&[]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    let host = w.culprits.iter().find(|c| c.kind == "host").unwrap();
    // 80.00525 → 80.017 and 80.01701 → 80.030.
    assert_eq!((host.duration_ns, host.count), (Nanos(11_750_000 + 12_990_000), 2), "{w:#?}");
    assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000);
}

/// The sampling clock does not tick in idle: a gap while the idle task held the CPU
/// is idle, neither interrupts off nor the host, and the window is idle time.
#[test]
fn a_gap_over_idle_time_is_idle() {
    use super::super::stacks::Sample;
    let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d.h..    50.000900: irq_handler_entry: irq=36 name=virtio1-req.0
          <idle>-0       [001] d.h..    50.000905: irq_handler_exit: irq=36 ret=handled
";
    let samples = [
        Sample { time_ns: 49_999_990_000, tid: 500, frames: vec!["x".into()] },
        Sample { time_ns: 50_000_908_000, tid: 0, frames: vec!["default_idle".into()] },
    ];
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
    let w = attribute_in(&parse_trace(t), 1, 50_000_100_000, 50_000_910_000, &ctx);
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("unexplained", Nanos(805_000)), "{w:#?}");
    assert!(w.stacks.as_ref().unwrap().gaps.is_empty(), "{w:#?}");
    assert!(w.culprits.iter().all(|c| c.kind != "host"));
}

#[test]
fn empty_trace_is_all_untraced() {
    let w = attribute(&[], 1, 10, 5, None, 0);
    assert_eq!(w.end_ns, Nanos(10));
    assert!(w.culprits.is_empty());
    let w = attribute(&[], 1, 10, 20, None, 0);
    assert!(!w.complete);
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].duration_ns), ("untraced", Nanos(10)));
}

/// Issue 60: on a VM whose host shows no steal (QEMU TCG), a gap that ended in kernel code
/// where interrupts do not come back on is the host stopping the vCPU, or interrupts off
/// that came back elsewhere: the evidence cannot tell, so the time is charged to no task.
/// On bare metal, or ended where interrupts are turned on, it stays the task's.
#[test]
fn a_gap_ended_in_kernel_code_on_a_vm_without_steal_is_no_tasks() {
    let ev = parse_trace(SH);
    let samples = sh_samples(&["clear_page_erms", "get_page_from_freelist"]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    let top = &w.culprits[0];
    assert_eq!((top.kind.as_str(), top.name.as_str(), top.duration_ns), ("host", HOST_OR_OFF, Nanos(24_750_000)), "{w:#?}");
    assert_eq!((w.culprits[1].name.as_str(), w.culprits[1].duration_ns), ("sh", Nanos(5_250_000)));
    let g = &w.stacks.as_ref().unwrap().gaps;
    assert!(g.len() == 1 && g[0].not_running && g[0].maybe_interrupts_off, "{g:#?}");
    assert_eq!(report::culprit_in(top, &w), "not running (host, or interrupts off) 24750.0us (no sample, no event; 20 of 120 samples)");
    // The gap's lines are the host culprit's: none is listed as interrupts off.
    assert_eq!(report::gaps_text(&w, true), "");
    // On bare metal there is no host: interrupts were off, the task's time.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { virtualized: false, ..ctx });
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
    assert!(!w.stacks.as_ref().unwrap().gaps[0].not_running);
    // Ended where interrupts come back on (finish_task_switch enables them inline): the task's.
    for leaf in ["finish_task_switch.isra.0", "_raw_spin_unlock_irq", "handle_softirqs"] {
        let samples = sh_samples(&[leaf, "schedule"]);
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { stacks: Some((&samples, 250_000)), ..ctx });
        assert_eq!(w.culprits[0].name, "sh", "{leaf}: {w:#?}");
    }
}

/// A hard interrupt handler runs with interrupts off: a quiet stretch inside one stays the
/// handler's, whatever the gap ended in; the task's quiet stretch around it goes.
#[test]
fn a_quiet_stretch_in_a_hard_irq_stays_the_handlers() {
    let t = format!(
        "{SH}      sh-300     [001] d.h..    80.010000: irq_handler_entry: irq=36 name=virtio1-req.0\n      sh-300     [001] d.h..    80.020000: irq_handler_exit: irq=36 ret=handled\n"
    );
    let ev = parse_trace(&t);
    let samples = sh_samples(&["ext4_es_lookup_extent"]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    let irq = w.culprits.iter().find(|c| c.kind == "irq").unwrap();
    assert_eq!(irq.duration_ns, Nanos(10_000_000), "{w:#?}");
    let host = w.culprits.iter().find(|c| c.kind == "host").unwrap();
    // 80.00525 → 80.010 and 80.020 → 80.030.
    assert_eq!((host.name.as_str(), host.duration_ns), (HOST_OR_OFF, Nanos(4_750_000 + 10_000_000)));
    assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000);
}

#[test]
fn interrupt_enable_sites_are_told_from_other_kernel_code() {
    for leaf in [
        "_raw_spin_unlock_irqrestore",
        "_raw_spin_unlock_irq",
        "_raw_write_unlock_irq",
        "__uart_port_unlock_irqrestore",
        "arch_local_irq_restore",
        "native_irq_enable",
        "trace_hardirqs_on",
        "finish_task_switch.isra.0",
        "__do_softirq",
        "pv_native_safe_halt",
        "default_idle",
    ] {
        assert!(super::irq_enable_site(leaf), "{leaf}");
    }
    for leaf in ["clear_page_erms", "copy_user_enhanced_fast_string", "_raw_spin_lock", "ext4_finish_bio", "rcu_core", "__softirqentry_text_start"] {
        assert!(!super::irq_enable_site(leaf), "{leaf}");
    }
}

/// A busy other vCPU (tid 700, user code, a sample every 250 µs) from 79.990 s that
/// takes none from 80.00625 to `resumed`, then goes on in `user` code as `tid`.
fn witness(resumed: u64, tid: u32, user: bool, busy_before: bool) -> Vec<super::super::stacks::Witnessed> {
    use super::super::stacks::Witnessed;
    let step = if busy_before { 250_000 } else { 2_000_000 };
    let mut v: Vec<Witnessed> =
        (0..).map(|k| 79_990_000_000 + k * step).take_while(|t| *t <= 80_006_000_000).map(|t| Witnessed { time_ns: t, tid: 700, user: true }).collect();
    v.push(Witnessed { time_ns: resumed, tid, user });
    v.extend((1..12).map(|k| Witnessed { time_ns: resumed + k * 250_000, tid, user: true }));
    v
}

/// Issue 60: the host stops the whole VM while this CPU has interrupts off (a softirq
/// under a lock): its gap ends where interrupts come back on, which alone reads as the
/// task's. A busy other vCPU stopped over the same stretch and came back in user code
/// (where its clock would have fired): the overlap is the host's, the rest (interrupts
/// still off after the VM ran again) stays the task's.
#[test]
fn a_stop_of_the_whole_vm_seen_by_a_busy_witness_is_the_hosts_whatever_ended_the_gap() {
    let ev = parse_trace(SH);
    let samples = sh_samples(&["_raw_spin_unlock_irqrestore", "rcu_core"]);
    let seen = [witness(80_028_000_000, 700, true, true)];
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), witnesses: &seen, ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    let top = &w.culprits[0];
    // 80.00625 (the witness's due sample) → 80.028 (it ran again).
    assert_eq!((top.kind.as_str(), top.name.as_str(), top.duration_ns), ("host", HOST, Nanos(21_750_000)), "{w:#?}");
    // sh: its samples' 5.25 ms, 80.00525 → 80.00625 and 80.028 → 80.030 with interrupts off.
    assert_eq!((w.culprits[1].name.as_str(), w.culprits[1].duration_ns), ("sh", Nanos(8_250_000)), "{w:#?}");
    assert_eq!(w.culprits.iter().map(|c| c.duration_ns.0).sum::<u64>(), 30_000_000, "durations add up to the window");
    let g = &w.stacks.as_ref().unwrap().gaps;
    assert!(g.len() == 1 && g[0].not_running && !g[0].maybe_interrupts_off && g[0].witnessed_ns == Some(Nanos(21_750_000)), "{g:#?}");
    assert!(report::culprit_in(top, &w).contains("the host stopped the whole VM: a busy vCPU took none either for 21750us"), "{}", report::culprit_in(top, &w));
    // On bare metal there is no host to witness: interrupts off, the task's.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { virtualized: false, ..ctx });
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
}

/// What is not a witness of the host: a vCPU that sampled through the gap (the VM ran),
/// one whose gap ended in kernel code (its own interrupts may have been off), one that
/// switched tasks across its gap or was mostly idle before it (an idle CPU takes no
/// sample), and the idle task itself.
#[test]
fn a_witness_counts_only_busy_and_stopped_in_user_code() {
    use super::super::stacks::Witnessed;
    let ev = parse_trace(SH);
    let samples = sh_samples(&["_raw_spin_unlock_irqrestore", "rcu_core"]);
    let through: Vec<Witnessed> = (0..170).map(|k| Witnessed { time_ns: 79_990_000_000 + k * 250_000, tid: 700, user: true }).collect();
    let mut idle_task = witness(80_028_000_000, 0, true, true);
    idle_task.iter_mut().for_each(|s| s.tid = 0);
    for (why, seen) in [
        ("ran through", through),
        ("ended in kernel code", witness(80_028_000_000, 700, false, true)),
        ("another task after", witness(80_028_000_000, 701, true, true)),
        ("idle before", witness(80_028_000_000, 700, true, false)),
        ("the idle task", idle_task),
    ] {
        let seen = [seen];
        let ctx =
            Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), witnesses: &seen, ..Default::default() };
        let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
        assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{why}: {w:#?}");
        assert!(w.stacks.as_ref().unwrap().gaps[0].witnessed_ns.is_none(), "{why}");
    }
}

/// A vCPU resumed with an IPI pending takes it first: the overdue sampling clock fires
/// when the IPI's return to user mode turns interrupts on (`exit_to_user_mode_prepare ←
/// irqentry_exit_to_user_mode`, seen in the kernel lab under a loaded host). The IPI
/// came from user mode, where interrupts are on, so the user task did not hold the
/// clock off: the host did, or the handler; on a VM that is no task's. A syscall's way
/// back (no IRQ entry) keeps the interrupt-enable rule.
#[test]
fn a_gap_ended_on_an_interrupts_way_back_to_user_mode_is_no_tasks() {
    let ev = parse_trace(SH);
    let samples = sh_samples(&["exit_to_user_mode_prepare", "irqentry_exit_to_user_mode", "asm_sysvec_reschedule_ipi"]);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), (HOST_OR_OFF, Nanos(24_750_000)), "{w:#?}");
    let samples = sh_samples(&["exit_to_user_mode_prepare", "syscall_exit_to_user_mode", "do_syscall_64"]);
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { stacks: Some((&samples, 250_000)), ..ctx });
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
}

/// An interrupt from user mode whose handler turned interrupts on for softirqs: the
/// clock, held off by the handler only, fires there (`handle_softirqs ← __irq_exit_rcu ←
/// sysvec_apic_timer_interrupt ← asm_sysvec_apic_timer_interrupt`, nothing under the
/// entry). Before the interrupt the CPU ran user code with interrupts on: on a VM the
/// gap is no task's. The same site under an interrupt of kernel code (the interrupted
/// frames follow the entry) keeps the interrupt-enable rule, and bare metal keeps it.
#[test]
fn a_gap_ended_in_softirqs_of_an_interrupt_from_user_mode_is_no_tasks() {
    let ev = parse_trace(SH);
    let from_user = ["handle_softirqs", "__irq_exit_rcu", "sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt"];
    let samples = sh_samples(&from_user);
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), (HOST_OR_OFF, Nanos(24_750_000)), "{w:#?}");
    assert_eq!((w.culprits[1].name.as_str(), w.culprits[1].duration_ns), ("sh", Nanos(5_250_000)));
    let from_kernel: Vec<&str> = from_user.iter().copied().chain(["clear_user_rep_good", "read_zero", "vfs_read"]).collect();
    let samples = sh_samples(&from_kernel);
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { stacks: Some((&samples, 250_000)), ..ctx });
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
    let samples = sh_samples(&from_user);
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &Context { stacks: Some((&samples, 250_000)), virtualized: false, ..ctx });
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), ("sh", Nanos(30_000_000)), "{w:#?}");
}

/// A host stop that the late thread's own timer ended: the thread woke at the window's end
/// before the sampling clock fired, so no sample ends the gap (in the kernel lab, a 20 ms
/// stop read `sh 20.7 ms`, 0 of 82 samples, no gap). The stretch from the last sample's
/// due time to the window's end is a gap that ended unseen: on a VM no task's; a short
/// one (under a millisecond) is the clock about to fire, not a gap.
#[test]
fn a_gap_still_open_at_the_windows_end_is_no_tasks_on_a_vm() {
    use super::super::stacks::{Sample, OPEN_AT_END};
    let ev = parse_trace(SH);
    let samples: Vec<Sample> = (0..25).map(|k| Sample { time_ns: 79_999_000_000 + k * 250_000, tid: 300, frames: Vec::new() }).collect();
    let ctx = Context { self_pid: Some(500), stacks: Some((&samples, 250_000)), virtualized: true, steal_ns: Some(0), ..Default::default() };
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_031_000_000, &ctx);
    assert_eq!((w.culprits[0].name.as_str(), w.culprits[0].duration_ns), (HOST_OR_OFF, Nanos(25_750_000)), "{w:#?}");
    let g = &w.stacks.as_ref().unwrap().gaps;
    assert!(g.len() == 1 && g[0].ended_by == vec![OPEN_AT_END.to_string()] && g[0].not_running, "{g:#?}");
    // The clock due 0.9 ms before the end has not fired yet: no gap, the task's.
    let w = attribute_in(&ev, 1, 80_001_000_000, 80_006_150_000, &ctx);
    assert_eq!((w.culprits[0].name.as_str(), w.stacks.as_ref().unwrap().gaps.len()), ("sh", 0), "{w:#?}");
}

/// A polling idle state runs the idle loop with interrupts on: the clock ticks there (its
/// samples land in `poll_idle`), and a timer due in it fires at once. A haltpoll guest
/// polls before it halts; on this VM a window read `idle in POLL 6691us` with 1 of 26
/// samples and steal +10 ms: the host stopped the polling vCPU. Its gaps are judged as a
/// task's (here: steal grew, the host's); the same gaps in a halting state stay idle.
#[test]
fn a_gap_in_a_polling_idle_state_is_not_idle() {
    use super::super::stacks::Sample;
    let t = "\
          <idle>-0       [001] d..2.    50.000000: sched_switch: prev_comm=rtscope-m0 prev_pid=500 prev_prio=49 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..1.    50.000050: cpu_idle: state=0 cpu_id=1
          <idle>-0       [001] d..1.    50.006850: cpu_idle: state=4294967295 cpu_id=1
          <idle>-0       [001] d..2.    50.006860: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtscope-m0 next_pid=500 next_prio=49
";
    let ev = parse_trace(t);
    let states = haltpoll_states();
    let samples = [
        Sample { time_ns: 49_999_990_000, tid: 500, frames: vec!["x".into()] },
        Sample { time_ns: 50_003_000_000, tid: 0, frames: vec!["poll_idle".into(), "cpuidle_enter_state".into()] },
    ];
    let ctx = Context {
        self_pid: Some(500),
        idle_states: &states,
        stacks: Some((&samples, 250_000)),
        virtualized: true,
        steal_ns: Some(10_000_000),
        ..Default::default()
    };
    let w = attribute_in(&ev, 1, 50_000_100_000, 50_006_900_000, &ctx);
    let top = &w.culprits[0];
    assert_eq!((top.kind.as_str(), top.name.as_str()), ("host", HOST), "{w:#?}");
    assert!(top.duration_ns.0 > 6_000_000, "{w:#?}");
    let poll: u64 = w.culprits.iter().filter(|c| c.kind == "idle").map(|c| c.duration_ns.0).sum();
    assert!(poll < 1_000_000, "{w:#?}");
    assert_eq!(w.stacks.as_ref().unwrap().gaps.len(), 2, "{w:#?}");
    // In the halting state the clock does not tick: the same window is idle time.
    let halt = parse_trace(&t.replace("state=0 cpu_id=1", "state=1 cpu_id=1"));
    let w = attribute_in(&halt, 1, 50_000_100_000, 50_006_900_000, &ctx);
    assert_eq!((w.culprits[0].kind.as_str(), w.culprits[0].name.as_str()), ("idle", "haltpoll"), "{w:#?}");
    assert!(w.stacks.as_ref().unwrap().gaps.is_empty(), "{w:#?}");
}
