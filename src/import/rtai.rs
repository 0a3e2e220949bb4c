//! `rtai-latency`: the outputs of RTAI's testsuite (kern/user): the
//! `latency` test's `display`, the `preempt` test's `display`, and the
//! `switches` test.
//!
//! ```text
//! RTAI Testsuite - USER latency (all data in nanoseconds)
//! RTH|    lat min|    ovl min|    lat avg|    lat max|    ovl max|   overruns
//! RTD|       -312|       -312|        804|       4567|       4567|          0
//!
//! RTAI Testsuite - UP preempt (all data in nanoseconds)
//! RTH|     lat min|     lat avg|     lat max|    jit fast|    jit slow
//! RTD|        -981|         212|        4310|        5291|        8017
//!
//! FOR 10 TASKS: TIME 669 (ms), SUSP/RES SWITCHES 40000, SWITCH TIME 16726 (ns)
//! ```
//! One RTD line per averaging window (`average time`, 1 s by default):
//! that window's min/avg/max and, for the latency test, the overall ("ovl")
//! min/max so far, in ns. Columns are found by their RTH names, so the LXRT
//! variant (different order) parses too. There is no histogram: each entry
//! is summary-only, with the windows as its per-second series.
//!
//! The sample count of a latency entry is windows × window / period. The
//! period is printed (`# period = N (ns)`) by the measuring process, not by
//! `display`, whose output is what users save: it comes from the file when
//! the file has it, else from `rtscope import --period`; with neither, the
//! entry is imported with its count unknown (`samples_unknown`: one sample
//! per window, a lower bound) and a fidelity note says so.
//!
//! Entries: the latency test → `timer`; the preempt test's fast task
//! latency → `timer` variant `preempt`, its `jit fast` / `jit slow` columns
//! → `jitter` variants `fast` / `slow` (one sample per window: the window's
//! figure); each kind of switch of the switches test → `switch`, variant
//! named after the kind (`susp-res`, `sem-signal-wait`, `rpc-rcv-ret`), with
//! the printed switch count as samples and the mean switch time as min,
//! mean and max (the test prints no min or max).

use super::format::{Format, Spec, Systems};
use super::{clamp_negative, int, uint, Line, ParseError, ParseOptions, Parsed, Seconds, Series};
use crate::model::SignedStats;

/// RTAI's latency test output.
pub(crate) const FORMAT: Format = Format(&Spec {
    takes_period: true,
    ..Spec::text(
        "rtai-latency",
        "RTAI's latency test output (RTH|/RTD| lines)",
        |s| {
            s.lines().any(|l| (l.starts_with("RTH|") && (l.contains("ovl m") || l.contains("jit fast"))) || is_switch_line(&l))
                || s.text().contains("RTAI Testsuite")
                || s.text().contains("RTAI testsuite")
        },
        |input, src| parse_lines(input, src.opts).map(Systems::one),
    )
});

fn number_after(l: &str, key: &str) -> Option<u64> {
    let rest = l.split_once(key)?.1;
    let rest = rest.trim_start().trim_start_matches('=').trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// True for a line of the switches test (`... SWITCH TIME 16726 (ns)`).
pub(crate) fn is_switch_line(l: &str) -> bool {
    l.contains("SWITCH TIME") && l.contains("(ns)")
}

/// Window figures of one column group (min/avg/max per window).
struct Windows {
    min: i64,
    max: i64,
    avg_sum: f64,
    n: u64,
    seconds: Option<Seconds>,
}

impl Default for Windows {
    fn default() -> Windows {
        Windows::new()
    }
}

impl Windows {
    fn new() -> Windows {
        Windows { min: i64::MAX, max: i64::MIN, avg_sum: 0.0, n: 0, seconds: None }
    }
    fn push(&mut self, mi: i64, av: i64, ma: i64, window_s: u64, neg: &mut i64) {
        self.min = self.min.min(mi);
        self.max = self.max.max(ma);
        self.avg_sum += av as f64;
        self.n += 1;
        // Counts are 1 per window until the period is known.
        self.seconds.get_or_insert_with(|| Seconds::new(window_s)).push(1, clamp_negative(mi, neg), av.max(0) as f64, clamp_negative(ma, neg));
    }
    /// The series, with `per_window` samples per window (None: unknown, 1 counted).
    fn series(self, probe: &str, variant: Option<&str>, interval_ns: u64, per_window: Option<u64>, neg: &mut i64) -> Series {
        let per = per_window.unwrap_or(1);
        let samples = per.saturating_mul(self.n);
        let mean = self.avg_sum / self.n as f64;
        let (mut per_second, width) = self.seconds.map(Seconds::finish).unwrap_or_default();
        per_second.iter_mut().for_each(|s| s.count = s.count.saturating_mul(per));
        Series {
            probe: probe.into(),
            variant: variant.map(String::from),
            interval_ns,
            samples,
            samples_unknown: per_window.is_none(),
            min_ns: clamp_negative(self.min, neg),
            max_ns: clamp_negative(self.max, neg),
            mean_ns: Some(mean.max(0.0)),
            per_second,
            per_second_width_s: width,
            signed: (self.min < 0 || mean < 0.0).then_some(SignedStats { samples, min_ns: self.min, max_ns: self.max, mean_ns: mean, clamped: true }),
            ..Series::default()
        }
    }
}

/// Which test an RTH| header belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Test {
    Latency,
    Preempt,
}

