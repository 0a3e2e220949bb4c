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
use std::ops::Bound;
use std::rc::Rc;

use super::build::SeriesIter;
use super::format::{Format, Input, Reopen, Source, Spec, Systems};
use super::read::{Marks, Reread};
use super::{int, strip_ansi, uint, us_to_ns, ParseError, Parsed, Rows, Series, Shape};

/// The rt-tests IPC tools' pair lines.
pub const FORMAT: Format = Format(&Spec::text(
    "rt-tests-ipc",
    "The `#1 -> #0, Min .., Cur .., Avg .., Max ..` lines of ptsematest, svsematest, pmqtest, sigwaittest",
    |s| s.lines().any(|l| is_pair_line(&l)),
    |input, src| parse_lines(input, src).map(Systems::one),
));

/// `#1 -> #0, Min ...`
pub(crate) fn is_pair_line(l: &str) -> bool {
    let l = l.trim_start();
    l.starts_with('#') && l.contains(" -> #") && l.contains("Min") && l.contains("Max")
}

fn is_status_line(l: &str) -> bool {
    l.starts_with('#') && l.contains(": ID")
}

#[derive(Clone, Copy)]
struct Status {
    cpu: Option<usize>,
    interval_us: Option<u64>,
    cycles: Option<u64>,
    timeouts: Option<u64>,
}

/// `#0: ID18902, P80, CPU0, I1000; #1: ID18903, P80, CPU0, Cycles 1000`:
/// each thread's status, given to `each` in the order of the line.
/// Returns whether the line has a `TO` (timeouts) field.
fn parse_status(l: &str, n: usize, each: &mut dyn FnMut(u64, Status)) -> Result<bool, ParseError> {
    let mut timeouts = false;
    for part in l.split(';') {
        let part = part.trim();
        let Some((id, fields)) = part.split_once(':') else { continue };
        let id = uint(id.trim_start_matches('#'), n, "thread number after #")?;
        let mut s = Status { cpu: None, interval_us: None, cycles: None, timeouts: None };
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
        each(id, s);
    }
    Ok(timeouts)
}

/// The line numbers of each thread's latest status and the one before
/// (0: none; a file cut in the middle of a refresh pairs the older one
/// with the last pair line), by thread number: a Vec while the numbers
/// are dense, as the tools number their threads, a map otherwise.
enum Threads {
    Dense(Vec<[u32; 2]>),
    Sparse(BTreeMap<u64, [u32; 2]>),
}

impl Threads {
    /// Thread `id` has a status at line `n`.
    fn note(&mut self, id: u64, n: u32) {
        if let Threads::Dense(v) = self {
            let len = v.len() as u64;
            if id >= len && id <= 2 * len + 4096 {
                v.resize(id as usize + 1, [0, 0]);
            } else if id >= len {
                *self = Threads::Sparse(v.iter().enumerate().filter(|(_, s)| s[0] != 0).map(|(i, s)| (i as u64, *s)).collect());
            }
        }
        let slot = match self {
            Threads::Dense(v) => &mut v[id as usize],
            Threads::Sparse(m) => m.entry(id).or_insert([0, 0]),
        };
        *slot = [n, slot[0]];
    }

    fn get(&self, id: u64) -> [u32; 2] {
        let slot = match self {
            Threads::Dense(v) => usize::try_from(id).ok().and_then(|i| v.get(i)),
            Threads::Sparse(m) => m.get(&id),
        };
        slot.copied().unwrap_or([0, 0])
    }

    /// The line of thread `id`'s status as of pair line `n`: the latest one
    /// read before it (a later one belongs to a refresh the file lost the end of).
    fn as_of(&self, id: u64, n: u32) -> Option<u32> {
        self.get(id).into_iter().find(|&l| l != 0 && l < n)
    }
}

/// The line of each pair's last pair line, in pair order: a Vec while new
/// pairs come in order (a refresh repeats them), a map once one does not.
enum Pairs {
    Ordered(Vec<([u32; 2], u32)>),
    Map(BTreeMap<(u64, u64), u32>),
}

