//! `rtscope factors`: run's flags plus the factors, the rounds and the
//! report (docs/factors.md). Parsing only; `commands::factors` runs it.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::RunArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FactorsFormat {
    Term,
    Md,
    Html,
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Knobs: dma-latency (held, released), load (idle, cpu, ...), priority (1-99), policy (fifo, rr, other, deadline), \
printk (0-8), irq-affinity (all, off-measured), rt-runtime (µs), timer-migration (0, 1), thp (always, madvise, never), ksm (0, 1), \
watchdog, soft-watchdog, nmi-watchdog (0, 1), workqueue-cpumask (all, off-measured, CPU list). The first level is the baseline. \
Host knobs need root; their originals are journaled and restored on every exit (docs/factors.md).")]
pub(crate) struct FactorsArgs {
    /// A factor and its levels, the first one the baseline: NAME=LEVEL,LEVEL[,...]; repeat for more factors
    /// (e.g. --factor dma-latency=held,released --factor load=idle,cpu).
    #[arg(long = "factor", value_name = "NAME=LEVELS")]
    pub(crate) factors: Vec<String>,

    /// Rounds: each runs every cell once, in its own random order.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub(crate) rounds: u32,

    /// Also estimate every two-factor interaction (full factorial designs).
    #[arg(long)]
    pub(crate) interactions: bool,

    /// Format of the report printed (and of --report FILE).
    #[arg(long, value_enum, default_value_t = FactorsFormat::Term)]
    pub(crate) format: FactorsFormat,

    /// Also write the report to FILE, in --format (html: with the effect plot).
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,

    /// Seed of the run order (printed with every experiment, so an order can be repeated) [default: from the clock].
    #[arg(long)]
    pub(crate) seed: Option<u64>,

    /// Analyse a stored experiment again (its tag, e.g. fx-20261127T010203Z), measuring nothing.
    #[arg(long, value_name = "EXPERIMENT")]
    pub(crate) analyse: Option<String>,

    #[command(flatten)]
    pub(crate) run: RunArgs,
}
