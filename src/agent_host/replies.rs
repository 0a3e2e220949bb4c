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

use super::block::{results_of, Block, Limits, Refusal};
use super::console::foreign;
use super::proto::Line;
use super::reader::{Got, Reader};

pub(super) enum PlanEnd {
    /// The plan's blocks, and the acknowledged variants it did not run
    /// (`probe:variant`: the agent stopped the plan itself, after a stall).
    Done(Vec<ProbeResult>, Vec<String>),
    /// The agent went away: the complete blocks, and why.
    Gone(Vec<ProbeResult>, String),
    /// After a stall in an earlier plan, the agent refused this one
    /// (`error code=internal`: its stuck thread has not returned): its words.
    Refused(String),
}

/// What a plan lets its replies hold: its probe, threads and the counts a
/// block may announce. With the variants the agent acknowledged, it bounds
/// the blocks (one per variant and thread: at most threads × variants) and
/// so the host's memory for the plan.
#[derive(Debug, Clone)]
pub(super) struct PlanBounds {
    pub(super) probe: String,
    /// The plan's `threads`; a pair probe records on one thread, `switch` on two.
    pub(super) threads: usize,
    pub(super) limits: Limits,
}

/// Plan-wide `setup n=-` lines one plan may send.
const MAX_PLAN_SETUP: usize = 16;

/// The replies to plan `id` (in `phase`) as they arrive.
pub(super) struct Replies<'a> {
    id: u64,
    phase: &'a str,
    live: &'a Live,
    board: &'a LiveBoard,
    bounds: PlanBounds,
    /// The variants the agent's `ack` named (`-`: a probe without variants).
    acked: Option<Vec<String>>,
    plan_setup: usize,
    /// Acknowledged variants the agent refused at run time (a plan-wide
    /// step `refused[probe:variant]`): no block of them is due.
    refused: Vec<String>,
    blocks: Vec<Block>,
    open: Option<Block>,
    /// `stop` was sent: a `done status=stopped` is the answer to it.
    stop_sent: bool,
    /// A probe stalled in an earlier plan of the session: a refusal of this
    /// one before its `ack` ends it as not run ([`PlanEnd::Refused`]).
    pub(super) after_stall: bool,
    /// The target runs on a virtual clock (QEMU `-icount`): its time is
    /// instructions, and a busy probe's plan may take many times its own
    /// time in wall time. A `progress` line that shows the target's clock
    /// moving on then keeps the plan alive, and a plan with no `progress`
    /// at all (its reporter starved) is waited for, both up to
    /// [`VIRTUAL_SLOWDOWN`] times its time.
    pub(super) virtual_clock: bool,
}

/// On a virtual clock, a plan whose `progress` shows its clock moving on,
/// or that sent no `progress` at all, is waited for up to this many times
/// its own time (+ the silence limit): NuttX's `qemu-armv8a` under
/// `-icount shift=1,sleep=off` ran a 10 s `switch` plan in 37 s of wall
/// time, and a busy probe can starve the agent's reporter for all of it
/// (docs/porting.md 5.1). The bound keeps an agent that reports forever,
/// or says nothing, from holding the host for ever.
pub(crate) const VIRTUAL_SLOWDOWN: u32 = 50;

