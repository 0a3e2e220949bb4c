//! The result history on PostgreSQL: a lab's shared history that many hosts
//! save into at once, beside the embedded SQLite one (`sqlite`). Same tables,
//! same numbered migrations (`migrations`, PostgreSQL dialect), same
//! operations, so every store command works on either.
//!
//! Main type: [`Store`], over a synchronous `postgres::Client` (see
//! `pgconn` for the URL, password and TLS).
//!
//! Rules, each with its reason:
//! - Every rtscope table lives in the PostgreSQL schema `rtscope` (the
//!   connection's `search_path`), so a database shared with other tools
//!   keeps its own `runs` or `tags` tables, and "is there a history here?"
//!   is one question: does `rtscope.schema_version` exist.
//! - Reading commands never create anything: [`Store::open_if_exists`] on a
//!   database without the schema says so. Writing commands create the schema
//!   on first use.
//! - Migrations run in one transaction holding a transaction-level advisory
//!   lock, and the version is read again under the lock: eight hosts saving
//!   their first run into an empty database at the same moment migrate it
//!   once. Creating a PostgreSQL schema needs the CREATE privilege on the
//!   database, so an existing `rtscope` schema (made by an administrator) is
//!   never created again.
//! - A database at a newer schema version than this build knows is refused
//!   (exit 2) before anything is written.
//! - Each save is one transaction (the run, its results, its buckets), so a
//!   failure leaves the run fully saved or absent; ids come from an identity
//!   column, so concurrent writers never collide. Buckets go in one
//!   statement per result (`unnest` of arrays), not one round trip each.
//! - A connection that closed while a long run measured is opened again
//!   once before saving.

use anyhow::Context;
use postgres::{Client, IsolationLevel, Transaction};

use super::migrations;
use super::pgconn::{reason, Target};
use super::text::{self, Runs, Saving};
use super::{Facets, Page, PageQuery, PhaseMax, RunRow};
use crate::error::BadInput;
use crate::model::{ProbeResult, Run};
use crate::stats::PERCENTILES;

/// The PostgreSQL schema holding rtscope's tables.
pub(crate) const SCHEMA: &str = "rtscope";

/// Key of the advisory lock serialising migrations ("rtscope" in ASCII).
const MIGRATION_LOCK: i64 = 0x0072_7473_636f_7065;

pub struct Store {
    client: Client,
    target: Target,
}

/// A query or transaction error, naming the database (never its password).
///
/// A server that refuses us — no rights on the schema or a table
/// (SQLSTATE 42501), a read-only server or transaction (25006), a role or
/// database that may not connect (class 28, 3D000) — is bad input (exit 2,
/// the README's "a refusing server"), with what to ask an administrator.
fn pg_err(target: &Target, e: postgres::Error) -> anyhow::Error {
    use postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let refused = *code == SqlState::INSUFFICIENT_PRIVILEGE
            || *code == SqlState::READ_ONLY_SQL_TRANSACTION
            || *code == SqlState::INVALID_CATALOG_NAME
            || code.code().starts_with("28");
        if refused {
            return BadInput(format!(
                "history database {}: the server refuses: {}. Nothing was changed. Have an administrator grant this role \
                 the rights on the schema {SCHEMA} (USAGE, CREATE, and SELECT/INSERT/UPDATE/DELETE on its tables), \
                 or use another --db, or --no-store",
                target.shown(),
                reason(&e)
            ))
            .into();
        }
    }
    anyhow::anyhow!("history database {}: {}", target.shown(), reason(&e))
}

/// `u64` → BIGINT; past `i64::MAX` (292 years in ns) cannot be measured.
fn int(v: u64) -> anyhow::Result<i64> {
    i64::try_from(v).map_err(|_| anyhow::anyhow!("value {v} does not fit a BIGINT column"))
}

fn opt_int(v: Option<usize>) -> anyhow::Result<Option<i64>> {
    v.map(|x| int(x as u64)).transpose()
}

