//! `rtscope probes`: list the probes `--probe` accepts.

use crate::error::EXIT_OK;

pub(crate) fn cmd() -> anyhow::Result<u8> {
    let tracers = crate::measure::tracer::available();
    for info in crate::measure::infos() {
        let name = info.name;
        println!("{name:<10} {}", info.about);
        if let Some(kind) = info.kernel_tracer {
            let here = match &tracers {
                Some(t) if t.iter().any(|t| t == kind.name()) => "this kernel has the tracer",
                Some(_) => "this kernel lacks the tracer: not available here",
                None => "tracefs not mounted or not readable: availability unknown",
            };
            println!("{:<10} {here}", "");
        }
        if !info.variants.is_empty() {
            println!("{:<10} variants (--probe {name}:VARIANT): {}", "", info.variants.join(", "));
        }
    }
    Ok(EXIT_OK)
}
