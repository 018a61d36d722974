//! The PostgreSQL engine's side of the storage boundary: its schema (`migrations/postgres`),
//! its [`Tx`], and [`Postgres::run`], which runs a job the way the SQLite writer does, so a
//! job written once against [`Tx`] runs on either engine.
//!
//! Each job gets its own READ COMMITTED transaction on one of [`RUNNERS`] job threads, each
//! with its own connection and its own single-threaded runtime (jobs are synchronous, like
//! the writer's): a statement's round trip then wakes only the thread that waits for it,
//! where a job on a shared blocking pool woke a runtime worker and then the job's thread for
//! every statement. Reads outside jobs use an async pool. When PostgreSQL answers a serialization
//! failure (40001) or a deadlock (40P01), the transaction is rolled back and the job runs
//! again after a random pause, up to [`MAX_ATTEMPTS`]; jobs already must be pure functions of the database state,
//! because the SQLite writer may run one twice too.
//!
//! Guarantees: a job's writes commit together or not at all, and its caller hears back only
//! after COMMIT; a job that fails leaves nothing behind; a transaction is never left open on
//! a pooled connection (sqlx rolls back a dropped one).

use std::cell::RefCell;

use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Column as _, Connection as _, Row as _, TypeInfo as _, ValueRef as _};
use tokio::runtime::Runtime;

use crate::redact;
use crate::sql::{Engine, Kind, Row, ToValue, Tx, Value, numbered};
use crate::{Error, JobError, Result, StoreErrorKind};

/// How many times a job runs when PostgreSQL keeps reporting conflicts.
pub const MAX_ATTEMPTS: u32 = 8;

/// A migrated PostgreSQL database and a pool of connections to it.
#[derive(Clone, Debug)]
pub struct Postgres {
    pool: PgPool,
    runners: std::sync::mpsc::Sender<Job>,
}

/// Job threads per instance, each holding one connection while the instance is busy.
pub const RUNNERS: usize = 16;

/// A job for a runner thread: it runs on the runner's connection and runtime.
type Job = Box<dyn FnOnce(&mut Runner) + Send>;

/// One job thread's connection, opened when its first job arrives and again after it broke.
struct Runner {
    rt: Runtime,
    url: String,
    conn: Option<PgConnection>,
}

impl Runner {
    fn conn(&mut self) -> Result<&mut PgConnection> {
        if self.conn.is_none() {
            let c = self.rt.block_on(PgConnection::connect(&self.url))?;
            self.conn = Some(c);
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }
}

/// Starts the runner threads; they stop when the last [`Postgres`] handle drops.
fn start_runners(url: &str) -> Result<std::sync::mpsc::Sender<Job>> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    for i in 0..RUNNERS {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
            Error::internal("runner_start_failed", format!("cannot start a PostgreSQL job thread: {e}"))
        })?;
        let (rx, mut runner) = (rx.clone(), Runner { rt, url: url.to_string(), conn: None });
        std::thread::Builder::new()
            .name(format!("naive-pg-{i}"))
            .spawn(move || {
                loop {
                    let job = rx.lock().expect("runner queue lock").recv();
                    let Ok(job) = job else { return };
                    // A job that panics loses its answer (its caller hears the job stopped)
                    // and its connection, not the thread.
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut runner)));
                    if ran.is_err() {
                        tracing::error!("a PostgreSQL job panicked; its transaction was dropped");
                        runner.conn = None;
                    }
                }
            })
            .map_err(|e| {
                Error::internal("runner_start_failed", format!("cannot start a PostgreSQL job thread: {e}"))
            })?;
    }
    Ok(tx)
}

