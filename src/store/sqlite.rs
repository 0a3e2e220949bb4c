//! The result history: an embedded SQLite database (bundled SQLite, through
//! rusqlite) holding every saved run — native `rtscope run`s and imported
//! results alike — queryable by host, kernel, date and tag.
//!
//! Main type: [`Store`]. The JSON result file stays the exchange format; each
//! row of `runs` keeps the run's full schema v1 JSON text (for a native run,
//! the exact bytes of the file, so `export` is byte-identical), and the
//! `results`/`buckets` tables hold the same numbers as columns.
//!
//! Safety rules, each with its reason:
//! - A file at the path that is not empty and does not start with SQLite's
//!   16-byte magic header is refused before SQLite ever opens it: SQLite
//!   would otherwise happily turn a stray results.json into a database on the
//!   first write. Errors SQLite reports later (`SQLITE_NOTADB`,
//!   `SQLITE_CORRUPT`) become the same kind of exit-2 message.
//! - A database whose `user_version` is newer than [`migrations::latest`] is
//!   refused before anything is written (not even the WAL switch, which
//!   rewrites header bytes 18–19).
//! - WAL journal and a 30 s busy timeout: two `rtscope run`s finishing at the
//!   same moment both get saved; the second waits for the first's short
//!   write transaction instead of failing with "database is locked".
//! - Every write is one `BEGIN IMMEDIATE` transaction, so a crash mid-save
//!   leaves the run either fully saved or absent.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use super::migrations;
use crate::error::BadInput;
use crate::model::Run;
use crate::stats::PERCENTILES;

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How long a writer waits for another process's transaction to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the history database is: `--db` if given, else `$RTSCOPE_DB`, else
/// `$XDG_DATA_HOME/rtscope/results.db`, else `~/.local/share/rtscope/results.db`
/// (the XDG base-directory default).
pub fn resolve_path(flag: Option<&Path>) -> Result<PathBuf, BadInput> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("RTSCOPE_DB") {
        return Ok(p);
    }
    // The XDG spec says a relative $XDG_DATA_HOME is invalid and must be ignored.
    if let Some(d) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Ok(d.join("rtscope").join("results.db"));
    }
    if let Some(h) = var("HOME") {
        return Ok(h.join(".local/share/rtscope/results.db"));
    }
    Err(BadInput(
        "no place for the history database: neither --db, RTSCOPE_DB, XDG_DATA_HOME nor HOME is set; pass --db PATH or --no-store".into(),
    ))
}

/// Turn an SQLite error into exit 2 when it means "this file is not a usable
/// rtscope database", else into an ordinary failure naming the database.
fn sql_err(path: &Path, e: rusqlite::Error) -> anyhow::Error {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        let why = match f.code {
            ErrorCode::NotADatabase => Some("is not an SQLite database"),
            ErrorCode::DatabaseCorrupt => Some("is a corrupt SQLite database"),
            ErrorCode::CannotOpen => Some("cannot be opened (missing directory or no permission?)"),
            ErrorCode::PermissionDenied | ErrorCode::ReadOnly => Some("is not writable"),
            ErrorCode::DiskFull => Some("cannot grow: its filesystem is full"),
            ErrorCode::SystemIoFailure => Some("cannot be written (I/O error; is its filesystem full?)"),
            _ => None,
        };
        if let Some(why) = why {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if matches!(f.code, ErrorCode::PermissionDenied | ErrorCode::ReadOnly | ErrorCode::CannotOpen)
                && path.exists()
                && crate::sys::stat::file_writable(path)
                && !crate::sys::stat::dir_writable(dir)
            {
                return BadInput(format!(
                    "history database {} cannot be written: its directory {} is not writable (SQLite keeps its journal files beside the database); \
                     nothing was changed. Reading commands still work; to store, use another file with --db PATH or RTSCOPE_DB, or --no-store",
                    path.display(),
                    dir.display()
                ))
                .into();
            }
            return BadInput(format!(
                "history database {} {why}; nothing was changed. Use another file with --db PATH or RTSCOPE_DB, or --no-store",
                path.display()
            ))
            .into();
        }
    }
    anyhow::Error::new(e).context(format!("history database {}", path.display()))
}

