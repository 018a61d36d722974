//! The single writer, with group commit.
//!
//! Every state change of the governed pipeline (reserving a hold, settling it, parking,
//! deciding, appending to the activity log) is a *job* run by one thread that owns one
//! connection. SQLite has one writer anyway; owning it explicitly means a reservation reads
//! and updates the running totals with nothing in between, so two requests can never both
//! take the last of a cap. Jobs are synchronous and use cached prepared statements, because a
//! statement costs well under a microsecond here, against tens through an async driver.
//!
//! Group commit: the thread takes up to `max_batch` queued jobs, runs each inside its own
//! SAVEPOINT within one transaction, and commits once. A job that fails rolls back to its
//! savepoint and leaves nothing behind, while its neighbours still commit. A job's caller
//! hears back only after the shared COMMIT, so nothing is acknowledged before it is durable.
//! With `max_batch = 1` this is one transaction per job, for comparison.
//!
//! Checkpoints: SQLite restarts the WAL from its beginning only when a checkpoint has copied
//! every frame back before a write transaction begins. A checkpointer beside a writer that
//! never pauses never catches up, and the WAL grew without bound (1.9 GB after 100,000
//! actions). So a thread copies frames every few milliseconds off the writer's path, and the
//! writer itself finishes the small remainder between batches every 50 ms; the WAL stays at
//! tens of megabytes under full load.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::store::Store;

/// Queued jobs beyond this make callers wait: a bound on memory and on latency.
pub const QUEUE_CAPACITY: usize = 4_096;
/// The default largest batch in one commit.
pub const DEFAULT_MAX_BATCH: usize = 512;

type Reply = Box<dyn FnOnce(Option<String>) + Send>;
type Job = Box<dyn FnOnce(&Connection) -> (bool, Reply) + Send>;

/// A handle to the writer thread. Cheap to clone; the thread stops when the last handle drops.
#[derive(Clone, Debug)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
    stats: Arc<Stats>,
}

/// Counters for monitoring group commit: how many commits, and how many jobs they carried.
#[derive(Debug, Default)]
pub struct Stats {
    pub commits: AtomicU64,
    pub jobs: AtomicU64,
}

impl Writer {
    /// Starts the writer thread on its own connection to `store`'s database.
    pub fn start(store: &Store, max_batch: usize) -> Result<Writer> {
        let conn = store.open_writer_connection()?;
        // Checkpoints run on their own thread and connection, off the writer's path.
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0")?;
        let checkpointer = store.open_writer_connection()?;
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let stats = Arc::new(Stats::default());
        let s = stats.clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop_checkpoints = stop.clone();
        std::thread::Builder::new()
            .name("naive-checkpoint".into())
            .spawn(move || checkpoint_loop(&checkpointer, &stop_checkpoints))
            .map_err(|e| {
                Error::invalid("writer_start_failed", format!("cannot start the checkpoint thread: {e}"))
            })?;
        std::thread::Builder::new()
            .name("naive-writer".into())
            .spawn(move || {
                run(conn, rx, max_batch.max(1), &s);
                stop.store(true, Ordering::Relaxed);
            })
            .map_err(|e| {
                Error::invalid("writer_start_failed", format!("cannot start the writer thread: {e}"))
            })?;
        Ok(Writer { tx, stats })
    }

    /// (commits, jobs) so far.
    pub fn stats(&self) -> (u64, u64) {
        (self.stats.commits.load(Ordering::Relaxed), self.stats.jobs.load(Ordering::Relaxed))
    }

    /// Runs `f` atomically: either all its writes commit, or none do and its error returns.
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (rtx, rrx) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |conn| {
            let result = f(conn);
            let ok = result.is_ok();
            let reply: Reply = Box::new(move |commit_error: Option<String>| {
                let _ = rtx.send(match (commit_error, result) {
                    (Some(e), Ok(_)) => {
                        Err(Error::invalid("commit_failed", format!("the write did not commit: {e}")))
                    }
                    (_, r) => r,
                });
            });
            (ok, reply)
        });
        self.tx
            .send(job)
            .await
            .map_err(|_| Error::invalid("writer_stopped", "the gateway is shutting down"))?;
        rrx.await.map_err(|_| {
            Error::invalid("write_failed", "the write was rolled back after an internal error; try again")
        })?
    }
}

fn run(conn: Connection, mut rx: mpsc::Receiver<Job>, max_batch: usize, stats: &Stats) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch);
    let mut last_checkpoint = std::time::Instant::now();
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            // Without a transaction nothing runs; dropping the jobs tells their callers.
            tracing::error!(error = %e, jobs = batch.len(), "writer could not begin a transaction");
            batch.clear();
            continue;
        }
        let mut replies = Vec::with_capacity(batch.len());
        for job in batch.drain(..) {
            let sp = exec(&conn, "SAVEPOINT job");
            // A panicking job must not take the writer down with it: roll it back and go on.
            let (ok, reply) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&conn)))
                .unwrap_or_else(|_| {
                    tracing::error!("a writer job panicked; its writes were rolled back");
                    (false, Box::new(|_| {}) as Reply)
                });
            let end = if ok && sp.is_ok() {
                exec(&conn, "RELEASE job")
            } else {
                exec(&conn, "ROLLBACK TO job").and_then(|_| exec(&conn, "RELEASE job"))
            };
            if let Err(e) = end {
                tracing::error!(error = %e, "writer savepoint failed");
            }
            replies.push(reply);
        }
        let commit = exec(&conn, "COMMIT").err().map(|e| e.to_string());
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats.jobs.fetch_add(replies.len() as u64, Ordering::Relaxed);
        if let Some(e) = &commit {
            tracing::error!(error = %e, "group commit failed; rolling back the batch");
            let _ = conn.execute_batch("ROLLBACK");
        }
        for reply in replies {
            reply(commit.clone());
        }
        if last_checkpoint.elapsed() >= WRITER_CHECKPOINT_INTERVAL {
            last_checkpoint = std::time::Instant::now();
            // The checkpoint thread has copied nearly everything; finishing the rest here, with
            // no write in flight, lets the next transaction restart the WAL from its beginning.
            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                tracing::warn!(error = %e, "writer checkpoint failed; the WAL restarts after a later one");
            }
        }
    }
}

/// Runs a fixed statement through the prepared-statement cache.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}

/// How often the checkpoint thread copies the WAL back into the database file.
const CHECKPOINT_INTERVAL_MS: u64 = 10;
/// How often the writer finishes a checkpoint itself, so the WAL can restart.
const WRITER_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Passive checkpoints never block the writer; they copy what no reader still needs.
fn checkpoint_loop(conn: &Connection, stop: &std::sync::atomic::AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(CHECKPOINT_INTERVAL_MS));
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "checkpoint failed; the WAL keeps growing until the next one succeeds");
        }
    }
}
