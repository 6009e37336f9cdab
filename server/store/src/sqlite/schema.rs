//! The SQLite file's schema: opening a connection (busy timeout, WAL), the migrations
//! by `user_version`, and how rows map to the shared run types.

use conclave_core::StoreError;
use conclave_shared::{RunStatus, RunSummary};
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;
use std::time::{Duration, Instant};

/// Schema migrations, applied in order; `PRAGMA user_version` counts those applied.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    conclave_id   TEXT NOT NULL,
    conclave_json TEXT NOT NULL,
    input_json    TEXT NOT NULL,
    status        TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    finished_ms   INTEGER,
    failed_node   TEXT,
    error         TEXT,
    owner         TEXT NOT NULL
);
CREATE INDEX runs_by_created ON runs (created_ms DESC, id DESC);
CREATE INDEX runs_by_status ON runs (status);
CREATE TABLE events (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    at_ms   INTEGER NOT NULL,
    type    TEXT NOT NULL,
    node_id TEXT,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE nodes (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    node_id     TEXT NOT NULL,
    state       TEXT NOT NULL,
    output_json TEXT,
    error       TEXT,
    usage_json  TEXT,
    PRIMARY KEY (run_id, node_id)
);
"#,
    r#"
CREATE TABLE reports (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    format  TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, format)
);
"#,
    r#"
ALTER TABLE nodes ADD COLUMN input TEXT;
ALTER TABLE nodes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN started_ms INTEGER;
ALTER TABLE nodes ADD COLUMN finished_ms INTEGER;
ALTER TABLE nodes ADD COLUMN reused_from TEXT;
"#,
    r#"
ALTER TABLE runs ADD COLUMN queue_spec TEXT;
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN worker TEXT;
ALTER TABLE runs ADD COLUMN lease_until INTEGER;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_queued ON runs (created_ms, id) WHERE status = 'queued';
"#,
    r#"
CREATE TABLE slots (
    scope       TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    holder      TEXT NOT NULL,
    lease_until INTEGER NOT NULL,
    PRIMARY KEY (scope, slot)
) WITHOUT ROWID;
CREATE TABLE pauses (
    scope    TEXT PRIMARY KEY,
    until_ms INTEGER NOT NULL
) WITHOUT ROWID;
"#,
    // Events are stored in blocks: the events of one run that one write appended, as
    // a JSON array, so a write costs one row however many events it carries.
    r#"
CREATE TABLE event_blocks (
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    events    TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
INSERT INTO event_blocks (run_id, first_seq, last_seq, events)
    SELECT run_id, seq, seq, '[' || payload || ']' FROM events;
DROP TABLE events;
"#,
    // The structured-output dialect each provider's server was found to take.
    r#"
CREATE TABLE endpoint_dialects (
    provider   TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    dialect    TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (provider, endpoint)
);
"#,
    // A run's nodes as it ended, one JSON array (in conclave order) written with its
    // end, instead of a row per node updated at every event: a running run's nodes
    // are its event log, and a finished run's are read whole. Runs that ended earlier
    // keep theirs.
    r#"
ALTER TABLE runs ADD COLUMN nodes_json TEXT;
UPDATE runs SET nodes_json = (
    SELECT json_group_array(json_object(
        'node_id', node_id, 'state', state, 'output', json(output_json), 'error', error,
        'usage', json(usage_json), 'input', input, 'attempts', attempts, 'started_ms', started_ms,
        'finished_ms', finished_ms, 'reused_from', reused_from) ORDER BY position)
    FROM nodes WHERE nodes.run_id = runs.id)
WHERE status NOT IN ('queued', 'running');
DROP TABLE nodes;
"#,
    // The latest review of a branch (a baseline) in one indexed query: succeeded runs
    // by the repository and branch their review input records, newest first.
    r#"
CREATE INDEX runs_reviews ON runs (
    json_extract(input_json, '$.repository'),
    json_extract(input_json, '$.head.branch'),
    created_ms DESC,
    id DESC
) WHERE status = 'succeeded';
"#,
    // Cached node outputs, by the hash of everything that determined them.
    r#"
CREATE TABLE node_cache (
    key         TEXT PRIMARY KEY,
    output_json TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    stored_ms   INTEGER NOT NULL,
    expires_ms  INTEGER
);
"#,
    // Evals of conclaves: the headline figures as columns for the listing, the whole
    // summary as JSON, listed newest first, of one conclave or of all.
    r#"
CREATE TABLE evals (
    id           TEXT PRIMARY KEY,
    conclave     TEXT NOT NULL,
    dataset      TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    cases        INTEGER NOT NULL,
    precision    REAL NOT NULL,
    recall       REAL NOT NULL,
    f1           REAL NOT NULL,
    summary_json TEXT NOT NULL
);
CREATE INDEX evals_by_created ON evals (created_ms DESC, id DESC);
CREATE INDEX evals_by_conclave ON evals (conclave, created_ms DESC, id DESC);
"#,
    // Findings dismissed by replying on a pull request: one per repository and
    // fingerprint, listed by repository on the primary key.
    r#"
CREATE TABLE dismissals (
    repository  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    reason      TEXT NOT NULL,
    author      TEXT NOT NULL,
    created_ms  INTEGER NOT NULL,
    source      TEXT NOT NULL,
    PRIMARY KEY (repository, fingerprint)
) WITHOUT ROWID;
"#,
    // Webhook deliveries from forges: one per forge and delivery id (a redelivery is
    // recognised), what each asks as typed columns, never its body. Exactly one of
    // `command` and `ignored` is set; the pending ones are read oldest first.
    r#"
CREATE TABLE deliveries (
    forge         TEXT NOT NULL,
    delivery_id   TEXT NOT NULL,
    event         TEXT NOT NULL,
    action        TEXT NOT NULL,
    repository    TEXT,
    number        INTEGER,
    head_sha      TEXT,
    base_ref      TEXT,
    installation  INTEGER,
    sender        TEXT,
    command       TEXT,
    ignored       TEXT,
    received_ms   INTEGER NOT NULL,
    dispatched_ms INTEGER,
    PRIMARY KEY (forge, delivery_id),
    CHECK ((command IS NULL) <> (ignored IS NULL))
) WITHOUT ROWID;
CREATE INDEX deliveries_pending ON deliveries (received_ms, forge, delivery_id)
    WHERE ignored IS NULL AND dispatched_ms IS NULL;
"#,
    // The webhook dispatcher's record of each pull (merge) request, replaced whole by
    // each write: the key and what the busy listing reads as columns, the record as
    // JSON. The busy ones (a review queued, running or waiting) are read least
    // recently changed first.
    r#"
CREATE TABLE pull_requests (
    forge       TEXT NOT NULL,
    repository  TEXT NOT NULL,
    number      INTEGER NOT NULL,
    busy        INTEGER NOT NULL CHECK (busy IN (0, 1)),
    updated_ms  INTEGER NOT NULL,
    record_json TEXT NOT NULL,
    PRIMARY KEY (forge, repository, number)
) WITHOUT ROWID;
CREATE INDEX pull_requests_busy ON pull_requests (updated_ms, forge, repository, number) WHERE busy = 1;
"#,
];

