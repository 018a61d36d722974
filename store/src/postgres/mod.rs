//! The PostgreSQL engine's side of the storage boundary: its schema (`migrations/postgres`),
//! its [`Tx`], and [`Postgres::run`], which runs a job the way the SQLite writer does, so a
//! job written once against [`Tx`] runs on either engine.
//!
//! Jobs run in READ COMMITTED transactions on [`RUNNERS`] job threads, each with its own
//! connection and its own single-threaded runtime (jobs are synchronous, like the writer's):
//! a statement's round trip then wakes only the thread that waits for it. Each runner commits
//! the jobs queued for it in batches, and a job that names its tenant's key always goes to
//! the same runner (`batch.rs`: group commit, the lock order, what a failure undoes). Reads
//! outside jobs use an async pool. When PostgreSQL answers a serialization failure (40001)
//! or a deadlock (40P01), the batch is rolled back and runs again after a random pause, up to
//! [`MAX_ATTEMPTS`]; jobs must be pure functions of the database state, as on SQLite.
//!
//! Guarantees: a job's writes commit together or not at all, and its caller hears back only
//! after COMMIT; a job that fails leaves nothing behind, and its neighbours in a batch still
//! commit; a transaction is never left open on a connection (a batch that did not commit is
//! rolled back before its callers hear back).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};

use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};
use tokio::runtime::Runtime;

#[cfg(test)]
use crate::StoreErrorKind;
use crate::redact;
use crate::sql::{Engine, Kind, Row, ToValue, Tx, Value, numbered};
use crate::{Error, JobError, Result};

mod batch;

pub use batch::{Journal, MAX_BATCH, Reading, Stats};
use batch::{Pending, Queued, Runner};

/// How many times a job runs when PostgreSQL keeps reporting conflicts.
pub const MAX_ATTEMPTS: u32 = 8;

/// A migrated PostgreSQL database, a pool of connections to it for reads, and the runner
/// threads that run jobs ([`batch`]).
#[derive(Clone)]
pub struct Postgres {
    pool: PgPool,
    runners: Arc<Vec<Sender<Queued>>>,
    next: Arc<AtomicUsize>,
    journal: Arc<OnceLock<Arc<dyn Journal>>>,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("pool", &self.pool).field("runners", &self.runners.len()).finish()
    }
}

/// Job threads per instance, each holding one connection while the instance is busy.
pub const RUNNERS: usize = 16;

/// Starts the runner threads, each with its own queue; they stop when the last [`Postgres`]
/// handle drops.
fn start_runners(
    url: &str,
    journal: &Arc<OnceLock<Arc<dyn Journal>>>,
    stats: &Arc<Stats>,
) -> Result<Vec<Sender<Queued>>> {
    let failed = |e: std::io::Error| {
        Error::internal("runner_start_failed", format!("cannot start a PostgreSQL job thread: {e}"))
    };
    let mut queues = Vec::with_capacity(RUNNERS);
    for i in 0..RUNNERS {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(failed)?;
        let runner =
            Runner { rt, url: url.to_string(), conn: None, journal: journal.clone(), stats: stats.clone() };
        let (tx, rx) = std::sync::mpsc::channel::<Queued>();
        std::thread::Builder::new()
            .name(format!("naive-pg-{i}"))
            .spawn(move || runner.serve(rx))
            .map_err(failed)?;
        queues.push(tx);
    }
    Ok(queues)
}

