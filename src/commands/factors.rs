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
use crate::cli::RunArgs;
use crate::error::{BadInput, EXIT_INTERRUPTED, EXIT_OK};
use crate::factors::design::{parse_factor, Design};
use crate::factors::journal::{self, ApplyError, Journal};
use crate::factors::knobs::{HostCtx, Kind, KnobRoot};
use crate::factors::{self, Analysis, Observation};
use crate::model::Nanos;
use crate::plan::overrides::Overrides;
use crate::runner;

/// The run settings a factor sets itself: giving the flag too is ambiguous.
fn check_no_clash(args: &RunArgs, design: &Design) -> Result<(), BadInput> {
    for f in &design.factors {
        let Kind::Run(r) = f.knob.kind else { continue };
        if let Some(flag) = crate::cli::overrides::given_flag(args, r.setting()) {
            return Err(BadInput(format!("--factor {} sets what {flag} sets: give one of them", f.knob.name)));
        }
    }
    Ok(())
}

/// The run settings of one cell (each factor's descriptor applies its
/// level), the result written to `out/NAME.json`.
fn cell_overrides(design: &Design, cell: usize, out: &std::path::Path, name: &str) -> Result<Overrides, BadInput> {
    let mut o = Overrides::default();
    for (f, factor) in design.factors.iter().enumerate() {
        if let Kind::Run(r) = factor.knob.kind {
            r.apply(design.level(cell, f), &mut o)?;
        }
    }
    o.json = Some(out.join(format!("{name}.json")));
    Ok(o)
}

fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online").ok().and_then(|s| crate::units::parse_cpu_list(s.trim()).ok()).unwrap_or_default()
}

pub(crate) fn cmd(args: &FactorsArgs) -> anyhow::Result<u8> {
    if args.list {
        return list(args);
    }
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
    let exp = experiment_tag(started);
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
                let o = cell_overrides(&design, c, &std::env::temp_dir(), "rtscope-factors-check")?;
                let (plan, _, _) = crate::cli::overrides::build(ra, &o, "check")?;
                // Every cell's: with a cpu factor, off-measured avoids them all.
                measured.extend(plan.measured_cpus());
                measured.sort_unstable();
                measured.dedup();
            }
        }
    }
    let root = KnobRoot::from_env();
    let host = HostCtx { online: online_cpus(), measured };
    let mut knobs = Vec::new();
    let mut host_knobs = Vec::new();
    for f in &design.factors {
        if let Kind::Host(h) = f.knob.kind {
            h.files(&root)?;
            for l in &f.levels {
                h.writes(l, &root, &host)?;
            }
            host_knobs.push(match h.current(&root, &host) {
                Some(now) => format!("{} (now {now})", h.name),
                None => h.name.to_string(),
            });
            knobs.push(h);
        }
    }
    if !host_knobs.is_empty() && !root.is_fake() && !nix::unistd::geteuid().is_root() {
        return Err(BadInput(format!(
            "--factor {}: changing these knobs needs root (run rtscope factors as root); dma-latency, load, priority and policy do not",
            host_knobs.join(", ")
        ))
        .into());
    }
    // The outputs, checked before anything is changed or measured (as run
    // checks its own): the report's path, the results' new directory.
    if let Some(p) = &args.report {
        crate::store::json::check_output(p).map_err(|e| BadInput(format!("--report {}", e.0)))?;
    }
    if out.exists() {
        return Err(BadInput(format!("{}: exists; the experiment's results need a new directory", out.display())).into());
    }
    let mut store = crate::commands::history::open_for_run(&ra.store)?;
    let _out_dir = OutDir::create(&out)?;

    // The second Ctrl-C/SIGTERM exits at once: its action restores first.
    journal::register_signal_restore()?;
    let stop = crate::commands::run::stop_on_signals()?;
    let mut journal = if knobs.is_empty() {
        None
    } else {
        test_pause("RTSCOPE_TEST_PAUSE_BEFORE_JOURNAL");
        let (j, said) = Journal::begin(&root, &ra.command_line.join(" "), &knobs)?;
        for s in said {
            eprint!("{}", crate::report::term::para("note: ", &crate::report::escape::terminal_safe(&s)));
        }
        eprintln!("journal: originals of {} in {}", host_knobs.join(", "), j.path().display());
        Some(j)
    };
    if let Some(j) = journal.as_mut() {
        try_levels(j, &design, &root, &host)?;
    }
    eprintln!("experiment {exp}: {} cells ({}), {rounds} rounds, seed {seed}; results in {}", design.cells.len(), design.shape.words(), out.display());
    // The design record first: the experiment's runs are read back by it.
    if let Some(s) = store.as_mut() {
        factors::stored::save(s, &exp, &design, rounds, seed)?;
    }
    let ctx = Rounds { design: &design, exp: &exp, rounds, seed, out: &out, root: &root, host: &host, stop: &stop, lab: lab.as_ref() };
    let result = run_rounds(args, &ctx, store.as_mut(), journal.as_mut());
    if let Some(j) = journal.as_mut() {
        test_pause("RTSCOPE_TEST_PAUSE_BEFORE_RESTORE");
        let done = j.restore();
        let restored: std::collections::BTreeSet<&str> = done.restored.iter().map(|e| e.knob.as_str()).collect();
        if done.failed.is_empty() && !restored.is_empty() {
            eprintln!("restored: {}", restored.into_iter().collect::<Vec<_>>().join(", "));
        }
        for t in &done.theirs {
            eprintln!("warning: {}", crate::report::escape::terminal_safe(t));
        }
        for f in &done.failed {
            eprintln!("error: could not restore {f}; the journal {} keeps the original", j.path().display());
        }
    }
    let (obs, notes) = result?;
    let deadline = ra.analysis.deadline.map(Nanos);
    let mut analysis = factors::analyse(&exp, &design, &obs, rounds, seed, deadline, args.interactions);
    analysis.notes.extend(notes);
    print_report(args, &analysis, &obs)?;
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst) || obs.iter().any(|o| o.run.interrupted);
    Ok(if interrupted { EXIT_INTERRUPTED } else { EXIT_OK })
}

