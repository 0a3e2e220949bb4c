//! Command-line arguments, in two stages (as ripgrep's lowargs/hiargs):
//! this module holds clap's view, which only parses and range-checks values
//! and has no side effects; [`plan`] then probes the system (online CPUs,
//! output paths) and builds the validated [`plan::RunPlan`].

pub(crate) mod analysis_opts;
pub(crate) mod applies;
pub(crate) mod describe;
pub(crate) mod factors;
pub(crate) mod given;
pub(crate) mod load;
pub(crate) mod overrides;
pub(crate) mod plan;
pub(crate) mod probe_opts;
pub(crate) mod store_opts;
pub(crate) mod target;

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::units;

use crate::sys::sched::Policy;

#[derive(Debug, Parser)]
#[command(
    name = "rtscope",
    version,
    about = "Measure how fast and how predictably this system answers events",
    long_about = "rtscope measures real-time latency (timer wake-up, periodic jitter, semaphore, mutex, pipe, \
message-queue and signal hand-offs, task switch, preemption, OS noise, the highest sustainable rate) with one clock, \
in nanoseconds, as full lossless distributions, and keeps the host fingerprint and the plan with every result."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,

    /// Lay tables and paragraphs out in N columns [default: the terminal's width (COLUMNS honoured), 80 when piped].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(40..))]
    pub(crate) width: Option<u16>,

    /// Every column, no wrapping: tables and paragraphs as wide as they are.
    #[arg(long, global = true, conflicts_with = "width")]
    pub(crate) wide: bool,
}

// Parsed once per process: RunArgs' size does not matter, boxing it would
// only make every use site longer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run an experiment and save its result (JSON, schema v1).
    Run(RunArgs),
    /// Run the probes continuously in windows (phases cycling), storing each window; serve /metrics for Prometheus.
    // -D is run's flag; for monitor it is the whole monitor's length.
    #[command(mut_arg("duration", |a| a
        .help("How long the monitor runs in all (the last window is cut to end on time): 35s, 8h, 1d [default: until Ctrl-C]")
        .long_help(None::<&str>)
        .hide_default_value(true)))]
    Monitor(MonitorArgs),
    /// List the probes `--probe` accepts.
    Probes,
    /// Audit this host for settings that hurt real-time latency, with the fix for each.
    Doctor(DoctorArgs),
    /// List the runs saved in the history database.
    History(store_opts::HistoryArgs),
    /// Show one stored run: host, plan, summary table, tags, import notes.
    Show(store_opts::ShowArgs),
    /// Add (or with --remove, remove) a tag on a stored run; `@TAG` names tagged runs elsewhere.
    Tag(store_opts::TagArgs),
    /// Delete stored runs.
    Rm(store_opts::RmArgs),
    /// Write a stored run as a schema v1 JSON result file (byte-identical to the original for native runs).
    Export(store_opts::ExportArgs),
    /// Convert another tool's output (cyclictest, oslat, rtla, rt-tests IPC, Xenomai, RTAI, bins-csv, Rhealstone and Thread-Metric tables) and store it.
    Import(store_opts::ImportArgs),
    /// Compare results side by side: percentiles, ratios to the first, bin tables, a two-sample test.
    Compare(analysis_opts::CompareArgs),
    /// Report on results: tables, deadline misses, statistical worst case; term, md, json, csv or html with plots.
    Report(analysis_opts::ReportArgs),
    /// Browse, compare and drill into the history in a local web page (read-only).
    Serve(store_opts::ServeArgs),
    /// Gate results on bounds or a baseline for CI: exit 0 pass, 3 fail; text, JSON, JUnit XML or LAVA.
    Check(analysis_opts::CheckArgs),
    /// List the built-in presets `rtscope run --preset NAME` accepts.
    Presets,
    /// Which setting matters here: vary knobs over randomised rounds, measure each one's effect with an interval, restore everything.
    Factors(factors::FactorsArgs),
    /// A load process (started by `rtscope run` for each load; not for people).
    #[command(name = "__load", hide = true)]
    LoadWorker(load::LoadWorkerArgs),
    /// Parse the rest as an rtscope command line and run nothing: exit 0 when
    /// it parses, 2 with clap's message when not (tests/readme.rs checks every
    /// command README.md shows; not for people).
    #[command(name = "__parse", hide = true)]
    Parse(ParseArgs),
}

