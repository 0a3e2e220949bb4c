//! The session's reading side: every line from the agent numbered, noise
//! and the host's own echoed lines skipped, malformed lines and the agent's
//! `error` turned into [`BadInput`] naming the line; and the agent's
//! announcement (`hello`, `probe` lines, `ready`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::BadInput;

use super::console::Console;
use super::proto::{self, Line, Parsed};
use super::transport::{Incoming, Link};

/// How long the agent has to announce itself (a board booting under qemu
/// takes a while: lab/kernel-lab's arm64 guest under `--icount` with a guest
/// load, on a host at load average 15, took over 60 s to its agent's hello;
/// a serial agent answers `hi` at once).
pub(crate) const HELLO_TIMEOUT: Duration = Duration::from_secs(180);

/// The most CPUs a target may announce: Linux's largest `NR_CPUS`. A
/// `hello` beyond it is malformed, refused before anything is sized by it.
pub(crate) const MAX_TARGET_CPUS: u64 = 8192;

/// The most `probe` lines an announcement may hold (rtscope has 17 probes).
pub(crate) const MAX_PROBES: usize = 64;

/// What the agent announced.
#[derive(Debug)]
pub(super) struct Hello {
    pub(super) line: Line,
    /// (probe, variants).
    pub(super) probes: Vec<(String, Vec<String>)>,
}

/// The session's reading side: numbers every line it takes, keeps the
/// last console lines for messages ([`Console`]), and turns malformed
/// lines into [`BadInput`].
pub(super) struct Reader<'a> {
    pub(super) link: &'a mut Link,
    pub(super) number: u64,
    pub(super) console: Console,
}

pub(super) enum Got {
    Line(Line),
    /// The link ended or failed: why.
    Gone(String),
    Quiet,
    /// The agent's `error` line, and the refusal it makes (exit 2 unless
    /// the caller knows better: a plan refused after a stall).
    Refused(Line, BadInput),
}

impl Reader<'_> {
    pub(super) fn new(link: &mut Link) -> Reader<'_> {
        Reader { link, number: 0, console: Console::default() }
    }

    /// The target's last console lines, for a message (empty if none).
    pub(super) fn last_words(&self) -> String {
        self.console.last_words()
    }

    pub(super) fn malformed(&self, text: &str, why: &str) -> BadInput {
        let shown: String = text.chars().take(200).collect();
        let more = if text.chars().count() > 200 { "..." } else { "" };
        BadInput(format!(
            "{}: line {} from the agent is malformed ({why}): {shown:?}{more}; nothing was stored. Check the link (baud rate, a noisy line) and that agent and rtscope speak protocol {}",
            self.link.spec,
            self.number,
            proto::PROTOCOL
        ))
    }

    /// A well-formed line whose content breaks an invariant of a result
    /// (`why` names it): not the link (its checksum held), the agent.
    pub(super) fn broken(&self, text: &str, why: &str) -> BadInput {
        let shown: String = text.chars().take(200).collect();
        let more = if text.chars().count() > 200 { "..." } else { "" };
        BadInput(format!(
            "{}: line {} from the agent is well-formed, but what it states breaks an invariant of a result ({why}): {shown:?}{more}; nothing was stored. No measurement makes this: the agent's build or port is wrong. Rebuild the agent from this rtscope's agent/ (agent/test.sh checks a build), check its port file (docs/porting.md), and report the line if it persists",
            self.link.spec, self.number
        ))
    }

    /// The next protocol line from the agent within `wait`: noise and the
    /// host's own echoed lines are skipped.
    pub(super) fn next(&mut self, wait: Duration) -> Result<Got, BadInput> {
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let Some(item) = self.link.next(left.min(Duration::from_millis(100))) else {
                if Instant::now() >= end {
                    return Ok(Got::Quiet);
                }
                continue;
            };
            match item {
                Incoming::Eof => {
                    // Let the agent's exit status be seen, if it has one.
                    std::thread::sleep(Duration::from_millis(50));
                    let how = self.link.exit_status().map(|s| format!(" ({s})")).unwrap_or_default();
                    return Ok(Got::Gone(format!("the agent closed the link{how}")));
                }
                Incoming::Failed(e) => return Ok(Got::Gone(format!("reading from the agent failed: {e}"))),
                Incoming::Line(text) => {
                    self.number += 1;
                    let text = match text {
                        Ok(t) => t,
                        Err(t) if t.starts_with("RTS") => return Err(self.malformed(&t, &format!("longer than {} bytes", proto::MAX_PROTOCOL_LINE))),
                        Err(t) => {
                            self.console.push(&t);
                            continue;
                        }
                    };
                    match proto::parse(&text) {
                        Ok(Parsed::Noise) => {
                            self.console.push(&text);
                            continue;
                        }
                        Ok(Parsed::Line(l)) if proto::HOST_KINDS.contains(&l.kind.as_str()) && l.kind != "bye" => continue,
                        Ok(Parsed::Line(l)) => {
                            // Console lines from now on were printed during the session.
                            self.console.session_began();
                            if l.kind == "error" {
                                let refused = BadInput(format!(
                                    "{}: the agent refused (line {} {text:?}): {} [{}]{}",
                                    self.link.spec,
                                    self.number,
                                    super::console::foreign(l.get("msg").unwrap_or("no message")),
                                    super::console::foreign(l.get("code").unwrap_or("?")),
                                    self.last_words()
                                ));
                                return Ok(Got::Refused(l, refused));
                            }
                            return Ok(Got::Line(l));
                        }
                        Err(why) => return Err(self.malformed(&text, &why)),
                    }
                }
            }
        }
    }
}

