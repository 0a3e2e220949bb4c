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
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use super::migrations;

mod query;
mod save;
use crate::error::BadInput;

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How long a writer waits for another process's transaction to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the history database is: `--db` if given, else `$RTSCOPE_DB`, else
/// `$XDG_DATA_HOME/rtscope/results.db`, else `~/.local/share/rtscope/results.db`
/// (the XDG base-directory default).
pub(crate) fn resolve_path(flag: Option<&Path>) -> Result<PathBuf, BadInput> {
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
    Err(BadInput("no place for the history database: neither --db, RTSCOPE_DB, XDG_DATA_HOME nor HOME is set; pass --db PATH or --no-store".into()))
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

/// Is `path` owned by this process's effective user?
fn owned_by_us(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw())
}

/// `path` with `suffix` appended to its name (`results.db-shm`).
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// `u64` → SQLite INTEGER (signed 64-bit); values past `i64::MAX` (292 years
/// in ns) cannot come from a real measurement and are refused.
fn int(v: u64) -> rusqlite::Result<i64> {
    i64::try_from(v).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn opt_int(v: Option<usize>) -> rusqlite::Result<Option<i64>> {
    v.map(|x| int(x as u64)).transpose()
}

pub(crate) use super::{Facets, Page, PageQuery, PhaseMax, RunRow};

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
pub(crate) const FULL_CHECK_MAX_BYTES: u64 = 16 << 20;

/// rtscope's mark in the SQLite header (`PRAGMA application_id`, "rtsc"):
/// set when rtscope creates or migrates a database, so another program's
/// SQLite file is told apart before anything is written to it.
pub(crate) const APPLICATION_ID: i64 = 0x7274_7363;

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
        let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name").map_err(e)?;
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
    pub(crate) fn open_existing(path: &Path) -> anyhow::Result<Store> {
        Store::open_read(path)?.ok_or_else(|| no_history(path))
    }

    /// Open an existing database to change what is stored (`tag`, `rm`):
    /// a missing one is bad input, never created; the whole file must pass
    /// `PRAGMA quick_check` first (exit 2 otherwise, nothing written).
    pub(crate) fn open_existing_rw(path: &Path) -> anyhow::Result<Store> {
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
    pub(crate) fn open_read(path: &Path) -> anyhow::Result<Option<Store>> {
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
        // Another user's history is never upgraded by a reading command.
        if owned_by_us(path) && crate::sys::stat::file_writable(path) && crate::sys::stat::dir_writable(dir) {
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
    ///
    /// Another user's database whose `-shm` does not exist is opened
    /// `immutable` straight away: `mode=ro` would create `-shm` and `-wal`
    /// beside it, owned by this user, and a read-only connection cannot
    /// remove them on close — the owner's next `rtscope run` then finds
    /// files it may not write (exit 2, "not writable"). With no `-shm`, no
    /// connection has the database open and its WAL is checkpointed: the
    /// file alone holds every run. (A reader that stays, `serve`, then does
    /// not see runs the owner stores later; it sees them once restarted.)
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
        let foreign = !owned_by_us(path) && !sidecar(path, "-shm").exists();
        let plain = if foreign { None } else { plain };
        let opened = match plain.as_deref().map(try_open) {
            None if foreign => immutable.as_deref().map_or_else(|| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY), try_open),
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
            let have: Vec<String> = st.query_map([&table], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<_>>().map_err(e)?;
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
    pub(crate) fn open(path: &Path) -> anyhow::Result<Store> {
        Store::open_with(path, Check::Full)
    }

    /// [`Store::open`] for a run about to measure: before anything is
    /// written (not even the WAL switch), `PRAGMA quick_check` must pass
    /// (files up to [`FULL_CHECK_MAX_BYTES`]) and the filesystem must have
    /// room.
    pub(crate) fn open_for_run(path: &Path) -> anyhow::Result<Store> {
        Store::open_with(path, Check::Run)
    }

    fn open_with(path: &Path, check: Check) -> anyhow::Result<Store> {
        check_header(path)?;
        // A file this process may not write: refused before SQLite opens it
        // (it would open it read-only and leave `-shm`/`-wal` files of this
        // user beside another user's database).
        if path.is_file() && !crate::sys::stat::file_writable(path) {
            return Err(BadInput(format!(
                "history database {} is not writable by this user; nothing was changed. Reading commands (history, show, export) \
                 still work; to store, use another file with --db PATH or RTSCOPE_DB, or --no-store",
                path.display()
            ))
            .into());
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::sys::stat::create_dirs(dir).with_context(|| format!("creating directory {} for the history database", dir.display()))?;
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

    pub(crate) fn path(&self) -> &Path {
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
                Err(rusqlite::Error::SqliteFailure(f, _)) if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) && tries < 300 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(sql_err(&self.path, e)),
            }
        }
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let path = self.path.clone();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| sql_err(&path, e))?;
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

    /// Cap SQLite's page cache at `kib` KiB for this connection. A monitor
    /// appends for days: its memory must not grow with the database (the
    /// default cache, 2 MB, fills as the file grows).
    pub(crate) fn limit_cache(&self, kib: u32) -> anyhow::Result<()> {
        self.conn.pragma_update(None, "cache_size", -(kib as i64)).map_err(|e| sql_err(&self.path, e))?;
        Ok(())
    }
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
        return Err(BadInput(format!("history database {} is a directory; pass a file path with --db (e.g. {}/results.db)", path.display(), path.display())));
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
