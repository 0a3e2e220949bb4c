//! The experiment's design: the factors and their levels, the cells to run
//! and the order to run them in.
//!
//! - **Full factorial** while it stays small: every combination of levels,
//!   at most [`MAX_FULL_CELLS`] cells (e.g. four two-level factors). Main
//!   effects average over the other factors' levels and two-factor
//!   interactions can be estimated.
//! - **One factor at a time** past that: the baseline cell (every factor at
//!   its first level) and, for each factor, one cell per other level with
//!   the rest at baseline — 1 + Σ(levels − 1) cells. Main effects are then
//!   measured at the baseline only and interactions cannot be estimated
//!   (the report says so).
//!
//! **Rounds.** Every round runs every cell once, in an order shuffled anew
//! for each round (seeded, recorded), so the host's drift and bursts spread
//! over all cells instead of landing on the ones that ran last; effects are
//! estimated within rounds (`effects`).

use serde::{Deserialize, Serialize};

use super::effects::Rng;
use super::knobs::{self, Kind, Knob};
use crate::error::BadInput;

/// Largest full factorial run; past it, one factor at a time.
pub(crate) const MAX_FULL_CELLS: usize = 16;
/// Levels per factor.
pub(crate) const MAX_LEVELS: usize = 8;
/// Factors per experiment.
pub(crate) const MAX_FACTORS: usize = 8;

/// One factor: a knob and the levels to compare; the first is the baseline.
#[derive(Debug, Clone)]
pub(crate) struct Factor {
    pub(crate) knob: Knob,
    pub(crate) levels: Vec<String>,
}

