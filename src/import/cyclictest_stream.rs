//! `cyclictest-json` in memory that does not grow with the threads: a
//! file of 100 000 threads is read once to check it and learn what the run
//! needs of its threads (their number, CPUs, overflows, the first error),
//! holding none of them, then read again each time the run is built
//! ([`super::build::Rows`]), its threads handed over one at a time in file order.
//!
//! A thread's histogram shares the file's buckets with the others, and how
//! coarse its share is depends on how many threads the file has, known
//! only at its end: [`crate::import::cyclictest_json::Doc`] holds every
//! thread and folds them coarser whenever their number doubles; a reading
//! here knows the final number and replays those foldings on each thread
//! as it is read, so each ends as it would have. Files read otherwise are
//! read whole as before: threads out of numeric order (the run lists them
//! in order), a `thread` object before the command line, or what only the
//! folded buckets can decide (samples past a histogram without `-h`,
//! latencies near the 64-bit limit). A later reading that does not see
//! what the first one saw (the file changed) is an error.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;
use std::sync::mpsc;

use serde_json::{Map, Value};

use super::build::{Rows, SeriesIter, Shape};
use super::cyclictest_json::{self as cj, json_f64, json_uint, next_sharing, to_ns, Notes, Sink, Thread};
use super::format::{Input, Reopen, Source};
use super::read::{ReadSeek, Reread};
use super::{Hist, ParseError, Parsed, Series};

/// What reading the threads takes from the other fields.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Params {
    unit_ns: u64,
    interval_ns: u64,
    limit: Option<u64>,
}

fn params(top: &Value) -> Result<Params, ParseError> {
    let (_, unit_ns, interval_ns, limit) = cj::head(top)?;
    Ok(Params { unit_ns, interval_ns, limit })
}

/// The format's parser: one system, its threads streamed when the file
/// allows it (see the module doc).
pub(crate) fn parse(input: &mut Input<'_>, src: &Source<'_>) -> Result<Vec<Parsed>, ParseError> {
    let mut first = Survey::default();
    let (top, threads) = cj::read_with(input.reader(), &mut first)?;
    let (mut p, unit_ns, interval_ns, limit) = cj::head(&top)?;
    if !threads {
        return Err(ParseError::file("no \"thread\" object; expected cyclictest --json output (truncated file?)"));
    }
    if let Some(k) = &first.not_a_number {
        return Err(cj::not_a_thread_number(k));
    }
    let pm = Params { unit_ns, interval_ns, limit };
    if !first.simple || first.params != Some(pm) {
        let again = (src.reopen)().map_err(Reread::cannot)?;
        return cj::parse_reader(again).map(|p| vec![p]);
    }
    if let Some((_, e)) = first.error {
        return Err(e);
    }
    let (before, after) = cj::notes_around_folding(&first.notes, limit, unit_ns);
    let head = [p.fidelity.clone(), before].concat();
    p.fidelity = [head.clone(), after.clone()].concat();
    top.to_string().hash(&mut first.digest);
    let shape = Shape { count: first.count, overruns_unknown: first.count > 0, cpus: first.cpus, interval_ns, groups: vec![("timer".into(), None)] };
    let fidelity = Rc::new(RefCell::new(None));
    let expect = Expect { count: first.count, digest: first.digest.finish(), summary_only: first.notes.summary_only, pm, head, after };
    let (reopen, cell, expect) = (Rc::clone(src.reopen), Rc::clone(&fidelity), Rc::new(expect));
    let series = Rc::new(move || -> SeriesIter {
        Box::new(Reading { reopen: Rc::clone(&reopen), expect: Rc::clone(&expect), cell: Rc::clone(&cell), rx: None, done: false })
    });
    p.rows = Some(Box::new(Rows { shape, open: series, notes: Some(fidelity) }));
    Ok(vec![p])
}

fn changed() -> ParseError {
    Reread::changed("a later reading saw other threads")
}

/// The first reading: the file checked, its threads summed up, none kept.
#[derive(Default)]
struct Survey {
    /// From the fields before `thread` (`None`: they give an error).
    params: Option<Params>,
    /// The threads can be streamed (see the module doc).
    simple: bool,
    begun: bool,
    count: usize,
    last: Option<usize>,
    not_a_number: Option<String>,
    /// The error of the lowest thread (the one a whole reading gives).
    error: Option<(usize, ParseError)>,
    cpus: BTreeSet<usize>,
    notes: Notes,
    digest: DefaultHasher,
}

