//! PostgreSQL's group commit: each runner thread runs the jobs queued for it in batches, one
//! transaction per batch, as the SQLite writer does.
//!
//! A job may name the advisory lock it needs (a tenant's, [`crate::sql::lock_digest`]); jobs
//! that do go to the runner that key picks, so one instance never has two transactions
//! waiting on each other for one tenant, and a runner batches whatever is queued for it (one
//! job when idle, at most [`MAX_BATCH`] under load). The batch takes its jobs' keys once, in
//! ascending order, before any job runs ([`lock_order`]): two batches (on two instances)
//! never wait on each other in a circle, and a job's own request for a key its batch holds
//! costs no statement. Jobs queued for those keys while the batch waited for them join it
//! ([`top_up`]). A job without a key runs alone in its own transaction.
//!
//! The batch's [`Journal`] hears of it at every step: it may read ahead what the jobs said
//! they will read ([`Journal::prefetch`]), keep their writes and send them in one statement
//! before COMMIT, writing what it kept before any other statement a job sends
//! ([`Journal::before_statement`]); the gateway's book does (`gateway::domain::reserve::book`).
//!
//! Failures: jobs run without savepoints first. A job that fails before writing anything (a
//! refusal, a conflict with a stored key) costs its neighbours nothing. One that fails after
//! writing, or whose statement failed (PostgreSQL then refuses the rest of the
//! transaction), makes the runner roll the batch back and run it again with each job inside
//! its own SAVEPOINT, so the failed job leaves nothing while the others commit. A
//! serialization failure or deadlock rolls the whole batch back and runs it again after a
//! random pause, up to [`super::MAX_ATTEMPTS`]. Jobs are pure functions of the database
//! state, so running one again is safe. Every caller hears back after COMMIT.
//!
//! Measured here ([`Stats`]): transactions, jobs, and how long a batch held its keys (taken
//! to COMMIT), the serial part that bounds one tenant's rate whatever the cores.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sqlx::ConnectOptions as _;
use sqlx::Connection as _;
use sqlx::postgres::PgConnection;
use tokio::runtime::Runtime;

use super::{MAX_ATTEMPTS, PgTx, backoff};
use crate::sql::Tx;
use crate::{Error, JobError, Result, StoreErrorKind};

/// Statements a runner's connection keeps prepared. A batch's one read and one write are
/// each a statement per batch size (and chain shape), so the driver's default of 100 would
/// prepare them again and again under load.
const STATEMENT_CACHE: usize = 2_000;

/// The most jobs one transaction commits.
pub const MAX_BATCH: usize = 64;

/// What a batch tells whoever keeps state about its transaction (the gateway's log keeps the
/// entries a batch appended and announces them just before COMMIT; its book keeps the writes
/// of the batch's governed calls and writes them in one statement). Called on the runner's
/// thread, in this order: [`Journal::begin`], [`Journal::prefetch`] once the batch holds its
/// keys, [`Journal::before_statement`] before each statement a job sends, [`Journal::mark`]
/// and [`Journal::undo`] around each job whose writes were undone, then [`Journal::finish`].
pub trait Journal: Send + Sync + 'static {
    /// A transaction begins: nothing is kept. `deferring` is false when each job runs in its
    /// own savepoint: then a job's writes must reach the database inside its savepoint, so
    /// none may be kept for later.
    fn begin(&self, deferring: bool);
    /// What the batch's jobs said they will read ([`Task::hint`]), once the batch holds its
    /// keys and before its first job: read it all in one statement.
    fn prefetch(&self, _tx: &dyn Tx, _hints: &[&(dyn Any + Send)]) -> Result<()> {
        Ok(())
    }
    /// Called before each statement a job sends on the batch's transaction (not before the
    /// statements this sends itself): whatever was kept for later is written first, so the
    /// statement sees the database as if every job before it had written as it went.
    fn before_statement(&self, _tx: &dyn Tx, _sql: &str) -> Result<()> {
        Ok(())
    }
    /// A mark of what the transaction kept so far, for [`Journal::undo`].
    fn mark(&self) -> usize;
    /// What was kept after `mark` was rolled back.
    fn undo(&self, mark: usize);
    /// The last statements before COMMIT, on the batch's transaction.
    fn finish(&self, tx: &dyn Tx) -> Result<()>;
}

