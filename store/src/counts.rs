//! Process-wide counts of the statements the store ran, on either engine: those inside jobs
//! (through a [`crate::sql::Tx`]), those outside any job (the reads of [`crate::Store`]), and
//! the jobs themselves (each a transaction of its own on PostgreSQL, so a BEGIN and a COMMIT
//! round trip more). A test reads them before and after an operation to keep the statements
//! it costs from creeping up; an operator's metrics can read them too.
//!
//! Guarantees: counting is a relaxed atomic add per statement and never fails or blocks.

use std::sync::atomic::{AtomicU64, Ordering};

static IN_JOBS: AtomicU64 = AtomicU64::new(0);
static OUTSIDE_JOBS: AtomicU64 = AtomicU64::new(0);
static JOBS: AtomicU64 = AtomicU64::new(0);
static TRANSACTIONS: AtomicU64 = AtomicU64::new(0);

/// Statements and jobs run by this process, or between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statements {
    /// Statements run inside jobs (their transactions' BEGIN and COMMIT not counted).
    pub in_jobs: u64,
    /// Statements run outside any job: reads, and an operator's one-off statements.
    pub outside_jobs: u64,
    /// Jobs run, each attempt of a job counted.
    pub jobs: u64,
    /// PostgreSQL transactions committed: one per batch of jobs (a BEGIN and a COMMIT each).
    pub transactions: u64,
}

impl Statements {
    /// The counts so far.
    pub fn now() -> Statements {
        Statements {
            in_jobs: IN_JOBS.load(Ordering::Relaxed),
            outside_jobs: OUTSIDE_JOBS.load(Ordering::Relaxed),
            jobs: JOBS.load(Ordering::Relaxed),
            transactions: TRANSACTIONS.load(Ordering::Relaxed),
        }
    }

    /// What ran since `earlier`.
    pub fn since(&self, earlier: Statements) -> Statements {
        Statements {
            in_jobs: self.in_jobs - earlier.in_jobs,
            outside_jobs: self.outside_jobs - earlier.outside_jobs,
            jobs: self.jobs - earlier.jobs,
            transactions: self.transactions - earlier.transactions,
        }
    }

    /// Every statement, inside jobs and outside.
    pub fn total(&self) -> u64 {
        self.in_jobs + self.outside_jobs
    }

    /// The round trips these cost on PostgreSQL: one per statement, plus BEGIN and COMMIT per
    /// transaction. (On SQLite none leaves the process.)
    pub fn postgres_round_trips(&self) -> u64 {
        self.total() + 2 * self.transactions
    }
}

pub(crate) fn in_job() {
    IN_JOBS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn outside_job() {
    OUTSIDE_JOBS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn transaction() {
    TRANSACTIONS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn job() {
    JOBS.fetch_add(1, Ordering::Relaxed);
}