impl Sink for Survey {
    fn begin(&mut self, top: &Map<String, Value>) {
        // A second `thread` object replaces the first: read whole.
        self.simple = !self.begun;
        self.begun = true;
        self.params = params(&Value::Object(top.clone())).ok();
        self.simple &= self.params.is_some();
    }
    fn series(&self) -> usize {
        // Only the totals and the top are asked of this reading's histograms.
        1
    }
    fn thread(&mut self, id: String, t: Thread) -> Result<(), String> {
        self.count += 1;
        let Ok(n) = id.parse::<usize>() else {
            self.not_a_number.get_or_insert(id);
            return Ok(());
        };
        self.simple &= self.last.is_none_or(|l| n > l);
        self.last = Some(n);
        let Some(pm) = self.params else { return Ok(()) };
        digest(&mut self.digest, n, &t);
        match survey_thread(n, &t, pm) {
            Ok(Some((cpu, over, empty))) => {
                self.cpus.extend(cpu);
                self.notes.overflow_total = self.notes.overflow_total.saturating_add(over);
                self.notes.summary_only |= empty;
            }
            Ok(None) => self.simple = false,
            Err(e) => {
                if self.error.as_ref().is_none_or(|(m, _)| n < *m) {
                    self.error = Some((n, e));
                }
            }
        }
        Ok(())
    }
}

/// What both readings see of a thread, whatever its folding.
fn digest(h: &mut DefaultHasher, n: usize, t: &Thread) {
    n.hash(h);
    t.fields.to_string().hash(h);
    t.hist.as_ref().map(|x| (x.total(), x.is_empty())).hash(h);
}

/// The checks of `cj::thread_series` that do not depend on the folding,
/// in its order: the thread's CPU, overflows and whether its histogram is
/// empty, or `None` when only the folded buckets can tell.
fn survey_thread(n: usize, t: &Thread, pm: Params) -> Result<Option<(Option<usize>, u64, bool)>, ParseError> {
    let f = &t.fields;
    let path = format!("thread.\"{n}\"");
    let cycles = json_uint(f, "cycles", &path)?;
    to_ns(json_uint(f, "min", &path)?, pm.unit_ns, &path)?;
    let max_ns = to_ns(json_uint(f, "max", &path)?, pm.unit_ns, &path)?;
    json_f64(f, "avg", &path)?;
    let cpu = f.get("cpu").and_then(|c| c.as_u64()).map(|c| c as usize);
    let Some(h) = t.hist.as_ref().filter(|h| !h.is_empty()) else { return Ok(Some((cpu, 0, true))) };
    // Folding at most doubles a bucket's top: far from the limit, it cannot overflow.
    let safe = (i64::MAX as u64) / 4 / pm.unit_ns;
    let (Some(in_hist), Some(top)) = (h.total(), h.top()) else { return Ok(None) };
    if top >= safe {
        return Ok(None);
    }
    if in_hist > cycles {
        return Err(ParseError::file(format!("{path}: histogram holds {in_hist} samples but cycles is {cycles}; expected at most cycles")));
    }
    let over = cycles - in_hist;
    if over > 0 {
        let Some(l) = pm.limit else { return Ok(None) };
        let lo = to_ns(l, pm.unit_ns, "cmdline -h")?;
        if max_ns < lo {
            return Err(ParseError::file(format!("{path}: {over} samples overflowed the histogram but max {max_ns} ns is below its limit {lo} ns")));
        }
    }
    Ok(Some((cpu, over, false)))
}

/// What the first reading saw, for the later ones.
struct Expect {
    count: usize,
    digest: u64,
    summary_only: bool,
    pm: Params,
    /// The notes before the folding notes and after them.
    head: Vec<String>,
    after: Vec<String>,
}

/// What a later reading's thread sends.
enum Msg {
    Series(Box<Series>),
    Failed(ParseError),
    End { count: usize, digest: u64, folded: Vec<String> },
}

