//! Markdown renderer: the same blocks as the terminal report, as headings,
//! pipe tables and lists, for pasting into papers and issues. Pure function
//! of the analysis.

use crate::analysis::summary::Analysis;
use crate::report::blocks::{blocks, Block, Unit};

/// `|` inside a cell would end it.
fn esc(s: &str) -> String {
    s.replace('|', "\\|")
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
                out.push_str(s);
                out.push('\n');
            }
            Block::Text(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Block::Caption(s) => {
                out.push_str(&format!("**{s}**\n"));
            }
            Block::Pre(s) => {
                out.push_str(&format!("```\n{}\n```\n", s.trim_matches('\n')));
            }
            Block::List(items) => {
                for i in items {
                    out.push_str("- ");
                    out.push_str(i);
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
