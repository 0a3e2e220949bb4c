//! cpuidle: the idle driver, the C-states of the measured CPUs with their exit latencies, and
//! whether `/dev/cpu_dma_latency` (the PM QoS device rtscope holds at 0 during a run) exists.
//!
//! A CPU that sleeps in a deep C-state needs the state's exit latency (often 50–200 µs) before
//! it can run the woken task; that time lands in every measured latency.

use super::{evidence, fmt_cpus, shell_set, Ctx, Evidence, Finding, Severity};

/// The first fix for deep idle states (also the advice of a traced window whose CPU was
/// in an idle state with an exit latency: `trace::advice`).
pub(crate) const FIX_DMA_LATENCY: &str = "Keep /dev/cpu_dma_latency open with 0 written (rtscope run does)";
/// The boot-time fix for deep idle states.
pub(crate) const FIX_MAX_CSTATE: &str = "`processor.max_cstate=1 intel_idle.max_cstate=0`";

/// Exit latencies at or below this are harmless for a real-time host (C1/POLL class).
const SHALLOW_US: u64 = 10;

struct State {
    cpu: usize,
    dir: String,
    name: String,
    latency_us: u64,
    disabled: bool,
}

pub(crate) fn check(ctx: &Ctx) -> Vec<Finding> {
    vec![c_states(ctx), pm_qos(ctx)]
}

/// The C-states of the measured CPUs, CPU by CPU in the directory order.
fn states_of(ctx: &Ctx) -> Vec<State> {
    let mut states = Vec::new();
    for &cpu in ctx.cpus {
        let base = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
        for s in ctx.list(&base).into_iter().filter(|n| n.starts_with("state")) {
            let dir = format!("{base}/{s}");
            let name = ctx.value(&format!("{dir}/name")).unwrap_or_else(|| s.clone());
            let latency_us = ctx.value(&format!("{dir}/latency")).and_then(|v| v.parse().ok()).unwrap_or(0);
            let disabled = ctx.value(&format!("{dir}/disable")).as_deref() == Some("1");
            states.push(State { cpu, dir, name, latency_us, disabled });
        }
    }
    states
}

/// The idle driver and whether any enabled C-state of a measured CPU is deep.
fn c_states(ctx: &Ctx) -> Finding {
    let (drv_ev, driver) = ctx.read("/sys/devices/system/cpu/cpuidle/current_driver");
    let (gov_ev, _) = ctx.read("/sys/devices/system/cpu/cpuidle/current_governor");
    let states = states_of(ctx);
    let deep: Vec<&State> = states.iter().filter(|s| !s.disabled && s.latency_us > SHALLOW_US).collect();
    let mut ev = vec![drv_ev, gov_ev];
    // Show the states of the first measured CPU that has any, plus every deep enabled one.
    if let Some(first) = states.first().map(|s| s.cpu) {
        for s in states.iter().filter(|s| s.cpu == first) {
            ev.push(state_ev(s));
        }
    }
    for s in deep.iter().filter(|s| Some(s.cpu) != states.first().map(|f| f.cpu)).take(8) {
        ev.push(state_ev(s));
    }
    let cpus = ctx.cpus_str();
    let f = match driver.as_deref() {
        None | Some("none") | Some("") if states.is_empty() => {
            Finding::new("cpuidle.states", Severity::Ok, "No cpuidle driver: idle CPUs use the default halt, no deep C-states").why(
                "Without a cpuidle driver the CPU idles in the architecture's default state (HLT), \
             whose exit latency is a few µs; there is no deep C-state to wake from.",
            )
        }
        _ if deep.is_empty() => Finding::new(
            "cpuidle.states",
            Severity::Ok,
            format!("cpuidle driver {}: no enabled C-state above {SHALLOW_US} µs exit latency on CPUs {cpus}", driver.as_deref().unwrap_or("?")),
        )
        .why("Only shallow C-states are enabled, so waking an idle measured CPU costs at most a few µs."),
        _ => deep_states(&deep),
    };
    f.evidence(ev)
}

/// The warning for enabled deep C-states (`deep` not empty), with the commands that disable them.
fn deep_states(deep: &[&State]) -> Finding {
    let worst = deep.iter().map(|s| s.latency_us).max().unwrap_or(0);
    let names: Vec<String> = {
        let mut n: Vec<String> = deep.iter().map(|s| s.name.clone()).collect();
        n.sort();
        n.dedup();
        n
    };
    let cpus_deep: Vec<usize> = deep.iter().map(|s| s.cpu).collect();
    let per_state: Vec<String> = {
        let mut v: Vec<String> = deep
            .iter()
            .filter(|s| s.cpu == deep[0].cpu)
            .map(|s| {
                let idx = s.dir.rsplit("state").next().unwrap_or("N").to_string();
                format!("echo 1 | tee /sys/devices/system/cpu/cpu{}/cpuidle/state{idx}/disable", shell_set(&cpus_deep))
            })
            .collect();
        v.dedup();
        v
    };
    Finding::new(
        "cpuidle.states",
        Severity::Warn,
        format!("Deep C-states enabled on CPUs {} ({}; worst exit latency {worst} µs)", fmt_cpus(&cpus_deep), names.join(", ")),
    )
    .why(format!(
        "An idle CPU in a deep C-state needs up to {worst} µs to wake before it can run \
         the woken real-time task; that delay lands in the measured latency. rtscope run \
         writes 0 to /dev/cpu_dma_latency for the whole run, which makes the governor \
         avoid these states — other real-time applications must do the same."
    ))
    .fix(format!("{FIX_DMA_LATENCY}, or disable the states: {}; or boot with {FIX_MAX_CSTATE}.", per_state.join("; ")))
}

/// Whether `/dev/cpu_dma_latency` (the PM QoS device) exists.
fn pm_qos(ctx: &Ctx) -> Finding {
    let dma = "/dev/cpu_dma_latency";
    let present = ctx.exists(dma);
    let ev = vec![Evidence { path: dma.into(), value: if present { "present".into() } else { "missing".into() } }];
    if present {
        Finding::new("cpuidle.pm_qos", Severity::Ok, "/dev/cpu_dma_latency is available")
            .why(
                "Holding this device open with 0 written asks the cpuidle governor to keep every \
                 CPU out of C-states whose exit latency exceeds 0 µs for as long as it stays open; \
                 rtscope run does this.",
            )
            .evidence(ev)
    } else {
        Finding::new("cpuidle.pm_qos", Severity::Warn, "/dev/cpu_dma_latency is missing")
            .why(
                "Without the PM QoS device neither rtscope nor a real-time application can keep \
                 CPUs out of deep C-states at run time.",
            )
            .fix(
                "Check that devtmpfs is mounted on /dev (it is created by the kernel's PM QoS \
                 core); otherwise limit C-states at boot with `processor.max_cstate=1 \
                 intel_idle.max_cstate=0` or `idle=poll`.",
            )
            .evidence(ev)
    }
}

fn state_ev(s: &State) -> Evidence {
    evidence(&s.dir, Some(&format!("{} latency={}us{}", s.name, s.latency_us, if s.disabled { " disabled" } else { "" })))
}