/// One later reading: started at the first series asked for, the file read
/// on a thread of its own that hands the series over as they are built.
struct Reading {
    reopen: Reopen,
    expect: Rc<Expect>,
    cell: Rc<RefCell<Option<Vec<String>>>>,
    rx: Option<mpsc::Receiver<Msg>>,
    done: bool,
}

impl Iterator for Reading {
    type Item = Result<Series, ParseError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.rx.is_none() {
            match (self.reopen)() {
                Ok(r) => self.rx = Some(spawn(r, &self.expect)),
                Err(e) => {
                    self.done = true;
                    return Some(Err(Reread::cannot(e)));
                }
            }
        }
        let msg = self.rx.as_ref().and_then(|rx| rx.recv().ok());
        if !matches!(msg, Some(Msg::Series(_))) {
            self.done = true;
        }
        match msg {
            Some(Msg::Series(s)) => Some(Ok(*s)),
            Some(Msg::Failed(e)) => Some(Err(e)),
            Some(Msg::End { count, digest, folded }) => {
                if count != self.expect.count || digest != self.expect.digest {
                    return Some(Err(changed()));
                }
                let e = &self.expect;
                *self.cell.borrow_mut() = Some([e.head.clone(), folded, e.after.clone()].concat());
                None
            }
            None => Some(Err(ParseError::file("internal: the reading of the file stopped"))),
        }
    }
}

fn spawn(r: Box<dyn ReadSeek + Send>, e: &Expect) -> mpsc::Receiver<Msg> {
    let (tx, rx) = mpsc::sync_channel(64);
    let mut sink = Later::new(tx.clone(), e);
    let refused = tx.clone();
    let spawned = std::thread::Builder::new().name("rtscope-reread".into()).spawn(move || match cj::read_with(r, &mut sink) {
        Ok((top, _)) if !sink.failed => {
            top.to_string().hash(&mut sink.digest);
            let folded = std::mem::take(&mut sink.folded);
            let _ = tx.send(Msg::End { count: sink.read, digest: sink.digest.finish(), folded });
        }
        Ok(_) => {}
        Err(e) if !sink.failed => {
            let _ = tx.send(Msg::Failed(e));
        }
        Err(_) => {}
    });
    // No reader (RLIMIT_NPROC): the reading ends with that error.
    if let Err(e) = spawned {
        let _ = refused.try_send(Msg::Failed(ParseError::file(crate::sys::pthread::spawn_refused("the thread that reads the file again", &e).to_string())));
    }
    rx
}

/// A later reading's threads, each built as a whole reading builds it.
struct Later {
    tx: mpsc::SyncSender<Msg>,
    pm: Params,
    summary_only: bool,
    /// When the sharing changes as the threads are read (see `cj::Keep`):
    /// (threads read, the sharing from then on).
    schedule: Vec<(usize, usize)>,
    read: usize,
    digest: DefaultHasher,
    folded: Vec<String>,
    seen: HashSet<String>,
    /// A message ended the reading.
    failed: bool,
}

impl Later {
    fn new(tx: mpsc::SyncSender<Msg>, e: &Expect) -> Later {
        let mut schedule = Vec::new();
        let mut series = Hist::FILE_BUCKETS / Hist::RAW_LIMIT;
        for read in 1..=e.count {
            if let Some(s) = next_sharing(read, series) {
                series = s;
                schedule.push((read, s));
            }
        }
        let (pm, summary_only) = (e.pm, e.summary_only);
        Later { tx, pm, summary_only, schedule, read: 0, digest: DefaultHasher::new(), folded: Vec::new(), seen: HashSet::new(), failed: false }
    }

    fn fail(&mut self, e: ParseError) -> Result<(), String> {
        self.failed = true;
        let _ = self.tx.send(Msg::Failed(e));
        Err("the reading stopped".into())
    }
}

