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

/// `cmd` with standard output and error on a pseudo-terminal of `cols`
/// columns (as a user's 80-column terminal): what it printed, colours and
/// carriage returns taken out, and its exit code.
fn on_terminal(cmd: &mut std::process::Command, cols: u16) -> (String, Option<i32>) {
    use std::io::Read;
    use std::os::fd::OwnedFd;
    let size = nix::pty::Winsize { ws_row: 50, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
    let (master, slave): (OwnedFd, OwnedFd) = (pty.master, pty.slave);
    let mut child =
        cmd.stdin(std::process::Stdio::null()).stdout(slave.try_clone().unwrap()).stderr(slave.try_clone().unwrap()).spawn().expect("spawn rtscope");
    // The command holds its copies of the slave side until told otherwise:
    // dropped here, so the reader sees the end when the child is gone.
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    drop(slave);
    let reader = std::thread::spawn(move || {
        let mut f = std::fs::File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 8192];
        // EIO once the child (the last holder of the slave side) is gone.
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        bytes
    });
    let status = child.wait().unwrap();
    let bytes = reader.join().unwrap();
    let mut text = String::new();
    let raw = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
    // Escape sequences (colours, the live bar's line clearing) take no columns.
    let mut rest = raw.as_str();
    while let Some(i) = rest.find('\u{1b}') {
        text.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let end = if tail.starts_with('[') { tail.find(|c: char| c.is_ascii_alphabetic()).map_or(tail.len(), |e| e + 1) } else { tail.len().min(1) };
        rest = &tail[end..];
    }
    text.push_str(rest);
    // The live bar redraws its line after a carriage return: what stays is the last drawing.
    let text = text.lines().map(|l| l.rsplit('\r').next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    (text, status.code())
}

/// The widest line of `text`, in characters (every character rtscope prints
/// is one column: µ, ±, ×, −, —).
fn widest(text: &str) -> (usize, String) {
    text.lines().map(|l| (l.chars().count(), l.to_string())).max().unwrap_or_default()
}

/// A fake knob tree for a factor experiment that changes nothing here.
fn knob_tree(sb: &Sandbox) -> std::path::PathBuf {
    let root = sb.path("tree");
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/printk"), "4\t4\t1\t7").unwrap();
    root
}

/// Every command that prints a table or paragraphs, on an 80-column
/// terminal: no line wider than 80, the columns left out named; with
/// COLUMNS=120 the room is used (wider lines, fewer columns left out).
#[test]
fn every_output_fits_the_terminal() {
    let _s = common::serial();
    let sb = Sandbox::new();
    let golden = fixture("../golden/result-v1.json");
    let g = golden.to_str().unwrap();
    for _ in 0..3 {
        assert!(sb.run(&["import", g]).status.success());
    }
    // Five experiment tags on one run, as a factor experiment leaves them.
    for t in [
        "fx-20261128-141500-a1b2/design",
        "fx-20261128-141500-a1b2/round:01",
        "fx-20261128-141500-a1b2/cell:03",
        "fx-20261128-141500-a1b2/printk:1",
        "fx-20261128-141500-a1b2/dma-latency:held",
    ] {
        let out = sb.run(&["tag", "1", t]);
        assert!(out.status.success(), "tag {t}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A short experiment on fake knobs (nothing of this host changed), and a run's end.
    let root = knob_tree(&sb);
    let fx = |sb: &Sandbox| {
        let mut c = sb.cmd();
        c.env("RTSCOPE_KNOB_ROOT", &root).env("RTSCOPE_STATE_DIR", sb.path("state"));
        c
    };
    let json = sb
        .cmd()
        .args(["factors", "--factor", "printk=7,1", "--rounds", "3", "-D", "100ms", "-a", "0", "--format", "json"])
        .env("RTSCOPE_KNOB_ROOT", &root)
        .env("RTSCOPE_STATE_DIR", sb.path("state"))
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(0), "{}", String::from_utf8_lossy(&json.stderr));
    let exp = serde_json::from_slice::<Value>(&json.stdout).unwrap()["experiment"].as_str().unwrap().to_string();
    let result = sb.path("run.json");
    let run_args = ["run", "--probe", "timer,sem", "-D", "100ms", "-a", "0", "--deadline", "50us", "--no-store", "--json", result.to_str().unwrap()];
    let commands: Vec<(String, Vec<&str>)> = vec![
        ("run".into(), run_args.to_vec()),
        ("show".into(), vec!["show", "1"]),
        ("history".into(), vec!["history"]),
        ("history --tag".into(), vec!["history", "--tag", "fx-20261128-141500-a1b2/design"]),
        ("compare".into(), vec!["compare", "1", "2", "3"]),
        ("report".into(), vec!["report", g, "--deadline", "50us"]),
        ("check".into(), vec!["check", "1", "2", "--max", "10ms", "--deadline", "50us"]),
        ("doctor".into(), vec!["doctor"]),
        ("factors --analyse".into(), vec!["factors", "--analyse", &exp]),
        // Lists whose texts wrap under their own column.
        ("factors --list".into(), vec!["factors", "--list"]),
        ("probes".into(), vec!["probes"]),
        ("presets".into(), vec!["presets"]),
    ];
    let mut at = std::collections::BTreeMap::new();
    for cols in [80usize, 120] {
        for (name, args) in &commands {
            let mut c = if name.starts_with("factors") { fx(&sb) } else { sb.cmd() };
            c.args(args).env_remove("COLUMNS");
            if cols == 120 {
                c.env("COLUMNS", "120");
            }
            let (text, code) = on_terminal(&mut c, 80);
            assert!(code.is_some_and(|c| c == 0 || c == 3), "{name}: exit {code:?}\n{text}");
            let (w, line) = widest(&text);
            assert!(w <= cols, "{name} at {cols} columns printed a line of {w}:\n{line}\n\n{text}");
            at.insert((name.clone(), cols), text);
        }
    }
    // The run's end and a stored run: the summary fits, and says what it left out.
    for name in ["run", "show", "history", "report"] {
        let text = &at[&(name.to_string(), 80)];
        assert!(text.contains("left out to fit 80 columns: "), "{name} names what it left out:\n{text}");
    }
    // history: the tags as the first and a count; whole with --tag (as keys under the table).
    assert!(at[&("history".to_string(), 80)].contains("+4"), "{}", at[&("history".to_string(), 80)]);
    assert!(at[&("history --tag".to_string(), 80)].contains("fx-20261128-141500-a1b2/dma-latency:held"), "{}", at[&("history --tag".to_string(), 80)]);
    // The room is used: wider lines at 120 where 80 had to leave columns out.
    for name in ["history", "run"] {
        let (w80, w120) = (widest(&at[&(name.to_string(), 80)]).0, widest(&at[&(name.to_string(), 120)]).0);
        assert!(w120 > 80 && w120 > w80, "{name}: {w80} columns at 80, {w120} at 120");
    }
    // A list's wrapped text continues under its own column, whole: every
    // probe and preset is still named at the start of a line.
    for name in ["probes", "presets"] {
        let text = &at[&(name.to_string(), 80)];
        let (w80, w120) = (widest(text).0, widest(&at[&(name.to_string(), 120)]).0);
        assert!(w120 > 80 && w120 > w80, "{name}: {w80} columns at 80, {w120} at 120");
        assert!(text.lines().any(|l| l.starts_with(if name == "probes" { "timer " } else { "quick " })), "{text}");
        assert!(
            text.lines().filter(|l| l.starts_with(' ')).all(|l| l.starts_with(&" ".repeat(if name == "probes" { 11 } else { 19 }))),
            "{name}: a continuation line not under its column:\n{text}"
        );
    }
    // factors ends with what it means.
    assert!(at[&("factors --analyse".to_string(), 80)].contains("what this means: "), "{}", at[&("factors --analyse".to_string(), 80)]);
}
