//! The factor experiment's report, "what matters here": one ranked table of
//! effects — terminal, Markdown, HTML with an effect plot, JSON. Pure
//! functions of an [`Analysis`].
//!
//! The effect plot (HTML) is a forest plot: one line per effect, the point
//! at the estimate, the whiskers at the 95 % interval, a vertical line at
//! "no effect" and a shaded band where an effect is too small to be
//! material (±20 %, on a log axis so −50 % and +100 % are equally far).
//! An effect is material when its 99 % interval clears 0 and its point
//! lies outside the band.

use std::fmt::Write as _;

use super::effects::{Scale, Verdict, MATERIAL_RATIO};
use super::{fmt_estimate, Analysis, Row};
use crate::report::escape::terminal_safe;

fn header(a: &Analysis) -> Vec<String> {
    let mut v = vec![format!(
        "experiment {}: {} cells ({}), {} rounds, {} runs on {}",
        a.experiment,
        a.runs / a.rounds.max(1),
        a.design.words(),
        a.rounds,
        a.runs,
        a.host
    )];
    for f in &a.factors {
        v.push(format!("factor {}: {} (baseline {}) — {}", f.name, f.levels.join(", "), f.levels[0], f.what));
    }
    v
}

fn cells(r: &Row) -> [String; 6] {
    let (effect, interval) = fmt_estimate(&r.estimate, r.scale);
    [
        r.entry.clone(),
        r.metric.name().to_string(),
        if r.interaction { r.level.clone() } else { format!("{}={} vs {}", r.factor, r.level, r.baseline) },
        effect,
        interval,
        r.estimate.verdict.word().to_string(),
    ]
}

const HEAD: [&str; 6] = ["entry", "metric", "factor", "effect", "95 % interval", "verdict"];

/// Terminal: aligned columns, material rows first.
pub(crate) fn term(a: &Analysis) -> String {
    let mut s = String::new();
    for h in header(a) {
        let _ = writeln!(s, "{}", terminal_safe(&h));
    }
    let _ = writeln!(s, "\nwhat matters here (material: the 99 % interval excludes 0 and the effect is at least ×{MATERIAL_RATIO} either way):");
    let rows: Vec<[String; 6]> = a.effects.iter().map(cells).collect();
    let mut w = HEAD.map(|h| h.chars().count());
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |c: &[String]| {
        let mut l = String::from("  ");
        for (i, x) in c.iter().enumerate() {
            let pad = w[i] - x.chars().count();
            if i == 3 {
                l.push_str(&" ".repeat(pad));
                l.push_str(x);
            } else {
                l.push_str(x);
                l.push_str(&" ".repeat(pad));
            }
            l.push_str("  ");
        }
        l.trim_end().to_string()
    };
    let _ = writeln!(s, "{}", line(&HEAD.map(String::from)));
    for r in &rows {
        let _ = writeln!(s, "{}", terminal_safe(&line(r)));
    }
    if a.effects.is_empty() {
        let _ = writeln!(s, "  (no effect could be estimated: too few complete rounds)");
    }
    for n in &a.notes {
        let _ = writeln!(s, "note: {}", terminal_safe(n));
    }
    let material = a.effects.iter().filter(|r| r.estimate.verdict == Verdict::Material).count();
    let _ = writeln!(
        s,
        "{material} of {} effects material; runs are tagged {} in the history (`rtscope history --tag {}`)",
        a.effects.len(),
        a.experiment,
        a.experiment
    );
    s
}

