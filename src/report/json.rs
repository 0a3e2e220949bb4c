//! JSON renderer: the analysis itself, serialised (see docs/schema.md,
//! "Report JSON"). Histograms and per-second series are left out — the
//! result files hold them. Pure function of the analysis.

use serde::Serialize;

use crate::analysis::summary::Analysis;

/// Version of the report JSON layout.
pub(crate) const REPORT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Wrapper<'a> {
    kind: &'static str,
    report_version: u32,
    #[serde(flatten)]
    analysis: &'a Analysis<'a>,
}

pub(crate) fn render(a: &Analysis) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&Wrapper { kind: "rtscope-report", report_version: REPORT_VERSION, analysis: a })?)
}

/// The report JSON as a [`crate::report::Renderer`]: [`render`] and a
/// final newline.
pub(crate) struct Json;

impl crate::report::Renderer for Json {
    fn render(&self, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        let mut s = render(a)?;
        s.push('\n');
        Ok(s.into_bytes())
    }
}
