//! Scenarios: an experiment written down as TOML (`rtscope run FILE.toml`),
//! and the built-in presets, which are the same TOML embedded in the binary
//! and parsed by the same code (so a preset and a scenario file cannot
//! drift). The format is documented in docs/scenarios.md.
//!
//! Parsing is strict (`deny_unknown_fields`): a typo is an error, not a
//! silently ignored key. Every error names the file, the line and column (from
//! toml's spans, kept for names with [`toml::Spanned`]) and what is allowed.
//! [`Scenario`] holds the checked file; the face (`cli::load::build`) merges it
//! with the command line into the run plan and the [`Experiment`].

pub(crate) mod presets;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

use crate::error::BadInput;
use crate::load::{parse_load, Engine, LoadKind, PhaseSpec};
use crate::model::ScenarioRecord;

pub(crate) use crate::plan::Table;

/// A duration in a scenario: a string with a unit ("30s", "500ms", "2h"), or
/// a bare number of seconds. `allow_zero` types accept "0".
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Dur<const BARE_IS_US: bool, const ALLOW_ZERO: bool>(pub u64);

/// A duration (bare number = seconds, > 0).
pub(crate) type Duration = Dur<false, false>;
/// A period (bare number = µs, as `-i`).
pub(crate) type Period = Dur<true, false>;
/// A wait that may be zero (settle, warm-up).
pub(crate) type Wait = Dur<false, true>;

impl<'de, const US: bool, const Z: bool> Deserialize<'de> for Dur<US, Z> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const US: bool, const Z: bool>;
        impl<'de, const US: bool, const Z: bool> Visitor<'de> for V<US, Z> {
            type Value = Dur<US, Z>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                if US {
                    f.write_str("a period such as \"250us\", \"1ms\" (a bare number is µs)")
                } else {
                    f.write_str("a duration such as \"500ms\", \"30s\", \"5m\" (a bare number is seconds)")
                }
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                let t = s.trim();
                if Z && t.trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
                    return Ok(Dur(0));
                }
                if t.starts_with('-') {
                    return Err(E::custom(format!("'{t}' is negative; durations must be positive, e.g. \"30s\"")));
                }
                let r = if US { crate::units::parse_interval(t) } else { crate::units::parse_duration(t) };
                r.map(Dur).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                if v < 0 {
                    return Err(E::custom(format!("{v} is negative; durations must be positive, e.g. \"30s\"")));
                }
                self.visit_str(&v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                if v < 0.0 {
                    return Err(E::custom(format!("{v} is negative; durations must be positive, e.g. \"30s\"")));
                }
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V::<US, Z>)
    }
}