fn md_esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Markdown: the header as a list, the table.
pub(crate) fn markdown(a: &Analysis) -> String {
    let mut s = format!("# Factor experiment {}\n\n", md_esc(&a.experiment));
    for h in header(a) {
        let _ = writeln!(s, "- {}", md_esc(&h));
    }
    let _ = writeln!(s, "\n## What matters here\n\n| {} |\n|{}|", HEAD.join(" | "), HEAD.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in &a.effects {
        let c = cells(r).map(|x| md_esc(&x));
        let c: Vec<String> = c.iter().enumerate().map(|(i, x)| if i == 5 && r.estimate.verdict == Verdict::Material { format!("**{x}**") } else { x.clone() }).collect();
        let _ = writeln!(s, "| {} |", c.join(" | "));
    }
    for n in &a.notes {
        let _ = writeln!(s, "\n> note: {}", md_esc(n));
    }
    s.push_str("\nMaterial: the 99 % bootstrap interval over rounds excludes 0 and the effect is at least ×1.2 either way (docs/factors.md).\n");
    s
}

/// JSON (schema: docs/factors.md).
pub(crate) fn json(a: &Analysis) -> anyhow::Result<String> {
    let mut v = serde_json::to_value(a)?;
    // NaN means "not applicable" (an interaction's two sides): null.
    if let Some(rows) = v.get_mut("effects").and_then(|e| e.as_array_mut()) {
        for r in rows {
            for k in ["baseline_value", "level_value"] {
                if r.get(k).is_some_and(|x| x.is_null()) {
                    r.as_object_mut().map(|o| o.remove(k));
                }
            }
        }
    }
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// The forest plot of the log-scale effects (latencies), as inline SVG.
fn effect_plot(rows: &[&Row]) -> String {
    let (w, left, right, row_h, top) = (900.0, 360.0, 30.0, 22.0, 30.0);
    let h = top + row_h * rows.len() as f64 + 30.0;
    let ln = |x: f64| (1.0 + x).max(1e-6).ln();
    let mut lim = MATERIAL_RATIO.ln() * 1.5;
    for r in rows {
        lim = lim.max(ln(r.estimate.lo).abs()).max(ln(r.estimate.hi).abs());
    }
    let lim = lim.min(5.0);
    let x = |v: f64| left + (ln(v).clamp(-lim, lim) + lim) / (2.0 * lim) * (w - left - right);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">");
    let band = (x(1.0 / MATERIAL_RATIO - 1.0), x(MATERIAL_RATIO - 1.0));
    let _ = write!(s, "<rect x=\"{:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#eee\"/>", band.0, band.1 - band.0, row_h * rows.len() as f64);
    let _ = write!(s, "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2:.1}\" stroke=\"#888\"/>", x(0.0), top - 5.0, top + row_h * rows.len() as f64);
    for t in [-0.99, -0.9, -0.5, -0.2, 0.0, 0.25, 1.0, 4.0, 9.0, 99.0] {
        if ln(t).abs() <= lim {
            let _ = write!(s, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>", x(t), top - 10.0, super::fmt_effect(t, Scale::Log));
        }
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * (i as f64 + 0.5);
        let colour = match r.estimate.verdict {
            Verdict::Material => "#c0392b",
            Verdict::Small => "#555",
            Verdict::NoneSeen => "#999",
        };
        let label = format!("{} {} {}", r.entry, r.metric.name(), if r.interaction { r.level.clone() } else { format!("{}={}", r.factor, r.level) });
        let _ = write!(s, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", left - 8.0, y + 4.0, crate::report::html::esc(&label));
        let _ = write!(s, "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>", x(r.estimate.lo), x(r.estimate.hi));
        let (effect, interval) = fmt_estimate(&r.estimate, r.scale);
        let _ = write!(s, "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"><title>{effect} {interval}</title></circle>", x(r.estimate.effect));
    }
    let _ = write!(s, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">effect vs the baseline level (log axis); grey band: too small to be material</text>", (left + w - right) / 2.0, h - 8.0);
    s.push_str("</svg>");
    s
}

/// HTML: one self-contained page (as `rtscope report`'s): header, the
/// effect plot of the latency effects, the table.
pub(crate) fn html(a: &Analysis) -> String {
    use crate::report::html::esc;
    let mut s = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>");
    let _ = write!(s, "rtscope factors {}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px}}td.n{{text-align:right}}.material{{color:#c0392b;font-weight:bold}}</style></head><body>", esc(&a.experiment));
    let _ = write!(s, "<h1>Factor experiment {}</h1><ul>", esc(&a.experiment));
    for h in header(a) {
        let _ = write!(s, "<li>{}</li>", esc(&h));
    }
    s.push_str("</ul><h2>What matters here</h2>");
    let logs: Vec<&Row> = a.effects.iter().filter(|r| r.scale == Scale::Log).collect();
    if !logs.is_empty() {
        let _ = write!(s, "<figure class=\"plot\" data-kind=\"effects\">{}</figure>", effect_plot(&logs));
    }
    s.push_str("<table><thead><tr>");
    for h in HEAD {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &a.effects {
        s.push_str("<tr>");
        for (i, c) in cells(r).iter().enumerate() {
            let class = if i == 5 && r.estimate.verdict == Verdict::Material { " class=\"material\"" } else if i == 3 || i == 4 { " class=\"n\"" } else { "" };
            let _ = write!(s, "<td{class}>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for n in &a.notes {
        let _ = write!(s, "<p>note: {}</p>", esc(n));
    }
    s.push_str("<p>Material: the 99 % bootstrap interval over rounds excludes 0 and the effect is at least ×1.2 either way (docs/factors.md).</p></body></html>\n");
    s
}
