//! Renderers: each a pure function of the analysis output
//! (`crate::analysis::summary::Analysis`) to bytes, one per file:
//! `term` (also the end-of-run summary table), `md`, `json`, `csv`, `html`;
//! `check` renders the CI gate (text, JSON, JUnit XML, LAVA lines).
//! `blocks` holds the layout-free tables the text formats share; `plots`
//! draws the SVG charts the HTML report inlines and `--plots DIR` writes;
//! `escape` makes finished text safe to print on a terminal.
//!
//! Every report format is a [`Renderer`] (hyperfine's `Exporter` is the
//! shape): a value holding the format's choices (unit, colour, width, the
//! plots) whose `render` is a pure function of the analysis to the bytes
//! `rtscope report` writes.

pub mod blocks;
pub mod check;
pub mod csv;
pub mod escape;
pub mod html;
pub mod json;
pub mod maxrate;
pub mod md;
pub mod noise;
pub mod plots;
pub mod presets;
pub mod prometheus;
pub mod term;

/// One report format: the bytes of the report on `a`, nothing else done
/// (no file written, nothing printed).
pub trait Renderer {
    fn render(&self, a: &crate::analysis::summary::Analysis) -> anyhow::Result<Vec<u8>>;
}
