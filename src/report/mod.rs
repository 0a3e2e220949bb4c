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

pub(crate) mod blocks;
pub(crate) mod check;
pub(crate) mod csv;
pub(crate) mod escape;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod maxrate;
pub(crate) mod md;
pub mod noise;
pub(crate) mod plots;
pub(crate) mod presets;
pub(crate) mod prometheus;
pub(crate) mod term;

/// One report format: the bytes of the report on `a`, nothing else done
/// (no file written, nothing printed).
pub(crate) trait Renderer {
    fn render(&self, a: &crate::analysis::summary::Analysis) -> anyhow::Result<Vec<u8>>;
}
