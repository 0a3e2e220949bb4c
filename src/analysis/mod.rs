//! Pure functions over the result model, unit-tested one module at a time:
//!
//! - `percentiles`: nearest-rank percentiles from histograms, re-binning,
//!   exceedance curves;
//! - `deadline`: deadline misses and their probability per hour;
//! - `evt`: the statistical worst case (peaks over threshold, GPD fit,
//!   guardrails);
//! - `compare`: systems side by side, ratios, bin tables, two-sample tests;
//! - `check`: the CI gate's cases (bounds, baseline ratio, majority);
//! - `warnings`: what in a result the reader should know before trusting
//!   it, each with advice;
//! - `summary`: all of the above for one or more runs, the input of every
//!   report renderer (the layer above).
//!
//! The statistics themselves (nearest rank, bucket percentiles, moments, the
//! tests' tail probabilities) are defined once in the `stats` module below.

pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod deadline;
pub(crate) mod evt;
pub(crate) mod percentiles;
pub(crate) mod suites;
pub(crate) mod summary;
pub(crate) mod warnings;