/// `rtscope __parse ARGS…`: the command line to parse, without `rtscope`.
#[derive(Debug, Args)]
pub(crate) struct ParseArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub(crate) args: Vec<std::ffi::OsString>,
}

/// [`Command::Parse`]: parse `args` as `rtscope ARGS…` with the same clap
/// declarations the real command line meets. Exit 0 when it parses (help and
/// version included), 2 with clap's message when it does not.
pub(crate) fn parse_only(args: &ParseArgs) -> u8 {
    let argv = std::iter::once(std::ffi::OsString::from("rtscope")).chain(args.args.iter().cloned());
    match Cli::command().try_get_matches_from(argv) {
        Ok(_) => crate::error::EXIT_OK,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => crate::error::EXIT_OK,
        Err(e) => {
            eprint!("{}", e.render());
            crate::error::EXIT_BAD_INPUT
        }
    }
}

/// The command line, parsed once from `argv` (read once, in `main`); on a
/// usage error clap prints it and exits 2 (`--help`/`--version` print and
/// exit 0). A `run` or `monitor` keeps which flags were given
/// ([`given::Given`], from clap's value sources) and the command line
/// (every URL's password in it redacted, `store::pgconn::redact_secrets`).
pub(crate) fn parse_or_exit(argv: Vec<std::ffi::OsString>) -> Cli {
    let matches = Cli::command().try_get_matches_from(&argv).unwrap_or_else(|e| exit_redacted(e));
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| exit_redacted(e));
    let run = match &mut cli.command {
        Command::Run(r) => Some(r),
        Command::Monitor(m) => Some(&mut m.run),
        Command::Factors(f) => Some(&mut f.run),
        _ => None,
    };
    if let (Some(run), Some((_, m))) = (run, matches.subcommand()) {
        run.given = given::Given::from_matches(m);
        // Captured once, here, with a database URL's password redacted: every
        // path that keeps or prints it (run, run --target, monitor) gets it so.
        run.command_line = argv.iter().map(|a| crate::store::pgconn::redact_secrets(&a.to_string_lossy())).collect();
    }
    cli
}

/// clap's usage error, with any URL's password in the arguments it quotes
/// (`unexpected argument 'postgres://u:pw@h/db'`) redacted; `--help` and
/// `--version` as clap prints them.
fn exit_redacted(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit()
    }
    eprint!("{}", crate::store::pgconn::redact_secrets(&e.render().to_string()));
    std::process::exit(e.exit_code())
}

/// `--listen` of `monitor` and `serve`: one address, resolved now (exit 2 if
/// it cannot be). A bare port (`9469` or `:9469`) binds localhost: exposing
/// a server beyond this host takes naming an address.
pub(crate) fn parse_listen(s: &str, example: &str) -> Result<std::net::SocketAddr, crate::error::BadInput> {
    use std::net::ToSocketAddrs;
    let port_only = s.strip_prefix(':').unwrap_or(s);
    let full = if !port_only.is_empty() && port_only.bytes().all(|b| b.is_ascii_digit()) { format!("127.0.0.1:{port_only}") } else { s.to_string() };
    full.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
        crate::error::BadInput(format!("--listen {s:?}: expected ADDRESS:PORT, e.g. {example} (localhost only unless you name another address)"))
    })
}

