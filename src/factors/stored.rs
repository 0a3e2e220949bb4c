//! Experiments in the history: the design record stored with each one (the
//! history's `experiments` table, docs/schema.md) and the runs tagged with
//! it, read back for `rtscope factors --analyse` and for doctor's citations.
//!
//! The record says what the experiment was — its factors and levels (the
//! first the baseline), cells, shape, rounds and seed — so an analysis never
//! re-reads a run's command line. Experiments stored before the record
//! existed (schema version < 5) have none: their design is read, as it was
//! then, from the `--factor` arguments of their first run's command line.

use serde::{Deserialize, Serialize};

use super::design::{parse_factor, Design, Factor, Shape};
use super::{knobs, Observation};
use crate::error::BadInput;
use crate::store::Store;

/// Version of the design record (docs/schema.md, "Experiment design records").
pub(crate) const RECORD_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FactorRecord {
    name: String,
    levels: Vec<String>,
}

/// An experiment's design as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    version: u32,
    experiment: String,
    factors: Vec<FactorRecord>,
    /// Each factor's baseline level (its first).
    baseline: Vec<String>,
    shape: Shape,
    /// Each cell: a level index per factor.
    cells: Vec<Vec<usize>>,
    rounds: usize,
    seed: u64,
}

impl Record {
    pub(crate) fn new(experiment: &str, design: &Design, rounds: usize, seed: u64) -> Record {
        Record {
            version: RECORD_VERSION,
            experiment: experiment.to_string(),
            factors: design.factors.iter().map(|f| FactorRecord { name: f.knob.name.to_string(), levels: f.levels.clone() }).collect(),
            baseline: design.factors.iter().map(|f| f.levels[0].clone()).collect(),
            shape: design.shape,
            cells: design.cells.clone(),
            rounds,
            seed,
        }
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a design record serialises")
    }

    /// The record's text as stored for `experiment`, checked: its knobs
    /// known, every cell's levels within its factors'. The levels are not
    /// checked against this host (the experiment may have run elsewhere).
    pub(crate) fn parse(experiment: &str, text: &str) -> Result<(Design, usize, u64), BadInput> {
        let bad = |why: String| BadInput(format!("--analyse {experiment}: its design record in the history {why}"));
        let r: Record = serde_json::from_str(text).map_err(|e| bad(format!("does not parse ({e})")))?;
        if r.version != RECORD_VERSION {
            return Err(bad(format!("is version {}, this rtscope reads version {RECORD_VERSION}; use a newer rtscope", r.version)));
        }
        let factors = r
            .factors
            .iter()
            .map(|f| Ok(Factor { knob: knobs::find(&f.name).map_err(|e| bad(e.0))?, levels: f.levels.clone() }))
            .collect::<Result<Vec<_>, BadInput>>()?;
        let fits = |c: &Vec<usize>| c.len() == factors.len() && c.iter().zip(&factors).all(|(l, f)| *l < f.levels.len());
        if factors.iter().any(|f| f.levels.len() < 2) || r.cells.is_empty() || !r.cells.iter().all(fits) {
            return Err(bad("names levels its factors do not have".into()));
        }
        Ok((Design { factors, cells: r.cells, shape: r.shape }, r.rounds, r.seed))
    }
}

/// Store `design`'s record for `experiment`.
pub(crate) fn save(store: &mut Store, experiment: &str, design: &Design, rounds: usize, seed: u64) -> anyhow::Result<()> {
    store.save_design(experiment, &Record::new(experiment, design, rounds, seed).to_json())
}

/// The `--factor` arguments of a stored run's command line (experiments
/// stored before the design record).
fn factor_args(cmdline: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = cmdline.iter();
    while let Some(a) = it.next() {
        if a == "--factor" {
            if let Some(v) = it.next() {
                out.push(v.clone());
            }
        } else if let Some(v) = a.strip_prefix("--factor=") {
            out.push(v.to_string());
        }
    }
    out
}

