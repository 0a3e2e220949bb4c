//! `oslat-json`: the file rt-tests' oslat writes with `--json=FILE`.
//!
//! Same envelope as cyclictest's (stray-colon keys, `sysinfo`), with
//! `thread` {"N": {cpu, freq, min, avg, max, duration, histogram}}. The
//! histogram is in µs buckets and its last bucket also counts every larger
//! value ("including overflows" in oslat's text output), so that bucket is
//! widened to the reported max. oslat measures OS noise with a busy loop: it
//! has no period, so `interval_ns` is 0.

use super::cyclictest_json::{common, json_f64, json_uint, scale_hist, to_ns, Doc};
use super::format::{never, Format, Spec, Systems};
use super::{ParseError, Parsed, Series};
use crate::model::Nanos;

/// rt-tests oslat --json=FILE.
pub(crate) const FORMAT: Format = Format(&Spec {
    name: "oslat-json",
    about: "rt-tests oslat --json=FILE",
    json: true,
    sniff: |s| s.json_tool().as_deref() == Some("oslat"),
    fallback: never,
    parse: Some(|input, _| parse_reader(input.reader()).map(Systems::one)),
    per_column: false,
    takes_period: false,
    probe_per_row: false,
});

pub(crate) fn parse_reader(r: impl std::io::Read) -> Result<Parsed, ParseError> {
    let doc = Doc::read(r)?;
    super::cyclictest_json::expect_tool(&doc.top, "oslat")?;
    let mut p = common(&doc.top, "oslat");
    let threads = doc.threads.ok_or_else(|| ParseError::file("no \"thread\" object; expected oslat --json output (truncated file?)"))?;
    let mut ids = Vec::new();
    for (k, t) in threads {
        let id: usize = k.parse().map_err(|_| ParseError::file(format!("thread key {k:?} is not a thread number")))?;
        ids.push((id, t));
    }
    ids.sort_by_key(|x| x.0);
    let mut longest = 0f64;
    let mut folded = false;
    for (id, th) in ids {
        let t = &th.fields;
        let path = format!("thread.\"{id}\"");
        let min_ns = to_ns(json_uint(t, "min", &path)?, 1000, &path)?;
        let max_ns = to_ns(json_uint(t, "max", &path)?, 1000, &path)?;
        let avg = json_f64(t, "avg", &path)? * 1000.0;
        if let Ok(d) = json_f64(t, "duration", &path) {
            longest = longest.max(d);
        }
        let h = th.hist.ok_or_else(|| ParseError::file(format!("{path}: no \"histogram\" field")))?;
        folded |= h.folded();
        let mut buckets = scale_hist(h, 1000, &format!("{path}.histogram"))?;
        buckets.sort_by_key(|b| b.lo_ns);
        if let Some(last) = buckets.last_mut() {
            // oslat's last bucket holds every value at or above it.
            last.hi_ns = Nanos(last.hi_ns.0.max(max_ns));
        }
        let samples = buckets
            .iter()
            .try_fold(0u64, |a, b| a.checked_add(b.count))
            .ok_or_else(|| ParseError::file(format!("{path}.histogram: counts overflow a 64-bit sum")))?;
        p.series.push(Series {
            probe: "noise".into(),
            thread: Some(id),
            cpu: t.get("cpu").and_then(|c| c.as_u64()).map(|c| c as usize),
            samples,
            min_ns,
            max_ns,
            mean_ns: Some(avg),
            buckets,
            ..Series::default()
        });
    }
    if longest > 0.0 {
        p.duration_ns = Some((longest * 1e9) as u64);
    }
    p.fidelity.push("µs resolution; oslat's last histogram bucket also holds every larger value (widened to the max)".into());
    if folded {
        p.fidelity.push(super::folded_note("histogram"));
    }
    p.fidelity.push("no per-second series; no worst-sample timestamps".into());
    Ok(p)
}
