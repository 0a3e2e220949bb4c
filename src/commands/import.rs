//! `rtscope import FILE [--format auto|...] [--name SYSTEM]`: convert another
//! tool's output (see `crate::import`) into schema v1 runs and save them in
//! the history database, so they can be listed, shown, exported and compared
//! like native runs. An rtscope result file is stored as is.
//!
//! Everything is parsed, converted and checked (every value must fit the
//! history's 64-bit columns) before the database is opened: a bad file is
//! exit 2 with the file, line and expectation, and nothing is stored. The
//! runs of a file (one per column of a multi-system CSV) are then stored in
//! one transaction: all or none, also when the import is killed midway.
//! A run is checked, and later stored or printed, entry by entry as it is
//! built ([`import::Building`]): built twice, held never.

use std::borrow::Cow;
use std::path::Path;
use std::rc::Rc;

use crate::cli::store_opts::{FormatArg, ImportArgs};
use crate::commands::tag::check_tag;
use crate::error::{BadInput, EXIT_OK};
use crate::import::{self, format_list, Building, Context, Format, Parsed, Systems};
use crate::model::Run;
use crate::store::text::{self, Saving};
use crate::store::{Location, Store};

/// What a file becomes: an rtscope result, stored as it is, or the systems
/// another tool's file holds, each built into a run entry by entry when it
/// is checked and again when it is printed or stored (one entry in memory
/// at a time: a file with 100 000 columns is 100 000 runs, each built from
/// its column when it is needed; a log of 1.5 M pairs one run of 1.5 M
/// entries).
enum Converted {
    /// `run` without its entries, read again from `path` when stored.
    AsIs {
        run: Box<Run>,
        path: std::path::PathBuf,
    },
    Foreign {
        systems: Systems,
        ctx: Context,
        checked: Vec<Checked>,
    },
}

/// What is printed of a checked run once it is stored.
struct Checked {
    system: String,
    /// Shared with the system before when the same (100 000 columns of
    /// one file mostly have the same notes).
    fidelity: Rc<Vec<String>>,
}

/// What tells one version of a file from another without reading it: the
/// inode (a file replaced by a rename is another one), its length and its
/// modification and change times (ctime cannot be set back by a writer).
/// Taken before the first read of an import and compared after the last:
/// the file is read several times (hashed, checked, stored), and a file
/// rewritten in between must not store a text and entries of two versions.
#[derive(PartialEq, Eq, Debug)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp { dev: m.dev(), ino: m.ino(), len: m.len(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) })
}

/// An error when `path` is no longer the file `before` stamped.
fn changed_since(path: &Path, before: &Option<Stamp>) -> Option<BadInput> {
    (stamp(path) != *before).then(|| {
        BadInput(format!(
            "{}: the file changed while it was imported (it is read more than once); nothing was stored: import it again once it is complete",
            path.display()
        ))
    })
}

fn mtime_rfc3339(path: &Path) -> String {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(time::OffsetDateTime::from)
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(crate::store::now_rfc3339)
}

/// How much of a file format detection reads.
const DETECT_BYTES: usize = 64 << 10;

/// The file's format: `--format`, or detected from its opening bytes.
fn detect_format(args: &ImportArgs) -> Result<Format, BadInput> {
    let file = args.file.display().to_string();
    let (f, len) = open_input(args)?;
    // Leading blank space (however long) is skipped first, so it cannot push
    // the content out of the window.
    let (head, skipped, skipped_lines) = import::read_head(f, DETECT_BYTES).map_err(|e| BadInput(format!("{file}: cannot read: {e}")))?;
    let complete = skipped + (head.len() as u64) >= len && head.len() < DETECT_BYTES;
    let (head_text, bad_utf8) = match std::str::from_utf8(&head) {
        Ok(t) => (t, None),
        // A multi-byte character cut at the end of the window is not an error.
        Err(e) if !complete && e.error_len().is_none() => (std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""), None),
        Err(e) => (std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""), Some(e.valid_up_to())),
    };
    if let Some(at) = bad_utf8 {
        let line = skipped_lines + head[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let at = at as u64 + skipped;
        return Err(BadInput(format!(
            "{file}: line {line}: not UTF-8 text (invalid byte at offset {at}); expected the text output of one of: {}",
            format_list()
        )));
    }
    match args.format {
        FormatArg::Auto => import::detect_head(head_text, complete).ok_or_else(|| {
            BadInput(format!("{file}: format not recognised; rtscope imports: {}. Check the file, or name the format with --format", format_list()))
        }),
        FormatArg::Named(f) => Ok(f),
    }
}

