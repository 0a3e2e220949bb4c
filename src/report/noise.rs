//! Lines printed after the summary when `noise` ran: per merged entry, the
//! total noise time, the share of the CPU the busy loop kept, and the note
//! on what the loop's policy means (the numbers alone would mislead).

use crate::model::Run;
use crate::report::blocks::Block;
use crate::units::fmt_ns;

/// The lines as terminal text, or "" when no `noise` result is in the run.
pub fn lines(run: &Run) -> String {
    crate::report::term::render_blocks(&blocks(run), false, None)
}

/// The lines of each merged entry after a blank line, a preformatted block
/// each; nothing when no `noise` result is in the run.
pub(crate) fn blocks(run: &Run) -> Vec<Block> {
    let mut blocks = Vec::new();
    for r in run.results.iter().filter(|r| r.probe == "noise" && r.thread.is_none()) {
        let Some(n) = &r.extras.noise else { continue };
        let mut out = format!(
            "\nnoise ({}, {}): {} gaps above {} in {:.3} s, total {:.3} ms, {:.3} % of the CPU left to the loop, longest {:.1} us\n",
            r.phase,
            r.variant.as_deref().unwrap_or(crate::report::blocks::NOT_APPLICABLE),
            r.samples,
            fmt_ns(n.threshold_ns.0),
            n.loop_ns.as_secs_f64(),
            n.total_noise_ns.0 as f64 / 1e6,
            n.available_pct,
            r.max_ns.as_micros_f64(),
        );
        if let Some(note) = &r.extras.note {
            out.push_str(&format!("  {note}\n"));
        }
        blocks.push(Block::Pre(out));
    }
    blocks
}
