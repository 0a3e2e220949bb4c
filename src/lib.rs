//! rtscope as a library: the binary (`src/main.rs`) is a thin shell over
//! these modules. docs/architecture.md gives their layers (imports point
//! down only, checked by tests/layers.rs) and the data flow:
//! plan (`plan`) → real-time set-up and probes (`runner`, `measure`) →
//! model (`model`) → store (`store`) → analysis (`analysis`) → report (`report`).

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod error;
pub mod import;
pub mod live;
pub mod load;
pub mod measure;
pub mod plan;
pub mod model;
pub mod monitor;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod serve;
pub mod store;
pub mod sys;
pub mod stats;
pub mod sysinfo;
pub mod target;
pub mod trace;
pub mod units;
pub mod doctor;
pub mod entry;