/// `rtscope monitor`: `run`'s probe, thread and output flags, plus the windows.
/// Here `-D` is how long the whole monitor runs (default: until Ctrl-C or
/// SIGTERM), and each probe measures one `--window` per window.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Here -D/--duration is how long the whole monitor runs (default: until Ctrl-C or SIGTERM); each probe measures one --window per window. Scenario files, --preset, --load and --deadline are run's, not monitor's."
)]
pub(crate) struct MonitorArgs {
    /// Length of one window: per window and probe/CPU, count, min, p50, p99, max and overruns are stored
    #[arg(long, default_value = "5m", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub(crate) window: u64,
    /// Phases to cycle through, each for its time, e.g. idle:5m,mixed:5m (load names as --load); default: idle throughout
    #[arg(long, value_name = "PHASE:DURATION,...")]
    pub(crate) cycle: Option<String>,
    /// Serve GET /metrics (Prometheus text format) on this address, e.g. 127.0.0.1:9469; a bare port (9469) binds localhost
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) listen: Option<String>,
    /// Also write the metrics to DIR/rtscope.prom after each window (node_exporter's textfile collector)
    #[arg(long, value_name = "DIR")]
    pub(crate) textfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PolicyArg {
    Fifo,
    Rr,
    Other,
    /// SCHED_DEADLINE (timer, periodic): period -i, --dl-runtime, --dl-deadline.
    Deadline,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Fifo => Policy::Fifo,
            PolicyArg::Rr => Policy::RoundRobin,
            PolicyArg::Other => Policy::Other,
            PolicyArg::Deadline => Policy::Deadline,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// How long each probe measures: 500ms, 30s, 5m, 2h, 1d (a bare number is seconds).
    #[arg(short = 'D', long, default_value = "30s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub(crate) duration: u64,

    /// Timer period: a bare number is µs (as cyclictest); 250us, 1ms, 100000ns accepted.
    #[arg(short = 'i', long, default_value = "1000", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) interval: u64,

    /// Real-time priority of the measuring threads (1-99).
    #[arg(short = 'p', long, default_value_t = 95, value_parser = clap::value_parser!(u8).range(1..=99), allow_hyphen_values = true)]
    pub(crate) priority: u8,

    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub(crate) policy: PolicyArg,

    /// Number of measuring threads [default: one per CPU of --affinity, else per online CPU].
    #[arg(short = 't', long, value_parser = clap::value_parser!(u32).range(1..=4096), allow_hyphen_values = true)]
    pub(crate) threads: Option<u32>,

    /// CPUs to measure on, e.g. 0,2-3; threads are pinned round-robin [default: all online].
    #[arg(short = 'a', long, value_parser = units::parse_cpuset)]
    pub(crate) affinity: Option<units::CpuSet>,

    /// Probes to run, comma-separated; NAME:VARIANT runs only that variant
    /// (e.g. sem:mutex,sem:posix/same-cpu; see `rtscope probes`).
    #[arg(long = "probe", value_delimiter = ',', default_value = "timer")]
    pub(crate) probes: Vec<String>,

    /// Write the result to this file (instead of --out DIR).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Directory for results, each file named by its start time.
    #[arg(long, value_name = "DIR", default_value = "rtscope-results")]
    pub(crate) out: PathBuf,

    /// No progress bar and no table; errors and warnings only.
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// Do not hold /dev/cpu_dma_latency at 0 during the run.
    #[arg(long)]
    pub(crate) no_dma_latency: bool,

    /// Print latencies in ns instead of µs.
    #[arg(long)]
    pub(crate) ns: bool,

    /// How many worst samples each thread keeps (with time, CPU and sequence number).
    #[arg(long, value_name = "K", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) worst: u32,

    #[command(flatten)]
    pub(crate) store: store_opts::StoreOpts,

    #[command(flatten)]
    pub(crate) analysis: analysis_opts::AnalysisOpts,
    #[command(flatten)]
    pub(crate) load: load::LoadArgs,
    #[command(flatten)]
    pub(crate) probe_opts: probe_opts::ProbeOpts,

    /// Trace samples later than this (e.g. 100us): a private tracefs instance records
    /// scheduler and interrupt events, and each late sample gets "what held the CPU".
    /// Probes: timer, periodic, maxrate, and sem, pipe, mq, signal, preempt (the
    /// receiver's CPU); timerlat from its own osnoise events. Needs root. A bare number is µs.
    #[arg(long, value_name = "LATENCY", value_parser = units::parse_interval)]
    pub(crate) trace_threshold: Option<u64>,

    /// Trace ring buffer per measured CPU, in KB (with --trace-threshold). Larger keeps
    /// longer windows; smaller is read faster after each late sample.
    #[arg(long, value_name = "KB", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub(crate) trace_buffer: u32,

    /// At most this many trace snapshots per run (with --trace-threshold).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) trace_max: u32,

    /// Events the trace records (with --trace-threshold): `default` (the cheapest set
    /// that still names the culprit: see docs/trace.md), `full` (adds hrtimer,
    /// workqueue and x86 vector events; costs more latency), and/or `group/name`
    /// entries, comma-separated (`default,timer/hrtimer_expire_entry`).
    #[arg(long, value_name = "LIST", default_value = "default", value_parser = parse_trace_events)]
    pub(crate) trace_events: TraceEvents,

    /// Call-chain samples per second on each measured CPU while tracing (with
    /// --trace-threshold): perf_event_open's software clock, kernel frames symbolised
    /// from /proc/kallsyms; each traced late sample then names the code paths that ran,
    /// and gaps in the samples show interrupts-off stretches. 0 turns sampling off.
    #[arg(long, value_name = "HZ", default_value_t = 4000, value_parser = clap::value_parser!(u32).range(0..=50_000))]
    pub(crate) trace_stacks: u32,

    /// Measure another system with rtscope-agent: exec:'CMD' (its stdin/stdout, e.g.
    /// exec:'ssh board rtscope-agent'), tcp:HOST:PORT (an agent started with --listen PORT)
    /// or serial:/dev/ttyUSB0[:BAUD]. See docs/agent.md ("Measuring another system with it").
    #[arg(long, value_name = "SPEC")]
    pub(crate) target: Option<String>,

    /// With --target: how long the agent may say nothing past a plan's own time before
    /// the session counts it gone (what arrived is kept, the run marked interrupted). Raise
    /// it for an emulated target on a busy host, which runs slower than real time.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = units::parse_duration)]
    pub(crate) target_silence: u64,

    /// With --target: write every byte of the session, both ways and timestamped, to FILE
    /// when it ends (for agent/check_output.py and bug reports; docs/agent.md, "Transcript").
    #[arg(long, value_name = "FILE")]
    pub(crate) target_transcript: Option<std::path::PathBuf>,

    /// Which flags were given on the command line (set by [`parse_or_exit`]).
    #[arg(skip)]
    pub(crate) given: given::Given,

    /// The command line as typed (set by [`parse_or_exit`]).
    #[arg(skip)]
    pub(crate) command_line: Vec<String>,
}