impl Pairs {
    fn note(&mut self, (a, b): (u64, u64), n: u32) {
        if let Pairs::Ordered(v) = self {
            if let (Ok(a), Ok(b)) = (u32::try_from(a), u32::try_from(b)) {
                let key = [a, b];
                if v.last().is_none_or(|(last, _)| *last < key) {
                    v.push((key, n));
                    return;
                }
                if let Ok(i) = v.binary_search_by(|(k, _)| k.cmp(&key)) {
                    v[i].1 = n;
                    return;
                }
            }
            *self = Pairs::Map(v.iter().map(|([a, b], n)| ((u64::from(*a), u64::from(*b)), *n)).collect());
        }
        if let Pairs::Map(m) = self {
            m.insert((a, b), n);
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Pairs::Ordered(v) => v.is_empty(),
            Pairs::Map(m) => m.is_empty(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = ((u64, u64), u32)> + '_> {
        match self {
            Pairs::Ordered(v) => Box::new(v.iter().map(|([a, b], n)| ((u64::from(*a), u64::from(*b)), *n))),
            Pairs::Map(m) => Box::new(m.iter().map(|(k, n)| (*k, *n))),
        }
    }

    /// Pair `i`, which comes after pair `after` (`None` for the first).
    fn get(&self, i: usize, after: Option<(u64, u64)>) -> Option<((u64, u64), u32)> {
        match self {
            Pairs::Ordered(v) => v.get(i).map(|([a, b], n)| ((u64::from(*a), u64::from(*b)), *n)),
            Pairs::Map(m) => match after {
                None => m.iter().next(),
                Some(k) => m.range((Bound::Excluded(k), Bound::Unbounded)).next(),
            }
            .map(|(k, n)| (*k, *n)),
        }
    }
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

/// What the first read of a file keeps: per thread and per pair, where
/// their last lines are (a few bytes each); the values are read again
/// when a pair's series is built ([`Table::series`]).
struct Table {
    threads: Threads,
    pairs: Pairs,
    marks: Rc<Marks>,
    reopen: Reopen,
    tool: &'static str,
}

/// A line number as the tables keep it.
fn line32(n: usize) -> Result<u32, ParseError> {
    u32::try_from(n).map_err(|_| ParseError::at(n, "more lines than an rt-tests IPC log can have (2^32)"))
}

/// The first read: every line checked, the lines of each thread's two
/// latest statuses and each pair's last line noted, and whether any
/// status has pmqtest's `TO` field.
fn scan(lines: &mut Input<'_>) -> Result<(Threads, Pairs, Marks, bool), ParseError> {
    let (mut threads, mut pairs, mut marks) = (Threads::Dense(Vec::new()), Pairs::Ordered(Vec::new()), Marks::default());
    let mut any_timeouts = false;
    let mut n = 0;
    loop {
        let offset = lines.offset();
        let Some(raw) = lines.next() else { break };
        let raw = raw?;
        n += 1;
        marks.note(n, offset);
        let l = strip_ansi(&raw);
        let l = l.trim();
        if is_pair_line(l) {
            let (key, _) = pair_line(l, n)?;
            pairs.note(key, line32(n)?);
        } else if is_status_line(l) {
            let n32 = line32(n)?;
            // Only this line's threads can add timeouts: looking at every
            // thread's status here made a log of many pairs quadratic.
            any_timeouts |= parse_status(l, n, &mut |id, _| threads.note(id, n32))?;
        }
    }
    marks.end(lines.offset());
    if let Pairs::Ordered(v) = &mut pairs {
        v.shrink_to_fit();
    }
    Ok((threads, pairs, marks, any_timeouts))
}

/// Read line by line, keeping only where each thread's latest status and
/// each pair's last line are, then read again pair by pair (once to check
/// every pair and count what the run's header needs, then each time the
/// run is built): a long live log or a log of millions of pairs costs a
/// few bytes per pair.
pub(crate) fn parse_lines(lines: &mut Input<'_>, src: &Source<'_>) -> Result<Parsed, ParseError> {
    let (threads, pairs, marks, any_timeouts) = scan(lines)?;
    if pairs.is_empty() {
        return Err(ParseError::file("no \"#1 -> #0, Min .., Cur .., Avg .., Max ..\" line; expected ptsematest/svsematest/pmqtest/sigwaittest output"));
    }
    let tool = if any_timeouts { "pmqtest" } else { tool_from_file_name(src.file_name).unwrap_or("rt-tests IPC test") };
    let table = Rc::new(Table { threads, pairs, marks: Rc::new(marks), reopen: src.reopen.clone(), tool });
    let (mut shape, mut skipped) = (Shape::default(), 0);
    for s in PairRows::new(Rc::clone(&table)) {
        match s? {
            Some(s) => shape.add(&s),
            None => skipped += 1, // the pair had not run yet (its Avg is garbage then)
        }
    }
    if shape.count() == 0 {
        return Err(ParseError::file("every pair has Cycles 0; nothing was measured"));
    }
    // A thread's status after its pair's last line: the file ends inside a refresh.
    let mut cut: Option<usize> = None;
    for ((a, _), n) in table.pairs.iter() {
        let latest = table.threads.get(a)[0];
        if latest > n {
            cut = Some(cut.unwrap_or(0).max(latest as usize));
        }
    }
    let open = move || -> SeriesIter { Box::new(PairRows::new(Rc::clone(&table)).filter_map(Result::transpose)) };
    let fidelity = notes(tool, skipped, cut, any_timeouts);
    Ok(Parsed { tool: tool.into(), rows: Some(Box::new(Rows { shape, open: Rc::new(open), notes: None })), fidelity, ..Parsed::default() })
}

/// Every pair's series in pair order (`None`: 0 cycles, skipped), read
/// from the file again; the first error ends them.
struct PairRows {
    table: Rc<Table>,
    read: Option<Reread>,
    i: usize,
    after: Option<(u64, u64)>,
    failed: bool,
}

impl PairRows {
    fn new(table: Rc<Table>) -> PairRows {
        PairRows { table, read: None, i: 0, after: None, failed: false }
    }

    fn build(&mut self, k: usize, key: (u64, u64), n: u32) -> Result<Option<Series>, ParseError> {
        if self.read.is_none() {
            let r = (self.table.reopen)().map_err(|e| ParseError::file(format!("cannot read the file again: {e}")))?;
            self.read = Some(Reread::open(r, Rc::clone(&self.table.marks))?);
        }
        let read = self.read.as_mut().expect("opened above");
        self.table.series(read, k, key, n)
    }
}

impl Iterator for PairRows {
    type Item = Result<Option<Series>, ParseError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let (key, n) = self.table.pairs.get(self.i, self.after)?;
        let k = self.i;
        (self.i, self.after) = (self.i + 1, Some(key));
        let s = self.build(k, key, n);
        self.failed = s.is_err();
        Some(s)
    }
}

impl Table {
    /// Pair `k` (receiver `a`, sender `b`), whose last pair line is `n`,
    /// with the statuses of its threads as of that line: `None` when it
    /// has 0 cycles.
    fn series(&self, read: &mut Reread, k: usize, (a, b): (u64, u64), n: u32) -> Result<Option<Series>, ParseError> {
        let (recv_line, send_line) = (self.threads.as_of(a, n), self.threads.as_of(b, n));
        // Each line once, in file order: a file read in order is read once.
        let mut want: Vec<u32> = [recv_line, send_line, Some(n)].into_iter().flatten().collect();
        want.sort_unstable();
        want.dedup();
        let mut text: Vec<(u32, String)> = Vec::with_capacity(want.len());
        for m in want {
            let l = read.line(m as usize)?;
            // Copied only when it had escapes to drop.
            let l = match strip_ansi(&l) {
                std::borrow::Cow::Borrowed(_) => l,
                std::borrow::Cow::Owned(o) => o,
            };
            text.push((m, l));
        }
        let at = |m: u32| text.iter().find(|(x, _)| *x == m).map_or("", |(_, t)| t.trim());
        let (recv, send) = match (recv_line, send_line) {
            // Both threads' statuses on one line (as the tools print them): read once.
            (Some(r), Some(s)) if r == s => {
                let [x, y] = statuses_at(at(r), [a, b], r)?;
                (Some(x), Some(y))
            }
            _ => (
                recv_line.map(|m| statuses_at(at(m), [a, a], m).map(|[x, _]| x)).transpose()?,
                send_line.map(|m| statuses_at(at(m), [b, b], m).map(|[x, _]| x)).transpose()?,
            ),
        };
        let n = n as usize;
        let l = at(n as u32);
        let (key, (_, min, avg, max)) = if is_pair_line(l) { pair_line(l, n)? } else { ((u64::MAX, 0), (n, 0, 0, 0)) };
        if key != (a, b) {
            return Err(Reread::changed(&format!("line {n} is no longer the pair line of #{a} -> #{b}")));
        }
        let cycles = recv
            .as_ref()
            .and_then(|s| s.cycles)
            .ok_or_else(|| ParseError::at(n, format!("no \"#{a}: ..., Cycles N\" status line before this pair; expected the tool's full output")))?;
        if cycles == 0 {
            return Ok(None);
        }
        if min < 0 || avg < 0 || max < 0 || min > max {
            return Err(ParseError::at(n, format!("Min {min}, Avg {avg}, Max {max}: expected 0 ≤ Min ≤ Max")));
        }
        let tool = self.tool;
        let (recv, send) = (recv.as_ref(), send.as_ref());
        let (recv_cpu, send_cpu) = (recv.and_then(|s| s.cpu), send.and_then(|s| s.cpu));
        Ok(Some(Series {
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
        }))
    }
}

/// Threads `ids`' statuses on status line `n` (`l`, read again): each
/// one's last there, as the first read kept them.
fn statuses_at(l: &str, ids: [u64; 2], n: u32) -> Result<[Status; 2], ParseError> {
    let mut found = [None, None];
    if is_status_line(l) {
        parse_status(l, n as usize, &mut |t, s| {
            for (id, f) in ids.iter().zip(found.iter_mut()) {
                if t == *id {
                    *f = Some(s);
                }
            }
        })?;
    }
    let missing = |id: u64| Reread::changed(&format!("line {n} is no longer a status line of #{id}"));
    Ok([found[0].ok_or_else(|| missing(ids[0]))?, found[1].ok_or_else(|| missing(ids[1]))?])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::format::ParseOptions;
    use crate::import::read::{Lines, ReadSeek};

    /// Parse `text`, reading `again` when the file is read again, and
    /// build every series.
    fn parse_with(text: &str, again: &str) -> Result<Vec<Series>, ParseError> {
        let again: std::sync::Arc<[u8]> = again.as_bytes().into();
        let reopen: Reopen = Rc::new(move || Ok(Box::new(std::io::Cursor::new(again.clone())) as Box<dyn ReadSeek + Send>));
        let opts = ParseOptions::default();
        let mut r: &[u8] = text.as_bytes();
        let mut lines: Input<'_> = Lines::new(&mut r as &mut dyn std::io::BufRead);
        let p = parse_lines(&mut lines, &Source { file_name: "ptsematest.txt", opts: &opts, reopen: &reopen })?;
        let rows = p.rows.expect("built on demand");
        assert_eq!(rows.shape.count(), (rows.open)().count(), "the shape counts the series");
        (rows.open)().collect()
    }

    fn status(a: u64, b: u64, cycles: u64) -> String {
        format!("#{a}: ID1, P80, CPU0, I1000; #{b}: ID2, P80, CPU1, Cycles {cycles}\n")
    }

    fn pair(a: u64, b: u64, max: u64) -> String {
        format!("#{a} -> #{b}, Min    1, Cur    2, Avg    3, Max {max:4}\n")
    }

    #[test]
    fn pairs_out_of_order_and_far_apart_come_in_pair_order() {
        // A far thread number (the table becomes a map) and one past 32 bits (so do the pairs).
        let (far, huge) = (10_000_000u64, 1u64 << 40);
        let text = [
            status(far, far + 1, 10),
            pair(far + 1, far, 11),
            status(0, 1, 20),
            pair(1, 0, 21),
            status(huge, huge + 1, 30),
            pair(huge + 1, huge, 31),
            status(2, 3, 40),
            pair(3, 2, 41),
            status(0, 1, 50), // a later refresh of #1 -> #0
            pair(1, 0, 51),
        ]
        .concat();
        let got: Vec<(usize, u64, u64)> = parse_with(&text, &text).unwrap().iter().map(|s| (s.thread.unwrap(), s.samples, s.max_ns)).collect();
        assert_eq!(got, [(0, 50, 51_000), (1, 40, 41_000), (2, 10, 11_000), (3, 30, 31_000)]);
    }

    #[test]
    fn a_file_that_changed_between_its_reads_is_refused() {
        let text = [status(0, 1, 10), pair(1, 0, 11), status(2, 3, 20), pair(3, 2, 21)].concat();
        let shorter = [status(0, 1, 10), pair(1, 0, 11)].concat();
        let moved = [status(2, 3, 20), pair(3, 2, 21), status(0, 1, 10), pair(1, 0, 11)].concat();
        assert_eq!(parse_with(&text, &text).unwrap().len(), 2);
        for again in [shorter, moved] {
            let e = parse_with(&text, &again).unwrap_err();
            assert!(e.msg.contains("the file changed while it was read"), "{e}");
        }
    }
}
