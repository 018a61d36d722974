//! The single writer, with group commit.
//!
//! Every state change of the governed pipeline (reserving a hold, settling it, parking,
//! deciding, appending to the activity log) is a *job* run by one thread that owns one
//! connection. SQLite has one writer anyway; owning it explicitly means a reservation reads
//! and updates the running totals with nothing in between, so two requests can never both
//! take the last of a cap. Jobs are synchronous and use cached prepared statements, because a
//! statement costs well under a microsecond here, against tens through an async driver.
//!
//! Group commit: the thread takes up to `max_batch` queued jobs and runs them in one
//! transaction with one COMMIT. A job that fails before writing anything (the usual refusal)
//! costs nothing; one that fails after writing makes the writer roll the whole batch back and
//! run it again with each job inside its own SAVEPOINT, so the failed job leaves nothing behind
//! while its neighbours still commit. Savepoints on every job cost a fifth of the writer's
//! time, and failures after a write are rare, so jobs pay for isolation only when it is used.
//! That is why a job may run twice, and must be a pure function of the database state. A
//! job's caller hears back only after the shared COMMIT, so nothing is acknowledged before it
//! is durable.
//! With `max_batch = 1` this is one transaction per job, for comparison.
//!
//! Checkpoints: SQLite restarts the WAL from its beginning only when a checkpoint has copied
//! every frame back before a write transaction begins. A checkpointer beside a writer that
//! never pauses never catches up, and the WAL grew without bound (1.9 GB after 100,000
//! actions). So a thread copies frames once a second off the writer's path, and right after
//! each pass the writer finishes the few frames written meanwhile, between two batches; the
//! WAL stays near one second of writes: one short pause a second instead of a cost on every
//! commit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::Store;
use crate::sql::Tx;
use crate::{Error, JobError, Result};

/// Queued jobs beyond this make callers wait: a bound on memory and on latency.
pub const QUEUE_CAPACITY: usize = 4_096;
/// The default largest batch in one commit.
pub const DEFAULT_MAX_BATCH: usize = 512;

/// A queued job: its writes, which may run twice, and the reply sent once after commit.
trait Task: Send {
    /// Runs the job's writes and keeps its result; true when they should commit.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Sends the kept result, or the commit's error.
    fn reply(self: Box<Self>, commit_error: Option<&str>);
}

struct Pending<T, E, F> {
    f: F,
    result: Option<Result<T, E>>,
    tx: oneshot::Sender<Result<T, E>>,
}

impl<T: Send, E: JobError, F: Fn(&dyn Tx) -> Result<T, E> + Send> Task for Pending<T, E, F> {
    fn run(&mut self, conn: &Connection) -> bool {
        crate::counts::job();
        let r = (self.f)(conn);
        let ok = r.is_ok();
        self.result = Some(r);
        ok
    }

    fn reply(self: Box<Self>, commit_error: Option<&str>) {
        let _ = self.tx.send(crate::error::job_answer(self.result, commit_error));
    }
}

type Job = Box<dyn Task>;

/// A handle to the writer thread. Cheap to clone; the thread stops when the last handle drops.
#[derive(Clone, Debug)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
    stats: Arc<Stats>,
}

/// What the writer tells whoever keeps state about its transactions: the audit log keeps its
/// chain heads and the entries a batch appended, and publishes them once they commit. The
/// writer calls it on its own thread, in this order per batch: [`Journal::begin`], then
/// [`Journal::mark`] and [`Journal::undo`] around undone writes, then [`Journal::committed`]
/// or [`Journal::undo`]`(0)`.
pub trait Journal: Send + 'static {
    /// The writer's connection is open and no job has run: what is in the database is history.
    fn opened(&self, conn: &dyn Tx) -> Result<()>;
    /// A batch begins; `stale` when another connection committed since the last one.
    fn begin(&self, stale: bool);
    /// A mark of what the batch has done so far, for [`Journal::undo`].
    fn mark(&self) -> usize;
    /// The batch's writes after `mark` were rolled back (all of them for 0).
    fn undo(&self, mark: usize);
    /// The batch committed on `conn`.
    fn committed(&self, conn: &dyn Tx);
}

/// No journal: for a writer whose jobs keep no state outside the database (tests).
impl Journal for () {
    fn opened(&self, _: &dyn Tx) -> Result<()> {
        Ok(())
    }
    fn begin(&self, _: bool) {}
    fn mark(&self) -> usize {
        0
    }
    fn undo(&self, _: usize) {}
    fn committed(&self, _: &dyn Tx) {}
}

