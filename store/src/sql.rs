//! The storage boundary's statement interface. Domain code writes each statement once, in SQL
//! both engines accept, against [`Tx`]: an open transaction of SQLite (the writer's
//! connection inside its group commit) or of PostgreSQL (the gateway's runners, for now). No rusqlite or
//! sqlx type crosses it: arguments go in as [`ToValue`], rows come out as [`Row`].
//!
//! The portable dialect:
//! - placeholders `?` or `?N` (one style per statement), rewritten to `$N` for PostgreSQL;
//! - `INSERT … ON CONFLICT (…) DO UPDATE SET … = excluded.…` or `DO NOTHING`, never
//!   `INSERT OR …`;
//! - timestamps as the text [`crate::stored::ts`] writes, integers as 64 bits, bytes as blobs,
//!   booleans as 0/1 integers;
//! - an aggregate PostgreSQL widens (`SUM` of a BIGINT is NUMERIC there) is cast back with
//!   `CAST(… AS BIGINT)`.
//!
//! Guarantees: a value reads back as the Rust type it was written from on both engines; a
//! NULL argument carries its type, so PostgreSQL can plan the statement; a failing statement
//! keeps the engine's own error, so the PostgreSQL runner tells a serialization failure or a
//! deadlock (run the job again) from a real failure.

use std::borrow::Cow;

use crate::{Error, Result};

/// Which engine a transaction belongs to, for the rare statement that must differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// The type of a value, kept on NULLs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Real,
    Text,
    Blob,
}

/// One argument or column value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null(Kind),
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(Cow<'a, [u8]>),
}

/// A transaction of either engine. Statements run in it in order; the job's runner commits
/// or rolls back the whole.
pub trait Tx {
    /// Runs a statement; the number of rows it changed.
    fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<u64>;
    /// Runs a query; every row it returns.
    fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>>;
    fn engine(&self) -> Engine;

    /// Takes the transaction-scoped advisory lock `key` on PostgreSQL ([`lock_key`]); a
    /// PostgreSQL batch that took it before its first job answers at once.
    fn advisory_lock(&self, key: i64) -> Result<()> {
        self.exec("SELECT pg_advisory_xact_lock(?)", &[&key]).map(drop)
    }

    /// The first row, if any.
    fn row(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Option<Row>> {
        Ok(self.rows(sql, args)?.into_iter().next())
    }
}

/// A row's values, read by position.
#[derive(Clone, Debug, PartialEq)]
pub struct Row(Vec<Value<'static>>);

impl Row {
    /// A row of these values, in column order (for an engine's reader).
    pub fn from_values(values: Vec<Value<'static>>) -> Row {
        Row(values)
    }

    /// Column `i` as a `T`; a type mismatch is our bug, reported as an internal error.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self.0.get(i).ok_or_else(|| decode_error(i, "no such column"))?;
        T::from_value(v).map_err(|why| decode_error(i, why))
    }
}

fn decode_error(i: usize, why: &str) -> Error {
    Error::internal("storage_decode", format!("column {i} did not read back: {why}"))
}

/// Something that can be a statement's argument. `Sync`, so a read's borrowed arguments can
/// wait across an `.await` in a `Send` future.
pub trait ToValue: Sync {
    fn to_value(&self) -> Value<'_>;
}

/// The type a Rust value has in storage, for its NULL.
pub trait Typed {
    const KIND: Kind;
}

/// Something a column reads back as.
pub trait FromValue: Sized {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str>;
}

macro_rules! int_values {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value<'_> { Value::Int(i64::from(*self)) }
        }
        impl Typed for $t { const KIND: Kind = Kind::Int; }
    )*};
}
int_values!(i64, i32, u32, bool);

impl ToValue for f64 {
    fn to_value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}
