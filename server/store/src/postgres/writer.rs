//! The event writer: one task that commits the events appended while the previous
//! commit was in flight together, in one transaction, and answers each caller once
//! its event is committed (or refused).
//!
//! The writer keeps a fold of each run it writes from the first event (`../folds.rs`),
//! so a run's end stores its nodes without reading its events back. A batch whose
//! runs all have folds and whose events follow on is written the quick way: the runs'
//! last sequence numbers are known, so the lock, the blocks, the new last sequence
//! numbers and the runs' ends go to the server pipelined between `BEGIN` and
//! `COMMIT`. Any other batch, or one the quick way finds out of date, is written the
//! careful way: runs locked and their order checked first, then the events as one
//! block per run in one multi-row INSERT and what they change, inside a savepoint;
//! if anything in it fails, that savepoint is rolled back and the batch is written
//! again one event per savepoint, so a failing event rolls back only itself.

use conclave_core::StoreError;
use conclave_shared::RunEvent;
use deadpool_postgres::{GenericClient, Pool, Transaction};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

use super::connection::{backend, pool_error};
use super::rows::apply_effects;
use super::values::{from_db_int, from_json, to_db_int, to_json};
use crate::folds::Folds;

/// The most events one transaction takes.
const MAX_BATCH: usize = 1024;

/// How many appends may wait for the writer before callers wait to enqueue.
const QUEUE: usize = 8192;

/// The handle appenders send their events through.
#[derive(Debug)]
pub(super) struct Writer {
    requests: mpsc::Sender<Request>,
    commits: Arc<AtomicU64>,
}

#[derive(Debug)]
struct Request {
    event: RunEvent,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

impl Writer {
    /// Starts the writer task on the current tokio runtime; it ends when the
    /// `Writer` is dropped.
    pub(super) fn spawn(pool: Pool) -> Writer {
        let (requests, receiver) = mpsc::channel(QUEUE);
        let commits = Arc::new(AtomicU64::new(0));
        tokio::spawn(run(pool, receiver, Arc::clone(&commits)));
        Writer { requests, commits }
    }

    /// Appends one event; returns once its transaction has committed.
    pub(super) async fn append(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.append_all(std::slice::from_ref(event)).await
    }

    /// Appends events in order; returns once all are committed, or with the first
    /// event's error. They are queued back to back, so they share a batch unless it
    /// is full.
    pub(super) async fn append_all(&self, events: &[RunEvent]) -> Result<(), StoreError> {
        let stopped = |event: &RunEvent| {
            StoreError::Backend(format!(
                "the PostgreSQL event writer stopped before event {} of run `{}` was stored; restart Conclave",
                event.seq, event.run_id
            ))
        };
        let mut answers = Vec::with_capacity(events.len());
        for event in events {
            let (reply, answer) = oneshot::channel();
            self.requests.send(Request { event: event.clone(), reply }).await.map_err(|_| stopped(event))?;
            answers.push((event, answer));
        }
        for (event, answer) in answers {
            answer.await.map_err(|_| stopped(event))??;
        }
        Ok(())
    }

