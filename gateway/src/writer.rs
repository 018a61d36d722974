//! The single writer, with group commit.
//!
//! Every state change of the governed pipeline (reserving a hold, settling it, parking,
//! deciding, appending to the activity log) is a *job* run by one task that owns one
//! connection. SQLite has one writer anyway; owning it explicitly means a reservation reads
//! and updates the running totals with nothing in between, so two requests can never both
//! take the last of a cap.
//!
//! Group commit: the task takes up to `max_batch` queued jobs, runs each inside its own
//! SAVEPOINT within one transaction, and commits once. A job that fails rolls back to its
//! savepoint and leaves nothing behind, while its neighbours still commit. A job's caller
//! hears back only after the shared COMMIT, so nothing is acknowledged before it is durable.
//! With `max_batch = 1` this is one transaction per job, for comparison.

use futures_util::future::BoxFuture;
use sqlx::sqlite::SqliteConnection;
use sqlx::{Connection, Executor, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// Queued jobs beyond this make callers wait: a bound on memory and on latency.
pub const QUEUE_CAPACITY: usize = 4_096;
/// The default largest batch in one commit.
pub const DEFAULT_MAX_BATCH: usize = 256;

type Reply = Box<dyn FnOnce(Option<String>) + Send>;
type Job = Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, (bool, Reply)> + Send>;

/// A handle to the writer task. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer task on its own connection from `pool`.
    pub async fn start(pool: &SqlitePool, max_batch: usize) -> Result<Writer> {
        let conn = pool.acquire().await?.detach();
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(run(conn, rx, max_batch.max(1)));
        Ok(Writer { tx })
    }

    /// Runs `f` atomically: either all its writes commit, or none do and its error returns.
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let (rtx, rrx) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |conn| {
            Box::pin(async move {
                let result = f(conn).await;
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
            })
        });
        self.tx
            .send(job)
            .await
            .map_err(|_| Error::invalid("writer_stopped", "the gateway is shutting down"))?;
        rrx.await.map_err(|_| Error::invalid("writer_stopped", "the gateway is shutting down"))?
    }
}

async fn run(mut conn: SqliteConnection, mut rx: mpsc::Receiver<Job>, max_batch: usize) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch);
    while rx.recv_many(&mut batch, max_batch).await > 0 {
        let mut replies = Vec::with_capacity(batch.len());
        let began = conn.execute("BEGIN IMMEDIATE").await;
        if let Err(e) = began {
            // Without a transaction nothing runs; dropping the jobs tells their callers.
            tracing::error!(error = %e, jobs = batch.len(), "writer could not begin a transaction");
            batch.clear();
            continue;
        }
        for job in batch.drain(..) {
            let sp = conn.execute("SAVEPOINT job").await;
            let (ok, reply) = job(&mut conn).await;
            let end = if ok && sp.is_ok() {
                conn.execute("RELEASE job").await
            } else {
                match conn.execute("ROLLBACK TO job").await {
                    Ok(_) => conn.execute("RELEASE job").await,
                    Err(e) => Err(e),
                }
            };
            if let Err(e) = end {
                tracing::error!(error = %e, "writer savepoint failed");
            }
            replies.push(reply);
        }
        let commit = conn.execute("COMMIT").await.err().map(|e| e.to_string());
        if let Some(e) = &commit {
            tracing::error!(error = %e, "group commit failed; rolling back the batch");
            let _ = conn.execute("ROLLBACK").await;
        }
        for reply in replies {
            reply(commit.clone());
        }
    }
    let _ = conn.close().await;
}