/// `u64` → SQLite INTEGER (signed 64-bit); values past `i64::MAX` (292 years
/// in ns) cannot come from a real measurement and are refused.
fn int(v: u64) -> rusqlite::Result<i64> {
    i64::try_from(v).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn opt_int(v: Option<usize>) -> rusqlite::Result<Option<i64>> {
    v.map(|x| int(x as u64)).transpose()
}

pub use super::{Facets, Page, PageQuery, PhaseMax, RunRow};

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Up to this size the whole history file is checked before a run.
/// `PRAGMA quick_check` reads every page (about 3 ms of CPU per MiB on the
/// development VM), so on a larger history every run would pay for all the
/// runs before it; above it only the header, the schema and the version
/// are read before measuring, and a damaged page is found when the run is
/// saved (the result file is written first and says how to import it).
pub const FULL_CHECK_MAX_BYTES: u64 = 16 << 20;

/// rtscope's mark in the SQLite header (`PRAGMA application_id`, "rtsc"):
/// set when rtscope creates or migrates a database, so another program's
/// SQLite file is told apart before anything is written to it.
pub const APPLICATION_ID: i64 = 0x7274_7363;

/// What an SQLite file at the history path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No tables, no version: a new database (or an empty file).
    Empty,
    /// An rtscope history at this schema version.
    Ours(u32),
}

/// How much checking a write-open does before the first write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `import`, `tag`, `rm`: `PRAGMA quick_check` on the whole file.
    Full,
    /// A run about to measure: quick_check up to [`FULL_CHECK_MAX_BYTES`]
    /// (every run would pay for the whole history otherwise) and room on
    /// the filesystem.
    Run,
}

/// Tell an rtscope history from an empty file and from another program's
/// database, reading only (no write, no journal switch). Exit 2 for a
/// foreign file, naming what it holds.
fn identify(conn: &Connection, path: &Path) -> anyhow::Result<Kind> {
    let e = |e| sql_err(path, e);
    // One read transaction: the mark, the version and the tables from the
    // same snapshot. Read one by one, another rtscope creating the database
    // at this instant (its tables and its mark land in one commit) could be
    // seen half: no mark yet, then its tables — "another program's
    // database" (seen once with 8 imports into a new file at once). Dropped
    // at the end of this function: a rollback of a transaction that read.
    let _snapshot = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred).map_err(e)?;
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(e)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(e)?;
    let version = version.max(0) as u32;
    let tables: Vec<String> = {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
            .map_err(e)?;
        let rows = st.query_map([], |r| r.get(0)).map_err(e)?;
        rows.collect::<rusqlite::Result<_>>().map_err(e)?
    };
    let ours = app == APPLICATION_ID
        // Made by an rtscope from before the mark: its version and tables say so.
        || (app == 0 && version >= 1 && tables.iter().any(|t| t == "runs") && tables.iter().any(|t| t == "results"));
    if ours {
        return Ok(Kind::Ours(version));
    }
    if app == 0 && version == 0 && tables.is_empty() {
        return Ok(Kind::Empty);
    }
    let what = if app != 0 {
        format!("application id {app:#x}, not rtscope's")
    } else if tables.is_empty() {
        format!("schema version {version} and no tables")
    } else {
        let mut list = tables.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        if tables.len() > 8 {
            list.push_str(", …");
        }
        format!("tables that are not rtscope's: {list}")
    };
    Err(BadInput(format!(
        "{} is another program's SQLite database ({what}); refusing to use it as the history database and leaving it untouched. \
         Use another file with --db PATH or RTSCOPE_DB, or --no-store",
        path.display()
    ))
    .into())
}

