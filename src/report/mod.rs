//! Renderers: each a pure function of the analysis output
//! (`crate::analysis::summary::Analysis`) to bytes, one per file:
//! `term` (also the end-of-run summary table), `md`, `json`, `csv`, `html`;
//! `check` renders the CI gate (text, JSON, JUnit XML, LAVA lines).
//! `blocks` holds the layout-free tables the text formats share; `plots`
//! draws the SVG charts the HTML report inlines and `--plots DIR` writes;
//! `escape` makes finished text safe to print on a terminal.

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
