//! Reading the SQLite history: pages of runs, facets, a run's JSON text,
//! tags, monitor windows and stored buckets.

use rusqlite::{params, OptionalExtension};

use super::{sql_err, Facets, Page, PageQuery, PhaseMax, RunRow, Store};
use crate::error::BadInput;
use crate::store::text;

impl Store {
    /// One page of the runs matching `q.filter`, with their count: one
    /// query for the count, one for the page, then the tags and the
    /// per-phase headline of each run on it.
    pub(crate) fn page(&self, q: &PageQuery) -> anyhow::Result<Page> {
        use rusqlite::types::Value;
        let e = |e| sql_err(&self.path, e);
        let (cond, values) = q.filter.sql(|n| format!("?{n}"), |col, p| format!("instr({col}, {p}) > 0"));
        let mut args: Vec<Value> = values.into_iter().map(Value::Text).collect();
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let total: i64 = tx.query_row(&format!("SELECT COUNT(*) FROM runs WHERE {cond}"), rusqlite::params_from_iter(args.iter()), |r| r.get(0)).map_err(e)?;
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
            let mut heads =
                tx.prepare_cached("SELECT phase, MAX(max_ns), MAX(p99_ns) FROM results WHERE run_id = ?1 GROUP BY phase ORDER BY MIN(idx)").map_err(e)?;
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
    pub(crate) fn facets(&self) -> anyhow::Result<Facets> {
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
    /// Runs saved before schema version 4 keep it in `runs.json`, later
    /// ones in parts (`run_json`, `store::text`), leaving `runs.json` empty.
    pub(crate) fn json_text(&self, id: i64) -> anyhow::Result<String> {
        let e = |e| sql_err(&self.path, e);
        let t: Option<String> = self.conn.query_row("SELECT json FROM runs WHERE id = ?1", [id], |r| r.get(0)).optional().map_err(e)?;
        let t = t.ok_or_else(|| self.no_such_run(id))?;
        if !t.is_empty() {
            return Ok(t);
        }
        let mut st = self.conn.prepare_cached("SELECT part FROM run_json WHERE run_id = ?1 ORDER BY seq").map_err(e)?;
        let parts = st.query_map([id], |r| r.get::<_, String>(0)).map_err(e)?;
        text::join(parts.map(|p| p.map_err(e)))
    }

    pub(super) fn no_such_run(&self, id: i64) -> anyhow::Error {
        BadInput(format!("no run with id {id} in {}; `rtscope history` lists the ids", self.path.display())).into()
    }

    pub(crate) fn exists(&self, id: i64) -> anyhow::Result<bool> {
        let n: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs WHERE id = ?1", [id], |r| r.get(0)).map_err(|e| sql_err(&self.path, e))?;
        Ok(n > 0)
    }

    pub(crate) fn tags(&self, id: i64) -> anyhow::Result<Vec<String>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self.conn.prepare_cached("SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag").map_err(e)?;
        let tags = stmt.query_map([id], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<Vec<String>>>().map_err(e)?;
        Ok(tags)
    }

    /// A monitor's windows, in order.
    pub(crate) fn windows(&self, monitor: &str) -> anyhow::Result<Vec<crate::model::Window>> {
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

    /// The design record of experiment `experiment`, if one was stored.
    pub(crate) fn design(&self, experiment: &str) -> anyhow::Result<Option<String>> {
        self.conn.query_row("SELECT design FROM experiments WHERE experiment = ?1", [experiment], |r| r.get(0)).optional().map_err(|e| sql_err(&self.path, e))
    }

    /// Ids of the runs carrying `tag`, oldest first.
    pub(crate) fn ids_with_tag(&self, tag: &str) -> anyhow::Result<Vec<i64>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self.conn.prepare("SELECT r.id FROM runs r JOIN tags t ON t.run_id = r.id WHERE t.tag = ?1 ORDER BY r.started_at, r.id").map_err(e)?;
        let ids = stmt.query_map([tag], |r| r.get(0)).map_err(e)?.collect::<rusqlite::Result<Vec<i64>>>().map_err(e)?;
        Ok(ids)
    }

    /// Histogram buckets of result `idx` of run `id`, as stored in the
    /// `buckets` table (used by tests to check the columns match the JSON).
    pub(crate) fn buckets(&self, id: i64, idx: usize) -> anyhow::Result<Vec<(u64, u64, u64)>> {
        let e = |e| sql_err(&self.path, e);
        let mut stmt = self.conn.prepare("SELECT lo_ns, hi_ns, count FROM buckets WHERE run_id = ?1 AND result_idx = ?2 ORDER BY lo_ns").map_err(e)?;
        let rows = stmt
            .query_map(params![id, idx as i64], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64)))
            .map_err(e)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(e)?;
        Ok(rows)
    }
}