struct Switch {
    kind: String,
    switches: u64,
    switch_ns: u64,
    time_ms: u64,
}

fn switch_line(l: &str, n: usize) -> Result<Switch, ParseError> {
    let expected = "expected RTAI's switches line, like `FOR 10 TASKS: TIME 669 (ms), SUSP/RES SWITCHES 40000, SWITCH TIME 16726 (ns)`";
    let switch_ns = number_after(l, "SWITCH TIME").ok_or_else(|| ParseError::at(n, format!("no number after SWITCH TIME; {expected}")))?;
    let part = l.split(',').find(|p| p.contains("SWITCHES")).ok_or_else(|| ParseError::at(n, format!("no \"<kind> SWITCHES <count>\" part; {expected}")))?;
    let (kind, count) = part.split_once("SWITCHES").unwrap_or_default();
    let switches = uint(count, n, "SWITCHES")?;
    if switches == 0 {
        return Err(ParseError::at(n, "SWITCHES 0: no switch was measured"));
    }
    let kind: String = kind.trim().to_ascii_lowercase().split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-");
    if kind.is_empty() {
        return Err(ParseError::at(n, format!("no kind of switch before SWITCHES; {expected}")));
    }
    let head = l.split(',').next().unwrap_or("");
    let time_ms = if head.contains("(ms)") { number_after(head, "TIME").unwrap_or(0) } else { 0 };
    Ok(Switch { kind, switches, switch_ns, time_ms })
}

/// What the lines say: the period and window lines, the latency/preempt
/// windows under their RTH| header, and the switch lines.
struct Scan {
    period_ns: Option<(usize, u64)>,
    window_s: Option<u64>,
    header: Option<(Vec<String>, Test)>,
    lat: Windows,
    pre: Windows,
    jit_fast: Windows,
    jit_slow: Windows,
    overruns: u64,
    neg: i64,
    ovl_max: i64,
    ovl_min: i64,
    switches: Vec<Switch>,
}

fn scan(lines: &mut dyn Iterator<Item = Line>) -> Result<Scan, ParseError> {
    let mut s = Scan {
        period_ns: None,
        window_s: None,
        header: None,
        lat: Windows::new(),
        pre: Windows::new(),
        jit_fast: Windows::new(),
        jit_slow: Windows::new(),
        overruns: 0,
        neg: 0,
        ovl_max: i64::MIN,
        ovl_min: i64::MAX,
        switches: Vec::new(),
    };
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = raw.trim();
        if l.contains("period") && l.contains("(ns)") {
            s.period_ns = number_after(l, "period").map(|p| (n, p));
        } else if l.contains("average time") {
            s.window_s = number_after(l, "average time");
        } else if is_switch_line(l) {
            s.switches.push(switch_line(l, n)?);
        } else if l.starts_with("RTH|") {
            let h: Vec<String> = l.split('|').skip(1).map(|s| s.trim().to_string()).collect();
            let test = if h.iter().any(|x| x == "jit fast" || x == "jit slow") { Test::Preempt } else { Test::Latency };
            s.header = Some((h, test));
        } else if l.starts_with("RTD|") {
            rtd_line(&mut s, l, n)?;
        }
    }
    Ok(s)
}

/// One RTD| row, read by the columns of the RTH| header above it.
fn rtd_line(s: &mut Scan, l: &str, n: usize) -> Result<(), ParseError> {
    let (h, test) = s.header.as_ref().ok_or_else(|| ParseError::at(n, "RTD| line before any RTH| header; expected the header first"))?;
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
    let w = s.window_s.unwrap_or(1);
    match test {
        Test::Latency => {
            if let Ok(o) = get("ovl max") {
                s.ovl_max = s.ovl_max.max(o);
            }
            if let Ok(o) = get("ovl min") {
                s.ovl_min = s.ovl_min.min(o);
            }
            if let Some(k) = col("overruns") {
                s.overruns = s.overruns.max(uint(c[k], n, "overruns")?);
            }
            s.lat.push(mi, av, ma, w, &mut s.neg);
        }
        Test::Preempt => {
            s.pre.push(mi, av, ma, w, &mut s.neg);
            let (f, sl) = (get("jit fast")?, get("jit slow")?);
            if f < 0 || sl < 0 {
                return Err(ParseError::at(n, format!("jit fast {f} / jit slow {sl}: a jitter is never negative")));
            }
            s.jit_fast.push(f, f, f, w, &mut s.neg);
            s.jit_slow.push(sl, sl, sl, w, &mut s.neg);
        }
    }
    Ok(())
}

