//! Renderers: each a pure function of the result model (or analysis output)
//! to text. `term`: the summary table printed at the end of `rtscope run`.

pub mod maxrate;
pub mod noise;
pub mod term;
