//! Probe-specific flags of `rtscope run` (`--periods`, `--msg-size`,
//! `--noise-threshold`, `--noise-policy`, `--iterations`, `--back-to-back`)
//! and their validated form, [`ProbeSettings`], carried in the `RunPlan`.
//!
//! Also the `--probe NAME:VARIANT` syntax: [`split_spec`] separates the
//! probe from its variant selector and [`ProbeSettings::wants`] answers
//! whether a probe should run a given variant.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};

use crate::units;
use crate::error::BadInput;
use crate::measure::Probe;
use crate::model::{Nanos, ProbeOptions};
use crate::sys::sched::Policy;

/// Default `--msg-size` (bytes), as the source experiments' 16-byte messages.
pub const DEFAULT_MSG_SIZE: usize = 16;
/// Largest `--msg-size` for `pipe` (pipes have no per-message limit; this
/// only keeps the buffers small). `mq` is bounded by the system's limit.
pub const MAX_MSG_SIZE: usize = 1 << 20;
/// The system's POSIX message-queue size limit, read at plan time.
pub const MQ_MSGSIZE_MAX_PATH: &str = "/proc/sys/fs/mqueue/msgsize_max";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NoisePolicy {
    /// SCHED_OTHER busy loop (default): never starves the machine.
    Other,
    /// SCHED_FIFO at -p: sees only what preempts an RT task, plus RT throttling.
    Fifo,
}

#[derive(Debug, Clone, Args)]
pub struct ProbeOpts {
    /// Periods for `periodic` [default 10ms,30ms,50ms] and `maxrate` [default
    /// 200us,100us,50us,20us,10us], comma-separated; a bare number is µs.
    #[arg(long, value_delimiter = ',', value_parser = parse_period, allow_hyphen_values = true)]
    pub periods: Option<Vec<u64>>,

    /// Message size in bytes for `pipe` and `mq` (1 up to the mq limit, see
    /// /proc/sys/fs/mqueue/msgsize_max).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MSG_SIZE, value_parser = parse_msg_size, allow_hyphen_values = true)]
    pub msg_size: usize,

    /// `noise`: smallest gap between two clock reads counted as noise.
    #[arg(long, value_name = "TIME", default_value = "1us", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub noise_threshold: u64,

    /// `noise`: scheduling policy of the busy loop.
    #[arg(long, value_enum, default_value_t = NoisePolicy::Other)]
    pub noise_policy: NoisePolicy,

    /// Events per variant for the event probes (sem, pipe, mq, signal,
    /// switch, preempt, periodic); the run of a variant ends at N samples or
    /// at its share of -D, whichever comes first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    pub iterations: Option<u64>,

    /// sem, pipe, mq, signal: send the next event as soon as the previous one
    /// is done (as `perf bench sched pipe`) instead of once every -i.
    #[arg(long)]
    pub back_to_back: bool,

    /// Priority of the sending thread of sem, pipe, mq, signal and preempt
    /// [default: one below -p, so the receiver preempts the sender; give -p's
    /// value to match rt-tests, which run both at the same priority].
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), allow_hyphen_values = true)]
    pub sender_priority: Option<u8>,
}

fn parse_period(s: &str) -> Result<u64, String> {
    if s.trim().is_empty() {
        return Err("empty period; give periods such as 10ms,30ms,50ms (a bare number is µs)".into());
    }
    units::parse_interval(s)
}

fn parse_msg_size(s: &str) -> Result<usize, String> {
    let allowed = format!("use a whole number of bytes from 1 to {MAX_MSG_SIZE} (mq: up to {MQ_MSGSIZE_MAX_PATH})");
    let v: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a number of bytes; {allowed}"))?;
    if v == 0 || v > MAX_MSG_SIZE {
        return Err(format!("{v} bytes is out of range; {allowed}"));
    }
    Ok(v)
}

/// The system's mq message size limit (8192 on a default Linux).
pub fn mq_msgsize_max() -> usize {
    std::fs::read_to_string(MQ_MSGSIZE_MAX_PATH).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(8192)
}

/// `sem:mutex` → (`sem`, Some(`mutex`)); `sem` → (`sem`, None).
pub fn split_spec(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once(':') {
        Some((p, v)) => (p.trim(), Some(v.trim())),
        None => (spec.trim(), None),
    }
}

/// True when selector `sel` picks `variant`: equal, or a leading
/// `/`-separated part of it (`mutex` picks `mutex/same-cpu`).
pub fn selects(sel: &str, variant: &str) -> bool {
    variant == sel || (variant.starts_with(sel) && variant[sel.len()..].starts_with('/'))
}

/// Validated probe options, part of the `RunPlan`.
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    /// Selectors per probe; a probe absent here runs every variant.
    pub variants: BTreeMap<String, Vec<String>>,
    /// `--periods` as given; empty = each probe's default.
    pub periods_ns: Vec<u64>,
    pub msg_size: usize,
    pub noise_threshold_ns: u64,
    pub noise_policy: Policy,
    pub iterations: Option<u64>,
    pub back_to_back: bool,
    /// `--sender-priority` (None: one below the plan's priority).
    pub sender_priority: Option<u8>,
    /// True when -a or -t was given: probes that default to one CPU
    /// (`noise`, `maxrate`) then use the plan's threads and CPUs.
    pub cpus_explicit: bool,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings {
            variants: BTreeMap::new(),
            periods_ns: Vec::new(),
            msg_size: DEFAULT_MSG_SIZE,
            noise_threshold_ns: 1_000,
            noise_policy: Policy::Other,
            iterations: None,
            back_to_back: false,
            sender_priority: None,
            cpus_explicit: false,
        }
    }
}

