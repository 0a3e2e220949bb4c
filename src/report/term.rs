//! The terminal layout of report blocks: the report, the comparison and the
//! end of a run ([`crate::report::blocks::end_of_run`]) as fixed-width text,
//! latencies in µs with one decimal (or ns).

use crate::model::{Nanos, ProbeResult};
use crate::report::blocks::{Block, Cell, Table, Tone, Unit, NOT_APPLICABLE, UNKNOWN};

/// A percentile cell; [`UNKNOWN`] when the result has none (imported
/// summary-only results: percentiles unknown, see docs/schema.md); a bound
/// (`≥ X`, `X–Y`) when it lies in a wide bucket (`percentiles::bounded`).
pub(crate) fn pct(r: &ProbeResult, key: &str, u: Unit) -> String {
    let Some(q) = crate::stats::PERCENTILES.iter().find(|p| p.key == key) else { return UNKNOWN.into() };
    if !r.distribution_known() || !r.percentiles_ns.contains_key(key) {
        return UNKNOWN.into();
    }
    match crate::analysis::percentiles::bounded(&r.histogram, q.q, r.min_ns, r.max_ns) {
        Some(p) => p.shown(|v: Nanos| u.fmt(v.0 as f64)),
        None => UNKNOWN.into(),
    }
}

