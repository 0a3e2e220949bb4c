//! Where results are kept. `json`: the exchange format, one file per run,
//! written atomically. The history database that every `rtscope run` and
//! `rtscope import` also saves into: [`Store`], on one of two backends with
//! one schema and one numbering of `migrations` — `sqlite` (embedded, the
//! default: a file) or `pg` (+ `pgconn`: a lab's shared PostgreSQL, chosen
//! by a `postgresql://` URL in `--db` or RTSCOPE_DB). [`resolve_inputs`]
//! turns the arguments of commands that read results (`compare`, `report`,
//! `show`, `check`) — files, run ids, `@tag`s — into runs.

pub mod json;
pub mod migrations;
pub(crate) mod pg;
pub(crate) mod pgconn;
pub(crate) mod sqlite;
pub(crate) mod text;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::BadInput;
use crate::model::Run;

/// One line of `rtscope history`.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct RunRow {
    pub(crate) id: i64,
    pub(crate) started_at: String,
    pub(crate) host: String,
    pub(crate) kernel: String,
    pub(crate) realtime: bool,
    /// The host's preemption model (`host.preempt_model`: none, voluntary,
    /// full, rt, lazy; "" when the source did not say).
    pub(crate) preempt: String,
    pub(crate) probes: String,
    pub(crate) phases: String,
    pub(crate) preset: Option<String>,
    pub(crate) interrupted: bool,
    /// "native", "rtscope-agent" (measured through the agent) or the importer format.
    pub(crate) source: String,
    pub(crate) system: String,
    pub(crate) tags: Vec<String>,
    /// Largest `max_ns` (and `p99_ns`) per phase, in the order the phases ran.
    pub(crate) headline_max_ns: Vec<PhaseMax>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PhaseMax {
    pub(crate) phase: String,
    pub(crate) max_ns: u64,
    /// Largest p99 of the phase's entries; `None` when no entry has one
    /// (summary-only imports).
    pub(crate) p99_ns: Option<u64>,
}

/// `history` filters; `None` = no filter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Exact host name.
    pub(crate) host: Option<String>,
    /// Substring of the kernel release.
    pub(crate) kernel: Option<String>,
    pub(crate) tag: Option<String>,
    /// RFC 3339 UTC lower bound on `started_at` (inclusive).
    pub(crate) since: Option<String>,
    /// RFC 3339 UTC upper bound on `started_at` (exclusive).
    pub(crate) until: Option<String>,
    /// Exact preemption model (`RunRow::preempt`).
    pub(crate) preempt: Option<String>,
}

/// The order of a [`Page`]; ties are broken by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Sort {
    Id,
    #[default]
    Started,
    Host,
    Kernel,
    Preempt,
    /// The run's largest `max_ns` over all its entries.
    Max,
}

