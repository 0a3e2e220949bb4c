//! `xenomai-latency`: the output of Xenomai's `latency` test
//! (testsuite/latency/latency.c, Xenomai 2.x and 3.x; EVL's `latmus` uses
//! the same RTT/RTH/RTD/RTS lines).
//!
//! ```text
//! == Sampling period: 100 us
//! RTT|  00:00:01  (periodic user-mode task, 100 us period, priority 99)
//! RTH|----lat min|----lat avg|----lat max|-overrun|---msw|---lat best|--lat worst
//! RTD|      0.871|      1.402|      6.230|       0|     0|      0.871|      6.230   <- one per second
//! HSD|    avg|   1 -  2 |    25300     <- with -h: bucket (in -B units, 1 µs by default), count
//! HSS|    avg|     30000|      1.030|      0.451   <- samples, average, stddev (bucket units)
//! RTS|      0.865|      1.403|     11.047|       0|     0|    00:00:03/00:00:03
//! ```
//! All values are µs with 3 decimals (exact to the ns). The `HSD| avg`
//! histogram holds every sample (by absolute value; the last bucket also
//! holds all larger ones); the `min`/`max` histograms hold one value per
//! second and are not imported. Without `-h` the run is summary-only and
//! its sample count is derived from the duration and the period.

use super::format::{Format, Spec, Systems};
use super::{clamp_negative, decimal_us_to_ns, float, uint, Hist, Line, ParseError, Parsed, Seconds, Series};
use crate::model::{Nanos, SignedStats};

/// Xenomai's `latency` tool output.
pub(crate) const FORMAT: Format = Format(&Spec::text(
    "xenomai-latency",
    "Xenomai's `latency` tool output (RTD|, RTS|, and -h HSD|/HSS| lines)",
    |s| s.lines().any(|l| l.starts_with("RTS|") || l.starts_with("HSS|") || l.starts_with("RTT|")),
    |input, _| parse_lines(input).map(Systems::one),
));

/// The test mode as a variant: the user-mode periodic task is what the
/// native `timer` probe measures (variant null, so `compare` lines them up);
/// the in-kernel modes are `kernel` (task) and `irq` (timer handler). EVL's
/// latmus prints `user`, `kernel`, `irq`.
fn variant_of_mode(m: &str) -> Option<String> {
    let m = m.trim();
    if m.contains("timer handler") || m == "irq" {
        Some("irq".into())
    } else if m.contains("in-kernel") || m == "kernel" {
        Some("kernel".into())
    } else {
        None
    }
}

fn cells(l: &str) -> Vec<&str> {
    l.split('|').skip(1).map(str::trim).collect()
}

/// "00:00:03/00:00:03" → seconds actually run.
fn hms(s: &str) -> Option<u64> {
    let first = s.split('/').next()?.trim();
    let v: Vec<u64> = first.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if v.len() != 3 {
        return None;
    }
    v[0].checked_mul(3600)?.checked_add(v[1].checked_mul(60)?)?.checked_add(v[2])
}

#[cfg(test)]
pub(crate) fn parse(text: &str) -> Result<Parsed, ParseError> {
    parse_lines(&mut super::read::Lines::new(text.as_bytes()))
}

/// The RTS| summary line: its line number, min/avg/max (signed ns),
/// overruns, and the seconds run and planned.
struct Rts {
    line: usize,
    min: i64,
    avg: i64,
    max: i64,
    overruns: u64,
    secs: Option<u64>,
    planned: Option<u64>,
}

/// What the lines say, before any count is derived.
struct Scan {
    period_us: Option<u64>,
    mode: Option<String>,
    hist: Hist,
    hist_top: Option<u64>,
    hss_avg: Option<(usize, u64, f64)>,
    rts: Option<Rts>,
    /// Signed per-second values; counts are 1 per line until the period is known.
    seconds: Seconds,
    neg: i64,
}

