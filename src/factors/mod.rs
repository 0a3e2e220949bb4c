//! Factor experiments: which setting matters on this system, with an error
//! bar — and nothing left changed.
//!
//! - [`knobs`]: one descriptor per knob (read, set, restore, needs, doctor's finding);
//! - [`journal`]: the originals written to a file before the first change,
//!   restored on every exit path and, after a crash, by the next rtscope;
//! - [`design`]: the cells (full factorial, or one factor at a time past
//!   16 cells) and the randomised interleaved rounds;
//! - [`effects`]: pure statistics — main effects and two-factor
//!   interactions with bootstrap intervals over rounds, "material" by
//!   compare's rule;
//! - [`stored`]: an experiment's design record in the history, and the
//!   stored experiment read back (`--analyse`, doctor's citations);
//! - this module: from runs to an [`Analysis`] (per metric and entry, each
//!   factor level's effect, ranked); [`render`] prints it.
//!
//! `commands::factors` drives an experiment: it builds every cell's plan
//! with `run`'s machinery, journals and sets the knobs, runs, stores.

pub(crate) mod design;
pub(crate) mod effects;
pub(crate) mod journal;
pub(crate) mod knobs;
pub(crate) mod render;
pub(crate) mod stored;

use serde::Serialize;

use crate::model::{Nanos, Run};
use design::{Design, Shape};
use effects::{Estimate, Scale, Verdict};

/// Version of the `rtscope factors --format json` document (docs/factors.md).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The bootstrap's seed: fixed, so a stored experiment analysed again
/// (`--analyse`) gives the same intervals as when it ran.
const BOOTSTRAP_SEED: u64 = 0x5EED_F00D;

/// The metrics an effect is estimated on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Metric {
    #[serde(rename = "p50")]
    P50,
    #[serde(rename = "p99")]
    P99,
    #[serde(rename = "p99.9")]
    P999,
    #[serde(rename = "max")]
    Max,
    /// With `--deadline`: misses / periods.
    #[serde(rename = "miss_ratio")]
    MissRatio,
}

impl Metric {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Max => "max",
            Metric::MissRatio => "miss ratio",
        }
    }
    fn scale(self) -> Scale {
        if self == Metric::MissRatio {
            Scale::Linear
        } else {
            Scale::Log
        }
    }
}

/// One measured run of the experiment.
#[derive(Debug, Clone)]
pub(crate) struct Observation {
    pub(crate) round: usize,
    pub(crate) cell: usize,
    pub(crate) run_id: Option<i64>,
    pub(crate) run: Run,
}

