//! The storage boundary's read side: a query outside any job, on a pooled connection of the
//! store's engine, written once in the portable dialect of [`crate::sql`].
//!
//! Domain code reads through [`Store::all`], [`Store::opt`] and [`Store::one`] with the same
//! arguments ([`ToValue`]) and rows ([`Row`], [`FromRow`]) as a job, so no sqlx type crosses
//! the boundary. A read sees what is committed when it runs; a decision that must not act on
//! a stale read re-reads inside its job.
//!
//! Guarantees: a value reads back as the Rust type it was written from; a column whose type
//! the boundary does not carry is an internal error naming the column, never a silent
//! conversion; a missing row asked for with [`Store::one`] is an internal error too (the
//! caller knew it existed), while [`Store::opt`] gives `None`.

use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};

use crate::Store;
use crate::database::Engine;
use crate::sql::{FromRow, Kind, Row, ToValue, Value};
use crate::{Error, Result};

impl Store {
    /// Every row `sql` returns.
    pub async fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
        crate::counts::outside_job();
        match self.engine() {
            Engine::Sqlite(pool) => sqlite_rows(pool, sql, args).await,
            Engine::Postgres(pg) => pg.rows(sql, args).await,
        }
    }

    /// Every row `sql` returns, each as a `T`.
    pub async fn all<T: FromRow>(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<T>> {
        self.rows(sql, args).await?.iter().map(T::from_row).collect()
    }

    /// The first row `sql` returns as a `T`, if there is one.
    pub async fn opt<T: FromRow>(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Option<T>> {
        crate::counts::outside_job();
        let row = match self.engine() {
            Engine::Sqlite(pool) => sqlite_row(pool, sql, args).await?,
            Engine::Postgres(pg) => pg.rows(sql, args).await?.into_iter().next(),
        };
        row.as_ref().map(T::from_row).transpose()
    }

    /// The first row `sql` returns as a `T`; there must be one.
    pub async fn one<T: FromRow>(&self, sql: &str, args: &[&dyn ToValue]) -> Result<T> {
        self.opt(sql, args).await?.ok_or_else(|| {
            Error::internal("storage_missing_row", format!("a row the gateway expected is missing: {sql}"))
        })
    }
}

impl Store {
    /// Runs one statement outside any job; how many rows it changed. For tests and an
    /// operator's repair only: the gateway's own writes are jobs (the gateway's `Gateway::write`), which
    /// keep the log, the chain and the caches right.
    #[doc(hidden)]
    pub async fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<u64> {
        crate::counts::outside_job();
        match self.engine() {
            Engine::Sqlite(pool) => Ok(sqlite_query(sql, args).execute(pool).await?.rows_affected()),
            Engine::Postgres(pg) => pg.exec(sql, args).await,
        }
    }
}

type SqliteQuery<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

fn sqlite_query<'q>(sql: &'q str, args: &[&dyn ToValue]) -> SqliteQuery<'q> {
    args.iter().fold(sqlx::query(sql), |q, a| crate::sql::bind_value!(q, a.to_value()))
}

async fn sqlite_rows(pool: &SqlitePool, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
    let rows = sqlite_query(sql, args).fetch_all(pool).await?;
    rows.iter().map(sqlite_decode).collect()
}

async fn sqlite_row(pool: &SqlitePool, sql: &str, args: &[&dyn ToValue]) -> Result<Option<Row>> {
    let row = sqlite_query(sql, args).fetch_optional(pool).await?;
    row.as_ref().map(sqlite_decode).transpose()
}

/// A SQLite row in the portable types, by each value's own storage class.
fn sqlite_decode(r: &SqliteRow) -> Result<Row> {
    let mut values = Vec::with_capacity(r.len());
    for i in 0..r.len() {
        let raw = r.try_get_raw(i)?;
        let value = if raw.is_null() {
            Value::Null(Kind::Text)
        } else {
            match raw.type_info().name() {
                "INTEGER" | "BIGINT" | "INT" | "BOOLEAN" => Value::Int(r.try_get(i)?),
                "REAL" | "DOUBLE" | "FLOAT" | "NUMERIC" => Value::Real(r.try_get(i)?),
                "BLOB" => Value::Blob(r.try_get::<Vec<u8>, _>(i)?.into()),
                "TEXT" | "DATETIME" | "DATE" | "TIME" => Value::Text(r.try_get::<String, _>(i)?.into()),
                other => {
                    return Err(Error::internal(
                        "storage_decode",
                        format!(
                            "column {} is {other}: cast it to INTEGER, REAL, TEXT or BLOB",
                            r.column(i).name()
                        ),
                    ));
                }
            }
        };
        values.push(value);
    }
    Ok(Row::from_values(values))
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use crate::Store;
    use crate::testing::Cluster;

    /// Both engines, each on a fresh database, through the same read API.
    async fn stores() -> (Vec<Store>, Cluster) {
        let cluster = Cluster::get();
        let pg = Store::open(&cluster.fresh_database().await).await.expect("PostgreSQL opens");
        (vec![Store::open("sqlite::memory:").await.expect("SQLite opens"), pg], cluster)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_gives_back_each_type_it_was_given_on_both_engines() {
        let (stores, _cluster) = stores().await;
        let at: DateTime<Utc> = "2026-12-02T10:11:12.345678Z".parse().unwrap();
        for s in stores {
            let engine = format!("{:?}", s.kind());
            let ddl = match s.kind() {
                crate::sql::Engine::Sqlite => {
                    "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, ts TEXT, n TEXT)"
                }
                crate::sql::Engine::Postgres => {
                    "CREATE TABLE t (i BIGINT, r DOUBLE PRECISION, s TEXT, b BYTEA, ts TEXT, n TEXT)"
                }
            };
            s.exec(ddl, &[]).await.unwrap();
            let none: Option<String> = None;
            let blob = vec![0u8, 255];
            let changed = s
                .exec("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", &[&-7i64, &1.5f64, &"é?", &blob, &at, &none])
                .await
                .unwrap();
            assert_eq!(changed, 1, "{engine}");
            type Back = (i64, f64, String, Vec<u8>, DateTime<Utc>, Option<String>);
            let row: Back = s.one("SELECT i, r, s, b, ts, n FROM t WHERE s = ?", &[&"é?"]).await.unwrap();
            assert_eq!(row, (-7, 1.5, "é?".into(), blob.clone(), at, None), "{engine}");
            let sum: (i64,) = s.one("SELECT CAST(SUM(i) AS BIGINT) FROM t", &[]).await.unwrap();
            assert_eq!(sum, (-7,), "{engine}");
            let missing: Option<(i64,)> = s.opt("SELECT i FROM t WHERE s = ?", &[&"nobody"]).await.unwrap();
            assert_eq!(missing, None, "{engine}");
            let err = s.one::<(i64,)>("SELECT i FROM t WHERE s = ?", &[&"nobody"]).await.unwrap_err();
            assert_eq!(err.code(), "storage_missing_row", "{engine}");
            let err = s.one::<(i64,)>("SELECT s FROM t", &[]).await.unwrap_err();
            assert_eq!(err.code(), "storage_decode", "{engine}: a mistyped column is an error");
            s.close().await;
        }
    }
}
