//! Threshold tracing (`rtscope run --trace-threshold`) against a known latency killer: a
//! SCHED_FIFO 99 thread named `rtscope-hog`, pinned to the measured CPU, that spins for 2 ms
//! every 200 ms while the timer probe runs there at priority 50. The result must name that
//! thread — its comm, its tid and its priority — with about 2 ms for the late samples, and
//! the private tracefs instance must be gone after the run, after SIGINT and after a double
//! SIGINT, also with two rtscope runs at once. Skips (and says why) without root or tracefs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const TRACEFS: &str = "/sys/kernel/tracing";
const CPU: usize = 1;

/// Why tracing tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("not root".into());
    }
    if std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) < 2 {
        return Some("needs 2 CPUs (the hog and the probe share CPU 1, the collector uses CPU 0)".into());
    }
    let instances = Path::new(TRACEFS).join("instances");
    if !instances.is_dir() {
        let _ = std::process::Command::new("mount").args(["-t", "tracefs", "nodev", TRACEFS]).status();
    }
    if !instances.is_dir() {
        return Some(format!("tracefs not available at {TRACEFS}"));
    }
    None
}

macro_rules! skip_unless_tracing {
    () => {
        if let Some(why) = skip_reason() {
            common::skip!("{why}");
        }
    };
}

/// Every `rtscope run` (and `doctor`) removes instances of dead rtscope
/// pids: a test that plants one takes this lock for writing, every other
/// test of this file for reading, so no parallel run removes it first.
static STALE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    STALE.read().unwrap_or_else(|e| e.into_inner())
}

fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    STALE.write().unwrap_or_else(|e| e.into_inner())
}

fn instance_of(pid: u32) -> PathBuf {
    Path::new(TRACEFS).join("instances").join(format!("rtscope-{pid}"))
}

/// What the hog does in its 2 ms bursts.
#[derive(Clone, Copy, PartialEq)]
enum Work {
    /// Spins in user space.
    Spin,
    /// Reads 1 MiB blocks from /dev/zero into a buffer touched beforehand: its time is in
    /// the kernel's read path (`read_zero` / `read_iter_zero` under `vfs_read`, `ksys_read`).
    ReadZero,
}

/// The latency killer: a FIFO 99 thread called `rtscope-hog` on `cpu`, 2 ms busy every
/// `every`, doing `work`. Returns its tid; it stops when `stop` is raised.
fn start_hog_doing(work: Work, stop: Arc<AtomicBool>, cpu: usize, every: Duration) -> (std::thread::JoinHandle<()>, i32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let name = std::ffi::CString::new("rtscope-hog").unwrap();
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
        // SAFETY: an all-zero cpu_set_t is valid; CPU_SET writes inside it; pid 0 = this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), 0, "pin hog");
            let p = libc::sched_param { sched_priority: 99 };
            assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &p), 0, "hog SCHED_FIFO 99");
        }
        let mut zero = std::fs::File::open("/dev/zero").expect("open /dev/zero");
        let mut buf = vec![1u8; 1 << 20];
        // SAFETY: gettid takes no arguments and cannot fail.
        tx.send(unsafe { libc::gettid() }).unwrap();
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(2) {
                match work {
                    Work::Spin => std::hint::spin_loop(),
                    Work::ReadZero => {
                        std::io::Read::read_exact(&mut zero, &mut buf).expect("read /dev/zero");
                    }
                }
            }
            std::thread::sleep(every - Duration::from_millis(2));
        }
    });
    let tid = rx.recv_timeout(Duration::from_secs(5)).expect("hog started");
    (h, tid)
}

/// A running rtscope that is interrupted and reaped if the test fails before it does.
struct Running(Option<Child>);

impl Running {
    fn id(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
    fn sigint(&self) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.id() as i32), nix::sys::signal::SIGINT).unwrap();
    }
    fn wait(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::SIGINT);
            let _ = c.wait();
        }
    }
}

