//! Writing the SQLite history: runs (the `runs` row, the JSON text in
//! parts, the `results` and `buckets` rows), monitor windows, tags, and
//! removal. Every write is one `BEGIN IMMEDIATE` transaction.

use std::path::Path;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{int, opt_int, sql_err, Store};
use crate::error::BadInput;
use crate::model::{ProbeResult, Run};
use crate::stats::PERCENTILES;
use crate::store::text::{self, Runs, Saving};

impl Store {
    /// Save `run`, whose JSON text is `json` (for a native run: the file's
    /// exact bytes). `source` is "native" or an importer format. Returns the id.
    pub(crate) fn save(&mut self, run: &Run, json: &str, source: &str) -> anyhow::Result<i64> {
        let one = Saving { run: std::borrow::Cow::Borrowed(run), text: Some(json.into()), source: source.to_string(), entries: None, text_file: None };
        Ok(self.save_all(&mut std::iter::once(Ok(one)), None)?[0])
    }

    /// Save runs as `runs` produces them (see [`Saving`]), each tagged `tag`
    /// if given, in one transaction: all are stored or none (an import of a
    /// file with many columns, stopped or failing at any point, leaves
    /// nothing half-imported). One run is in memory at a time, and its text
    /// goes in by parts. Returns the ids in order.
    pub(crate) fn save_all(&mut self, runs: Runs<'_, '_>, tag: Option<&str>) -> anyhow::Result<Vec<i64>> {
        let path = self.path.clone();
        let saved_at = crate::store::now_rfc3339();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| sql_err(&path, e))?;
        let mut ids = Vec::new();
        for s in runs {
            let mut s = s?;
            let id = insert_run(&tx, &path, &mut s, &saved_at).map_err(|e| exhausted_or(&tx, &path, e))?;
            // A monitor's rescue file: the window rows the history missed.
            if let Some(m) = s.run.monitor.as_ref().filter(|m| !m.unstored_windows.is_empty()) {
                let stored: std::collections::BTreeSet<i64> = {
                    let mut st = tx.prepare_cached("SELECT DISTINCT idx FROM windows WHERE monitor = ?1").map_err(|e| sql_err(&path, e))?;
                    let rows = st.query_map([&m.id], |r| r.get(0)).map_err(|e| sql_err(&path, e))?;
                    rows.collect::<rusqlite::Result<_>>().map_err(|e| sql_err(&path, e))?
                };
                let new: Vec<crate::model::Window> = m.unstored_windows.iter().filter(|w| !stored.contains(&(w.index as i64))).cloned().collect();
                insert_windows(&tx, &path, &m.id, &new).map_err(|e| exhausted_or(&tx, &path, e))?;
            }
            if let Some(t) = tag {
                tx.execute("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)", params![id, t]).map_err(|e| sql_err(&path, e))?;
            }
            ids.push(id);
        }
        tx.commit().map_err(|e| sql_err(&path, e))?;
        Ok(ids)
    }

    /// Append a monitor's closed windows (one transaction).
    pub(crate) fn append_windows(&mut self, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
        let path = self.path.clone();
        let e = |e| sql_err(&path, e);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        insert_windows(&tx, &path, monitor, windows)?;
        tx.commit().map_err(e)?;
        Ok(())
    }

    /// Tag run `id`; `Ok(false)` when it already had the tag.
    pub(crate) fn tag(&self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n = self.conn.execute("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)", params![id, tag]).map_err(|e| sql_err(&self.path, e))?;
        Ok(n == 1)
    }

    /// Store the design record of experiment `experiment` (its JSON text).
    pub(crate) fn save_design(&self, experiment: &str, design: &str) -> anyhow::Result<()> {
        self.conn
            .execute("INSERT INTO experiments (experiment, saved_at, design) VALUES (?1, ?2, ?3)", params![experiment, crate::store::now_rfc3339(), design])
            .map_err(|e| sql_err(&self.path, e))?;
        Ok(())
    }

    /// Remove `tag` from run `id`; `Ok(false)` when it did not have it.
    pub(crate) fn untag(&self, id: i64, tag: &str) -> anyhow::Result<bool> {
        if !self.exists(id)? {
            return Err(self.no_such_run(id));
        }
        let n = self.conn.execute("DELETE FROM tags WHERE run_id = ?1 AND tag = ?2", params![id, tag]).map_err(|e| sql_err(&self.path, e))?;
        Ok(n == 1)
    }

    /// Delete run `id` with its results, buckets and tags.
    pub(crate) fn remove(&mut self, id: i64) -> anyhow::Result<()> {
        let path = self.path.clone();
        let n = self.conn.execute("DELETE FROM runs WHERE id = ?1", [id]).map_err(|e| sql_err(&path, e))?;
        if n == 0 {
            return Err(self.no_such_run(id));
        }
        Ok(())
    }
}

