//! `rtscope probes`: list the probes `--probe` accepts.

use crate::error::EXIT_OK;
use crate::measure::PROBES;

pub fn cmd() -> anyhow::Result<u8> {
    for (name, what) in PROBES {
        println!("{name:<10} {what}");
    }
    Ok(EXIT_OK)
}
