//! The PostgreSQL schema and its versioned migrations, recorded in
//! `conclave_migrations` and applied under one advisory lock so that several servers
//! starting at once on a fresh database do not race.

use deadpool_postgres::{Client, GenericClient};

use super::connection::{Target, describe};
use conclave_core::StoreError;

/// The advisory lock every migrating process takes ("conclave" in ASCII).
const MIGRATION_LOCK: i64 = 0x636f_6e63_6c61_7665;

/// Schema migrations, applied in order; migration `i` has version `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    conclave_id   TEXT NOT NULL,
    conclave_json TEXT NOT NULL,
    input_json    TEXT NOT NULL,
    status        TEXT NOT NULL,
    created_ms    BIGINT NOT NULL,
    finished_ms   BIGINT,
    failed_node   TEXT,
    error         TEXT,
    owner         TEXT NOT NULL,
    last_seq      BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_created ON runs (created_ms DESC, id DESC);
CREATE INDEX runs_running ON runs (id) WHERE status = 'running';
CREATE TABLE events (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    at_ms   BIGINT NOT NULL,
    type    TEXT NOT NULL,
    node_id TEXT,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE nodes (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    node_id     TEXT NOT NULL,
    state       TEXT NOT NULL,
    output_json TEXT,
    error       TEXT,
    usage_json  TEXT,
    input       TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    started_ms  BIGINT,
    finished_ms BIGINT,
    reused_from TEXT,
    PRIMARY KEY (run_id, node_id)
);
CREATE TABLE reports (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    format  TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, format)
);
"#,
    r#"
ALTER TABLE runs ADD COLUMN queue_spec TEXT;
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN worker TEXT;
ALTER TABLE runs ADD COLUMN lease_until BIGINT;
ALTER TABLE runs ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX runs_queued ON runs (created_ms, id) WHERE status = 'queued';
CREATE INDEX runs_leased ON runs (lease_until) WHERE status = 'running' AND queue_spec IS NOT NULL;
"#,
    r#"
CREATE TABLE slots (
    scope       TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    holder      TEXT,
    lease_until BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, slot)
);
CREATE TABLE pauses (
    scope    TEXT PRIMARY KEY,
    until_ms BIGINT NOT NULL
);
"#,
    // Events are stored in blocks: the events of one run that one batch appended, as a
    // JSON array, so a batch costs a row per run however many events it carries.
    r#"
CREATE TABLE event_blocks (
    run_id    TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq BIGINT NOT NULL,
    last_seq  BIGINT NOT NULL,
    events    TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
-- Blocks are written once and read whole: compressing them costs more than it saves.
ALTER TABLE event_blocks ALTER COLUMN events SET STORAGE EXTERNAL;
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
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (provider, endpoint)
);
"#,
    // A run's nodes as it ended, one JSON array (in conclave order) written with its
    // end, instead of a row per node: a running run's nodes are its event log, and a
    // finished run's are read whole. Runs that ended earlier keep theirs.
    r#"
ALTER TABLE runs ADD COLUMN nodes_json TEXT;
ALTER TABLE runs ALTER COLUMN nodes_json SET STORAGE EXTERNAL;
UPDATE runs SET nodes_json = (
    SELECT json_agg(json_build_object(
        'node_id', node_id, 'state', state, 'output', output_json::json, 'error', error,
        'usage', usage_json::json, 'input', input, 'attempts', attempts, 'started_ms', started_ms,
        'finished_ms', finished_ms, 'reused_from', reused_from) ORDER BY position)::text
    FROM nodes WHERE nodes.run_id = runs.id)
WHERE status NOT IN ('queued', 'running');
DROP TABLE nodes;
"#,
    // The latest review of a branch (a baseline) in one indexed query: succeeded runs
    // by the repository and branch their review input records, newest first.
    r#"