impl Sort {
    pub(crate) const ALL: [(&'static str, Sort); 6] =
        [("id", Sort::Id), ("started", Sort::Started), ("host", Sort::Host), ("kernel", Sort::Kernel), ("preempt", Sort::Preempt), ("max", Sort::Max)];
    pub(crate) fn name(self) -> &'static str {
        Sort::ALL.iter().find(|(_, s)| *s == self).map(|(n, _)| *n).unwrap_or("started")
    }
    pub(crate) fn parse(s: &str) -> Option<Sort> {
        Sort::ALL.iter().find(|(n, _)| *n == s).map(|(_, s)| *s)
    }
    /// The ORDER BY keys (both dialects), each followed by `dir`.
    fn order_by(self, desc: bool) -> String {
        let dir = if desc { "DESC" } else { "ASC" };
        let keys: &[&str] = match self {
            Sort::Id => &["runs.id"],
            Sort::Started => &["runs.started_at", "runs.id"],
            Sort::Host => &["runs.host", "runs.started_at", "runs.id"],
            Sort::Kernel => &["runs.kernel", "runs.started_at", "runs.id"],
            Sort::Preempt => &["runs.preempt", "runs.started_at", "runs.id"],
            Sort::Max => &["runs.max_ns", "runs.id"],
        };
        keys.iter().map(|k| format!("{k} {dir}")).collect::<Vec<_>>().join(", ")
    }
}

impl Filter {
    /// The SQL condition of the filters that are set, and their values in
    /// placeholder order. Only set filters appear (never `? IS NULL OR …`),
    /// so each can use its index. `ph(n)` writes placeholder n (SQLite `?n`,
    /// PostgreSQL `$n`); `contains(column, placeholder)` a substring test.
    fn sql(&self, ph: fn(usize) -> String, contains: fn(&str, &str) -> String) -> (String, Vec<String>) {
        let mut conds = Vec::new();
        let mut values = Vec::new();
        let mut add = |value: &Option<String>, cond: &dyn Fn(&str) -> String| {
            if let Some(v) = value {
                values.push(v.clone());
                conds.push(cond(&ph(values.len())));
            }
        };
        add(&self.host, &|p| format!("runs.host = {p}"));
        add(&self.kernel, &|p| contains("runs.kernel", p));
        add(&self.tag, &|p| format!("runs.id IN (SELECT run_id FROM tags WHERE tag = {p})"));
        add(&self.since, &|p| format!("runs.started_at >= {p}"));
        add(&self.until, &|p| format!("runs.started_at < {p}"));
        add(&self.preempt, &|p| format!("runs.preempt = {p}"));
        if conds.is_empty() {
            conds.push("1 = 1".to_string());
        }
        (conds.join(" AND "), values)
    }
}

/// Every number a history database keeps as a signed 64-bit integer must
/// fit one (both backends; past 2^63 - 1 ns is 292 years, which no
/// measurement gives). Checked before anything is stored, so a bad value
/// is exit 2 naming the entry and field, with nothing written (a run is
/// checked entry by entry as it is built).
pub(crate) fn check_storable_entry(r: &crate::model::ProbeResult) -> Result<(), String> {
    const MAX: u64 = i64::MAX as u64;
    let mut fields: Vec<(String, u64)> = vec![
        ("interval_ns".into(), r.interval_ns.0),
        ("samples".into(), r.samples),
        ("overruns".into(), r.overruns),
        ("min_ns".into(), r.min_ns.0),
        ("max_ns".into(), r.max_ns.0),
    ];
    fields.extend(r.percentiles_ns.iter().map(|(k, v)| (format!("percentiles_ns.{k}"), v.0)));
    for b in &r.histogram {
        fields.extend([("histogram lo_ns".into(), b.lo_ns.0), ("histogram hi_ns".into(), b.hi_ns.0), ("histogram count".into(), b.count)]);
    }
    if let Some((name, v)) = fields.into_iter().find(|(_, v)| *v > MAX) {
        let mut entry = format!("{}/{}", r.phase, r.probe);
        if let Some(v) = &r.variant {
            entry.push_str(&format!(" ({v})"));
        }
        if let Some(t) = r.thread {
            entry.push_str(&format!(", thread {t}"));
        }
        return Err(format!(
            "entry {entry}: {name} = {v} is past the largest value the history keeps ({MAX}, 292 years in ns); \
             check the value in the file"
        ));
    }
    Ok(())
}

/// One page of the runs matching a filter, in a [`Sort`] order.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageQuery {
    pub(crate) filter: Filter,
    pub(crate) sort: Sort,
    pub(crate) desc: bool,
    pub(crate) offset: u64,
    /// `None`: every run from `offset` on.
    pub(crate) limit: Option<u64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Page {
    /// Runs matching the filter, on every page.
    pub(crate) total: u64,
    pub(crate) offset: u64,
    pub(crate) runs: Vec<RunRow>,
}

/// The values the runs list can be filtered by, each sorted.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Facets {
    pub(crate) hosts: Vec<String>,
    pub(crate) preempt: Vec<String>,
    pub(crate) tags: Vec<String>,
}