impl Store {
    /// Open the database of a command that only reads (history, show,
    /// export, serve, ids and tags in report/compare): read-only, never
    /// creating or changing the file (not even the switch to WAL); a
    /// missing database is bad input (exit 2).
    pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
        Store::open_read(path)?.ok_or_else(|| no_history(path))
    }

    /// Open an existing database to change what is stored (`tag`, `rm`):
    /// a missing one is bad input, never created; the whole file must pass
    /// `PRAGMA quick_check` first (exit 2 otherwise, nothing written).
    pub fn open_existing_rw(path: &Path) -> anyhow::Result<Store> {
        if std::fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true) {
            check_header(path)?;
            return Err(no_history(path));
        }
        Store::open_with(path, Check::Full)
    }

    /// Open for reading: `None` when there is no history there (no file, an
    /// empty file, an empty database), nothing created. An rtscope history
    /// from an older schema is upgraded when this process may write it
    /// (checked first like any write), else refused with advice.
    pub fn open_read(path: &Path) -> anyhow::Result<Option<Store>> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Ok(m) if m.is_file() && m.len() == 0 => return Ok(None),
            _ => {}
        }
        check_header(path)?;
        let store = Store::open_read_only(path)?;
        let version = match identify(&store.conn, path)? {
            Kind::Empty => return Ok(None),
            Kind::Ours(v) => v,
        };
        store.refuse_newer(version)?;
        store.check_schema(version)?;
        if version == migrations::latest() {
            return Ok(Some(store));
        }
        drop(store);
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if crate::sys::stat::file_writable(path) && crate::sys::stat::dir_writable(dir) {
            return Store::open_with(path, Check::Full).map(Some);
        }
        Err(BadInput(format!(
            "history database {} is from an older rtscope and needs upgrading (schema version {version}, now {}), \
             which this process cannot do: it may not write the file or its directory. Run any rtscope command with \
             write access to it once, or copy it somewhere writable and pass --db",
            path.display(),
            migrations::latest()
        ))
        .into())
    }

    /// The connection of [`Store::open_read`]: `mode=ro`; when that cannot
    /// open the file — a WAL database whose `-shm` cannot be created (a
    /// read-only directory or mount, a full filesystem) — `immutable`
    /// (SQLite then reads the file as it is, without locking).
    fn open_read_only(path: &Path) -> anyhow::Result<Store> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let try_open = |target: &str| -> rusqlite::Result<Connection> {
            let conn = Connection::open_with_flags(target, flags)?;
            conn.busy_timeout(BUSY_TIMEOUT)?;
            // The first read is what fails when the -shm cannot be made.
            conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))?;
            Ok(conn)
        };
        let plain = path.to_str().map(|p| format!("file:{}?mode=ro", uri_escape(p)));
        let immutable = path.to_str().map(|p| format!("file:{}?immutable=1", uri_escape(p)));
        let opened = match plain.as_deref().map(try_open) {
            Some(Ok(c)) => Ok(c),
            Some(Err(first)) => match immutable.as_deref().map(try_open) {
                Some(Ok(c)) => Ok(c),
                _ => Err(first),
            },
            None => Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY),
        };
        let conn = opened.map_err(|e| sql_err(path, e))?;
        Ok(Store { conn, path: path.to_path_buf() })
    }

    /// The tables and columns of an rtscope database at `version` must be
    /// the ones its migrations made: a file changed by another program or by
    /// hand is refused (exit 2) before a query fails on it.
    fn check_schema(&self, version: u32) -> anyhow::Result<()> {
        let e = |e| sql_err(&self.path, e);
        let mut st = self.conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid").map_err(e)?;
        for (table, want) in migrations::columns_at(version.min(migrations::latest())) {
            let have: Vec<String> =
                st.query_map([&table], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<_>>().map_err(e)?;
            if have != want {
                let found = if have.is_empty() { "is missing".to_string() } else { format!("has the columns {}", have.join(", ")) };
                return Err(BadInput(format!(
                    "history database {}: table {table} {found}, but an rtscope database of schema version {version} has {}; \
                     the file was changed by another program or by hand. Nothing was changed. Use another file with --db PATH \
                     or RTSCOPE_DB (runs can be copied out with `sqlite3 {} \"SELECT json FROM runs\"`)",
                    self.path.display(),
                    want.join(", "),
                    self.path.display()
                ))
                .into());
            }
        }
        Ok(())
    }

    /// SQLite's `PRAGMA quick_check`: a partly corrupt file is refused
    /// before anything is written to it (exit 2 naming the file).
    fn quick_check(&self) -> anyhow::Result<()> {
        let problems: Vec<String> = {
            let mut st = self.conn.prepare("PRAGMA quick_check(5)").map_err(|e| sql_err(&self.path, e))?;
            let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(|e| sql_err(&self.path, e))?;
            rows.collect::<rusqlite::Result<_>>().map_err(|e| sql_err(&self.path, e))?
        };
        if problems.first().map(String::as_str) != Some("ok") {
            return Err(BadInput(format!(
                "history database {} is partly corrupt (SQLite quick_check: {}); nothing was measured or changed. \
                 Recover it (`sqlite3 {} .recover`), or use another file with --db PATH, or --no-store",
                self.path.display(),
                problems.join("; "),
                self.path.display()
            ))
            .into());
        }
        Ok(())
    }

    /// Before measuring into this database: room on its filesystem (exit 2
    /// naming the file).
    fn check_room(&self) -> anyhow::Result<()> {
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        match crate::sys::stat::free_bytes(dir) {
            Ok(free) if free < crate::sys::stat::MIN_FREE_BYTES => Err(BadInput(format!(
                "history database {}: its filesystem has only {} free, less than the {} a run needs; \
                 free some space, or use another file with --db PATH, or --no-store",
                self.path.display(),
                crate::units::fmt_bytes(free),
                crate::units::fmt_bytes(crate::sys::stat::MIN_FREE_BYTES)
            ))
            .into()),
            _ => Ok(()),
        }
    }

    /// Open the database for storing runs (`import`), creating it (and its
    /// directory) when missing, bringing its schema up to date. Exit 2,
    /// with nothing written, for: a non-SQLite, foreign, corrupt (`PRAGMA
    /// quick_check`) or hand-changed file, a database from a newer rtscope.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_with(path, Check::Full)
    }

    /// [`Store::open`] for a run about to measure: before anything is
    /// written (not even the WAL switch), `PRAGMA quick_check` must pass
    /// (files up to [`FULL_CHECK_MAX_BYTES`]) and the filesystem must have
    /// room.
    pub fn open_for_run(path: &Path) -> anyhow::Result<Store> {
        Store::open_with(path, Check::Run)
    }

    fn open_with(path: &Path, check: Check) -> anyhow::Result<Store> {
        check_header(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::sys::stat::create_dirs(dir)
                .with_context(|| format!("creating directory {} for the history database", dir.display()))?;
        }
        let conn = Connection::open(path).map_err(|e| sql_err(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sql_err(path, e))?;
        conn.pragma_update(None, "foreign_keys", true).map_err(|e| sql_err(path, e))?;
        let mut store = Store { conn, path: path.to_path_buf() };

        // Read-only checks first: nothing may be written to a foreign,
        // newer, hand-changed or corrupt database.
        let version = match identify(&store.conn, path)? {
            Kind::Empty => 0,
            Kind::Ours(v) => {
                store.refuse_newer(v)?;
                store.check_schema(v)?;
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                if check == Check::Full || size <= FULL_CHECK_MAX_BYTES {
                    store.quick_check()?;
                }
                v
            }
        };
        let for_a_run = check == Check::Run;
        if for_a_run {
            store.check_room()?;
        }
        store.enable_wal()?;
        // A write transaction only when there is something to migrate.
        if version < migrations::latest() {
            store.migrate()?;
        }
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn refuse_newer(&self, version: u32) -> anyhow::Result<()> {
        if version > migrations::latest() {
            return Err(BadInput(format!(
                "history database {} was made by a newer rtscope (database schema version {version}, this rtscope knows up to {}); nothing was changed. Use a newer rtscope, or another file with --db",
                self.path.display(),
                migrations::latest()
            ))
            .into());
        }
        Ok(())
    }

    fn enable_wal(&self) -> anyhow::Result<()> {
        // Switching to WAL needs a moment of exclusive access; when another
        // process is creating the same database at this instant SQLite may
        // answer BUSY without calling the busy handler, so retry briefly.
        let mut tries = 0;
        loop {
            match self.conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
                Ok(_) => return Ok(()),
                Err(rusqlite::Error::SqliteFailure(f, _))
                    if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) && tries < 300 =>
                {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(sql_err(&self.path, e)),
            }
        }
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql_err(&path, e))?;
        // Re-read inside the write lock: another process may have migrated
        // between our first look and now.
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| sql_err(&path, e))?;
        let v = v.max(0) as u32;
        if v > migrations::latest() {
            drop(tx);
            return self.refuse_newer(v);
        }
        for (i, m) in migrations::MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(m.sqlite).map_err(|e| sql_err(&path, e)).with_context(|| format!("applying migration {}", i + 1))?;
        }
        if v < migrations::latest() {
            tx.pragma_update(None, "user_version", migrations::latest()).map_err(|e| sql_err(&path, e))?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| sql_err(&path, e))?;
        tx.commit().map_err(|e| sql_err(&path, e))?;
        Ok(())
    }

    /// Save `run`, whose JSON text is `json` (for a native run: the file's
    /// exact bytes). `source` is "native" or an importer format. Returns the id.
    pub fn save(&mut self, run: &Run, json: &str, source: &str) -> anyhow::Result<i64> {
        Ok(self.save_all(&[(run, json, source)], None)?[0])
    }

    /// Save several runs (each `(run, json, source)` as in [`Store::save`]),
    /// each tagged `tag` if given, in one transaction: all are stored or
    /// none (an import of a file with many columns, stopped or failing at
    /// any point, leaves nothing half-imported). Returns the ids in order.
    pub fn save_all(&mut self, runs: &[(&Run, &str, &str)], tag: Option<&str>) -> anyhow::Result<Vec<i64>> {
        let path = self.path.clone();
        let saved_at = crate::store::now_rfc3339();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sql_err(&path, e))?;
        let mut ids = Vec::with_capacity(runs.len());
        for &(run, json, source) in runs {
            let id = insert_run(&tx, &path, run, json, source, &saved_at).map_err(|e| exhausted_or(&tx, &path, e))?;
            if let Some(t) = tag {
                tx.execute("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)", params![id, t])
                    .map_err(|e| sql_err(&path, e))?;
            }
            ids.push(id);
        }
        tx.commit().map_err(|e| sql_err(&path, e))?;
        Ok(ids)
    }

    /// One page of the runs matching `q.filter`, with their count: one
    /// query for the count, one for the page, then the tags and the
    /// per-phase headline of each run on it.
    pub fn page(&self, q: &PageQuery) -> anyhow::Result<Page> {
        use rusqlite::types::Value;
        let e = |e| sql_err(&self.path, e);
        let (cond, values) = q.filter.sql(|n| format!("?{n}"), |col, p| format!("instr({col}, {p}) > 0"));
        let mut args: Vec<Value> = values.into_iter().map(Value::Text).collect();
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let total: i64 = tx
            .query_row(&format!("SELECT COUNT(*) FROM runs WHERE {cond}"), rusqlite::params_from_iter(args.iter()), |r| r.get(0))
            .map_err(e)?;
        let n = args.len();
        args.push(Value::Integer(q.limit.map(|l| l.min(i64::MAX as u64) as i64).unwrap_or(-1)));
        args.push(Value::Integer(q.offset.min(i64::MAX as u64) as i64));
        let mut stmt = tx
            .prepare(&format!(
                "SELECT id, started_at, host, kernel, realtime, probes, phases, preset, interrupted, source, system, preempt
                 FROM runs WHERE {cond} ORDER BY {} LIMIT ?{} OFFSET ?{}",
                q.sort.order_by(q.desc),
                n + 1,
                n + 2
            ))
            .map_err(e)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    host: r.get(2)?,
                    kernel: r.get(3)?,
                    realtime: r.get(4)?,
                    probes: r.get(5)?,
                    phases: r.get(6)?,
                    preset: r.get(7)?,
                    interrupted: r.get(8)?,
                    source: r.get(9)?,
                    system: r.get(10)?,
                    preempt: r.get(11)?,
                    tags: Vec::new(),
                    headline_max_ns: Vec::new(),
                })
            })
            .map_err(e)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(e)?;
        drop(stmt);
        let mut out = Vec::with_capacity(rows.len());
        {
            let mut tags = tx.prepare_cached("SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag").map_err(e)?;
            let mut heads = tx
                .prepare_cached(
                    "SELECT phase, MAX(max_ns), MAX(p99_ns) FROM results WHERE run_id = ?1 GROUP BY phase ORDER BY MIN(idx)",
                )
                .map_err(e)?;
            for mut row in rows {
                row.tags = tags.query_map([row.id], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<_>>().map_err(e)?;
                row.headline_max_ns = heads
                    .query_map([row.id], |r| {
                        Ok(PhaseMax {
                            phase: r.get(0)?,
                            max_ns: r.get::<_, i64>(1)?.max(0) as u64,
                            p99_ns: r.get::<_, Option<i64>>(2)?.map(|v| v.max(0) as u64),
                        })
                    })
                    .map_err(e)?
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(e)?;
                out.push(row);
            }
        }
        tx.commit().map_err(e)?;
        Ok(Page { total: total.max(0) as u64, offset: q.offset, runs: out })
    }

    /// The distinct hosts, preemption models and tags (each from an index).
    pub fn facets(&self) -> anyhow::Result<Facets> {
        let e = |e| sql_err(&self.path, e);
        let col = |sql: &str| -> anyhow::Result<Vec<String>> {
            let mut st = self.conn.prepare(sql).map_err(e)?;
            let v = st.query_map([], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<Vec<String>>>().map_err(e)?;
            Ok(v)
        };
        Ok(Facets {
            hosts: col("SELECT DISTINCT host FROM runs ORDER BY host")?,
            preempt: col("SELECT DISTINCT preempt FROM runs ORDER BY preempt")?,
            tags: col("SELECT DISTINCT tag FROM tags ORDER BY tag")?,
        })
    }

    /// The stored JSON text of run `id` (exit 2 when there is no such run).
    pub fn json_text(&self, id: i64) -> anyhow::Result<String> {
        let t: Option<String> = self
            .conn
            .query_row("SELECT json FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| sql_err(&self.path, e))?;
        t.ok_or_else(|| self.no_such_run(id))
    }

    fn no_such_run(&self, id: i64) -> anyhow::Error {
        BadInput(format!("no run with id {id} in {}; `rtscope history` lists the ids", self.path.display())).into()
    }

    pub fn exists(&self, id: i64) -> anyhow::Result<bool> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .map_err(|e| sql_err(&self.path, e))?;
        Ok(n > 0)
    }

    pub fn tags(&self, id: i64) -> anyhow::Result<Vec<String>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self.conn.prepare_cached("SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag").map_err(e)?;
        let tags = stmt.query_map([id], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<Vec<String>>>().map_err(e)?;
        Ok(tags)
    }

    /// Cap SQLite's page cache at `kib` KiB for this connection. A monitor
    /// appends for days: its memory must not grow with the database (the
    /// default cache, 2 MB, fills as the file grows).
    pub fn limit_cache(&self, kib: u32) -> anyhow::Result<()> {
        self.conn.pragma_update(None, "cache_size", -(kib as i64)).map_err(|e| sql_err(&self.path, e))?;
        Ok(())
    }

    /// Append a monitor's closed windows (one transaction).
    pub fn append_windows(&mut self, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
        let path = self.path.clone();
        let e = |e| sql_err(&path, e);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO windows (monitor, idx, started_at, duration_ns, phase, probe, variant, thread, cpu,
                        samples, overruns, min_ns, p50_ns, p99_ns, max_ns, sum_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                )
                .map_err(e)?;
            for w in windows {
                st.execute(params![
                    monitor,
                    int(w.index).map_err(e)?,
                    w.started_at,
                    int(w.duration_ns.0).map_err(e)?,
                    w.phase,
                    w.probe,
                    w.variant,
                    opt_int(w.thread).map_err(e)?,
                    opt_int(w.cpu).map_err(e)?,
                    int(w.samples).map_err(e)?,
                    int(w.overruns).map_err(e)?,
                    int(w.min_ns.0).map_err(e)?,
                    int(w.p50_ns.0).map_err(e)?,
                    int(w.p99_ns.0).map_err(e)?,
                    int(w.max_ns.0).map_err(e)?,
                    w.sum_ns,
                ])
                .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        Ok(())
    }

    /// A monitor's windows, in order.
    pub fn windows(&self, monitor: &str) -> anyhow::Result<Vec<crate::model::Window>> {
        let e = |e| sql_err(&self.path, e);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT idx, started_at, duration_ns, phase, probe, variant, thread, cpu, samples, overruns,
                        min_ns, p50_ns, p99_ns, max_ns, sum_ns
                 FROM windows WHERE monitor = ?1 ORDER BY idx, probe, variant, thread IS NOT NULL, thread",
            )
            .map_err(e)?;
        let rows = st
            .query_map([monitor], |r| {
                let u = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                let o = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.map(|x| x.max(0) as usize));
                Ok(crate::model::Window {
                    index: u(0)?,
                    started_at: r.get(1)?,
                    duration_ns: crate::model::Nanos(u(2)?),
                    phase: r.get(3)?,
                    probe: r.get(4)?,
                    variant: r.get(5)?,
                    thread: o(6)?,
                    cpu: o(7)?,
                    samples: u(8)?,
                    overruns: u(9)?,
                    min_ns: crate::model::Nanos(u(10)?),
                    p50_ns: crate::model::Nanos(u(11)?),
                    p99_ns: crate::model::Nanos(u(12)?),
                    max_ns: crate::model::Nanos(u(13)?),
                    sum_ns: r.get(14)?,
                    histogram: Vec::new(),
                })
            })
            .map_err(e)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(e)
    }

    /// Tag run `id`; `Ok(false)` when it already had the tag.
    pub fn tag(&self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n = self
            .conn
            .execute("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)", params![id, tag])
            .map_err(|e| sql_err(&self.path, e))?;
        Ok(n == 1)
    }

    /// Remove `tag` from run `id`; `Ok(false)` when it did not have it.
    pub fn untag(&self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n = self
            .conn
            .execute("DELETE FROM tags WHERE run_id = ?1 AND tag = ?2", params![id, tag])
            .map_err(|e| sql_err(&self.path, e))?;
        Ok(n == 1)
    }

    /// Delete run `id` with its results, buckets and tags.
    pub fn remove(&mut self, id: i64) -> anyhow::Result<()> {
        let path = self.path.clone();
        let n = self.conn.execute("DELETE FROM runs WHERE id = ?1", [id]).map_err(|e| sql_err(&path, e))?;
        if n == 0 {
            return Err(self.no_such_run(id));
        }
        Ok(())
    }

    /// Ids of the runs carrying `tag`, oldest first.
    pub fn ids_with_tag(&self, tag: &str) -> anyhow::Result<Vec<i64>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self
            .conn
            .prepare("SELECT r.id FROM runs r JOIN tags t ON t.run_id = r.id WHERE t.tag = ?1 ORDER BY r.started_at, r.id")
            .map_err(e)?;
        let ids = stmt.query_map([tag], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<Vec<i64>>>().map_err(e)?;
        Ok(ids)
    }

    /// Histogram buckets of result `idx` of run `id`, as stored in the
    /// `buckets` table (used by tests to check the columns match the JSON).
    pub fn buckets(&self, id: i64, idx: usize) -> anyhow::Result<Vec<(u64, u64, u64)>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self
            .conn
            .prepare("SELECT lo_ns, hi_ns, count FROM buckets WHERE run_id = ?1 AND result_idx = ?2 ORDER BY lo_ns")
            .map_err(e)?;
        let rows = stmt
            .query_map(params![id, idx as i64], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64))
            })
            .map_err(e)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(e)?;
        Ok(rows)
    }
}