fn scan(lines: &mut dyn Iterator<Item = Line>) -> Result<Scan, ParseError> {
    let mut s = Scan { period_us: None, mode: None, hist: Hist::new(), hist_top: None, hss_avg: None, rts: None, seconds: Seconds::new(1), neg: 0 };
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let n = i + 1;
        let l = raw.trim();
        if let Some(v) = l.strip_prefix("== Sampling period:") {
            s.period_us = Some(uint(v.trim().trim_end_matches("us").trim(), n, "sampling period (µs)")?);
        } else if l.starts_with("RTT|") {
            // "(periodic user-mode task, 100 us period, priority 99)"
            if let Some(inner) = l.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(a, _)| a) {
                let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
                s.mode = parts.first().and_then(|m| variant_of_mode(m));
                if let Some(pp) = parts.iter().find(|p| p.ends_with("us period")) {
                    s.period_us = Some(uint(pp.trim_end_matches("us period").trim(), n, "period (µs)")?);
                }
            }
        } else if l.starts_with("RTD|") {
            let c = cells(l);
            if c.len() < 3 {
                return Err(ParseError::at(n, "expected RTD| lat min| lat avg| lat max| overrun| msw| best| worst"));
            }
            let min = decimal_us_to_ns(c[0], n, "RTD lat min")?;
            let avg = decimal_us_to_ns(c[1], n, "RTD lat avg")?;
            let max = decimal_us_to_ns(c[2], n, "RTD lat max")?;
            s.seconds.push(1, clamp_negative(min, &mut s.neg), avg.max(0) as f64, clamp_negative(max, &mut s.neg));
        } else if l.starts_with("HSD|") {
            hsd_line(&mut s, l, n)?;
        } else if l.starts_with("HSS|") {
            let c = cells(l);
            if c.len() != 4 {
                return Err(ParseError::at(n, "expected HSS| kind| samples| average| stddev"));
            }
            if c[0] == "avg" {
                s.hss_avg = Some((n, uint(c[1], n, "HSS samples")?, float(c[3], n, "HSS stddev")?));
            }
        } else if l.starts_with("RTS|") {
            let c = cells(l);
            if c.len() < 6 {
                return Err(ParseError::at(n, "expected RTS| min| avg| max| overruns| msw| duration"));
            }
            s.rts = Some(Rts {
                line: n,
                min: decimal_us_to_ns(c[0], n, "RTS min")?,
                avg: decimal_us_to_ns(c[1], n, "RTS avg")?,
                max: decimal_us_to_ns(c[2], n, "RTS max")?,
                overruns: uint(c[3], n, "RTS overruns")?,
                secs: hms(c[5]),
                planned: hms_planned(c[5]),
            });
        }
    }
    Ok(s)
}

/// One `HSD| kind| lo - hi | samples` row; only the `avg` histogram is kept.
fn hsd_line(s: &mut Scan, l: &str, n: usize) -> Result<(), ParseError> {
    let c = cells(l);
    if c.len() != 3 {
        return Err(ParseError::at(n, "expected HSD| kind| lo - hi | samples"));
    }
    if c[0] != "avg" {
        return Ok(());
    }
    let (lo, _) = c[1].split_once('-').ok_or_else(|| ParseError::at(n, "expected a bucket range \"lo - hi\""))?;
    let lo = uint(lo, n, "HSD bucket")?;
    let count = uint(c[2], n, "HSD samples")?;
    let lo_ns = super::us_to_ns(lo, n, "HSD bucket")?;
    if count > 0 {
        s.hist_top = Some(s.hist_top.unwrap_or(0).max(lo_ns));
    }
    s.hist.add(lo_ns, lo_ns + 999, count);
    Ok(())
}

/// The sample count: the histogram's total (checked against HSS| avg),
/// else derived from the RTD| lines or the duration and the period, saying so.
fn sample_count(s: &Scan, rts: &Rts, per_sec: Option<u64>, rtd_lines: u64, fidelity: &mut Vec<String>) -> Result<u64, ParseError> {
    if !s.hist.is_empty() {
        let sum = s.hist.total().ok_or_else(|| ParseError::file("HSD counts overflow"))?;
        if let Some((l, n, _)) = s.hss_avg {
            if n != sum {
                return Err(ParseError::at(l, format!("HSS avg says {n} samples but the HSD| avg rows sum to {sum}")));
            }
        }
        return Ok(sum);
    }
    match per_sec {
        // One RTD| line per second actually measured: the count comes
        // from the lines present, never from the duration alone.
        Some(ps) if rtd_lines > 0 => {
            fidelity.push(format!("sample count derived: {rtd_lines} RTD| lines (one per second) × {ps} samples per second (1 s / period); no -h histogram"));
            Ok(rtd_lines.saturating_mul(ps))
        }
        Some(ps) if rts.secs.is_some() => {
            fidelity.push("sample count estimated as duration / period (no -h histogram, no RTD| lines)".into());
            Ok(rts.secs.unwrap_or(0).saturating_mul(ps))
        }
        _ => Err(ParseError::at(
            rts.line,
            "no HSD| histogram and no period or duration to count samples; expected latency -h output, or the RTT| line and the RTS| duration",
        )),
    }
}