CREATE INDEX runs_reviews ON runs (
    (input_json::jsonb ->> 'repository'),
    (input_json::jsonb #>> '{head,branch}'),
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
    stored_ms   BIGINT NOT NULL,
    expires_ms  BIGINT
);
"#,
    // Evals of conclaves: the headline figures as columns for the listing, the whole
    // summary as JSON, listed newest first, of one conclave or of all.
    r#"
CREATE TABLE evals (
    id           TEXT PRIMARY KEY,
    conclave     TEXT NOT NULL,
    dataset      TEXT NOT NULL,
    created_ms   BIGINT NOT NULL,
    cases        BIGINT NOT NULL,
    precision    DOUBLE PRECISION NOT NULL,
    recall       DOUBLE PRECISION NOT NULL,
    f1           DOUBLE PRECISION NOT NULL,
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
    created_ms  BIGINT NOT NULL,
    source      TEXT NOT NULL,
    PRIMARY KEY (repository, fingerprint)
);
"#,
    // Webhook deliveries from forges: one per forge and delivery id (a redelivery is
    // recognised, whichever server it reaches), what each asks as typed columns, never
    // its body. Exactly one of `command` and `ignored` is set; the pending ones are
    // read oldest first.
    r#"
CREATE TABLE deliveries (
    forge         TEXT NOT NULL,
    delivery_id   TEXT NOT NULL,
    event         TEXT NOT NULL,
    action        TEXT NOT NULL,
    repository    TEXT,
    number        BIGINT,
    head_sha      TEXT,
    base_ref      TEXT,
    installation  BIGINT,
    sender        TEXT,
    command       TEXT,
    ignored       TEXT,
    received_ms   BIGINT NOT NULL,
    dispatched_ms BIGINT,
    PRIMARY KEY (forge, delivery_id),
    CHECK ((command IS NULL) <> (ignored IS NULL))
);
CREATE INDEX deliveries_pending ON deliveries (received_ms, forge, delivery_id)
    WHERE ignored IS NULL AND dispatched_ms IS NULL;
"#,
    // The webhook dispatcher's record of each pull (merge) request, replaced whole by
    // each write: the key and what the busy listing reads as columns, the record as
    // JSON. The busy ones (a review queued, running or waiting) are read least
    // recently changed first. Repositories compare byte by byte (`C`), as in the
    // other stores, whatever the database's collation.
    r#"
CREATE TABLE pull_requests (
    forge       TEXT NOT NULL,
    repository  TEXT COLLATE "C" NOT NULL,
    number      BIGINT NOT NULL,
    busy        BOOLEAN NOT NULL,
    updated_ms  BIGINT NOT NULL,
    record_json TEXT NOT NULL,
    PRIMARY KEY (forge, repository, number)
);
CREATE INDEX pull_requests_busy ON pull_requests (updated_ms, forge, repository, number) WHERE busy;
"#,
];

/// Applies the migrations not yet applied, in one transaction that holds the
/// advisory lock: a second process waits, then finds the work done. PostgreSQL's DDL
/// is transactional, so a failed migration leaves the database as it was; each one
/// runs in its own savepoint so the error names it.
pub(super) async fn migrate(client: &mut Client, target: &Target) -> Result<(), StoreError> {
    let failed = |what: &str, e: tokio_postgres::Error| {
        StoreError::Backend(format!("cannot {what} in {target}: {}; check the role's rights on it", describe(&e)))
    };
    let mut tx = client.transaction().await.map_err(|e| failed("start the migration", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| failed("take the migration lock", e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS conclave_migrations (
             version    INTEGER PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(|e| failed("create conclave_migrations", e))?;
    let row = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM conclave_migrations", &[])
        .await
        .map_err(|e| failed("read conclave_migrations", e))?;
    let applied: i32 = row.get(0);
    let known = MIGRATIONS.len();
    let applied = usize::try_from(applied).unwrap_or(0);
    if applied > known {
        return Err(StoreError::Backend(format!(
            "{target} was migrated by a newer Conclave (schema version {applied}, this one knows {known}); \
             upgrade Conclave or use another --db"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let version = i32::try_from(i + 1).unwrap_or(i32::MAX);
        let step = tx.savepoint("migration").await.map_err(|e| failed("start a migration", e))?;
        step.batch_execute(sql).await.map_err(|e| failed(&format!("apply migration {version}"), e))?;
        step.execute("INSERT INTO conclave_migrations (version) VALUES ($1)", &[&version])
            .await
            .map_err(|e| failed(&format!("record migration {version}"), e))?;
        step.commit().await.map_err(|e| failed(&format!("apply migration {version}"), e))?;
    }
    tx.commit().await.map_err(|e| failed("commit the migrations", e))
}