/// Read the announcement: `hello`, `probe` lines, `ready`.
pub(super) fn announcement(r: &mut Reader, stop: &AtomicBool) -> anyhow::Result<Hello> {
    let mut hello: Option<Hello> = None;
    let end = Instant::now() + HELLO_TIMEOUT;
    loop {
        if stop.load(Ordering::Relaxed) {
            anyhow::bail!(crate::error::BadInput(format!("{}: interrupted before the agent announced itself; nothing was measured", r.link.spec)));
        }
        if Instant::now() > end {
            return Err(BadInput(format!(
                "{}: no `RTS1 hello` from the agent within {} s; is rtscope-agent running at the other end (and the baud rate right)?{}",
                r.link.spec,
                HELLO_TIMEOUT.as_secs(),
                r.last_words()
            ))
            .into());
        }
        let l = match r.next(Duration::from_millis(200))? {
            Got::Line(l) => l,
            Got::Quiet => continue,
            Got::Gone(why) => return Err(BadInput(format!("{}: {why} before announcing itself; nothing was measured{}", r.link.spec, r.last_words())).into()),
            Got::Refused(_, e) => return Err(e.into()),
        };
        let at = r.number;
        match l.kind.as_str() {
            "hello" => {
                let v = l.num("proto").map_err(|e| r.malformed(&l.encode(), &e))?;
                if v != u64::from(proto::PROTOCOL) {
                    return Err(BadInput(format!("{}: the agent speaks protocol {v}, this rtscope {}", r.link.spec, proto::PROTOCOL)).into());
                }
                for key in ["cpus", "max_threads"] {
                    if let Some(v) = l.get(key) {
                        let n: u64 = v.parse().map_err(|_| r.malformed(&l.encode(), &format!("{key}={v} is not an unsigned number")))?;
                        if n > MAX_TARGET_CPUS {
                            let why = format!("{key}={n}: more than {MAX_TARGET_CPUS}, the most CPUs or threads a target may have");
                            return Err(r.malformed(&l.encode(), &why).into());
                        }
                    }
                }
                hello = Some(Hello { line: l, probes: Vec::new() });
            }
            "probe" => {
                let h = hello.as_mut().ok_or_else(|| r.malformed(&l.encode(), "a probe line before hello"))?;
                let name = l.req("name").map_err(|e| r.malformed(&l.encode(), &e))?.to_string();
                if h.probes.len() >= MAX_PROBES || h.probes.iter().any(|(n, _)| *n == name) {
                    let why = format!("probe {} announced twice, or more than {MAX_PROBES} probes", super::console::foreign(&name));
                    return Err(r.malformed(&l.encode(), &why).into());
                }
                let variants = proto::list(l.get("variants").unwrap_or("")).into_iter().map(str::to_string).collect();
                h.probes.push((name, variants));
            }
            "ready" => match hello.take() {
                Some(h) => return Ok(h),
                None => return Err(r.malformed(&l.encode(), "ready before hello").into()),
            },
            k => return Err(r.malformed(&l.encode(), &format!("a {k} line (line {at}) before the agent was ready")).into()),
        }
    }
}