impl Typed for f64 {
    const KIND: Kind = Kind::Real;
}
impl ToValue for str {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}
impl Typed for str {
    const KIND: Kind = Kind::Text;
}
impl ToValue for String {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}
impl Typed for String {
    const KIND: Kind = Kind::Text;
}
impl ToValue for [u8] {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(Cow::Borrowed(self))
    }
}
impl Typed for [u8] {
    const KIND: Kind = Kind::Blob;
}
impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value<'_> {
        Value::Blob(Cow::Borrowed(self))
    }
}
impl Typed for Vec<u8> {
    const KIND: Kind = Kind::Blob;
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value<'_> {
        (**self).to_value()
    }
}
impl<T: Typed + ?Sized> Typed for &T {
    const KIND: Kind = T::KIND;
}
impl<T: ToValue + Typed> ToValue for Option<T> {
    fn to_value(&self) -> Value<'_> {
        match self {
            Some(v) => v.to_value(),
            None => Value::Null(T::KIND),
        }
    }
}

impl FromValue for i64 {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Int(n) => Ok(*n),
            _ => Err("expected an integer"),
        }
    }
}
impl FromValue for bool {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        i64::from_value(v).map(|n| n != 0)
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Real(x) => Ok(*x),
            Value::Int(n) => Ok(*n as f64),
            _ => Err("expected a number"),
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Text(s) => Ok(s.to_string()),
            _ => Err("expected text"),
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Blob(b) => Ok(b.to_vec()),
            _ => Err("expected bytes"),
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Null(_) => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// Timestamps are stored as the text [`crate::stored::ts`] writes, on both engines.
impl ToValue for chrono::DateTime<chrono::Utc> {
    fn to_value(&self) -> Value<'_> {
        Value::Text(Cow::Owned(crate::stored::ts(*self)))
    }
}
impl Typed for chrono::DateTime<chrono::Utc> {
    const KIND: Kind = Kind::Text;
}
impl FromValue for chrono::DateTime<chrono::Utc> {
    fn from_value(v: &Value<'_>) -> std::result::Result<Self, &'static str> {
        match v {
            Value::Text(s) => chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| "expected an RFC 3339 timestamp"),
            _ => Err("expected a timestamp"),
        }
    }
}

/// A whole row read as one Rust value: a tuple of [`FromValue`]s by position, or a record
/// type that implements it.
pub trait FromRow: Sized {
    fn from_row(row: &Row) -> Result<Self>;
}

macro_rules! tuple_rows {
    ($(($($t:ident $i:tt),+))*) => {$(
        impl<$($t: FromValue),+> FromRow for ($($t,)+) {
            fn from_row(row: &Row) -> Result<Self> {
                Ok(($(row.get::<$t>($i)?,)+))
            }
        }
    )*};
}
tuple_rows! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15)
}

/// Binds one portable value to an sqlx query of either engine (both accept the same Rust
/// types, so one arm per [`Value`] serves SQLite's reads and PostgreSQL's statements).
#[doc(hidden)]
#[macro_export]
macro_rules! bind_value {
    ($q:expr, $v:expr) => {
        match $v {
            $crate::sql::Value::Null($crate::sql::Kind::Int) => $q.bind(None::<i64>),
            $crate::sql::Value::Null($crate::sql::Kind::Real) => $q.bind(None::<f64>),
            $crate::sql::Value::Null($crate::sql::Kind::Text) => $q.bind(None::<String>),
            $crate::sql::Value::Null($crate::sql::Kind::Blob) => $q.bind(None::<Vec<u8>>),
            $crate::sql::Value::Int(n) => $q.bind(n),
            $crate::sql::Value::Real(x) => $q.bind(x),
            $crate::sql::Value::Text(s) => $q.bind(s.into_owned()),
            $crate::sql::Value::Blob(b) => $q.bind(b.into_owned()),
        }
    };
}
pub use bind_value;

/// `sql`, or `locked` on PostgreSQL; [`locked!`] writes both from one text.
pub fn pick<'s>(tx: &dyn Tx, sql: &'s str, locked: &'s str) -> &'s str {
    match tx.engine() {
        Engine::Sqlite => sql,
        Engine::Postgres => locked,
    }
}

/// A `SELECT` that locks its rows until commit on PostgreSQL (`… FOR UPDATE`), for a hot
/// statement: both texts are literals, so nothing is built per call.
#[macro_export]
macro_rules! locked {
    ($tx:expr, $sql:literal) => {
        $crate::sql::pick($tx, $sql, concat!($sql, " FOR UPDATE"))
    };
}
pub use locked;

