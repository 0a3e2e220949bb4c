//! Versioned schema of the SQLite history database.
//!
//! The database's `PRAGMA user_version` is the number of migrations applied.
//! [`MIGRATIONS`] is append-only: migration *n* (1-based) takes a database
//! from version *n − 1* to *n*. A release never edits a migration that has
//! shipped; it adds the next one. A database whose `user_version` is larger
//! than `MIGRATIONS.len()` was written by a newer rtscope: we refuse to touch
//! it (see `sqlite::Store::open`) rather than guess at tables we do not know.

/// Migration 1: runs, per-probe summaries, histogram buckets, tags.
///
/// `runs.json` holds the complete schema v1 JSON text of the run — for a
/// native run the exact bytes of the result file, so `rtscope export` can
/// give back a byte-identical file. The other columns are copies of fields
/// of that JSON, kept as columns so `history` can filter and sort in SQL.
const V1: &str = r#"
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at   TEXT    NOT NULL,
    finished_at  TEXT    NOT NULL,
    host         TEXT    NOT NULL,
    kernel       TEXT    NOT NULL,
    realtime     INTEGER NOT NULL,
    probes       TEXT    NOT NULL,
    phases       TEXT    NOT NULL,
    preset       TEXT,
    interrupted  INTEGER NOT NULL,
    source       TEXT    NOT NULL,
    system       TEXT    NOT NULL,
    file_sha256  TEXT    NOT NULL,
    host_json    TEXT    NOT NULL,
    json         TEXT    NOT NULL,
    saved_at     TEXT    NOT NULL
);
CREATE INDEX runs_started_at ON runs(started_at);
CREATE INDEX runs_host ON runs(host);

CREATE TABLE results (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    probe        TEXT    NOT NULL,
    phase        TEXT    NOT NULL,
    variant      TEXT,
    thread       INTEGER,
    cpu          INTEGER,
    interval_ns  INTEGER NOT NULL,
    samples      INTEGER NOT NULL,
    overruns     INTEGER NOT NULL,
    min_ns       INTEGER NOT NULL,
    max_ns       INTEGER NOT NULL,
    mean_ns      REAL    NOT NULL,
    stddev_ns    REAL    NOT NULL,
    p50_ns       INTEGER,
    p90_ns       INTEGER,
    p99_ns       INTEGER,
    p99_9_ns     INTEGER,
    p99_99_ns    INTEGER,
    p99_999_ns   INTEGER,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE buckets (
    run_id       INTEGER NOT NULL,
    result_idx   INTEGER NOT NULL,
    lo_ns        INTEGER NOT NULL,
    hi_ns        INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    FOREIGN KEY (run_id, result_idx) REFERENCES results(run_id, idx) ON DELETE CASCADE
);
CREATE INDEX buckets_result ON buckets(run_id, result_idx);

CREATE TABLE tags (
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    tag          TEXT    NOT NULL,
    PRIMARY KEY (run_id, tag)
);
CREATE INDEX tags_tag ON tags(tag);
"#;

/// Every migration, oldest first. Append only.
pub const MIGRATIONS: &[&str] = &[V1];

/// The schema version this build writes.
pub fn latest() -> u32 {
    MIGRATIONS.len() as u32
}