impl Postgres {
    /// Connects to `url` and applies `migrations/postgres`.
    pub async fn open(url: &str, max_connections: u32) -> Result<Postgres> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .connect(url)
            .await
            .map_err(|source| Error::DatabaseOpen { url: redact(url), source: source.into() })?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        Ok(Postgres { pool, runners: start_runners(url)? })
    }

    /// Runs `f` in one transaction, again after a serialization failure or deadlock.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |runner: &mut Runner| {
            let result = run_on(runner, &f);
            let _ = tx.send(result);
        });
        self.runners.send(job).map_err(|_| {
            Error::unavailable("writer_stopped", "the gateway is shutting down; try again shortly", 5)
        })?;
        rx.await
            .map_err(|_| Error::internal("write_failed", "the job stopped before it finished; try again"))?
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

/// Runs `f` on the runner's connection; a connection that failed outside the database (a
/// dropped socket) is forgotten, and the next job opens a new one.
fn run_on<T, E: JobError>(runner: &mut Runner, f: &dyn Fn(&dyn Tx) -> Result<T, E>) -> Result<T, E> {
    // The runner's own runtime drives each statement's I/O on this thread: a current-thread
    // runtime's I/O runs only inside its `Runtime::block_on`.
    runner.conn()?;
    let Runner { rt, conn, .. } = runner;
    let result = run_blocking(conn.as_mut().expect("connected above"), rt, f);
    if let Err(e) = &result
        && e.storage_kind() == Some(StoreErrorKind::Driver)
    {
        runner.conn = None;
    }
    result
}

fn run_blocking<T, E: JobError>(
    conn: &mut PgConnection,
    rt: &Runtime,
    f: &dyn Fn(&dyn Tx) -> Result<T, E>,
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        crate::counts::job();
        let mut tx = rt.block_on(conn.begin()).map_err(Error::from)?;
        let result = f(&PgTx { conn: RefCell::new(&mut *tx), rt });
        let result = match result {
            Ok(v) => rt.block_on(tx.commit()).map(|_| v).map_err(|e| E::from(commit_error(e))),
            Err(e) => {
                rt.block_on(tx.rollback()).map_err(Error::from)?;
                Err(e)
            }
        };
        match result {
            Err(e) if is_conflict(&e) && attempt < MAX_ATTEMPTS => {
                std::thread::sleep(backoff(attempt));
                attempt += 1;
            }
            r => return r,
        }
    }
}

/// A COMMIT PostgreSQL refused: a conflict stays a storage error (the job runs again);
/// anything else is the same `commit_failed` the SQLite writer answers.
fn commit_error(e: sqlx::Error) -> Error {
    let e = Error::from(e);
    if is_conflict(&e) {
        return e;
    }
    Error::internal("commit_failed", format!("the write did not commit ({e}); try again"))
}

/// A random pause before attempt `attempt + 1`, up to 2^attempt ms (at most 64 ms), so jobs
/// that conflicted do not meet again in step.
fn backoff(attempt: u32) -> std::time::Duration {
    let ceiling = 1u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u64;
    std::time::Duration::from_micros(ceiling * jitter)
}

/// Whether PostgreSQL refused the transaction for a conflict that running it again resolves.
fn is_conflict(e: &impl JobError) -> bool {
    e.storage_kind() == Some(StoreErrorKind::Conflict)
}

/// An open PostgreSQL transaction, driven from a blocking thread.
struct PgTx<'c> {
    conn: RefCell<&'c mut PgConnection>,
    rt: &'c Runtime,
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn query<'q>(sql: &'q str, args: &[&dyn ToValue]) -> PgQuery<'q> {
    args.iter().fold(sqlx::query(sql), |q, a| crate::sql::bind_value!(q, a.to_value()))
}

impl Tx for PgTx<'_> {
    fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> crate::Result<u64> {
        crate::counts::in_job();
        let sql = numbered(sql);
        let mut conn = self.conn.borrow_mut();
        Ok(self.rt.block_on(query(&sql, args).execute(&mut **conn))?.rows_affected())
    }

    fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> crate::Result<Vec<Row>> {
        crate::counts::in_job();
        let sql = numbered(sql);
        let mut conn = self.conn.borrow_mut();
        let rows = self.rt.block_on(query(&sql, args).fetch_all(&mut **conn))?;
        rows.iter().map(row).collect()
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