/// Insert one run with its results and buckets into `tx`.
fn insert_run(tx: &rusqlite::Transaction<'_>, path: &Path, run: &Run, json: &str, source: &str, saved_at: &str) -> anyhow::Result<i64> {
    let sha = super::sha256_hex(json.as_bytes());
    let system = run.imported_from.as_ref().map(|i| i.system.clone()).unwrap_or_else(|| run.host.hostname.clone());
    let host_json = serde_json::to_string(&run.host)?;
    tx.execute(
        "INSERT INTO runs (started_at, finished_at, host, kernel, realtime, probes, phases, preset, interrupted,
                           source, system, file_sha256, host_json, json, saved_at, preempt, max_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            run.started_at,
            run.finished_at,
            run.host.hostname,
            run.host.kernel_release,
            run.host.realtime,
            run.plan.probes.join(","),
            run.plan.phases.join(","),
            run.interrupted,
            source,
            system,
            sha,
            host_json,
            json,
            saved_at,
            run.host.preempt_model,
            int(super::run_max(run)).map_err(|e| sql_err(path, e))?
        ],
    )
    .map_err(|e| sql_err(path, e))?;
    let id = tx.last_insert_rowid();
    {
        let mut res = tx
            .prepare(
                "INSERT INTO results (run_id, idx, probe, phase, variant, thread, cpu, interval_ns, samples, overruns,
                    min_ns, max_ns, mean_ns, stddev_ns, p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, p99_999_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
            )
            .map_err(|e| sql_err(path, e))?;
        let mut bucket = tx
            .prepare("INSERT INTO buckets (run_id, result_idx, lo_ns, hi_ns, count) VALUES (?1, ?2, ?3, ?4, ?5)")
            .map_err(|e| sql_err(path, e))?;
        for (idx, r) in run.results.iter().enumerate() {
            let p = |key: &str| r.percentiles_ns.get(key).map(|n| int(n.0)).transpose();
            let pct: Vec<Option<i64>> =
                PERCENTILES.iter().map(|q| p(q.key)).collect::<rusqlite::Result<_>>().map_err(|e| sql_err(path, e))?;
            res.execute(params![
                id,
                idx as i64,
                r.probe,
                r.phase,
                r.variant,
                opt_int(r.thread).map_err(|e| sql_err(path, e))?,
                opt_int(r.cpu).map_err(|e| sql_err(path, e))?,
                int(r.interval_ns.0).map_err(|e| sql_err(path, e))?,
                int(r.samples).map_err(|e| sql_err(path, e))?,
                int(r.overruns).map_err(|e| sql_err(path, e))?,
                int(r.min_ns.0).map_err(|e| sql_err(path, e))?,
                int(r.max_ns.0).map_err(|e| sql_err(path, e))?,
                r.mean_ns,
                r.stddev_ns,
                pct[0],
                pct[1],
                pct[2],
                pct[3],
                pct[4],
                pct[5],
            ])
            .map_err(|e| sql_err(path, e))?;
            for b in &r.histogram {
                bucket
                    .execute(params![
                        id,
                        idx as i64,
                        int(b.lo_ns.0).map_err(|e| sql_err(path, e))?,
                        int(b.hi_ns.0).map_err(|e| sql_err(path, e))?,
                        int(b.count).map_err(|e| sql_err(path, e))?
                    ])
                    .map_err(|e| sql_err(path, e))?;
            }
        }
    }
    Ok(id)
}