impl Postgres {
    /// Connects to `url` and applies `migrations/postgres`.
    pub async fn open(url: &str, max_connections: u32) -> Result<Postgres> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .connect(url)
            .await
            .map_err(|source| Error::DatabaseOpen { url: redact(url), source: source.into() })?;
        sqlx::migrate!("../migrations/postgres").run(&pool).await?;
        let (journal, stats) = (Arc::new(OnceLock::new()), Arc::new(Stats::default()));
        let runners = Arc::new(start_runners(url, &journal, &stats)?);
        Ok(Postgres { pool, runners, next: Arc::new(AtomicUsize::new(0)), journal, stats })
    }

    /// Sets what every batch reports to ([`Journal`]); the first setting stays.
    pub fn set_journal(&self, journal: Arc<dyn Journal>) {
        let _ = self.journal.set(journal);
    }

    /// What the runners measured so far.
    pub fn stats(&self) -> Reading {
        self.stats.read()
    }

    /// The read pool's connections: (open, idle, most allowed). Runner threads hold one more
    /// connection each while busy, outside the pool.
    pub fn pool_use(&self) -> (u32, u32, u32) {
        let idle = u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX);
        (self.pool.size(), idle, self.pool.options().get_max_connections())
    }

    /// Runs `f` in a transaction of its own, again after a serialization failure or deadlock.
    pub fn run<T, E, F>(&self, f: F) -> impl Future<Output = Result<T, E>> + Send + use<'_, T, E, F>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.queue(None, None, f)
    }

    /// Runs `f` in a batch that holds the advisory lock `key` ([`crate::sql::lock_digest`])
    /// from before its first job to COMMIT, beside other jobs queued for the same runner.
    pub fn run_keyed<T, E, F>(
        &self,
        key: i64,
        f: F,
    ) -> impl Future<Output = Result<T, E>> + Send + use<'_, T, E, F>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.queue(Some(key), None, f)
    }

    /// [`Postgres::run_keyed`] for a job that says what it will read: `hint` reaches the
    /// journal's [`Journal::prefetch`] with its batch's other hints, before any job runs.
    pub fn run_keyed_hinted<T, E, F>(
        &self,
        key: i64,
        hint: Box<dyn std::any::Any + Send>,
        f: F,
    ) -> impl Future<Output = Result<T, E>> + Send + use<'_, T, E, F>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.queue(Some(key), Some(hint), f)
    }

    /// `f` is boxed here, before the future, as [`crate::writer::Writer::run`] boxes it; it
    /// is queued when the future is first polled.
    fn queue<T, E, F>(
        &self,
        key: Option<i64>,
        hint: Option<Box<dyn std::any::Any + Send>>,
        f: F,
    ) -> impl Future<Output = Result<T, E>> + Send + use<'_, T, E, F>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task: Box<dyn batch::Task> = Box::new(Pending { f, hint, result: None, tx });
        async move {
            let runner = match key {
                Some(k) => (k as u64 % self.runners.len() as u64) as usize,
                None => self.next.fetch_add(1, Ordering::Relaxed) % self.runners.len(),
            };
            self.runners[runner].send(Queued { key, task }).map_err(|_| {
                Error::unavailable("writer_stopped", "the gateway is shutting down; try again shortly", 5)
            })?;
            rx.await.map_err(|_| {
                Error::internal("write_failed", "the job stopped before it finished; try again")
            })?
        }
    }

    /// Runs a read outside any job, on a pooled connection ([`crate::reads`]).
    pub async fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
        rows_on(&self.pool, sql, args).await
    }

    /// Runs one statement outside any job ([`crate::Store::exec`]).
    pub async fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<u64> {
        let sql = numbered(sql);
        Ok(query(&sql, args).execute(&self.pool).await?.rows_affected())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Whether [`Postgres::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.pool.is_closed()
    }

    /// `LISTEN`s on `channel`, on a connection of its own.
    pub async fn listen(&self, channel: &str) -> Result<Notifications> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        listener.ignore_pool_close_event(false);
        listener.listen(channel).await?;
        Ok(Notifications(listener))
    }
}

/// One `LISTEN` connection ([`Postgres::listen`]): its notifications' payloads, in commit order.
pub struct Notifications(sqlx::postgres::PgListener);

impl Notifications {
    /// The next payload; `None` once the connection dropped (listen again, and read what was
    /// committed meanwhile from the tables: notifications sent while away are lost).
    pub async fn next(&mut self) -> Result<Option<String>> {
        Ok(self.0.try_recv().await?.map(|n| n.payload().to_string()))
    }
}

/// A read on `pool`, outside any job.
pub async fn rows_on(pool: &PgPool, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
    let sql = numbered(sql);
    let rows = query(&sql, args).fetch_all(pool).await?;
    rows.iter().map(row).collect()
}

/// A random pause before attempt `attempt + 1`, up to 2^attempt ms (at most 64 ms), so jobs
/// that conflicted do not meet again in step.
fn backoff(attempt: u32) -> std::time::Duration {
    let ceiling = 1u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u64;
    std::time::Duration::from_micros(ceiling * jitter)
}

/// Whether PostgreSQL refused the transaction for a conflict that running it again resolves.
#[cfg(test)]
fn is_conflict(e: &impl JobError) -> bool {
    e.storage_kind() == Some(StoreErrorKind::Conflict)
}

/// An open PostgreSQL transaction, driven from a runner thread.
struct PgTx<'c> {
    conn: RefCell<&'c mut PgConnection>,
    rt: &'c Runtime,
    /// Advisory locks this transaction holds: a second request for one costs no statement.
    held: RefCell<Vec<i64>>,
    /// Whether a statement since the flag was last cleared may have changed something (any
    /// statement but a `SELECT`) or failed, which leaves the transaction unusable.
    wrote: Cell<bool>,
    /// The batch's journal, told before each statement ([`Journal::before_statement`]).
    journal: Option<&'c dyn Journal>,
    /// Whether the journal is running: its own statements do not call it again.
    hooked: Cell<bool>,
}

impl PgTx<'_> {
    /// Runs `f` (the journal's own work) without telling the journal of its statements.
    fn hooked<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = self.hooked.replace(true);
        let out = f();
        self.hooked.set(was);
        out
    }

    /// Tells the journal a job's statement is next, unless the journal is the one sending it.
    fn before(&self, sql: &str) -> crate::Result<()> {
        match self.journal {
            Some(j) if !self.hooked.get() => self.hooked(|| j.before_statement(self, sql)),
            _ => Ok(()),
        }
    }

    fn note(&self, sql: &str, failed: bool) {
        let read = sql.trim_start().get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select"));
        if failed || !read {
            self.wrote.set(true);
        }
    }
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn query<'q>(sql: &'q str, args: &[&dyn ToValue]) -> PgQuery<'q> {
    args.iter().fold(sqlx::query(sql), |q, a| crate::sql::bind_value!(q, a.to_value()))
}

impl Tx for PgTx<'_> {
    fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> crate::Result<u64> {
        self.before(sql)?;
        crate::counts::in_job();
        let numbered = numbered(sql);
        let mut conn = self.conn.borrow_mut();
        let done = self.rt.block_on(query(&numbered, args).execute(&mut **conn));
        self.note(sql, done.is_err());
        Ok(done?.rows_affected())
    }

    fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> crate::Result<Vec<Row>> {
        self.before(sql)?;
        crate::counts::in_job();
        let numbered = numbered(sql);
        let mut conn = self.conn.borrow_mut();
        let rows = self.rt.block_on(query(&numbered, args).fetch_all(&mut **conn));
        self.note(sql, rows.is_err());
        rows?.iter().map(row).collect()
    }

    fn advisory_lock(&self, key: i64) -> crate::Result<()> {
        if self.held.borrow().contains(&key) {
            return Ok(());
        }
        self.exec("SELECT pg_advisory_xact_lock(?)", &[&key])?;
        self.held.borrow_mut().push(key);
        Ok(())
    }

    fn engine(&self) -> Engine {
        Engine::Postgres
    }
}

fn row(r: &PgRow) -> crate::Result<Row> {
    (0..r.len()).map(|i| value(r, i)).collect::<crate::Result<_>>().map(Row::from_values)
}

/// Column `i` in the portable types; another type is a statement to cast.
fn value(r: &PgRow, i: usize) -> crate::Result<Value<'static>> {
    let type_name = r.try_get_raw(i)?.type_info().name().to_string();
    let kind = match type_name.as_str() {
        "INT8" | "INT4" | "INT2" | "BOOL" => Kind::Int,
        "FLOAT8" | "FLOAT4" => Kind::Real,
        "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" => Kind::Text,
        "BYTEA" => Kind::Blob,
        other => {
            return Err(crate::Error::internal(
                "storage_decode",
                format!(
                    "column {} is {other}: cast it to BIGINT, DOUBLE PRECISION, TEXT or BYTEA",
                    r.column(i).name()
                ),
            ));
        }
    };
    if r.try_get_raw(i)?.is_null() {
        return Ok(Value::Null(kind));
    }
    Ok(match type_name.as_str() {
        "INT8" => Value::Int(r.try_get(i)?),
        "INT4" => Value::Int(r.try_get::<i32, _>(i)?.into()),
        "INT2" => Value::Int(r.try_get::<i16, _>(i)?.into()),
        "BOOL" => Value::Int(r.try_get::<bool, _>(i)?.into()),
        "FLOAT8" => Value::Real(r.try_get(i)?),
        "FLOAT4" => Value::Real(r.try_get::<f32, _>(i)?.into()),
        "BYTEA" => Value::Blob(r.try_get::<Vec<u8>, _>(i)?.into()),
        _ => Value::Text(r.try_get::<String, _>(i)?.into()),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::testing::Cluster;

    const SERIALIZATION_FAILURE: &str =
        "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_runs_again_after_a_serialization_failure_and_gives_up_after_max_attempts() {
        let cluster = Cluster::get();
        let db = Postgres::open(&cluster.fresh_database().await, 2).await.unwrap();
        let runs = Arc::new(AtomicU32::new(0));
        let r = runs.clone();
        let third: Result<_> = db
            .run(move |tx| {
                tx.exec(
                    "INSERT INTO login_attempts (username, attempts, window_start) VALUES ('ana', 1, 'now')",
                    &[],
                )?;
                if r.fetch_add(1, Ordering::SeqCst) < 2 {
                    tx.exec(SERIALIZATION_FAILURE, &[])?;
                }
                Ok("done")
            })
            .await;
        assert_eq!((third.unwrap(), runs.load(Ordering::SeqCst)), ("done", 3));
        let kept = db
            .run(|tx| Ok::<_, Error>(tx.rows("SELECT username FROM login_attempts", &[])?.len()))
            .await
            .unwrap();
        assert_eq!(kept, 1, "the failed runs were rolled back, the third committed");
        let r = runs.clone();
        let failed = db
            .run(move |tx| {
                r.fetch_add(1, Ordering::SeqCst);
                tx.exec(SERIALIZATION_FAILURE, &[])
            })
            .await;
        assert!(is_conflict(&failed.unwrap_err()));
        assert_eq!(runs.load(Ordering::SeqCst), 3 + MAX_ATTEMPTS);
        db.close().await;
    }
}