pub(crate) fn parse_lines(lines: &mut dyn Iterator<Item = Line>, opts: &ParseOptions) -> Result<Parsed, ParseError> {
    let mut s = scan(lines)?;
    if s.lat.n == 0 && s.pre.n == 0 && s.switches.is_empty() {
        return Err(ParseError::file(
            "no RTD| lines and no SWITCH TIME lines; expected RTAI testsuite output (latency or preempt: RTH| header and RTD| rows; switches: `... SWITCH TIME N (ns)`)",
        ));
    }
    // The period: from the file, else from --period; both must agree.
    let period = match (s.period_ns, opts.period_ns) {
        (Some((n, 0)), _) => return Err(ParseError::at(n, "period 0 ns; expected a positive period")),
        (Some((n, f)), Some(o)) if f != o => {
            return Err(ParseError::at(n, format!("the file says period = {f} ns but --period says {o} ns; drop --period or fix it")))
        }
        (Some((_, f)), _) => Some(f),
        (None, o) => o,
    };
    let mut tools = Vec::new();
    let mut p = Parsed::default();
    if s.lat.n + s.pre.n > 0 {
        window_series(&mut s, period, &mut tools, &mut p)?;
    }
    if !s.switches.is_empty() {
        tools.push("rtai switches");
        switch_series(&s.switches, &mut p)?;
    }
    if s.neg < 0 {
        p.fidelity.push(format!(
            "negative latencies (early wake-ups, down to {} ns): the signed min, mean and max are in `signed`; min_ns/mean_ns/max_ns and the per-second series clamp them to 0",
            s.neg
        ));
    }
    p.tool = tools.join(" + ");
    Ok(p)
}

/// The latency and preempt tests' series: one entry per averaging window,
/// the sample count derived from the window and the period when known.
fn window_series(s: &mut Scan, period: Option<u64>, tools: &mut Vec<&str>, p: &mut Parsed) -> Result<(), ParseError> {
    let window = s.window_s.unwrap_or(1).max(1);
    let per_window = match period {
        Some(period) => {
            let per = window.saturating_mul(1_000_000_000) / period;
            if per == 0 {
                return Err(ParseError::file(format!("period {period} ns is longer than the {window} s window: no samples")));
            }
            Some(per)
        }
        None => None,
    };
    match per_window {
        Some(per) => p.fidelity.push(format!(
            "sample count derived: {per} samples per {window} s window (window / period {} ns{}), one per_second entry per window",
            period.unwrap_or(0),
            if s.period_ns.is_some() { "" } else { ", from --period" }
        )),
        None => p.fidelity.push(format!(
            "sample count unknown: the file has no \"# period = N (ns)\" line (RTAI's `display` does not print it; the measuring process does) and no --period was given; each {window} s window counts as one sample (samples is a lower bound, samples_unknown is set); import again with --period to derive the count"
        )),
    }
    let interval = period.unwrap_or(0);
    let windows = s.lat.n.max(s.pre.n);
    if s.lat.n > 0 {
        tools.push("rtai latency");
        s.lat.min = s.lat.min.min(s.ovl_min);
        s.lat.max = s.lat.max.max(s.ovl_max);
        let mut series = std::mem::take(&mut s.lat).series("timer", None, interval, per_window, &mut s.neg);
        series.overruns = s.overruns;
        p.series.push(series);
    }
    if s.pre.n > 0 {
        tools.push("rtai preempt");
        let (wf, ws) = (s.jit_fast.n, s.jit_slow.n);
        p.series.push(std::mem::take(&mut s.pre).series("timer", Some("preempt"), interval, per_window, &mut s.neg));
        p.series.push(std::mem::take(&mut s.jit_fast).series("jitter", Some("fast"), 0, Some(1), &mut s.neg));
        p.series.push(std::mem::take(&mut s.jit_slow).series("jitter", Some("slow"), 0, Some(1), &mut s.neg));
        p.fidelity.push(format!(
            "preempt test: `jit fast` / `jit slow` are filed as `jitter` (variants fast, slow), one sample per {window} s window ({wf} and {ws} windows): the window's figure as printed; the fast task's latency is `timer` variant preempt"
        ));
    }
    p.duration_ns = Some(windows.saturating_mul(window).saturating_mul(1_000_000_000));
    p.fidelity.push("summary only: RTAI prints min/avg/max per window; percentiles unknown; histogram is one bucket [min, max]; stddev unknown (0)".into());
    Ok(())
}

