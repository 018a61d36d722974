//! The storage engines' errors without their drivers' types: what a caller may branch on (a
//! unique violation, a conflict that running the job again resolves, a failure of the driver
//! or its connection) and the driver's own words for the log. Neither `sqlx` nor `rusqlite`
//! appears in [`Error`], so none appears in the gateway's public error either.
//!
//! Each [`Error`] variant has its twin in the gateway's error, which takes it over with the
//! same stable code.

use std::path::PathBuf;

/// A failure of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Our failure (a write that did not commit, a value that does not read back): nothing
    /// was kept, and the same request may succeed when sent again.
    #[error("{message}")]
    Internal { code: &'static str, message: String },
    /// The store cannot serve this now (it is shutting down): send it again later.
    #[error("{message}")]
    Unavailable { code: &'static str, message: String, retry_after_secs: u32 },
    /// The caller asked for something the store refuses (an index query it cannot run).
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    #[error("unsupported database URL `{given}`: use one of {accepted} (for example sqlite://data/naive.db)")]
    UnsupportedDatabase { given: String, accepted: &'static str },
    #[error("cannot create the database directory {}: {source}", path.display())]
    DatabaseDirectory { path: PathBuf, source: std::io::Error },
    #[error("cannot open the database at {url}: {source}")]
    DatabaseOpen { url: String, source: StoreError },
    #[error("cannot migrate the database: {0}")]
    Migrate(StoreError),
    #[error("storage error: {0}")]
    Storage(StoreError),
}

impl Error {
    pub fn internal(code: &'static str, message: impl Into<String>) -> Error {
        Error::Internal { code, message: message.into() }
    }

    pub fn unavailable(code: &'static str, message: impl Into<String>, retry_after_secs: u32) -> Error {
        Error::Unavailable { code, message: message.into(), retry_after_secs }
    }

    pub fn invalid(code: &'static str, message: impl Into<String>) -> Error {
        Error::Invalid { code, message: message.into() }
    }

    /// The engine's failure kind, when the engine failed.
    pub fn storage_kind(&self) -> Option<StoreErrorKind> {
        match self {
            Error::Storage(e) => Some(e.kind()),
            _ => None,
        }
    }

    /// Whether a statement failed on a UNIQUE or PRIMARY KEY constraint, on either engine.
    pub fn is_unique_violation(&self) -> bool {
        self.storage_kind() == Some(StoreErrorKind::UniqueViolation)
    }

    /// The stable code the gateway shows for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Internal { code, .. } | Error::Unavailable { code, .. } | Error::Invalid { code, .. } => {
                code
            }
            Error::UnsupportedDatabase { .. } => "unsupported_database",
            Error::DatabaseDirectory { .. } | Error::DatabaseOpen { .. } | Error::Migrate(_) => {
                "database_unavailable"
            }
            Error::Storage(_) => "storage_error",
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Error {
        Error::Storage(e.into())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Storage(e.into())
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Error {
        Error::Migrate(e.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a job's error must be for the engines to run the job: built from a storage error (a
/// commit that failed, a runner that stopped), and telling a storage failure's kind, so that
/// PostgreSQL's runner runs the job again after a conflict. The gateway's error is one; so is
/// [`Error`].
pub trait JobError: From<Error> + Send + 'static {
    fn storage_kind(&self) -> Option<StoreErrorKind>;
}

impl JobError for Error {
    fn storage_kind(&self) -> Option<StoreErrorKind> {
        Error::storage_kind(self)
    }
}

/// What a job's caller hears once its transaction ended, on either engine: the job's own
/// result, unless the job never finished (`None`) or it succeeded and the transaction did not
/// commit (`commit_error`).
pub(crate) fn job_answer<T, E: JobError>(
    result: Option<Result<T, E>>,
    commit_error: Option<&str>,
) -> Result<T, E> {
    match (commit_error, result) {
        (_, None) => Err(E::from(Error::internal(
            "write_failed",
            "the write was rolled back after an internal error; try again",
        ))),
        (Some(e), Some(Ok(_))) => Err(E::from(Error::internal(
            "commit_failed",
            format!("the write did not commit ({e}); try again"),
        ))),
        (_, Some(r)) => r,
    }
}

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