    /// Transactions committed so far.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

async fn run(pool: Pool, mut receiver: mpsc::Receiver<Request>, commits: Arc<AtomicU64>) {
    let mut batch = Vec::new();
    let mut folds = Folds::default();
    while receiver.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let events: Vec<&RunEvent> = batch.iter().map(|r| &r.event).collect();
        let written = write_batch(&pool, &events, &mut folds).await;
        if written.is_err() {
            folds.forget(events.iter().map(|e| e.run_id.as_str()));
        }
        let results = match written {
            Ok(results) => {
                commits.fetch_add(1, Ordering::Relaxed);
                results
            }
            Err(e) => {
                let message = e.to_string();
                events.iter().map(|_| Err(StoreError::Backend(message.clone()))).collect()
            }
        };
        for (request, result) in batch.drain(..).zip(results) {
            // A caller that stopped waiting does not need its answer.
            let _ = request.reply.send(result);
        }
    }
}

async fn write_batch(
    pool: &Pool,
    events: &[&RunEvent],
    folds: &mut Folds,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let mut client = pool.get().await.map_err(pool_error)?;
    if write_known(&mut client, events, folds).await? {
        return Ok(events.iter().map(|_| Ok(())).collect());
    }
    let mut tx = client.transaction().await.map_err(backend)?;
    let results = append_locked(&mut tx, events, Some(folds)).await?;
    tx.commit().await.map_err(backend)?;
    Ok(results)
}

/// The quick way, for a batch of runs the writer has folded and whose events all
/// follow on: each run's last stored sequence number is then known, so locking the
/// runs, inserting the blocks and applying their effects go to the server together,
/// in one round trip between `BEGIN` and `COMMIT`. Returns `false`, having written
/// nothing, when the batch is not such a batch, when the locked runs turn out to
/// hold other sequence numbers (another process wrote them), or when a write fails:
/// the caller then takes the careful way, which says which events fail.
async fn write_known(
    client: &mut deadpool_postgres::Client,
    events: &[&RunEvent],
    folds: &mut Folds,
) -> Result<bool, StoreError> {
    let mut known: HashMap<String, u64> = HashMap::new();
    let mut last: HashMap<String, u64> = HashMap::new();
    for event in events {
        let Some(previous) = last.get(&event.run_id).copied().or_else(|| folds.last_seq(&event.run_id)) else {
            return Ok(false);
        };
        if event.seq <= previous {
            return Ok(false);
        }
        known.entry(event.run_id.clone()).or_insert(previous);
        last.insert(event.run_id.clone(), event.seq);
    }
    let tx = client.transaction().await.map_err(backend)?;
    let written = tokio::try_join!(
        lock_runs(&tx, events),
        insert_events(&tx, events),
        record_last_seqs(&tx, &last),
        apply_effects(&tx, events, Some(&mut *folds)),
    );
    match written {
        Ok(((locked, _), ..)) if locked == known => {
            tx.commit().await.map_err(backend)?;
            Ok(true)
        }
        _ => {
            // The folds moved on with events now rolled back.
            folds.forget(events.iter().map(|e| e.run_id.as_str()));
            tx.rollback().await.map_err(backend)?;
            Ok(false)
        }
    }
}

/// Appends `events` in order inside `tx`, locking their runs first (in id order, so
/// that concurrent writers cannot deadlock). Returns each event's outcome; the outer
/// error means the transaction itself failed. `folds`, when given, are checked
/// against the locked runs and carried forward by the events written.
pub(super) async fn append_locked(
    tx: &mut Transaction<'_>,
    events: &[&RunEvent],
    mut folds: Option<&mut Folds>,
) -> Result<Vec<Result<(), StoreError>>, StoreError> {
    let (locked, fresh) = lock_runs(tx, events).await?;
    if let Some(folds) = folds.as_deref_mut() {
        for (run_id, &last) in &locked {
            folds.check(run_id, last);
        }
        for (run_id, conclave) in fresh {
            if !folds.has(&run_id) {
                // An unreadable conclave only costs the shortcut: the run's end reads the events.
                if let Ok(conclave) = from_json(&run_id, &conclave) {
                    folds.start(&run_id, conclave);
                }
            }
        }
    }
    let mut last = locked.clone();
    let mut results = Vec::with_capacity(events.len());
    for event in events {
        let result = check_order(&last, event);
        if result.is_ok() {
            last.insert(event.run_id.clone(), event.seq);
        }
        results.push(result);
    }
    let accepted: Vec<&RunEvent> = events.iter().zip(&results).filter(|(_, r)| r.is_ok()).map(|(e, _)| *e).collect();
    let mut fast = tx.savepoint("batch").await.map_err(backend)?;
    match write_all(&mut fast, &accepted, folds.as_deref_mut()).await {
        Ok(()) => fast.commit().await.map_err(backend)?,
        Err(_) => {
            fast.rollback().await.map_err(backend)?;
            if let Some(folds) = folds {
                folds.forget(events.iter().map(|e| e.run_id.as_str()));
            }
            last = locked;
            results.clear();
            for event in events {
                let result = match check_order(&last, event) {
                    Ok(()) => write_one(tx, event).await?,
                    Err(e) => Err(e),
                };
                if result.is_ok() {
                    last.insert(event.run_id.clone(), event.seq);
                }
                results.push(result);
            }
        }
    }
    record_last_seqs(tx, &last).await?;
    Ok(results)
}

/// The conclaves (as stored JSON) of locked runs that have no events yet.
type Fresh = Vec<(String, String)>;

/// Locks the runs of `events` and reads their last sequence numbers (runs that do
/// not exist are absent), and the conclave of each run with no events yet.
async fn lock_runs<C: GenericClient + Sync>(
    tx: &C,
    events: &[&RunEvent],
) -> Result<(HashMap<String, u64>, Fresh), StoreError> {
    let mut ids: Vec<&str> = events.iter().map(|e| e.run_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let statement = tx
        .prepare_cached(
            "SELECT id, last_seq, CASE WHEN last_seq = 0 THEN conclave_json END FROM runs WHERE id = ANY($1) \
             ORDER BY id FOR UPDATE",
        )
        .await
        .map_err(backend)?;
    let rows = tx.query(&statement, &[&ids]).await.map_err(backend)?;
    let mut locked = HashMap::with_capacity(rows.len());
    let mut fresh = Vec::new();
    for row in rows {
        let id: String = row.try_get(0).map_err(backend)?;
        if let Some(conclave) = row.try_get::<_, Option<String>>(2).map_err(backend)? {
            fresh.push((id.clone(), conclave));
        }
        locked.insert(id, from_db_int(row.try_get(1).map_err(backend)?));
    }
    Ok((locked, fresh))
}

/// Refuses an event for an unknown run or one not after the run's last event.
fn check_order(last: &HashMap<String, u64>, event: &RunEvent) -> Result<(), StoreError> {
    match last.get(&event.run_id) {
        None => Err(StoreError::UnknownRun(event.run_id.clone())),
        Some(&previous) if event.seq <= previous => {
            Err(StoreError::OutOfOrder { run_id: event.run_id.clone(), seq: event.seq, last: previous })
        }
        Some(_) => Ok(()),
    }
}

/// The fast way: all event blocks in one INSERT, then what the events change.
async fn write_all(
    tx: &mut Transaction<'_>,
    events: &[&RunEvent],
    folds: Option<&mut Folds>,
) -> Result<(), StoreError> {
    insert_events(&*tx, events).await?;
    apply_effects(&*tx, events, folds).await
}

/// One event in its own savepoint: its error is its own, and it leaves nothing behind.
async fn write_one(tx: &mut Transaction<'_>, event: &RunEvent) -> Result<Result<(), StoreError>, StoreError> {
    let savepoint = tx.savepoint("event").await.map_err(backend)?;
    let written = match insert_events(&savepoint, &[event]).await {
        Ok(()) => apply_effects(&savepoint, &[event], None).await,
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => savepoint.commit().await.map_err(backend)?,
        Err(_) => savepoint.rollback().await.map_err(backend)?,
    }
    Ok(written)
}

/// Inserts the events as blocks, one per run (its events in order, as a JSON array),
/// with one multi-row INSERT.
async fn insert_events<C: GenericClient + Sync>(tx: &C, events: &[&RunEvent]) -> Result<(), StoreError> {
    let mut blocks: Vec<(&str, Vec<&RunEvent>)> = Vec::new();
    for event in events {
        match blocks.iter_mut().find(|(run_id, _)| *run_id == event.run_id) {
            Some((_, block)) => block.push(event),
            None => blocks.push((&event.run_id, vec![event])),
        }
    }
    if blocks.is_empty() {
        return Ok(());
    }
    let run_ids: Vec<&str> = blocks.iter().map(|(run_id, _)| *run_id).collect();
    let firsts: Vec<i64> = blocks.iter().map(|(_, b)| to_db_int(b.first().map_or(0, |e| e.seq))).collect();
    let lasts: Vec<i64> = blocks.iter().map(|(_, b)| to_db_int(b.last().map_or(0, |e| e.seq))).collect();
    let texts = blocks.iter().map(|(_, b)| to_json(b)).collect::<Result<Vec<_>, _>>()?;
    let statement = tx
        .prepare_cached(
            "INSERT INTO event_blocks (run_id, first_seq, last_seq, events) \
             SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::text[])",
        )
        .await
        .map_err(backend)?;
    tx.execute(&statement, &[&run_ids, &firsts, &lasts, &texts]).await.map_err(backend)?;
    Ok(())
}

/// Stores each locked run's last sequence number, and tells every listening server
/// which runs have new events (`NOTIFY`, delivered when the transaction commits).
async fn record_last_seqs<C: GenericClient + Sync>(tx: &C, last: &HashMap<String, u64>) -> Result<(), StoreError> {
    let ids: Vec<&str> = last.keys().map(String::as_str).collect();
    let seqs: Vec<i64> = last.values().map(|&s| to_db_int(s)).collect();
    let statement = tx
        .prepare_cached(
            "WITH changed AS (UPDATE runs SET last_seq = v.seq FROM UNNEST($1::text[], $2::bigint[]) AS v(id, seq) \
             WHERE runs.id = v.id AND runs.last_seq <> v.seq RETURNING runs.id) \
             SELECT pg_notify('conclave_events', id) FROM changed",
        )
        .await
        .map_err(backend)?;
    tx.query(&statement, &[&ids, &seqs]).await.map_err(backend)?;
    Ok(())
}
