//! The kernel lab's traced runs (`--trace-threshold` inside a guest): what rtscope's
//! code-path explanation says where the answer is known. A printk writer in the stock
//! and rt guests (the ring scan of `devkmsg_open`, issue 55's finding); the host stopping
//! the whole guest (issue 60: host time, no task charged); a FIFO-99 hog on the measured
//! guest CPU (the hog, its kernel path, the priority advice). One guest at a time
//! (tests/common/lab.rs); needs what tests/kernel_lab.rs needs.

mod common;

use common::have;
use common::lab::*;

use std::process::Command;

/// Issue 44, the deck's printk finding as the lab really shows it. A writer
/// of kernel messages that opens /dev/kmsg for each one (`echo … >/dev/kmsg`
/// in a shell loop, as the deck's test did), on the measured CPU of a guest
/// on the virtual instruction clock, after the printk ring has wrapped: every
/// open scans the ring for its first valid record (devkmsg_open →
/// prb_first_valid_seq → _prb_read_valid). On the stock kernel that scan has
/// no preemption point and the timer thread waits for it: the traced late
/// samples must name that code path, whatever the console log level (it is
/// 1 here: nothing is printed; the console write itself costs no virtual
/// time in QEMU, docs/kernel-lab.md "The printk finding"). On PREEMPT_RT the
/// timer thread preempts the writer: no late sample names the scan.
#[test]
fn stock_guest_names_the_printk_ring_scan_of_a_kmsg_writer() {
    let Some(_guard) = lab_guest() else { return };
    let (txt, traced, named, max) = kmsg_writer_run("stock");
    assert!(traced > 0, "no late sample was traced: {txt}");
    assert!(named * 2 >= traced, "{named} of {traced} traced late samples name the ring scan: {txt}");
    // Advice lines wrap at 80 columns (run's output is a file): compare them unwrapped.
    let one = common::unwrapped(&txt);
    assert!(one.contains("advice: opening /dev/kmsg (devkmsg_open by sh in ") && one.contains("cannot preempt"), "{txt}");
    let (rt_txt, rt_traced, rt_named, rt_max) = kmsg_writer_run("rt");
    eprintln!("kernel_lab: kmsg writer: stock max {max} ns, {named} of {traced} traced name the scan; rt max {rt_max} ns, {rt_named} of {rt_traced}");
    assert_eq!(rt_named, 0, "the rt guest's late samples name the ring scan: {rt_txt}");
    assert!(!common::unwrapped(&rt_txt).contains("advice: opening /dev/kmsg"), "{rt_txt}");
    assert!(rt_max < max, "rt max {rt_max} ns vs stock {max} ns: {rt_txt}");
}

/// One guest of [`stock_guest_names_the_printk_ring_scan_of_a_kmsg_writer`]:
/// the terminal output, the traced late samples, how many of them name the
/// ring scan, and the run's max (ns).
fn kmsg_writer_run(kernel: &str) -> (String, usize, usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("kmsg.sh");
    std::fs::write(
        &script,
        "echo 1 >/proc/sys/kernel/printk\n\
         i=0; while [ $i -lt 20000 ]; do echo \"<4>rtscope-lab fill $i 0123456789abcdefghijklmnopqrstuvwxyz\" >/dev/kmsg; i=$((i+1)); done\n\
         sh -c 'while :; do echo \"<4>rtscope-lab printk writer 0123456789abcdefghijklmnopqrstuvwxyz\" >/dev/kmsg; sleep 0.001; done' &\n\
         w=$!\n\
         sleep 0.2\n\
         rtscope run --probe timer -a 0 -i 1000 -p 95 -D 3s --trace-threshold 150us --no-store --json run.json >run.txt 2>&1\n\
         echo $? >run.rc\n\
         kill $w\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = run_lab(&["--kernel", kernel, "--icount", "1", "--guest-script", script.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |f: &str| std::fs::read_to_string(out_dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let txt = read("run.txt");
    eprintln!("kernel_lab: kmsg writer in the {kernel} guest:\n{txt}");
    assert_eq!(read("run.rc").trim(), "0", "{txt}");
    let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
    let r = &run["results"][0];
    let (mut traced, mut named) = (0, 0);
    for w in r["worst"].as_array().unwrap().iter().filter(|w| w.get("trace").is_some()) {
        traced += 1;
        let frames: Vec<String> = w["trace"]["culprits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c.get("paths").and_then(|p| p.as_array()).cloned().unwrap_or_default())
            .flat_map(|p| p["frames"].as_array().cloned().unwrap_or_default())
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        if frames.iter().any(|f| f == "devkmsg_open" || f.contains("prb_first_valid_seq")) {
            named += 1;
        }
    }
    (txt, traced, named, r["max_ns"].as_u64().unwrap())
}

/// The pid of the QEMU process that `lab`'s kernel-lab (pid `lab`) started: a
/// descendant of it (other kernel labs may run on this host too).
fn qemu_of(lab: u32) -> Option<u32> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?.parse().ok()
    };
    pids_with("qemu-system-x86_64").into_iter().find(|&pid| {
        let mut p = pid;
        for _ in 0..8 {
            match parent(p) {
                Some(q) if q == lab => return true,
                Some(q) if q > 1 => p = q,
                _ => return false,
            }
        }
        false
    })
}

