//! Markdown renderer: the same blocks as the terminal report, as headings,
//! pipe tables and lists, for pasting into papers and issues. Pure function
//! of the analysis.

use crate::analysis::summary::Analysis;
use crate::report::blocks::{blocks, Block, Unit};

/// A table cell: [`text`], on one line, `|` (which would end it) escaped.
fn esc(s: &str) -> String {
    text(s).replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text from outside (a host name, a trace frame, an imported name) as
/// Markdown text, never markup a viewer acts on: raw HTML (`<img src=x
/// onerror=…>`, `</p>`, `<!--`, an autolink) and entities are written as
/// entities, an image (`![…](…)`, which a viewer fetches) as text. A `<`
/// or `&` that cannot start a tag or an entity (`p < 1e-300`) stays as is,
/// as CommonMark shows it so.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match (c, next) {
            ('<', Some(n)) if n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?') => out.push_str("&lt;"),
            ('&', Some(n)) if n.is_ascii_alphanumeric() || n == '#' => out.push_str("&amp;"),
            ('!', Some('[')) => out.push_str("!\\"),
            _ => out.push(c),
        }
    }
    out
}

/// A code fence longer than any run of backticks in `s` (which would end a shorter one).
fn fence(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The report as Markdown; the bin tables only with `bins` (`--bins`).
pub(crate) fn render(a: &Analysis, unit: Unit, bins: bool) -> String {
    render_blocks("rtscope report", &blocks(a, unit, bins))
}

/// The Markdown report as a [`crate::report::Renderer`]; the bin tables
/// only with `bins`.
pub(crate) struct Markdown {
    pub(crate) unit: Unit,
    pub(crate) bins: bool,
}

impl crate::report::Renderer for Markdown {
    fn render(&self, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        Ok(render(a, self.unit, self.bins).into_bytes())
    }
}

/// Lay out report blocks as Markdown under a level-1 `title`.
pub(crate) fn render_blocks(title: &str, blocks: &[Block]) -> String {
    let mut out = format!("# {title}\n");
    blocks_into(&mut out, &crate::report::blocks::for_text(blocks));
    out
}

/// Text blocks (see [`crate::report::blocks::for_text`]) as Markdown: a
/// caption in bold, preformatted lines as a code block, a part in line.
fn blocks_into(out: &mut String, blocks: &[Block]) {
    for b in blocks {
        if let Block::Part(blocks) = b {
            blocks_into(out, blocks);
            continue;
        }
        out.push('\n');
        match b {
            Block::Fields(_) | Block::Folded { .. } | Block::Marked { .. } | Block::Plot(_) | Block::Part(_) => {}
            Block::Heading(level, s) => {
                out.push_str(&"#".repeat(*level as usize));
                out.push(' ');
                out.push_str(&text(s));
                out.push('\n');
            }
            Block::Text(s) => {
                out.push_str(&text(s));
                out.push('\n');
            }
            Block::Caption(s) => {
                out.push_str(&format!("**{}**\n", text(s)));
            }
            Block::Pre(s) => {
                // A code block shows its text as it is: only its fence must hold.
                let f = fence(s);
                out.push_str(&format!("{f}\n{}\n{f}\n", s.trim_matches('\n')));
            }
            Block::List(items) => {
                for i in items {
                    out.push_str("- ");
                    out.push_str(&text(i));
                    out.push('\n');
                }
            }
            Block::Table(t) => {
                out.push_str("| ");
                out.push_str(&t.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
                out.push_str(" |\n|");
                for c in 0..t.header.len() {
                    out.push_str(if c < t.label_cols { ":---|" } else { "---:|" });
                }
                out.push('\n');
                for r in &t.rows {
                    out.push_str("| ");
                    out.push_str(&r.iter().map(|c| esc(&c.text)).collect::<Vec<_>>().join(" | "));
                    out.push_str(" |\n");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::blocks::Table;

    /// A trace frame or a name from outside cannot put HTML into the page
    /// (issue 59: `<img src=x onerror=…>` was embedded raw).
    #[test]
    fn html_from_outside_is_text() {
        let evil = "<img src=x onerror=alert(1)> </td><script>x</script> &lt; <!-- ![t](http://e/x.png)";
        let table = Table::plain(vec!["what held the CPU".into()], 1, vec![vec![format!("{evil}|\nnext")]]);
        let md = render_blocks(
            "t",
            &[Block::Heading(2, evil.into()), Block::Text(evil.into()), Block::Caption(evil.into()), Block::List(vec![evil.into()]), Block::Table(table)],
        );
        assert!(!md.contains('<') || !md.split('<').skip(1).any(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || "/!?".contains(c))), "{md}");
        assert!(md.contains("&lt;img src=x onerror=alert(1)> &lt;/td>&lt;script>x&lt;/script> &amp;lt; &lt;!-- !\\[t](http://e/x.png)"), "{md}");
        assert!(md.contains("\\| next |"), "a cell stays one cell on one line: {md}");
        // What cannot start markup stays as it is.
        let plain = render_blocks("t", &[Block::Text("p < 1e-300, A & B, 2 <= 3".into())]);
        assert!(plain.contains("p < 1e-300, A & B, 2 <= 3"), "{plain}");
        // A code block keeps its text; backticks in it cannot end it.
        let pre = render_blocks("t", &[Block::Pre("a <b>\n```\nrm -rf\n".into())]);
        assert!(pre.contains("````\na <b>\n```\nrm -rf\n````\n"), "{pre}");
    }
}
