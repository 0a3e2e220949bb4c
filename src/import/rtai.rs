//! `rtai-latency`: the output of RTAI's latency test (testsuite kern/user
//! latency `display`).
//!
//! ```text
//! RTAI testsuite and calibration tool (all data in nanoseconds)
//! # period = 100000 (ns)
//! # average time = 1 (s)
//! RTH|    lat min|    ovl min|    lat avg|    lat max|    ovl max|   overruns
//! RTD|       -312|       -312|        804|       4567|       4567|          0
//! ```
//! One RTD line per averaging window (`average time`, 1 s by default):
//! that window's min/avg/max and the overall ("ovl") min/max so far, in ns.
//! Columns are found by their RTH names, so the LXRT variant (different
//! order) parses too. There is no histogram: the run is summary-only, with
//! the windows as its per-second series. Samples = windows × window / period.

use super::{clamp_negative, int, Line, ParseError, Parsed, Seconds, Series};
use crate::model::SignedStats;

fn number_after(l: &str, key: &str) -> Option<u64> {
    let rest = l.split_once(key)?.1;
    let rest = rest.trim_start().trim_start_matches('=').trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_lines(&mut super::Lines::new(text.as_bytes()))
}

pub fn parse_lines(lines: &mut dyn Iterator<Item = Line>) -> Result<Parsed, ParseError> {
    let mut period_ns = None;
    let mut window_s = None;
    let mut header: Option<Vec<String>> = None;
    let mut seconds: Option<Seconds> = None;
    let (mut min, mut max, mut avg_sum, mut windows, mut overruns) = (i64::MAX, i64::MIN, 0f64, 0u64, 0u64);
    let mut neg = 0i64;
    let mut ovl_max = i64::MIN;
    let mut ovl_min = i64::MAX;
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = raw.trim();
        if l.contains("period") && l.contains("(ns)") {
            period_ns = number_after(l, "period");
        } else if l.contains("average time") {
            window_s = number_after(l, "average time");
        } else if l.starts_with("RTH|") {
            header = Some(l.split('|').skip(1).map(|s| s.trim().to_string()).collect());
        } else if l.starts_with("RTD|") {
            let h = header.as_ref().ok_or_else(|| ParseError::at(n, "RTD| line before any RTH| header; expected the header first"))?;
            let c: Vec<&str> = l.split('|').skip(1).map(str::trim).collect();
            if c.len() != h.len() {
                return Err(ParseError::at(n, format!("{} columns; the RTH| header has {}", c.len(), h.len())));
            }
            let col = |name: &str| h.iter().position(|x| x == name);
            let get = |name: &str| -> Result<i64, ParseError> {
                let k = col(name).ok_or_else(|| ParseError::at(n, format!("the RTH| header has no \"{name}\" column")))?;
                int(c[k], n, name)
            };
            let (mi, av, ma) = (get("lat min")?, get("lat avg")?, get("lat max")?);
            if mi > ma {
                return Err(ParseError::at(n, format!("lat min {mi} is above lat max {ma}")));
            }
            if let Ok(o) = get("ovl max") {
                ovl_max = ovl_max.max(o);
            }
            if let Ok(o) = get("ovl min") {
                ovl_min = ovl_min.min(o);
            }
            if let Some(k) = col("overruns") {
                overruns = overruns.max(super::uint(c[k], n, "overruns")?);
            }
            min = min.min(mi);
            max = max.max(ma);
            avg_sum += av as f64;
            windows += 1;
            // Counts are 1 per window until the period is known (below).
            seconds
                .get_or_insert_with(|| Seconds::new(window_s.unwrap_or(1)))
                .push(1, clamp_negative(mi, &mut neg), av.max(0) as f64, clamp_negative(ma, &mut neg));
        }
    }
    let Some(seconds) = seconds else {
        return Err(ParseError::file("no RTD| lines; expected RTAI latency output (RTH| header and RTD| rows)"));
    };
    let period = period_ns.filter(|&p| p > 0).ok_or_else(|| {
        ParseError::file("no \"# period = N (ns)\" line; RTAI's latency prints it at start and the sample count needs it")
    })?;
    let window = window_s.unwrap_or(1).max(1);
    let per_window = window.saturating_mul(1_000_000_000) / period;
    let min = min.min(ovl_min);
    let max = max.max(ovl_max);
    let mean = avg_sum / windows as f64;
    let (mut per_second, width) = seconds.finish();
    per_second.iter_mut().for_each(|s| s.count = s.count.saturating_mul(per_window));
    let mut p = Parsed { tool: "rtai latency".into(), ..Parsed::default() };
    let samples = per_window.saturating_mul(windows);
    if samples == 0 {
        return Err(ParseError::file(format!("period {period} ns is longer than the {window} s window: no samples")));
    }
    p.series.push(Series {
        probe: "timer".into(),
        interval_ns: period,
        samples,
        overruns,
        min_ns: clamp_negative(min, &mut neg),
        max_ns: clamp_negative(max, &mut neg),
        mean_ns: Some(mean.max(0.0)),
        per_second,
        per_second_width_s: width,
        signed: (min < 0 || mean < 0.0).then_some(SignedStats { samples, min_ns: min, max_ns: max, mean_ns: mean, clamped: true }),
        ..Series::default()
    });
    p.duration_ns = Some(windows.saturating_mul(window).saturating_mul(1_000_000_000));
    p.per_window_note(window, per_window);
    p.fidelity.push("summary only: RTAI's latency prints min/avg/max per window; percentiles unknown; histogram is one bucket [min, max]; stddev unknown (0)".into());
    if neg < 0 {
        p.fidelity.push(format!(
            "negative latencies (early wake-ups, down to {neg} ns): the signed min, mean and max are in `signed`; min_ns/mean_ns/max_ns and the per-second series clamp them to 0"
        ));
    }
    Ok(p)
}

impl Parsed {
    fn per_window_note(&mut self, window: u64, per_window: u64) {
        self.fidelity.push(format!(
            "sample count derived: {per_window} samples per {window} s window (window / period), one per_second entry per window"
        ));
    }
}
