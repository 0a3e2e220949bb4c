//! Probe-specific flags of `rtscope run` (`--periods`, `--msg-size`,
//! `--noise-threshold`, `--noise-policy`, `--iterations`, `--back-to-back`)
//! and [`settings`], which turns them into the validated
//! [`ProbeOptions`]: the one type the plan carries, the probes are told and
//! the result records.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};

use super::given::Given;
use crate::measure::DEFAULT_MSG_SIZE;
use crate::model::{self, ProbeOptions};
use crate::plan::probes::{MAX_MSG_SIZE, MQ_MSGSIZE_MAX_PATH};
use crate::plan::Site;
use crate::units;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NoisePolicy {
    /// SCHED_OTHER busy loop (default): never starves the machine.
    Other,
    /// SCHED_FIFO at -p: sees only what preempts an RT task, plus RT throttling.
    Fifo,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ProbeOpts {
    /// Periods for `periodic` [default 10ms,30ms,50ms] and `maxrate` [default
    /// 200us,100us,50us,20us,10us], comma-separated; a bare number is µs.
    #[arg(long, value_delimiter = ',', value_parser = parse_period, allow_hyphen_values = true)]
    pub(crate) periods: Option<Vec<u64>>,

    /// Message size in bytes for `pipe` and `mq` (1 up to the mq limit, see
    /// /proc/sys/fs/mqueue/msgsize_max).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MSG_SIZE, value_parser = parse_msg_size, allow_hyphen_values = true)]
    pub(crate) msg_size: usize,

    /// `noise`: smallest gap between two clock reads counted as noise.
    #[arg(long, value_name = "TIME", default_value = "1us", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) noise_threshold: u64,

    /// `noise`: scheduling policy of the busy loop.
    #[arg(long, value_enum, default_value_t = NoisePolicy::Other)]
    pub(crate) noise_policy: NoisePolicy,

    /// Events per variant for the event probes (sem, pipe, mq, signal,
    /// switch, preempt, periodic); the run of a variant ends at N samples or
    /// at its share of -D, whichever comes first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    pub(crate) iterations: Option<u64>,

    /// sem, pipe, mq, signal: send the next event as soon as the previous one
    /// is done (as `perf bench sched pipe`) instead of once every -i.
    #[arg(long)]
    pub(crate) back_to_back: bool,

    /// Priority of the sending thread of sem, pipe, mq, signal and preempt
    /// [default: one below -p, so the receiver preempts the sender; give -p's
    /// value to match rt-tests, which run both at the same priority].
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99), allow_hyphen_values = true)]
    pub(crate) sender_priority: Option<u8>,

    /// `pi`: how long the medium-priority thread computes per event (the
    /// inversion `none` shows); at most 100ms.
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = parse_pi_burst, allow_hyphen_values = true)]
    pub(crate) pi_burst: u64,

    /// `throughput`: Thread-Metric's counting interval [default 30s, as
    /// Thread-Metric]; each test runs whole intervals within its share of -D.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_tm_interval, allow_hyphen_values = true)]
    pub(crate) tm_interval: u64,

    /// `--policy deadline`: the SCHED_DEADLINE runtime per period [default:
    /// 60 % of the deadline, as cyclicdeadline]; under 2ms it needs the
    /// scheduler's HRTICK feature.
    #[arg(long, value_name = "TIME", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) dl_runtime: Option<u64>,

    /// `--policy deadline`: the relative deadline [default: the period, -i].
    #[arg(long, value_name = "TIME", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) dl_deadline: Option<u64>,

    /// `signal:chain`: threads the signal passes through (2-64, signaltest's -t).
    #[arg(long, value_name = "N", default_value_t = crate::measure::chain::DEFAULT_CHAIN, value_parser = parse_chain, allow_hyphen_values = true)]
    pub(crate) chain: usize,

    /// `migrate`: busy time of each thread per period (rt-migrate-test's -r).
    #[arg(long, value_name = "TIME", default_value = "20ms", value_parser = parse_migrate_time, allow_hyphen_values = true)]
    pub(crate) migrate_run: u64,

    /// `migrate`: idle time between periods (rt-migrate-test's -s).
    #[arg(long, value_name = "TIME", default_value = "100ms", value_parser = parse_migrate_time, allow_hyphen_values = true)]
    pub(crate) migrate_sleep: u64,

    /// `migrate`: a thread starting later than a lower-priority one by more
    /// than this is a violation (rt-migrate-test's -m).
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) migrate_max_err: u64,
}

