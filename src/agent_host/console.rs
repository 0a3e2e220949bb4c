//! Text from the target as rtscope shows it: [`foreign`], the escaper of
//! everything an agent says (names, messages, set-up details), and
//! [`Console`], the last lines the target printed outside the protocol.
//!
//! Console lines (a kernel's messages, a boot banner, an RTOS's assertion)
//! are not protocol and are skipped (docs/agent.md, "Line format"), but when
//! the agent goes silent, stops or fails they are often the only diagnosis
//! (issue 64: NuttX printed `Assertion failed ... sched_unlock.c:67` and
//! rtscope said only that the agent went silent). The reader keeps the last
//! [`CONSOLE_LINES`] of them, each cut to [`CONSOLE_CHARS`] characters and
//! escaped, and the session adds them to its error or warning — so they are
//! in the message, and in the result (or the rescue file) with the warning.

use std::collections::VecDeque;

/// Console lines kept: the last ones before the failure.
pub(crate) const CONSOLE_LINES: usize = 8;

/// Characters kept of each console line (the rest is cut, marked `...`).
pub(crate) const CONSOLE_CHARS: usize = 160;

/// Text from the agent as foreign text: control characters (ANSI colour
/// sequences, line breaks, a terminal's other commands) are shown escaped
/// (`\u{1b}`), never passed to the terminal or a report, so a target cannot
/// forge lines of rtscope's own output.
pub(crate) fn foreign(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// The last console lines of a session, bounded and escaped, each marked
/// by whether it came before the agent's first protocol line (a board's
/// boot lines, printed before the session began) or during the session.
#[derive(Debug, Default)]
pub(crate) struct Console {
    lines: VecDeque<(bool, String)>,
    began: bool,
}

impl Console {
    /// Keep `text` (a line that is not protocol), dropping the oldest kept
    /// line beyond [`CONSOLE_LINES`]; blank lines say nothing and are not kept.
    pub(crate) fn push(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let mut shown: String = text.chars().take(CONSOLE_CHARS).collect();
        if text.chars().nth(CONSOLE_CHARS).is_some() {
            shown.push_str("...");
        }
        if self.lines.len() == CONSOLE_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back((self.began, foreign(&shown)));
    }

    /// The agent's first protocol line arrived: the lines from now on were
    /// printed during the session (issue 64: boot lines were quoted as if
    /// the board printed them in the middle of the run).
    pub(crate) fn session_began(&mut self) {
        self.began = true;
    }

    /// What to add to a message: empty with no console line, else
    /// `; the target's console printed last (outside the protocol): "…" | "…"`
    /// for the lines of the session, and `; before the agent's first
    /// protocol line it printed: "…"` (with none since: `; the target's
    /// console printed last, before the agent's first protocol line: "…"`)
    /// for boot lines.
    pub(crate) fn last_words(&self) -> String {
        let quoted = |during: bool| -> String {
            let q: Vec<String> = self.lines.iter().filter(|(d, _)| *d == during).map(|(_, l)| format!("\"{l}\"")).collect();
            q.join(" | ")
        };
        let (during, before) = (quoted(true), quoted(false));
        match (during.is_empty(), before.is_empty()) {
            (true, true) => String::new(),
            (false, true) => format!("; the target's console printed last (outside the protocol): {during}"),
            (false, false) => {
                format!("; the target's console printed last (outside the protocol): {during}; before the agent's first protocol line it printed: {before}")
            }
            (true, false) => format!("; the target's console printed last, before the agent's first protocol line: {before}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_are_bounded_cut_and_escaped() {
        let mut c = Console::default();
        assert_eq!(c.last_words(), "");
        for i in 0..20 {
            c.push(&format!("line {i}"));
        }
        c.push("");
        c.push(&format!("\x1b[31mred\r{}", "x".repeat(500)));
        let w = c.last_words();
        assert!(!w.contains("\"line 12\"") && w.contains("\"line 13\"") && w.contains("\"line 19\""), "{w}");
        assert_eq!(w.matches(" | ").count(), CONSOLE_LINES - 1, "{w}");
        assert!(!w.contains('\x1b') && !w.contains('\r') && w.contains("\\u{1b}[31mred\\r"), "{w}");
        assert!(w.ends_with("...\""), "{w}");
        assert!(w.len() < 2000, "{}", w.len());
    }

    #[test]
    fn boot_lines_are_told_from_the_sessions_lines() {
        let mut c = Console::default();
        c.push("U-Boot 2024.01");
        c.push("nsh: rtscope_agent");
        assert_eq!(c.last_words(), "; the target's console printed last, before the agent's first protocol line: \"U-Boot 2024.01\" | \"nsh: rtscope_agent\"");
        c.session_began();
        c.push("up_assert: Assertion failed");
        assert_eq!(
            c.last_words(),
            "; the target's console printed last (outside the protocol): \"up_assert: Assertion failed\"; before the agent's first protocol line it printed: \"U-Boot 2024.01\" | \"nsh: rtscope_agent\""
        );
        for i in 0..CONSOLE_LINES {
            c.push(&format!("line {i}"));
        }
        assert!(!c.last_words().contains("before the agent"), "{}", c.last_words());
    }
}
