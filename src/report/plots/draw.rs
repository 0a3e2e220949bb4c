//! The drawing kit every plot shares: the plot and text sizes, an SVG
//! drawing area with the legend in a column of its own, how a series looks
//! (line, dashed, markers), the colours, the deadline line, and the
//! exceedance curve's points thinned to what a plot can show.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::percentiles::exceedance;
use crate::model::Bucket;

/// Plot size in SVG units; the HTML report shows plots at the page's full
/// width (about 1:1 at 1280 px), so text sizes below are about pixels.
pub(super) const W: u32 = 1100;
pub(super) const H: u32 = 460;
/// The legend's column, right of the plotting area (never over the data).
pub(super) const LEGEND_W: u32 = 240;
/// Tick labels and legend text.
pub(super) const TEXT: u32 = 16;
/// Axis descriptions.
pub(super) const DESC: u32 = 17;
/// Plot titles.
pub(super) const CAPTION: u32 = 20;
/// Exceedance curves keep at most this many points (plots, not data).
pub(super) const MAX_POINTS: usize = 1500;

pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

pub(super) fn svg(draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult) -> String {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (W, H)).into_drawing_area();
        let ok = root.fill(&WHITE).is_ok() && draw(&root).is_ok() && root.present().is_ok();
        if !ok {
            let _ = root.draw(&Text::new("plot could not be drawn", (20, 20), ("sans-serif", TEXT).into_font()));
        }
    }
    s
}

/// How a series looks, for its line and its legend entry.
#[derive(Clone)]
pub(super) struct Look {
    pub(super) label: String,
    pub(super) colour: RGBAColor,
    pub(super) width: u32,
    /// Dashed line (e.g. the per-second minimum).
    pub(super) dashed: bool,
    /// Drawn as separate hollow markers, not a line.
    pub(super) marker: bool,
}

impl Look {
    pub(super) fn line(label: impl Into<String>, colour: RGBColor, width: u32) -> Look {
        Look { label: label.into(), colour: colour.to_rgba(), width, dashed: false, marker: false }
    }
    pub(super) fn style(&self) -> ShapeStyle {
        self.colour.stroke_width(self.width)
    }
}

/// Characters of legend text one line of the legend's column holds (16-unit
/// sans-serif, about 8.5 units a character, after the 42-unit sample).
pub(super) const LEGEND_CHARS: usize = 22;

/// A legend label in lines of at most [`LEGEND_CHARS`] characters, broken
/// after a space, `-`, `,`, `/` or `:` where one is near the end of the
/// line, else where the line is full (a lab's result names —
/// `kernel-lab-stock-arm64-qemu-virt 6` — are longer than the column).
pub(super) fn legend_lines(label: &str) -> Vec<String> {
    let chars: Vec<char> = label.chars().collect();
    let mut lines = Vec::new();
    let mut start = 0;
    while chars.len() - start > LEGEND_CHARS {
        let end = start + LEGEND_CHARS;
        let cut = (start + LEGEND_CHARS / 2..end).rev().find(|&i| matches!(chars[i - 1], ' ' | '-' | ',' | '/' | ':')).unwrap_or(end);
        lines.push(chars[start..cut].iter().collect::<String>().trim_end().to_string());
        start = cut;
        while start < chars.len() && chars[start] == ' ' {
            start += 1;
        }
    }
    lines.push(chars[start..].iter().collect());
    lines
}

/// A plot with its legend in a column of its own at the right: the chart is
/// drawn by `draw` into the left part, the legend entries `looks` (line or
/// marker sample, then the label, over more lines when it is longer than
/// the column holds) into the right part.
pub(super) fn svg_with_legend(looks: &[Look], draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult) -> String {
    svg(|root| {
        let (plot, side) = root.split_horizontally(W - LEGEND_W);
        draw(&plot)?;
        let lines: Vec<Vec<String>> = looks.iter().map(|l| legend_lines(&l.label)).collect();
        let total: usize = lines.iter().map(Vec::len).sum();
        // Lines 18 units apart, entries 6 more, fewer when many would not fit.
        let line_step = if total == 0 { 18 } else { ((H as i32 - 70) / (total as i32 + looks.len() as i32 / 3)).clamp(12, 18) };
        let mut y = 56;
        for (l, text) in looks.iter().zip(&lines) {
            if l.marker {
                side.draw(&Circle::new((20, y), 4, l.colour.stroke_width(2)))?;
            } else if l.dashed {
                for x in [4, 16, 28] {
                    side.draw(&PathElement::new(vec![(x, y), (x + 7, y)], l.colour.stroke_width(l.width.max(2))))?;
                }
            } else {
                side.draw(&PathElement::new(vec![(4, y), (35, y)], l.colour.stroke_width(l.width.max(2))))?;
            }
            for (k, t) in text.iter().enumerate() {
                side.draw(&Text::new(t.clone(), (42, y + k as i32 * line_step - TEXT as i32 / 2 - 1), ("sans-serif", TEXT).into_font()))?;
            }
            y += text.len() as i32 * line_step + line_step / 3;
        }
        Ok(())
    })
}