/// No journal: jobs keep no state outside the database.
impl Journal for () {
    fn begin(&self, _: bool) {}
    fn mark(&self) -> usize {
        0
    }
    fn undo(&self, _: usize) {}
    fn finish(&self, _: &dyn Tx) -> Result<()> {
        Ok(())
    }
}

/// What the runners measured, since the store opened.
#[derive(Debug, Default)]
pub struct Stats {
    transactions: AtomicU64,
    jobs: AtomicU64,
    keyed_jobs: AtomicU64,
    keys_held_ns: AtomicU64,
    conflicts: AtomicU64,
}

/// A reading of [`Stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Transactions committed.
    pub transactions: u64,
    /// Jobs answered from a committed transaction.
    pub jobs: u64,
    /// Of those, jobs whose batch held a key.
    pub keyed_jobs: u64,
    /// Nanoseconds batches held their keys, from taking them to COMMIT.
    pub keys_held_ns: u64,
    /// Batches run again after a serialization failure or deadlock.
    pub conflicts: u64,
}

impl Stats {
    pub fn read(&self) -> Reading {
        Reading {
            transactions: self.transactions.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            keyed_jobs: self.keyed_jobs.load(Ordering::Relaxed),
            keys_held_ns: self.keys_held_ns.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
        }
    }
}

impl Reading {
    /// What happened since `earlier`.
    pub fn since(&self, earlier: Reading) -> Reading {
        Reading {
            transactions: self.transactions - earlier.transactions,
            jobs: self.jobs - earlier.jobs,
            keyed_jobs: self.keyed_jobs - earlier.keyed_jobs,
            keys_held_ns: self.keys_held_ns - earlier.keys_held_ns,
            conflicts: self.conflicts - earlier.conflicts,
        }
    }

    /// Microseconds a key was held per keyed job: the serial part of one tenant's action.
    pub fn held_us_per_job(&self) -> f64 {
        self.keys_held_ns as f64 / 1_000.0 / self.keyed_jobs.max(1) as f64
    }
}

/// How a job's run went, as the batch sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ran {
    Ok,
    Failed,
    /// A serialization failure or deadlock: the batch runs again.
    Conflict,
}

/// A queued job: its writes, which may run more than once, and its answer, sent once.
pub(super) trait Task: Send {
    fn run(&mut self, tx: &dyn Tx) -> Ran;
    /// Sends the kept result, or `failure` when the batch did not commit.
    fn reply(self: Box<Self>, failure: Option<&str>);
    /// What the job will read, for [`Journal::prefetch`].
    fn hint(&self) -> Option<&(dyn Any + Send)>;
}

pub(super) struct Pending<T, E, F> {
    pub f: F,
    pub hint: Option<Box<dyn Any + Send>>,
    pub result: Option<std::result::Result<T, E>>,
    pub tx: tokio::sync::oneshot::Sender<std::result::Result<T, E>>,
}

impl<T: Send, E: JobError, F: Fn(&dyn Tx) -> std::result::Result<T, E> + Send> Task for Pending<T, E, F> {
    fn run(&mut self, tx: &dyn Tx) -> Ran {
        crate::counts::job();
        let r = (self.f)(tx);
        let ran = match &r {
            Ok(_) => Ran::Ok,
            Err(e) if e.storage_kind() == Some(StoreErrorKind::Conflict) => Ran::Conflict,
            Err(_) => Ran::Failed,
        };
        self.result = Some(r);
        ran
    }

    fn reply(self: Box<Self>, failure: Option<&str>) {
        let _ = self.tx.send(crate::error::job_answer(self.result, failure));
    }

