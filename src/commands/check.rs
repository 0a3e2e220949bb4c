//! `rtscope check RESULT... [bounds] [--baseline B --ratio X] [--majority]
//! [--junit FILE] [--format text|json|lava]`: the CI gate. Exit 0 when every
//! case passes, 3 when one fails, 2 on bad input (nothing written: inputs,
//! baseline and bounds are checked first, the JUnit file is written
//! atomically after the verdict).

use crate::analysis::check::{self, Gate, Metric};
use crate::cli::analysis_opts::{CheckArgs, CheckFormat};
use crate::commands::inputs;
use crate::error::{BadInput, EXIT_GATE_FAILED, EXIT_OK};
use crate::model::Nanos;
use crate::report;

pub(crate) fn cmd(args: &CheckArgs) -> anyhow::Result<u8> {
    let mut bounds = Vec::new();
    let us = |ns: u64| Nanos(ns).as_micros_f64();
    if let Some(v) = args.max {
        bounds.push((Metric::Max, us(v)));
    }
    if let Some(v) = args.p99 {
        bounds.push((Metric::P99, us(v)));
    }
    if let Some(v) = args.p99_9 {
        bounds.push((Metric::P999, us(v)));
    }
    if let Some(v) = args.overruns {
        bounds.push((Metric::Overruns, v as f64));
    }
    if let Some(v) = args.violations {
        bounds.push((Metric::Violations, v as f64));
    }
    if let Some(v) = args.miss_ratio {
        bounds.push((Metric::MissRatio, v));
    }
    // `--deadline` alone: no miss allowed (a late sample or a missed period).
    if args.miss_ratio.is_none() && args.deadline.is_some() {
        bounds.push((Metric::MissRatio, 0.0));
    }
    if bounds.is_empty() && args.baseline.is_none() {
        return Err(BadInput(
            "check: no bound given; give at least one of --max, --p99, --p99.9, --overruns, --violations, --miss-ratio (with --deadline), or --baseline with --ratio".into(),
        )
        .into());
    }
    if let Some(path) = &args.junit {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(BadInput(format!("--junit {}: directory {} does not exist; create it or give another path", path.display(), dir.display())).into());
            }
        }
        // Before the verdict: a JUnit path that cannot be written is bad
        // input (exit 2), not a failure after the verdict was printed.
        crate::store::json::check_output(path).map_err(|e| BadInput(format!("--junit {}", e.0)))?;
    }
    let db = args.db.db.as_deref();
    let runs = inputs::load_inputs(&args.inputs, db)?;
    if args.majority && runs.len() < 2 {
        // A flag that would do nothing is refused, as `run` refuses probe
        // options none of its probes reads (cli/applies.rs).
        return Err(BadInput(format!(
            "--majority: it decides a case over 2 or more runs (fails when at least half of them fail it), and this check has {} run: the flag would do nothing; drop --majority or give more runs (files, ids or @TAG)",
            runs.len()
        ))
        .into());
    }
    let baseline = match (&args.baseline, args.ratio) {
        (Some(b), Some(x)) => Some((inputs::load_inputs(std::slice::from_ref(b), db)?.into_iter().map(|(_, r)| r).collect(), x)),
        _ => None,
    };
    let gate = Gate { bounds, baseline, majority: args.majority, deadline: args.deadline.map(Nanos), pairing: args.match_by.pairing(&args.phases) };
    let r = check::check(&runs, &gate)?;
    if let Some(path) = &args.junit {
        let xml = report::check::junit(&r)?;
        crate::store::json::write_atomic(path, |w| Ok(w.write_all(xml.as_bytes())?))?;
    }
    let out = match args.format {
        CheckFormat::Text => report::check::text(&r, report::term::width(false)),
        CheckFormat::Lava => report::check::lava(&r),
        CheckFormat::Json => serde_json::to_string_pretty(&r)? + "\n",
    };
    match args.format {
        CheckFormat::Json => inputs::emit(None, out.as_bytes())?,
        _ => inputs::emit_text(None, &out)?,
    }
    Ok(if r.passed { EXIT_OK } else { EXIT_GATE_FAILED })
}