/// One effect in the table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    /// `timer/idle`, or `timer` when the load is a factor.
    pub(crate) entry: String,
    pub(crate) metric: Metric,
    /// `dma-latency=released` (vs its baseline), or `printk×thp` for an interaction.
    pub(crate) factor: String,
    pub(crate) level: String,
    pub(crate) baseline: String,
    /// The metric's mean over the runs of each side (ns, or a ratio).
    pub(crate) baseline_value: f64,
    pub(crate) level_value: f64,
    pub(crate) scale: Scale,
    #[serde(flatten)]
    pub(crate) estimate: Estimate,
    pub(crate) interaction: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Analysis {
    pub(crate) schema_version: u32,
    pub(crate) experiment: String,
    pub(crate) host: String,
    pub(crate) design: Shape,
    pub(crate) factors: Vec<FactorOut>,
    pub(crate) rounds: usize,
    pub(crate) runs: usize,
    pub(crate) run_ids: Vec<i64>,
    /// The run order's seed (`--seed`; 0 when analysed from the history).
    pub(crate) seed: u64,
    /// Every effect, ranked: material first, then by size.
    pub(crate) effects: Vec<Row>,
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct FactorOut {
    pub(crate) name: String,
    pub(crate) levels: Vec<String>,
    pub(crate) what: String,
}

/// The key of an entry across cells: its phase is dropped when the load
/// is a factor (each level is its own phase).
fn entry_key(r: &crate::model::ProbeResult, load_is_factor: bool) -> String {
    let probe = match &r.variant {
        Some(v) => format!("{}[{v}]", r.probe),
        None => r.probe.clone(),
    };
    if load_is_factor {
        probe
    } else {
        format!("{probe}/{}", r.phase)
    }
}

/// A metric's value in one entry; `None` where it is unknown (a summary-only
/// entry's percentiles) or empty.
fn value(r: &crate::model::ProbeResult, m: Metric, deadline: Option<Nanos>) -> Option<f64> {
    let pct = |q: f64| {
        if !r.distribution_known() || r.samples == 0 {
            return None;
        }
        crate::analysis::percentiles::from_histogram(&r.histogram, q, r.min_ns, r.max_ns).map(|n| n.0 as f64)
    };
    match m {
        Metric::P50 => pct(50.0),
        Metric::P99 => pct(99.0),
        Metric::P999 => pct(99.9),
        Metric::Max => (r.samples > 0).then_some(r.max_ns.0 as f64),
        Metric::MissRatio => {
            let d = crate::analysis::deadline::misses(r, deadline?);
            (d.periods > 0 && d.exact).then_some(d.misses as f64 / d.periods as f64)
        }
    }
}

/// Analyse the runs of an experiment. `interactions`: estimate every pair
/// of factors' interaction (full factorial only).
pub(crate) fn analyse(
    experiment: &str,
    design: &Design,
    obs: &[Observation],
    rounds: usize,
    seed: u64,
    deadline: Option<Nanos>,
    interactions: bool,
) -> Analysis {
    let load_is_factor = design.factors.iter().any(|f| matches!(f.knob.kind, knobs::Kind::Run(knobs::RunSetting::Load)));
    let mut notes = Vec::new();
    let mut metrics = vec![Metric::P50, Metric::P99, Metric::P999, Metric::Max];
    if deadline.is_some() {
        metrics.push(Metric::MissRatio);
    }
    let interrupted = obs.iter().filter(|o| o.run.interrupted).count();
    if interrupted > 0 {
        notes.push(format!("{interrupted} run(s) were interrupted: their cells count with what they measured"));
    }
    let mut rows = Vec::new();
    for key in &entry_keys(obs, load_is_factor) {
        for &m in &metrics {
            let mut values: Vec<Vec<Option<f64>>> = vec![vec![None; design.cells.len()]; rounds];
            for o in obs {
                let v = crate::model::merged_or_sole(&o.run.results, |r| r)
                    .into_iter()
                    .find(|r| entry_key(r, load_is_factor) == *key)
                    .and_then(|r| value(r, m, deadline));
                if let Some(slot) = values.get_mut(o.round).and_then(|r| r.get_mut(o.cell)) {
                    *slot = v;
                }
            }
            main_rows(design, key, m, &values, &mut rows);
            if interactions && design.shape == Shape::FullFactorial {
                interaction_rows(design, key, m, &values, &mut rows);
            }
        }
    }
    if interactions && design.shape == Shape::OneFactorAtATime {
        notes.push("interactions need a full factorial design (at most 16 cells): not estimated".into());
    }
    rank(&mut rows);
    // Boot factors run on guests with different kernels: each one named, in order of first run.
    let mut hosts: Vec<String> = Vec::new();
    for o in obs {
        let h = format!("{} {}", o.run.host.hostname, o.run.host.kernel_release);
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    let host = hosts.join(", ");
    Analysis {
        schema_version: SCHEMA_VERSION,
        experiment: experiment.to_string(),
        host,
        design: design.shape,
        factors: design.factors.iter().map(|f| FactorOut { name: f.knob.name.into(), levels: f.levels.clone(), what: f.knob.what().into() }).collect(),
        rounds,
        runs: obs.len(),
        run_ids: obs.iter().filter_map(|o| o.run_id).collect(),
        seed,
        effects: rows,
        notes,
    }
}

/// Entry keys in first-seen order, over the merged (or sole) entries.
fn entry_keys(obs: &[Observation], load_is_factor: bool) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for o in obs {
        for r in crate::model::merged_or_sole(&o.run.results, |r| r) {
            let k = entry_key(r, load_is_factor);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// The bootstrap seed of the next row: fixed by the rows before it.
fn row_seed(rows: &[Row]) -> u64 {
    BOOTSTRAP_SEED ^ (rows.len() as u64).wrapping_mul(0x9E37_79B9)
}

/// Each factor's main effect, level by level against its first level, on
/// metric `m` of entry `key` (`values[round][cell]`).
fn main_rows(design: &Design, key: &str, m: Metric, values: &[Vec<Option<f64>>], rows: &mut Vec<Row>) {
    for (f, factor) in design.factors.iter().enumerate() {
        for l in 1..factor.levels.len() {
            let (d, base, other) = effects::main_rounds(&design.cells, values, f, l, m.scale());
            if let Some(e) = effects::estimate(&d, m.scale(), base, other, row_seed(rows)) {
                rows.push(Row {
                    entry: key.to_string(),
                    metric: m,
                    factor: factor.knob.name.to_string(),
                    level: factor.levels[l].clone(),
                    baseline: factor.levels[0].clone(),
                    baseline_value: base,
                    level_value: other,
                    scale: m.scale(),
                    estimate: e,
                    interaction: false,
                });
            }
        }
    }
}

/// Every pair of factors' interaction (full factorial designs).
fn interaction_rows(design: &Design, key: &str, m: Metric, values: &[Vec<Option<f64>>], rows: &mut Vec<Row>) {
    for f in 0..design.factors.len() {
        for g in f + 1..design.factors.len() {
            let d = effects::interaction_rounds(&design.cells, values, f, g, m.scale());
            let (a, b) = (&design.factors[f], &design.factors[g]);
            if let Some(e) = effects::estimate(&d, m.scale(), 1.0, 1.0, row_seed(rows)) {
                rows.push(Row {
                    entry: key.to_string(),
                    metric: m,
                    factor: format!("{}×{}", a.knob.name, b.knob.name),
                    level: format!("{}={} with {}={}", a.knob.name, a.levels[1], b.knob.name, b.levels[1]),
                    baseline: format!("{}={} with {}={}", a.knob.name, a.levels[1], b.knob.name, b.levels[0]),
                    baseline_value: f64::NAN,
                    level_value: f64::NAN,
                    scale: m.scale(),
                    estimate: e,
                    interaction: true,
                });
            }
        }
    }
}

/// Ranked: material first, then small, then none; within, by size.
fn rank(rows: &mut [Row]) {
    let rank = |v: Verdict| match v {
        Verdict::Material => 0,
        Verdict::Small => 1,
        Verdict::NoneSeen => 2,
    };
    let size = |r: &Row| match r.scale {
        Scale::Log => (1.0 + r.estimate.effect).max(1e-12).ln().abs(),
        Scale::Linear => r.estimate.effect.abs() * 1e3,
    };
    rows.sort_by(|a, b| rank(a.estimate.verdict).cmp(&rank(b.estimate.verdict)).then(size(b).total_cmp(&size(a))));
}

/// A latency effect is shown as a ratio (`×144.5`) rather than a percentage
/// (`+14350 %`) once the ratio reaches this factor either way (×2 or ×0.5:
/// +100 % / −50 %); below it, as a percentage (docs/factors.md).
pub(crate) const RATIO_FROM: f64 = 2.0;

/// Whether a log-scale row (its effect and interval ends, as ratio − 1) is
/// shown as ratios: any of them at or beyond [`RATIO_FROM`] either way.
pub(crate) fn as_ratio(xs: &[f64]) -> bool {
    xs.iter().any(|x| {
        let r = 1.0 + x;
        r >= RATIO_FROM || r <= 1.0 / RATIO_FROM
    })
}

/// `×144.5`, `×3.11`, `×0.42`, `×0.0069` for a log-scale effect (ratio − 1).
pub(crate) fn fmt_ratio(x: f64) -> String {
    let r = (1.0 + x).max(0.0);
    let digits = if r >= 10.0 {
        1
    } else if r >= 0.1 || r == 0.0 {
        2
    } else {
        // Two significant digits.
        (1.0 - r.log10().floor()) as usize
    };
    format!("×{r:.digits$}")
}

/// `−40 %` / `+3.1 %` for a log-scale effect, `×144.5` past [`RATIO_FROM`];
/// `+0.12 pp` for a miss ratio.
pub(crate) fn fmt_effect(x: f64, scale: Scale) -> String {
    match scale {
        Scale::Log if as_ratio(&[x]) => fmt_ratio(x),
        Scale::Log => fmt_percent(x),
        Scale::Linear => format!("{}{:.3} pp", if x < 0.0 { "−" } else { "+" }, (x * 100.0).abs()),
    }
}

fn fmt_percent(x: f64) -> String {
    let p = x * 100.0;
    let digits = if p.abs() >= 10.0 { 0 } else { 1 };
    format!("{}{:.*} %", if p < 0.0 { "−" } else { "+" }, digits, p.abs())
}

/// `[−52, −31]` (percent) or `[−0.100, +0.020] pp`; with `ratio`, `[×102.6, ×203.6]`.
fn fmt_interval_as(lo: f64, hi: f64, scale: Scale, ratio: bool) -> String {
    match scale {
        Scale::Log if ratio => format!("[{}, {}]", fmt_ratio(lo), fmt_ratio(hi)),
        Scale::Log => format!("[{}, {}]", fmt_percent(lo).trim_end_matches(" %"), fmt_percent(hi).trim_end_matches(" %")),
        Scale::Linear => {
            let one = |x: f64| fmt_effect(x, scale).trim_end_matches(" pp").to_string();
            format!("[{}, {}] pp", one(lo), one(hi))
        }
    }
}

/// An estimate's effect and 95 % interval as shown in one row: all three
/// as ratios when any of them is at or past [`RATIO_FROM`] either way
/// (`×144.5 [×102.6, ×203.6]`), else as percentages (`+37 % [−51, +81]`).
pub(crate) fn fmt_estimate(e: &Estimate, scale: Scale) -> (String, String) {
    let ratio = scale == Scale::Log && as_ratio(&[e.effect, e.lo, e.hi]);
    let effect = match scale {
        Scale::Log if ratio => fmt_ratio(e.effect),
        Scale::Log => fmt_percent(e.effect),
        Scale::Linear => fmt_effect(e.effect, scale),
    };
    (effect, fmt_interval_as(e.lo, e.hi, scale, ratio))
}

/// The sentence doctor cites: `measured: −40 % p99.9 [−52, −31], experiment fx-…`.
pub(crate) fn citation(r: &Row, experiment: &str) -> String {
    let (effect, interval) = fmt_estimate(&r.estimate, r.scale);
    format!(
        "measured: {effect} {} [{}] of {} for {}={} vs {} ({}), experiment {experiment}",
        r.metric.name(),
        interval.trim_end_matches(" pp").trim_start_matches('[').trim_end_matches(']'),
        r.entry,
        r.factor,
        r.level,
        r.baseline,
        r.estimate.verdict.word()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(effect: f64, lo: f64, hi: f64) -> Estimate {
        Estimate { effect, lo, hi, test_lo: lo, test_hi: hi, rounds: 5, verdict: Verdict::Material }
    }

    #[test]
    fn effects_are_formatted_as_percentages() {
        assert_eq!(fmt_effect(-0.4, Scale::Log), "−40 %");
        assert_eq!(fmt_effect(0.031, Scale::Log), "+3.1 %");
        assert_eq!(fmt_estimate(&est(-0.4, -0.45, -0.31), Scale::Log).1, "[−45, −31]");
        assert_eq!(fmt_estimate(&est(-0.4, -0.52, -0.31), Scale::Log), ("×0.60".into(), "[×0.48, ×0.69]".into()));
        assert_eq!(fmt_effect(0.0012, Scale::Linear), "+0.120 pp");
        assert_eq!(fmt_estimate(&est(0.37, -0.49, 0.81), Scale::Log), ("+37 %".into(), "[−49, +81]".into()));
        // A miss ratio stays in percentage points however large.
        assert_eq!(fmt_estimate(&est(0.5, 0.2, 0.9), Scale::Linear), ("+50.000 pp".into(), "[+20.000, +90.000] pp".into()));
    }

    /// README's `+14350 % [+10158, +20257]` reads ×144.5 [×102.6, ×203.6];
    /// the bound is a factor of 2 either way, and a row is one form throughout.
    #[test]
    fn large_effects_are_formatted_as_ratios() {
        assert_eq!(fmt_estimate(&est(143.5, 101.58, 202.57), Scale::Log), ("×144.5".into(), "[×102.6, ×203.6]".into()));
        assert_eq!(fmt_estimate(&est(2.11, 0.88, 4.38), Scale::Log), ("×3.11".into(), "[×1.88, ×5.38]".into()));
        // Just under the bound either way: percentages.
        assert_eq!(fmt_estimate(&est(0.99, 0.5, 0.999), Scale::Log).0, "+99 %");
        assert_eq!(fmt_estimate(&est(-0.49, -0.499, -0.3), Scale::Log).0, "−49 %");
        // At the bound: ratios, also when only an interval end reaches it.
        assert_eq!(fmt_effect(1.0, Scale::Log), "×2.00");
        assert_eq!(fmt_effect(-0.5, Scale::Log), "×0.50");
        assert_eq!(fmt_estimate(&est(0.37, -0.51, 2.81), Scale::Log), ("×1.37".into(), "[×0.49, ×3.81]".into()));
        // Large reductions keep two significant digits instead of −99 %.
        assert_eq!(fmt_effect(-0.9931, Scale::Log), "×0.0069");
        assert_eq!(fmt_effect(-0.95, Scale::Log), "×0.050");
        let r = Row {
            entry: "timer/cpu".into(),
            metric: Metric::P99,
            factor: "policy".into(),
            level: "other".into(),
            baseline: "fifo".into(),
            baseline_value: 1.0,
            level_value: 144.5,
            scale: Scale::Log,
            estimate: est(143.5, 101.58, 202.57),
            interaction: false,
        };
        assert_eq!(citation(&r, "fx-1"), "measured: ×144.5 p99 [×102.6, ×203.6] of timer/cpu for policy=other vs fifo (material), experiment fx-1");
    }
}