/// The schema version, or `None` when the database has no rtscope schema.
fn version(c: &mut impl postgres::GenericClient) -> Result<Option<u32>, postgres::Error> {
    // pg_tables, not to_regclass(): a catalog read through the statement's
    // own snapshot sees a table another session created and committed while
    // we waited for the migration lock (to_regclass reads the session's
    // catalog cache, which an advisory lock does not refresh).
    let exists: bool =
        c.query_one("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = 'rtscope' AND tablename = 'schema_version')", &[])?.get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i64> = c.query_one("SELECT MAX(version) FROM rtscope.schema_version", &[])?.get(0);
    Ok(Some(v.unwrap_or(0).max(0) as u32))
}

impl Store {
    /// Open for storing runs: connect, then create the schema or bring it up
    /// to date. Exit 2 for a database that is down, refuses us, or was made
    /// by a newer rtscope.
    pub(crate) fn open(target: &Target) -> anyhow::Result<Store> {
        let mut store = Store::connect(target)?;
        let v = version(&mut store.client).map_err(|e| pg_err(target, e))?;
        if let Some(v) = v {
            store.refuse_newer(v)?;
        }
        if v != Some(migrations::latest()) {
            store.migrate()?;
        }
        Ok(store)
    }

    /// Open for reading: `None` when the server is reachable but holds no
    /// rtscope history yet (nothing is created). Exit 2 for a database that
    /// is down, refuses us, or was made by a newer rtscope.
    pub(crate) fn open_if_exists(target: &Target) -> anyhow::Result<Option<Store>> {
        let mut store = Store::connect(target)?;
        match version(&mut store.client).map_err(|e| pg_err(target, e))? {
            None => Ok(None),
            Some(v) if v == migrations::latest() => Ok(Some(store)),
            Some(v) => {
                store.refuse_newer(v)?;
                store.migrate()?;
                Ok(Some(store))
            }
        }
    }

    fn connect(target: &Target) -> anyhow::Result<Store> {
        let mut client = target.connect()?;
        client.batch_execute(&format!("SET search_path TO {SCHEMA}")).map_err(|e| pg_err(target, e))?;
        Ok(Store { client, target: target.clone() })
    }

    /// Connect again when the connection has closed (server restart,
    /// network): a long-lived reader (`rtscope serve`) then survives it.
    pub(crate) fn reconnect_if_closed(&mut self) -> anyhow::Result<()> {
        if self.client.is_closed() {
            *self = Store::connect(&self.target.clone())?;
        }
        Ok(())
    }

    /// The URL, password redacted: how messages name this database.
    pub(crate) fn shown(&self) -> &str {
        self.target.shown()
    }