/// What ends a `SELECT` that locks the rows it reads until commit: `FOR UPDATE` on
/// PostgreSQL; nothing on SQLite, whose single writer already runs one job at a time.
pub fn for_update(tx: &dyn Tx) -> &'static str {
    match tx.engine() {
        Engine::Sqlite => "",
        Engine::Postgres => " FOR UPDATE",
    }
}

/// What ends a sweep's `SELECT` on PostgreSQL: lock the rows it takes (of `table` only,
/// when it joins others) and skip those another transaction holds, so two instances sweeping
/// at once each take different rows, and a row being settled right now is left to that
/// settle. Nothing on SQLite, where the sweep runs on the single writer.
pub fn skip_locked(tx: &dyn Tx, table: &str) -> String {
    match tx.engine() {
        Engine::Sqlite => String::new(),
        Engine::Postgres => format!(" FOR UPDATE OF {table} SKIP LOCKED"),
    }
}

/// The text at `key` of the JSON object in text column `column`, as an SQL expression.
pub fn json_text(tx: &dyn Tx, column: &str, key: &str) -> String {
    match tx.engine() {
        Engine::Sqlite => format!("json_extract({column}, '$.{key}')"),
        Engine::Postgres => format!("(CAST({column} AS jsonb) ->> '{key}')"),
    }
}

/// Makes jobs on PostgreSQL that name the same `parts` take turns, from here until commit (a
/// transaction-scoped advisory lock on a 64-bit digest of them): for a decision that depends
/// on a row that may not exist yet. Nothing on SQLite, whose single writer runs one job at a
/// time.
pub fn lock_key(tx: &dyn Tx, parts: &[&str]) -> Result<()> {
    if tx.engine() == Engine::Postgres {
        tx.advisory_lock(lock_digest(parts))?;
    }
    Ok(())
}

/// The 64-bit advisory lock key of `parts` ([`lock_key`]), for a job that asks its batch to
/// take it ([`crate::postgres::Postgres::run_keyed`]). Whoever takes several takes them in
/// ascending order.
pub fn lock_digest(parts: &[&str]) -> i64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0x1f]);
    }
    i64::from_be_bytes(h.finalize()[..8].try_into().expect("8 bytes"))
}

/// A statement with owned arguments, built now to run later ([`rows_after`]).
pub struct Statement {
    pub sql: String,
    pub args: Vec<Box<dyn ToValue>>,
}

impl Statement {
    pub fn new(sql: impl Into<String>, args: Vec<Box<dyn ToValue>>) -> Statement {
        Statement { sql: sql.into(), args }
    }

    fn arg_refs(&self) -> impl Iterator<Item = &dyn ToValue> {
        self.args.iter().map(|a| a.as_ref())
    }
}

/// Runs the writes `before`, then `sql`, and returns `sql`'s rows. On PostgreSQL that is one
/// statement, one round trip: each of `before` a data-modifying `WITH` part of `sql`. Every
/// part sees the database as it was when the statement began, so `sql` and the later parts
/// must not read what an earlier part writes (a foreign key to a row an earlier part inserts
/// is fine: constraints are checked when the statement ends). Placeholders are plain `?`.
/// On SQLite, where a statement leaves no process, each runs on its own, in order.
pub fn rows_after(tx: &dyn Tx, before: &[Statement], sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
    if before.is_empty() {
        return tx.rows(sql, args);
    }
    if tx.engine() == Engine::Sqlite {
        for s in before {
            tx.exec(&s.sql, &s.arg_refs().collect::<Vec<_>>())?;
        }
        return tx.rows(sql, args);
    }
    let parts: Vec<String> = before.iter().enumerate().map(|(i, s)| format!("w{i} AS ({})", s.sql)).collect();
    let all: Vec<&dyn ToValue> =
        before.iter().flat_map(Statement::arg_refs).chain(args.iter().copied()).collect();
    tx.rows(&format!("WITH {} {sql}", parts.join(", ")), &all)
}