fn open_input(args: &ImportArgs) -> Result<(std::fs::File, u64), BadInput> {
    crate::store::json::open_input(&args.file, args.max_size).map_err(|e| BadInput(format!("{}: {e}", args.file.display())))
}

/// An rtscope result file: read and checked entry by entry, stored as it is.
fn as_is(args: &ImportArgs) -> Result<Converted, BadInput> {
    let file = args.file.display().to_string();
    let (run, entries) = crate::store::json::read_run_entries(&args.file, Box::new(|_, _| Ok(())))?;
    if !run.complete {
        eprintln!("warning: {}: {}", args.file.display(), crate::analysis::warnings::Warning::Unfinished);
    }
    if entries == 0 {
        return Err(BadInput(format!("{file}: its results list is empty: nothing measured to import (report, compare and check could not use it)")));
    }
    if args.name.is_some() || args.probe.is_some() || args.phase != "unspecified" {
        return Err(BadInput(format!("{file}: an rtscope result is stored as it is; --name, --probe and --phase apply only to foreign formats")));
    }
    Ok(Converted::AsIs { run: Box::new(run), path: args.file.clone() })
}

/// The flags that apply to some formats only.
fn check_flags(args: &ImportArgs, format: Format) -> Result<(), BadInput> {
    let file = args.file.display();
    if import::probe_per_row(format) && args.probe.is_some() {
        return Err(BadInput(format!(
            "{file}: --probe does not apply to {format}: each row is filed under the probe that measures it in rtscope's preset (docs/schema.md); drop --probe"
        )));
    }
    if args.period.is_some() && !import::takes_period(format) {
        return Err(BadInput(format!(
            "{file}: --period applies only to rtai-latency (RTAI's display does not print its period); {format} files give their own: drop --period"
        )));
    }
    Ok(())
}

/// Another tool's file: parsed (as it streams, and hashed in a pass of its
/// own on a thread: memory stays bounded), the `--name`d column picked,
/// every run built and checked.
fn foreign(args: &ImportArgs, format: Format) -> Result<Converted, BadInput> {
    use std::io::{BufReader, Read};
    let file = args.file.display().to_string();
    check_flags(args, format)?;
    // Hashed on a thread of its own while the file is parsed (a pass
    // over 200 MB of its own, with two CPUs to share); on this one first
    // when the system gives no second thread (RLIMIT_NPROC).
    enum Sha {
        Hashing(std::thread::JoinHandle<std::io::Result<String>>),
        Taken(std::io::Result<String>),
    }
    let hashing = open_input(args)?.0.take(args.max_size);
    let sha = match std::thread::Builder::new().name("rtscope-hash".into()).spawn(move || crate::store::sha256_reader(hashing)) {
        Ok(h) => Sha::Hashing(h),
        Err(_) => Sha::Taken(crate::store::sha256_reader(open_input(args)?.0.take(args.max_size))),
    };
    let file_name = args.file.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    let opts = import::ParseOptions { period_ns: args.period };
    let reader = BufReader::with_capacity(256 << 10, open_input(args)?.0.take(args.max_size));
    let (path, cap) = (args.file.clone(), args.max_size);
    let reopen: import::Reopen = Rc::new(move || -> std::io::Result<Box<dyn import::ReadSeek + Send>> {
        let (f, _) = crate::store::json::open_input(&path, cap).map_err(std::io::Error::other)?;
        // Small: a parser reading pairs out of file order seeks back often.
        Ok(Box::new(BufReader::with_capacity(8 << 10, f)))
    });
    let mut systems = import::parse_reader_with(format, reader, &file_name, &opts, &reopen).map_err(|e| BadInput(format!("{file}: {format}: {e}")))?;
    if let (true, Some(name)) = (format.per_column(), &args.name) {
        let all = systems.names();
        systems =
            systems.pick(name).ok_or_else(|| BadInput(format!("{file}: --name {name:?}: no such column; the systems in this file are: {}", all.join(", "))))?;
    }
    let sha = match sha {
        Sha::Taken(sha) => sha,
        Sha::Hashing(h) => h.join().map_err(|_| BadInput(format!("{file}: cannot read: hashing it failed")))?,
    }
    .map_err(|e| BadInput(format!("{file}: cannot read: {e}")))?;
    let ctx = Context {
        format,
        file: file.clone(),
        file_sha256: sha,
        file_stem: args.file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "imported".into()),
        file_mtime: mtime_rfc3339(&args.file),
        phase: args.phase.clone(),
        probe: args.probe.clone(),
        // For bins-csv, --name selected a column above; the column is the name.
        name: if format.per_column() { None } else { args.name.clone() },
    };
    let mut checked: Vec<Checked> = Vec::with_capacity(systems.len());
    for i in 0..systems.len() {
        let mut c = check(&systems.get(i), &ctx)?;
        if let Some(before) = checked.last().filter(|b| b.fidelity == c.fidelity) {
            c.fidelity = Rc::clone(&before.fidelity);
        }
        checked.push(c);
    }
    Ok(Converted::Foreign { systems, ctx, checked })
}

