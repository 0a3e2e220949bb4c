//! Arguments of the history-store commands (`history`, `show`, `tag`, `rm`,
//! `export`, `import`) and the `--db`/`--no-store` flags `rtscope run` takes.
//! Values are only parsed here; the database is opened by the commands.

use std::path::PathBuf;

use clap::Args;

use crate::import::{Format, FORMATS};

/// Where the history database is; see `store::sqlite::resolve_path`.
#[derive(Debug, Clone, Args)]
pub(crate) struct DbOpts {
    /// History database [default: $RTSCOPE_DB, else $XDG_DATA_HOME/rtscope/results.db, else ~/.local/share/rtscope/results.db].
    #[arg(long, value_name = "PATH")]
    pub(crate) db: Option<PathBuf>,
}

/// `rtscope run` flags: save the result into the history database too.
#[derive(Debug, Clone, Args)]
pub(crate) struct StoreOpts {
    #[command(flatten)]
    pub(crate) db: DbOpts,
    /// Do not save the result in the history database (the JSON file is still written).
    #[arg(long)]
    pub(crate) no_store: bool,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct HistoryArgs {
    /// Only runs from this host (exact host name, or the system name of an import).
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// Only runs whose kernel release contains this text.
    #[arg(long)]
    pub(crate) kernel: Option<String>,
    /// Only runs with this tag.
    #[arg(long)]
    pub(crate) tag: Option<String>,
    /// Only runs started at or after this time: YYYY-MM-DD (UTC) or RFC 3339.
    #[arg(long, value_name = "DATE")]
    pub(crate) since: Option<String>,
    /// Only runs started before this time: YYYY-MM-DD (UTC, the whole day included) or RFC 3339.
    #[arg(long, value_name = "DATE")]
    pub(crate) until: Option<String>,
    /// Only runs whose host had this preemption model (none, voluntary, full, rt, lazy, as `rtscope show` prints it).
    #[arg(long, value_name = "MODEL")]
    pub(crate) preempt: Option<String>,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print latencies in ns instead of µs.
    #[arg(long)]
    pub(crate) ns: bool,
    /// The windows of monitor run ID (its time series) instead of the list of runs.
    #[arg(long, value_name = "ID")]
    pub(crate) windows: Option<i64>,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

/// `rtscope serve`: the history as web pages, read-only.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Pages: / (runs: filter, sort, tick runs to compare), /runs/ID (the run's report; its JSON at /runs/ID/json), /compare?runs=1,2,@TAG; JSON at /api/runs and /api/runs/ID (docs/serve.md). GET and HEAD only. Ctrl-C stops it (exit 0)."
)]
pub(crate) struct ServeArgs {
    /// Address to serve on; a bare port (8080) binds localhost, port 0 picks a free one
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub(crate) listen: String,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ShowArgs {
    /// Run id (see `rtscope history`).
    pub(crate) id: i64,
    /// Print latencies in ns instead of µs.
    #[arg(long)]
    pub(crate) ns: bool,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct TagArgs {
    /// Run id (see `rtscope history`).
    pub(crate) id: i64,
    /// Tag name: letters, digits and . _ - + : / (no spaces, not starting with @).
    pub(crate) name: String,
    /// Remove the tag instead of adding it.
    #[arg(long)]
    pub(crate) remove: bool,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RmArgs {
    /// Run ids to delete, with their results and tags.
    #[arg(required = true)]
    pub(crate) ids: Vec<i64>,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ExportArgs {
    /// Run id (see `rtscope history`).
    pub(crate) id: i64,
    /// Write to this file (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}

/// `import --format`: `auto` (recognise the format by content) or a format
/// of the importer registry, whose names and lines of help it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatArg {
    Auto,
    Named(Format),
}

fn format_parser() -> impl clap::builder::TypedValueParser<Value = FormatArg> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = std::iter::once(PossibleValue::new("auto").help("Recognise the format by the file's content"))
        .chain(FORMATS.iter().map(|f| PossibleValue::new(f.name()).help(f.about())));
    PossibleValuesParser::new(values).map(|s| Format::named(&s).map_or(FormatArg::Auto, FormatArg::Named))
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ImportArgs {
    /// The file to import (another tool's output, or an rtscope result file).
    pub(crate) file: PathBuf,
    /// Format of the file; `auto` recognises each format by its content.
    #[arg(long, value_name = "FORMAT", value_parser = format_parser(), default_value = "auto")]
    pub(crate) format: FormatArg,
    /// Name of the system the numbers belong to [default: the host name in the file, else the file name].
    /// For bins-csv, rhealstone-csv and thread-metric-csv: import only the column with this header.
    #[arg(long, value_name = "SYSTEM")]
    pub(crate) name: Option<String>,
    /// Load phase the numbers were taken under (idle, cpu, disk, network, ...).
    #[arg(long, default_value = "unspecified")]
    pub(crate) phase: String,
    /// Probe name to file the results under [default: per format, e.g. timer for cyclictest].
    #[arg(long)]
    pub(crate) probe: Option<String>,
    /// Tag every imported run with this tag.
    #[arg(long)]
    pub(crate) tag: Option<String>,
    /// Convert and print what would be stored, but do not store it.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// rtai-latency only: the test's period (e.g. 100us), which RTAI's `display` output does not print;
    /// without it (and no `# period` line) the sample count is imported as unknown.
    #[arg(long, value_name = "INTERVAL", value_parser = crate::units::parse_interval)]
    pub(crate) period: Option<u64>,

    /// Refuse input files larger than this (e.g. 1GiB) [default: 256MiB].
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_bytes, default_value = "256MiB")]
    pub(crate) max_size: u64,
    #[command(flatten)]
    pub(crate) db: DbOpts,
}
