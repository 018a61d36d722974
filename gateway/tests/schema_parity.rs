//! The PostgreSQL schema (`migrations/postgres`) has every table and column the SQLite
//! schema (`migrations/sqlite`) has, and nothing else, so domain code written once reads and
//! writes the same rows on both engines. Runs against the cluster in
//! `NAIVE_TEST_POSTGRES_URL` (`make test` starts one), or starts a throwaway one itself
//! with `scripts/pg.sh`.

use std::collections::BTreeSet;
use std::process::Command;

const PG_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pg.sh");

/// A PostgreSQL cluster for this test: the one given, or one started here and stopped on drop.
struct Cluster {
    url: String,
    started: Option<String>,
}

impl Cluster {
    fn get() -> Cluster {
        if let Ok(url) = std::env::var("NAIVE_TEST_POSTGRES_URL") {
            return Cluster { url, started: None };
        }
        let out = Command::new(PG_SH).arg("start").output().expect("scripts/pg.sh runs");
        assert!(out.status.success(), "scripts/pg.sh start: {}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8(out.stdout).unwrap();
        let var = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("scripts/pg.sh printed no {name}: {line}"))
                .to_string()
        };
        Cluster { url: var("NAIVE_TEST_POSTGRES_URL"), started: Some(var("NAIVE_PG_DIR")) }
    }

    /// A fresh, empty database on the cluster; its URL.
    async fn fresh_database(&self) -> String {
        let name = format!("naive_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&self.url).await.expect("the cluster answers");
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin).await.unwrap();
        admin.close().await;
        let (base, _) = self.url.rsplit_once('/').unwrap();
        format!("{base}/{name}")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(dir) = &self.started {
            let _ = Command::new(PG_SH).arg("stop").env("NAIVE_PG_DIR", dir).status();
        }
    }
}

type Columns = BTreeSet<(String, String)>;

async fn sqlite_columns() -> Columns {
    let store = gateway::Store::open("sqlite::memory:").await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
         WHERE m.type = 'table' AND m.name NOT LIKE '\\_sqlx%' ESCAPE '\\' AND m.name NOT LIKE 'sqlite%'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    rows.into_iter().collect()
}

async fn postgres_columns(url: &str) -> Columns {
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows.into_iter().collect()
}

#[tokio::test]
async fn the_postgres_schema_has_the_sqlite_schemas_tables_and_columns() {
    let cluster = Cluster::get();
    let url = cluster.fresh_database().await;
    gateway::store::migrate_postgres(&url).await.expect("migrations/postgres applies");
    // A second start finds everything applied.
    gateway::store::migrate_postgres(&url).await.expect("migrating again is a no-op");
    let (sqlite, postgres) = (sqlite_columns().await, postgres_columns(&url).await);
    assert!(sqlite.len() > 150, "read the SQLite schema: {} columns", sqlite.len());
    let only_sqlite: Vec<_> = sqlite.difference(&postgres).collect();
    let only_postgres: Vec<_> = postgres.difference(&sqlite).collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "only in SQLite: {only_sqlite:?}; only in PostgreSQL: {only_postgres:?}"
    );
}