/// Build one system's run entry by entry and check it: before anything is
/// stored (and in --dry-run too) every column is checked, so a bad value
/// in the last one stores nothing. The errors come in the order a whole
/// run's checks give them: the first entry that cannot be built, else the
/// first value the history cannot keep, else the first broken invariant.
fn check(p: &Parsed, ctx: &Context) -> Result<Checked, BadInput> {
    let (file, format) = (&ctx.file, ctx.format);
    let built = |e: import::ParseError| BadInput(format!("{file}: {format}: {e}"));
    let (header, entries) = Building::borrowed(p, ctx).map_err(built)?;
    let system = system_of(&header).to_string();
    let (mut storable, mut invariant) = (None, None);
    for (i, r) in entries.enumerate() {
        let r = r.map_err(built)?;
        if storable.is_none() {
            storable = crate::store::check_storable_entry(&r).err();
        }
        if invariant.is_none() {
            invariant = crate::model::check_entry(i, &r, true).err();
        }
    }
    if let Some(e) = storable {
        return Err(BadInput(format!("{file}: {format}: system {system}: {e}; nothing was stored")));
    }
    if let Some(e) = invariant {
        // What every reader checks is checked before anything is stored.
        return Err(BadInput(format!("{file}: {format}: {e}: the converted run would break result schema v1")));
    }
    // A streamed run's notes are whole once its series have all gone by.
    let fidelity = if p.rows.as_ref().is_some_and(|r| r.notes.is_some()) { Building::borrowed(p, ctx).map_err(built)?.0.fidelity } else { header.fidelity };
    Ok(Checked { system, fidelity: Rc::new(fidelity) })
}

fn system_of(run: &Run) -> &str {
    run.imported_from.as_ref().map(|i| i.system.as_str()).unwrap_or(&run.host.hostname)
}

fn convert(args: &ImportArgs) -> Result<Converted, BadInput> {
    let format = detect_format(args)?;
    if format.stored_as_is() {
        as_is(args)
    } else {
        foreign(args, format)
    }
}

impl Converted {
    /// The runs to store (or print), built one at a time, each entry by entry.
    fn runs(self) -> Box<dyn Iterator<Item = anyhow::Result<Saving<'static>>>> {
        match self {
            Converted::AsIs { run, path } => {
                let source = run.source().to_string();
                let entries = entries_of(path.clone(), run.imported_from.is_some());
                // The text is the file's exact bytes.
                Box::new(std::iter::once(Ok(Saving { run: Cow::Owned(*run), text: None, source, entries: Some(entries), text_file: Some(path) })))
            }
            Converted::Foreign { systems, ctx, .. } => {
                let source = ctx.format.name().to_string();
                Box::new(systems.into_iter().map(move |p| {
                    let (file, format) = (ctx.file.clone(), ctx.format);
                    let built = move |e: import::ParseError| anyhow::Error::from(BadInput(format!("{file}: {format}: {e}")));
                    let (header, entries) = Building::new(p, &ctx).map_err(built.clone())?;
                    let entries = entries.map(move |r| r.map_err(built.clone()));
                    Ok(Saving { run: Cow::Owned(header), text: None, source: source.clone(), entries: Some(Box::new(entries)), text_file: None })
                }))
            }
        }
    }
}

