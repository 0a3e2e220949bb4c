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

pub mod check;
pub mod compare;
pub mod deadline;
pub mod evt;
pub mod percentiles;
pub mod suites;
pub mod summary;
pub mod warnings;
