//! `rt-tests-ipc`: the status lines of rt-tests' IPC latency tools —
//! ptsematest (POSIX mutex hand-off), svsematest (SysV semaphore), pmqtest
//! (POSIX message queue), sigwaittest (signal).
//!
//! ```text
//! #0: ID18902, P80, CPU0, I1000; #1: ID18903, P80, CPU0, Cycles 1000
//! #1 -> #0, Min    3, Cur   37, Avg    4, Max   37
//! ```
//! (pmqtest adds `TO n` — its timeouts — before `Cycles`.) Without `-q` the
//! tools redraw these lines in place with ANSI escapes, so a captured file
//! holds every refresh: the last line of each pair wins. All values are µs.
//! These tools report only min/avg/max, so each pair is summary-only (one
//! bucket [min, max]; percentiles unknown). The tool is named in the file
//! only for pmqtest (by its `TO` field); for the others the file name is
//! used when it contains the tool's name. Probe and variant names are the
//! native probes' ([`probe_of`]), so imports and native runs compare row
//! by row.

use std::collections::BTreeMap;

use super::format::{Format, Spec};
use super::{int, uint, us_to_ns, ParseError, Parsed, Series};

/// The rt-tests IPC tools' pair lines.
pub const FORMAT: Format = Format(&Spec::text(
    "rt-tests-ipc",
    "The `#1 -> #0, Min .., Cur .., Avg .., Max ..` lines of ptsematest, svsematest, pmqtest, sigwaittest",
    |s| s.lines().any(|l| is_pair_line(&l)),
    |input, src| parse_lines(input, src.file_name).map(|p| vec![p]),
));

/// `#1 -> #0, Min ...`
pub(crate) fn is_pair_line(l: &str) -> bool {
    let l = l.trim_start();
    l.starts_with('#') && l.contains(" -> #") && l.contains("Min") && l.contains("Max")
}

struct Status {
    /// The line it was read from.
    line: usize,
    cpu: Option<usize>,
    interval_us: Option<u64>,
    cycles: Option<u64>,
    timeouts: Option<u64>,
}

/// `#0: ID18902, P80, CPU0, I1000; #1: ID18903, P80, CPU0, Cycles 1000`
/// Each thread keeps its latest status and the one before (a file cut in
/// the middle of a refresh pairs the older one with the last pair line).
/// Returns whether the line has a `TO` (timeouts) field.
fn parse_status(l: &str, n: usize, status: &mut BTreeMap<u64, [Option<Status>; 2]>) -> Result<bool, ParseError> {
    let mut timeouts = false;
    for part in l.split(';') {
        let part = part.trim();
        let Some((id, fields)) = part.split_once(':') else { continue };
        let id = uint(id.trim_start_matches('#'), n, "thread number after #")?;
        let mut s = Status { line: n, cpu: None, interval_us: None, cycles: None, timeouts: None };
        for f in fields.split(',') {
            let f = f.trim();
            if f.starts_with("ID") {
                continue; // the thread's Linux TID
            } else if let Some(v) = f.strip_prefix("CPU") {
                s.cpu = Some(uint(v, n, "CPU")? as usize);
            } else if let Some(v) = f.strip_prefix("Cycles") {
                s.cycles = Some(uint(v, n, "Cycles")?);
            } else if let Some(v) = f.strip_prefix("TO") {
                s.timeouts = Some(uint(v, n, "TO (timeouts)")?);
            } else if let Some(v) = f.strip_prefix('I') {
                s.interval_us = Some(uint(v, n, "interval I (µs)")?);
            }
        }
        timeouts |= s.timeouts.is_some();
        let slot = status.entry(id).or_insert([None, None]);
        slot[1] = slot[0].take();
        slot[0] = Some(s);
    }
    Ok(timeouts)
}

pub(crate) fn tool_from_file_name(name: &str) -> Option<&'static str> {
    ["ptsematest", "svsematest", "pmqtest", "sigwaittest"].into_iter().find(|t| name.contains(t))
}