/// The host stops the guest (SIGSTOP / SIGCONT to QEMU, 20 to 50 ms) while a traced
/// timer run measures CPU 0 of a TCG guest (no --icount: the guest's clock is the
/// host's, so a stop lands in the windows) beside an ordinary busy shell there. Before
/// issue 60 such a window read "sh (prio 120) 30 ms: [user] sh" with RT-throttling
/// advice; the CPU took no sample and no event in it, and the sample that ended the
/// gap was in user code, where the clock would have fired: the time is the host's.
/// A stop's window says so (a stretch of 15 ms and more with no sample and no event,
/// not running), no task is charged with the stop, and the report gives no RT-throttling
/// advice.
///
/// A stop that lands while the guest runs kernel code (a softirq, a syscall) ends in
/// kernel code: with no steal clock under TCG that is host time unless the sample that
/// ended it is where the kernel turns interrupts back on, so such a window's top line is
/// `not running (host, or interrupts off)` (kind `host`), never the task (before issue
/// 60's interrupt-enable sites: `sh 46 ms`, 6 of 186 samples).
///
/// A stop that lands while the guest has interrupts off ends where they come back on:
/// beside `stress-ng --cpu 2 --io 1`, before witnesses, one stop window read `softirq RCU
/// 38.6 ms` (2 of 237 samples, the gap ended at `_raw_spin_unlock_irqrestore ←
/// rcu_core`). A second busy shell on CPU 1 is the witness: a host stop stops both
/// vCPUs, and CPU 1's gap ends in user code, so the overlap is the host's whatever ended
/// CPU 0's gap; at least one stop window shows the witness's time (`witnessed_ns`).
///
/// On a loaded host (beside `stress-ng --cpu 2 --io 1`) the host also deschedules each
/// TCG vCPU thread on its own, tens of ms at a time, with no steal clock to show it. Such
/// a stretch on CPU 0 alone (CPU 1 ran, so nothing witnessed it) that ended where
/// interrupts come back on reads as interrupts off, the task's (`sh 24.6 ms`, `softirq
/// TIMER 23.7 ms`): from inside the guest it is interrupts off as far as any evidence
/// goes, and it can share a window with one of this test's stops. So the stops are judged
/// by what the witness saw, not by the window's other stretches: every window with a
/// witnessed stretch of 15 ms or more gives that stretch to the host and to no task; where
/// the witnessed stop is most of the window, host time is its top line and the window
/// holds fewer than half the samples it should.
///
/// Still ignored for a loaded host: beside `stress-ng --cpu 2 --io 1` (load average
/// 4.5) the host's own deschedules of the vCPU threads reach 107 ms, so the ten traced
/// windows are not all this test's stops, and the busy CPU 1 witnessed none of them
/// (it takes too few samples before a stop to count as busy). Quiet, and on a host busy
/// with builds (load average 3–4), it passes: the 30, 40 and 50 ms stops witnessed for
/// 29.7, 40.0 and 53.5 ms, each window's top line host time.
#[test]
#[ignore = "issue 60: beside stress-ng the host's own vCPU deschedules (up to 107 ms) outrank the stops and the witness sees none"]
fn host_stops_are_host_time_not_a_tasks() {
    let Some(_guard) = lab_guest() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("stopped.json");
    let mut child = Command::new(kernel_lab())
        .args(["--kernel", "stock", "--out", out_file.to_str().unwrap(), "--guest-load-cmd", "taskset -c 0 sh -c 'while :; do :; done'"])
        .args(["--guest-load-cmd", "taskset -c 1 sh -c 'while :; do :; done'"])
        .arg("--rtscope")
        .arg(lab_rtscope())
        .args(["--boot-timeout", "240", "--timeout", "1200", "--"])
        .args(["-D", "14s", "-i", "1000", "-a", "0", "-p", "95", "--trace-threshold", "10ms", "--trace-max", "10"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot start lab/kernel-lab");
    let lab = child.id();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("measuring: rtscope run") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut stops = 0;
    if rx.recv_timeout(std::time::Duration::from_secs(900)).is_ok() {
        // The run's own set-up first (tracing, sampling, the doctor's checks).
        std::thread::sleep(std::time::Duration::from_secs(3));
        let qemu = qemu_of(lab).expect("the lab's QEMU process");
        for ms in [20u64, 30, 40, 50] {
            // SAFETY: kill(2) on the QEMU process this test's kernel-lab started.
            unsafe { libc::kill(qemu as libc::pid_t, libc::SIGSTOP) };
            std::thread::sleep(std::time::Duration::from_millis(ms));
            // SAFETY: as above; the process is resumed on every path of this loop.
            unsafe { libc::kill(qemu as libc::pid_t, libc::SIGCONT) };
            stops += 1;
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
    }
    let status = child.wait().unwrap();
    let log = reader.join().unwrap();
    eprintln!("kernel-lab (host stops): {status}\n{log}");
    assert_eq!(stops, 4, "the guest never started measuring");
    assert!(status.success(), "kernel-lab failed: {log}");
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let worst: Vec<&serde_json::Value> = run["results"].as_array().unwrap().iter().flat_map(|r| r["worst"].as_array().unwrap()).collect();
    // The windows of a stop: a stretch of 15 ms and more with no sample and no event
    // that ended in user code or with steal grown. (A long window without one — the run's
    // start-up on a host loaded by other guests and builds, gaps ending in the kernel —
    // is not judged: interrupts off or the host, the evidence cannot tell.)
    let stopped = |t: &serde_json::Value| {
        t["stacks"]["gaps"].as_array().is_some_and(|g| g.iter().any(|g| g["not_running"] == true && common::u(&g["length_ns"]) >= 15_000_000))
    };
    let traced: Vec<&serde_json::Value> = worst.iter().filter_map(|w| w.get("trace")).collect();
    for t in &traced {
        eprintln!(
            "window {} ns: {} {} ns; samples {} of {}; gaps {}",
            common::u(&t["end_ns"]) - common::u(&t["start_ns"]),
            t["culprits"][0]["name"],
            t["culprits"][0]["duration_ns"],
            t["stacks"]["samples"],
            t["stacks"]["expected"],
            t["stacks"]["gaps"]
        );
    }
    // A stopped window's gaps still say not running (the stretch ended in user code or
    // was witnessed): at least one.
    assert!(traced.iter().any(|t| stopped(t)), "no traced window of a stop: {traced:?}");
    let witnessed_ns =
        |t: &serde_json::Value| -> u64 { t["stacks"]["gaps"].as_array().map(|g| g.iter().map(|g| g["witnessed_ns"].as_u64().unwrap_or(0)).sum()).unwrap_or(0) };
    let seen: Vec<&&serde_json::Value> = traced.iter().filter(|t| witnessed_ns(t) >= 15_000_000).collect();
    eprintln!("{} traced windows of a stop the busy CPU 1 saw", seen.len());
    assert!(!seen.is_empty(), "no stop window seen by the busy CPU 1 as the host's: {traced:?}");
    for t in &seen {
        let span = common::u(&t["end_ns"]) - common::u(&t["start_ns"]);
        let host_seen = witnessed_ns(t);
        let of_kind =
            |kind: &str| -> u64 { t["culprits"].as_array().unwrap().iter().filter(|c| c["kind"] == kind).map(|c| common::u(&c["duration_ns"])).sum() };
        let sum: u64 = t["culprits"].as_array().unwrap().iter().map(|c| common::u(&c["duration_ns"])).sum();
        assert_eq!(sum, span, "culprits add up to the window: {t}");
        assert!(of_kind("host") >= host_seen, "the witnessed {host_seen} ns are the host's: {t}");
        assert!(of_kind("task") <= span - host_seen, "a task charged with the witnessed stop: {t}");
        if host_seen * 2 >= span {
            let top = &t["culprits"][0];
            assert_eq!(top["kind"], "host", "the top line of a window the stop fills is host time: {t}");
            let st = &t["stacks"];
            assert!(common::u(&st["samples"]) * 2 < common::u(&st["expected"]), "samples << expected: {st}");
        }
    }
    let report = Command::new(lab_rtscope()).arg("report").arg(&out_file).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    eprintln!("{text}");
    assert!(report.status.success());
    let one = common::unwrapped(&text);
    assert!(one.contains("host / not running") && one.contains("the host did not run this VM's vCPU"), "{text}");
    assert!(!text.contains("RT throttling"), "no RT throttling advice for host time: {text}");
}

/// The other half of issue 60's lab check: the same stock TCG guest, no host stops, and
/// a SCHED_FIFO 99 hog on the measured CPU 0 that reads /dev/zero in bursts (busybox `dd`,
/// 50 MiB in 64 KiB reads, then 0.3 s asleep). The traced late samples name the hog: a
/// task, `dd` at kernel priority 0 (FIFO 99), in /dev/zero's read path; the advice names
/// it as the real-time task that held the late samples, and there is no RT-throttling
/// advice (the hog uses far less than the throttling share). Instruction-counted
/// (`--icount 1`): the guest's clock stops when the host deschedules a vCPU, so what the
/// windows hold is the guest's own doing. Without it, on a host busy with builds, the
/// windows were dominated by the host: an idle CPU woken tens of ms late, a kthread
/// charged 28 ms for a gap that ended at an interrupt-enable site (the hog held 13 ms of a
/// 133 ms window). A window is judged by its top line where the hog holds most of it.
#[test]
fn a_fifo_99_hog_in_the_guest_is_named_with_its_kernel_path_and_the_priority_advice() {
    let Some(_guard) = lab_guest() else { return };
    if !have("chrt") {
        common::skipped("kernel_lab: the guest FIFO-99 hog needs util-linux chrt on the host (apt-get install util-linux)");
        return;
    }
    let chrt = common::host_path("chrt").expect("chrt is on PATH");
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("hog.json");
    let hog = "chrt -f 99 taskset -c 0 sh -c 'while :; do dd if=/dev/zero of=/dev/null bs=64k count=800 2>/dev/null; sleep 0.3; done'";
    let out = run_lab(
        &["--kernel", "stock", "--icount", "1", "--out", out_file.to_str().unwrap(), "--include", &chrt, "--guest-load-cmd", hog],
        &["-D", "4s", "-i", "1000", "-a", "0", "-p", "95", "--trace-threshold", "2ms", "--trace-max", "10"],
    );
    assert!(out.status.success(), "kernel-lab failed: {}", String::from_utf8_lossy(&out.stderr));
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let traced: Vec<&serde_json::Value> =
        run["results"].as_array().unwrap().iter().flat_map(|r| r["worst"].as_array().unwrap()).filter_map(|w| w.get("trace")).collect();
    assert!(!traced.is_empty(), "no late sample traced: {run}");
    let (mut by_hog, mut read_path) = (0, 0);
    for t in &traced {
        let span = common::u(&t["end_ns"]) - common::u(&t["start_ns"]);
        let culprits = t["culprits"].as_array().unwrap();
        let sum: u64 = culprits.iter().map(|c| common::u(&c["duration_ns"])).sum();
        assert_eq!(sum, span, "culprits add up to the window: {t}");
        let Some(dd) = culprits.iter().find(|c| c["name"] == "dd") else { continue };
        assert_eq!(dd["kind"], "task", "{t}");
        assert_eq!(dd["prio"].as_i64(), Some(0), "the hog is FIFO 99, kernel priority 0: {t}");
        if common::u(&dd["duration_ns"]) * 2 < span {
            continue;
        }
        by_hog += 1;
        assert_eq!(culprits[0]["name"], "dd", "the hog holds most of the window and is its top line: {t}");
        let frames: Vec<&str> = dd["paths"][0]["frames"].as_array().map(|f| f.iter().filter_map(|f| f.as_str()).collect()).unwrap_or_default();
        eprintln!("hog window {span} ns: dd {} ns; top path {frames:?}", dd["duration_ns"]);
        if frames.iter().any(|f| *f == "read_iter_zero" || *f == "read_zero" || *f == "iov_iter_zero") && frames.contains(&"vfs_read") {
            read_path += 1;
        }
    }
    assert!(by_hog >= 2, "the hog holds most of only {by_hog} traced windows: {traced:?}");
    assert!(read_path >= 1, "no hog window's top path is /dev/zero's read path: {traced:?}");
    let report = Command::new(lab_rtscope()).arg("report").arg(&out_file).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    eprintln!("{text}");
    assert!(report.status.success());
    let one = common::unwrapped(&text);
    assert!(one.contains("advice: real-time task dd (rt prio 99) held late samples"), "{text}");
    assert!(!text.contains("RT throttling"), "no RT throttling advice: {text}");
}
