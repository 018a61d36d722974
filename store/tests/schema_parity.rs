//! The PostgreSQL schema (`migrations/postgres`) has every table and column the SQLite
//! schema (`migrations/sqlite`) has, and nothing else, so domain code written once reads and
//! writes the same rows on both engines. Runs against the cluster in
//! `NAIVE_TEST_POSTGRES_URL` (`make test` starts one), or starts a throwaway one itself
//! with `scripts/pg.sh`.

use std::collections::BTreeSet;

use store::testing::Cluster;

type Columns = BTreeSet<(String, String)>;

async fn sqlite_columns() -> Columns {
    let store = store::Store::open("sqlite::memory:").await.unwrap();
    let rows: Vec<(String, String)> = store
        .all(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE '\\_sqlx%' ESCAPE '\\' AND m.name NOT LIKE 'sqlite%'",
            &[],
        )
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
    store::migrate_postgres(&url).await.expect("migrations/postgres applies");
    // A second start finds everything applied.
    store::migrate_postgres(&url).await.expect("migrating again is a no-op");
    let (sqlite, postgres) = (sqlite_columns().await, postgres_columns(&url).await);
    assert!(sqlite.len() > 150, "read the SQLite schema: {} columns", sqlite.len());
    let only_sqlite: Vec<_> = sqlite.difference(&postgres).collect();
    let only_postgres: Vec<_> = postgres.difference(&sqlite).collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "only in SQLite: {only_sqlite:?}; only in PostgreSQL: {only_postgres:?}"
    );
}
