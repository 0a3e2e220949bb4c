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
use crate::model::{Finding, Severity};
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

/// Terminal: the header, the ranked table (material rows first) laid out
/// by the report's width rule (`width`: columns, `None` for `--wide`), the
/// notes, and what the experiment means ([`conclusion`]) drawn from the
/// analysis and `doctor`: the findings stored with the runs (judged for the
/// measured CPUs).
pub(crate) fn term(a: &Analysis, doctor: &[Finding], width: Option<usize>) -> String {
    use crate::report::blocks::{Block, Cell, Table};
    use crate::report::term::{paragraph, render_blocks};
    let mut s = String::new();
    let para = |s: &mut String, text: &str, first: &str, rest: &str| {
        s.push_str(&paragraph(&terminal_safe(text), first, rest, width));
        s.push('\n');
    };
    for h in header(a) {
        para(&mut s, &h, "", "  ");
    }
    s.push('\n');
    para(&mut s, &format!("what matters here (material: the 99 % interval excludes 0 and the effect is at least ×{MATERIAL_RATIO} either way):"), "", "  ");
    let rows: Vec<Vec<Cell>> = a.effects.iter().map(|r| cells(r).into_iter().map(Cell::plain).collect()).collect();
    let table = Table::new(HEAD.map(String::from).to_vec(), 3, rows).optional(&["metric"]);
    s.push_str(&terminal_safe(&render_blocks(&[Block::Table(table)], false, width)));
    if a.effects.is_empty() {
        para(&mut s, "(no effect could be estimated: too few complete rounds)", "  ", "   ");
    }
    for n in &a.notes {
        para(&mut s, n, "note: ", "      ");
    }
    let material = a.effects.iter().filter(|r| r.estimate.verdict == Verdict::Material).count();
    para(
        &mut s,
        &format!(
            "{material} of {} effects material; runs are tagged {} in the history (`rtscope history --tag {}`)",
            a.effects.len(),
            a.experiment,
            a.experiment
        ),
        "",
        "  ",
    );
    let c = conclusion_of(a, doctor);
    s.push('\n');
    para(&mut s, &c.summary, "what this means: ", "  ");
    for item in &c.items {
        para(&mut s, item, "  * ", "    ");
    }
    s
}

/// What an experiment means, in words: a summary sentence and its items.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Conclusion {
    pub(crate) summary: String,
    /// One per material factor (the level to choose), or, when none is
    /// material, one per doctor finding that remains (with its fix).
    pub(crate) items: Vec<String>,
}

/// The level of each material factor to choose, or, with no material
/// effect, that none of the varied knobs matters at this length, how large
/// an effect the intervals could still hide (the widest 95 % interval's
/// half-width), and doctor's findings (bad and warn, worst first; not those
/// of a varied knob) as the settings left to try — each with the finding's
/// own fix.
pub(crate) fn conclusion(effects: &[Row], varied: &[&str], doctor: &[Finding]) -> Conclusion {
    let mains: Vec<&Row> = effects.iter().filter(|r| !r.interaction).collect();
    let material: Vec<&Row> = mains.iter().copied().filter(|r| r.estimate.verdict == Verdict::Material).collect();
    let mut items = Vec::new();
    let summary = if !material.is_empty() {
        // Every metric is a latency or a miss ratio: the lower side is the one to choose.
        let mut factors: Vec<&str> = material.iter().map(|r| r.factor.as_str()).collect();
        factors.dedup();
        factors.sort_unstable();
        factors.dedup();
        for f in &factors {
            let rows: Vec<&&Row> = material.iter().filter(|r| r.factor == *f).collect();
            let better = |r: &Row| if r.estimate.effect < 0.0 { r.level.clone() } else { r.baseline.clone() };
            let mut choices: Vec<String> = rows.iter().map(|r| better(r)).collect();
            choices.sort();
            choices.dedup();
            let evidence = rows
                .iter()
                .map(|r| {
                    let (effect, interval) = fmt_estimate(&r.estimate, r.scale);
                    format!("{} of {}: {effect} {interval} for {} vs {}", r.metric.name(), r.entry, r.level, r.baseline)
                })
                .collect::<Vec<_>>()
                .join("; ");
            items.push(match choices.as_slice() {
                [one] => format!("{f}: choose {f}={one} ({evidence})"),
                _ => format!("{f}: it matters, but no level is the better one everywhere ({evidence})"),
            });
        }
        let quiet: Vec<&str> = varied.iter().copied().filter(|v| !factors.contains(v)).collect();
        let named = match factors.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => factors.join(""),
        };
        format!(
            "{named} matter{} here{} — the level to choose for each:",
            if factors.len() == 1 { "s" } else { "" },
            if quiet.is_empty() { String::new() } else { format!(" ({} showed no material effect)", quiet.join(", ")) }
        )
    } else {
        let widest = mains
            .iter()
            .filter(|r| r.scale == Scale::Log && r.estimate.hi.is_finite() && r.estimate.lo.is_finite())
            .map(|r| (r, (r.estimate.hi - r.estimate.lo) / 2.0))
            .max_by(|x, y| x.1.total_cmp(&y.1));
        let hide = match widest {
            Some((r, h)) => format!(
                "; the 95 % intervals are up to ±{:.0} % wide ({} of {}), so an effect that large could still hide — longer runs (-D) or more rounds narrow them",
                h * 100.0,
                r.metric.name(),
                r.entry
            ),
            None => String::new(),
        };
        let knobs: Vec<&str> = varied.iter().filter_map(|v| super::knobs::find(v).ok().and_then(|k| k.doctor())).collect();
        let mut left: Vec<&Finding> = doctor.iter().filter(|f| f.severity >= Severity::Warn && !knobs.contains(&f.id.as_str())).collect();
        left.sort_by_key(|f| std::cmp::Reverse(f.severity));
        for f in &left {
            let fix = f.fix.as_deref().map(|x| format!(" — fix: {x}")).unwrap_or_default();
            items.push(format!("[{}] {}: {}{fix}", f.severity.as_str(), f.id, f.title));
        }
        let rest = if effects.is_empty() {
            String::new()
        } else if left.is_empty() {
            ". doctor finds nothing else to change on the measured CPUs".to_string()
        } else {
            ". The settings left to try are doctor's findings for the measured CPUs".to_string()
        };
        if effects.is_empty() {
            "no effect could be estimated yet: run more rounds".to_string()
        } else {
            format!("none of the varied settings ({}) matters at this run length{hide}{rest}", varied.join(", "))
        }
    };
    Conclusion { summary, items }
}

