//! Test support shared by the unit tests of this crate and the gateway, and the integration
//! tests of the workspace: a throwaway PostgreSQL cluster (the one `make test` started, named by
//! `NAIVE_TEST_POSTGRES_URL`, or one this process starts with `scripts/pg.sh` and stops when
//! done), and for the contract tests both engines side by side, each on a fresh database.

use std::process::Command;

const PG_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pg.sh");

/// A PostgreSQL cluster: the one given, or one started here and stopped on drop.
#[derive(Debug)]
pub struct Cluster {
    pub url: String,
    started: Option<String>,
}

impl Cluster {
    /// The cluster in `NAIVE_TEST_POSTGRES_URL`, else a new one (about 1.5 s).
    pub fn get() -> Cluster {
        if let Ok(url) = std::env::var("NAIVE_TEST_POSTGRES_URL") {
            return Cluster { url, started: None };
        }
        let out = Command::new(PG_SH).arg("start").output().expect("scripts/pg.sh runs");
        assert!(out.status.success(), "scripts/pg.sh start: {}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8(out.stdout).expect("scripts/pg.sh prints text");
        let var = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("scripts/pg.sh printed no {name}: {line}"))
                .to_string()
        };
        Cluster { url: var("NAIVE_TEST_POSTGRES_URL"), started: Some(var("NAIVE_PG_DIR")) }
    }

    /// A fresh, empty database on the cluster; its URL.
    pub async fn fresh_database(&self) -> String {
        let name = format!("naive_{}", uuid::Uuid::new_v4().simple());
        let admin = sqlx::PgPool::connect(&self.url).await.expect("the cluster answers");
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin).await.expect("CREATE DATABASE");
        admin.close().await;
        let (base, _) = self.url.rsplit_once('/').expect("a database URL ends in /NAME");
        format!("{base}/{name}")
    }
}

/// The engine the service tests run on: PostgreSQL when `NAIVE_TEST_ENGINE=postgres` (the
/// second pass of `make test`), else SQLite.
pub fn engine_under_test() -> crate::sql::Engine {
    match std::env::var("NAIVE_TEST_ENGINE").as_deref() {
        Ok("postgres") => crate::sql::Engine::Postgres,
        _ => crate::sql::Engine::Sqlite,
    }
}

/// A fresh database on [`engine_under_test`]: a file in `dir`, or a new database on the
/// cluster, which the caller keeps until it is done.
pub async fn fresh_url(dir: &std::path::Path) -> (String, Option<Cluster>) {
    match engine_under_test() {
        crate::sql::Engine::Sqlite => (format!("sqlite://{}/t.db", dir.display()), None),
        crate::sql::Engine::Postgres => {
            let cluster = Cluster::get();
            (cluster.fresh_database().await, Some(cluster))
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(dir) = &self.started {
            let _ = Command::new(PG_SH).arg("stop").env("NAIVE_PG_DIR", dir).status();
        }
    }
}