/// Counters for monitoring group commit: how many commits, and how many jobs they carried.
#[derive(Default)]
pub struct Stats {
    pub commits: AtomicU64,
    pub jobs: AtomicU64,
    /// Batches undone and run again with savepoints because a job failed after writing.
    pub replays: AtomicU64,
    /// Told of every committed batch: its jobs and how long its COMMIT took ([`Writer::observe`]).
    observer: std::sync::OnceLock<Box<BatchObserver>>,
}

/// What [`Writer::observe`] takes: a batch's job count and its COMMIT's duration.
pub type BatchObserver = dyn Fn(usize, std::time::Duration) + Send + Sync;

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stats")
            .field("commits", &self.commits)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// Starts the writer thread on its own connection to `store`'s database, telling
    /// `journal` of every transaction it begins, undoes and commits.
    pub fn start(store: &Store, max_batch: usize, journal: impl Journal) -> Result<Writer> {
        let conn = store.sqlite_side("the single writer")?.open_writer_connection()?;
        journal.opened(&conn)?;
        // Checkpoints run on their own thread and connection, off the writer's path.
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0")?;
        let checkpointer = store.sqlite_side("the single writer")?.open_writer_connection()?;
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let stats = Arc::new(Stats::default());
        let s = stats.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let copied = Arc::new(AtomicBool::new(false));
        let (stop_checkpoints, copied_checkpoints) = (stop.clone(), copied.clone());
        std::thread::Builder::new()
            .name("naive-checkpoint".into())
            .spawn(move || checkpoint_loop(&checkpointer, &stop_checkpoints, &copied_checkpoints))
            .map_err(|e| {
                Error::internal("writer_start_failed", format!("cannot start the checkpoint thread: {e}"))
            })?;
        std::thread::Builder::new()
            .name("naive-writer".into())
            .spawn(move || {
                run(conn, rx, max_batch.max(1), &s, &copied, &journal);
                stop.store(true, Ordering::Relaxed);
            })
            .map_err(|e| {
                Error::internal("writer_start_failed", format!("cannot start the writer thread: {e}"))
            })?;
        Ok(Writer { tx, stats })
    }

    /// Jobs waiting for the writer.
    pub fn queued(&self) -> usize {
        QUEUE_CAPACITY - self.tx.capacity()
    }

    /// Batches run again with savepoints so far, because a job failed after writing.
    pub fn replays(&self) -> u64 {
        self.stats.replays.load(Ordering::Relaxed)
    }

    /// Tells `f` of every batch committed from now on, on the writer thread (it must be
    /// quick); the first observer set stays.
    pub fn observe(&self, f: impl Fn(usize, std::time::Duration) + Send + Sync + 'static) {
        let _ = self.stats.observer.set(Box::new(f));
    }

    /// (commits, jobs) so far.
    pub fn stats(&self) -> (u64, u64) {
        (self.stats.commits.load(Ordering::Relaxed), self.stats.jobs.load(Ordering::Relaxed))
    }

    /// Runs `f` atomically: either all its writes commit, or none do and its error returns.
    ///
    /// `f` may run more than once (see the module doc), so it must do nothing but its writes
    /// and return the same answer for the same database state; remember anything with an
    /// effect outside the database (a connector's answer) in the closure, once.
    ///
    /// `f` is boxed here, before the future: it is not held by the future as well, which
    /// every caller's own future would carry and copy.
    pub fn run<T, E, F>(&self, f: F) -> impl Future<Output = Result<T, E>> + Send + use<'_, T, E, F>
    where
        T: Send + 'static,
        E: JobError,
        F: Fn(&dyn Tx) -> Result<T, E> + Send + 'static,
    {
        let (tx, rrx) = oneshot::channel::<Result<T, E>>();
        let job: Job = Box::new(Pending { f, result: None, tx });
        async move {
            self.tx.send(job).await.map_err(|_| {
                Error::unavailable("writer_stopped", "the gateway is shutting down; try again shortly", 5)
            })?;
            rrx.await.map_err(|_| {
                Error::internal(
                    "write_failed",
                    "the write was rolled back after an internal error; try again",
                )
            })?
        }
    }
}

