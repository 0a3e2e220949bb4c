//! Importers: other tools' output converted into the result model, so
//! systems rtscope cannot run on (RTAI, Xenomai, VxWorks, other boards) can
//! enter a comparison. One file per format, each declaring its [`Format`]
//! (name, sniffer, parser); the rest is split by role:
//! - [`format`]: the registry ([`FORMATS`]), detection by content
//!   ([`detect`], [`detect_head`]) and dispatch to a format's parser;
//! - [`read`]: lines, fields and [`ParseError`] (line and what was expected);
//! - [`fold`]: histograms and per-second series in bounded memory;
//! - [`build`]: the intermediate [`Parsed`]/[`Series`] every parser produces
//!   and [`build_run`], which turns them into a schema v1 [`crate::model::Run`] with
//!   `imported_from` and `fidelity` notes;
//! - [`merge`]: the merged entry of a probe/variant, its members folded
//!   through the one distribution type, their moments pooled.
//!
//! The conversion rules (also in docs/schema.md, "Imported runs"):
//! - Latencies become integer ns; µs sources are exact to the µs and say so
//!   in `fidelity`.
//! - Histogram buckets become inclusive `[lo_ns, hi_ns]` ranges; a source's
//!   overflow count becomes one bucket from the histogram's limit up to the
//!   reported max, so counts still sum to `samples` (rule 4 of the
//!   architecture: no sample is lost, even in conversion).
//! - Percentiles are computed from the buckets by nearest rank and reported
//!   as the top of their bucket, clamped to [min, max], as for native runs.
//! - A summary-only source (min/avg/max, e.g. ptsematest) gets one bucket
//!   `[min, max]` holding every sample and an empty `percentiles_ns`, with a
//!   fidelity note "summary only: ...". Readers must treat an empty
//!   `percentiles_ns` as "unknown", never as zero.
//! - Negative latencies (early wake-ups in RTAI/Xenomai): the signed min,
//!   mean and max go into the entry's `signed` object, which reports and
//!   comparisons show; the unsigned fields (and per-second series) clamp
//!   them to 0, and a fidelity note says so.
//! - Missed periods a source cannot count (cyclictest, rtla, the rt-tests
//!   IPC tools but pmqtest's timeouts, bins-csv) are unknown, not 0:
//!   `overruns_known: false` and a fidelity note; verdicts treat them so.
//! - Inputs are read line by line ([`Lines`]), histograms folded past
//!   [`Hist::RAW_LIMIT`] buckets and per-second series bounded
//!   ([`Seconds`]): a 200 MB file costs memory for what it holds, not for
//!   its size.
//!
//! Parsers never panic on any input (property-tested in tests/import.rs):
//! every failure is a [`ParseError`] naming the line and what was expected.

pub mod build;
pub(crate) mod fold;
pub mod format;
pub(crate) mod merge;
pub(crate) mod read;

pub(crate) mod bins_csv;
pub(crate) mod cyclictest_hist;
pub(crate) mod cyclictest_json;
pub(crate) mod cyclictest_stream;
pub mod ipc;
pub(crate) mod oslat_json;
pub(crate) mod rtai;
pub(crate) mod rtla;
pub(crate) mod suites_csv;
pub(crate) mod xenomai;

pub(crate) use build::Building;
pub use build::{build_run, Context, Parsed};
pub(crate) use build::{Rows, Series, Shape};
pub(crate) use fold::{folded_note, Hist, Seconds};
pub use format::{detect, detect_head, parse, Format, FORMATS};
pub(crate) use format::{format_list, parse_reader_with, probe_per_row, takes_period, ParseOptions, Reopen, Systems};
pub use read::ParseError;
pub(crate) use read::{clamp_negative, decimal_us_to_ns, float, int, read_head, strip_ansi, uint, us_to_ns, Line, ReadSeek};
