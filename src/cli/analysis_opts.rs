//! Arguments of the analysis side: `--deadline` on `rtscope run`
//! ([`AnalysisOpts`], flattened into `RunArgs`), and the `compare` and
//! `report` subcommands. Values are parsed and range-checked here; the
//! inputs (result files) are read by `commands::inputs`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::units;

/// Flags of `rtscope run` that shape the end-of-run analysis.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AnalysisOpts {
    /// Count samples over this latency (misses), their ratio and the probability of a miss per hour;
    /// a bare number is µs (100, 100us, 1ms).
    #[arg(long, value_name = "LATENCY", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) deadline: Option<u64>,
}

/// Flags shared by `compare` and `report`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CommonReportOpts {
    /// Name the systems in input order (comma-separated or repeated) [default: host + kernel].
    #[arg(long = "name", value_name = "NAME", value_delimiter = ',')]
    pub(crate) names: Vec<String>,

    /// Show the bin tables (one row per bin, one count column per system) in the term and md
    /// formats, bins of WIDTH (a bare number is µs) [default width: 5us; JSON, CSV and HTML always
    /// have them].
    #[arg(long, value_name = "WIDTH", num_args = 0..=1, default_missing_value = "5us", value_parser = units::parse_interval)]
    pub(crate) bins: Option<u64>,

    /// How entries of several inputs are paired: phase (same phase name), probe (same probe, phases
    /// in order), auto (by phase, then the one loaded phase each input has and the others lack).
    #[arg(long = "match", value_enum, value_name = "BY", default_value_t = MatchArg::Auto)]
    pub(crate) match_by: MatchArg,

    /// Compare phase A of the first input with phase B of the others (comma-separated A=B pairs).
    #[arg(long, value_name = "A=B", value_delimiter = ',', value_parser = parse_phase_pair)]
    pub(crate) phases: Vec<(String, String)>,

    /// Print latencies in ns instead of µs.
    #[arg(long)]
    pub(crate) ns: bool,

    /// Write to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// Colour in the terminal format.
    #[arg(long, value_enum, default_value_t = ColourArg::Auto)]
    pub(crate) color: ColourArg,

    /// History database for inputs given as run ids or @TAG.
    #[command(flatten)]
    pub(crate) db: crate::cli::store_opts::DbOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MatchArg {
    Auto,
    Phase,
    Probe,
}

impl MatchArg {
    /// With `--phases`, as the analysis takes them.
    pub(crate) fn pairing(self, phases: &[(String, String)]) -> crate::analysis::compare::Pairing {
        use crate::analysis::compare::MatchBy;
        let by = match self {
            MatchArg::Auto => MatchBy::Auto,
            MatchArg::Phase => MatchBy::Phase,
            MatchArg::Probe => MatchBy::Probe,
        };
        crate::analysis::compare::Pairing { by, phases: phases.to_vec() }
    }
}

impl CommonReportOpts {
    /// The bin width (`--bins`, else the default 5 µs).
    pub(crate) fn bin_width(&self) -> u64 {
        self.bins.unwrap_or(crate::analysis::summary::DEFAULT_BIN_NS)
    }
    /// `--match` and `--phases` as the analysis takes them.
    pub(crate) fn pairing(&self) -> crate::analysis::compare::Pairing {
        self.match_by.pairing(&self.phases)
    }
}

