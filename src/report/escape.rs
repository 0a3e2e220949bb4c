//! Text that is safe to print on a terminal.
//!
//! Result files, histories and imports come from other machines and other
//! people: a host name, a phase, a tag, a process name in a trace or an
//! importer's error line can hold control characters. Printed raw, an OSC
//! sequence (`ESC ] 0 ; … BEL`) retitles the terminal, a CSI sequence
//! (`ESC [ 2 J`) clears it or moves the cursor over a FAIL, and a bare `\r`
//! overwrites the start of a line.
//!
//! [`terminal_safe`] is applied once, to the finished text, where it leaves
//! rtscope for a terminal (`commands::inputs::emit`, the end of `run`,
//! `show`, `history`, error messages). It keeps `\n` and `\t`, and the
//! colour sequences rtscope's own renderers write (SGR `ESC [ … m` with
//! only the parameters of our palette: reset, bold, dim, normal intensity,
//! red, green, yellow, default colour); every other control character —
//! C0, DEL, C1 (U+0080–U+009F) and any other escape sequence — is shown as
//! visible text (`\x1b`, `\x07`, `\u{9b}`), so nothing is hidden and nothing
//! is executed. An SGR with any other parameter (8 = conceal, 30/37/40 =
//! black or white text that hides words) is escaped too.
//!
//! A name from outside printed inside a line of rtscope's own (a traced
//! task's comm, a code path's frame, from this machine or an imported
//! result) must not start a line either: [`one_line`] shows `\n`, `\r` and
//! `\t` as visible text too, and [`one_line_traces`] applies it to every
//! text of a run's trace windows before they are laid out in lines. Both
//! leave plain text as it is, so [`terminal_safe`] after them escapes
//! nothing twice.

use std::borrow::Cow;

use crate::model::{Run, TraceWindow};

/// SGR parameters rtscope's renderers use (console's styles): reset, bold,
/// dim, normal intensity, red, green, yellow, default foreground.
const OUR_SGR: &[&str] = &["0", "1", "2", "22", "31", "32", "33", "39"];

/// `s` with every control character that could act on a terminal made
/// visible; borrowed unchanged when there is none.
pub(crate) fn terminal_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            if let Some(len) = our_sgr(rest) {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if is_control(c) && c != '\n' && c != '\t' {
            out.push_str(&visible(c));
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// `s` as part of one line: every control character, line breaks and tabs
/// included, shown as visible text (`\x0a`); borrowed unchanged when there
/// is none.
pub(crate) fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.chars().map(|c| if is_control(c) { visible(c) } else { c.to_string() }).collect())
}

fn visible(c: char) -> String {
    if (c as u32) < 0x80 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

/// A trace window with every text in it (culprits' names and kinds, code
/// paths' frames, the interrupt's stack) on one line ([`one_line`]).
pub(crate) fn one_line_trace(t: &TraceWindow) -> Cow<'_, TraceWindow> {
    let Ok(mut v) = serde_json::to_value(t) else { return Cow::Borrowed(t) };
    if !strings_one_line(&mut v) {
        return Cow::Borrowed(t);
    }
    serde_json::from_value(v).map_or(Cow::Borrowed(t), Cow::Owned)
}

/// `run` with its trace windows' texts on one line ([`one_line_trace`]);
/// borrowed when there is nothing to escape.
pub(crate) fn one_line_traces(run: &Run) -> Cow<'_, Run> {
    let escapes = |run: &Run| run.results.iter().flat_map(|r| &r.worst).filter_map(|w| w.trace.as_ref()).any(|t| matches!(one_line_trace(t), Cow::Owned(_)));
    if !escapes(run) {
        return Cow::Borrowed(run);
    }
    let mut run = run.clone();
    for w in run.results.iter_mut().flat_map(|r| r.worst.iter_mut()) {
        if let Some(t) = w.trace.as_mut() {
            if let Cow::Owned(safe) = one_line_trace(t) {
                *t = safe;
            }
        }
    }
    Cow::Owned(run)
}

/// Every string in `v` made [`one_line`]; whether any changed.
fn strings_one_line(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => match one_line(s) {
            Cow::Owned(o) => {
                *s = o;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(xs) => xs.iter_mut().fold(false, |any, x| strings_one_line(x) | any),
        Value::Object(m) => m.values_mut().fold(false, |any, x| strings_one_line(x) | any),
        _ => false,
    }
}

fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20 || u == 0x7f || (0x80..0xa0).contains(&u)
}

/// The length of an SGR sequence at the start of `s` whose parameters are
/// all ours (`ESC [ 1 ; 31 m`), else None.
fn our_sgr(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let end = body.find('m')?;
    let params = &body[..end];
    if params.len() > 16 || !params.split(';').all(|p| OUR_SGR.contains(&p)) {
        return None;
    }
    Some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::{one_line, terminal_safe};

    #[test]
    fn one_line_shows_line_breaks() {
        assert_eq!(one_line("hog\r\nerror: forged\tx"), "hog\\x0d\\x0aerror: forged\\x09x");
        assert!(matches!(one_line("kworker/0:1"), std::borrow::Cow::Borrowed(_)));
        // Escaped once: the terminal pass leaves the result alone.
        let once = one_line("a\x1b[2Jb").into_owned();
        assert_eq!(terminal_safe(&once), once);
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let s = "timer  idle  12.5 µs\n\tnext";
        assert!(matches!(terminal_safe(s), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn title_and_clear_sequences_are_shown_not_run() {
        let host = "\x1b]0;owned\x07\x1b[2Jbox";
        assert_eq!(terminal_safe(host), "\\x1b]0;owned\\x07\\x1b[2Jbox");
        assert_eq!(terminal_safe("a\rb\x7f\u{9b}c"), "a\\x0db\\x7f\\u{9b}c");
    }

    #[test]
    fn our_colours_stay_and_hiding_ones_go() {
        let ours = "\x1b[31mFAIL\x1b[0m \x1b[1;32mPASS\x1b[0m \x1b[2mdim\x1b[0m";
        assert_eq!(terminal_safe(ours), ours);
        assert_eq!(terminal_safe("\x1b[8mhidden\x1b[0m"), "\\x1b[8mhidden\x1b[0m");
        assert_eq!(terminal_safe("\x1b[30;40mx"), "\\x1b[30;40mx");
        // An unterminated sequence is escaped, not swallowed.
        assert_eq!(terminal_safe("\x1b[31"), "\\x1b[31");
    }
}