/// Where the history database is.
#[derive(Debug, Clone)]
pub enum Location {
    /// An SQLite file (see `sqlite::resolve_path` for the default).
    File(PathBuf),
    /// A PostgreSQL database (`postgresql://user@host:port/db`).
    Postgres(Box<pgconn::Target>),
}

impl Location {
    /// `--db` if given, else RTSCOPE_DB, else the SQLite default: a
    /// `postgresql://` or `postgres://` URL selects PostgreSQL, anything
    /// else is an SQLite file path.
    pub fn resolve(flag: Option<&Path>) -> Result<Location, BadInput> {
        // The one precedence (flag, RTSCOPE_DB, XDG default); only the
        // first two can be a URL.
        let p = sqlite::resolve_path(flag)?;
        let Some(text) = p.to_str() else { return Ok(Location::File(p)) };
        if pgconn::is_url(text) {
            return Ok(Location::Postgres(Box::new(pgconn::Target::parse(text)?)));
        }
        // `SCHEME://…` that is not PostgreSQL's: never an SQLite file named
        // after the URL (with its password in a directory name).
        if let Some(scheme) = pgconn::url_scheme(text) {
            return Err(BadInput(format!(
                "--db {}: unknown URL scheme {scheme:?}; a history database is postgresql://USER@HOST[:PORT]/DATABASE \
                 (or postgres://) or an SQLite file path (write ./{scheme}://… for a file of that name)",
                pgconn::redact_secrets(text)
            )));
        }
        Ok(Location::File(p))
    }
    /// How messages name it (a URL without its password).
    pub(crate) fn shown(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Postgres(t) => t.shown().to_string(),
        }
    }
}

/// The history database, on either backend; every store command goes
/// through it.
pub enum Store {
    Sqlite(sqlite::Store),
    Postgres(Box<pg::Store>),
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Postgres($s) => $e,
        }
    };
}

