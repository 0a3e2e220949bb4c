//! The names of the compared systems: `--name`, else "hostname
//! kernel_release", told apart by source or start time where they clash.

use crate::model::Run;

/// "all inputs ran on HOST KERNEL" when the inputs are named by their
/// source because host and kernel are the same (asked only when no
/// `--name` was given: a name the user gave is not "their source").
pub(crate) fn same_system_note(runs: &[&Run], systems: &[String]) -> Option<String> {
    let base = |r: &Run| default_name(r);
    if runs.len() >= 2 && runs.iter().all(|r| base(r) == base(runs[0])) && !systems.iter().any(|s| s.starts_with(&base(runs[0]))) {
        Some(format!("every input ran on {}: they are named by their source", base(runs[0])))
    } else {
        None
    }
}

/// Inputs of which some ran under an emulator (QEMU TCG) and some did not:
/// a ratio between them compares an emulator with hardware (issue 49).
/// Every input emulated: the ratios rank kernels on the emulator only.
pub(super) fn emulation_note(runs: &[&Run], systems: &[String]) -> Option<String> {
    let emulated: Vec<&str> = runs.iter().zip(systems).filter(|(r, _)| r.host.emulated).map(|(_, s)| s.as_str()).collect();
    if emulated.is_empty() {
        None
    } else if emulated.len() == runs.len() {
        Some("every input ran emulated (QEMU TCG): the ratios rank the kernels on the emulator; they are not board latencies".into())
    } else {
        let native: Vec<&str> = runs.iter().zip(systems).filter(|(r, _)| !r.host.emulated).map(|(_, s)| s.as_str()).collect();
        Some(format!(
            "{} ran emulated (QEMU TCG) and {} did not: the emulator's figures are not a board's latencies, so a ratio between them compares the emulator with {}, not the two systems",
            emulated.join(", "),
            native.join(", "),
            if native.len() == 1 { "that system" } else { "those systems" }
        ))
    }
}

fn default_name(r: &Run) -> String {
    format!("{} {}", r.host.hostname, r.host.kernel_release).trim().to_string()
}

/// A source as a name: a file path's name without `.json` and without the
/// `rtscope-` of default result names (`rtscope-20261123T100528Z.json` reads
/// `20261123T100528Z`); a stored run ("#12 (@tag)"): as is.
fn short_source(s: &str) -> String {
    if s.starts_with('#') {
        return s.to_string();
    }
    let name = std::path::Path::new(s).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| s.to_string());
    let stem = name.strip_suffix(".json").filter(|x| !x.is_empty()).unwrap_or(&name);
    stem.strip_prefix("rtscope-").filter(|x| !x.is_empty()).unwrap_or(stem).to_string()
}

/// System names: `given` (--name) in order, else "hostname kernel_release".
/// Where several inputs would get the same name, they are told apart by
/// their source (file name, stored run id), else their start time; when
/// every input has the same host and kernel, the source alone names them.
pub(crate) fn system_names(runs: &[&Run], sources: &[String], given: &[String]) -> Vec<String> {
    let base: Vec<String> = runs.iter().enumerate().map(|(i, r)| given.get(i).cloned().unwrap_or_else(|| default_name(r))).collect();
    let all_same = given.is_empty() && base.len() >= 2 && base.iter().all(|b| *b == base[0]);
    let mut out = base.clone();
    for i in 0..out.len() {
        let dups: Vec<usize> = (0..base.len()).filter(|&j| base[j] == base[i]).collect();
        if dups.len() < 2 {
            continue;
        }
        let by_source: Vec<String> = dups.iter().map(|&j| short_source(&sources[j])).collect();
        let by_start: Vec<String> = dups.iter().map(|&j| runs[j].started_at.clone()).collect();
        let distinct = |v: &[String]| v.iter().enumerate().all(|(a, x)| v[a + 1..].iter().all(|y| y != x));
        let pos = dups.iter().position(|&j| j == i).unwrap_or(0);
        let tag = if distinct(&by_source) {
            Some(by_source[pos].clone())
        } else if distinct(&by_start) {
            Some(by_start[pos].clone())
        } else {
            None
        };
        out[i] = match tag {
            Some(t) if all_same => t,
            Some(t) => format!("{} ({t})", base[i]),
            None => format!("{} #{}", base[i], pos + 1),
        };
    }
    out
}
