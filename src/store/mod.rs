//! Where results are kept. `json`: the exchange format, one file per run,
//! written atomically.

pub mod json;
