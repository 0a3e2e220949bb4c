//! Which entries of the runs share a row of the comparison (`--match`,
//! `--phases`).
//!
//! Every merged entry gets a slot name; entries of the same probe, variant
//! and slot share a row. By default (`MatchBy::Auto`) the slot is the phase
//! name, and per probe the one loaded (non-idle) phase each run has and the
//! others lack are put in one slot; `--match phase` keeps phase names apart;
//! `--match probe` slots by order within each run. `--phases A=B` renames
//! phase B of the later inputs to A before any of this. Rows that hold
//! entries of different phases get a note saying why.

use serde::Serialize;

use crate::error::BadInput;
use crate::model::ProbeResult;

/// How entries of different runs are put in one row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MatchBy {
    /// By probe, variant and phase; then, per probe, the one loaded
    /// (non-idle) phase each run has and the others lack are paired.
    #[default]
    Auto,
    /// Only entries of the same phase name.
    Phase,
    /// By probe and variant, the phases in their order in each run.
    Probe,
}

/// `--match` and `--phases A=B,...` (phase A of the first input is compared
/// with phase B of the others).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Pairing {
    pub(crate) by: MatchBy,
    pub(crate) phases: Vec<(String, String)>,
}

/// One row of the comparison: which entry of each run (an index into
/// that run's merged entries) it holds.
pub(crate) struct Slotted {
    /// Probe, variant and slot.
    pub(crate) key: (String, Option<String>, String),
    pub(crate) cells: Vec<Option<usize>>,
}

/// The slot name of entry `j` of run `i`, for every entry of every run.
type Slots = Vec<Vec<String>>;

/// The slot of the entries `MatchBy::Auto` pairs across phase names (no
/// phase name holds a NUL, so it meets no phase's slot).
const PAIRED: &str = "\u{0}paired";

/// Put the merged entries of every run into rows, as `pairing` says; the
/// notes say which rows hold entries of different phases and why.
pub(crate) fn pair(per_run: &[Vec<&ProbeResult>], systems: &[String], pairing: &Pairing) -> Result<(Vec<Slotted>, Vec<String>), BadInput> {
    check_phase_names(per_run, systems, pairing)?;
    let mut slot = slots_by_phase(per_run, pairing);
    let (by, head) = effective_match(per_run, pairing);
    let why = match by {
        MatchBy::Phase => "",
        MatchBy::Probe => {
            slot_by_order(per_run, &mut slot);
            check_same_phase_counts(per_run, systems)?;
            if pairing.by == MatchBy::Probe {
                "by their order under --match probe"
            } else {
                "each input has one phase"
            }
        }
        MatchBy::Auto => {
            pair_lone_loaded_phases(per_run, &mut slot);
            "the one loaded phase of each that the others lack (--match phase keeps them apart, --phases FIRST=OTHER chooses)"
        }
    };
    let rows = rows_of(per_run, &slot);
    // Pairing by probe for one-phase inputs: the one note above says it for every row.
    let notes = match head {
        Some(h) => vec![h],
        None => mixed_phase_notes(&rows, per_run, systems, pairing, why),
    };
    Ok((rows, notes))
}

/// Every `--phases A=B` names a phase A of the first input and a phase B of a later one.
fn check_phase_names(per_run: &[Vec<&ProbeResult>], systems: &[String], pairing: &Pairing) -> Result<(), BadInput> {
    for (a, b) in &pairing.phases {
        if !per_run[0].iter().any(|r| &r.phase == a) {
            let have: Vec<&str> = phases_of(&per_run[0]);
            return Err(BadInput(format!(
                "--phases {a}={b}: the first input ({}) has no phase '{a}' (it has: {}); name a phase of the first input left of '='",
                systems[0],
                have.join(", ")
            )));
        }
        if !per_run[1..].iter().any(|rs| rs.iter().any(|r| &r.phase == b)) {
            return Err(BadInput(format!("--phases {a}={b}: no input after the first has a phase '{b}'; name a phase of the other inputs right of '='")));
        }
    }
    Ok(())
}

/// The phase each entry is matched under: its own, except that `--phases`
/// maps B of the later inputs to A.
fn slots_by_phase(per_run: &[Vec<&ProbeResult>], pairing: &Pairing) -> Slots {
    let slot_of = |i: usize, r: &ProbeResult| -> String {
        if i > 0 {
            if let Some((a, _)) = pairing.phases.iter().find(|(_, b)| b == &r.phase) {
                return a.clone();
            }
        }
        r.phase.clone()
    };
    per_run.iter().enumerate().map(|(i, rs)| rs.iter().map(|r| slot_of(i, r)).collect()).collect()
}

/// The rule that applies, and the note above the table when it is not the
/// one asked for. Inputs of one phase each (`run --load idle` against `run
/// --load cpu`) have nothing to pair by phase name: by default they pair by
/// probe, and the note says so.
fn effective_match(per_run: &[Vec<&ProbeResult>], pairing: &Pairing) -> (MatchBy, Option<String>) {
    match single_phases(per_run) {
        Some(ph) if pairing.by == MatchBy::Auto && pairing.phases.is_empty() && ph.iter().any(|p| p != &ph[0]) => {
            let note = format!("paired by probe: {} (each input has one phase; --match phase keeps them apart)", ph.join(" ↔ "));
            (MatchBy::Probe, Some(note))
        }
        _ => (pairing.by, None),
    }
}

