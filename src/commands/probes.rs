//! `rtscope probes`: list the probes `--probe` accepts.

use crate::error::EXIT_OK;
use crate::report::term;

pub(crate) fn cmd() -> anyhow::Result<u8> {
    let tracers = crate::measure::tracer::available();
    // Each text wraps under itself at the width rule's width (80 piped).
    let width = term::width(false);
    let indent = " ".repeat(11);
    let line = |first: &str, text: &str| println!("{}", term::paragraph(text, first, &indent, width));
    for info in crate::measure::infos() {
        let name = info.name;
        line(&format!("{name:<10} "), info.about);
        if let Some(kind) = info.kernel_tracer {
            let here = match &tracers {
                Some(t) if t.iter().any(|t| t == kind.name()) => "this kernel has the tracer",
                Some(_) => "this kernel lacks the tracer: not available here",
                None => "tracefs not mounted or not readable: availability unknown",
            };
            line(&indent, here);
        }
        if !info.variants.is_empty() {
            line(&indent, &format!("variants (--probe {name}:VARIANT): {}", info.variants.join(", ")));
        }
    }
    Ok(EXIT_OK)
}