/// `A=B`: two phase names.
fn parse_phase_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => Ok((a.trim().to_string(), b.trim().to_string())),
        _ => Err(format!("'{s}' is not a pair of phases; write FIRST=OTHER, e.g. --phases mixed=cpu")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColourArg {
    /// When standard output is a terminal and -o is not given.
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Term,
    Md,
    Json,
    Csv,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompareFormat {
    Term,
    Md,
    Json,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct CompareArgs {
    /// Results to compare: files, stored run ids, or @TAG (every run with that tag); the first is the reference of the ratios (B/A).
    #[arg(value_name = "RESULT", required = true, num_args = 1..)]
    pub(crate) inputs: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Term)]
    pub(crate) format: CompareFormat,

    #[command(flatten)]
    pub(crate) common: CommonReportOpts,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ReportArgs {
    /// Results: files, stored run ids, or @TAG; with several, the report compares them (the first is the reference).
    #[arg(value_name = "RESULT", required = true, num_args = 1..)]
    pub(crate) inputs: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Term)]
    pub(crate) format: ReportFormat,

    /// Also write every plot as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) plots: Option<PathBuf>,

    /// Count samples over this latency (misses) and the probability of a miss per hour; a bare number is µs.
    #[arg(long, value_name = "LATENCY", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub(crate) deadline: Option<u64>,

    /// Skip the statistical worst case (the slowest part of the analysis).
    #[arg(long)]
    pub(crate) no_pwcet: bool,

    #[command(flatten)]
    pub(crate) common: CommonReportOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckFormat {
    /// One line per case, then the verdict.
    Text,
    /// The check report (schema in docs/fleet.md).
    Json,
    /// `lava-test-case NAME --result pass|fail --measurement V --units us` lines for a LAVA test shell.
    Lava,
}

/// `rtscope check`: the CI gate.
#[derive(Debug, Clone, Args)]
pub(crate) struct CheckArgs {
    /// Results to check: files, stored run ids, or @TAG (every run with that tag).
    #[arg(value_name = "RESULT", required = true, num_args = 1..)]
    pub(crate) inputs: Vec<String>,

    /// Fail when the maximum latency is over LAT (a bare number is µs).
    #[arg(long, value_name = "LAT", value_parser = units::parse_interval)]
    pub(crate) max: Option<u64>,

    /// Fail when the 99th percentile is over LAT.
    #[arg(long, value_name = "LAT", value_parser = units::parse_interval)]
    pub(crate) p99: Option<u64>,

    /// Fail when the 99.9th percentile is over LAT.
    #[arg(long = "p99.9", value_name = "LAT", value_parser = units::parse_interval)]
    pub(crate) p99_9: Option<u64>,

    /// Fail when more than N periods were missed.
    #[arg(long, value_name = "N")]
    pub(crate) overruns: Option<u64>,

    /// Fail when a `migrate` entry has more than N periods with a priority-order violation.
    #[arg(long, value_name = "N")]
    pub(crate) violations: Option<u64>,

    /// Fail when the deadline misses per period are above R (e.g. 1e-6): a miss is a sample over
    /// --deadline or a missed period (overrun); periods = samples + missed periods.
    #[arg(long, value_name = "R", value_parser = parse_ratio_bound, requires = "deadline")]
    pub(crate) miss_ratio: Option<f64>,

    /// The deadline of --miss-ratio (a bare number is µs); given alone, no miss is allowed (as
    /// --miss-ratio 0).
    #[arg(long, value_name = "LAT", value_parser = units::parse_interval)]
    pub(crate) deadline: Option<u64>,

    /// Compare with these runs (file, id or @TAG; the median if several): max, p99.9 and p99 fail
    /// when over --ratio × the baseline's.
    #[arg(long, value_name = "RESULT", requires = "ratio")]
    pub(crate) baseline: Option<String>,

    /// With --baseline: how much worse than the baseline still passes (1.2 = 20 % worse).
    #[arg(long, value_name = "X", value_parser = parse_factor, requires = "baseline")]
    pub(crate) ratio: Option<f64>,

    /// With several runs, a case fails only when at least half of the runs fail it (else any run failing fails it).
    #[arg(long)]
    pub(crate) majority: bool,

    /// How entries of the inputs and the baseline are paired, as in compare: phase, probe, auto
    /// (by phase name; inputs of one phase each pair by probe).
    #[arg(long = "match", value_enum, value_name = "BY", default_value_t = MatchArg::Auto)]
    pub(crate) match_by: MatchArg,

    /// Check phase A of the first input against phase B of the others and the baseline (A=B pairs).
    #[arg(long, value_name = "A=B", value_delimiter = ',', value_parser = parse_phase_pair)]
    pub(crate) phases: Vec<(String, String)>,

    /// Also write the cases as JUnit XML (one testcase per entry and bound) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub(crate) format: CheckFormat,

    /// History database for inputs given as run ids or @TAG.
    #[command(flatten)]
    pub(crate) db: crate::cli::store_opts::DbOpts,
}

/// A ratio bound in [0, 1].
fn parse_ratio_bound(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a share of samples between 0 and 1 (e.g. 1e-6)")),
    }
}

/// A factor above 0.
fn parse_factor(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("'{s}' is not a factor above 0 (e.g. 1.2 for at most 20 % worse than the baseline)")),
    }
}
