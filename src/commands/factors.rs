//! `rtscope factors`: a factor experiment (docs/factors.md). Checks every
//! factor, level and cell's plan first (bad input is exit 2 with nothing
//! changed or written), journals the host knobs' originals, then runs the
//! randomised interleaved rounds — each cell a plain `rtscope run` built by
//! run's own machinery (`cli::load::build`, `runner::execute`) — stores
//! every run tagged with the experiment, its round and levels, restores
//! every knob, and prints "what matters here". Exit 0 done, 2 bad input,
//! 130 interrupted (the runs taken are kept and analysed).

use std::path::PathBuf;

use time::OffsetDateTime;

use crate::cli::factors::{FactorsArgs, FactorsFormat};
use crate::cli::{PolicyArg, RunArgs};
use crate::error::{BadInput, EXIT_INTERRUPTED, EXIT_OK};
use crate::factors::design::{parse_factor, Design};
use crate::factors::journal::{self, Entry, Journal};
use crate::factors::knobs::{HostCtx, Kind, KnobRoot, RunSetting};
use crate::factors::{self, Analysis, Observation};
use crate::model::Nanos;
use crate::runner;

/// The run flags a factor sets itself: giving both is ambiguous.
fn check_no_clash(args: &RunArgs, design: &Design) -> Result<(), BadInput> {
    for f in &design.factors {
        let clash = match f.knob.kind {
            Kind::Run(RunSetting::Load) => (!args.load.loads.is_empty()).then_some("--load"),
            Kind::Run(RunSetting::DmaLatency) => args.no_dma_latency.then_some("--no-dma-latency"),
            Kind::Run(RunSetting::Priority) => args.given.priority.then_some("-p/--priority"),
            Kind::Run(RunSetting::Policy) => args.given.policy.then_some("--policy"),
            Kind::Host(_) | Kind::Boot(_) => None,
        };
        if let Some(flag) = clash {
            return Err(BadInput(format!("--factor {} sets what {flag} sets: give one of them", f.knob.name)));
        }
    }
    Ok(())
}

/// The run arguments of one cell: the run settings at this cell's levels,
/// the result written to `out/NAME.json`.
fn cell_args(base: &RunArgs, design: &Design, cell: usize, out: &std::path::Path, name: &str) -> RunArgs {
    let mut a = base.clone();
    let mut given: Vec<String> = a.given.ids().map(str::to_string).collect();
    for (f, factor) in design.factors.iter().enumerate() {
        let level = design.level(cell, f);
        match factor.knob.kind {
            Kind::Run(RunSetting::DmaLatency) => a.no_dma_latency = level == "released",
            Kind::Run(RunSetting::Load) => {
                a.load.loads = if level == "idle" { Vec::new() } else { vec![level.to_string()] };
                a.load.phase_name = None;
                given.push("loads".into());
            }
            Kind::Run(RunSetting::Priority) => {
                a.priority = level.parse().unwrap_or(a.priority);
                given.push("priority".into());
            }
            Kind::Run(RunSetting::Policy) => {
                a.policy = match level {
                    "rr" => PolicyArg::Rr,
                    "other" => PolicyArg::Other,
                    "deadline" => PolicyArg::Deadline,
                    _ => PolicyArg::Fifo,
                };
                given.push("policy".into());
            }
            Kind::Host(_) | Kind::Boot(_) => {}
        }
    }
    a.json = Some(out.join(format!("{name}.json")));
    given.push("json".into());
    a.given = crate::cli::given::Given::from_ids(given.into_iter().collect());
    a
}

fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online").ok().and_then(|s| crate::units::parse_cpu_list(s.trim()).ok()).unwrap_or_default()
}