    fn hint(&self) -> Option<&(dyn Any + Send)> {
        self.hint.as_deref()
    }
}

/// A job on its way to a runner, with the key its batch takes for it.
pub(super) struct Queued {
    pub key: Option<i64>,
    pub task: Box<dyn Task>,
}

/// One runner thread's state: its connection (opened when its first job arrives and again
/// after it broke), its runtime, and what it reports to.
pub(super) struct Runner {
    pub rt: Runtime,
    pub url: String,
    pub conn: Option<PgConnection>,
    pub journal: Arc<OnceLock<Arc<dyn Journal>>>,
    pub stats: Arc<Stats>,
}

/// Why a batch's transaction ended without COMMIT.
enum End {
    /// A job failed after writing: run the batch again, each job in its own savepoint.
    Redo,
    /// A serialization failure or deadlock: run the batch again.
    Conflict(String),
    /// The batch's one job failed after writing: it is rolled back, and hears its own error.
    Undone,
    /// The transaction failed: every job hears `why`; the connection is dropped when `broken`.
    Failed { why: String, broken: bool },
}

impl End {
    fn failed(e: &Error) -> End {
        if e.storage_kind() == Some(StoreErrorKind::Conflict) {
            return End::Conflict(e.to_string());
        }
        End::Failed { why: e.to_string(), broken: e.storage_kind() == Some(StoreErrorKind::Driver) }
    }
}

/// The keys a batch takes, in the one order every batch takes them.
pub(super) fn lock_order(batch: &[Queued]) -> Vec<i64> {
    let keys: std::collections::BTreeSet<i64> = batch.iter().filter_map(|q| q.key).collect();
    keys.into_iter().collect()
}

impl Runner {
    /// Serves `queue` until every sender is gone.
    pub(super) fn serve(mut self, queue: Receiver<Queued>) {
        let mut next = None;
        loop {
            let first = match next.take() {
                Some(q) => q,
                None => match queue.recv() {
                    Ok(q) => q,
                    Err(_) => return,
                },
            };
            let mut batch = vec![first];
            while batch[0].key.is_some() && batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(q) if q.key.is_some() => batch.push(q),
                    Ok(q) => {
                        next = Some(q);
                        break;
                    }
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            self.run_batch(batch, &queue, &mut next);
        }
    }

