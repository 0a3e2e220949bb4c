//! Golden files: what rtscope writes must not change by accident. Result
//! schema v1 byte for byte (a full result — trace windows, load phases,
//! periodic, noise and maxrate entries — read and written back), the report
//! JSON of that result, and an imported run. The doctor JSON's golden is in
//! tests/doctor.rs (it needs that file's fake host tree).
//!
//! A deliberate change to what is written updates the golden file in the same
//! commit (`cargo insta review` for the snapshots; the result fixture only with
//! a schema version change, docs/schema.md).

mod common;

use std::path::Path;
use std::process::Command;

const RESULT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden/result-v1.json");

/// rtscope in the repository, uncoloured, with no database set.
fn golden_rtscope() -> Command {
    let mut c = common::rtscope_with(common::Db::Unset);
    c.current_dir(env!("CARGO_MANIFEST_DIR")).env("NO_COLOR", "1");
    c
}

fn stdout_of(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{c:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn result_v1_reads_and_writes_back_byte_for_byte() {
    let golden = std::fs::read_to_string(RESULT).unwrap();
    let run: rtscope::model::Run = serde_json::from_str(&golden).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.json");
    rtscope::store::json::write_run(&out, &run).unwrap();
    let again = std::fs::read_to_string(&out).unwrap();
    if std::env::var_os("RTSCOPE_BLESS").is_some() {
        std::fs::write(RESULT, &again).unwrap();
        return;
    }
    assert!(again == golden, "the result written back differs from {RESULT}: schema v1 changed");
    // The fixture is a full result: these parts are in it.
    let v: serde_json::Value = serde_json::from_str(&golden).unwrap();
    assert!(v["trace"]["snapshots"].as_u64().unwrap() > 0);
    assert!(v["results"].as_array().unwrap().iter().any(|r| r["worst"].as_array().unwrap().iter().any(|w| w["trace"].is_object())));
    for probe in ["timer", "periodic", "noise", "maxrate"] {
        assert!(v["results"].as_array().unwrap().iter().any(|r| r["probe"] == probe), "{probe}");
    }
    assert_eq!(v["phases"].as_array().unwrap().len(), 2);
}

#[test]
fn report_json_of_the_golden_result() {
    let json = stdout_of(golden_rtscope().args(["report", "--format", "json", "tests/fixtures/golden/result-v1.json"]));
    insta::assert_snapshot!("golden_report_json", json);
}

#[test]
fn imported_cyclictest_run() {
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/cyclictest.json").exists());
    let json = stdout_of(golden_rtscope().args(["import", "--dry-run", "tests/fixtures/import/cyclictest.json"]));
    insta::assert_snapshot!("golden_import_cyclictest_json", json);
}
