//! Strings from result files never act on the terminal: a hostile host name
//! or phase (OSC retitle + CSI clear) is printed as visible text by every
//! human-readable output (report term/md, compare, check text, show), while
//! JSON output keeps the exact string.

mod common;

use common::{fixture, Sandbox};
use serde_json::Value;

const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2Jbox\r";

fn hostile_result(sb: &Sandbox, name: &str) -> String {
    let text = std::fs::read_to_string(fixture("../golden/result-v1.json")).unwrap();
    let mut run: Value = serde_json::from_str(&text).unwrap();
    run["host"]["hostname"] = Value::String(HOSTILE.into());
    for r in run["results"].as_array_mut().unwrap() {
        r["phase"] = Value::String(format!("idle{HOSTILE}"));
    }
    let path = sb.path(name);
    std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// No control character but newline and tab, and no escape sequence but our
/// own colours (none here: stdout is not a terminal, so no colour).
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect();
    assert!(bad.is_empty(), "{what} printed control characters {bad:?}:\n{text}");
    assert!(text.contains("\\x1b]0;owned\\x07\\x1b[2Jbox\\x0d"), "{what} does not show the hostile string as visible text:\n{text}");
}

#[test]
fn hostile_strings_are_shown_not_run() {
    let sb = Sandbox::new();
    let a = hostile_result(&sb, "a.json");
    let b = hostile_result(&sb, "b.json");

    for format in ["term", "md"] {
        let out = sb.run(&["report", &a, "--format", format]);
        assert!(out.status.success(), "report --format {format}: {}", String::from_utf8_lossy(&out.stderr));
        assert_inert(&format!("report --format {format}"), &out.stdout);
    }
    let out = sb.run(&["compare", &a, &b]);
    assert!(out.status.success(), "compare: {}", String::from_utf8_lossy(&out.stderr));
    assert_inert("compare", &out.stdout);

    // A bound of 1 s passes, a bound of 1 ns fails: the text either way.
    for (max, code) in [("1s", 0), ("1ns", 3)] {
        let out = sb.run(&["check", &a, "--max", max]);
        assert_eq!(out.status.code(), Some(code), "check --max {max}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect();
        assert!(bad.is_empty(), "check printed control characters {bad:?}:\n{text}");
    }

    // Stored and shown: `show` prints the host line from the database.
    let out = sb.run(&["import", &a]);
    assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
    let out = sb.run(&["show", "1"]);
    assert!(out.status.success(), "show: {}", String::from_utf8_lossy(&out.stderr));
    assert_inert("show", &out.stdout);

    // JSON keeps the exact bytes (escaped the JSON way, not altered).
    let out = sb.run(&["report", &a, "--format", "json"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\\\\x1b"), "JSON output was altered");
}