pub(crate) fn parse_lines(lines: &mut dyn Iterator<Item = Line>) -> Result<Parsed, ParseError> {
    let mut s = scan(lines)?;
    let rts = s.rts.take().ok_or_else(|| ParseError::file("no RTS| summary line; expected the complete output of Xenomai's latency (truncated file?)"))?;
    let period_ns = s.period_us.map(|p| p.saturating_mul(1000));
    let per_sec = period_ns.filter(|&pn| pn > 0).map(|pn| 1_000_000_000 / pn);
    let mut p = Parsed { tool: "xenomai latency".into(), ..Parsed::default() };
    let rtd_lines = s.seconds.entries();
    let folded = s.hist.folded();
    let samples = sample_count(&s, &rts, per_sec, rtd_lines, &mut p.fidelity)?;
    if let Some(secs) = rts.secs {
        if rtd_lines > 0 && rtd_lines + 1 < secs {
            p.fidelity.push(format!("truncated: {rtd_lines} of {secs} per-second RTD| lines (the RTS| line says {secs} s ran)"));
        }
        if let Some(plan) = rts.planned.filter(|&pl| pl > secs) {
            p.fidelity.push(format!("stopped early: ran {secs} of {plan} s (RTS| duration)"));
        }
    }
    let mut neg = s.neg;
    let min_u = clamp_negative(rts.min, &mut neg);
    let max_u = clamp_negative(rts.max, &mut neg);
    let (mut secs_stats, width) = s.seconds.finish();
    match per_sec {
        Some(ps) => secs_stats.iter_mut().for_each(|s| s.count = s.count.saturating_mul(ps)),
        None => secs_stats.clear(),
    }
    let mut buckets = s.hist.into_buckets();
    if let Some(last) = buckets.iter_mut().filter(|b| Some(b.lo_ns.0) <= s.hist_top).max_by_key(|b| b.lo_ns) {
        // The last bucket also holds every larger value.
        last.hi_ns = Nanos(last.hi_ns.0.max(max_u));
    }
    let summary_only = buckets.is_empty();
    let (min, avg, max) = (rts.min, rts.avg, rts.max);
    p.series.push(Series {
        probe: "timer".into(),
        variant: s.mode.clone(),
        thread: None,
        interval_ns: period_ns.unwrap_or(0),
        samples,
        overruns: rts.overruns,
        min_ns: min_u,
        max_ns: max_u,
        mean_ns: Some(avg.max(0) as f64),
        stddev_ns: s.hss_avg.map(|(_, _, sd)| sd * 1000.0),
        buckets,
        per_second: secs_stats,
        per_second_width_s: width,
        signed: (min < 0 || avg < 0).then_some(SignedStats { samples, min_ns: min, max_ns: max, mean_ns: avg as f64, clamped: true }),
        ..Series::default()
    });
    p.duration_ns = rts.secs.map(|s| s.saturating_mul(1_000_000_000));
    fidelity_notes(&mut p, summary_only, folded, neg);
    Ok(p)
}

/// The notes every import carries: histogram or summary, folding, clamped
/// negatives, and where the per-second series comes from.
fn fidelity_notes(p: &mut Parsed, summary_only: bool, folded: bool, neg: i64) {
    if summary_only {
        p.fidelity.push("summary only (run without -h): percentiles unknown; histogram is one bucket [min, max]".into());
    } else {
        p.fidelity
            .push("histogram in 1 µs buckets (latency's -B default; the bucket size is not printed); values are absolute (negative latencies folded)".into());
    }
    if folded {
        p.fidelity.push(super::folded_note("HSD| histogram"));
    }
    if neg < 0 {
        p.fidelity.push(format!(
            "negative latencies (early wake-ups, down to {neg} ns): the signed min, mean and max are in `signed`; min_ns/mean_ns/max_ns and the per-second series clamp them to 0"
        ));
    }
    p.fidelity.push("per-second series from the RTD| lines; counts per second derived from the period".into());
}

/// "00:00:03/00:00:10" → the planned duration (after the slash), if any.
fn hms_planned(s: &str) -> Option<u64> {
    hms(s.split_once('/')?.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_histogram_samples_come_from_duration_and_period() {
        let text = "RTT|  00:00:01  (in-kernel timer handler, 200 us period, priority 99)\n\
RTD|     -0.500|      1.000|      4.000|       0|     0|     -0.500|      4.000\n\
RTS|     -0.500|      1.000|      4.000|       0|     0|    00:00:10/00:00:10\n";
        let p = parse(text).unwrap();
        let s = &p.series[0];
        assert_eq!(s.samples, 5000, "one RTD| line present: 1 s at 200 µs, not the RTS| 10 s");
        assert!(p.fidelity.iter().any(|f| f.contains("truncated: 1 of 10")), "{:?}", p.fidelity);
        let signed = s.signed.unwrap();
        assert_eq!((signed.min_ns, signed.max_ns, signed.mean_ns), (-500, 4000, 1000.0));
        assert_eq!(s.variant.as_deref(), Some("irq"));
        assert_eq!((s.min_ns, s.max_ns), (0, 4000));
        assert!(s.buckets.is_empty());
        assert!(p.fidelity.iter().any(|f| f.contains("-500 ns")));
        assert!(p.fidelity.iter().any(|f| f.starts_with("summary only")));
    }

    #[test]
    fn no_summary_line_means_truncated() {
        let e = parse("RTD|      0.871|      1.402|      6.230|       0|     0|      0.871|      6.230\n").unwrap_err();
        assert!(e.msg.contains("truncated"));
    }
}
