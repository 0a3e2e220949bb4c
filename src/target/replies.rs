//! One plan's replies, read up to its `done`: the agent's set-up steps,
//! its progress for the live bar, and its result blocks (docs/agent.md,
//! "Session"). A block counts once its `end` arrived and checked out; when
//! the agent goes away mid-plan, the complete blocks are kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::BadInput;
use crate::measure::recorder::Live;
use crate::measure::LiveBoard;
use crate::model::{ProbeResult, SetupStep};
use crate::runner::add_step;

use super::block::{results_of, Block};
use super::proto::Line;
use super::reader::{Got, Reader};

pub(super) enum PlanEnd {
    Done(Vec<ProbeResult>),
    /// The agent went away: the complete blocks, and why.
    Gone(Vec<ProbeResult>, String),
}

/// The replies to plan `id` (in `phase`) as they arrive.
pub(super) struct Replies<'a> {
    id: u64,
    phase: &'a str,
    live: &'a Live,
    board: &'a LiveBoard,
    blocks: Vec<Block>,
    open: Option<Block>,
}

impl<'a> Replies<'a> {
    pub(super) fn new(id: u64, phase: &'a str, live: &'a Live, board: &'a LiveBoard) -> Replies<'a> {
        Replies { id, phase, live, board, blocks: Vec::new(), open: None }
    }

    /// Read up to `done`. `stop` raised: the agent is asked to stop (it
    /// returns what it measured); `silence` (`--target-silence`) without a
    /// line, past `planned`, counts as the agent gone. Progress lines come
    /// every 250 ms while it measures, but a probe busy at real-time
    /// priority can hold the agent's reporter off until its variant ends.
    pub(super) fn read(mut self, r: &mut Reader, planned: Duration, silence: Duration, stop: &AtomicBool, steps: &mut Vec<SetupStep>) -> anyhow::Result<PlanEnd> {
        let mut stop_sent = false;
        let mut silent_until = Instant::now() + planned + silence;
        loop {
            if stop.load(Ordering::Relaxed) && !stop_sent {
                stop_sent = true;
                // A failed write means the agent is gone: the read below says so.
                let _ = r.link.send(&Line::new("stop").with("id", self.id).encode());
                silent_until = Instant::now() + silence;
            }
            let l = match r.next(Duration::from_millis(100))? {
                Got::Line(l) => l,
                Got::Quiet if Instant::now() > silent_until => {
                    return self.gone(format!("the agent said nothing for {}", crate::units::fmt_ns(silence.as_nanos() as u64)))
                }
                Got::Quiet => continue,
                Got::Gone(why) => return self.gone(why),
            };
            if l.kind == "bye" {
                return self.gone("the agent ended the session".into());
            }
            self.check_id(r, &l)?;
            silent_until = silent_until.max(Instant::now() + silence);
            if let Some(end) = self.take(r, &l, steps)? {
                return Ok(end);
            }
        }
    }

    /// The complete blocks that arrived (refused as a whole if they break
    /// the result invariants: see [`results_of`]).
    fn gone(self, why: String) -> anyhow::Result<PlanEnd> {
        let results = results_of(&self.blocks, self.phase).map_err(|e| BadInput(format!("the agent's result blocks cannot be stored: {e}")))?;
        Ok(PlanEnd::Gone(results, why))
    }

    /// Every line but the announcement again names this plan (or none, `-`).
    fn check_id(&self, r: &Reader, l: &Line) -> Result<(), BadInput> {
        let reannounce = matches!(l.kind.as_str(), "hello" | "probe" | "ready");
        let ids = self.id.to_string();
        if !reannounce && l.get("id") != Some(ids.as_str()) && l.get("id") != Some("-") {
            return Err(r.malformed(&l.encode(), &format!("id={} where plan {} runs", l.get("id").unwrap_or("(none)"), self.id)));
        }
        Ok(())
    }

    /// One line of the plan's replies; `Some` at its `done`.
    fn take(&mut self, r: &Reader, l: &Line, steps: &mut Vec<SetupStep>) -> anyhow::Result<Option<PlanEnd>> {
        let at = r.number;
        let bad = |e: String| r.malformed(&l.encode(), &e);
        match (l.kind.as_str(), self.open.as_mut()) {
            ("ack", None) => {}
            // The announcement again (a serial agent answering `hi` after it had announced itself).
            ("hello" | "probe" | "ready", None) => {}
            ("setup", None) => {
                let mut b = empty_block();
                b.add(l).map_err(bad)?;
                for st in &b.setup {
                    add_step(steps, st);
                }
            }
            ("begin", None) => self.begin(l),
            ("progress", _) => {
                self.live.samples.store(l.num("samples").map_err(bad)?, Ordering::Relaxed);
                self.live.overruns.store(l.num("overruns").map_err(bad)?, Ordering::Relaxed);
                self.live.max_ns.fetch_max(l.num("max_ns").map_err(bad)?, Ordering::Relaxed);
            }
            ("result", None) => {
                let b = Block::start(l).map_err(bad)?;
                if b.n != self.blocks.len() as u64 {
                    return Err(bad(format!("result n={} where n={} was next", b.n, self.blocks.len())).into());
                }
                self.open = Some(b);
            }
            ("setup" | "hist" | "tail" | "sec" | "note", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("a line of result n={} inside block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.add(l).map_err(bad)?;
            }
            ("end", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("end of n={} closes block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.finish().map_err(bad)?;
                if let Some(e) = &b.error {
                    anyhow::bail!("probe {}, thread {} on the target: {e}", b.s.probe, b.s.thread.unwrap_or(0));
                }
                for st in &b.setup {
                    add_step(steps, st);
                }
                self.blocks.push(self.open.take().expect("open block"));
            }
            ("done", None) => return self.done(l, steps, bad).map(Some),
            (k, Some(b)) => return Err(bad(format!("a {k} line inside result block n={} (line {at})", b.n)).into()),
            (k, None) => return Err(bad(format!("a {k} line outside a result block")).into()),
        }
        Ok(None)
    }

    /// A variant begins: the live bar names it, its counters start at 0.
    fn begin(&self, l: &Line) {
        let v = l.get("variant").filter(|v| *v != "-");
        let now = self.board.current.lock().map(|c| c.split(" [").next().unwrap_or("").to_string()).unwrap_or_default();
        *self.board.current.lock().expect("board lock") = match v {
            Some(v) => format!("{now} [{v}]"),
            None => now,
        };
        self.live.samples.store(0, Ordering::Relaxed);
        self.live.overruns.store(0, Ordering::Relaxed);
    }

    /// `done`: as many blocks as it says, no allocation while measuring.
    fn done(&mut self, l: &Line, steps: &mut Vec<SetupStep>, bad: impl Fn(String) -> BadInput) -> anyhow::Result<PlanEnd> {
        let n = l.num("results").map_err(&bad)?;
        if n != self.blocks.len() as u64 {
            return Err(bad(format!("results={n} but {} result blocks arrived", self.blocks.len())).into());
        }
        if let Some(a) = l.get("allocs").filter(|a| *a != "0") {
            steps.push(SetupStep::failed("no allocation after start-up", format!("the agent counted {a} heap allocations while measuring")));
        }
        if l.get("status") == Some("failed") {
            anyhow::bail!("the agent failed the plan: {}", l.get("msg").unwrap_or("no message"));
        }
        Ok(PlanEnd::Done(results_of(&self.blocks, self.phase).map_err(|e| bad(format!("the result blocks cannot be stored: {e}")))?))
    }
}

/// A block to collect plan-wide `setup n=-` lines into.
fn empty_block() -> Block {
    let l = Line::new("result")
        .with("n", 0)
        .with("probe", "-")
        .with("variant", "-")
        .with("thread", 0)
        .with("cpu", "-")
        .with("interval_ns", 0)
        .with("samples", 0)
        .with("overruns", 0)
        .with("min_ns", 0)
        .with("max_ns", 0)
        .with("sum", 0)
        .with("sumsq", 0)
        .with("hist", 0)
        .with("tail", 0)
        .with("tail_k", 0)
        .with("worst", 0)
        .with("sec", 0)
        .with("width_s", 1)
        .with("setup", 0);
    Block::start(&l).expect("a well-formed empty block")
}