fn spawn_run(sb: &Sandbox, name: &str, args: &[&str]) -> Running {
    let p = sb.path(name);
    Running(Some(sb.cmd().arg("run").args(args).arg("--json").arg(&p).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn rtscope")))
}

/// `rtscope run ARGS` while the hog spins on `cpu` every `every`; asserts exit 0 and
/// returns the output, the result and the hog's tid.
fn run_beside_hog(cpu: usize, every: Duration, args: &[&str]) -> (std::process::Output, Value, i32) {
    run_beside_hog_doing(Work::Spin, cpu, every, args)
}

fn run_beside_hog_doing(work: Work, cpu: usize, every: Duration, args: &[&str]) -> (std::process::Output, Value, i32) {
    let stop = Arc::new(AtomicBool::new(false));
    let (hog, hog_tid) = start_hog_doing(work, Arc::clone(&stop), cpu, every);
    let sb = Sandbox::new();
    let out = sb.cmd().arg("run").args(args).arg("--json").arg(sb.path("r.json")).output().unwrap();
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let run = read_json(&sb.path("r.json"));
    (out, run, hog_tid)
}

#[test]
fn names_the_fifo_99_hog_as_top_culprit_of_late_samples() {
    skip_unless_tracing!();
    let _lock = shared();
    let args = ["-p", "50", "-a", "1", "-t", "1", "-i", "200", "-D", "4s", "--trace-threshold", "500us", "--trace-max", "50", "--worst", "2000"];
    let (out, run, hog_tid) = run_beside_hog(CPU, Duration::from_millis(200), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);

    // The plan records the request; the summary what happened.
    assert_eq!(u(&run["plan"]["trace"]["threshold_ns"]), 500_000);
    assert_eq!(u(&run["plan"]["trace"]["max_snapshots"]), 50);
    let summary = &run["trace"];
    let instance = summary["instance"].as_str().unwrap();
    assert!(instance.starts_with("/sys/kernel/tracing/instances/rtscope-"), "{instance}");
    assert!(!Path::new(instance).exists(), "instance {instance} left behind");
    let events: Vec<&str> = summary["events"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for e in ["sched/sched_switch", "sched/sched_wakeup", "irq/irq_handler_entry", "irq/softirq_entry"] {
        assert!(events.contains(&e), "{e} not enabled: {events:?}");
    }
    // The default set: no timer, workqueue or vector events, and the measuring
    // threads' own switch-in and wake-up filtered out in the kernel.
    assert!(run["plan"]["trace"].get("events").is_none(), "default is not written: {}", run["plan"]["trace"]);
    assert!(events.iter().all(|e| !e.starts_with("timer/") && !e.starts_with("irq_vectors/") && !e.starts_with("workqueue/")), "{events:?}");
    assert_eq!(summary["filters"]["sched/sched_switch"], "!(next_comm ~ \"rtscope-m*\")", "{summary}");
    assert_eq!(summary["filters"]["sched/sched_wakeup"], "!(comm ~ \"rtscope-m*\")", "{summary}");
    let snapshots = u(&summary["snapshots"]);
    assert!((1..=50).contains(&snapshots), "{summary}");
    // ~20 bursts of 2 ms in 4 s, each delaying one sample past 500 µs.
    assert!(u(&summary["over_threshold"]) >= 5, "{summary}");

    let merged = merged(&run);
    let traced: Vec<&Value> = merged[0]["worst"].as_array().unwrap().iter().filter(|w| w.get("trace").is_some()).collect();
    assert!(!traced.is_empty(), "no worst sample carries a trace: {:#}", merged[0]["worst"]);
    let mut by_hog = 0;
    for w in &traced {
        let t = &w["trace"];
        let latency = u(&w["latency_ns"]);
        assert!(latency > 500_000, "only samples over the threshold are traced: {w}");
        // The window is the sample: due time to wake-up, and the culprits fill it.
        assert_eq!(u(&t["end_ns"]) - u(&t["start_ns"]), latency, "{t:#}");
        let sum: u64 = t["culprits"].as_array().unwrap().iter().map(|c| u(&c["duration_ns"])).sum();
        assert_eq!(sum, latency, "culprit durations add up to the window: {t:#}");
        assert_eq!(u(&t["cpu"]), CPU as u64);
        let top = &t["culprits"][0];
        // A window partly untraced is reported as such; its durations cannot be judged.
        if t["complete"] == false {
            assert!(t["culprits"].as_array().unwrap().iter().any(|c| c["kind"] == "untraced"), "{t:#}");
            continue;
        }
        if top["name"] == "rtscope-hog" {
            by_hog += 1;
            assert_eq!(top["kind"], "task");
            assert_eq!(top["pid"].as_i64(), Some(hog_tid as i64), "the hog's tid");
            assert_eq!(top["prio"].as_i64(), Some(0), "FIFO 99 is kernel prio 0");
            let d = u(&top["duration_ns"]);
            // The hog spins 2 ms of wall time; the late sample was due within one 200 µs
            // period of the burst's start and woke at its end, so the window holds at
            // least 1.8 ms of the burst. Interrupts and softirqs run inside a FIFO 99
            // thread's burst and are theirs, not the hog's (0.41 ms of BLOCK softirq and
            // virtio IRQ once, with stress-ng --io beside the suite): the hog's share is
            // at least 1.5 ms less the interrupt time of the window. On a VM the host may
            // stop the vCPU inside the burst, which the guest sees as the hog holding the
            // CPU longer (2.785 ms once under a parallel build). Upper bound: a tenth of
            // the hog's 200 ms cycle, far below anything but its own burst.
            let interrupts: u64 = t["culprits"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| ["irq", "softirq", "nmi"].contains(&c["kind"].as_str().unwrap_or("")))
                .map(|c| u(&c["duration_ns"]))
                .sum();
            let least = 1_500_000u64.saturating_sub(interrupts);
            assert!((least..=20_000_000).contains(&d), "hog held the CPU {d} ns (interrupts {interrupts} ns), expected a 2 ms burst: {t:#}");
            // The hog is not asked to explain a fixed share of the window: with stress-ng or
            // another test's load on CPU 1, the time before the burst began (the sample was
            // already late) and after it ended (an interrupt, a kworker) belongs to others,
            // and the sum check above already holds every culprit to the window.
            assert!(d <= latency, "the hog's share {d} ns lies inside the {latency} ns window: {t:#}");
            // When the wake-up was traced, it lies inside the window.
            if let Some(wake) = t.get("wakeup_after_ns") {
                assert!(u(wake) <= latency, "{t:#}");
            }
        }
    }
    // Other tests on a shared machine may run their own hogs on CPU 1 (or exhaust its RT
    // budget, so ordinary tasks run for tens of ms); ours must still be found: with
    // --trace-max 50 every burst in the 4 s can get a snapshot, and with --worst 2000 every
    // sample over 500 µs stays in worst[] to carry it.
    let tops: Vec<String> = traced
        .iter()
        .map(|w| {
            let c = &w["trace"]["culprits"];
            format!("{} ns: {} {} ns, then {} {}", w["latency_ns"], c[0]["name"], c[0]["duration_ns"], c[1]["name"], c[1]["duration_ns"])
        })
        .collect();
    assert!(by_hog >= 2, "rtscope-hog is top culprit of only {by_hog} of {} traced samples:\n{}", traced.len(), tops.join("\n"));
    // The terminal lists traced samples worst first, each with its top culprit; whichever
    // samples it shows, they must match the result file.
    let on_worst = u(&summary["on_worst"]);
    assert!(on_worst <= snapshots && on_worst as usize >= traced.len(), "{summary}");
    // run prints the block `report` shows: a heading, the summary, one item per sample.
    assert!(stdout.contains("-- What held the CPU (trace)"), "{stdout}");
    assert!(stdout.contains(&format!("{snapshots} snapshot(s) ({on_worst} on worst samples) of ")), "{stdout}");
    // An item may be wrapped onto indented lines: join them.
    let joined = stdout.replace("\n    ", " ");
    let lines: Vec<&str> = joined.lines().filter(|l| l.starts_with("  * timer ")).collect();
    assert_eq!(lines.len(), traced.len().min(5), "{stdout}");
    for (line, w) in lines.iter().zip(&traced) {
        assert!(line.contains(&format!(" seq {}", u(&w["seq"]))), "{line} vs {w}");
        let top = &w["trace"]["culprits"][0];
        let name = top["name"].as_str().unwrap();
        assert!(line.contains(name), "{line} lacks {name}");
        if name == "rtscope-hog" {
            assert!(line.contains(&format!("rtscope-hog (pid {hog_tid}, rt prio 99)")), "{line}");
        }
    }
}

/// A thread named `name` spinning in user space on `cpu` (SCHED_FIFO `fifo` if given, else
/// SCHED_OTHER) until the guard is dropped.
struct Spinner(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Spinner {
    fn start(name: &str, cpu: usize, fifo: Option<i32>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (flag, cname) = (Arc::clone(&stop), std::ffi::CString::new(name).unwrap());
        let h = std::thread::spawn(move || {
            // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes; an
            // all-zero cpu_set_t is valid and CPU_SET writes inside it; pid 0 = this thread.
            let ok = unsafe {
                libc::prctl(libc::PR_SET_NAME, cname.as_ptr() as libc::c_ulong, 0, 0, 0);
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
                    && fifo.is_none_or(|prio| libc::sched_setscheduler(0, libc::SCHED_FIFO, &libc::sched_param { sched_priority: prio }) == 0)
            };
            tx.send(ok).unwrap();
            while ok && !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        assert!(rx.recv_timeout(Duration::from_secs(5)).expect("spinner started"), "spinner {name:?}: pin / SCHED_FIFO failed");
        Spinner(stop, Some(h))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

/// RT throttling, seen and advised: a SCHED_FIFO 1 thread spinning on the measured CPU
/// (below the probe's 95, so it never delays it by itself) uses up the real-time budget
/// (`sched_rt_runtime_us` of every `sched_rt_period_us`); the kernel then stops every
/// real-time task of the CPU, the measuring thread included, for the rest of the period
/// and runs ordinary tasks: an ordinary spinner on that CPU (`rtscope-cfs`) takes the
/// window. The traced windows show ordinary tasks holding the real-time thread's CPU for
/// about the throttled stretch, and the advice names RT throttling with doctor's fix.
/// Runs only with throttling on (never starts a FIFO busy loop without it).
#[test]
fn rt_throttling_is_named_by_the_advice() {
    skip_unless_tracing!();
    let _lock = shared();
    let rt = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).ok().and_then(|v| v.trim().parse::<i64>().ok());
    let (Some(runtime), Some(period)) = (rt("sched_rt_runtime_us"), rt("sched_rt_period_us")) else {
        common::skip!("RT throttling settings unreadable");
    };
    if runtime < 0 || runtime >= period || period - runtime < 10_000 || period > 2_000_000 {
        common::skip!("RT throttling is off or its stretch is not 10 ms..2 s ({runtime} of {period} us)");
    }
    let stretch_ns = ((period - runtime) * 1000) as u64;
    let sb = Sandbox::new();
    let out = {
        let _cfs = Spinner::start("rtscope-cfs", CPU, None);
        let _fifo = Spinner::start("rtscope-rt1", CPU, Some(1));
        // Three periods at least: each one throttles once.
        let secs = (3 * period as u64).div_ceil(1_000_000).max(3);
        let d = format!("{secs}s");
        let args = ["-p", "95", "-a", "1", "-t", "1", "-i", "1000", "-D", &d, "--trace-threshold", "5ms", "--trace-max", "20"];
        sb.cmd().arg("run").args(args).arg("--json").arg(sb.path("r.json")).output().unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let run = read_json(&sb.path("r.json"));
    let merged = merged(&run);
    let traced: Vec<&Value> = merged[0]["worst"].as_array().unwrap().iter().filter_map(|w| w.get("trace")).collect();
    // A throttled window: ordinary tasks (prio >= 100) hold most of it, about the stretch
    // long (a window is due at most one 1 ms period after the throttle began).
    let throttled = traced
        .iter()
        .filter(|t| {
            let ordinary: u64 = t["culprits"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["kind"] == "task" && c["prio"].as_i64().is_some_and(|p| p >= 100))
                .map(|c| u(&c["duration_ns"]))
                .sum();
            ordinary >= stretch_ns / 10 && ordinary <= stretch_ns + stretch_ns / 10
        })
        .count();
    assert!(throttled >= 1, "no traced window with ordinary tasks for the throttled stretch ({stretch_ns} ns):\n{stdout}");
    let names_cfs =
        traced.iter().any(|t| t["culprits"].as_array().unwrap().iter().any(|c| c["name"] == "rtscope-cfs" && c["prio"].as_i64().is_some_and(|p| p >= 100)));
    assert!(names_cfs, "the ordinary spinner is named in no window:\n{stdout}");
    // Advice wraps at 80 columns (piped), none wider; an item's lines are joined to read it.
    assert!(stdout.lines().all(|l| l.chars().count() <= 80), "a line over 80 columns:\n{stdout}");
    let joined = stdout.replace("\n    ", " ");
    let advice = joined.lines().find(|l| l.contains("advice: RT throttling")).unwrap_or_else(|| panic!("no RT throttling advice:\n{stdout}"));
    assert!(advice.contains(&format!("{runtime} of every {period} us")) && advice.contains("sched_rt_runtime_us=-1"), "{advice}");
    // The spinner ran because of the throttling: it is not advised against as a task.
    assert!(!joined.lines().any(|l| l.contains("advice: ") && l.contains("rtscope-cfs")), "{stdout}");
}

/// Call-chain sampling (`--trace-stacks`, on by default): a FIFO 99 hog that spends its
/// bursts reading /dev/zero. Every traced late sample whose window the hog tops (and that
/// caught a sample of it) has the kernel's read path as the hog's top code path; the paths'
/// shares are the window's samples; the terminal shows the top path after the hog. The
/// sampling summary says how many samples were read, and the perf descriptors are gone with
/// the process (nothing to check after exit: they are no files).
#[test]
fn names_the_code_path_the_hog_runs_in() {
    skip_unless_tracing!();
    // Alone: the other hog test's rtscope-hog runs on the same CPU.
    let _lock = exclusive();
    let args = ["-p", "50", "-a", "1", "-t", "1", "-i", "200", "-D", "3s", "--trace-threshold", "500us", "--trace-max", "50", "--worst", "2000"];
    let (out, run, hog_tid) = run_beside_hog_doing(Work::ReadZero, CPU, Duration::from_millis(100), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(u(&run["plan"]["trace"]["stack_hz"]), 4000, "the default rate is recorded: {}", run["plan"]["trace"]);
    let st = &run["trace"]["stacks"];
    assert!(st.get("unavailable").is_none(), "sampling did not run: {st}");
    assert_eq!(u(&st["period_ns"]), 250_000);
    // 3 s of one CPU at 4 kHz is at most about 12 000 samples, but the software clock does
    // not tick while the CPU idles (a quiet run here read 295: the hog bursts, the CPU
    // idles between them), so only "it sampled" is a fact of the method.
    assert!(u(&st["samples"]) > 0, "{st}");
    let merged = merged(&run);
    let mut with_path = 0;
    let mut tops = Vec::new();
    for w in merged[0]["worst"].as_array().unwrap().iter().filter(|w| w.get("trace").is_some()) {
        let t = &w["trace"];
        let stacks = &t["stacks"];
        assert_eq!(u(&stacks["period_ns"]), 250_000, "{t:#}");
        let in_window = u(&stacks["samples"]);
        let culprits = t["culprits"].as_array().unwrap();
        // The paths' samples add up to the window's, and their shares to 1.
        let paths: Vec<&Value> = culprits.iter().flat_map(|c| c.get("paths").and_then(Value::as_array).into_iter().flatten()).collect();
        assert_eq!(paths.iter().map(|p| u(&p["samples"])).sum::<u64>(), in_window, "{t:#}");
        if in_window > 0 {
            let share: f64 = paths.iter().map(|p| p["share"].as_f64().unwrap()).sum();
            assert!((share - 1.0).abs() < 1e-9, "shares add up to {share}: {t:#}");
        }
        let Some(hog) = culprits.iter().find(|c| c["name"] == "rtscope-hog" && c["pid"].as_i64() == Some(hog_tid as i64)) else { continue };
        // Only the hog's bursts of over 1 ms are judged: at 4 kHz they hold 4 or more samples.
        if t["complete"] != true || u(&hog["duration_ns"]) < 1_000_000 {
            continue;
        }
        let top = &hog["paths"][0];
        let frames: Vec<&str> = top["frames"].as_array().unwrap_or_else(|| panic!("the hog has no path: {t:#}")).iter().map(|f| f.as_str().unwrap()).collect();
        tops.push(frames.join(" <- "));
        assert!(
            frames.iter().any(|f| *f == "read_zero" || *f == "read_iter_zero") && frames.contains(&"vfs_read") && frames.contains(&"ksys_read"),
            "the hog's top path is not /dev/zero's read path: {frames:?}\n{t:#}"
        );
        with_path += 1;
    }
    assert!(with_path >= 2, "the hog's read path named in only {with_path} traced samples: {tops:?}");
    // The width rule (80 columns when piped): the traced windows' lines wrap, none is wider.
    let wide: Vec<&str> = stdout.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "lines over 80 columns: {wide:#?}");
    // The terminal shows the hog's top path after its time.
    assert!(
        stdout.replace("\n    ", " ").lines().any(|l| l.starts_with("  * timer ") && l.contains("rtscope-hog (pid") && l.contains(" ← ") && l.contains("read")),
        "no traced sample line shows the hog's read path: {stdout}"
    );
}

/// `kernel.kptr_restrict=2` hides the kernel's addresses in /proc/kallsyms, from root too
/// (every address reads 0). Simulated through `RTSCOPE_SYSROOT`'s proc/kallsyms, which the
/// run reads its symbols from: this host's sysctl is not changed (the other traced runs,
/// the suite's among them, need the symbols). The same hog as above: the samples still
/// count, no kernel address is stored or shown (an address gives away where the kernel is
/// loaded), every code path is `[kernel]`, and `trace.stacks.unavailable` and a warning say
/// why.
#[test]
fn hidden_kernel_addresses_are_never_shown() {
    skip_unless_tracing!();
    let _lock = exclusive();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("proc")).unwrap();
    let hidden = "0000000000000000 T _stext\n0000000000000000 t read_iter_zero\n0000000000000000 T vfs_read\n0000000000000000 T ksys_read\n";
    std::fs::write(root.path().join("proc/kallsyms"), hidden).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (hog, _) = start_hog_doing(Work::ReadZero, Arc::clone(&stop), CPU, Duration::from_millis(100));
    let sb = Sandbox::new();
    let args = ["-p", "50", "-a", "1", "-t", "1", "-i", "200", "-D", "3s", "--trace-threshold", "500us", "--trace-max", "50", "--worst", "2000"];
    let out = sb.cmd().env("RTSCOPE_SYSROOT", root.path()).arg("run").args(args).arg("--json").arg(sb.path("r.json")).output().unwrap();
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    let text = std::fs::read_to_string(sb.path("r.json")).unwrap();
    let run: Value = serde_json::from_str(&text).unwrap();
    let st = &run["trace"]["stacks"];
    assert!(u(&st["samples"]) > 0, "it sampled: {st}");
    let why = st["unavailable"].as_str().unwrap_or_else(|| panic!("stacks.unavailable not set: {st}"));
    assert!(why.contains("kptr_restrict"), "{why}");
    assert!(stderr.contains("warning: ") && stderr.contains("kptr_restrict"), "{stderr}");
    // No kernel address anywhere: not in hex (the frames' form before), not as the number.
    for (what, t) in [("result", &text[..]), ("stdout", &stdout[..]), ("stderr", &stderr[..])] {
        assert!(!t.to_ascii_lowercase().contains("0xffff"), "a kernel address in the {what}:\n{t}");
    }
    fn kernel_numbers(v: &Value, out: &mut Vec<u64>) {
        match v {
            Value::Number(n) => out.extend(n.as_u64().filter(|x| (0xffff_8000_0000_0000..u64::MAX).contains(x))),
            Value::Array(a) => a.iter().for_each(|x| kernel_numbers(x, out)),
            Value::Object(o) => o.values().for_each(|x| kernel_numbers(x, out)),
            _ => {}
        }
    }
    let mut numbers = Vec::new();
    kernel_numbers(&run, &mut numbers);
    assert!(numbers.is_empty(), "kernel addresses as numbers in the result: {numbers:x?}");
    let mut paths = 0;
    for w in merged(&run)[0]["worst"].as_array().unwrap().iter().filter_map(|w| w.get("trace")) {
        for c in w["culprits"].as_array().unwrap() {
            for p in c.get("paths").and_then(Value::as_array).into_iter().flatten() {
                paths += 1;
                let frames: Vec<&str> = p["frames"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
                assert!(frames.iter().all(|f| *f == "[kernel]" || f.starts_with("[user]")), "{frames:?}\n{w:#}");
            }
        }
    }
    assert!(paths > 0, "no traced window held a sampled path:\n{stdout}");
}

/// The idle states of `cpu` from sysfs: (name, exit latency µs), by index; without a
/// cpuidle driver, the two states the product names for the kernel's own idle loop.
fn idle_states(cpu: usize) -> Vec<(String, u64)> {
    if !no_cpuidle_driver(cpu) {
        return (0..)
            .map_while(|k| {
                let d = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}");
                let name = std::fs::read_to_string(format!("{d}/name")).ok()?;
                let lat = std::fs::read_to_string(format!("{d}/latency")).ok()?;
                Some((name.trim().to_string(), lat.trim().parse().ok()?))
            })
            .collect();
    }
    // The kernel's own idle loop (no driver): its polling loop is state 0, its default
    // idle (HLT) state 1; no driver declares their exit latencies.
    vec![("poll (no cpuidle driver)".to_string(), 0), ("halt (no cpuidle driver)".to_string(), 0)]
}

/// No cpuidle driver on `cpu` (no sysfs `cpuidle` directory): idle is the kernel's own loop.
fn no_cpuidle_driver(cpu: usize) -> bool {
    !Path::new(&format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle")).exists()
}

/// Entries into each cpuidle state of `cpu` so far (sysfs `usage`), by index.
fn idle_entries(cpu: usize) -> Vec<u64> {
    (0..).map_while(|k| std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{k}/usage")).ok()?.trim().parse().ok()).collect()
}

/// How many `power/cpu_idle` entries into a state `cpu` records while idle for 500 ms, in
/// a tracing instance of the test's own (removed on every path).
fn traced_idle_entries(cpu: usize) -> usize {
    struct Instance(PathBuf);
    impl Drop for Instance {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let i = Instance(Path::new(TRACEFS).join(format!("instances/rtscope-test-idle-{}", std::process::id())));
    std::fs::create_dir(&i.0).unwrap();
    std::fs::write(i.0.join("tracing_cpumask"), format!("{:x}", 1u64 << cpu)).unwrap();
    std::fs::write(i.0.join("events/power/cpu_idle/enable"), "1").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(i.0.join("tracing_on"), "0").unwrap();
    let text = std::fs::read_to_string(i.0.join(format!("per_cpu/cpu{cpu}/trace"))).unwrap();
    text.lines().filter(|l| l.contains("cpu_idle:") && l.contains(&format!("cpu_id={cpu}")) && !l.contains("state=4294967295")).count()
}

/// Idle states instead of "unexplained": the timer probe alone on one CPU (every other test
/// of this file waits: no hog runs), sampling off (its interrupts keep the CPU out of idle).
/// With `--no-dma-latency` the idle part of the late windows is charged to idle states by
/// their sysfs names and exit latencies, and outweighs what stays unexplained; with
/// /dev/cpu_dma_latency held at 0 (the default) no state with an exit latency appears.
/// On a CPU whose idle entries the kernel traces: this VM's 6.18 guest entered haltpoll on
/// CPU 1 ~360 times a second of this run and emitted not one power/cpu_idle event for it,
/// so CPU 0 is measured (on CPU 1 idle time no event names is "unexplained", rightly; no
/// CPU traced: not judged).
#[test]
fn idle_time_is_named_by_its_idle_state() {
    skip_unless_tracing!();
    if idle_states(CPU).is_empty() || !Path::new(TRACEFS).join("events/power/cpu_idle").exists() {
        common::skip!("no cpuidle states on cpu{CPU} or no power/cpu_idle event");
    }
    let _lock = exclusive();
    // The CPU whose idle entries the kernel traces (here CPU 0), else CPU 1, not judged.
    let (cpu, traced) = [CPU, 0].into_iter().map(|c| (c, traced_idle_entries(c))).find(|(_, n)| *n > 0).unwrap_or((CPU, 0));
    let states = idle_states(cpu);
    let cpu_arg = cpu.to_string();
    let sb = Sandbox::new();
    // Every sample over 3 µs gets a snapshot (as many as the collector can read), so the
    // windows are not only the worst (on a loaded machine, other tasks' time slices).
    let base = [
        "-p",
        "50",
        "-a",
        &cpu_arg,
        "-t",
        "1",
        "-i",
        "5000",
        "-D",
        "3s",
        "--trace-threshold",
        "3us",
        "--trace-max",
        "1000",
        "--worst",
        "1000",
        "--trace-stacks",
        "0",
        "--no-store",
    ];
    let idle_of = |run: &Value| -> (Vec<(String, u64)>, u64, u64) {
        assert!(run["trace"]["events"].as_array().unwrap().iter().any(|e| e == "power/cpu_idle"), "{}", run["trace"]);
        let mut named = Vec::new();
        let (mut idle_ns, mut unexplained_ns) = (0, 0);
        for w in merged(run)[0]["worst"].as_array().unwrap().iter().filter_map(|w| w.get("trace")).filter(|t| t["complete"] == true) {
            for c in w["culprits"].as_array().unwrap() {
                match c["kind"].as_str().unwrap() {
                    "idle" => {
                        let name = c["name"].as_str().unwrap().to_string();
                        let lat = u(&c["exit_latency_ns"]);
                        assert!(states.iter().any(|(n, l)| *n == name && l * 1000 == lat), "{name} {lat} ns is not a sysfs state of cpu{cpu}: {states:?}");
                        idle_ns += u(&c["duration_ns"]);
                        named.push((name, lat));
                    }
                    "unexplained" => unexplained_ns += u(&c["duration_ns"]),
                    _ => {}
                }
            }
        }
        (named, idle_ns, unexplained_ns)
    };
    let before = idle_entries(cpu);
    let free = sb.run_json("free.json", &[&base[..], &["--no-dma-latency"]].concat());
    let samples = u(&merged(&free)[0]["samples"]);
    // Without a driver there is no sysfs usage count: the default idle halts on every wait
    // unless the boot line says idle=poll.
    let halted: u64 = if no_cpuidle_driver(cpu) {
        if std::fs::read_to_string("/proc/cmdline").unwrap_or_default().split_whitespace().any(|w| w == "idle=poll") {
            0
        } else {
            samples
        }
    } else {
        idle_entries(cpu).iter().zip(&before).zip(&states).filter(|(_, (n, _))| n != "POLL").map(|((b, a), _)| b - a).sum()
    };
    let (named, idle_ns, unexplained_ns) = idle_of(&free);
    // Judged when the CPU was idle in the traced windows at all: under another load (a
    // parallel build on CPU 1) every window may be other tasks' time, and then there is
    // no idle part to name; the states named are checked above in any case. And judged
    // when it halted on at least half of its waits: idle time in POLL cannot be named.
    if traced == 0 || halted * 2 < samples {
        eprintln!("idle naming not judged: cpu{cpu} halted {halted} times in {samples} samples, and recorded {traced} power/cpu_idle entries in 500 ms idle (unexplained {unexplained_ns} ns)");
    } else if idle_ns + unexplained_ns >= 100_000 {
        assert!(
            idle_ns > unexplained_ns,
            "idle {idle_ns} ns named {named:?}, unexplained {unexplained_ns} ns; cpu{cpu} halted {halted} times in {samples} samples"
        );
    } else {
        eprintln!("idle naming not judged: cpu{cpu} was idle {} ns in the traced windows (busy machine)", idle_ns + unexplained_ns);
    }
    let held = sb.run_json("held.json", &base);
    let (named, _, _) = idle_of(&held);
    assert!(named.iter().all(|(_, lat)| *lat == 0), "with cpu_dma_latency 0 held, only states of exit latency 0 may appear: {named:?}");
}

/// Threshold tracing beyond the timer probe: `periodic` and `maxrate` (the timer method, two
/// variants each, whose sequence numbers both start at 0) and `sem`'s futex hand-off (window
/// from the sender's clock read to the receiver's, on the receiver's CPU), with the hog busy
/// 2 ms every 20 ms on CPU 0: the plan's first CPU, where the timer threads and both
/// placements' receivers run (the hog test's CPU 1 is the cross-CPU sender's). Every traced sample must carry its own window (a snapshot
/// attached to another variant's sample of the same seq would not have its length), and the
/// hog must be named in each traced probe.
#[test]
fn periodic_maxrate_and_hand_offs_are_traced_too() {
    skip_unless_tracing!();
    let _lock = shared();
    let args = [
        ["-p", "50", "-a", "0,1", "-t", "1", "-D", "4s", "--probe", "periodic,maxrate,sem:futex/same-cpu,sem:futex/cross-cpu"].as_slice(),
        &["--periods", "1ms,2ms", "--back-to-back", "--trace-threshold", "500us", "--trace-max", "10000", "--worst", "2000"],
    ]
    .concat();
    let (out, run, hog_tid) = run_beside_hog(0, Duration::from_millis(20), &args);
    let summary = &run["trace"];
    assert!(!Path::new(summary["instance"].as_str().unwrap()).exists(), "instance left behind");
    let mut hog_named: std::collections::BTreeMap<String, u32> = Default::default();
    let mut seen: Vec<String> = Vec::new();
    let mut traced_total = 0;
    for r in per_thread(&run) {
        let (probe, variant) = (r["probe"].as_str().unwrap(), r["variant"].as_str().unwrap_or("-"));
        let key = format!("{probe} {variant}");
        for w in r["worst"].as_array().unwrap() {
            let Some(t) = w.get("trace") else { continue };
            assert!(!variant.ends_with("/period-error"), "a period error is not a latency with a due time: {key} {w}");
            traced_total += 1;
            let latency = u(&w["latency_ns"]);
            assert!(latency > 500_000, "{key}: only samples over the threshold are traced: {w}");
            assert_eq!(u(&t["end_ns"]) - u(&t["start_ns"]), latency, "{key}: the snapshot is this sample's window: {w:#}");
            let sum: u64 = t["culprits"].as_array().unwrap().iter().map(|c| u(&c["duration_ns"])).sum();
            assert_eq!(sum, latency, "{key}: culprits add up to the window: {t:#}");
            // sem's receiver runs on the plan's first CPU (0) in both placements.
            assert_eq!(u(&t["cpu"]), u(&r["cpu"]), "{key}: the window is on the recording thread's CPU: {w:#}");
            let top = &t["culprits"][0];
            seen.push(format!("{key}: {latency} ns, complete {}, top {} {} ns", t["complete"], top["name"], top["duration_ns"]));
            if t["complete"] == true && top["name"] == "rtscope-hog" {
                assert_eq!(top["pid"].as_i64(), Some(hog_tid as i64), "{key}: {t:#}");
                *hog_named.entry(probe.to_string()).or_default() += 1;
            }
        }
    }
    // The timer method is late whenever the hog spins at a due time (about one wake-up in
    // 13 at 1 ms); the cross-CPU hand-off whenever the hog starts while the receiver waits
    // (about a third of each back-to-back cycle): tens of late samples per probe. Counted per
    // probe, not per period: under stress-ng one period's share of the run once had no
    // complete window topped by the hog (others' tasks and lost events fill windows too).
    for probe in ["periodic", "maxrate", "sem"] {
        assert!(hog_named.get(probe).copied().unwrap_or(0) >= 1, "rtscope-hog named in no traced {probe} sample: {hog_named:?}\n{}", seen.join("\n"));
    }
    assert_eq!(u(&summary["on_worst"]), traced_total, "every snapshot on a worst sample is in its thread's entry: {summary}");
    // The hand-off's own wake-up and switch-in are traced events: the result says so, once,
    // and only for the hand-off probe.
    let warnings: Vec<&str> = run["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    let traced_path: Vec<&&str> = warnings.iter().filter(|w| w.contains("measured under threshold tracing")).collect();
    assert_eq!(traced_path.len(), 1, "{warnings:#?}");
    assert!(traced_path[0].starts_with("sem: "), "{warnings:#?}");
    // The terminal names the variant (sequence numbers restart with each).
    let stdout = String::from_utf8_lossy(&out.stdout);
    for v in ["periodic 1ms ", "maxrate 2ms ", "sem futex/cross-cpu "] {
        assert!(stdout.replace("\n    ", " ").lines().any(|l| l.starts_with(&format!("  * {v}")) && l.contains(" seq ")), "no trace line of {v}:\n{stdout}");
    }
}

#[test]
fn instance_removed_after_sigint_and_two_runs_get_their_own() {
    skip_unless_tracing!();
    let _lock = shared();
    let sb = Sandbox::new();
    // CPU 0: CPU 1 is the hog test's, which may run at the same time.
    let args = ["-a", "0", "-t", "1", "-i", "1000", "-D", "60s", "-q", "--trace-threshold", "100us"];
    let a = spawn_run(&sb, "a.json", &args);
    let b = spawn_run(&sb, "b.json", &args);
    let (ia, ib) = (instance_of(a.id()), instance_of(b.id()));
    // Set up = sched_switch enabled (the clock and cpumask are written before the events)
    // and tracing switched back on, the set-up's last step (configuring switches it off
    // first; the kernel's symbols for --trace-stacks are read between the two, which takes
    // a second on a loaded machine: a SIGINT then ends the run before it has a trace).
    let on = |i: &Path, f: &str| std::fs::read_to_string(i.join(f)).is_ok_and(|v| v.trim() == "1");
    let ready = |i: &Path| on(i, "events/sched/sched_switch/enable") && on(i, "tracing_on");
    wait_until("both instances", Duration::from_secs(60), || ready(&ia) && ready(&ib));
    assert!(std::fs::read_to_string(ia.join("trace_clock")).unwrap().contains("[mono]"));
    assert_eq!(std::fs::read_to_string(ia.join("tracing_cpumask")).unwrap().trim(), "1", "CPU 0 only");
    let kb = |cpu: usize| -> u64 { std::fs::read_to_string(ia.join(format!("per_cpu/cpu{cpu}/buffer_size_kb"))).unwrap().trim().parse().unwrap() };
    assert!(kb(0) >= 1024 && kb(1) < 64, "buffer sizes: cpu0 {} KB, cpu1 {} KB", kb(0), kb(1));
    std::thread::sleep(Duration::from_millis(300));
    a.sigint();
    b.sigint();
    for (child, inst, name) in [(a, ia, "a.json"), (b, ib, "b.json")] {
        let out = child.wait();
        assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!inst.exists(), "{} left behind after SIGINT", inst.display());
        let run = read_json(&sb.path(name));
        assert_eq!(run["interrupted"], true);
        assert!(run["trace"]["instance"].as_str().unwrap().ends_with(inst.file_name().unwrap().to_str().unwrap()));
    }
}

/// The second signal exits at once, without destructors: the signal handler
/// removes the instance (or, while the reader still holds a file of it, a
/// short-lived child does once the process is gone). 8 trials with
/// different gaps between the signals: before the fix 3 in 21 leaked.
#[test]
fn instance_removed_after_double_sigint() {
    skip_unless_tracing!();
    let _lock = shared();
    let sb = Sandbox::new();
    for (i, gap_us) in [0u64, 0, 100, 500, 1000, 5000, 20_000, 100_000].into_iter().enumerate() {
        let name = format!("c{i}.json");
        let c = spawn_run(&sb, &name, &["-a", "0", "-t", "1", "-D", "60s", "-q", "--trace-threshold", "100us"]);
        let inst = instance_of(c.id());
        wait_until("the instance", Duration::from_secs(60), || inst.is_dir());
        std::thread::sleep(Duration::from_millis(50 * (i as u64 % 3)));
        c.sigint();
        std::thread::sleep(Duration::from_micros(gap_us));
        c.sigint();
        let out = c.wait();
        assert_eq!(out.status.code(), Some(130), "trial {i}");
        wait_until("the instance to go", Duration::from_secs(60), || !inst.exists());
    }
}

#[test]
fn without_root_it_says_so_and_runs_without_tracing() {
    skip_unless_tracing!();
    let _lock = shared();
    if !Path::new("/usr/bin/setpriv").exists() {
        common::skip!("no setpriv to drop root");
    }
    let sb = Sandbox::new();
    // World-writable, so the unprivileged run can write its result there.
    std::fs::set_permissions(sb.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_rtscope"))
        .args(["run", "-D", "300ms", "-t", "1", "-a", "0", "-q", "--trace-threshold", "100us", "--json"])
        .arg(sb.path("n.json"))
        .current_dir(sb.dir.path())
        .env("RTSCOPE_DB", sb.path("n.db"))
        .env("XDG_DATA_HOME", sb.path("xdg-data"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no trace snapshots: tracing needs root"), "{stderr}");
    let run = read_json(&sb.path("n.json"));
    assert!(run.get("trace").is_none(), "no trace summary without tracing");
    let warnings: Vec<&str> = run["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert!(warnings.iter().any(|w| w.contains("tracing needs root")), "{warnings:?}");
    let step = run["realtime_setup"]["steps"].as_array().unwrap().iter().find(|s| s["step"] == "tracing").unwrap();
    assert_eq!(step["outcome"], "failed");
}

#[test]
fn trace_threshold_without_a_traced_probe_is_bad_input() {
    let _lock = shared();
    let sb = Sandbox::new();
    // No probe that analyses late samples: exit 2 naming the ones that do.
    let out = sb.run(&["run", "--probe", "noise,switch", "-D", "1s", "--trace-threshold", "100us", "--json", "x.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--trace-threshold") && err.contains("--probe noise,switch"), "{err}");
    assert!(err.contains("timerlat, timer, periodic, maxrate, sem, pipe, mq, signal, preempt"), "{err}");
    assert!(!sb.path("x.json").exists() && !sb.path("results.db").exists(), "nothing written on bad input");
    // And a threshold of zero is refused by the flag's parser.
    let out = sb.run(&["run", "-D", "1s", "--trace-threshold", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--trace-threshold"));
    // --trace-events: every entry must be a set's name or GROUP/NAME.
    for bad in ["sched", "Sched/sched_switch", "default,sched/", "sched/sched switch", ""] {
        let out = sb.run(&["run", "-D", "1s", "--trace-threshold", "100us", "--trace-events", bad, "--json", "x.json"]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--trace-events") && err.contains("GROUP/NAME"), "{bad:?}: {err}");
        assert!(!sb.path("x.json").exists(), "nothing written on bad input");
    }
}

/// An instance left by an rtscope that was SIGKILLed (tracing on, events
/// enabled) is removed by the next run, which says so in its set-up steps;
/// an instance of a live rtscope is left alone.
#[test]
fn a_killed_runs_instance_is_removed_by_the_next_run() {
    skip_unless_tracing!();
    let _lock = exclusive();
    let sb = Sandbox::new();
    let a = spawn_run(&sb, "a.json", &["-a", "0", "-t", "1", "-D", "60s", "-q", "--trace-threshold", "100us"]);
    let live = instance_of(a.id());
    wait_until("the live run's instance", Duration::from_secs(60), || live.is_dir());
    // A killed run's instance: a pid no process has, tracing on.
    let dead_pid = (4_000_000..4_100_000).find(|p| !Path::new(&format!("/proc/{p}")).exists()).unwrap();
    let dead = instance_of(dead_pid);
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("tracing_on"), "1").unwrap();
    let out = sb.cmd().args(["run", "-a", "0", "-t", "1", "-D", "200ms", "--no-store", "--json"]).arg(sb.path("b.json")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dead.exists(), "the dead run's instance is still there");
    assert!(live.is_dir(), "the live run's instance was removed");
    let run = read_json(&sb.path("b.json"));
    let step = run["realtime_setup"]["steps"].as_array().unwrap().iter().find(|s| s["step"] == "remove_stale_trace_instances").cloned();
    assert!(step.is_some_and(|s| s["detail"].as_str().unwrap().contains(&format!("rtscope-{dead_pid}"))), "{}", run["realtime_setup"]);
    a.sigint();
    let out = a.wait();
    assert_eq!(out.status.code(), Some(130));
    wait_until("the live run's instance to go", Duration::from_secs(60), || !live.exists());
}

/// `doctor` names another tool's active tracing (an instance with events
/// on) as a warning, and removes the instance of a killed rtscope run,
/// saying so.
#[test]
fn doctor_names_other_tracing_and_removes_a_killed_runs_instance() {
    skip_unless_tracing!();
    let _lock = exclusive();
    struct Rm(PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0.join("tracing_on"), "0");
            let _ = std::fs::write(self.0.join("set_event"), "");
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let other = Path::new(TRACEFS).join(format!("instances/other-tool-{}", std::process::id()));
    std::fs::create_dir(&other).unwrap();
    let _rm = Rm(other.clone());
    std::fs::write(other.join("set_event"), "sched:sched_switch\n").unwrap();
    std::fs::write(other.join("tracing_on"), "1").unwrap();
    let dead_pid = (4_000_000..4_100_000).find(|p| !Path::new(&format!("/proc/{p}")).exists()).unwrap();
    let dead = instance_of(dead_pid);
    std::fs::create_dir(&dead).unwrap();
    let _rm_dead = Rm(dead.clone());
    let sb = Sandbox::new();
    let out = sb.cmd().args(["doctor", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("removed tracing instance rtscope-{dead_pid}")), "{err}");
    assert!(!dead.exists(), "the killed run's instance is still there");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "tracing.active").cloned().unwrap();
    assert_eq!(f["severity"], "warn", "{f}");
    let name = other.file_name().unwrap().to_str().unwrap();
    assert!(f["title"].as_str().unwrap().contains(&format!("instance {name} (1 event enabled)")), "{f}");
}

/// `--trace-events full` is recorded in the plan and enables the timer,
/// workqueue and x86 vector events unfiltered; an added `group/name` entry
/// lifts the default's filter on that event.
#[test]
fn trace_events_full_and_added_entries() {
    skip_unless_tracing!();
    let _lock = shared();
    let sb = Sandbox::new();
    let run = sb.run_json("full.json", &["-a", "1", "-t", "1", "-D", "1s", "--no-store", "--trace-threshold", "10ms", "--trace-events", "full"]);
    assert_eq!(run["plan"]["trace"]["events"], serde_json::json!(["full"]));
    let events: Vec<&str> = run["trace"]["events"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for e in ["sched/sched_switch", "timer/hrtimer_expire_entry", "workqueue/workqueue_execute_start"] {
        assert!(events.contains(&e), "{e} not enabled: {events:?}");
    }
    if std::path::Path::new("/sys/kernel/tracing/events/irq_vectors/local_timer_entry").exists() {
        assert!(events.contains(&"irq_vectors/local_timer_entry"), "{events:?}");
    }
    assert!(run["trace"].get("filters").is_none(), "full is unfiltered: {}", run["trace"]);
    let run = sb
        .run_json("added.json", &["-a", "1", "-t", "1", "-D", "1s", "--no-store", "--trace-threshold", "10ms", "--trace-events", "default,sched/sched_wakeup"]);
    let filters = &run["trace"]["filters"];
    assert!(filters.get("sched/sched_wakeup").is_none() && filters.get("sched/sched_switch").is_some(), "{filters}");
}