/// `--trace-events`, checked: each entry is `default`, `full`, `group/name` or
/// `group/*` (lower-case letters, digits and `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceEvents(pub Vec<String>);

fn parse_trace_events(s: &str) -> Result<TraceEvents, String> {
    let word = |w: &str| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_');
    let mut out = Vec::new();
    for e in s.split(',').map(str::trim) {
        let ok = match e.split_once('/') {
            None => e == "default" || e == "full",
            Some((g, n)) => word(g) && (n == "*" || word(n)),
        };
        if !ok {
            return Err(format!(
                "'{e}' is not an event: give `default`, `full` or GROUP/NAME as listed under /sys/kernel/tracing/events (e.g. sched/sched_switch)"
            ));
        }
        if !out.iter().any(|x| x == e) {
            out.push(e.to_string());
        }
    }
    Ok(TraceEvents(out))
}

#[derive(Debug, Clone, Args)]
pub(crate) struct DoctorArgs {
    /// Print the findings as JSON (schema: docs/schema.md, "doctor") instead of a listing.
    #[arg(long)]
    pub(crate) json: bool,

    /// CPUs you intend to measure, e.g. 1-3 or 2,3 [default: all online]; the same set
    /// as `rtscope run -a/--affinity`. Isolation and IRQ-affinity checks are judged against these.
    #[arg(long, short = 'a', visible_alias = "affinity", value_name = "CPUSET", value_parser = units::parse_cpuset)]
    pub(crate) cpus: Option<units::CpuSet>,

    /// Read /proc, /sys and /dev under DIR instead of / (tests; also $RTSCOPE_SYSROOT).
    #[arg(long, value_name = "DIR", hide = true)]
    pub(crate) root: Option<PathBuf>,
}
