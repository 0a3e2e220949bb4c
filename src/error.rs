//! Error kinds that map to exit codes: [`BadInput`] is exit 2 (the user can
//! fix the command); anything else is exit 1.

/// The input (a flag, a value, a file) is wrong; the message names it, says
/// what is allowed and what to do. Exit code 2; nothing has been written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

pub(crate) const EXIT_OK: u8 = 0;
pub(crate) const EXIT_FAILURE: u8 = 1;
pub(crate) const EXIT_BAD_INPUT: u8 = 2;
/// `rtscope check`: a bound or the baseline was not met.
pub(crate) const EXIT_GATE_FAILED: u8 = 3;
pub(crate) const EXIT_INTERRUPTED: u8 = 130;