/// The chart builder every plot starts from: title, margins, label areas.
pub(super) fn builder<'a, 'b>(area: &'a DrawingArea<SVGBackend<'b>, Shift>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", CAPTION)).margin(12).x_label_area_size(48).y_label_area_size(72);
    b
}

/// The draw series call of a look: a line, a dashed line or markers.
pub(super) fn draw_look<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<DB, Cartesian2d<X, Y>>,
    look: &Look,
    pts: Vec<(f64, f64)>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let st = look.style();
    if look.marker {
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, st)))?;
    } else if look.dashed {
        chart.draw_series(DashedLineSeries::new(pts, 6, 4, st))?;
    } else {
        chart.draw_series(LineSeries::new(pts, st))?;
    }
    Ok(())
}

pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

pub(super) fn us(ns: f64) -> f64 {
    ns / 1000.0
}

pub(super) fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// The deadline's look: a black dashed line, named in the legend.
pub(super) fn deadline_look(dl_us: f64) -> Look {
    let v = if dl_us >= 10.0 { format!("{dl_us:.0}") } else { format!("{dl_us:.1}") };
    Look { dashed: true, ..Look::line(format!("deadline {v} µs"), RGBColor(0, 0, 0), 2) }
}

/// Exceedance points with y > 0, thinned to [`MAX_POINTS`].
pub(super) fn exceedance_points(hist: &[Bucket]) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = exceedance(hist).into_iter().filter(|p| p.1 > 0.0).map(|(x, y)| (us(x.0 as f64), y)).collect();
    thin(pts)
}

pub(super) fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    let step = pts.len().div_ceil(MAX_POINTS);
    let last = *pts.last().unwrap();
    let mut out: Vec<(f64, f64)> = pts.into_iter().step_by(step).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_legend_label_is_broken_over_lines_that_fit_the_column() {
        let label = "kernel-lab-stock-arm64-qemu-virt 6";
        let lines = legend_lines(label);
        assert_eq!(lines, vec!["kernel-lab-stock-", "arm64-qemu-virt 6"], "broken after a '-'");
        assert_eq!(legend_lines("p99 (merged)"), vec!["p99 (merged)"]);
        // A name with nowhere to break is cut where the line is full.
        let long = "x".repeat(50);
        let cut = legend_lines(&long);
        assert_eq!(cut.iter().map(|l| l.chars().count()).collect::<Vec<_>>(), vec![22, 22, 6]);
        assert_eq!(cut.concat(), long, "nothing lost");
        // Every legend text of a plot fits the column.
        let svg = svg_with_legend(&[Look::line(label, colour(0), 2), Look::line(long.clone(), colour(1), 2)], |_| Ok(()));
        let texts: Vec<&str> = svg.split("<text").skip(1).filter_map(|t| t.split_once('>').map(|(_, r)| r.split('<').next().unwrap_or("").trim())).collect();
        assert_eq!(texts.len(), 5, "{texts:?}");
        assert!(texts.iter().all(|t| t.chars().count() <= LEGEND_CHARS), "{texts:?}");
        assert!(texts.contains(&"arm64-qemu-virt 6"), "{texts:?}");
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("timer[250us]/idle"), "timer-250us-idle");
        assert_eq!(slug("a b/c"), "a-b-c");
    }

    #[test]
    fn thinning_keeps_the_last_point() {
        let pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0 / (i + 1) as f64)).collect();
        let t = thin(pts);
        assert!(t.len() <= MAX_POINTS + 1);
        assert_eq!(t.last().unwrap().0, 9999.0);
    }
}
