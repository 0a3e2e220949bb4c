//! README.md is the front door (issue 62): every rtscope command it shows is
//! read from the file and parsed by rtscope's own argument parser
//! (`rtscope __parse`), so a renamed or removed flag breaks this test, not a
//! newcomer's first try; the commands that take seconds are run as written.

mod common;

use common::rtscope;

/// The README's shell lines: the contents of its ```sh blocks, with `\`
/// continuations joined.
fn shell_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            inside = !inside && t == "```sh";
            continue;
        }
        if !inside {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending));
            }
        }
    }
    lines
}

/// Split as sh does for the forms the README uses: words, '…' and "…"
/// quotes, and a `#` comment at the start of a word.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quote in README line: {line}");
    out.extend(word);
    out
}

/// The arguments after `rtscope` of each command the README shows
/// (`sudo rtscope …`, `cargo run --release -- …`).
fn rtscope_commands() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let mut cmds = Vec::new();
    for line in shell_lines(&text) {
        let mut w = words(&line);
        if w.first().map(String::as_str) == Some("sudo") {
            w.remove(0);
        }
        if w.first().map(String::as_str) == Some("rtscope") {
            cmds.push(w[1..].to_vec());
        } else if w.starts_with(&["cargo".into(), "run".into()]) {
            if let Some(i) = w.iter().position(|a| a == "--") {
                cmds.push(w[i + 1..].to_vec());
            }
        }
    }
    cmds
}

#[test]
fn readme_is_short_enough_for_a_newcomer() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let n = text.lines().count();
    assert!(n <= 300, "README.md has {n} lines; the reference belongs in docs/ (issue 62: at most 300)");
}

#[test]
fn every_command_in_the_readme_parses() {
    let cmds = rtscope_commands();
    // The README shows one command per main task: far more than this.
    assert!(cmds.len() >= 15, "only {} rtscope commands found in README.md: is the extraction broken?", cmds.len());
    let subcommands: std::collections::BTreeSet<&str> = cmds.iter().filter_map(|c| c.first().map(String::as_str)).collect();
    for s in ["run", "compare", "report", "factors", "doctor", "check", "history", "import", "monitor", "serve"] {
        assert!(subcommands.contains(s), "README.md shows no `rtscope {s}`: {subcommands:?}");
    }
    let mut failed = Vec::new();
    for c in &cmds {
        let out = rtscope().arg("__parse").args(c).output().expect("rtscope __parse");
        if out.status.code() != Some(0) {
            failed.push(format!("rtscope {}: {}", c.join(" "), String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(failed.is_empty(), "README commands that rtscope does not parse:\n{}", failed.join("\n"));
}

#[test]
fn the_parse_check_refuses_what_rtscope_refuses() {
    // The check must be able to fail: an unknown flag and an unknown
    // subcommand are exit 2 with clap's message, as the real command line is.
    for bad in [&["run", "--no-such-flag"][..], &["frobnicate"], &["run", "-D"]] {
        let out = rtscope().arg("__parse").args(bad).output().expect("rtscope __parse");
        assert_eq!(out.status.code(), Some(2), "`rtscope {}` parsed", bad.join(" "));
        assert!(String::from_utf8_lossy(&out.stderr).contains("error:"), "no message for `rtscope {}`", bad.join(" "));
    }
    let out = rtscope().args(["run", "--no-such-flag"]).output().expect("rtscope run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_quick_readme_commands_run_as_written() {
    // Those that take seconds and need no input file, a board or a server:
    // a plan shown without running (--dry-run) and the host audit.
    let quick: Vec<Vec<String>> =
        rtscope_commands().into_iter().filter(|c| c.iter().any(|a| a == "--dry-run") || c.first().map(String::as_str) == Some("doctor")).collect();
    assert!(quick.len() >= 2, "README.md no longer shows a --dry-run and a doctor command: {quick:?}");
    for c in &quick {
        let out = rtscope().args(c).output().expect("rtscope");
        assert_eq!(out.status.code(), Some(0), "`rtscope {}` failed: {}", c.join(" "), String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.is_empty(), "`rtscope {}` printed nothing", c.join(" "));
    }
}

#[test]
fn the_word_splitter_reads_quotes_and_comments() {
    assert_eq!(words(r#"rtscope run --load idle,'cmd:"make -j4"'   # a comment"#), ["rtscope", "run", "--load", "idle,cmd:\"make -j4\""]);
    assert_eq!(words("a 'b c' \"d#e\" f#g # h"), ["a", "b c", "d#e", "f#g"]);
    assert_eq!(shell_lines("```sh\na \\\n b\n```\n```\nno\n```\n"), ["a  b"]);
}