fn md_esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The conclusion of `a` (see [`conclusion`]), from doctor's findings
/// stored with its runs.
fn conclusion_of(a: &Analysis, doctor: &[Finding]) -> Conclusion {
    let varied: Vec<&str> = a.factors.iter().map(|f| f.name.as_str()).collect();
    conclusion(&a.effects, &varied, doctor)
}

/// Markdown: the header as a list, the table, what it means.
pub(crate) fn markdown(a: &Analysis, doctor: &[Finding]) -> String {
    let mut s = format!("# Factor experiment {}\n\n", md_esc(&a.experiment));
    for h in header(a) {
        let _ = writeln!(s, "- {}", md_esc(&h));
    }
    let _ = writeln!(s, "\n## What matters here\n\n| {} |\n|{}|", HEAD.join(" | "), HEAD.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in &a.effects {
        let c = cells(r).map(|x| md_esc(&x));
        let c: Vec<String> =
            c.iter().enumerate().map(|(i, x)| if i == 5 && r.estimate.verdict == Verdict::Material { format!("**{x}**") } else { x.clone() }).collect();
        let _ = writeln!(s, "| {} |", c.join(" | "));
    }
    for n in &a.notes {
        let _ = writeln!(s, "\n> note: {}", md_esc(n));
    }
    s.push_str("\nMaterial: the 99 % bootstrap interval over rounds excludes 0 and the effect is at least ×1.2 either way (docs/factors.md).\n");
    let c = conclusion_of(a, doctor);
    let _ = writeln!(s, "\n## What this means\n\n{}\n", md_esc(&c.summary));
    for item in &c.items {
        let _ = writeln!(s, "- {}", md_esc(item));
    }
    s
}

/// JSON (schema: docs/factors.md): the analysis and its `conclusion`.
pub(crate) fn json(a: &Analysis, doctor: &[Finding]) -> anyhow::Result<String> {
    let mut v = serde_json::to_value(a)?;
    let c = conclusion_of(a, doctor);
    if let Some(o) = v.as_object_mut() {
        o.insert("conclusion".into(), serde_json::json!({"summary": c.summary, "items": c.items}));
    }
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
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
            x(r.estimate.lo),
            x(r.estimate.hi)
        );
        let (effect, interval) = fmt_estimate(&r.estimate, r.scale);
        let _ = write!(s, "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"><title>{effect} {interval}</title></circle>", x(r.estimate.effect));
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">effect vs the baseline level (log axis); grey band: too small to be material</text>",
        (left + w - right) / 2.0,
        h - 8.0
    );
    s.push_str("</svg>");
    s
}