/// Prepared statements kept per connection; more than the store has.
const STATEMENT_CACHE: usize = 128;

/// How long a write waits for another process's lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the connection the writer thread owns, switching the file to WAL and
/// migrating it.
pub(super) fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let mut conn = open(path)?;
    while_busy(|| {
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 8192;",
        )
    })
    .map_err(backend)?;
    let newer = while_busy(|| migrate(&mut conn)).map_err(backend)?;
    if let Some(version) = newer {
        return Err(StoreError::Backend(format!(
            "{} was written by a newer Conclave (schema version {version}, this one knows {}); upgrade Conclave or use another --db",
            path.display(),
            MIGRATIONS.len()
        )));
    }
    Ok(conn)
}

/// Repeats `step` while SQLite answers busy, for up to the busy timeout. SQLite skips
/// its busy handler where waiting could deadlock: while a fresh file is still in
/// rollback mode, two openers that both read it and then want its write lock, one to
/// switch it to WAL and one to migrate, would wait for each other, so one is told
/// busy at once. Its step holds no lock once it failed, so trying again is safe.
fn while_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match step() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => std::thread::sleep(BUSY_PAUSE),
            done => return done,
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// How long an opener told busy waits before it tries again.
const BUSY_PAUSE: Duration = Duration::from_millis(5);

/// Opens a connection for reads only; WAL lets it read beside the writer.
pub(super) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = open(path)?;
    conn.execute_batch("PRAGMA query_only = ON;").map_err(backend)?;
    Ok(conn)
}

fn open(path: &Path) -> Result<Connection, StoreError> {
    let conn =
        Connection::open(path).map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
    // The busy timeout comes first: switching to WAL and migrating take locks that
    // another process opening the same file may hold for a moment.
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    // Room for every statement the store prepares, so none is parsed again.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Applies the migrations not yet applied. The version is read inside an immediate
/// (write-locked) transaction, so when several processes open a fresh file at once,
/// one migrates and the others find the work done. A file of a newer schema is left
/// alone and its version returned.
fn migrate(conn: &mut Connection) -> rusqlite::Result<Option<usize>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: usize = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > MIGRATIONS.len() {
        return Ok(Some(version));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.execute_batch(&format!("{sql}; PRAGMA user_version = {};", i + 1))?;
    }
    tx.commit()?;
    Ok(None)
}

pub(super) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(run_id: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { run_id: run_id.to_string(), message: e.to_string() })
}

/// The columns of a run row that [`summary_from_row`] reads, with the JSON of its
/// input's `pull_request`: extracted in SQL, so a listing never reads a whole input
/// (a review's holds its diff). `json_extract` gives an object or an array as JSON
/// text and any other value as an SQL value, which is never a request.
pub(super) const SUMMARY_COLUMNS: &str = "id, conclave_id, status, created_ms, finished_ms, failed_node, error, \
     CASE WHEN json_type(input_json, '$.pull_request') IN ('object', 'array') \
     THEN json_extract(input_json, '$.pull_request') END AS pull_request";

/// Reads the [`SUMMARY_COLUMNS`] of a run row.
pub(super) fn summary_from_row(row: &rusqlite::Row) -> rusqlite::Result<RunSummary> {
    let status: String = row.get("status")?;
    let pull_request: Option<String> = row.get("pull_request")?;
    Ok(RunSummary {
        id: row.get("id")?,
        conclave_id: row.get("conclave_id")?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
        created_ms: row.get("created_ms")?,
        finished_ms: row.get("finished_ms")?,
        failed_node: row.get("failed_node")?,
        error: row.get("error")?,
        pull_request: crate::pull_request_row::label(pull_request.as_deref()),
    })
}

/// Whether the run exists.
pub(super) fn run_exists(conn: &Connection, run_id: &str) -> Result<bool, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")
        .and_then(|mut s| s.query_row([run_id], |_| Ok(true)).optional())
        .map_err(backend)?
        .unwrap_or(false))
}