impl<'a> Replies<'a> {
    pub(super) fn new(id: u64, phase: &'a str, live: &'a Live, board: &'a LiveBoard, bounds: PlanBounds) -> Replies<'a> {
        Replies {
            id,
            phase,
            live,
            board,
            bounds,
            acked: None,
            plan_setup: 0,
            refused: Vec::new(),
            blocks: Vec::new(),
            open: None,
            stop_sent: false,
            after_stall: false,
            virtual_clock: false,
        }
    }

    /// Read up to `done`. `stop` raised: the agent is asked to stop (it
    /// returns what it measured); `silence` (`--target-silence`) without a
    /// line, past `planned`, counts as the agent gone. Progress lines come
    /// every 250 ms while it measures, but a probe busy at real-time
    /// priority can hold the agent's reporter off until its variant ends.
    ///
    /// A plan has a hard end: its time and then `silence`, or `silence`
    /// after `stop` was sent. Only the lines that bring its end nearer (a
    /// result block's lines, `begin`, `done`) move that end on, each by
    /// `silence`; `progress` never does (an agent that reports forever and
    /// never ends, or ignores `stop`, is counted gone, keeping what
    /// arrived). A block's lines are bounded by the plan, so the end is too.
    /// On a virtual clock a `progress` line whose `elapsed_ns` moved on (or
    /// names another variant) does move it, by `silence`, but never past
    /// [`VIRTUAL_SLOWDOWN`] × `planned` + `silence` from the start; and
    /// until the plan's first `progress` (a busy probe may starve the
    /// reporter for the whole plan) its end is at least that bound, unless
    /// `stop` was sent.
    pub(super) fn read(
        mut self,
        r: &mut Reader,
        planned: Duration,
        silence: Duration,
        stop: &AtomicBool,
        steps: &mut Vec<SetupStep>,
    ) -> anyhow::Result<PlanEnd> {
        let start = Instant::now();
        let mut end = start + planned + silence;
        let cap = start + planned.saturating_mul(VIRTUAL_SLOWDOWN) + silence;
        let mut clock: Option<(String, u64)> = None;
        let said = crate::units::fmt_ns(silence.as_nanos() as u64);
        loop {
            if stop.load(Ordering::Relaxed) && !self.stop_sent {
                self.stop_sent = true;
                // A failed write means the agent is gone: the read below says so.
                let _ = r.link.send(&Line::new("stop").with("id", self.id).encode());
                end = Instant::now() + silence;
            }
            // No progress yet on a virtual clock: the reporter may be starved.
            let starved = self.virtual_clock && !self.stop_sent && clock.is_none();
            if Instant::now() > if starved { end.max(cap) } else { end } {
                let why = if self.stop_sent {
                    format!("the agent did not end the plan within {said} of being asked to stop")
                } else if starved {
                    format!("the agent sent no progress and did not end the plan within {VIRTUAL_SLOWDOWN} × its time and {said} (on a virtual clock, where a busy probe may starve its reporter; --target-silence)")
                } else {
                    format!("the agent did not end the plan within its time and {said} (--target-silence)")
                };
                return self.gone(format!("{why}{}", r.last_words()));
            }
            let l = match r.next(Duration::from_millis(100))? {
                Got::Line(l) => l,
                Got::Quiet => continue,
                Got::Gone(why) => return self.gone(format!("{why}{}", r.last_words())),
                // The agent's stuck thread from a stall still holds it: this
                // plan is not run, the run keeps what was measured (issue 64).
                Got::Refused(l, _) if self.after_stall && self.acked.is_none() && l.get("code") == Some("internal") => {
                    return Ok(PlanEnd::Refused(foreign(l.get("msg").unwrap_or("no message"))));
                }
                Got::Refused(_, e) => return Err(e.into()),
            };
            if l.kind == "bye" {
                return self.gone("the agent ended the session".into());
            }
            self.check_id(r, &l)?;
            if l.kind != "progress" {
                end = end.max(Instant::now() + silence);
            } else if self.virtual_clock && !self.stop_sent {
                let now = (l.get("variant").unwrap_or("-").to_string(), l.get("elapsed_ns").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0));
                if clock.as_ref().is_none_or(|(v, e)| *v != now.0 || now.1 > *e) {
                    end = end.max((Instant::now() + silence).min(cap));
                }
                clock = Some(now);
            }
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
        let refuse = |e: Refusal| match e {
            Refusal::Malformed(e) => r.malformed(&l.encode(), &e),
            Refusal::Invariant(e) => r.broken(&l.encode(), &e),
        };
        match (l.kind.as_str(), self.open.as_mut()) {
            ("ack", None) => {
                let vs: Vec<String> = super::proto::list(l.get("variants").unwrap_or("-")).into_iter().map(str::to_string).collect();
                self.acked = Some(if vs.is_empty() { vec!["-".to_string()] } else { vs });
            }
            // The announcement again (a serial agent answering `hi` after it had announced itself).
            ("hello" | "probe" | "ready", None) => {}
            ("setup", None) => {
                self.plan_setup += 1;
                if self.plan_setup > MAX_PLAN_SETUP {
                    return Err(bad(format!("more than {MAX_PLAN_SETUP} plan-wide setup lines")).into());
                }
                let mut b = empty_block();
                b.add(l).map_err(refuse)?;
                for st in &b.setup {
                    self.refusal(st).map_err(bad)?;
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
                let b = Block::start(l, &self.bounds.limits).map_err(refuse)?;
                if b.n != self.blocks.len() as u64 {
                    return Err(bad(format!("result n={} where n={} was next", b.n, self.blocks.len())).into());
                }
                self.belongs(&b).map_err(|e| r.broken(&l.encode(), &e))?;
                self.open = Some(b);
            }
            ("setup" | "hist" | "tail" | "sec" | "note", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("a line of result n={} inside block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.add(l).map_err(refuse)?;
            }
            ("end", Some(b)) => {
                if l.num("n").map_err(bad)? != b.n {
                    return Err(bad(format!("end of n={} closes block n={}", l.get("n").unwrap_or("?"), b.n)).into());
                }
                b.finish().map_err(refuse)?;
                if let Some(e) = &b.error {
                    anyhow::bail!("{}{}", failed_on_target(&format!("probe {}, thread {}: {e}", b.s.probe, b.s.thread.unwrap_or(0))), r.last_words());
                }
                for st in &b.setup {
                    add_step(steps, &named_stall(st, b));
                }
                self.blocks.push(self.open.take().expect("open block"));
            }
            ("done", None) => return self.done(l, (at, &r.last_words()), steps, bad).map(Some),
            (k, Some(b)) => return Err(bad(format!("a {k} line inside result block n={} (line {at})", b.n)).into()),
            (k, None) => return Err(bad(format!("a {k} line outside a result block")).into()),
        }
        Ok(None)
    }

    /// A block is of the plan's probe, a variant the agent acknowledged and
    /// a thread of the plan, and the first of that variant and thread: at
    /// most threads × variants blocks.
    fn belongs(&self, b: &Block) -> Result<(), String> {
        let probe = &self.bounds.probe;
        if b.s.probe != *probe {
            return Err(format!("probe={} in a plan of {probe}", foreign(&b.s.probe)));
        }
        let Some(acked) = &self.acked else {
            return Err("a result before the agent acknowledged the plan".into());
        };
        let v = b.s.variant.as_deref().unwrap_or("-");
        // A probe with a second series per variant (periodic's period error,
        // `PERIOD/period-error`) sends a block of it too.
        let suffix = crate::measure::info(probe).and_then(|i| i.series_suffix);
        let of_acked = |a: &String| a == v || suffix.is_some_and(|s| v.strip_suffix(s) == Some(a.as_str()));
        if !acked.iter().any(of_acked) {
            return Err(format!("variant={} is not one the agent acknowledged ({})", foreign(v), foreign(&acked.join(","))));
        }
        let thread = b.s.thread.unwrap_or(0);
        let threads = self.bounds.threads.max(2);
        if thread >= threads {
            return Err(format!("thread {thread} in a plan of {threads} threads"));
        }
        if self.blocks.iter().any(|o| o.s.variant == b.s.variant && o.s.thread == b.s.thread) {
            return Err(format!("a second block of variant {}, thread {thread} (one per variant and thread: the first came twice)", foreign(v)));
        }
        Ok(())
    }

    /// A plan-wide `refused[probe:variant]` step: the agent refused an
    /// acknowledged variant of this plan at run time and measures the
    /// others. One it acknowledged, never one it already sent a block of.
    fn refusal(&mut self, st: &SetupStep) -> Result<(), String> {
        let Some(what) = st.refused_variant() else { return Ok(()) };
        let (probe, v) = what.split_once(':').unwrap_or((what, ""));
        let acked = self.acked.as_deref().unwrap_or(&[]);
        if probe != self.bounds.probe || !acked.iter().any(|a| a == v) {
            return Err(format!("a refusal of {} where plan {} acknowledged {} of {}", foreign(what), self.id, acked.join(","), self.bounds.probe));
        }
        if self.blocks.iter().chain(self.open.iter()).any(|b| b.s.variant.as_deref() == Some(v)) {
            return Err(format!("a refusal of {} after a result block of it", foreign(what)));
        }
        if !self.refused.iter().any(|r| r == v) {
            self.refused.push(v.to_string());
        }
        Ok(())
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
    /// `at`: its line number, and the console's last words for a failure.
    fn done(&mut self, l: &Line, at: (u64, &str), steps: &mut Vec<SetupStep>, bad: impl Fn(String) -> BadInput) -> anyhow::Result<PlanEnd> {
        let (at, words) = at;
        let n = l.num("results").map_err(&bad)?;
        if n != self.blocks.len() as u64 {
            return Err(bad(format!("results={n} but {} result blocks arrived", self.blocks.len())).into());
        }
        if let Some(a) = l.get("allocs").filter(|a| *a != "0") {
            steps.push(SetupStep::failed("no allocation after start-up", format!("the agent counted {a} heap allocations while measuring")));
        }
        if l.get("status") == Some("failed") {
            anyhow::bail!("{}{words}", failed_on_target(&format!("the agent failed the plan: {}", foreign(l.get("msg").unwrap_or("no message")))));
        }
        // Stopped unasked with nothing measured (the agent's warm-up stalled,
        // or it stopped itself): the plan failed on the target, exit 1.
        // Asked, it is the answer to Ctrl-C: the run is kept, interrupted.
        if l.get("status") == Some("stopped") && !self.stop_sent && self.blocks.is_empty() {
            anyhow::bail!(
                "{}",
                failed_on_target(&format!(
                    "the agent ended plan {} with `done status=stopped results=0` (line {}) though rtscope did not ask it to stop: nothing of {} was measured, nothing was stored{words}",
                    self.id,
                    at,
                    foreign(&self.bounds.probe)
                ))
            );
        }
        // Stopped unasked after measuring (the agent's stall watch): the
        // variants it had not come to are not run, and said so.
        let mut not_run = Vec::new();
        if l.get("status") == Some("stopped") && !self.stop_sent {
            let acked = self.acked.clone().unwrap_or_default();
            for v in acked.iter().filter(|v| !self.refused.contains(v) && !self.blocks.iter().any(|b| b.s.variant.as_deref().unwrap_or("-") == v.as_str())) {
                not_run.push(if v == "-" { self.bounds.probe.clone() } else { format!("{}:{}", self.bounds.probe, foreign(v)) });
            }
        }
        if l.get("status") == Some("complete") {
            let acked = self.acked.clone().unwrap_or_else(|| vec!["-".to_string()]);
            let due = acked.iter().filter(|v| !self.refused.contains(v));
            if let Some(v) = due.clone().find(|v| !self.blocks.iter().any(|b| b.s.variant.as_deref().unwrap_or("-") == v.as_str())) {
                return Err(
                    bad(format!("status=complete but no result block of variant {} arrived: a plan with no result was not measured", foreign(v))).into()
                );
            }
        }
        let results = results_of(&self.blocks, self.phase).map_err(|e| bad(format!("the result blocks cannot be stored: {e}")))?;
        Ok(PlanEnd::Done(results, not_run))
    }
}

/// A block's set-up step as the run keeps it: the agent's stall watch
/// (`no event for 5000 ms after N; stopped`) names the probe and variant
/// that stalled, so the warning does in a run of several probes.
fn named_stall(st: &SetupStep, b: &Block) -> SetupStep {
    if st.step != "stall watch" {
        return st.clone();
    }
    let what = match b.s.variant.as_deref() {
        Some(v) => format!("{}:{v}", b.s.probe),
        None => b.s.probe.clone(),
    };
    SetupStep::new(st.step.clone(), st.outcome, format!("{what}: {}", st.detail))
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
        .with("setup", 1);
    Block::start(&l, &Limits::plan_wide()).expect("a well-formed empty block")
}

/// A failure the target reports (`done status=failed`, a block's `error=`,
/// `error code=internal`): the system measured failed, not the input, so
/// exit 1, as a native probe's failure (docs/agent.md, "Exit codes").
pub(super) fn failed_on_target(what: &str) -> String {
    format!("on the target: {what}")
}