/// The native probe (and variant stem) measuring the same hand-off, so
/// `compare` lines an import up with `rtscope run --probe sem,mq,signal`:
/// ptsematest hands a pthread mutex over (`sem` `mutex/...`), svsematest a
/// SysV semaphore (`sem` `sysv/...`), pmqtest sends one message (`mq`
/// `oneway`), sigwaittest sends a signal with pthread_kill (`signal`
/// `pthread_kill`).
pub(crate) fn probe_of(tool: &str) -> (&'static str, Option<&'static str>) {
    match tool {
        "ptsematest" => ("sem", Some("mutex")),
        "svsematest" => ("sem", Some("sysv")),
        "pmqtest" => ("mq", Some("oneway")),
        "sigwaittest" => ("signal", Some("pthread_kill")),
        _ => ("ipc", None),
    }
}

/// The `sem` probe's variants carry the placement: `mutex/same-cpu`.
fn variant_of(tool: &str, a: Option<usize>, b: Option<usize>) -> Option<String> {
    let (probe, stem) = probe_of(tool);
    let stem = stem?;
    if probe != "sem" {
        return Some(stem.to_string());
    }
    Some(match (a, b) {
        (Some(x), Some(y)) if x == y => format!("{stem}/same-cpu"),
        (Some(_), Some(_)) => format!("{stem}/cross-cpu"),
        _ => stem.to_string(),
    })
}


/// A pair line, "#1 -> #0, Min    3, Cur   37, Avg    4, Max   37":
/// (receiver, sender) and (line, min, avg, max).
type PairLine = ((u64, u64), (usize, i64, i64, i64));

fn pair_line(l: &str, n: usize) -> Result<PairLine, ParseError> {
    let mut fields = l.split(',');
    let head = fields.next().unwrap_or("");
    let (a, b) = head.split_once("->").ok_or_else(|| ParseError::at(n, "expected \"#A -> #B\""))?;
    let a = uint(a.trim().trim_start_matches('#'), n, "thread number")?;
    let b = uint(b.trim().trim_start_matches('#'), n, "thread number")?;
    let (mut min, mut avg, mut max) = (None, None, None);
    for f in fields {
        let f = f.trim();
        if let Some(v) = f.strip_prefix("Min") {
            min = Some(int(v, n, "Min")?);
        } else if let Some(v) = f.strip_prefix("Avg") {
            avg = Some(int(v, n, "Avg")?);
        } else if let Some(v) = f.strip_prefix("Max") {
            max = Some(int(v, n, "Max")?);
        }
    }
    match (min, avg, max) {
        (Some(mi), Some(av), Some(ma)) => Ok(((a, b), (n, mi, av, ma))),
        _ => Err(ParseError::at(n, "expected \"#A -> #B, Min x, Cur y, Avg z, Max w\"")),
    }
}