/// A stored experiment: its design (from its record, or for an experiment
/// stored before the record from its first run's command line), each run's
/// round and cell (from its tags), the rounds taken and the seed (when
/// recorded).
pub(crate) fn load(store: &mut Store, exp: &str) -> anyhow::Result<(Design, Vec<Observation>, usize, Option<u64>)> {
    let ids = store.ids_with_tag(exp)?;
    if ids.is_empty() {
        return Err(BadInput(format!("--analyse {exp}: no stored run has this tag (in {}); `rtscope history` lists tags", store.shown())).into());
    }
    let (design, seed) = match store.design(exp)? {
        Some(text) => {
            let (d, _, seed) = Record::parse(exp, &text)?;
            (d, Some(seed))
        }
        None => {
            let first = store.load(ids[0])?;
            let factors = factor_args(&first.command_line).iter().map(|s| parse_factor(s)).collect::<Result<Vec<_>, _>>()?;
            (Design::new(factors)?, None)
        }
    };
    let mut obs = Vec::new();
    let mut rounds = 0;
    for id in ids {
        let tags = store.tags(id)?;
        let get = |k: &str| tags.iter().find_map(|t| t.strip_prefix(&format!("{exp}/{k}:")).map(str::to_string));
        let Some(round) = get("round").and_then(|r| r.parse::<usize>().ok()).filter(|r| *r >= 1) else { continue };
        let levels: Option<Vec<usize>> = design
            .factors
            .iter()
            .map(|f| {
                let l = get(f.knob.name)?;
                match l.strip_prefix('#') {
                    Some(i) => i.parse::<usize>().ok().map(|i| i - 1),
                    None => f.levels.iter().position(|x| *x == l),
                }
            })
            .collect();
        let Some(cell) = levels.and_then(|l| design.cells.iter().position(|c| *c == l)) else { continue };
        rounds = rounds.max(round);
        obs.push(Observation { round: round - 1, cell, run_id: Some(id), run: store.load(id)? });
    }
    Ok((design, obs, rounds, seed))
}

/// What the history's experiments measured about `knob` on `hostname`: the
/// strongest effect of the newest experiment that varied it, as doctor
/// cites it. Experiments are found by their tags (`fx-…`).
pub(crate) fn measured_for_doctor(store: &mut Store, hostname: &str, knobs: &[&str]) -> Vec<(String, String)> {
    let Ok(facets) = store.facets() else { return Vec::new() };
    let mut exps: Vec<&String> = facets.tags.iter().filter(|t| t.starts_with("fx-") && !t.contains('/')).collect();
    exps.sort();
    exps.reverse();
    let mut out: Vec<(String, String)> = Vec::new();
    for exp in exps {
        let Ok((design, obs, rounds, _)) = load(store, exp) else { continue };
        if obs.first().is_none_or(|o| o.run.host.hostname != hostname) {
            continue;
        }
        if !design.factors.iter().any(|f| knobs.contains(&f.knob.name) && !out.iter().any(|(k, _)| k == f.knob.name)) {
            continue;
        }
        let a = super::analyse(exp, &design, &obs, rounds, 0, None, false);
        for f in &design.factors {
            if !knobs.contains(&f.knob.name) || out.iter().any(|(k, _)| k == f.knob.name) {
                continue;
            }
            // Ranked already: the first row of this factor is its strongest.
            if let Some(r) = a.effects.iter().find(|r| !r.interaction && r.factor == f.knob.name) {
                out.push((f.knob.name.to_string(), super::citation(r, exp)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_gives_its_design_back() {
        let d = Design::new(["cpu=0,1", "printk=7,1,4"].iter().map(|s| parse_factor(s).unwrap()).collect()).unwrap();
        let text = Record::new("fx-1", &d, 5, 42).to_json();
        let (back, rounds, seed) = Record::parse("fx-1", &text).unwrap();
        assert_eq!((rounds, seed, back.shape, back.cells.clone()), (5, 42, d.shape, d.cells.clone()));
        assert_eq!(
            back.factors.iter().map(|f| (f.knob.name, f.levels.clone())).collect::<Vec<_>>(),
            d.factors.iter().map(|f| (f.knob.name, f.levels.clone())).collect::<Vec<_>>()
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["baseline"], serde_json::json!(["0", "7"]));
        assert!(Record::parse("fx-1", &text.replace("\"printk\"", "\"nosuch\"")).unwrap_err().0.contains("no such knob"));
        assert!(Record::parse("fx-1", &text.replace("[1,2]", "[1,9]")).unwrap_err().0.contains("levels"));
        assert!(Record::parse("fx-1", "{").unwrap_err().0.contains("does not parse"));
    }

    #[test]
    fn factor_args_of_an_old_command_line() {
        let line: Vec<String> = "rtscope factors --factor printk=7,1 --factor=ksm=0,1 -D 1s".split_whitespace().map(String::from).collect();
        assert_eq!(factor_args(&line), ["printk=7,1", "ksm=0,1"]);
    }
}