fn run(
    conn: Connection,
    mut rx: mpsc::Receiver<Job>,
    max_batch: usize,
    stats: &Stats,
    copied: &AtomicBool,
    journal: &dyn Journal,
) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch);
    let mut data_version = -1;
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let begun = conn.execute_batch("BEGIN IMMEDIATE").and_then(|_| {
            // Another connection's commit (an operator's repair, a second process) makes
            // what this thread remembers about the log stale.
            let v: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
            let stale = v != data_version;
            data_version = v;
            Ok(stale)
        });
        journal.begin(matches!(begun, Ok(true)));
        if let Err(e) = begun {
            let _ = conn.execute_batch("ROLLBACK");
            // Without a transaction nothing runs; dropping the jobs tells their callers.
            tracing::error!(error = %e, jobs = batch.len(), "writer could not begin a transaction");
            batch.clear();
            continue;
        }
        if !run_batch(&conn, &mut batch) {
            // A job failed after writing: its writes are mixed into the transaction, so undo
            // all of it and run the batch again, now with each job inside its own savepoint.
            // Jobs are deterministic on the same state, so the others give the same answers.
            journal.undo(0);
            let retried = conn.execute_batch("ROLLBACK").and_then(|_| conn.execute_batch("BEGIN IMMEDIATE"));
            if let Err(e) = retried {
                tracing::error!(error = %e, jobs = batch.len(), "writer could not restart a batch");
                batch.clear();
                continue;
            }
            stats.replays.fetch_add(1, Ordering::Relaxed);
            run_batch_isolated(&conn, &mut batch, journal);
        }
        let started = std::time::Instant::now();
        let commit = exec(&conn, "COMMIT").err().map(|e| e.to_string());
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats.jobs.fetch_add(batch.len() as u64, Ordering::Relaxed);
        if let (None, Some(observe)) = (&commit, stats.observer.get()) {
            observe(batch.len(), started.elapsed());
        }
        if let Some(e) = &commit {
            tracing::error!(error = %e, "group commit failed; rolling back the batch");
            let _ = conn.execute_batch("ROLLBACK");
            journal.undo(0);
        } else {
            // In commit order, before any caller hears back: a caller that then reads the
            // stream finds its own entries there.
            journal.committed(&conn);
        }
        for job in batch.drain(..) {
            job.reply(commit.as_deref());
        }
        if copied.swap(false, Ordering::Relaxed) {
            // The checkpoint thread has just copied nearly everything; finishing the rest here,
            // with no write in flight, lets the next transaction restart the WAL.
            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                tracing::warn!(error = %e, "writer checkpoint failed; the WAL restarts after a later one");
            }
        }
    }
}

/// Runs every job of the batch with no savepoints. False when one failed after writing (or
/// panicked), which leaves the transaction holding writes that must not commit. A job that
/// fails before writing anything (most refusals of bad input) leaves nothing to undo.
fn run_batch(conn: &Connection, batch: &mut [Job]) -> bool {
    for job in batch.iter_mut() {
        let before = conn.total_changes();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn))) {
            Ok(true) => {}
            Ok(false) if conn.total_changes() == before => {}
            Ok(false) => return false,
            Err(_) => {
                tracing::error!("a writer job panicked; its batch runs again with savepoints");
                return false;
            }
        }
    }
    true
}

/// Runs every job of the batch inside its own savepoint: one that fails rolls back alone.
fn run_batch_isolated(conn: &Connection, batch: &mut [Job], journal: &dyn Journal) {
    for job in batch.iter_mut() {
        let mark = journal.mark();
        let sp = exec(conn, "SAVEPOINT job");
        // A panicking job must not take the writer down with it: roll it back and go on.
        let ok =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn))).unwrap_or_else(|_| {
                tracing::error!("a writer job panicked; its writes were rolled back");
                false
            });
        let end = if ok && sp.is_ok() {
            exec(conn, "RELEASE job")
        } else {
            journal.undo(mark);
            exec(conn, "ROLLBACK TO job").and_then(|_| exec(conn, "RELEASE job"))
        };
        if let Err(e) = end {
            tracing::error!(error = %e, "writer savepoint failed");
        }
    }
}

/// Runs a fixed statement through the prepared-statement cache.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}

/// Lowers the calling thread's CPU priority (Linux: per thread), for background work that
/// must not take the cores from the calls in flight. Best effort.
pub(crate) fn background_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority with PRIO_PROCESS and the caller's thread id changes only that
    // thread's nice value; it reads no memory of ours.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// How often the checkpoint thread copies the WAL back into the database file.
