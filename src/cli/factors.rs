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
cpu (measured CPUs as -a takes them, + joining several: 0,1 or 0+2,1+3), interval (periods as -i takes them), \
kernel (rt, stock, a vmlinuz path) and cmdline (none, kernel parameters) with --lab, printk (0-8), irq-affinity (all, off-measured), rt-runtime (µs), timer-migration (0, 1), thp (always, madvise, never), ksm (0, 1), \
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

    /// List the knobs: each one's kind, levels and, for a host knob, its value now
    /// (--format json: also the text of every file it touches), measuring nothing.
    #[arg(long)]
    pub(crate) list: bool,

    /// Boot factors (kernel, cmdline): the lab command that boots one guest per run, its words
    /// split as sh splits them (quotes, no expansion), e.g. --lab 'lab/kernel-lab --icount 1'
    /// (each run: CMD --kernel K --append-more PARAMS --out FILE -- <run flags>).
    #[arg(long, value_name = "CMD")]
    pub(crate) lab: Option<String>,

    #[command(flatten)]
    pub(crate) run: RunArgs,
}

/// The ids of the flags `rtscope factors` has on top of run's: they shape
/// the experiment, not a run.
fn own_ids(factors: &clap::Command) -> Vec<String> {
    let run = RunArgs::augment_args(clap::Command::new("run"));
    let run_ids: Vec<String> = run.get_arguments().map(|a| a.get_id().to_string()).collect();
    factors.get_arguments().map(|a| a.get_id().to_string()).filter(|id| !run_ids.contains(id)).collect()
}

/// The run flags of an `rtscope factors` command line, for a kernel-lab
/// guest's `rtscope run`: everything after the subcommand except the
/// experiment's own flags and the host's output and history flags (the host
/// writes and stores each guest's result). Flags are looked up in the
/// subcommand's own declarations, so `--x V` and `--x=V` are both dropped whole.
pub(crate) fn guest_run_args(command_line: &[String]) -> Vec<String> {
    let cmd = FactorsArgs::augment_args(clap::Command::new("factors"));
    let mut drop = own_ids(&cmd);
    drop.extend(["out", "json", "db", "no_store"].map(String::from));
    let start = command_line.iter().position(|a| a == "factors").map_or(command_line.len(), |i| i + 1);
    let mut out = Vec::new();
    let mut it = command_line[start..].iter();
    while let Some(t) = it.next() {
        if t == "--" {
            out.push(t.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        let Some(long) = t.strip_prefix("--") else {
            out.push(t.clone());
            continue;
        };
        let (name, inline) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(name)) else {
            out.push(t.clone());
            continue;
        };
        let takes_value = arg.get_action().takes_values();
        if drop.iter().any(|d| d == arg.get_id().as_str()) {
            if takes_value && !inline {
                it.next();
            }
            continue;
        }
        out.push(t.clone());
        if takes_value && !inline {
            if let Some(v) = it.next() {
                out.push(v.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn guest_run_args_keep_the_run_flags_and_drop_the_experiments_and_the_hosts() {
        let line = words(
            "rtscope factors --factor kernel=stock,rt --rounds 3 --lab lab/kernel-lab -D 2s -i 500 --probe timer,sem \
             --out /tmp/x --db=/tmp/h.db --no-store --seed=7 --deadline 150us -a 0 --interactions --format md --report r.md -q",
        );
        assert_eq!(guest_run_args(&line), words("-D 2s -i 500 --probe timer,sem --deadline 150us -a 0 -q"));
    }

    #[test]
    fn guest_run_args_pass_what_they_do_not_know() {
        // An unknown token is rtscope run's to refuse in the guest (the
        // lab's --check-only runs it through the host's --dry-run first).
        assert_eq!(guest_run_args(&words("rtscope factors --bogus 3 --factor=cmdline=none,idle=poll")), words("--bogus 3"));
    }
}