impl Sink for Later {
    fn series(&self) -> usize {
        let first = Hist::FILE_BUCKETS / Hist::RAW_LIMIT;
        self.schedule.iter().take_while(|(at, _)| *at <= self.read).last().map_or(first, |x| x.1)
    }
    fn thread(&mut self, id: String, mut t: Thread) -> Result<(), String> {
        let Ok(n) = id.parse::<usize>() else { return self.fail(changed()) };
        digest(&mut self.digest, n, &t);
        self.read += 1;
        if let Some(h) = t.hist.as_mut() {
            // The foldings a whole reading does once this thread is read.
            self.schedule.iter().filter(|(at, _)| *at >= self.read).for_each(|(_, s)| h.set_sharing(*s));
        }
        let mut notes = Notes::default();
        let mut s = match cj::thread_series(n, t, self.pm.unit_ns, self.pm.interval_ns, self.pm.limit, &mut notes) {
            Ok(s) => s,
            Err(e) => return self.fail(e),
        };
        if self.summary_only {
            s.buckets.clear();
        }
        for f in notes.folded {
            if self.seen.insert(f.clone()) {
                self.folded.push(f);
            }
        }
        if self.tx.send(Msg::Series(Box::new(s))).is_err() {
            // The building stopped (an error, or nothing more wanted).
            self.failed = true;
            return Err("the reading stopped".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{build_run, format, Context};

    /// `threads` threads of `keys` latencies each, in file order.
    fn file(threads: usize, keys: usize) -> String {
        let th: Vec<String> = (0..threads)
            .map(|t| {
                let hist: Vec<String> = (0..keys).map(|v| format!("\"{}\": {}", v * 3, 1 + (v * t) % 3)).collect();
                let n: usize = (0..keys).map(|v| 1 + (v * t) % 3).sum();
                format!(
                    "\"{t}\": {{\"histogram\": {{{}}}, \"cycles\": {n}, \"min\": 0, \"max\": {}, \"avg\": 9.5, \"cpu\": {}}}",
                    hist.join(","),
                    3 * (keys - 1),
                    t % 3
                )
            })
            .collect();
        format!("{{\"cmdline:\": \"cyclictest -h 90000 --json=x\", \"resolution_in_ns\": 0, \"thread\": {{{}}}}}", th.join(","))
    }

    fn ctx() -> Context {
        Context {
            format: cj::FORMAT,
            file: "f".into(),
            file_sha256: "0".repeat(64),
            file_stem: "f".into(),
            file_mtime: "2026-01-01T00:00:00Z".into(),
            phase: "idle".into(),
            probe: None,
            name: None,
        }
    }

    #[test]
    fn streamed_threads_give_the_run_a_whole_reading_gives() {
        // 120 threads of 3 000 latencies: their share of the file's buckets
        // shrinks three times as they are read, and they end folded coarser.
        let text = file(120, 3000);
        let mut p = format::parse(cj::FORMAT, &text, "f.json").unwrap();
        assert!(p[0].rows.is_some() && p[0].series.is_empty(), "read as a stream, no series held");
        let streamed = build_run(p.remove(0), &ctx()).unwrap();
        let whole = build_run(cj::parse_reader(text.as_bytes()).unwrap(), &ctx()).unwrap();
        assert_eq!(streamed.results.len(), 121);
        assert!(streamed.fidelity.iter().any(|f| f.contains("sharing")), "{:?}", streamed.fidelity);
        assert_eq!(serde_json::to_string(&streamed).unwrap(), serde_json::to_string(&whole).unwrap());
    }

    #[test]
    fn a_file_that_changes_between_readings_is_refused() {
        let (a, b) = (file(3, 10), file(3, 10).replace("\"avg\": 9.5", "\"avg\": 9.25"));
        let again: Reopen = Rc::new(move || Ok(Box::new(std::io::Cursor::new(b.clone().into_bytes()))));
        let p = format::parse_reader_with(cj::FORMAT, a.as_bytes(), "f.json", &Default::default(), &again).unwrap().into_vec();
        let e = build_run(p.into_iter().next().unwrap(), &ctx()).unwrap_err();
        assert!(e.msg.contains("the file changed while it was read"), "{}", e.msg);
    }

    #[test]
    fn threads_out_of_order_are_read_whole_and_sorted() {
        let text = file(3, 10).replacen("\"0\": {", "\"7\": {", 1);
        let p = format::parse(cj::FORMAT, &text, "f.json").unwrap();
        assert!(p[0].rows.is_none());
        assert_eq!(p[0].series.iter().map(|s| s.thread).collect::<Vec<_>>(), [Some(1), Some(2), Some(7)]);
    }
}
