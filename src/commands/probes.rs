//! `rtscope probes`: list the probes `--probe` accepts.

use crate::error::EXIT_OK;
use crate::measure::PROBES;

pub fn cmd() -> anyhow::Result<u8> {
    let tracers = crate::measure::tracer::available();
    for (name, what) in PROBES {
        println!("{name:<10} {what}");
        if crate::measure::tracer::Kind::of_probe(name).is_some() {
            let here = match &tracers {
                Some(t) if t.iter().any(|t| t == name) => "this kernel has the tracer",
                Some(_) => "this kernel lacks the tracer: not available here",
                None => "tracefs not mounted or not readable: availability unknown",
            };
            println!("{:<10} {here}", "");
        }
        if let Some(v) = crate::measure::probe_by_name(name).map(|p| p.variants()).filter(|v| !v.is_empty()) {
            println!("{:<10} variants (--probe {name}:VARIANT): {}", "", v.join(", "));
        }
    }
    Ok(EXIT_OK)
}