/// The scenario file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioFile {
    pub(crate) name: Option<String>,
    /// One line for `rtscope presets`.
    pub(crate) description: Option<String>,
    /// The publication the scenario mirrors (presets): for the reader of
    /// the file; accepted so the key is not refused, not used by rtscope.
    #[allow(dead_code)]
    pub(crate) mirrors: Option<String>,
    /// Each probe run's length, in each phase.
    pub(crate) duration: Option<Duration>,
    /// Default probe period.
    pub(crate) interval: Option<Period>,
    pub(crate) warmup: Option<Wait>,
    pub(crate) settle: Option<Wait>,
    pub(crate) max_total: Option<Duration>,
    pub(crate) priority: Option<Spanned<u8>>,
    pub(crate) policy: Option<Spanned<String>>,
    /// `policy = "deadline"`: the SCHED_DEADLINE runtime per period (`--dl-runtime`).
    pub(crate) dl_runtime: Option<Spanned<Period>>,
    /// `policy = "deadline"`: the relative deadline (`--dl-deadline`).
    pub(crate) dl_deadline: Option<Spanned<Period>>,
    pub(crate) threads: Option<Spanned<u32>>,
    /// CPUs to measure on, e.g. "0,2-3".
    pub(crate) affinity: Option<Spanned<String>>,
    /// Result file.
    pub(crate) output: Option<PathBuf>,
    pub(crate) table: Option<Table>,
    /// Bin width for `table = "bins"`.
    pub(crate) bin: Option<Period>,
    #[serde(default)]
    pub(crate) tags: BTreeMap<String, String>,
    pub(crate) load: Option<LoadSection>,
    #[serde(default, rename = "phase")]
    pub(crate) phases: Vec<PhaseEntry>,
    #[serde(default, rename = "probe")]
    pub(crate) probes: Vec<ProbeFileEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadSection {
    pub(crate) engine: Option<Engine>,
    pub(crate) cpus: Option<Spanned<String>>,
    pub(crate) intensity: Option<Spanned<f64>>,
    pub(crate) dir: Option<Spanned<PathBuf>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PhaseEntry {
    pub(crate) name: Spanned<String>,
    /// Loads of the phase; omitted, the phase's name is its load.
    pub(crate) loads: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeFileEntry {
    pub(crate) name: Spanned<String>,
    pub(crate) interval: Option<Period>,
    /// Periods (e.g. ["10ms", "30ms", "50ms"]): the probe's own periods for
    /// the probes that take several (`measure::ProbeInfo::multi_period`), else one run of
    /// the probe per period (overrides `interval`).
    pub(crate) periods: Option<Vec<Period>>,
    pub(crate) duration: Option<Duration>,
    pub(crate) warmup: Option<Wait>,
}

/// A parsed and checked scenario.
#[derive(Debug)]
pub struct Scenario {
    pub(crate) file: ScenarioFile,
    pub(crate) phases: Vec<PhaseSpec>,
    /// Where it came from: a path, or `preset NAME`.
    pub(crate) label: String,
    pub(crate) text: String,
    pub(crate) is_preset: bool,
}

impl Scenario {
    pub(crate) fn name(&self) -> String {
        self.file.name.clone().unwrap_or_else(|| self.label.clone())
    }

    /// Error at a span of this scenario: "FILE: line L, column C: MSG".
    pub(crate) fn err_at(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> BadInput {
        err_at(&self.label, &self.text, span, msg)
    }

    pub(crate) fn record(&self) -> ScenarioRecord {
        ScenarioRecord {
            name: self.name(),
            source: if self.is_preset { "preset".into() } else { self.label.clone() },
            text: self.text.clone(),
            tags: self.file.tags.clone(),
        }
    }
}

const HINT: &str = "the scenario format is in docs/scenarios.md; `rtscope run --preset quick --dry-run` shows a valid plan";

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

fn err_at(label: &str, text: &str, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> BadInput {
    let (l, c) = line_col(text, span.start);
    BadInput(format!("{label}: line {l}, column {c}: {msg}"))
}

/// Parse and check a scenario's text. `label` names it in errors.
pub fn parse(text: &str, label: &str, is_preset: bool) -> Result<Scenario, BadInput> {
    let file = read_toml(text, label)?;
    check_name(&file, text, label)?;
    let phases = phases_of(&file, text, label)?;
    check_probes(&file, text, label)?;
    check_ranges(&file, text, label)?;
    Ok(Scenario { file, phases, label: label.to_string(), text: text.to_string(), is_preset })
}

/// The TOML as a [`ScenarioFile`]; a syntax or type error names the line,
/// the column and the field.
fn read_toml(text: &str, label: &str) -> Result<ScenarioFile, BadInput> {
    toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().to_string();
        match e.span() {
            Some(span) => {
                let field = field_at(text, span.start).map(|f| format!("field `{f}`: ")).unwrap_or_default();
                err_at(label, text, span, format!("{field}{msg}; {HINT}"))
            }
            None => BadInput(format!("{label}: {msg}; {HINT}")),
        }
    })
}

/// `name`, when given, is neither empty nor made of control characters.
fn check_name(file: &ScenarioFile, text: &str, label: &str) -> Result<(), BadInput> {
    if file.name.as_deref().is_some_and(|n| n.trim().is_empty() || n.chars().any(char::is_control)) {
        // The top-level `name =` line (before the first table header).
        let at = text
            .lines()
            .take_while(|l| !l.trim_start().starts_with('['))
            .scan(0usize, |off, l| {
                let start = *off;
                *off += l.len() + 1;
                Some((start, l))
            })
            .find(|(_, l)| l.trim_start().starts_with("name"))
            .map(|(o, l)| o + (l.len() - l.trim_start().len()))
            .unwrap_or(0);
        return Err(err_at(
            label,
            text,
            at..at + 4,
            "name: empty or with control characters; give the scenario a name (e.g. name = \"board-a-vs-load\") or leave `name` out to use the file name",
        ));
    }
    Ok(())
}

/// The phases with their loads (a phase without `loads` is named after its
/// load); none listed: one `idle` phase.
fn phases_of(file: &ScenarioFile, text: &str, label: &str) -> Result<Vec<PhaseSpec>, BadInput> {
    let mut phases: Vec<PhaseSpec> = Vec::new();
    let mut seen: BTreeMap<String, std::ops::Range<usize>> = BTreeMap::new();
    for p in &file.phases {
        let name = p.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(err_at(label, text, p.name.span(), "[[phase]] name is empty; name the phase, e.g. name = \"idle\""));
        }
        if let Some(first) = seen.get(&name) {
            let (l, _) = line_col(text, first.start);
            return Err(err_at(
                label,
                text,
                p.name.span(),
                format!("[[phase]] name: phase '{name}' appears twice (first at line {l}); phase names must be unique"),
            ));
        }
        seen.insert(name.clone(), p.name.span());
        let loads = match &p.loads {
            None => parse_load(&name)
                .map_err(|e| err_at(label, text, p.name.span(), format!("[[phase]] name: '{name}' is not a load, so give the phase `loads = [...]`; {e}")))?,
            Some(list) => {
                let mut v: Vec<LoadKind> = Vec::new();
                for l in list {
                    let kinds = parse_load(l.get_ref()).map_err(|e| err_at(label, text, l.span(), format!("[[phase]] loads: {e}")))?;
                    for k in kinds {
                        if !v.contains(&k) {
                            v.push(k);
                        }
                    }
                }
                v
            }
        };
        phases.push(PhaseSpec { name, loads, outside: false });
    }
    if phases.is_empty() {
        phases.push(PhaseSpec { name: "idle".into(), loads: vec![], outside: false });
    }
    Ok(phases)
}

/// At least one `[[probe]]`, each a known probe (and variant) with periods
/// when it lists them.
fn check_probes(file: &ScenarioFile, text: &str, label: &str) -> Result<(), BadInput> {
    if file.probes.is_empty() {
        return Err(BadInput(format!("{label}: no [[probe]] listed; add one, e.g.\n[[probe]]\nname = \"timer\"\n({HINT})")));
    }
    for p in &file.probes {
        let (name, sel) = crate::measure::split_spec(p.name.get_ref());
        if let Some(probe) = crate::measure::probe_by_name(name) {
            // The variant too, here, so the error names this line.
            crate::plan::probes::VariantSelection::default()
                .add(probe, sel)
                .map_err(|e| err_at(label, text, p.name.span(), format!("[[probe]] name: {}", e.0.trim_start_matches("--probe "))))?;
        } else {
            let names = crate::measure::names();
            return Err(err_at(
                label,
                text,
                p.name.span(),
                format!("[[probe]] name: unknown probe '{name}'; available: {} (see `rtscope probes`)", names.join(", ")),
            ));
        }
        if let Some(periods) = &p.periods {
            if periods.is_empty() {
                return Err(err_at(label, text, p.name.span(), "[[probe]] periods is empty; list at least one, e.g. periods = [\"10ms\"]"));
            }
        }
    }
    Ok(())
}

/// Values the types do not bound: the policy's name, priority, threads and
/// the load intensity.
fn check_ranges(file: &ScenarioFile, text: &str, label: &str) -> Result<(), BadInput> {
    if let Some(pol) = &file.policy {
        if !["fifo", "rr", "other", "deadline"].contains(&pol.get_ref().as_str()) {
            return Err(err_at(label, text, pol.span(), format!("policy: '{}' is not a policy; allowed: fifo, rr, other, deadline", pol.get_ref())));
        }
    }
    if let Some(p) = &file.priority {
        if !(1..=99).contains(p.get_ref()) {
            return Err(err_at(label, text, p.span(), format!("priority: {} is out of range; allowed: 1-99", p.get_ref())));
        }
    }
    if let Some(t) = &file.threads {
        if !(1..=4096).contains(t.get_ref()) {
            return Err(err_at(label, text, t.span(), format!("threads: {} is out of range; allowed: 1-4096", t.get_ref())));
        }
    }
    if let Some(ld) = &file.load {
        if let Some(i) = &ld.intensity {
            if !(i.get_ref().is_finite() && *i.get_ref() > 0.0 && *i.get_ref() <= 16.0) {
                return Err(err_at(label, text, i.span(), format!("[load] intensity: {} is out of range; allowed: more than 0, at most 16", i.get_ref())));
            }
        }
    }
    Ok(())
}

/// The key on the line holding `offset` (for "field `x`" in syntax and type
/// errors), e.g. `priority` in `priority = "high"`.
fn field_at(text: &str, offset: usize) -> Option<String> {
    let start = text[..offset.min(text.len())].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')).then(|| key.to_string())
}

/// Read and parse a scenario file.
pub(crate) fn from_file(path: &std::path::Path) -> Result<Scenario, BadInput> {
    let bytes = crate::store::json::read_input(path, 16 << 20)
        .map_err(|e| BadInput(format!("scenario {}: {e}; give the path of a TOML scenario file, or use --preset (see `rtscope presets`)", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|e| BadInput(format!("scenario {}: not UTF-8 text ({e}); give a TOML scenario file", path.display())))?;
    parse(&text, &path.display().to_string(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(t: &str) -> Scenario {
        parse(t, "s.toml", false).unwrap()
    }
    fn bad(t: &str) -> String {
        parse(t, "s.toml", false).unwrap_err().0
    }

    #[test]
    fn positions_and_fields_of_errors() {
        let t = "a = 1\nbb = \"x\"\n[[probe]]\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 11), (2, 6));
        assert_eq!(field_at(t, 11).as_deref(), Some("bb"));
        assert_eq!(field_at(t, t.len() - 2), None);
    }

    #[test]
    fn a_full_scenario_parses() {
        let s = ok(r#"
name = "x"
duration = "3s"
interval = 500
settle = "0"
[tags]
board = "a"
[load]
engine = "builtin"
intensity = 0.5
[[phase]]
name = "idle"
[[phase]]
name = "combined"
loads = ["cpu", "io", "cmd:\"sleep 1\""]
[[probe]]
name = "timer"
periods = ["10ms", "30ms"]
"#);
        assert_eq!(s.file.duration, Some(Dur(3_000_000_000)));
        assert_eq!(s.file.interval, Some(Dur(500_000)));
        assert_eq!(s.file.settle, Some(Dur(0)));
        assert_eq!(s.phases[1].loads, vec![LoadKind::Cpu, LoadKind::Io, LoadKind::Cmd("sleep 1".into())]);
        assert_eq!(s.file.probes[0].periods.as_ref().unwrap().len(), 2);
    }

    #[test]
    fn errors_name_line_field_and_what_is_allowed() {
        let e = bad("[[probe]]\nname = \"nope\"\n");
        assert!(e.starts_with("s.toml: line 2, column 8:") && e.contains("unknown probe 'nope'") && e.contains("timer"), "{e}");
        let e = bad("[[probe]]\nname = \"timer\"\n[[phase]]\nname = \"disk\"\n");
        assert!(e.contains("line 4") && e.contains("unknown load 'disk'") && e.contains("io"), "{e}");
        let e = bad("duration = \"-5s\"\n[[probe]]\nname = \"timer\"\n");
        assert!(e.contains("line 1") && e.contains("negative"), "{e}");
        let e = bad("[[probe]]\nname = \"timer\"\n[[phase]]\nname = \"idle\"\n[[phase]]\nname = \"idle\"\n");
        assert!(e.contains("line 6") && e.contains("appears twice (first at line 4)"), "{e}");
        let e = bad("priority = \"high\"\n[[probe]]\nname = \"timer\"\n");
        assert!(e.contains("line 1") && e.contains("field `priority`") && e.contains("u8"), "{e}");
        let e = bad("durration = \"5s\"\n");
        assert!(e.contains("unknown field `durration`") && e.contains("duration"), "{e}");
        let e = bad("[[probe]\nname = \"timer\"\n");
        assert!(e.starts_with("s.toml: line 1"), "{e}");
        let e = bad("name = \"x\"\n");
        assert!(e.contains("no [[probe]]"), "{e}");
    }
}
