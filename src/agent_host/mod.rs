//! Measuring another system: rtscope drives rtscope-agent (agent/, C99 +
//! POSIX) over a pipe, TCP or a serial line and turns what it sends into
//! the same result model as a native run (docs/agent.md is the protocol).
//!
//! - [`transport`]: `--target exec:CMD | tcp:HOST:PORT | serial:DEV[:BAUD]`
//!   → a [`transport::Link`] of lines;
//! - [`proto`]: one line of protocol 1, checksum and grammar checked;
//! - [`block`]: a result block → result entries (per thread and merged);
//! - [`bounds`]: what the plan and the announcement let a block state;
//! - [`reader`]: the lines from the agent, numbered and checked; its announcement;
//! - [`console`]: text from the target as shown (escaped), its last console lines;
//! - [`replies`]: one plan's replies up to its `done`;
//! - [`session`]: one plan per probe and phase, stop, the run;
//! - [`beside`]: this host's other work beside a target that runs on it;
//! - [`transcript`]: `--target-transcript`, every byte of the session.
//!
//! It sits on the runner's layer: it is the runner for a plan measured
//! elsewhere, and shares the runner's final write.

mod beside;
pub(crate) mod block;
mod bounds;
mod console;
pub(crate) mod proto;
mod reader;
mod replies;
pub(crate) mod session;
mod transcript;
pub(crate) mod transport;

pub(crate) use replies::VIRTUAL_SLOWDOWN;
pub(crate) use session::{agent_load, execute, OnTarget};
pub(crate) use transport::TargetSpec;