/// Read line by line; only the latest status and pair line of each thread
/// is kept, so a long live log costs no more than a short one.
pub(crate) fn parse_lines(lines: &mut dyn Iterator<Item = super::Line>, file_name: &str) -> Result<Parsed, ParseError> {
    let mut status: BTreeMap<u64, [Option<Status>; 2]> = BTreeMap::new();
    // (receiver, sender) -> (line, min, avg, max)
    let mut pairs: BTreeMap<(u64, u64), (usize, i64, i64, i64)> = BTreeMap::new();
    let mut any_timeouts = false;
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = super::strip_ansi(&raw);
        let l = l.trim();
        if is_pair_line(l) {
            let (key, value) = pair_line(l, n)?;
            pairs.insert(key, value);
        } else if l.starts_with('#') && l.contains(": ID") {
            // Only this line's threads can add timeouts: looking at every
            // thread's status here made a log of many pairs quadratic.
            any_timeouts |= parse_status(l, n, &mut status)?;
        }
    }
    if pairs.is_empty() {
        return Err(ParseError::file("no \"#1 -> #0, Min .., Cur .., Avg .., Max ..\" line; expected ptsematest/svsematest/pmqtest/sigwaittest output"));
    }
    let tool = if any_timeouts { "pmqtest" } else { tool_from_file_name(file_name).unwrap_or("rt-tests IPC test") };
    // Sized once: a Vec grown by doubling holds the old and the new block
    // while it moves (1.5 M pairs: ~0.5 GB beside ~1 GB).
    let mut p = Parsed { tool: tool.into(), series: Vec::with_capacity(pairs.len()), ..Parsed::default() };
    let mut skipped = 0;
    let mut cut: Option<usize> = None;
    // The status of thread `id` as of pair line `n`: the latest one read
    // before it (a later one belongs to a refresh the file lost the end of).
    let as_of = |id: u64, n: usize| status.get(&id).and_then(|s| s.iter().flatten().find(|st| st.line < n));
    for (k, ((a, b), (n, min, avg, max))) in pairs.into_iter().enumerate() {
        if let Some(latest) = status.get(&a).and_then(|s| s[0].as_ref()).filter(|st| st.line > n) {
            cut = Some(cut.unwrap_or(0).max(latest.line));
        }
        let recv = as_of(a, n);
        let send = as_of(b, n);
        let cycles = recv.and_then(|s| s.cycles).ok_or_else(|| {
            ParseError::at(n, format!("no \"#{a}: ..., Cycles N\" status line before this pair; expected the tool's full output"))
        })?;
        if cycles == 0 {
            skipped += 1; // the pair had not run yet (its Avg is garbage then)
            continue;
        }
        if min < 0 || avg < 0 || max < 0 || min > max {
            return Err(ParseError::at(n, format!("Min {min}, Avg {avg}, Max {max}: expected 0 ≤ Min ≤ Max")));
        }
        let (recv_cpu, send_cpu) = (recv.and_then(|s| s.cpu), send.and_then(|s| s.cpu));
        p.series.push(Series {
            probe: probe_of(tool).0.into(),
            variant: variant_of(tool, recv_cpu, send_cpu),
            thread: Some(k),
            cpu: send_cpu.or(recv_cpu),
            interval_ns: us_to_ns(send.and_then(|s| s.interval_us).unwrap_or(0), n, "interval")?,
            samples: cycles,
            overruns: recv.and_then(|s| s.timeouts).unwrap_or(0),
            // Only pmqtest's TO column counts anything like a missed period.
            overruns_unknown: recv.and_then(|s| s.timeouts).is_none(),
            min_ns: us_to_ns(min as u64, n, "Min")?,
            max_ns: us_to_ns(max as u64, n, "Max")?,
            mean_ns: Some(avg as f64 * 1000.0),
            ..Series::default()
        });
    }
    if p.series.is_empty() {
        return Err(ParseError::file("every pair has Cycles 0; nothing was measured"));
    }
    p.fidelity.extend(notes(tool, skipped, cut, any_timeouts));
    Ok(p)
}

/// The fidelity notes of an import: summary only, µs, and what the file
/// left out (`skipped` pairs with 0 cycles, a refresh `cut` at a line, the
/// unknown tool, pmqtest's timeouts).
fn notes(tool: &str, skipped: usize, cut: Option<usize>, any_timeouts: bool) -> Vec<String> {
    let mut out: Vec<String> = vec![
        "summary only: the tool prints min/avg/max per pair; percentiles unknown; histogram is one bucket [min, max]".into(),
        "µs resolution; the average is printed as whole µs; stddev unknown (0)".into(),
    ];
    if skipped > 0 {
        out.push(format!("{skipped} pairs with 0 cycles skipped"));
    }
    if let Some(line) = cut {
        out.push(format!(
            "truncated: the file ends inside a refresh (its status line {line} has no pair line after it); the last complete refresh is imported"
        ));
    }
    if tool == "rt-tests IPC test" {
        out.push("which tool wrote the file is unknown (ptsematest, svsematest or sigwaittest); use --probe to name it".into());
    }
    if any_timeouts {
        out.push("pmqtest timeouts (TO) are reported as overruns".into());
    }
    out
}