/// HTML: one self-contained page (as `rtscope report`'s): header, the
/// effect plot of the latency effects, the table, what it means.
pub(crate) fn html(a: &Analysis, doctor: &[Finding]) -> String {
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
            let class = if i == 5 && r.estimate.verdict == Verdict::Material {
                " class=\"material\""
            } else if i == 3 || i == 4 {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(s, "<td{class}>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for n in &a.notes {
        let _ = write!(s, "<p>note: {}</p>", esc(n));
    }
    s.push_str("<p>Material: the 99 % bootstrap interval over rounds excludes 0 and the effect is at least ×1.2 either way (docs/factors.md).</p>");
    let c = conclusion_of(a, doctor);
    let _ = write!(s, "<h2>What this means</h2><p class=\"conclusion\">{}</p><ul>", esc(&c.summary));
    for item in &c.items {
        let _ = write!(s, "<li>{}</li>", esc(item));
    }
    s.push_str("</ul></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factors::effects::Estimate;
    use crate::factors::Metric;

    fn row(factor: &str, level: &str, baseline: &str, metric: Metric, effect: f64, (lo, hi): (f64, f64), verdict: Verdict) -> Row {
        Row {
            entry: "timer/idle".into(),
            metric,
            factor: factor.into(),
            level: level.into(),
            baseline: baseline.into(),
            baseline_value: 50_000.0,
            level_value: 50_000.0 * (1.0 + effect),
            scale: Scale::Log,
            estimate: Estimate { effect, lo, hi, test_lo: lo - 0.05, test_hi: hi + 0.05, rounds: 5, verdict },
            interaction: false,
        }
    }

    fn host_findings() -> Vec<Finding> {
        vec![
            Finding::new("preempt.model", Severity::Bad, "Preemption model is none").fix("Boot a PREEMPT_RT kernel"),
            Finding::new("vm.hypervisor", Severity::Warn, "Running in a virtual machine").fix("Measure on bare metal"),
            Finding::new("isolation.isolcpus", Severity::Warn, "Measured CPU 0 is not isolated").fix("Boot with isolcpus=0"),
            Finding::new("console.loglevel", Severity::Warn, "Console log level 7").fix("sysctl -w kernel.printk=4"),
            Finding::new("mm.ksm", Severity::Ok, "KSM is off"),
            Finding::new("cpufreq.boost", Severity::Info, "boost on").fix("turn it off"),
        ]
    }

    /// Nothing material: the varied knobs do not matter at this length, the
    /// widest interval's half-width is said, and doctor's bad and warn
    /// findings remain (worst first, each with its own fix) — but not the
    /// finding of a knob the experiment varied (printk's console.loglevel).
    #[test]
    fn nothing_material_names_what_doctor_leaves_to_try() {
        let effects = vec![
            row("printk", "1", "7", Metric::Max, 0.10, (-0.30, 0.46), Verdict::NoneSeen),
            row("printk", "1", "7", Metric::P99, 0.02, (-0.05, 0.09), Verdict::NoneSeen),
        ];
        let c = conclusion(&effects, &["printk"], &host_findings());
        assert!(c.summary.starts_with("none of the varied settings (printk) matters at this run length"), "{c:?}");
        assert!(c.summary.contains("±38 %") && c.summary.contains("max of timer/idle"), "the widest half-width, (0.46 + 0.30) / 2: {c:?}");
        assert_eq!(c.items.len(), 3, "{c:?}");
        assert_eq!(c.items[0], "[bad] preempt.model: Preemption model is none — fix: Boot a PREEMPT_RT kernel");
        assert!(c.items[1].starts_with("[warn] vm.hypervisor") && c.items[1].ends_with("fix: Measure on bare metal"), "{c:?}");
        assert!(c.items[2].contains("isolation.isolcpus") && c.items[2].contains("isolcpus=0"), "{c:?}");
        assert!(!c.items.iter().any(|i| i.contains("console.loglevel")), "printk was varied: {c:?}");
    }

    /// A material effect names the level to choose: the lower side — the
    /// level where it lowers the metric, else the baseline.
    #[test]
    fn a_material_effect_names_the_level_to_choose() {
        let effects = vec![
            row("dma-latency", "released", "held", Metric::Max, 1.5, (0.9, 2.2), Verdict::Material),
            row("dma-latency", "released", "held", Metric::P999, 0.8, (0.5, 1.1), Verdict::Material),
            row("thp", "always", "never", Metric::Max, -0.45, (-0.6, -0.3), Verdict::Material),
            row("printk", "1", "7", Metric::Max, 0.01, (-0.1, 0.1), Verdict::NoneSeen),
        ];
        let c = conclusion(&effects, &["dma-latency", "thp", "printk"], &host_findings());
        assert_eq!(c.summary, "dma-latency and thp matter here (printk showed no material effect) — the level to choose for each:");
        assert!(c.items[0].starts_with("dma-latency: choose dma-latency=held (max of timer/idle: "), "{c:?}");
        assert!(c.items[0].contains("for released vs held"), "{c:?}");
        assert!(c.items[1].starts_with("thp: choose thp=always ("), "{c:?}");
        assert_eq!(c.items.len(), 2, "doctor's list is for when nothing matters: {c:?}");
    }
}