impl ProbeSettings {
    pub fn from_opts(o: &ProbeOpts, variants: BTreeMap<String, Vec<String>>, cpus_explicit: bool) -> ProbeSettings {
        ProbeSettings {
            variants,
            periods_ns: o.periods.clone().unwrap_or_default(),
            msg_size: o.msg_size,
            noise_threshold_ns: o.noise_threshold,
            noise_policy: match o.noise_policy {
                NoisePolicy::Other => Policy::Other,
                NoisePolicy::Fifo => Policy::Fifo,
            },
            iterations: o.iterations,
            back_to_back: o.back_to_back,
            sender_priority: o.sender_priority,
            cpus_explicit,
        }
    }

    /// Does `probe` run `variant`?
    pub fn wants(&self, probe: &str, variant: &str) -> bool {
        match self.variants.get(probe) {
            None => true,
            Some(sels) => sels.iter().any(|s| selects(s, variant)),
        }
    }

    /// `--periods`, or `default` when not given.
    pub fn periods_or(&self, default: &[u64]) -> Vec<u64> {
        if self.periods_ns.is_empty() {
            default.to_vec()
        } else {
            self.periods_ns.clone()
        }
    }

    pub fn to_model(&self) -> ProbeOptions {
        ProbeOptions {
            variants: self.variants.clone(),
            periods_ns: self.periods_ns.iter().map(|&p| Nanos(p)).collect(),
            msg_size: self.msg_size,
            noise_threshold_ns: Nanos(self.noise_threshold_ns),
            noise_policy: self.noise_policy.name().to_string(),
            iterations: self.iterations.unwrap_or(0),
            back_to_back: self.back_to_back,
            sender_priority: self.sender_priority.unwrap_or(0),
        }
    }
}

/// Collects `--probe NAME[:VARIANT]` items, checking each selector against
/// the probe's variants.
#[derive(Debug, Default)]
pub struct VariantSelection {
    // None: every variant of the probe.
    chosen: BTreeMap<String, Option<Vec<String>>>,
}

impl VariantSelection {
    pub fn add(&mut self, probe: &dyn Probe, sel: Option<&str>) -> Result<(), BadInput> {
        let name = probe.name();
        let Some(sel) = sel else {
            self.chosen.insert(name.to_string(), None);
            return Ok(());
        };
        let all = probe.variants();
        if all.is_empty() {
            return Err(BadInput(format!(
                "--probe {name}:{sel}: the probe '{name}' has no variants to choose from{}; use --probe {name}",
                if matches!(name, "periodic" | "maxrate") { " (its variants are the --periods)" } else { "" }
            )));
        }
        if sel.is_empty() || !all.iter().any(|v| selects(sel, v)) {
            return Err(BadInput(format!(
                "--probe {name}:{sel}: unknown variant '{sel}' of '{name}'; allowed: {} (or a leading part such as '{}')",
                all.join(", "),
                all[0].split('/').next().unwrap_or(all[0])
            )));
        }
        let entry = self.chosen.entry(name.to_string()).or_insert_with(|| Some(Vec::new()));
        if let Some(v) = entry {
            if !v.iter().any(|x| x == sel) {
                v.push(sel.to_string());
            }
        }
        Ok(())
    }

    /// Selectors of the probes that run only some variants.
    pub fn finish(self) -> BTreeMap<String, Vec<String>> {
        self.chosen.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
    }
}

/// Checks that need the system (the mq size limit) or the CPU set: a
/// cross-CPU variant asked for by name needs two CPUs in -a.
pub fn check_against_system(probes: &[String], s: &ProbeSettings, cpus: &[usize]) -> Result<(), BadInput> {
    if cpus.len() < 2 {
        for (probe, sels) in &s.variants {
            let all = crate::measure::probe_by_name(probe).map(|p| p.variants()).unwrap_or(&[]);
            for sel in sels {
                let picked: Vec<&&str> = all.iter().filter(|v| selects(sel, v)).collect();
                if !picked.is_empty() && picked.iter().all(|v| v.ends_with("/cross-cpu")) {
                    return Err(BadInput(format!(
                        "--probe {probe}:{sel}: a cross-CPU variant needs two CPUs, but -a/--affinity gives only {}; give two CPUs (e.g. -a 0,1) or choose a same-cpu variant",
                        crate::units::cpu_list_str(cpus)
                    )));
                }
            }
        }
    }
    if probes.iter().any(|p| p == "mq") {
        let max = mq_msgsize_max();
        if s.msg_size > max {
            return Err(BadInput(format!(
                "--msg-size {}: larger than this system's message-queue limit of {max} bytes ({MQ_MSGSIZE_MAX_PATH}); use 1 to {max}, or raise the limit as root",
                s.msg_size
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_whole_parts_only() {
        assert!(selects("mutex", "mutex/same-cpu"));
        assert!(selects("mutex/same-cpu", "mutex/same-cpu"));
        assert!(!selects("mutex/same", "mutex/same-cpu"));
        assert!(!selects("mut", "mutex/same-cpu"));
        assert!(!selects("posix", "mutex/same-cpu"));
        assert_eq!(split_spec("sem:mutex"), ("sem", Some("mutex")));
        assert_eq!(split_spec("timer"), ("timer", None));
    }

    #[test]
    fn msg_size_and_periods() {
        assert_eq!(parse_msg_size("16").unwrap(), 16);
        assert!(parse_msg_size("0").is_err());
        assert!(parse_msg_size("x").is_err());
        assert!(parse_msg_size(&(MAX_MSG_SIZE + 1).to_string()).is_err());
        assert_eq!(parse_period("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_period("200").unwrap(), 200_000);
        assert!(parse_period("").is_err());
        assert!(parse_period("0").is_err());
    }
}