    /// Runs `batch`; on its first attempt, jobs queued meanwhile for the keys it holds join it
    /// ([`top_up`]), and the first that cannot is left in `next`.
    fn run_batch(&mut self, mut batch: Vec<Queued>, queue: &Receiver<Queued>, next: &mut Option<Queued>) {
        let (mut careful, mut attempt) = (false, 1);
        let failure = loop {
            if let Err(e) = self.connect() {
                break Some(e.to_string());
            }
            let journal = self.journal.get().cloned().unwrap_or_else(|| Arc::new(()));
            let Runner { rt, conn, .. } = self;
            let conn = conn.as_mut().expect("connected above");
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let more = (attempt == 1 && !careful).then_some((queue, &mut *next));
                attempt_batch(conn, rt, (&mut batch, more), careful, &*journal)
            }));
            match ran {
                Ok(Ok(held)) => {
                    self.count(&batch, held);
                    break None;
                }
                Ok(Err(End::Redo)) => careful = true,
                Ok(Err(End::Undone)) => break None,
                Ok(Err(End::Conflict(_))) if attempt < MAX_ATTEMPTS => {
                    self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                }
                Ok(Err(End::Conflict(why))) => break Some(why),
                Ok(Err(End::Failed { why, broken })) => {
                    if broken {
                        self.conn = None;
                    }
                    break Some(why);
                }
                Err(_) => {
                    tracing::error!("a PostgreSQL job panicked; its batch was rolled back");
                    self.conn = None;
                    break Some("a job in its batch stopped with an internal error".into());
                }
            }
        };
        for q in batch {
            q.task.reply(failure.as_deref());
        }
    }

    fn connect(&mut self) -> Result<()> {
        if self.conn.is_none() {
            let options = self.url.parse::<sqlx::postgres::PgConnectOptions>()?;
            let options = options.statement_cache_capacity(STATEMENT_CACHE);
            self.conn = Some(self.rt.block_on(options.connect())?);
        }
        Ok(())
    }

    fn count(&self, batch: &[Queued], held: Option<std::time::Duration>) {
        let n = batch.len() as u64;
        crate::counts::transaction();
        self.stats.transactions.fetch_add(1, Ordering::Relaxed);
        self.stats.jobs.fetch_add(n, Ordering::Relaxed);
        if let Some(held) = held {
            self.stats.keyed_jobs.fetch_add(n, Ordering::Relaxed);
            self.stats.keys_held_ns.fetch_add(held.as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// One attempt at the batch: BEGIN, its keys, each job (in a savepoint when `careful`), the
/// journal's last statements, COMMIT. How long the keys were held, when there were any.
fn attempt_batch(
    conn: &mut PgConnection,
    rt: &Runtime,
    (batch, more): (&mut Vec<Queued>, Option<More>),
    careful: bool,
    journal: &dyn Journal,
) -> std::result::Result<Option<std::time::Duration>, End> {
    let mut tx = rt.block_on(conn.begin()).map_err(|e| End::failed(&e.into()))?;
    let keys = lock_order(batch);
    let ended = {
        let pg = PgTx {
            conn: RefCell::new(&mut *tx),
            rt,
            held: RefCell::new(Vec::new()),
            wrote: Cell::new(false),
            journal: Some(journal),
            hooked: Cell::new(false),
        };
        run_jobs(pg, (batch, more), careful, journal, &keys)
    };
    let locked_at = match ended {
        Ok(at) => at,
        Err(end) => {
            if let Err(e) = rt.block_on(tx.rollback()) {
                let why = match end {
                    End::Failed { why, .. } => why,
                    _ => e.to_string(),
                };
                return Err(End::Failed { why, broken: true });
            }
            return Err(end);
        }
    };
    rt.block_on(tx.commit()).map_err(|e| End::failed(&e.into()))?;
    Ok(locked_at.map(|at| at.elapsed()))
}

/// The runner's queue and the job it holds back, for [`top_up`].
type More<'a> = (&'a Receiver<Queued>, &'a mut Option<Queued>);

/// Jobs queued for `keys`, which the batch now holds, while it waited for them: they join
/// it. Under another instance's batch of the same tenant, the calls that queued meanwhile
/// then commit in this batch instead of in one batch each, each waiting for the lock again.
/// The first job for another key stays in `next` for the next batch.
fn top_up(batch: &mut Vec<Queued>, keys: &[i64], queue: &Receiver<Queued>, next: &mut Option<Queued>) {
    while next.is_none() && batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(q) if q.key.is_some_and(|k| keys.contains(&k)) => batch.push(q),
            Ok(q) => *next = Some(q),
            Err(_) => break,
        }
    }
}

/// The batch's statements inside its transaction; when its keys were taken.
fn run_jobs(
    pg: PgTx<'_>,
    (batch, more): (&mut Vec<Queued>, Option<More>),
    careful: bool,
    journal: &dyn Journal,
    keys: &[i64],
) -> std::result::Result<Option<Instant>, End> {
    for key in keys {
        pg.advisory_lock(*key).map_err(|e| End::failed(&e))?;
    }
    let locked_at = (!keys.is_empty()).then(Instant::now);
    if let Some((queue, next)) = more {
        top_up(batch, keys, queue, next);
    }
    journal.begin(!careful);
    let hints: Vec<&(dyn Any + Send)> = batch.iter().filter_map(|q| q.task.hint()).collect();
    if !careful && !hints.is_empty() {
        pg.hooked(|| journal.prefetch(&pg, &hints)).map_err(|e| End::failed(&e))?;
    }
    let alone = batch.len() == 1;
    for q in batch.iter_mut() {
        if careful {
            pg.exec("SAVEPOINT job", &[]).map_err(|e| End::failed(&e))?;
        }
        let (mark, locks) = (journal.mark(), pg.held.borrow().len());
        pg.wrote.set(false);
        match q.task.run(&pg) {
            Ran::Ok if careful => {
                pg.exec("RELEASE SAVEPOINT job", &[]).map_err(|e| End::failed(&e))?;
            }
            Ran::Ok => {}
            Ran::Conflict => return Err(End::Conflict("a conflict with another transaction".into())),
            Ran::Failed => {
                journal.undo(mark);
                if careful {
                    pg.exec("ROLLBACK TO SAVEPOINT job", &[]).map_err(|e| End::failed(&e))?;
                    // Rolling back to the savepoint released the locks the job took.
                    pg.held.borrow_mut().truncate(locks);
                } else if pg.wrote.get() && !alone {
                    return Err(End::Redo);
                } else if pg.wrote.get() {
                    // Alone in its batch: rolling the transaction back undoes it.
                    return Err(End::Undone);
                }
            }
        }
    }
    let r = pg.hooked(|| journal.finish(&pg));
    r.map_err(|e| match End::failed(&e) {
        // What the jobs kept for later was refused: run the batch again, each job writing
        // in its own savepoint, so only the job at fault fails.
        End::Failed { broken: false, .. } if !careful => End::Redo,
        end => end,
    })?;
    Ok(locked_at)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::postgres::Postgres;
    use crate::sql::{Tx, lock_digest};
    use crate::testing::Cluster;
    use crate::{Error, Result};

    pub(super) fn insert(tx: &dyn Tx, name: &str) -> Result<u64> {
        tx.exec(
            "INSERT INTO login_attempts (username, attempts, window_start) VALUES (?, 1, 'now')",
            &[&name],
        )
    }

    /// Queues `job` for `key`'s runner without waiting for it.
    fn queue<T: Send + 'static>(
        db: &Postgres,
        key: i64,
        job: impl Fn(&dyn Tx) -> Result<T> + Send + 'static,
    ) -> tokio::task::JoinHandle<Result<T>> {
        let db = db.clone();
        tokio::spawn(async move { db.run_keyed(key, job).await })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_commits_every_job_but_the_ones_that_failed_and_keeps_nothing_of_those() {
        let cluster = Cluster::get();
        let db = Postgres::open(&cluster.fresh_database().await, 2).await.unwrap();
        let key = lock_digest(&["chain", "tenant-a"]);
        // A row the constraint job collides with, whatever order the jobs reach the runner in.
        db.run(|tx| insert(tx, "taken")).await.unwrap();
        // The runner is busy with this one while the rest queue behind it: they make one batch.
        let busy = queue(&db, key, |tx| tx.exec("SELECT pg_sleep(0.3)", &[]));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before = db.stats();
        let jobs = vec![
            queue(&db, key, |tx| insert(tx, "ana")),
            // Fails after writing: its own insert must not survive.
            queue(&db, key, |tx| {
                insert(tx, "bo")?;
                Err(Error::invalid("refused", "over the cap"))
            }),
            queue(&db, key, |tx| insert(tx, "cy")),
            // A constraint: PostgreSQL refuses the statement, and with it the transaction.
            queue(&db, key, |tx| insert(tx, "taken")),
            // Refused before writing anything.
            queue(&db, key, |_| Err::<u64, _>(Error::invalid("refused", "no budget"))),
            queue(&db, key, |tx| insert(tx, "di")),
        ];
        busy.await.unwrap().unwrap();
        let mut answers = Vec::new();
        for j in jobs {
            answers.push(j.await.unwrap().map_err(|e| e.code()));
        }
        let ran = db.stats().since(before);
        assert_eq!(
            answers,
            vec![Ok(1), Err("refused"), Ok(1), Err("storage_error"), Err("refused"), Ok(1)],
            "each job hears its own answer"
        );
        // The busy job committed after `before` too: its transaction, then the six's one.
        assert_eq!((ran.transactions, ran.jobs), (2, 7), "the six jobs committed as one batch: {ran:?}");
        let names = names(&db).await;
        assert_eq!(names, ["ana", "cy", "di", "taken"], "the failed jobs left nothing, the others committed");
        db.close().await;
    }

    /// The rows the jobs left, by name.
    pub(super) async fn names(db: &Postgres) -> Vec<String> {
        db.run(|tx| {
            let rows = tx.rows("SELECT username FROM login_attempts ORDER BY username", &[])?;
            rows.iter().map(|r| r.get::<String>(0)).collect::<Result<Vec<_>>>()
        })
        .await
        .unwrap()
    }
}

#[cfg(test)]
mod random {
    use std::collections::BTreeSet;

    use super::tests::{insert, names};
    use crate::postgres::Postgres;
    use crate::sql::{Tx, lock_digest};
    use crate::testing::Cluster;
    use crate::{Error, Result};

    /// What a job does: write its row and keep it, write it and then fail, break a unique
    /// constraint after writing it, or fail before writing.
    #[derive(Clone, Copy, Debug)]
    enum Fate {
        Commits,
        FailsAfterWriting,
        BreaksAConstraint,
        FailsBeforeWriting,
    }

    fn job(name: String, fate: Fate) -> impl Fn(&dyn Tx) -> Result<()> + Send + 'static {
        move |tx| {
            if let Fate::FailsBeforeWriting = fate {
                return Err(Error::invalid("refused", "before any write"));
            }
            insert(tx, &name)?;
            match fate {
                Fate::FailsAfterWriting => Err(Error::invalid("refused", "after a write")),
                Fate::BreaksAConstraint => insert(tx, "taken").map(drop),
                _ => Ok(()),
            }
        }
    }

    /// Jobs of random fates, keyed to a few tenants, race on the runners: exactly the rows of
    /// the jobs that answered Ok are there, however the jobs were batched. `NAIVE_SEED` replays
    /// a run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn whatever_the_batches_exactly_the_jobs_that_answered_ok_leave_their_rows() {
        let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        println!("NAIVE_SEED={seed}");
        let cluster = Cluster::get();
        let db = Postgres::open(&cluster.fresh_database().await, 2).await.unwrap();
        db.run(|tx| job("taken".into(), Fate::Commits)(tx)).await.unwrap();
        let before = db.stats();
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let fates = [
            Fate::Commits,
            Fate::Commits,
            Fate::FailsAfterWriting,
            Fate::BreaksAConstraint,
            Fate::FailsBeforeWriting,
        ];
        let mut calls = Vec::new();
        for i in 0..400 {
            let (tenant, fate) = (next() % 4, fates[(next() % fates.len() as u64) as usize]);
            let key = lock_digest(&["chain", &format!("tenant-{tenant}")]);
            let (db, name) = (db.clone(), format!("job-{i}"));
            let j = job(name.clone(), fate);
            calls.push(tokio::spawn(async move { (name, fate, db.run_keyed(key, j).await) }));
        }
        let mut committed = BTreeSet::from(["taken".to_string()]);
        for c in calls {
            let (name, fate, answer) = c.await.unwrap();
            assert_eq!(answer.is_ok(), matches!(fate, Fate::Commits), "{name} ({fate:?}): {answer:?}");
            if answer.is_ok() {
                committed.insert(name);
            }
        }
        let rows: BTreeSet<String> = names(&db).await.into_iter().collect();
        assert_eq!(rows, committed, "the rows are exactly those of the jobs that answered Ok");
        let ran = db.stats().since(before);
        assert!(ran.transactions < ran.jobs, "the jobs were batched: {ran:?}");
        db.close().await;
    }
}