/// `sql` with `?` and `?N` placeholders numbered the PostgreSQL way (`$N`); question marks
/// inside string literals stay.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let (mut next, mut quoted) = (1, false);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => quoted = !quoted,
            '?' if !quoted => {
                out.push('$');
                let mut digits = false;
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    out.push(d);
                    digits = true;
                }
                if !digits {
                    out.push_str(&next.to_string());
                    next += 1;
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// SQLite: the writer's (or a test's) connection, inside the transaction its owner opened.
mod sqlite {
    use rusqlite::types::{ToSqlOutput, ValueRef};

    use super::{Engine, Kind, Result, Row, ToValue, Tx, Value};

    struct Bind<'a>(Value<'a>);

    impl rusqlite::ToSql for Bind<'_> {
        fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
            Ok(ToSqlOutput::Borrowed(match &self.0 {
                Value::Null(_) => ValueRef::Null,
                Value::Int(n) => ValueRef::Integer(*n),
                Value::Real(x) => ValueRef::Real(*x),
                Value::Text(s) => ValueRef::Text(s.as_bytes()),
                Value::Blob(b) => ValueRef::Blob(b),
            }))
        }
    }

    fn binds<'a>(args: &'a [&'a dyn ToValue]) -> rusqlite::ParamsFromIter<impl Iterator<Item = Bind<'a>>> {
        rusqlite::params_from_iter(args.iter().map(|a| Bind(a.to_value())))
    }

    fn value(v: ValueRef<'_>) -> Value<'static> {
        match v {
            ValueRef::Null => Value::Null(Kind::Text),
            ValueRef::Integer(n) => Value::Int(n),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned().into()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec().into()),
        }
    }

    impl Tx for rusqlite::Connection {
        fn exec(&self, sql: &str, args: &[&dyn ToValue]) -> Result<u64> {
            crate::counts::in_job();
            Ok(self.prepare_cached(sql)?.execute(binds(args))? as u64)
        }

        fn rows(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Vec<Row>> {
            crate::counts::in_job();
            let mut st = self.prepare_cached(sql)?;
            let n = st.column_count();
            let mut rows = st.query(binds(args))?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(Row((0..n).map(|i| r.get_ref(i).map(value)).collect::<rusqlite::Result<_>>()?));
            }
            Ok(out)
        }

        fn row(&self, sql: &str, args: &[&dyn ToValue]) -> Result<Option<Row>> {
            crate::counts::in_job();
            let mut st = self.prepare_cached(sql)?;
            let n = st.column_count();
            let mut rows = st.query(binds(args))?;
            let Some(r) = rows.next()? else { return Ok(None) };
            Ok(Some(Row((0..n).map(|i| r.get_ref(i).map(value)).collect::<rusqlite::Result<_>>()?)))
        }

        fn engine(&self) -> Engine {
            Engine::Sqlite
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres_outside_string_literals() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ? AND c = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = $2"
        );
        assert_eq!(
            numbered("UPDATE t SET a = ?2 WHERE b = ?1 OR c = ?2"),
            "UPDATE t SET a = $2 WHERE b = $1 OR c = $2"
        );
        assert_eq!(
            numbered("SELECT '?' || ? FROM t WHERE x = 'it''s?'"),
            "SELECT '?' || $1 FROM t WHERE x = 'it''s?'"
        );
    }

    #[test]
    fn sqlite_values_read_back_as_written() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.exec("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)", &[]).unwrap();
        let none: Option<String> = None;
        let changed = c
            .exec("INSERT INTO t VALUES (?, ?, ?, ?, ?)", &[&-7i64, &1.5f64, &"é?", &vec![0u8, 255], &none])
            .unwrap();
        assert_eq!(changed, 1);
        let row = c.row("SELECT i, r, s, b, n FROM t", &[]).unwrap().expect("one row");
        assert_eq!(row.get::<i64>(0).unwrap(), -7);
        assert_eq!(row.get::<f64>(1).unwrap(), 1.5);
        assert_eq!(row.get::<String>(2).unwrap(), "é?");
        assert_eq!(row.get::<Vec<u8>>(3).unwrap(), vec![0, 255]);
        assert_eq!(row.get::<Option<String>>(4).unwrap(), None);
        assert_eq!(row.get::<String>(0).unwrap_err().code(), "storage_decode");
    }
}
