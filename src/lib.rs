//! rtscope as a library: the binary (`src/main.rs`) is a thin shell over
//! these modules. docs/architecture.md gives their layers (imports point
//! down only, checked by tests/layers.rs) and the data flow:
//! plan (`plan`) → real-time set-up and probes (`runner`, `measure`) →
//! model (`model`) → store (`store`) → analysis (`analysis`) → report (`report`).

pub(crate) mod agent_host;
pub(crate) mod analysis;
pub(crate) mod cli;
pub mod commands;
pub(crate) mod doctor;
pub(crate) mod error;
pub(crate) mod factors;
pub mod import;
pub(crate) mod live;
pub(crate) mod load;
pub mod measure;
pub mod model;
pub(crate) mod monitor;
pub(crate) mod plan;
pub mod report;
pub(crate) mod runner;
pub mod scenario;
pub(crate) mod serve;
pub mod stats;
pub mod store;
pub(crate) mod sys;
pub(crate) mod sysinfo;
pub(crate) mod trace;
pub mod units;