/// A failed insert: when SQLite said "full" because the run ids are used up
/// (`AUTOINCREMENT` never reuses one, and stops at 2^63 - 1), say that —
/// not that the filesystem is full.
fn exhausted_or(tx: &rusqlite::Transaction<'_>, path: &Path, e: anyhow::Error) -> anyhow::Error {
    let full = e
        .downcast_ref::<BadInput>()
        .map(|b| b.0.contains("filesystem is full"))
        .unwrap_or(false);
    if full {
        let seq: Option<i64> =
            tx.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'runs'", [], |r| r.get(0)).optional().ok().flatten();
        if seq == Some(i64::MAX) {
            return BadInput(format!(
                "history database {}: every run id has been used (the last is {}; ids are never reused); nothing was changed. \
                 Start a new history with --db PATH or RTSCOPE_DB (`rtscope export` copies runs out of this one)",
                path.display(),
                i64::MAX
            ))
            .into();
        }
    }
    e
}

fn no_history(path: &Path) -> anyhow::Error {
    BadInput(format!(
        "{}: no history database there (nothing has been stored yet): `rtscope run` or `rtscope import` \
         creates it; use --db or RTSCOPE_DB to name another",
        path.display()
    ))
    .into()
}

/// Refuse a non-empty file that does not start with the SQLite magic.
fn check_header(path: &Path) -> Result<(), BadInput> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(BadInput(format!("history database {}: cannot read: {e}", path.display()))),
    };
    if meta.is_dir() {
        return Err(BadInput(format!(
            "history database {} is a directory; pass a file path with --db (e.g. {}/results.db)",
            path.display(),
            path.display()
        )));
    }
    if meta.len() == 0 {
        // SQLite treats an empty file as a new database.
        return Ok(());
    }
    let mut head = [0u8; 16];
    let mut f = std::fs::File::open(path).map_err(|e| BadInput(format!("history database {}: cannot open: {e}", path.display())))?;
    let n = read_up_to(&mut f, &mut head).map_err(|e| BadInput(format!("history database {}: cannot read: {e}", path.display())))?;
    if n < 16 || &head != SQLITE_MAGIC {
        return Err(BadInput(format!(
            "{} is not an SQLite database (it does not start with \"SQLite format 3\"); refusing to use it as the history database and leaving it untouched. Use another file with --db PATH or RTSCOPE_DB, or --no-store",
            path.display()
        )));
    }
    Ok(())
}

/// Percent-escape the characters that end or change a path in an SQLite
/// `file:` URI.
fn uri_escape(p: &str) -> String {
    p.replace('%', "%25").replace('?', "%3f").replace('#', "%23")
}

fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