impl Store {
    /// Open for writing: create the database (SQLite file, or PostgreSQL
    /// schema) or migrate it; exit 2 for one that is not usable (down,
    /// refusing, made by a newer rtscope).
    pub fn open(loc: &Location) -> anyhow::Result<Store> {
        Ok(match loc {
            Location::File(p) => Store::Sqlite(sqlite::Store::open(p)?),
            Location::Postgres(t) => Store::Postgres(Box::new(pg::Store::open(t)?)),
        })
    }
    /// Open for reading, never creating anything: `None` when there is no
    /// history there yet.
    pub(crate) fn open_if_exists(loc: &Location) -> anyhow::Result<Option<Store>> {
        Ok(match loc {
            Location::File(p) => sqlite::Store::open_read(p)?.map(Store::Sqlite),
            Location::Postgres(t) => pg::Store::open_if_exists(t)?.map(|s| Store::Postgres(Box::new(s))),
        })
    }
    /// Open to change stored runs (`tag`, `rm`): exit 2 when there is no
    /// history there; an SQLite file must pass `PRAGMA quick_check` first.
    pub(crate) fn open_existing_rw(loc: &Location) -> anyhow::Result<Store> {
        match loc {
            Location::File(p) => Ok(Store::Sqlite(sqlite::Store::open_existing_rw(p)?)),
            Location::Postgres(_) => Store::open_existing(loc),
        }
    }
    /// Open for reading stored runs (an SQLite file read-only, never
    /// changed): exit 2 when there is no history there.
    pub fn open_existing(loc: &Location) -> anyhow::Result<Store> {
        match loc {
            Location::File(p) => Ok(Store::Sqlite(sqlite::Store::open_existing(p)?)),
            Location::Postgres(t) => match pg::Store::open_if_exists(t)? {
                Some(s) => Ok(Store::Postgres(Box::new(s))),
                None => Err(BadInput(format!(
                    "history database {} holds no rtscope history yet (`rtscope run` or `rtscope import` with this --db creates it)",
                    t.shown()
                ))
                .into()),
            },
        }
    }
    /// [`Store::open`] for a run about to measure: an SQLite file must also
    /// pass `PRAGMA quick_check` and have room on its filesystem, checked
    /// before anything is written (exit 2 otherwise).
    pub(crate) fn open_for_run(loc: &Location) -> anyhow::Result<Store> {
        Ok(match loc {
            Location::File(p) => Store::Sqlite(sqlite::Store::open_for_run(p)?),
            Location::Postgres(t) => Store::Postgres(Box::new(pg::Store::open(t)?)),
        })
    }
    /// How messages name the database (a URL without its password).
    pub(crate) fn shown(&self) -> String {
        match self {
            Store::Sqlite(s) => s.path().display().to_string(),
            Store::Postgres(s) => s.shown().to_string(),
        }
    }
    pub fn save(&mut self, run: &Run, json: &str, source: &str) -> anyhow::Result<i64> {
        each!(self, s => s.save(run, json, source))
    }
    /// Save runs as `runs` produces them (one in memory at a time, its
    /// text written by parts: `text`), each tagged `tag` if given, in one
    /// transaction: all or none. Returns the ids in order.
    pub(crate) fn save_all(&mut self, runs: text::Runs<'_, '_>, tag: Option<&str>) -> anyhow::Result<Vec<i64>> {
        each!(self, s => s.save_all(runs, tag))
    }
    /// Every run matching `f`, oldest first.
    pub(crate) fn list(&mut self, f: &Filter) -> anyhow::Result<Vec<RunRow>> {
        Ok(self.page(&PageQuery { filter: f.clone(), ..PageQuery::default() })?.runs)
    }
    /// One page of the runs matching `q.filter`, with their count.
    pub(crate) fn page(&mut self, q: &PageQuery) -> anyhow::Result<Page> {
        each!(self, s => s.page(q))
    }
    /// A PostgreSQL connection that closed is opened again (SQLite: nothing
    /// to do); for long-lived readers such as `rtscope serve`.
    pub(crate) fn reconnect_if_closed(&mut self) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(_) => Ok(()),
            Store::Postgres(s) => s.reconnect_if_closed(),
        }
    }
    /// The hosts, preemption models and tags in the history.
    pub(crate) fn facets(&mut self) -> anyhow::Result<Facets> {
        each!(self, s => s.facets())
    }
    /// The stored JSON text of run `id`, exactly as saved.
    pub(crate) fn json_text(&mut self, id: i64) -> anyhow::Result<String> {
        each!(self, s => s.json_text(id))
    }
    pub fn load(&mut self, id: i64) -> anyhow::Result<Run> {
        let text = self.json_text(id)?;
        serde_json::from_str(&text).with_context(|| format!("run {id} in {} does not parse as result schema v1", self.shown()))
    }
    pub(crate) fn exists(&mut self, id: i64) -> anyhow::Result<bool> {
        each!(self, s => s.exists(id))
    }
    pub(crate) fn tags(&mut self, id: i64) -> anyhow::Result<Vec<String>> {
        each!(self, s => s.tags(id))
    }
    /// Cap the client-side cache (SQLite's page cache) at `kib` KiB; the
    /// PostgreSQL client keeps no cache that grows with the database.
    pub(crate) fn limit_cache(&self, kib: u32) -> anyhow::Result<()> {
        match self {
            Store::Sqlite(s) => s.limit_cache(kib),
            Store::Postgres(_) => Ok(()),
        }
    }
    /// Append a monitor's closed windows.
    pub(crate) fn append_windows(&mut self, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
        each!(self, s => s.append_windows(monitor, windows))
    }
    /// A monitor's windows, in order.
    pub(crate) fn windows(&mut self, monitor: &str) -> anyhow::Result<Vec<crate::model::Window>> {
        each!(self, s => s.windows(monitor))
    }
    pub(crate) fn tag(&mut self, id: i64, tag: &str) -> anyhow::Result<bool> {
        each!(self, s => s.tag(id, tag))
    }
    pub(crate) fn untag(&mut self, id: i64, tag: &str) -> anyhow::Result<bool> {
        each!(self, s => s.untag(id, tag))
    }
    pub(crate) fn remove(&mut self, id: i64) -> anyhow::Result<()> {
        each!(self, s => s.remove(id))
    }
    /// Store an experiment's design record (JSON text, `factors::stored`).
    pub(crate) fn save_design(&mut self, experiment: &str, design: &str) -> anyhow::Result<()> {
        each!(self, s => s.save_design(experiment, design))
    }
    /// An experiment's design record, if one was stored (experiments made
    /// before schema version 5 have none).
    pub(crate) fn design(&mut self, experiment: &str) -> anyhow::Result<Option<String>> {
        each!(self, s => s.design(experiment))
    }
    pub(crate) fn ids_with_tag(&mut self, tag: &str) -> anyhow::Result<Vec<i64>> {
        each!(self, s => s.ids_with_tag(tag))
    }
    /// Histogram buckets `(lo, hi, count)` of result `idx` of run `id`.
    pub fn buckets(&mut self, id: i64, idx: usize) -> anyhow::Result<Vec<(u64, u64, u64)>> {
        each!(self, s => s.buckets(id, idx))
    }
}

