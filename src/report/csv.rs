//! CSV renderer: one table with two kinds of record, for spreadsheets and
//! plotting scripts. `summary` rows carry one entry's statistics (every
//! entry of every run, per thread and merged); `bucket` rows carry its
//! histogram, bucket by bucket at full resolution (counts sum to
//! `samples`). All latencies in ns. Pure function of the analysis.
//!
//! Unknowns are empty cells, never 0: `overruns` of a source that cannot
//! count missed periods, and `misses` then (a miss is a late sample or a
//! missed period). A percentile that is a bound (a wide bucket) is written
//! as its range's top, as in the result file; the report shows the range.

use crate::analysis::summary::Analysis;

pub(crate) const HEADER: [&str; 25] = [
    "record",
    "system",
    "probe",
    "phase",
    "variant",
    "thread",
    "cpu",
    "samples",
    "overruns",
    "min_ns",
    "mean_ns",
    "stddev_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p99.9_ns",
    "p99.99_ns",
    "p99.999_ns",
    "max_ns",
    "deadline_ns",
    "misses",
    "pwcet_1e-9_ns",
    "bucket_lo_ns",
    "bucket_hi_ns",
    "count",
];

pub(crate) fn render(a: &Analysis) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    for r in &a.runs {
        for e in &r.entries {
            let id = [
                r.name.clone(),
                e.probe.clone(),
                e.phase.clone(),
                e.variant.clone().unwrap_or_default(),
                e.thread.map(|t| t.to_string()).unwrap_or_else(|| "all".into()),
                e.cpu.map(|c| c.to_string()).unwrap_or_default(),
            ];
            let mut rec: Vec<String> = vec!["summary".into()];
            rec.extend(id.iter().cloned());
            rec.push(e.samples.to_string());
            rec.push(e.known_overruns().map(|o| o.to_string()).unwrap_or_default());
            rec.push(e.min_ns.0.to_string());
            rec.push(format!("{:.1}", e.mean_ns));
            rec.push(e.stddev().map(|s| format!("{s:.1}")).unwrap_or_default());
            for l in ["p50", "p90", "p99", "p99.9", "p99.99", "p99.999"] {
                rec.push(e.percentile(l).map(|v| v.0.to_string()).unwrap_or_default());
            }
            rec.push(e.max_ns.0.to_string());
            match &e.deadline {
                Some(d) => {
                    rec.push(d.deadline_ns.0.to_string());
                    rec.push(if d.complete { d.misses.to_string() } else { String::new() });
                }
                None => rec.extend([String::new(), String::new()]),
            }
            rec.push(
                e.pwcet
                    .as_ref()
                    .and_then(|p| p.estimate())
                    .and_then(|est| est.levels.iter().find(|l| l.p == 1e-9))
                    .map(|l| format!("{:.0}", l.estimate_ns))
                    .unwrap_or_default(),
            );
            rec.extend([String::new(), String::new(), String::new()]);
            w.write_record(&rec)?;
            for b in &e.histogram {
                let mut rec: Vec<String> = vec!["bucket".into()];
                rec.extend(id.iter().cloned());
                rec.extend((0..15).map(|_| String::new()));
                rec.push(b.lo_ns.0.to_string());
                rec.push(b.hi_ns.0.to_string());
                rec.push(b.count.to_string());
                w.write_record(&rec)?;
            }
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("writing CSV: {e}"))
}

/// The CSV report as a [`crate::report::Renderer`].
pub(crate) struct Csv;

impl crate::report::Renderer for Csv {
    fn render(&self, a: &Analysis) -> anyhow::Result<Vec<u8>> {
        render(a)
    }
}