pub(crate) fn cmd(args: &FactorsArgs) -> anyhow::Result<u8> {
    journal::recover_and_say();
    if let Some(exp) = &args.analyse {
        return analyse_stored(args, exp);
    }
    let ra = &args.run;
    if ra.target.is_some() || ra.load.scenario.is_some() || ra.load.preset.is_some() || ra.json.is_some() || ra.load.dry_run {
        return Err(BadInput(
            "rtscope factors takes run's probe, thread, load and output flags; not --target, --scenario, --preset, --json or --dry-run \
             (each cell's result goes to --out DIR/EXPERIMENT/)"
                .into(),
        )
        .into());
    }
    let factors = args.factors.iter().map(|s| parse_factor(s)).collect::<Result<Vec<_>, _>>()?;
    let design = Design::new(factors)?;
    check_no_clash(ra, &design)?;
    let lab = super::factors_lab::Lab::new(args.lab.as_deref(), &design, &ra.command_line)?;
    let started = OffsetDateTime::now_utc();
    let exp = format!("fx-{}", crate::commands::run::stamp(started));
    let rounds = args.rounds as usize;
    let seed = args.seed.unwrap_or_else(|| started.unix_timestamp_nanos() as u64);
    let out = ra.out.join(&exp);

    // Every cell's plan, built now: a bad flag or level is exit 2 before
    // anything is changed or measured.
    // In the lab, the lab checks each cell (its options, and the run flags
    // through this host's `rtscope run --dry-run`).
    let mut measured = Vec::new();
    match &lab {
        Some(l) => l.check(&design)?,
        None => {
            for c in 0..design.cells.len() {
                let (plan, _, _) = crate::cli::load::build(&cell_args(ra, &design, c, &std::env::temp_dir(), "rtscope-factors-check"), "check")?;
                measured = plan.measured_cpus();
            }
        }
    }
    let root = KnobRoot::from_env();
    let host = HostCtx { online: online_cpus(), measured };
    let mut entries = Vec::new();
    let mut host_knobs = Vec::new();
    for f in &design.factors {
        if let Kind::Host(h) = f.knob.kind {
            for path in h.files(&root)? {
                let raw = root.read(&path).unwrap_or_default();
                entries.push(Entry { knob: h.name.to_string(), path, original: h.restorable(&raw) });
            }
            for l in &f.levels {
                h.writes(l, &root, &host)?;
            }
            host_knobs.push(match h.current(&root, &host) {
                Some(now) => format!("{} (now {now})", h.name),
                None => h.name.to_string(),
            });
        }
    }
    if !host_knobs.is_empty() && !root.is_fake() && !nix::unistd::geteuid().is_root() {
        return Err(BadInput(format!(
            "--factor {}: changing these knobs needs root (run rtscope factors as root); dma-latency, load, priority and policy do not",
            host_knobs.join(", ")
        ))
        .into());
    }
    if out.exists() {
        return Err(BadInput(format!("{}: exists; the experiment's results need a new directory", out.display())).into());
    }
    let mut store = crate::commands::history::open_for_run(&ra.store)?;
    std::fs::create_dir_all(&out).map_err(|e| BadInput(format!("--out: cannot create {}: {e}", out.display())))?;

    // The second Ctrl-C/SIGTERM exits at once: its action restores first.
    journal::register_signal_restore()?;
    let stop = crate::commands::run::stop_on_signals()?;
    let mut journal = if entries.is_empty() {
        None
    } else {
        let (j, said) = Journal::begin(&root, &ra.command_line.join(" "), entries)?;
        for s in said {
            eprintln!("note: {s}");
        }
        eprintln!("journal: originals of {} in {}", host_knobs.join(", "), j.path().display());
        Some(j)
    };
    eprintln!(
        "experiment {exp}: {} cells ({}), {rounds} rounds, seed {seed}; results in {}",
        design.cells.len(),
        design.shape.words(),
        out.display()
    );
    let ctx = Rounds { design: &design, exp: &exp, rounds, seed, out: &out, root: &root, host: &host, stop: &stop, lab: lab.as_ref() };
    let result = run_rounds(args, &ctx, store.as_mut());
    let restored_failed = journal.as_mut().map(|j| j.restore()).unwrap_or_default();
    if let Some(j) = &journal {
        if restored_failed.is_empty() {
            eprintln!("restored: {}", j.entries().iter().map(|e| e.knob.as_str()).collect::<std::collections::BTreeSet<_>>().into_iter().collect::<Vec<_>>().join(", "));
        }
    }
    for f in &restored_failed {
        eprintln!("error: could not restore {f}");
    }
    let (obs, notes) = result?;
    let deadline = ra.analysis.deadline.map(Nanos);
    let mut analysis = factors::analyse(&exp, &design, &obs, rounds, seed, deadline, args.interactions);
    analysis.notes.extend(notes);
    print_report(args, &analysis)?;
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst) || obs.iter().any(|o| o.run.interrupted);
    Ok(if interrupted { EXIT_INTERRUPTED } else { EXIT_OK })
}