/// `NAME=L1,L2[,...]`, checked: a known knob, 2-8 distinct levels, each
/// one the knob takes (host-dependent checks come later, in `commands::factors`).
pub(crate) fn parse_factor(s: &str) -> Result<Factor, BadInput> {
    let Some((name, levels)) = s.split_once('=') else {
        return Err(BadInput(format!(
            "--factor {s:?}: expected NAME=LEVEL,LEVEL (e.g. --factor dma-latency=held,released); knobs: {}",
            knobs::names().join(", ")
        )));
    };
    let knob = knobs::find(name.trim())?;
    // A load level may itself hold commas inside cmd:"..." quotes: split as --load does.
    let levels: Vec<String> = match knob.kind {
        Kind::Run(knobs::RunSetting::Load) => crate::load::split_load_list(levels).map_err(|e| BadInput(format!("--factor {s}: {e}")))?,
        _ => levels.split(',').map(|l| l.trim().to_string()).collect(),
    };
    if levels.len() < 2 || levels.len() > MAX_LEVELS || levels.iter().any(String::is_empty) {
        return Err(BadInput(format!(
            "--factor {s}: give 2 to {MAX_LEVELS} non-empty levels, comma-separated; {}'s levels: {}",
            knob.name,
            knob.levels_help()
        )));
    }
    for (i, l) in levels.iter().enumerate() {
        if levels[..i].contains(l) {
            return Err(BadInput(format!("--factor {s}: level {l} is given twice")));
        }
        match knob.kind {
            Kind::Run(r) => r.check(l)?,
            Kind::Boot(b) => knobs::check_boot_level(knob.name, b, l)?,
            Kind::Host(_) => {}
        }
    }
    Ok(Factor { knob, levels })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Shape {
    FullFactorial,
    OneFactorAtATime,
}

impl Shape {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Shape::FullFactorial => "full factorial",
            Shape::OneFactorAtATime => "one factor at a time from the baseline",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Design {
    pub(crate) factors: Vec<Factor>,
    /// Each cell: a level index per factor.
    pub(crate) cells: Vec<Vec<usize>>,
    pub(crate) shape: Shape,
}

impl Design {
    pub(crate) fn new(factors: Vec<Factor>) -> Result<Design, BadInput> {
        if factors.is_empty() {
            return Err(BadInput("rtscope factors: name at least one --factor NAME=LEVEL,LEVEL (see docs/factors.md)".into()));
        }
        if factors.len() > MAX_FACTORS {
            return Err(BadInput(format!("rtscope factors: at most {MAX_FACTORS} factors in one experiment ({} given)", factors.len())));
        }
        for (i, f) in factors.iter().enumerate() {
            if factors[..i].iter().any(|g| g.knob.name == f.knob.name) {
                return Err(BadInput(format!("--factor {}: given twice; give all its levels in one --factor", f.knob.name)));
            }
        }
        let full: usize = factors.iter().map(|f| f.levels.len()).product();
        let (cells, shape) = if full <= MAX_FULL_CELLS {
            let mut cells: Vec<Vec<usize>> = vec![vec![]];
            for f in &factors {
                cells = cells.into_iter().flat_map(|c| (0..f.levels.len()).map(move |l| [c.clone(), vec![l]].concat())).collect();
            }
            (cells, Shape::FullFactorial)
        } else {
            let mut cells = vec![vec![0; factors.len()]];
            for (i, f) in factors.iter().enumerate() {
                for l in 1..f.levels.len() {
                    let mut c = vec![0; factors.len()];
                    c[i] = l;
                    cells.push(c);
                }
            }
            (cells, Shape::OneFactorAtATime)
        };
        Ok(Design { factors, cells, shape })
    }

    /// `(round, cell)` in the order to run: every round every cell once,
    /// shuffled per round.
    pub(crate) fn schedule(&self, rounds: usize, seed: u64) -> Vec<(usize, usize)> {
        let mut rng = Rng::new(seed);
        let mut out = Vec::with_capacity(rounds * self.cells.len());
        for r in 0..rounds {
            let mut order: Vec<usize> = (0..self.cells.len()).collect();
            rng.shuffle(&mut order);
            out.extend(order.into_iter().map(|c| (r, c)));
        }
        out
    }

    /// The level of factor `f` in cell `c`.
    pub(crate) fn level(&self, c: usize, f: usize) -> &str {
        &self.factors[f].levels[self.cells[c][f]]
    }

    /// `dma-latency=held printk=4`.
    pub(crate) fn cell_label(&self, c: usize) -> String {
        self.factors.iter().enumerate().map(|(f, x)| format!("{}={}", x.knob.name, self.level(c, f))).collect::<Vec<_>>().join(" ")
    }

    /// The history tags of one run: the experiment, its round, each level
    /// (`fx-20261127T010203Z`, `fx-…/round:3`, `fx-…/printk:4`). A level
    /// whose text is no tag (a `cmd:` load) is tagged by its index.
    pub(crate) fn tags(&self, exp: &str, round: usize, c: usize) -> Vec<String> {
        let mut t = vec![exp.to_string(), format!("{exp}/round:{}", round + 1)];
        for (f, x) in self.factors.iter().enumerate() {
            let level = self.level(c, f);
            let ok = level.chars().all(|ch| ch.is_alphanumeric() || ".-_+".contains(ch));
            t.push(if ok { format!("{exp}/{}:{level}", x.knob.name) } else { format!("{exp}/{}:#{}", x.knob.name, self.cells[c][f] + 1) });
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(specs: &[&str]) -> Design {
        Design::new(specs.iter().map(|s| parse_factor(s).unwrap()).collect()).unwrap()
    }

    #[test]
    fn small_designs_are_full_factorial() {
        let d = design(&["dma-latency=held,released", "printk=4,1", "thp=never,madvise"]);
        assert_eq!(d.shape, Shape::FullFactorial);
        assert_eq!(d.cells.len(), 8);
        assert_eq!(d.cell_label(0), "dma-latency=held printk=4 thp=never");
    }

    #[test]
    fn large_designs_go_one_factor_at_a_time() {
        let d = design(&["dma-latency=held,released", "printk=4,1", "thp=never,madvise,always", "ksm=0,1", "timer-migration=0,1"]);
        assert_eq!(d.shape, Shape::OneFactorAtATime);
        assert_eq!(d.cells.len(), 1 + 1 + 1 + 2 + 1 + 1);
    }

    #[test]
    fn every_round_runs_every_cell_in_its_own_order() {
        let d = design(&["dma-latency=held,released", "printk=4,1"]);
        let s = d.schedule(6, 42);
        assert_eq!(s.len(), 24);
        let orders: Vec<Vec<usize>> = (0..6).map(|r| s.iter().filter(|x| x.0 == r).map(|x| x.1).collect()).collect();
        for o in &orders {
            let mut x = o.clone();
            x.sort_unstable();
            assert_eq!(x, vec![0, 1, 2, 3]);
        }
        assert!(orders.iter().any(|o| o != &orders[0]), "the order is shuffled per round");
        assert_eq!(s, d.schedule(6, 42), "a seed gives its order again");
    }

    #[test]
    fn bad_factors_name_what_is_wrong() {
        assert!(parse_factor("nosuch=1,2").unwrap_err().0.contains("no such knob"));
        assert!(parse_factor("printk=4").unwrap_err().0.contains("2 to"));
        assert!(parse_factor("printk=4,4").unwrap_err().0.contains("twice"));
        assert!(parse_factor("priority=0,50").unwrap_err().0.contains("1-99"));
        assert!(parse_factor("dma-latency").unwrap_err().0.contains("NAME=LEVEL"));
        let d = design(&["load=idle,cpu"]);
        assert_eq!(d.tags("fx-1", 0, 1), vec!["fx-1", "fx-1/round:1", "fx-1/load:cpu"]);
    }
}