/// Lowercase hex SHA-256 of `bytes`.
/// SHA-256 of everything `r` yields, read in 64 KiB pieces, as lowercase hex.
pub(crate) fn sha256_reader(mut r: impl std::io::Read) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, RFC 3339 in UTC.
pub(crate) fn now_rfc3339() -> String {
    crate::units::now_rfc3339_precise()
}

/// One run named on a command line, with the label to show for it.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    /// The file path, `#ID`, or `#ID (@tag)`.
    pub(crate) label: String,
    pub(crate) run: Run,
}

/// Resolve command-line inputs in order: `@TAG` = every stored run with that
/// tag (oldest first); an existing path = a result file; a bare number that is
/// not an existing path = a stored run id. The database (`db_flag`, else
/// RTSCOPE_DB / XDG default) is opened only when an id or tag is used.
pub(crate) fn resolve_inputs(args: &[String], db_flag: Option<&Path>) -> anyhow::Result<Vec<Input>> {
    let mut store: Option<Store> = None;
    let open = |store: &mut Option<Store>| -> anyhow::Result<()> {
        if store.is_none() {
            *store = Some(Store::open_existing(&Location::resolve(db_flag)?)?);
        }
        Ok(())
    };
    let mut out = Vec::new();
    for a in args {
        if let Some(tag) = a.strip_prefix('@') {
            open(&mut store)?;
            let s = store.as_mut().expect("opened above");
            let ids = s.ids_with_tag(tag)?;
            if ids.is_empty() {
                return Err(BadInput(format!("{a}: no stored run has the tag {tag:?} (in {}); `rtscope history` lists tags", s.shown())).into());
            }
            for id in ids {
                out.push(Input { label: format!("#{id} ({a})"), run: s.load(id)? });
            }
        } else if Path::new(a).exists() {
            out.push(Input { label: a.clone(), run: json::read_run(Path::new(a))? });
        } else if let Ok(id) = a.parse::<i64>() {
            open(&mut store)?;
            let s = store.as_mut().expect("opened above");
            out.push(Input { label: format!("#{id}"), run: s.load(id)? });
        } else {
            // Let the file reader say what is wrong (it names the file and
            // the OS error), then say what else an input can be.
            let e = json::read_run(Path::new(a)).err().map(|e| e.0).unwrap_or_else(|| format!("{a}: cannot read"));
            return Err(BadInput(format!("{e}; an input is a result file, a stored run id (a number) or @TAG")).into());
        }
    }
    Ok(out)
}