/// What every round of an experiment shares.
struct Rounds<'a> {
    design: &'a Design,
    exp: &'a str,
    rounds: usize,
    seed: u64,
    out: &'a std::path::Path,
    root: &'a KnobRoot,
    host: &'a HostCtx,
    stop: &'a std::sync::atomic::AtomicBool,
    /// Boot factors: each run is a guest of this lab.
    lab: Option<&'a super::factors_lab::Lab>,
}

/// One cell's run: in this process, or in a lab guest. The run and the
/// text of its result file.
fn run_cell(args: &FactorsArgs, ctx: &Rounds, cell: usize, name: &str) -> anyhow::Result<(crate::model::Run, String)> {
    if let Some(lab) = ctx.lab {
        // The history keeps the command that made the run, the experiment
        // (`load_stored` reads the design from it); the guest's own `rtscope
        // run` line stays in the result file the lab brought back.
        let mut run = lab.run(ctx.design, cell, &ctx.out.join(format!("{name}.json")), ctx.stop)?;
        run.command_line = args.run.command_line.clone();
        let text = serde_json::to_string(&run)?;
        return Ok((run, text));
    }
    let a = cell_args(&args.run, ctx.design, cell, ctx.out, name);
    let started = OffsetDateTime::now_utc();
    let (plan, mut output, e) = crate::cli::load::build(&a, name)?;
    output.quiet = true;
    let run = runner::execute(&plan, &e, runner::Invocation { output: &output, command_line: args.run.command_line.clone(), started, stop: ctx.stop, warnings: crate::commands::run::warnings })?;
    // The run in memory as its file was written: never read back from a
    // path another experiment may have written since.
    let text = crate::store::json::run_text(&run)?;
    Ok((run, text))
}

fn run_rounds(args: &FactorsArgs, ctx: &Rounds, mut store: Option<&mut crate::store::Store>) -> anyhow::Result<(Vec<Observation>, Vec<String>)> {
    use std::sync::atomic::Ordering;
    let Rounds { design, exp, rounds, seed, root, host, stop, .. } = *ctx;
    let schedule = design.schedule(rounds, seed);
    let mut obs = Vec::new();
    let mut notes = Vec::new();
    let mut refused: std::collections::BTreeSet<String> = Default::default();
    for (i, &(round, cell)) in schedule.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        for (f, factor) in design.factors.iter().enumerate() {
            if let Kind::Host(h) = factor.knob.kind {
                for w in h.writes(design.level(cell, f), root, host)? {
                    if let Err(e) = journal::write_knob(root, &w.path, &w.text) {
                        if h.may_refuse(&w.path) {
                            refused.insert(w.path.clone());
                        } else {
                            return Err(anyhow::anyhow!("setting {} to {}: writing {:?} to {}: {e}", h.name, design.level(cell, f), w.text, w.path));
                        }
                    }
                }
            }
        }
        let name = format!("r{:02}-c{:02}", round + 1, cell + 1);
        let (run, text) = match run_cell(args, ctx, cell, &name) {
            Ok(r) => r,
            // A guest stopped by Ctrl-C may leave no result: the runs taken are kept.
            Err(_) if stop.load(Ordering::SeqCst) => break,
            Err(e) => return Err(e),
        };
        let mut id = None;
        if let Some(s) = store.as_deref_mut() {
            let rid = s.save(&run, &text, run.source())?;
            for t in design.tags(exp, round, cell) {
                s.tag(rid, &t)?;
            }
            id = Some(rid);
        }
        let head = crate::model::merged_or_sole(&run.results, |r| r)
            .first()
            .map(|r| format!("{} p99 {} max {}", r.probe, crate::units::fmt_time(factors_p99(r) as f64), crate::units::fmt_time(r.max_ns.0 as f64)))
            .unwrap_or_default();
        eprintln!(
            "[{}/{}] round {} {}: {head}{}",
            i + 1,
            schedule.len(),
            round + 1,
            design.cell_label(cell),
            id.map(|i| format!(" → run #{i}")).unwrap_or_default()
        );
        obs.push(Observation { round, cell, run_id: id, run });
    }
    if !refused.is_empty() {
        notes.push(format!("{} interrupt(s) refused to move (per-CPU or managed) and stayed where they were", refused.len()));
    }
    Ok((obs, notes))
}

