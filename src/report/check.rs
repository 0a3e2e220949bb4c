//! The CI gate's outputs: text (a line per case and the verdict), JSON (the
//! [`CheckReport`]), JUnit XML (one testcase per entry and bound, written
//! with quick-junit) and LAVA (`lava-test-case` lines a LAVA test shell runs).

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::analysis::check::{fmt_value, CheckReport};

/// One line per case, the notes, then `result: PASS|FAIL (…)`.
pub(crate) fn text(r: &CheckReport, width: Option<usize>) -> String {
    let mut out = String::new();
    let mut line = |first: &str, s: &str| {
        out.push_str(&crate::report::term::paragraph(s, first, "     ", width));
        out.push('\n');
    };
    for c in &r.cases {
        line(if c.passed { "PASS " } else { "FAIL " }, &c.message);
    }
    for n in &r.notes {
        line("note: ", n);
    }
    let failed = r.cases.iter().filter(|c| !c.passed).count();
    let mut rt = if r.notes.iter().any(|n| n.contains("without PREEMPT_RT")) { " on a kernel without PREEMPT_RT (see note)" } else { "" }.to_string();
    if r.notes.iter().any(|n| n.contains("ran emulated (")) {
        rt.push_str(" on emulated figures: they rank kernels, they are not board latencies (see note)");
    }
    line("result: ", &format!("{}{rt} ({failed} of {} checks failed)", if r.passed { "PASS" } else { "FAIL" }, r.cases.len()));
    out
}

/// A LAVA test case name: letters, digits, `-_.` only.
pub(crate) fn lava_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect()
}

/// `lava-test-case NAME --result pass|fail [--measurement V --units U]`
/// per case; notes as shell comments.
pub(crate) fn lava(r: &CheckReport) -> String {
    let mut out = String::new();
    for n in &r.notes {
        out.push_str(&format!("# note: {}\n", n.replace('\n', " ")));
    }
    for c in &r.cases {
        let mut line = format!("lava-test-case {} --result {}", lava_name(&c.name), if c.passed { "pass" } else { "fail" });
        if let Some(m) = c.measurement {
            let (v, units) = match c.unit {
                "us" => (format!("{m:.1}"), "us"),
                // 0, not Rust's `0e0`; a non-zero ratio in exponent form (1e-5).
                _ if c.metric == crate::analysis::check::Metric::MissRatio && m == 0.0 => ("0".to_string(), "ratio"),
                _ if c.metric == crate::analysis::check::Metric::MissRatio => (format!("{m:e}"), "ratio"),
                _ => (format!("{m:.0}"), "count"),
            };
            line.push_str(&format!(" --measurement {v} --units {units}"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// JUnit XML: one suite `rtscope check`, one testcase per case (classname
/// the entry, name the bound); a failed case carries the measurement and
/// the bound in its message; notes go to the suite's system-out.
pub(crate) fn junit(r: &CheckReport) -> anyhow::Result<String> {
    let mut suite = TestSuite::new("rtscope check");
    for c in &r.cases {
        let status = if c.passed {
            TestCaseStatus::success()
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(c.message.clone());
            s.set_type(if c.kind == "baseline" { "baseline" } else { "bound" });
            s
        };
        let short = c.name.rsplit('/').next().unwrap_or(&c.name).to_string();
        let mut tc = TestCase::new(short, status);
        tc.set_classname(c.entry.label());
        if c.passed {
            tc.set_system_out(c.message.clone());
        }
        if let Some(m) = c.measurement {
            tc.add_property(quick_junit::Property::new("measurement", fmt_value(c.metric, m)));
        }
        suite.add_test_case(tc);
    }
    if !r.notes.is_empty() {
        suite.set_system_out(r.notes.join("\n"));
    }
    let mut report = Report::new("rtscope");
    report.add_test_suite(suite);
    Ok(report.to_string()?)
}