/// The switches test: one series per kind of switch, mean only.
fn switch_series(switches: &[Switch], p: &mut Parsed) -> Result<(), ParseError> {
    let mut total_ms = 0u64;
    for sw in switches {
        if p.series.iter().any(|s| s.probe == "switch" && s.variant.as_deref() == Some(sw.kind.as_str())) {
            return Err(ParseError::file(format!("two `{}` switch lines; expected one line per kind of switch", sw.kind)));
        }
        total_ms = total_ms.saturating_add(sw.time_ms);
        p.series.push(Series {
            probe: "switch".into(),
            variant: Some(sw.kind.clone()),
            samples: sw.switches,
            min_ns: sw.switch_ns,
            max_ns: sw.switch_ns,
            mean_ns: Some(sw.switch_ns as f64),
            ..Series::default()
        });
    }
    p.fidelity.push("switches test: mean only (TIME / SWITCHES as RTAI prints it); min and max are unknown and set to the mean; percentiles unknown".into());
    if p.duration_ns.is_none() && total_ms > 0 {
        p.duration_ns = Some(total_ms.saturating_mul(1_000_000));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(text: &str, period_ns: Option<u64>) -> Result<Parsed, ParseError> {
        parse_lines(&mut crate::import::read::Lines::new(text.as_bytes()), &ParseOptions { period_ns })
    }

    const DISPLAY: &str = "RTH|    lat min|    ovl min|    lat avg|    lat max|    ovl max|   overruns\n\
                           RTD|       -100|       -100|        500|       3000|       3000|          0\n\
                           RTD|        200|       -100|        700|       9000|       9000|          1\n";

    #[test]
    fn display_without_period_has_an_unknown_count() {
        let p = parse_with(DISPLAY, None).unwrap();
        let s = &p.series[0];
        assert!(s.samples_unknown);
        assert_eq!(s.samples, 2, "one per window, a lower bound");
        assert_eq!(s.interval_ns, 0);
        assert!(p.fidelity.iter().any(|f| f.starts_with("sample count unknown")));
    }

    #[test]
    fn period_flag_gives_the_count_and_must_agree_with_the_file() {
        let p = parse_with(DISPLAY, Some(250_000)).unwrap();
        assert_eq!((p.series[0].samples, p.series[0].samples_unknown), (8000, false));
        assert_eq!(p.series[0].overruns, 1);
        let with_line = format!("# period = 100000 (ns)\n{DISPLAY}");
        assert!(parse_with(&with_line, Some(250_000)).unwrap_err().msg.contains("--period says 250000"));
        assert_eq!(parse_with(&with_line, Some(100_000)).unwrap().series[0].samples, 20_000);
    }

    #[test]
    fn preempt_columns_become_timer_and_jitter_entries() {
        let t = "RTH|     lat min|     lat avg|     lat max|    jit fast|    jit slow\n\
                 RTD|        -981|         212|        4310|        5291|        8017\n\
                 RTD|       -1004|         208|        4528|        5532|        7790\n";
        let p = parse_with(t, None).unwrap();
        let names: Vec<_> = p.series.iter().map(|s| (s.probe.as_str(), s.variant.as_deref())).collect();
        assert_eq!(names, [("timer", Some("preempt")), ("jitter", Some("fast")), ("jitter", Some("slow"))]);
        assert_eq!(p.series[0].signed.unwrap().min_ns, -1004);
        assert_eq!((p.series[1].min_ns, p.series[1].max_ns, p.series[1].samples), (5291, 5532, 2));
        assert!(!p.series[1].samples_unknown, "the jitter figures are one per window: their count is known");
        assert_eq!(p.series[2].max_ns, 8017);
    }

    #[test]
    fn switch_lines_become_one_entry_per_kind() {
        let t = "FOR 10 TASKS: TIME 669 (ms), SUSP/RES SWITCHES 40000, SWITCH TIME 16726 (ns)\n\
                 FOR 10 TASKS: TIME 702 (ms), SEM SIGNAL/WAIT SWITCHES 40000, SWITCH TIME 17551 (ns)\n";
        let p = parse_with(t, None).unwrap();
        assert_eq!(p.series.len(), 2);
        assert_eq!(p.series[0].variant.as_deref(), Some("susp-res"));
        assert_eq!(p.series[1].variant.as_deref(), Some("sem-signal-wait"));
        assert_eq!((p.series[0].samples, p.series[0].max_ns), (40_000, 16_726));
        assert!(parse_with("FOR 1 TASKS: TIME 1 (ms), SWITCHES x, SWITCH TIME 3 (ns)\n", None).is_err());
    }
}