/// `--list`: every knob, and a host knob's value now; in JSON also the
/// text of every file it touches (what tests/leftovers.rs holds the whole
/// suite to: every knob as it was before the suite).
fn list(args: &FactorsArgs) -> anyhow::Result<u8> {
    let root = KnobRoot::from_env();
    let host = HostCtx { online: online_cpus(), measured: Vec::new() };
    let mut rows = Vec::new();
    for name in crate::factors::knobs::names() {
        let k = crate::factors::knobs::find(name)?;
        let (kind, now, files) = match k.kind {
            Kind::Host(h) => match h.files(&root) {
                Ok(files) => ("host", h.current(&root, &host).unwrap_or_else(|| "unreadable".into()), files),
                Err(_) => ("host", "absent".to_string(), Vec::new()),
            },
            Kind::Run(_) => ("run", "-".to_string(), Vec::new()),
            Kind::Boot(_) => ("boot", "-".to_string(), Vec::new()),
        };
        let files: serde_json::Map<String, serde_json::Value> = files
            .into_iter()
            .map(|p| {
                let text = root.read(&p).unwrap_or_default();
                (p, serde_json::Value::String(text))
            })
            .collect();
        rows.push(serde_json::json!({"name": name, "kind": kind, "levels": k.levels_help(), "now": now, "what": k.what(), "files": files}));
    }
    if args.format == FactorsFormat::Json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(EXIT_OK);
    }
    let w = rows.iter().map(|r| r["name"].as_str().unwrap_or("").len()).max().unwrap_or(4);
    let wn = rows.iter().map(|r| r["now"].as_str().unwrap_or("").chars().count()).max().unwrap_or(3).max(3);
    println!("{:w$}  kind  {:wn$}  levels", "knob", "now");
    // The levels wrap under their column at the width rule's width (80 piped).
    let width = crate::report::term::width(false);
    let indent = " ".repeat(w + 2 + 4 + 2 + wn + 2);
    for r in &rows {
        let s = |k: &str| crate::report::escape::terminal_safe(r[k].as_str().unwrap_or("")).to_string();
        let first = format!("{:w$}  {:4}  {:wn$}  ", s("name"), s("kind"), s("now"));
        println!("{}", crate::report::term::paragraph(&s("levels"), &first, &indent, width));
    }
    Ok(EXIT_OK)
}