    fn refuse_newer(&self, version: u32) -> anyhow::Result<()> {
        if version > migrations::latest() {
            return Err(BadInput(format!(
                "history database {} was made by a newer rtscope (database schema version {version}, this rtscope knows up to {}); nothing was changed. Use a newer rtscope, or another database with --db",
                self.shown(),
                migrations::latest()
            ))
            .into());
        }
        Ok(())
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let target = self.target.clone();
        let e = |e| pg_err(&target, e);
        let mut tx = self.client.transaction().map_err(e)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(e)?;
        // Read again under the lock: another host may have migrated meanwhile.
        let v = version(&mut tx).map_err(e)?;
        if let Some(v) = v.filter(|&v| v > migrations::latest()) {
            drop(tx);
            return self.refuse_newer(v);
        }
        if v.is_none() {
            let has_schema: bool = tx.query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&SCHEMA]).map_err(e)?.get(0);
            if !has_schema {
                tx.batch_execute(&format!("CREATE SCHEMA {SCHEMA}")).map_err(|err| {
                    anyhow::Error::from(BadInput(format!(
                        "history database {}: cannot create the schema {SCHEMA} for rtscope's tables: {}. Have an administrator run \
                         `CREATE SCHEMA {SCHEMA} AUTHORIZATION <user>` once, or use another --db",
                        target.shown(),
                        reason(&err)
                    )))
                })?;
            }
            tx.batch_execute("CREATE TABLE schema_version (version BIGINT NOT NULL); INSERT INTO schema_version VALUES (0)").map_err(e)?;
        }
        let v = v.unwrap_or(0);
        for (i, m) in migrations::MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.batch_execute(m.postgres).map_err(e).with_context(|| format!("applying migration {}", i + 1))?;
        }
        tx.execute("UPDATE schema_version SET version = $1", &[&i64::from(migrations::latest())]).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(())
    }

    /// Save `run`, whose JSON text is `json` (for a native run: the file's
    /// exact bytes). `source` is "native" or an importer format. Returns the id.
    pub(crate) fn save(&mut self, run: &Run, json: &str, source: &str) -> anyhow::Result<i64> {
        let one = Saving { run: std::borrow::Cow::Borrowed(run), text: Some(json.into()), source: source.to_string(), entries: None, text_file: None };
        Ok(self.save_all(&mut std::iter::once(Ok(one)), None)?[0])
    }

    /// Save runs as `runs` produces them (one in memory at a time, its text
    /// by parts), each tagged `tag` if given, in one transaction: all are
    /// stored or none. Returns the ids in order.
    pub(crate) fn save_all(&mut self, runs: Runs<'_, '_>, tag: Option<&str>) -> anyhow::Result<Vec<i64>> {
        if self.client.is_closed() {
            // The server or the network dropped us during a long run.
            *self = Store::open(&self.target.clone())?;
        }
        let target = self.target.clone();
        let e = |e| pg_err(&target, e);
        let saved_at = super::now_rfc3339();
        let mut tx = self.client.transaction().map_err(e)?;
        let mut ids = Vec::new();
        for s in runs {
            let mut s = s?;
            let id = insert_run(&mut tx, &target, &mut s, &saved_at)?;
            // A monitor's rescue file: the window rows the history missed.
            if let Some(m) = s.run.monitor.as_ref().filter(|m| !m.unstored_windows.is_empty()) {
                let stored: std::collections::BTreeSet<i64> =
                    tx.query("SELECT DISTINCT idx FROM windows WHERE monitor = $1", &[&m.id]).map_err(e)?.iter().map(|r| r.get(0)).collect();
                let new: Vec<crate::model::Window> = m.unstored_windows.iter().filter(|w| !stored.contains(&(w.index as i64))).cloned().collect();
                insert_windows(&mut tx, &target, &m.id, &new)?;
            }
            if let Some(t) = tag {
                tx.execute("INSERT INTO tags (run_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&id, &t]).map_err(e)?;
            }
            ids.push(id);
        }
        tx.commit().map_err(e)?;
        Ok(ids)
    }

    /// One page of the runs matching `q.filter`, with their count: four
    /// queries in one snapshot (the count, the page, its tags, its largest
    /// max and p99 per phase), not one per run — over a network each round
    /// trip counts.
    pub(crate) fn page(&mut self, q: &PageQuery) -> anyhow::Result<Page> {
        let target = self.target.clone();
        let e = |e| pg_err(&target, e);
        let (cond, values) = q.filter.sql(|n| format!("${n}"), |col, p| format!("strpos({col}, {p}) > 0"));
        let mut tx = read_tx(&mut self.client).map_err(e)?;
        let mut args: Vec<&(dyn postgres::types::ToSql + Sync)> = values.iter().map(|v| v as &(dyn postgres::types::ToSql + Sync)).collect();
        let total: i64 = tx.query_one(&format!("SELECT COUNT(*) FROM runs WHERE {cond}"), &args).map_err(e)?.get(0);
        let limit: Option<i64> = q.limit.map(|l| l.min(i64::MAX as u64) as i64);
        let offset = q.offset.min(i64::MAX as u64) as i64;
        let n = args.len();
        args.push(&limit);
        args.push(&offset);
        let mut rows: Vec<RunRow> = tx
            .query(
                &format!(
                    "SELECT id, started_at, host, kernel, realtime, probes, phases, preset, interrupted, source, system, preempt
                     FROM runs WHERE {cond} ORDER BY {} LIMIT ${} OFFSET ${}",
                    q.sort.order_by(q.desc),
                    n + 1,
                    n + 2
                ),
                &args,
            )
            .map_err(e)?
            .iter()
            .map(|r| RunRow {
                id: r.get(0),
                started_at: r.get(1),
                host: r.get(2),
                kernel: r.get(3),
                realtime: r.get(4),
                probes: r.get(5),
                phases: r.get(6),
                preset: r.get(7),
                interrupted: r.get(8),
                source: r.get(9),
                system: r.get(10),
                preempt: r.get(11),
                tags: Vec::new(),
                headline_max_ns: Vec::new(),
            })
            .collect();
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let at: std::collections::HashMap<i64, usize> = rows.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        for r in tx.query("SELECT run_id, tag FROM tags WHERE run_id = ANY($1) ORDER BY run_id, tag", &[&ids]).map_err(e)? {
            if let Some(&i) = at.get(&r.get::<_, i64>(0)) {
                rows[i].tags.push(r.get(1));
            }
        }
        for r in tx
            .query(
                "SELECT run_id, phase, MAX(max_ns), MAX(p99_ns) FROM results WHERE run_id = ANY($1)
                 GROUP BY run_id, phase ORDER BY run_id, MIN(idx)",
                &[&ids],
            )
            .map_err(e)?
        {
            if let Some(&i) = at.get(&r.get::<_, i64>(0)) {
                rows[i].headline_max_ns.push(PhaseMax {
                    phase: r.get(1),
                    max_ns: r.get::<_, i64>(2).max(0) as u64,
                    p99_ns: r.get::<_, Option<i64>>(3).map(|v| v.max(0) as u64),
                });
            }
        }
        tx.commit().map_err(e)?;
        Ok(Page { total: total.max(0) as u64, offset: q.offset, runs: rows })
    }

    /// The distinct hosts, preemption models and tags.
    pub(crate) fn facets(&mut self) -> anyhow::Result<Facets> {
        let target = self.target.clone();
        let e = |e| pg_err(&target, e);
        let mut tx = read_tx(&mut self.client).map_err(e)?;
        let mut col = |sql: &str| -> anyhow::Result<Vec<String>> { Ok(tx.query(sql, &[]).map_err(e)?.iter().map(|r| r.get(0)).collect()) };
        let f = Facets {
            hosts: col("SELECT DISTINCT host FROM runs ORDER BY host")?,
            preempt: col("SELECT DISTINCT preempt FROM runs ORDER BY preempt")?,
            tags: col("SELECT DISTINCT tag FROM tags ORDER BY tag")?,
        };
        tx.commit().map_err(e)?;
        Ok(f)
    }

    /// The stored JSON text of run `id` (exit 2 when there is no such run).
    /// Runs saved before schema version 4 keep it in `runs.json`, later
    /// ones in parts (`run_json`, `store::text`), leaving `runs.json` empty.
    pub(crate) fn json_text(&mut self, id: i64) -> anyhow::Result<String> {
        let target = self.target.clone();
        let e = |e| pg_err(&target, e);
        let row = self.client.query_opt("SELECT json FROM runs WHERE id = $1", &[&id]).map_err(e)?;
        let t: String = row.map(|r| r.get(0)).ok_or_else(|| self.no_such_run(id))?;
        if !t.is_empty() {
            return Ok(t);
        }
        let mut parts = self.client.query_raw("SELECT part FROM run_json WHERE run_id = $1 ORDER BY seq", [&id]).map_err(e)?;
        let mut out = String::new();
        while let Some(row) = postgres::fallible_iterator::FallibleIterator::next(&mut parts).map_err(e)? {
            out.push_str(row.get(0));
        }
        Ok(out)
    }

    fn no_such_run(&self, id: i64) -> anyhow::Error {
        BadInput(format!("no run with id {id} in {}; `rtscope history` lists the ids", self.shown())).into()
    }

    pub(crate) fn exists(&mut self, id: i64) -> anyhow::Result<bool> {
        let row = self.client.query_opt("SELECT 1 FROM runs WHERE id = $1", &[&id]).map_err(|e| pg_err(&self.target, e))?;
        Ok(row.is_some())
    }

    pub(crate) fn tags(&mut self, id: i64) -> anyhow::Result<Vec<String>> {
        let rows = self.client.query("SELECT tag FROM tags WHERE run_id = $1 ORDER BY tag", &[&id]).map_err(|e| pg_err(&self.target, e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Append a monitor's closed windows (one transaction).
    pub(crate) fn append_windows(&mut self, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
        if self.client.is_closed() {
            *self = Store::open(&self.target.clone())?;
        }
        let target = self.target.clone();
        let mut tx = self.client.transaction().map_err(|e| pg_err(&target, e))?;
        insert_windows(&mut tx, &target, monitor, windows)?;
        tx.commit().map_err(|e| pg_err(&target, e))?;
        Ok(())
    }

    /// A monitor's windows, in order.
    pub(crate) fn windows(&mut self, monitor: &str) -> anyhow::Result<Vec<crate::model::Window>> {
        let rows = self
            .client
            .query(
                "SELECT idx, started_at, duration_ns, phase, probe, variant, thread, cpu, samples, overruns,
                        min_ns, p50_ns, p99_ns, max_ns, sum_ns
                 FROM windows WHERE monitor = $1 ORDER BY idx, probe, variant, thread IS NOT NULL, thread",
                &[&monitor],
            )
            .map_err(|e| pg_err(&self.target, e))?;
        let u = |v: i64| v.max(0) as u64;
        Ok(rows
            .iter()
            .map(|r| crate::model::Window {
                index: u(r.get(0)),
                started_at: r.get(1),
                duration_ns: crate::model::Nanos(u(r.get(2))),
                phase: r.get(3),
                probe: r.get(4),
                variant: r.get(5),
                thread: r.get::<_, Option<i64>>(6).map(|t| t.max(0) as usize),
                cpu: r.get::<_, Option<i64>>(7).map(|c| c.max(0) as usize),
                samples: u(r.get(8)),
                overruns: u(r.get(9)),
                min_ns: crate::model::Nanos(u(r.get(10))),
                p50_ns: crate::model::Nanos(u(r.get(11))),
                p99_ns: crate::model::Nanos(u(r.get(12))),
                max_ns: crate::model::Nanos(u(r.get(13))),
                sum_ns: r.get(14),
                histogram: Vec::new(),
            })
            .collect())
    }

    /// Tag run `id`; `Ok(false)` when it already had the tag.
    pub(crate) fn tag(&mut self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n =
            self.client.execute("INSERT INTO tags (run_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING", &[&id, &tag]).map_err(|e| pg_err(&self.target, e))?;
        Ok(n == 1)
    }

    /// Remove `tag` from run `id`; `Ok(false)` when it did not have it.
    pub(crate) fn untag(&mut self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n = self.client.execute("DELETE FROM tags WHERE run_id = $1 AND tag = $2", &[&id, &tag]).map_err(|e| pg_err(&self.target, e))?;
        Ok(n == 1)
    }

    /// Delete run `id` with its results, buckets and tags.
    pub(crate) fn remove(&mut self, id: i64) -> anyhow::Result<()> {
        let n = self.client.execute("DELETE FROM runs WHERE id = $1", &[&id]).map_err(|e| pg_err(&self.target, e))?;
        if n == 0 {
            return Err(self.no_such_run(id));
        }
        Ok(())
    }

    /// Store the design record of experiment `experiment` (its JSON text).
    pub(crate) fn save_design(&mut self, experiment: &str, design: &str) -> anyhow::Result<()> {
        self.client
            .execute("INSERT INTO experiments (experiment, saved_at, design) VALUES ($1, $2, $3)", &[&experiment, &crate::store::now_rfc3339(), &design])
            .map_err(|e| pg_err(&self.target, e))?;
        Ok(())
    }

    /// The design record of experiment `experiment`, if one was stored.
    pub(crate) fn design(&mut self, experiment: &str) -> anyhow::Result<Option<String>> {
        let rows = self.client.query("SELECT design FROM experiments WHERE experiment = $1", &[&experiment]).map_err(|e| pg_err(&self.target, e))?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    /// Ids of the runs carrying `tag`, oldest first.
    pub(crate) fn ids_with_tag(&mut self, tag: &str) -> anyhow::Result<Vec<i64>> {
        let rows = self
            .client
            .query("SELECT r.id FROM runs r JOIN tags t ON t.run_id = r.id WHERE t.tag = $1 ORDER BY r.started_at, r.id", &[&tag])
            .map_err(|e| pg_err(&self.target, e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Histogram buckets of result `idx` of run `id`, as stored.
    pub(crate) fn buckets(&mut self, id: i64, idx: usize) -> anyhow::Result<Vec<(u64, u64, u64)>> {
        let rows = self
            .client
            .query("SELECT lo_ns, hi_ns, count FROM buckets WHERE run_id = $1 AND result_idx = $2 ORDER BY lo_ns", &[&id, &(idx as i64)])
            .map_err(|e| pg_err(&self.target, e))?;
        Ok(rows.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64, r.get::<_, i64>(2) as u64)).collect())
    }
}

/// Insert a monitor's window rows in the transaction `tx`.
fn insert_windows(tx: &mut Transaction<'_>, target: &Target, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
    let e = |e| pg_err(target, e);
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let st = tx
        .prepare(
            "INSERT INTO windows (monitor, idx, started_at, duration_ns, phase, probe, variant, thread, cpu,
                samples, overruns, min_ns, p50_ns, p99_ns, max_ns, sum_ns)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .map_err(e)?;
    for w in windows {
        tx.execute(
            &st,
            &[
                &monitor,
                &i(w.index),
                &w.started_at,
                &i(w.duration_ns.0),
                &w.phase,
                &w.probe,
                &w.variant,
                &w.thread.map(|t| t as i64),
                &w.cpu.map(|c| c as i64),
                &i(w.samples),
                &i(w.overruns),
                &i(w.min_ns.0),
                &i(w.p50_ns.0),
                &i(w.p99_ns.0),
                &i(w.max_ns.0),
                &w.sum_ns,
            ],
        )
        .map_err(e)?;
    }
    Ok(())
}

/// Insert one run: its `runs` row, its text by parts and its results and
/// buckets as they are written (then the text's hash and the largest
/// `max_ns` into the row).
fn insert_run(tx: &mut Transaction<'_>, target: &Target, s: &mut Saving<'_>, saved_at: &str) -> anyhow::Result<i64> {
    let e = |e| pg_err(target, e);
    let id = insert_row(tx, target, s, saved_at)?;
    let part = tx.prepare("INSERT INTO run_json (run_id, seq, part) VALUES ($1, $2, $3)").map_err(e)?;
    let result = tx
        .prepare(
            "INSERT INTO results (run_id, idx, probe, phase, variant, thread, cpu, interval_ns, samples, overruns,
                min_ns, max_ns, mean_ns, stddev_ns, p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, p99_999_ns)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        )
        .map_err(e)?;
    let buckets = tx
        .prepare(
            "INSERT INTO buckets (run_id, result_idx, lo_ns, hi_ns, count)
             SELECT $1, $2, lo, hi, n FROM unnest($3::BIGINT[], $4::BIGINT[], $5::BIGINT[]) AS b(lo, hi, n)",
        )
        .map_err(e)?;
    let mut rows = Rows { tx: &mut *tx, target, id, part, result, buckets };
    let w = text::write_run(s, &mut rows)?;
    tx.execute("UPDATE runs SET file_sha256 = $1, max_ns = $2 WHERE id = $3", &[&w.sha256, &int(w.max_ns)?, &id]).map_err(e)?;
    Ok(id)
}

/// The statements that write one run's rows as [`text::write_run`] goes.
struct Rows<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    target: &'t Target,
    id: i64,
    part: postgres::Statement,
    result: postgres::Statement,
    buckets: postgres::Statement,
}

impl text::Sink for Rows<'_, '_> {
    fn part(&mut self, seq: i64, text: &str) -> anyhow::Result<()> {
        self.tx.execute(&self.part, &[&self.id, &seq, &text]).map_err(|e| pg_err(self.target, e))?;
        Ok(())
    }
    fn entry(&mut self, idx: usize, r: &ProbeResult) -> anyhow::Result<()> {
        let (id, idx) = (self.id, idx as i64);
        let pct: Vec<Option<i64>> = PERCENTILES.iter().map(|q| r.percentiles_ns.get(q.key).map(|n| int(n.0)).transpose()).collect::<anyhow::Result<_>>()?;
        let (thread, cpu) = (opt_int(r.thread)?, opt_int(r.cpu)?);
        let nums = [int(r.interval_ns.0)?, int(r.samples)?, int(r.overruns)?, int(r.min_ns.0)?, int(r.max_ns.0)?];
        self.tx
            .execute(
                &self.result,
                &[
                    &id,
                    &idx,
                    &r.probe,
                    &r.phase,
                    &r.variant,
                    &thread,
                    &cpu,
                    &nums[0],
                    &nums[1],
                    &nums[2],
                    &nums[3],
                    &nums[4],
                    &r.mean_ns,
                    &r.stddev_ns,
                    &pct[0],
                    &pct[1],
                    &pct[2],
                    &pct[3],
                    &pct[4],
                    &pct[5],
                ],
            )
            .map_err(|e| pg_err(self.target, e))?;
        if !r.histogram.is_empty() {
            let lo = r.histogram.iter().map(|b| int(b.lo_ns.0)).collect::<anyhow::Result<Vec<_>>>()?;
            let hi = r.histogram.iter().map(|b| int(b.hi_ns.0)).collect::<anyhow::Result<Vec<_>>>()?;
            let n = r.histogram.iter().map(|b| int(b.count)).collect::<anyhow::Result<Vec<_>>>()?;
            self.tx.execute(&self.buckets, &[&id, &idx, &lo, &hi, &n]).map_err(|e| pg_err(self.target, e))?;
        }
        Ok(())
    }
}

/// The `runs` row of `s` (its text, hash and largest `max_ns` follow),
/// returning its id.
fn insert_row(tx: &mut Transaction<'_>, target: &Target, s: &Saving<'_>, saved_at: &str) -> anyhow::Result<i64> {
    let run = s.run.as_ref();
    let system = run.imported_from.as_ref().map(|i| i.system.clone()).unwrap_or_else(|| run.host.hostname.clone());
    let host_json = serde_json::to_string(&run.host)?;
    let (probes, phases) = (run.plan.probes.join(","), run.plan.phases.join(","));
    let row = tx
        .query_one(
            "INSERT INTO runs (started_at, finished_at, host, kernel, realtime, probes, phases, preset, interrupted,
                               source, system, file_sha256, host_json, json, saved_at, preempt, max_ns)
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9, $10, '', $11, '', $12, $13, 0)
             RETURNING id",
            &[
                &run.started_at,
                &run.finished_at,
                &run.host.hostname,
                &run.host.kernel_release,
                &run.host.realtime,
                &probes,
                &phases,
                &run.interrupted,
                &s.source,
                &system,
                &host_json,
                &saved_at,
                &run.host.preempt_model,
            ],
        )
        .map_err(|e| pg_err(target, e))?;
    Ok(row.get(0))
}

/// A read-only snapshot, so the three queries of `list` see the same runs.
fn read_tx(c: &mut Client) -> Result<Transaction<'_>, postgres::Error> {
    c.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()
}