/// The validated probe options from the flags (`given`: which were on the
/// command line), the `--probe` variant selection, whether -a/-t was given
/// and the planned probes, for probes run at `site`. An option is recorded
/// when a planned probe reads its flag (`measure::ProbeInfo::flags`;
/// `--chain` only for the chain variant); `chain` and `migrate_*` are 0
/// (absent from the result) otherwise. An agent takes the options of its
/// plan line ([`on_agent`]).
pub(crate) fn settings(
    o: &ProbeOpts,
    given: &Given,
    variants: BTreeMap<String, Vec<String>>,
    cpus_explicit: bool,
    probes: &[String],
    site: Site,
) -> ProbeOptions {
    if site == Site::Agent {
        return on_agent(o, given, variants);
    }
    let mut s = ProbeOptions {
        variants,
        periods_ns: o.periods.clone().unwrap_or_default(),
        msg_size: o.msg_size,
        noise_threshold_ns: o.noise_threshold,
        noise_policy: match o.noise_policy {
            NoisePolicy::Other => model::NoisePolicy::Other,
            NoisePolicy::Fifo => model::NoisePolicy::Fifo,
        },
        iterations: o.iterations,
        back_to_back: o.back_to_back,
        sender_priority: o.sender_priority,
        pi_burst_ns: o.pi_burst,
        tm_interval_ns: o.tm_interval,
        dl_runtime_ns: o.dl_runtime,
        dl_deadline_ns: o.dl_deadline,
        chain: o.chain,
        migrate_run_ns: o.migrate_run,
        migrate_sleep_ns: o.migrate_sleep,
        migrate_max_err_ns: o.migrate_max_err,
        cpus_explicit,
    };
    let reads =
        |flag: &str, variant: Option<&str>| probes.iter().any(|n| crate::measure::is(n, |i| i.flags.contains(&flag)) && variant.is_none_or(|v| s.wants(n, v)));
    let (chain, migrate) = (reads("--chain", Some("chain")), reads("--migrate-run", None));
    if !chain {
        s.chain = 0;
    }
    if !migrate {
        (s.migrate_run_ns, s.migrate_sleep_ns, s.migrate_max_err_ns) = (0, 0, 0);
    }
    s
}

/// The probe options an agent takes (the keys of its plan line,
/// `agent_host::session::PLAN_KEYS`); the others are not the agent's and stay
/// unknown (0), a size not given is the agent's own (0).
fn on_agent(o: &ProbeOpts, given: &Given, variants: BTreeMap<String, Vec<String>>) -> ProbeOptions {
    ProbeOptions {
        variants,
        periods_ns: o.periods.clone().unwrap_or_default(),
        iterations: o.iterations,
        msg_size: if given.msg_size { o.msg_size } else { 0 },
        ..Default::default()
    }
}

fn parse_chain(s: &str) -> Result<usize, String> {
    let max = crate::measure::chain::MAX_CHAIN;
    match s.trim().parse::<usize>() {
        Ok(n) if (2..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a chain length; give 2 to {max} threads")),
    }
}

fn parse_migrate_time(s: &str) -> Result<u64, String> {
    let v = units::parse_interval(s)?;
    if !(1_000_000..=10_000_000_000).contains(&v) {
        return Err(format!("{s} is out of range; give 1ms to 10s"));
    }
    Ok(v)
}

fn parse_period(s: &str) -> Result<u64, String> {
    if s.trim().is_empty() {
        return Err("empty period; give periods such as 10ms,30ms,50ms (a bare number is µs)".into());
    }
    units::parse_interval(s)
}

fn parse_pi_burst(s: &str) -> Result<u64, String> {
    let v = units::parse_interval(s)?;
    if v > crate::measure::pi::MAX_BURST_NS {
        return Err(format!("{s} is longer than 100ms; the burst keeps a CPU busy at real-time priority, give 1us to 100ms"));
    }
    Ok(v)
}

fn parse_tm_interval(s: &str) -> Result<u64, String> {
    let v = units::parse_duration(s)?;
    if v < 100_000_000 {
        return Err(format!("{s} is shorter than 100ms; give an interval such as 30s (Thread-Metric's) or 2s"));
    }
    Ok(v)
}

fn parse_msg_size(s: &str) -> Result<usize, String> {
    let allowed = format!("use a whole number of bytes from 1 to {MAX_MSG_SIZE} (mq: up to {MQ_MSGSIZE_MAX_PATH})");
    let v: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a number of bytes; {allowed}"))?;
    if v == 0 || v > MAX_MSG_SIZE {
        return Err(format!("{v} bytes is out of range; {allowed}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

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
