//! `<signal.h>`: the signals that end a measurement as Ctrl-C does.
//!
//! SIGINT (Ctrl-C), SIGTERM (kill, systemd), SIGHUP (an ssh session or a
//! terminal dropping) and SIGQUIT (Ctrl-\) all mean "stop now": the first
//! ends the probes, keeps what they measured, restores what was changed and
//! exits 130; a second exits at once after the signal-safe clean-ups. Every
//! place that registers such a handler (`commands::run::stop_on_signals`,
//! the trace instance's clean-up, the factors journal's restore) takes this
//! one list, so a signal cannot end one part of rtscope without the others.

/// The signals that end a run, a monitor or an experiment like Ctrl-C.
pub(crate) const ENDING: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];