/// The entries of a result file, read again as they are stored: the
/// file is parsed on a thread of its own that hands each entry over as it
/// is read (at most one waits), checked again in case the file changed
/// since it was checked; any error ends the list with that error, so the
/// transaction is rolled back (a reader thread the system refuses too).
fn entries_of(path: std::path::PathBuf, imported: bool) -> text::Entries<'static> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<anyhow::Result<crate::model::ProbeResult>>(1);
    let spawned = std::thread::Builder::new().name("rtscope-reread".into()).spawn(move || {
        let sent = tx.clone();
        let each = Box::new(move |i, r: crate::model::ProbeResult| {
            crate::model::check_entry(i, &r, imported)?;
            sent.send(Ok(r)).map_err(|_| "the import stopped".to_string())
        });
        if let Err(e) = crate::store::json::read_run_entries(&path, each) {
            let _ = tx.send(Err(e.into()));
        }
    });
    match spawned {
        Ok(_) => Box::new(rx.into_iter()),
        // No reader (RLIMIT_NPROC): the list is that error.
        Err(e) => Box::new(std::iter::once(Err(crate::sys::pthread::spawn_refused("the thread that reads the file again", &e).into()))),
    }
}

fn check_word(flag: &str, v: &str) -> Result<(), BadInput> {
    if v.trim().is_empty() || v.contains(',') || v.chars().any(char::is_control) {
        return Err(BadInput(format!("{flag} {v:?}: expected a non-empty name without commas")));
    }
    Ok(())
}

/// `--phase`: the same names `run --phase-name` takes (1-64 letters, digits
/// or `-_.:,+=`), so the phase names the lab makes (`guest:cpu:1,fork:1`)
/// import as they are (issue 49: they were refused for their commas).
fn check_phase(v: &str) -> Result<(), BadInput> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.:,+=".contains(c);
    if v.is_empty() || v.len() > 64 || !v.chars().all(ok) {
        return Err(BadInput(format!("--phase {v:?}: use 1-64 letters, digits or -_.:,+= (as run --phase-name; e.g. guest:cpu:1,fork:1)")));
    }
    Ok(())
}

pub(crate) fn cmd(args: &ImportArgs) -> anyhow::Result<u8> {
    check_phase(&args.phase)?;
    if let Some(p) = &args.probe {
        check_word("--probe", p)?;
    }
    if let Some(n) = &args.name {
        check_word("--name", n)?;
    }
    if let Some(t) = &args.tag {
        check_tag(t)?;
    }
    let before = stamp(&args.file);
    let converted = convert(args)?;
    if args.dry_run {
        print_runs(converted)?;
        // What was printed may mix two versions: said, and exit 2.
        return match changed_since(&args.file, &before) {
            Some(e) => Err(e.into()),
            None => Ok(EXIT_OK),
        };
    }
    let mut converted = converted;
    let shown: Vec<(String, String, Rc<Vec<String>>)> = match &mut converted {
        Converted::AsIs { run, .. } => vec![(system_of(run).to_string(), run.source().to_string(), Rc::new(run.fidelity.clone()))],
        Converted::Foreign { ctx, checked, .. } => std::mem::take(checked).into_iter().map(|c| (c.system, ctx.format.name().to_string(), c.fidelity)).collect(),
    };
    let mut store = Store::open(&Location::resolve(args.db.db.as_deref())?)?;
    // One transaction for every run of the file: all stored or none; the
    // file checked unchanged after its last read, before the commit.
    let path = args.file.clone();
    let last = std::iter::once_with(move || changed_since(&path, &before)).flatten().map(|e| Err(e.into()));
    let ids = store.save_all(&mut converted.runs().chain(last), args.tag.as_deref())?;
    for ((system, source, fidelity), id) in shown.into_iter().zip(ids) {
        println!("imported {system} ({source}) as run #{id}");
        for f in fidelity.iter() {
            println!("  fidelity: {f}");
        }
    }
    Ok(EXIT_OK)
}

/// `--dry-run`: each run's text as it would be stored, written as it is made.
fn print_runs(converted: Converted) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = Printed(std::io::BufWriter::new(stdout.lock()));
    for s in converted.runs() {
        text::write_run(&mut s?, &mut out)?;
    }
    std::io::Write::flush(&mut out.0)?;
    Ok(())
}

/// The text of runs to standard output, part by part.
struct Printed<W: std::io::Write>(W);

impl<W: std::io::Write> text::Sink for Printed<W> {
    fn part(&mut self, _seq: i64, text: &str) -> anyhow::Result<()> {
        Ok(self.0.write_all(text.as_bytes())?)
    }
    fn entry(&mut self, _idx: usize, _r: &crate::model::ProbeResult) -> anyhow::Result<()> {
        Ok(())
    }
}
