//! The storage engines' errors without their drivers' types: what a caller may branch on (a
//! unique violation, a conflict that running the job again resolves, a failure of the driver
//! or its connection) and the driver's own words for the log. Neither `sqlx` nor `rusqlite`
//! appears in the gateway's public error.

/// What kind of storage failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// A UNIQUE or PRIMARY KEY constraint refused the statement.
    UniqueViolation,
    /// PostgreSQL refused the transaction (a serialization failure or a deadlock): running the
    /// whole job again resolves it.
    Conflict,
    /// The database refused the statement for another reason; the connection is still good.
    Database,
    /// The driver failed: the connection, the protocol or decoding. A pooled connection that
    /// gave this is not used again.
    Driver,
    /// A migration failed.
    Migration,
}

/// A storage failure: its kind and the driver's message.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

impl StoreError {
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        let kind = match &e {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreErrorKind::UniqueViolation,
            sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("40001" | "40P01")) => {
                StoreErrorKind::Conflict
            }
            sqlx::Error::Database(_) => StoreErrorKind::Database,
            _ => StoreErrorKind::Driver,
        };
        StoreError { kind, message: e.to_string() }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        let unique = matches!(&e, rusqlite::Error::SqliteFailure(f, _)
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY);
        let kind = if unique { StoreErrorKind::UniqueViolation } else { StoreErrorKind::Database };
        StoreError { kind, message: e.to_string() }
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> StoreError {
        StoreError { kind: StoreErrorKind::Migration, message: e.to_string() }
    }
}

/// Keeps passwords out of error messages for URLs like `postgres://user:pw@host/db`.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://…@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}