/// Lay a table out: label columns left-aligned, the others right-aligned,
/// two spaces between columns, no trailing blanks.
fn table_into(out: &mut String, t: &Table, style: &dyn Fn(&str, Tone) -> String, bold: &dyn Fn(&str) -> String) {
    let ncol = t.header.len();
    let width = |c: usize| -> usize {
        t.rows.iter().map(|r| r.get(c).map(|x| x.text.chars().count()).unwrap_or(0)).chain(std::iter::once(t.header[c].chars().count())).max().unwrap_or(0)
    };
    let widths: Vec<usize> = (0..ncol).map(width).collect();
    let pad = |s: &str, c: usize| -> String {
        let fill = " ".repeat(widths.get(c).copied().unwrap_or(0).saturating_sub(s.chars().count()));
        if c < t.label_cols {
            format!("{s}{fill}")
        } else {
            format!("{fill}{s}")
        }
    };
    let head: Vec<String> = t.header.iter().enumerate().map(|(c, h)| pad(h, c)).collect();
    out.push_str(&bold(head.join("  ").trim_end()));
    out.push('\n');
    for r in &t.rows {
        let cells: Vec<String> = r.iter().enumerate().map(|(c, x)| style(&pad(&x.text, c), x.tone)).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
}

/// The report for a terminal: every block of [`crate::report::blocks`] as
/// fixed-width text; with `colour`, headings bold and cells coloured by
/// tone (red worse/miss/refused, green better/passed, dim missing). With
/// `width`, text is wrapped to it and tables leave out their optional
/// columns until they fit (and say which); `None` is `--wide`.
pub(crate) fn render(a: &crate::analysis::summary::Analysis, unit: Unit, bins: bool, colour: bool, width: Option<usize>) -> String {
    render_blocks(&crate::report::blocks::blocks(a, unit, bins), colour, width)
}

/// The terminal report as a [`crate::report::Renderer`].
pub(crate) struct Term {
    pub(crate) unit: Unit,
    /// The bin tables too (`--bins`).
    pub(crate) bins: bool,
    pub(crate) colour: bool,
    /// Columns to fit (see [`width`]); `None` is `--wide`.
    pub(crate) width: Option<usize>,
}

impl crate::report::Renderer for Term {
    fn render(&self, a: &crate::analysis::summary::Analysis) -> anyhow::Result<Vec<u8>> {
        Ok(render(a, self.unit, self.bins, self.colour, self.width).into_bytes())
    }
}

/// The command line's say in the width rule: `--width N` and `--wide`
/// (global flags), set once by `commands::entry` before any command runs.
static FLAGS: std::sync::OnceLock<(Option<usize>, bool)> = std::sync::OnceLock::new();

/// The narrowest layout rtscope attempts: a terminal (or `COLUMNS`) below
/// it is laid out to it.
pub(crate) const MIN_WIDTH: usize = 40;

/// What the width rule reads when stdout is not a terminal and no
/// `--width` says otherwise.
pub(crate) const PIPED_WIDTH: usize = 80;

/// Record `--width N` and `--wide` for [`width`] (the first call wins).
pub(crate) fn set_flags(width: Option<usize>, wide: bool) {
    let _ = FLAGS.set((width, wide));
}

/// The one width rule: the columns every table and paragraph rtscope
/// prints is laid out to. `--wide`: none (every column, no wrapping);
/// `--width N`: N; written to a file (`to_file`) or piped: 80; standard
/// output a terminal: `COLUMNS` when it names a width, else the terminal's
/// own (never below [`MIN_WIDTH`]). JSON, CSV and Markdown never ask.
pub(crate) fn width(to_file: bool) -> Option<usize> {
    let (given, wide) = FLAGS.get().copied().unwrap_or((None, false));
    if wide {
        return None;
    }
    if let Some(w) = given {
        return Some(w.max(MIN_WIDTH));
    }
    let term = console::Term::stdout();
    if to_file || !term.is_term() {
        return Some(PIPED_WIDTH);
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c > 0);
    let cols = columns.or_else(|| term.size_checked().map(|(_, c)| c as usize)).unwrap_or(PIPED_WIDTH);
    Some(cols.max(MIN_WIDTH))
}

/// `text` after `prefix` ("warning: ", "note: "), as one paragraph of the
/// width rule's width for standard output, its further lines under the
/// text (a hanging indent), ending in a newline.
pub(crate) fn para(prefix: &str, text: &str) -> String {
    let rest = " ".repeat(prefix.chars().count().min(12));
    let mut s = text.lines().enumerate().map(|(i, l)| wrap(l, if i == 0 { prefix } else { &rest }, &rest, width(false))).collect::<Vec<_>>().join("\n");
    if text.is_empty() {
        s.push_str(prefix.trim_end());
    }
    s.push('\n');
    s
}

/// A paragraph in `width` columns: its first line after `first`, the
/// others after `rest` (a hanging indent), broken at word boundaries (a word
/// longer than a line is broken); one line after `first` without a width.
/// An empty text is `first` alone (its trailing spaces trimmed).
pub(crate) fn paragraph(s: &str, first: &str, rest: &str, width: Option<usize>) -> String {
    if s.trim().is_empty() {
        return first.trim_end().to_string();
    }
    wrap(s, first, rest, width)
}

/// Lines laid out in advance (a [`Block::Pre`]), each wider than `width`
/// broken at word boundaries under its own indent plus four spaces; the
/// blank lines kept.
fn pre_lines(s: &str, width: Option<usize>) -> String {
    let Some(w) = width else { return s.to_string() };
    let mut out = String::new();
    for l in s.split_inclusive('\n') {
        let body = l.trim_end_matches('\n');
        if body.chars().count() <= w {
            out.push_str(l);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == ' ').collect();
        out.push_str(&wrap(body.trim_start(), &indent, &format!("{indent}    "), Some(w)));
        if l.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The table laid out in `width` columns: optional columns left out, in
/// their order, until it fits — first those with nothing to show (every
/// cell [`UNKNOWN`], [`NOT_APPLICABLE`] or empty); if it is still too wide, the unit suffix of the
/// headers; if still, long names become keys ([`keyed`]); if still, the
/// optional label columns that tell rows apart (a run's `thread`). Returns the
/// table, the headers left out, the unit taken out of the headers and the
/// keys' legend.
fn fit(t: &Table, width: usize) -> (Table, Vec<String>, Option<String>, Vec<String>) {
    let line_width = |t: &Table| -> usize {
        let w: usize = (0..t.header.len())
            .map(|c| t.rows.iter().map(|r| r.get(c).map(|x| x.text.chars().count()).unwrap_or(0)).chain([t.header[c].chars().count()]).max().unwrap_or(0))
            .sum();
        w + 2 * t.header.len().saturating_sub(1)
    };
    // The headers a table gives keys (a comparison's systems) before anything is left out.
    let mut t = t.clone();
    let mut legend = Vec::new();
    if line_width(&t) > width {
        legend = header_keys(&mut t);
    }
    let t = &t;
    let empty = |c: usize| t.rows.iter().all(|r| r.get(c).is_none_or(|x| x.text == UNKNOWN || x.text == NOT_APPLICABLE || x.text.is_empty()));
    let mut order: Vec<usize> = t.optional.iter().copied().filter(|&c| empty(c)).collect();
    order.extend(t.optional.iter().copied().filter(|&c| !empty(c)));
    let mut keep: Vec<usize> = (0..t.header.len()).collect();
    let mut dropped = Vec::new();
    let mut cur = t.clone();
    // A label column whose absence would make two rows read the same (a
    // run's per-thread rows and their merged `all` row) is left out only
    // after the units and the keys: last of all.
    let distinct = |keep: &[usize]| -> usize {
        let label = |r: &Vec<Cell>, k: usize| r.get(k).map_or(String::new(), |x| x.text.clone());
        t.rows
            .iter()
            .map(|r| keep.iter().filter(|&&k| k < t.label_cols).map(|&k| label(r, k)).collect::<Vec<_>>())
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    let mut last = Vec::new();
    for c in order {
        if line_width(&cur) <= width {
            break;
        }
        let without: Vec<usize> = keep.iter().copied().filter(|&k| k != c).collect();
        if c < t.label_cols && distinct(&without) < distinct(&keep) {
            last.push(c);
            continue;
        }
        keep.retain(|&k| k != c);
        dropped.push(t.header[c].clone());
        cur = Table {
            header: keep.iter().map(|&k| t.header[k].clone()).collect(),
            label_cols: keep.iter().filter(|&&k| k < t.label_cols).count(),
            rows: t.rows.iter().map(|r| keep.iter().filter_map(|&k| r.get(k).cloned()).collect()).collect(),
            optional: Vec::new(),
            wrap: Vec::new(),
            keys: t.keys.iter().filter_map(|(c, k)| keep.iter().position(|x| x == c).map(|i| (i, k.clone()))).collect(),
        };
    }
    // Still too wide: the unit once in the note instead of in every header.
    let mut stripped = None;
    let unit = |h: &str| h.strip_suffix(')').and_then(|h| h.rsplit_once('(')).map(|(base, u)| (base.to_string(), u.to_string()));
    if line_width(&cur) > width {
        if let Some((_, u)) = cur.header.iter().find_map(|h| unit(h)) {
            if cur.header.iter().filter_map(|h| unit(h)).all(|(_, x)| x == u) {
                cur.header = cur.header.iter().map(|h| unit(h).map(|(b, _)| b).unwrap_or_else(|| h.clone())).collect();
                stripped = Some(u);
            }
        }
    }
    if line_width(&cur) > width {
        legend.extend(keyed(&mut cur, |t| line_width(t) > width));
    }
    for c in last {
        if line_width(&cur) <= width {
            break;
        }
        if let Some(i) = keep.iter().position(|&k| k == c) {
            keep.remove(i);
            dropped.push(t.header[c].clone());
            leave_out(&mut cur, i);
        }
    }
    (cur, dropped, stripped, legend)
}

/// Column `i` taken out of `t` (its cells, header and key).
fn leave_out(t: &mut Table, i: usize) {
    t.header.remove(i);
    for r in &mut t.rows {
        if i < r.len() {
            r.remove(i);
        }
    }
    if i < t.label_cols {
        t.label_cols -= 1;
    }
    let shift = |cols: &[usize]| cols.iter().filter(|&&c| c != i).map(|&c| if c > i { c - 1 } else { c }).collect::<Vec<_>>();
    t.optional = shift(&t.optional);
    t.wrap = shift(&t.wrap);
    t.keys = t.keys.iter().filter(|(c, _)| *c != i).map(|(c, k)| (if *c > i { c - 1 } else { *c }, k.clone())).collect();
}

/// The headers the table gives a key ([`Table::keys`]: a comparison's
/// systems, `#1`) shown as their keys, each spelled out in the returned legend.
fn header_keys(t: &mut Table) -> Vec<String> {
    let mut legend = Vec::new();
    for (c, key) in t.keys.clone() {
        if t.header.get(c).is_some_and(|h| h.chars().count() > KEY_FROM.max(key.chars().count())) {
            legend.push(format!("{key} = {}", t.header[c]));
            t.header[c] = key;
        }
    }
    legend
}

/// Names longer than this become keys in a table that does not fit.
const KEY_FROM: usize = 12;

/// Long names made short until `too_wide` is false, each key spelled out in
/// the returned legend (the headers with keys went first, [`header_keys`]):
/// widest label column first, every cell longer than [`KEY_FROM`] (a lab's phase names,
/// `guest:cpu:1,fork:1,io:1,net:1`) becomes the column's initial and a
/// number (`P1`), the same text the same key.
fn keyed(t: &mut Table, too_wide: impl Fn(&Table) -> bool) -> Vec<String> {
    let mut legend = Vec::new();
    let width = |t: &Table, c: usize| t.rows.iter().filter_map(|r| r.get(c)).map(|x| x.text.chars().count()).max().unwrap_or(0);
    let mut cols: Vec<usize> = (0..t.label_cols).collect();
    cols.sort_by_key(|&c| std::cmp::Reverse(width(t, c)));
    for c in cols {
        if !too_wide(t) {
            break;
        }
        let initial = t.header[c].chars().next().map(|x| x.to_ascii_uppercase()).unwrap_or('K');
        let mut keys: Vec<String> = Vec::new();
        for r in &mut t.rows {
            let Some(cell) = r.get_mut(c) else { continue };
            if cell.text.chars().count() <= KEY_FROM {
                continue;
            }
            let k = match keys.iter().position(|x| *x == cell.text) {
                Some(i) => i + 1,
                None => {
                    keys.push(cell.text.clone());
                    keys.len()
                }
            };
            cell.text = format!("{initial}{k}");
        }
        legend.extend(keys.iter().enumerate().map(|(i, text)| format!("{initial}{} = {text}", i + 1)));
    }
    legend
}

/// `s` filled to `width` columns, its first line after `first`, the others
/// after `rest`; one line after `first` without a width (`--wide`).
fn wrap(s: &str, first: &str, rest: &str, width: Option<usize>) -> String {
    match width {
        Some(w) => {
            let opts = textwrap::Options::new(w)
                .initial_indent(first)
                .subsequent_indent(rest)
                .break_words(true)
                // Never at a hyphen: dates and numbers like 1.8e-76 stay whole.
                .word_splitter(textwrap::WordSplitter::NoHyphenation);
            textwrap::fill(s, opts)
        }
        None => format!("{first}{s}"),
    }
}

/// Lay out report blocks as terminal text (see [`render`]); also the end
/// of a run ([`crate::report::blocks::end_of_run`]): captions as "title:"
/// after a blank line, preformatted lines as they are, a part laid out on
/// its own.
pub(crate) fn render_blocks(blocks: &[Block], colour: bool, width: Option<usize>) -> String {
    let style = |s: &str, tone: Tone| -> String {
        if !colour {
            return s.to_string();
        }
        let st = match tone {
            Tone::Plain => return s.to_string(),
            Tone::Good => console::Style::new().green(),
            Tone::Bad => console::Style::new().red(),
            Tone::Dim => console::Style::new().dim(),
        };
        st.force_styling(true).apply_to(s).to_string()
    };
    let bold = |s: &str| -> String {
        if colour {
            console::Style::new().bold().force_styling(true).apply_to(s).to_string()
        } else {
            s.to_string()
        }
    };
    let wrap = |s: &str, first: &str, rest: &str| wrap(s, first, rest, width);
    let mut out = String::new();
    for b in &crate::report::blocks::for_text(blocks) {
        match b {
            Block::Fields(_) | Block::Folded { .. } | Block::Marked { .. } | Block::Plot(_) => {}
            Block::Heading(level, s) => {
                if !out.is_empty() {
                    out.push('\n');
                }
                let line = if *level <= 2 { format!("== {s} ==") } else { format!("-- {s}") };
                out.push_str(&bold(&wrap(&line, "", "   ")));
                out.push('\n');
            }
            Block::Text(s) => {
                out.push_str(&wrap(s, "", ""));
                out.push('\n');
            }
            Block::Caption(s) => {
                out.push('\n');
                out.push_str(&bold(&format!("{s}:")));
                out.push('\n');
            }
            Block::Pre(s) => out.push_str(&pre_lines(s, width)),
            Block::Part(blocks) => out.push_str(&render_blocks(blocks, colour, width)),
            Block::List(items) => {
                for i in items {
                    out.push_str(&wrap(i, "  * ", "    "));
                    out.push('\n');
                }
            }
            Block::Table(t) => match width {
                Some(w) => {
                    let (t, dropped, unit, legend) = fit(t, w);
                    table_into(&mut out, &t, &style, &bold);
                    for l in &legend {
                        out.push_str(&wrap(l, "  ", "       "));
                        out.push('\n');
                    }
                    if !dropped.is_empty() {
                        let unit = unit.map(|u| format!("latencies in {u}; ")).unwrap_or_default();
                        let note = format!("({unit}left out to fit {w} columns: {}; --wide shows them)", dropped.join(", "));
                        out.push_str(&style(&wrap(&note, "", ""), Tone::Dim));
                        out.push('\n');
                    }
                }
                None => table_into(&mut out, t, &style, &bold),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bucket, Calibration, Host, Plan, Run};
    use crate::plan::Table as Preset;

    /// A run of one summary-only entry (percentiles unknown, as imported from
    /// the rt-tests IPC tools) in phases idle and cpu, plus a maxrate entry.
    fn run() -> Run {
        let mut rs = Vec::new();
        for (probe, phase) in [("sem", "idle"), ("sem", "cpu"), ("maxrate", "idle")] {
            let mut r = ProbeResult::new(probe, phase, None, None, None, Nanos(1_000_000));
            r.samples = 1000;
            r.min_ns = Nanos(2_000);
            r.max_ns = Nanos(9_000);
            r.mean_ns = 3_000.0;
            r.stddev_ns = 1_000.0;
            r.histogram = vec![Bucket { lo_ns: Nanos(2_000), hi_ns: Nanos(9_000), count: 1000 }];
            rs.push(r);
        }
        let plan = Plan::new(vec!["sem".into(), "maxrate".into()], vec!["idle".into(), "cpu".into()], Nanos(1), Nanos(1_000_000));
        let mut run = Run::native(vec![], Host::default(), plan, Calibration::new(Nanos(20), Nanos(20), "test"), "2026-01-01T00:00:00Z".into());
        run.results = rs;
        run
    }

    #[test]
    fn every_table_prints_an_unknown_percentile_as_a_dash() {
        let run = run();
        let end = crate::report::blocks::EndOfRun { unit: Unit::Us, deadline: None, preset: None };
        let summary = render_blocks(&crate::report::blocks::end_of_run(&run, &end), false, None);
        // p50, p99 and p99.9 columns: "-", never a made-up 0.
        for line in summary.lines().skip(1) {
            let cells: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(&cells[cells.len() - 4..cells.len() - 1], &["-", "-", "-"], "{summary}");
        }
        let maxrate = render_blocks(&crate::report::maxrate::blocks(&run, Unit::Us), false, None);
        let row = maxrate.lines().find(|l| l.starts_with("idle")).unwrap();
        assert_eq!(row.split_whitespace().rev().nth(1), Some("-"), "p99 of maxrate: {maxrate}");
        for preset in [Preset::Verdict, Preset::IdleVsLoad] {
            let text = render_blocks(&crate::report::presets::blocks(&run, preset, 5_000, Unit::Us, None), false, None);
            assert!(text.contains("p99.9 - us") || text.lines().any(|l| l.split_whitespace().nth(3) == Some("-")), "{preset:?}: {text}");
            assert!(!text.contains(" 0.0 "), "{preset:?} prints an unknown as 0: {text}");
        }
    }
}
