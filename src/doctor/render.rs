//! Renderers for `rtscope doctor`: a terminal listing grouped by severity, and JSON.
//!
//! Both are pure functions of a [`DoctorReport`]; the JSON shape is documented in
//! docs/schema.md under "doctor".

use serde::{Deserialize, Serialize};

use super::{fmt_cpus, Finding, Severity};

/// The document `rtscope doctor --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DoctorReport {
    pub(crate) schema_version: u32,
    /// The CPUs the findings were judged against.
    pub(crate) cpus: Vec<usize>,
    pub(crate) findings: Vec<Finding>,
}

/// Pretty JSON with a trailing newline.
pub(crate) fn render_json(r: &DoctorReport) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(r)?;
    s.push('\n');
    Ok(s)
}

/// How the listing breaks a long line: `fill(text, first, rest)` is `text`
/// after `first`, its further lines after `rest` (the face's width rule,
/// `report::term::paragraph`; the doctor sits below the renderers).
pub(crate) type Fill<'a> = &'a dyn Fn(&str, &str, &str) -> String;

/// The terminal listing: worst severity first, one line per finding with its evidence, why
/// and fix indented below (ok findings get the title and evidence only, and their why when a
/// factor experiment's measurement is cited in it: the reason an ok is ok here). Each line
/// is one paragraph of `fill`, its further lines under its text.
pub(crate) fn render_text(r: &DoctorReport, fill: Fill<'_>) -> String {
    let mut out = String::new();
    let mut line = |text: &str, first: &str, rest: &str| {
        out.push_str(&fill(text, first, rest));
        out.push('\n');
    };
    line(&format!("rtscope doctor — judged for CPUs {}", fmt_cpus(&r.cpus)), "", "  ");
    const UNDER: &str = "           ";
    for sev in [Severity::Bad, Severity::Warn, Severity::Info, Severity::Ok] {
        let group: Vec<&Finding> = r.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        line("", "", "");
        line(&format!("{} ({})", heading(sev), group.len()), "", "  ");
        for f in group {
            line(&f.title, &format!("  [{:<4}] {:<22} ", sev.as_str(), f.id), UNDER);
            for e in &f.evidence {
                line(&format!("{} = {}", e.path, e.value), UNDER, &format!("{UNDER}  "));
            }
            if sev != Severity::Ok || f.why.contains(MEASURED) {
                line(&f.why, &format!("{UNDER}why: "), &format!("{UNDER}     "));
                if let Some(fix) = &f.fix {
                    line(fix, &format!("{UNDER}fix: "), &format!("{UNDER}     "));
                }
            }
        }
    }
    let count = |s| r.findings.iter().filter(|f| f.severity == s).count();
    out.push_str(&format!("\n{} bad, {} warn, {} info, {} ok\n", count(Severity::Bad), count(Severity::Warn), count(Severity::Info), count(Severity::Ok)));
    out
}

/// How a cited measurement starts (`factors::citation`), appended to a why by `rtscope doctor`.
const MEASURED: &str = "measured: ";

fn heading(s: Severity) -> &'static str {
    match s {
        Severity::Bad => "BAD — measurements on this host are not real-time meaningful until fixed",
        Severity::Warn => "WARN — likely adds latency; fix before trusting worst cases",
        Severity::Info => "INFO — worth knowing when reading results",
        Severity::Ok => "OK",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ok_finding_shows_the_measurement_that_backs_it() {
        let plain = Finding::new("mm.ksm", Severity::Ok, "KSM is off").why("merging pages costs latency.");
        let cited = Finding::new("console.printk", Severity::Ok, "console log level 4")
            .why("console output can delay. measured: −3 % max [−20, +16] of timer/idle for printk=1 vs 7 (none seen), experiment fx-1.");
        let text = render_text(&DoctorReport { schema_version: 1, cpus: vec![0], findings: vec![plain, cited] }, &|s, first, _| format!("{first}{s}"));
        assert!(!text.contains("merging pages"), "an ok finding without a measurement keeps to its title: {text}");
        assert!(text.contains("why: console output can delay. measured: −3 % max"), "{text}");
    }
}