fn probe_variant(r: &ProbeResult) -> (String, Option<String>) {
    (r.probe.clone(), r.variant.clone())
}

/// `--match probe`: the k-th entry of a probe/variant in each run shares slot `#k`.
fn slot_by_order(per_run: &[Vec<&ProbeResult>], slot: &mut Slots) {
    for (i, rs) in per_run.iter().enumerate() {
        for j in 0..rs.len() {
            let k = rs[..j].iter().filter(|r| probe_variant(r) == probe_variant(rs[j])).count();
            slot[i][j] = format!("#{k}");
        }
    }
}

/// Under `--match probe`, every run with a probe must have it in as many phases.
fn check_same_phase_counts(per_run: &[Vec<&ProbeResult>], systems: &[String]) -> Result<(), BadInput> {
    let seen: Vec<(String, Option<String>)> = crate::units::first_seen(per_run.iter().flatten().map(|r| probe_variant(r)));
    for k in &seen {
        let counts: Vec<(usize, Vec<&str>)> = per_run
            .iter()
            .enumerate()
            .map(|(i, rs)| (i, rs.iter().filter(|r| &probe_variant(r) == k).map(|r| r.phase.as_str()).collect::<Vec<&str>>()))
            .filter(|(_, ph)| !ph.is_empty())
            .collect();
        if counts.iter().any(|(_, ph)| ph.len() != counts[0].1.len()) {
            let list: Vec<String> = counts.iter().map(|(i, ph)| format!("{} has {} ({})", systems[*i], ph.len(), ph.join(", "))).collect();
            return Err(BadInput(format!(
                "--match probe: {} is in a different number of phases per input: {}; pair the phases by name with --phases FIRST=OTHER,...",
                k.0,
                list.join("; ")
            )));
        }
    }
    Ok(())
}

/// `MatchBy::Auto`: per probe/variant, when every run has exactly one
/// loaded (non-idle) entry whose slot not every run has, those entries
/// share one slot.
fn pair_lone_loaded_phases(per_run: &[Vec<&ProbeResult>], slot: &mut Slots) {
    let n = per_run.len();
    let keys: Vec<(String, Option<String>)> = crate::units::first_seen(per_run.iter().flatten().map(|r| probe_variant(r)));
    for k in &keys {
        let in_every_run = |slot: &Slots, s: &str| (0..n).all(|o| (0..per_run[o].len()).any(|m| probe_variant(per_run[o][m]) == *k && slot[o][m] == s));
        // Per run: the entries of this probe whose phase not every run has.
        let left: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                (0..per_run[i].len())
                    .filter(|&j| &probe_variant(per_run[i][j]) == k && slot[i][j] != "idle")
                    .filter(|&j| !in_every_run(slot, &slot[i][j]))
                    .collect()
            })
            .collect();
        if left.iter().all(|l| l.len() == 1) {
            for (i, l) in left.iter().enumerate() {
                slot[i][l[0]] = PAIRED.into();
            }
        }
    }
}

/// The rows: entries of the same probe, variant and slot, in first-seen order.
fn rows_of(per_run: &[Vec<&ProbeResult>], slot: &Slots) -> Vec<Slotted> {
    let n = per_run.len();
    let mut rows: Vec<Slotted> = Vec::new();
    for (i, rs) in per_run.iter().enumerate() {
        for (j, r) in rs.iter().enumerate() {
            let key = (r.probe.clone(), r.variant.clone(), slot[i][j].clone());
            match rows.iter_mut().find(|x| x.key == key) {
                Some(row) => row.cells[i] = Some(j),
                None => {
                    let mut cells = vec![None; n];
                    cells[i] = Some(j);
                    rows.push(Slotted { key, cells });
                }
            }
        }
    }
    rows
}

/// A note for every row that holds entries of different phases: which, and why (`why`,
/// or "as --phases says" when a `--phases` pair put them together).
fn mixed_phase_notes(rows: &[Slotted], per_run: &[Vec<&ProbeResult>], systems: &[String], pairing: &Pairing, why: &str) -> Vec<String> {
    let mut notes = Vec::new();
    for row in rows {
        let phases: Vec<(usize, &str)> = row.cells.iter().enumerate().filter_map(|(i, c)| c.map(|j| (i, per_run[i][j].phase.as_str()))).collect();
        if phases.iter().any(|(_, p)| *p != phases[0].1) {
            let list: Vec<String> = phases.iter().map(|(i, p)| format!("'{p}' of {}", systems[*i])).collect();
            let reason = if pairing.phases.iter().any(|(a, b)| phases.iter().any(|(_, p)| p == a) && phases.iter().any(|(_, p)| p == b)) {
                "as --phases says"
            } else {
                why
            };
            notes.push(format!("{}: phase {} compared: {reason}", row.key.0, list.join(" with ")));
        }
    }
    notes
}

/// The one phase of every input, when each has exactly one.
fn single_phases(per_run: &[Vec<&ProbeResult>]) -> Option<Vec<String>> {
    per_run
        .iter()
        .map(|rs| match phases_of(rs).as_slice() {
            [one] => Some(one.to_string()),
            _ => None,
        })
        .collect()
}

fn phases_of<'a>(rs: &[&'a ProbeResult]) -> Vec<&'a str> {
    crate::units::first_seen(rs.iter().map(|r| r.phase.as_str()))
}