fn factors_p99(r: &crate::model::ProbeResult) -> u64 {
    crate::analysis::percentiles::from_histogram(&r.histogram, 99.0, r.min_ns, r.max_ns).map_or(0, |n| n.0)
}

fn print_report(args: &FactorsArgs, a: &Analysis) -> anyhow::Result<()> {
    let render = |f: FactorsFormat| -> anyhow::Result<String> {
        Ok(match f {
            FactorsFormat::Term => factors::render::term(a),
            FactorsFormat::Md => factors::render::markdown(a),
            FactorsFormat::Html => factors::render::html(a),
            FactorsFormat::Json => factors::render::json(a)?,
        })
    };
    match &args.report {
        Some(p) => {
            write_report(p, &render(args.format)?)?;
            print!("{}", render(FactorsFormat::Term)?);
            println!("report: {}", p.display());
        }
        None => print!("{}", render(args.format)?),
    }
    Ok(())
}

/// Written through a temporary file in the same directory and renamed,
/// unless the path is something that is not a regular file (refused).
fn write_report(p: &std::path::Path, text: &str) -> anyhow::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(p) {
        if !m.is_file() {
            return Err(BadInput(format!("--report {}: exists and is not a regular file; give another path", p.display())).into());
        }
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| BadInput(format!("--report {}: cannot write in {}: {e}", p.display(), dir.display())))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(p)?;
    Ok(())
}

/// The `--factor` arguments of a stored run's command line.
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

/// A stored experiment: its design (from the first run's command line),
/// and each run's round and cell (from its tags).
pub(crate) fn load_stored(store: &mut crate::store::Store, exp: &str) -> anyhow::Result<(Design, Vec<Observation>, usize)> {
    let ids = store.ids_with_tag(exp)?;
    if ids.is_empty() {
        return Err(BadInput(format!("--analyse {exp}: no stored run has this tag (in {}); `rtscope history` lists tags", store.shown())).into());
    }
    let first = store.load(ids[0])?;
    let factors = factor_args(&first.command_line).iter().map(|s| parse_factor(s)).collect::<Result<Vec<_>, _>>()?;
    let design = Design::new(factors)?;
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
    Ok((design, obs, rounds))
}

fn analyse_stored(args: &FactorsArgs, exp: &str) -> anyhow::Result<u8> {
    let mut store = crate::store::Store::open_existing(&crate::store::Location::resolve(args.run.store.db.db.as_deref())?)?;
    let (design, obs, rounds) = load_stored(&mut store, exp)?;
    let seed = args.seed.unwrap_or(0);
    let a = factors::analyse(exp, &design, &obs, rounds, seed, args.run.analysis.deadline.map(Nanos), args.interactions);
    print_report(args, &a)?;
    Ok(EXIT_OK)
}

/// What the history's experiments measured about `knob` on `hostname`: the
/// strongest effect of the newest experiment that varied it, as doctor
/// cites it. Experiments are found by their tags (`fx-…`).
pub(crate) fn measured_for_doctor(store: &mut crate::store::Store, hostname: &str, knobs: &[&str]) -> Vec<(String, String)> {
    let Ok(facets) = store.facets() else { return Vec::new() };
    let mut exps: Vec<&String> = facets.tags.iter().filter(|t| t.starts_with("fx-") && !t.contains('/')).collect();
    exps.sort();
    exps.reverse();
    let mut out: Vec<(String, String)> = Vec::new();
    for exp in exps {
        let Ok((design, obs, rounds)) = load_stored(store, exp) else { continue };
        if obs.first().is_none_or(|o| o.run.host.hostname != hostname) {
            continue;
        }
        if !design.factors.iter().any(|f| knobs.contains(&f.knob.name) && !out.iter().any(|(k, _)| k == f.knob.name)) {
            continue;
        }
        let a = factors::analyse(exp, &design, &obs, rounds, 0, None, false);
        for f in &design.factors {
            if !knobs.contains(&f.knob.name) || out.iter().any(|(k, _)| k == f.knob.name) {
                continue;
            }
            // Ranked already: the first row of this factor is its strongest.
            if let Some(r) = a.effects.iter().find(|r| !r.interaction && r.factor == f.knob.name) {
                out.push((f.knob.name.to_string(), factors::citation(r, exp)));
            }
        }
    }
    out
}