/// Insert one run: its `runs` row, its text by parts and its results and
/// buckets as they are written (then the text's hash and the largest
/// `max_ns` into the row).
fn insert_run(tx: &rusqlite::Transaction<'_>, path: &Path, s: &mut Saving<'_>, saved_at: &str) -> anyhow::Result<i64> {
    let id = insert_row(tx, path, s, saved_at)?;
    let e = |e| sql_err(path, e);
    let mut rows = Rows {
        id,
        path,
        part: tx.prepare_cached("INSERT INTO run_json (run_id, seq, part) VALUES (?1, ?2, ?3)").map_err(e)?,
        result: tx
            .prepare_cached(
                "INSERT INTO results (run_id, idx, probe, phase, variant, thread, cpu, interval_ns, samples, overruns,
                    min_ns, max_ns, mean_ns, stddev_ns, p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, p99_999_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
            )
            .map_err(e)?,
        bucket: tx.prepare_cached("INSERT INTO buckets (run_id, result_idx, lo_ns, hi_ns, count) VALUES (?1, ?2, ?3, ?4, ?5)").map_err(e)?,
    };
    let w = text::write_run(s, &mut rows)?;
    tx.execute("UPDATE runs SET file_sha256 = ?1, max_ns = ?2 WHERE id = ?3", params![w.sha256, int(w.max_ns).map_err(e)?, id]).map_err(e)?;
    Ok(id)
}

/// The statements that write one run's rows as [`text::write_run`] goes.
struct Rows<'t> {
    id: i64,
    path: &'t Path,
    part: rusqlite::CachedStatement<'t>,
    result: rusqlite::CachedStatement<'t>,
    bucket: rusqlite::CachedStatement<'t>,
}

impl text::Sink for Rows<'_> {
    fn part(&mut self, seq: i64, text: &str) -> anyhow::Result<()> {
        self.part.execute(params![self.id, seq, text]).map_err(|e| sql_err(self.path, e))?;
        Ok(())
    }
    fn entry(&mut self, idx: usize, r: &ProbeResult) -> anyhow::Result<()> {
        let e = |e| sql_err(self.path, e);
        insert_result(&mut self.result, self.id, idx as i64, r).map_err(e)?;
        for b in &r.histogram {
            self.bucket.execute(params![self.id, idx as i64, int(b.lo_ns.0).map_err(e)?, int(b.hi_ns.0).map_err(e)?, int(b.count).map_err(e)?]).map_err(e)?;
        }
        Ok(())
    }
}

/// The `runs` row of `s` (its text, hash and largest `max_ns` follow),
/// returning its id.
fn insert_row(tx: &rusqlite::Transaction<'_>, path: &Path, s: &Saving<'_>, saved_at: &str) -> anyhow::Result<i64> {
    let run = s.run.as_ref();
    let system = run.imported_from.as_ref().map(|i| i.system.clone()).unwrap_or_else(|| run.host.hostname.clone());
    let host_json = serde_json::to_string(&run.host)?;
    tx.execute(
        "INSERT INTO runs (started_at, finished_at, host, kernel, realtime, probes, phases, preset, interrupted,
                           source, system, file_sha256, host_json, json, saved_at, preempt, max_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?9, ?10, '', ?11, '', ?12, ?13, 0)",
        params![
            run.started_at,
            run.finished_at,
            run.host.hostname,
            run.host.kernel_release,
            run.host.realtime,
            run.plan.probes.join(","),
            run.plan.phases.join(","),
            run.interrupted,
            s.source,
            system,
            host_json,
            saved_at,
            run.host.preempt_model,
        ],
    )
    .map_err(|e| sql_err(path, e))?;
    Ok(tx.last_insert_rowid())
}

/// One `results` row: entry `idx` of run `id`.
fn insert_result(st: &mut rusqlite::CachedStatement<'_>, id: i64, idx: i64, r: &ProbeResult) -> rusqlite::Result<()> {
    let p = |key: &str| r.percentiles_ns.get(key).map(|n| int(n.0)).transpose();
    let pct: Vec<Option<i64>> = PERCENTILES.iter().map(|q| p(q.key)).collect::<rusqlite::Result<_>>()?;
    st.execute(params![
        id,
        idx,
        r.probe,
        r.phase,
        r.variant,
        opt_int(r.thread)?,
        opt_int(r.cpu)?,
        int(r.interval_ns.0)?,
        int(r.samples)?,
        int(r.overruns)?,
        int(r.min_ns.0)?,
        int(r.max_ns.0)?,
        r.mean_ns,
        r.stddev_ns,
        pct[0],
        pct[1],
        pct[2],
        pct[3],
        pct[4],
        pct[5],
    ])?;
    Ok(())
}

/// A failed insert: when SQLite said "full" because the run ids are used up
/// (`AUTOINCREMENT` never reuses one, and stops at 2^63 - 1), say that —
/// not that the filesystem is full.
fn exhausted_or(tx: &rusqlite::Transaction<'_>, path: &Path, e: anyhow::Error) -> anyhow::Error {
    let full = e.downcast_ref::<BadInput>().map(|b| b.0.contains("filesystem is full")).unwrap_or(false);
    if full {
        let seq: Option<i64> = tx.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'runs'", [], |r| r.get(0)).optional().ok().flatten();
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

/// Insert a monitor's window rows in the transaction `tx`.
fn insert_windows(tx: &rusqlite::Transaction<'_>, path: &Path, monitor: &str, windows: &[crate::model::Window]) -> anyhow::Result<()> {
    let e = |e| sql_err(path, e);
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
    Ok(())
}