const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Passive checkpoints never block the writer; they copy what no reader still needs. After
/// each, `copied` asks the writer to finish the few frames written meanwhile.
fn checkpoint_loop(conn: &Connection, stop: &AtomicBool, copied: &AtomicBool) {
    background_priority();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(CHECKPOINT_INTERVAL);
        // Each pass copies (and syncs) what the one before left; a few passes leave the
        // writer only milliseconds of frames to finish in its pause.
        let mut ok = false;
        for _ in 0..CATCH_UP_PASSES {
            let started = std::time::Instant::now();
            match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                Ok(()) => ok = true,
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoint failed; the WAL keeps growing until the next one succeeds");
                    ok = false;
                    break;
                }
            }
            if started.elapsed() < CAUGHT_UP {
                break;
            }
        }
        if ok {
            copied.store(true, Ordering::Relaxed);
        }
    }
}

/// At most this many passes in a row before handing over to the writer.
const CATCH_UP_PASSES: usize = 8;
/// A pass this short means the WAL's tail is small enough for the writer's pause.
const CAUGHT_UP: std::time::Duration = std::time::Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    type TestJob = Box<dyn Fn(&dyn Tx) -> Result<()> + Send + Sync>;

    async fn writer() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}/w.db", dir.path().display())).await.unwrap();
        let w = Writer::start(&store, 64, ()).unwrap();
        w.run(|c| c.exec("CREATE TABLE t (k TEXT PRIMARY KEY)", &[])).await.unwrap();
        (dir, w)
    }

    fn insert(k: &'static str) -> impl Fn(&dyn Tx) -> Result<()> + Send + Sync + 'static {
        move |c| {
            c.exec("INSERT INTO t (k) VALUES (?)", &[&k])?;
            Ok(())
        }
    }

    /// Jobs sent while the writer is busy share one batch; one that fails after writing is
    /// undone alone, and its neighbours commit exactly once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_failing_after_its_writes_is_undone_alone() {
        let (_dir, w) = writer().await;
        // The writer waits inside this job until the others are queued behind it.
        let (started, has_started) = std::sync::mpsc::channel::<()>();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let busy = tokio::spawn({
            let w = w.clone();
            async move {
                w.run(move |_| -> Result<()> {
                    let _ = started.send(());
                    let _ = wait.lock().unwrap().recv();
                    Ok(())
                })
                .await
            }
        });
        tokio::task::spawn_blocking(move || has_started.recv()).await.unwrap().unwrap();
        let queued = |n: usize| {
            let w = w.clone();
            async move {
                while w.queued() < n {
                    tokio::task::yield_now().await;
                }
            }
        };
        let (commits_before, _) = w.stats();
        let spawn = |f: TestJob| {
            let w = w.clone();
            tokio::spawn(async move { w.run(move |c| f(c)).await })
        };
        let ok1 = spawn(Box::new(insert("a")));
        queued(1).await;
        let bad = spawn(Box::new(|c| {
            c.exec("INSERT INTO t (k) VALUES ('b')", &[])?;
            Err(Error::invalid("test_failure", "failed after writing"))
        }));
        queued(2).await;
        let early = spawn(Box::new(|_| Err(Error::invalid("test_refusal", "refused before writing"))));
        queued(3).await;
        let ok2 = spawn(Box::new(insert("c")));
        queued(4).await;
        go.send(()).unwrap();
        busy.await.unwrap().unwrap();
        ok1.await.unwrap().unwrap();
        ok2.await.unwrap().unwrap();
        assert!(bad.await.unwrap().unwrap_err().to_string().contains("failed after writing"));
        assert!(early.await.unwrap().is_err());
        let (commits_after, _) = w.stats();
        assert_eq!(commits_after - commits_before, 2, "the busy job's commit, then one for the batch");
        assert_eq!(w.replays(), 1);
        let rows = w
            .run(|c| {
                c.rows("SELECT k FROM t ORDER BY k", &[])?
                    .iter()
                    .map(|r| r.get::<String>(0))
                    .collect::<Result<Vec<_>>>()
            })
            .await
            .unwrap();
        assert_eq!(rows, ["a", "c"]);
    }

    /// A job that fails before writing anything costs its batch nothing.
    #[tokio::test]
    async fn a_refusal_before_any_write_needs_no_replay() {
        let (_dir, w) = writer().await;
        assert!(w.run(|_| Err::<(), _>(Error::invalid("test_refusal", "no"))).await.is_err());
        w.run(insert("a")).await.unwrap();
        assert_eq!(w.replays(), 0);
    }
}
