//! `rtscope probes`: list the probes `--probe` accepts.

use crate::error::EXIT_OK;
use crate::measure::PROBES;

pub fn cmd() -> anyhow::Result<u8> {
    for (name, what) in PROBES {
        println!("{name:<10} {what}");
        if let Some(v) = crate::measure::probe_by_name(name).map(|p| p.variants()).filter(|v| !v.is_empty()) {
            println!("{:<10} variants (--probe {name}:VARIANT): {}", "", v.join(", "));
        }
    }
    Ok(EXIT_OK)
}