/// `fx-20261128T095257Z-HOST-3fa9c1`: the start's second, the host and a
/// random suffix, so experiments started in one second (a fleet's cron at
/// 02:00:00 on one history) never share a tag.
fn experiment_tag(started: OffsetDateTime) -> String {
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
        .take(32)
        .collect();
    let mut r = [0u8; 3];
    // The clock and the pid when /dev/urandom cannot be read: unique within a host.
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut r)).is_err() {
        let x = (started.unix_timestamp_nanos() as u64) ^ (u64::from(std::process::id()) << 20);
        r = [(x >> 16) as u8, (x >> 8) as u8, x as u8];
    }
    let host = if host.is_empty() { "host".to_string() } else { host };
    format!("fx-{}-{host}-{:02x}{:02x}{:02x}", crate::commands::run::stamp(started), r[0], r[1], r[2])
}

/// `--out DIR/EXPERIMENT`, created before anything is changed; removed
/// again, with the parents it made, if still empty when the experiment
/// ends (a refusal, a full disk before the first cell): nothing is left
/// behind that holds nothing.
struct OutDir {
    /// The directories made, deepest first.
    made: Vec<PathBuf>,
}

impl OutDir {
    fn create(out: &std::path::Path) -> Result<OutDir, BadInput> {
        let mut made = Vec::new();
        let mut p = out;
        while !p.exists() {
            made.push(p.to_path_buf());
            match p.parent() {
                Some(q) if !q.as_os_str().is_empty() => p = q,
                _ => break,
            }
        }
        crate::sys::stat::create_dirs(out).map_err(|e| BadInput(format!("--out: cannot create {}: {e}", out.display())))?;
        Ok(OutDir { made })
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        for d in &self.made {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

/// Every level of every host knob tried against the kernel before the
/// first cell: written, then the original written back, all journaled. A
/// level the checks accept but the kernel refuses (`printk=08`: EINVAL;
/// `rt-runtime` with RT groups: EBUSY) is exit 2 before anything is measured.
fn try_levels(j: &mut Journal, design: &Design, root: &KnobRoot, host: &HostCtx) -> anyhow::Result<()> {
    for f in &design.factors {
        let Kind::Host(h) = f.knob.kind else { continue };
        let mut refused = None;
        for l in &f.levels {
            if let Err(e) = j.apply(&h, l, &h.writes(l, root, host)?) {
                refused = Some((l, e));
                break;
            }
        }
        let back = j.put_back_knob(&h);
        let back_words = if back.failed.is_empty() && back.theirs.is_empty() {
            format!("{} is as it was", h.name)
        } else {
            back.failed.iter().map(|f| format!("could not restore {f}")).chain(back.theirs.iter().cloned()).collect::<Vec<_>>().join("; ")
        };
        match refused {
            Some((_, ApplyError::Journal(e))) => return Err(e),
            Some((l, e)) => {
                return Err(BadInput(format!(
                    "--factor {}={l}: {e}; nothing was measured and {back_words}: give levels this kernel takes (levels: {})",
                    h.name, h.levels
                ))
                .into())
            }
            None if back_words != format!("{} is as it was", h.name) => return Err(anyhow::anyhow!("after trying the levels of {}: {back_words}", h.name)),
            None => {}
        }
    }
    Ok(())
}

/// Test hooks (tests/factors.rs): with `RTSCOPE_TEST_PAUSE_BEFORE_JOURNAL=PATH`
/// (the start race), just before the journal's lock is taken: whatever
/// another experiment does meanwhile must not change what this one journals
/// as the originals; with `RTSCOPE_TEST_PAUSE_BEFORE_RESTORE=PATH` (the
/// second Ctrl-C), just before the normal path restores: a second signal
/// then finds the knobs as rtscope left them, and only the signal action
/// can put them back. Each says `PATH.waiting` and waits (at most 60 s)
/// until `PATH` exists.
fn test_pause(var: &str) {
    let Some(p) = std::env::var_os(var).map(PathBuf::from) else { return };
    let mut waiting = p.clone().into_os_string();
    waiting.push(".waiting");
    let _ = std::fs::write(&waiting, b"");
    let t0 = std::time::Instant::now();
    while !p.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
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

/// One cell's run: in this process, or in a lab guest; its result file is
/// `name`.json in the experiment's directory.
fn run_cell(args: &FactorsArgs, ctx: &Rounds, cell: usize, name: &str) -> anyhow::Result<crate::model::Run> {
    if let Some(lab) = ctx.lab {
        // The history keeps the command that made the run, the experiment;
        // the guest's own `rtscope run` line stays in the result file the lab
        // brought back.
        let mut run = lab.run(ctx.design, cell, &ctx.out.join(format!("{name}.json")), ctx.stop)?;
        run.command_line = args.run.command_line.clone();
        return Ok(run);
    }
    let o = cell_overrides(ctx.design, cell, ctx.out, name)?;
    let started = OffsetDateTime::now_utc();
    let (plan, mut output, e) = crate::cli::overrides::build(&args.run, &o, name)?;
    output.quiet = true;
    let run = runner::execute(
        &plan,
        &e,
        runner::Invocation { output: &output, command_line: args.run.command_line.clone(), started, stop: ctx.stop, warnings: crate::commands::run::warnings },
    )?;
    Ok(run)
}

fn run_rounds(
    args: &FactorsArgs,
    ctx: &Rounds,
    mut store: Option<&mut crate::store::Store>,
    mut journal: Option<&mut Journal>,
) -> anyhow::Result<(Vec<Observation>, Vec<String>)> {
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
                let Some(j) = journal.as_deref_mut() else { anyhow::bail!("host knob {} without a restore journal", h.name) };
                let level = design.level(cell, f);
                refused.extend(j.apply(&h, level, &h.writes(level, root, host)?)?);
            }
        }
        let name = format!("r{:02}-c{:02}", round + 1, cell + 1);
        let run = match run_cell(args, ctx, cell, &name) {
            Ok(r) => r,
            // A guest stopped by Ctrl-C may leave no result: the runs taken are kept.
            Err(_) if stop.load(Ordering::SeqCst) => break,
            Err(e) => return Err(e),
        };
        // Each cell ends as a run does (`commands::end`): its warnings, and
        // the history, which a cell it refuses leaves in its result file
        // with the way to import it later.
        super::end::warn(&run);
        let mut id = None;
        if let Some(s) = store.as_deref_mut() {
            let rid = super::end::save(s, &run, &ctx.out.join(format!("{name}.json")), true)?;
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

/// The report; its conclusion reads doctor's findings stored with the
/// experiment's first run (judged for the measured CPUs).
fn print_report(args: &FactorsArgs, a: &Analysis, obs: &[factors::Observation]) -> anyhow::Result<()> {
    let doctor = obs.first().map(|o| o.run.host.doctor.as_slice()).unwrap_or_default();
    let render = |f: FactorsFormat| -> anyhow::Result<String> {
        Ok(match f {
            FactorsFormat::Term => factors::render::term(a, doctor, crate::report::term::width(false)),
            FactorsFormat::Md => factors::render::markdown(a, doctor),
            FactorsFormat::Html => factors::render::html(a, doctor),
            FactorsFormat::Json => factors::render::json(a, doctor)?,
        })
    };
    match &args.report {
        Some(p) => {
            let text = render(args.format)?;
            crate::store::json::write_output(p, |w| Ok(w.write_all(text.as_bytes())?))?;
            print!("{}", render(FactorsFormat::Term)?);
            println!("report: {}", p.display());
        }
        None => print!("{}", render(args.format)?),
    }
    Ok(())
}

fn analyse_stored(args: &FactorsArgs, exp: &str) -> anyhow::Result<u8> {
    let mut store = crate::store::Store::open_existing(&crate::store::Location::resolve(args.run.store.db.db.as_deref())?)?;
    let (design, obs, rounds, stored_seed) = factors::stored::load(&mut store, exp)?;
    let seed = args.seed.or(stored_seed).unwrap_or(0);
    let a = factors::analyse(exp, &design, &obs, rounds, seed, args.run.analysis.deadline.map(Nanos), args.interactions);
    print_report(args, &a, &obs)?;
    Ok(EXIT_OK)
}
