//! Test support: the throwaway PostgreSQL cluster and fresh databases of [`store::testing`],
//! and for the gateway's own contract tests both engines side by side, each journalling to
//! the audit bus as the gateway's writer does.

pub use ::store::testing::{Cluster, engine_under_test, fresh_url};

/// One engine, migrated and empty, running jobs the way the gateway runs them: SQLite's on
/// its single writer with group commit, PostgreSQL's each in its own transaction.
#[cfg(test)]
pub(crate) enum TestDb {
    Sqlite { writer: crate::store::writer::Writer, _store: crate::Store },
    Postgres { db: crate::store::postgres::Postgres, _cluster: Cluster },
}

#[cfg(test)]
impl TestDb {
    /// SQLite and PostgreSQL, each on a fresh database.
    pub(crate) async fn both() -> Vec<TestDb> {
        let store = crate::Store::open("sqlite::memory:").await.expect("SQLite opens");
        let bus = crate::audit::bus::Bus::default();
        let writer =
            crate::store::writer::Writer::start(&store, crate::store::writer::DEFAULT_MAX_BATCH, bus)
                .expect("writer");
        let cluster = Cluster::get();
        let url = cluster.fresh_database().await;
        let db =
            crate::store::postgres::Postgres::open(&url, 4).await.expect("PostgreSQL opens and migrates");
        vec![TestDb::Sqlite { writer, _store: store }, TestDb::Postgres { db, _cluster: cluster }]
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            TestDb::Sqlite { .. } => "sqlite",
            TestDb::Postgres { .. } => "postgres",
        }
    }

    /// Runs `f` in one transaction: committed when it succeeds, rolled back when it fails.
    pub(crate) async fn run<T, F>(&self, f: F) -> crate::Result<T>
    where
        T: Send + 'static,
        F: Fn(&dyn crate::sql::Tx) -> crate::Result<T> + Send + 'static,
    {
        match self {
            TestDb::Sqlite { writer, .. } => writer.run(f).await,
            TestDb::Postgres { db, .. } => db.run(f).await,
        }
    }
}

/// `f`, keeping its transaction open 50 ms longer before it commits: racing jobs then
/// overlap for certain, so a test of a lock fails when the lock is missing.
#[cfg(test)]
pub(crate) fn held_open<T>(
    f: impl Fn(&dyn crate::sql::Tx) -> crate::Result<T> + Send + 'static,
) -> impl Fn(&dyn crate::sql::Tx) -> crate::Result<T> + Send + 'static {
    move |tx| {
        let r = f(tx);
        std::thread::sleep(std::time::Duration::from_millis(50));
        r
    }
}
