//! The gateway's one error type. Each variant maps to a stable code that every transport
//! shows unchanged, so a client can branch on `code` and a human can read `message`.

pub use ::store::{StoreError, StoreErrorKind};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The thing does not exist in the caller's tenant (never "exists elsewhere").
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The request is malformed; `code` is stable, `message` says what to do.
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// The credential is missing, malformed, unknown, revoked or expired.
    #[error("{message}")]
    Unauthenticated { message: String },
    /// The caller is known but may not do this.
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    /// Our failure, not the caller's (a write that did not commit, data that does not read
    /// back): nothing was kept, and the same request may succeed when sent again.
    #[error("{message}")]
    Internal { code: &'static str, message: String },
    /// The gateway cannot serve this now (it is shutting down, a part of it has stopped):
    /// nothing was done; send the same request again after `retry_after_secs`.
    #[error("{message}")]
    Unavailable { code: &'static str, message: String, retry_after_secs: u32 },
    /// The caller asks for this more often than it may (an expensive read): nothing was done;
    /// ask again after `retry_after_secs`. Not a failure of ours, and never kept as an answer.
    #[error("{message}")]
    Throttled { code: &'static str, message: String, retry_after_secs: u32 },
    /// The database could not be opened or migrated, or a statement failed: the store's own
    /// error, with its code (`unsupported_database`, `database_unavailable`, `storage_error`).
    #[error(transparent)]
    Store(::store::Error),
    /// The vault's master key is not the one the database was sealed with.
    #[error(
        "the master key ({given}) is not the one this database's vault was sealed with ({expected}); start with that key (NAIVE_MASTER_KEY or the key file)"
    )]
    MasterKeyMismatch { given: String, expected: String },
}

/// A storage failure becomes the gateway's twin variant, with the same code.
impl From<::store::Error> for Error {
    fn from(e: ::store::Error) -> Error {
        use ::store::Error as S;
        match e {
            S::Internal { code, message } => Error::Internal { code, message },
            S::Unavailable { code, message, retry_after_secs } => {
                Error::Unavailable { code, message, retry_after_secs }
            }
            S::Invalid { code, message } => Error::Invalid { code, message },
            e => Error::Store(e),
        }
    }
}

/// A job the store's engines run answers with the gateway's error: a conflict PostgreSQL
/// reports is told by its storage kind, and the job runs again.
impl ::store::JobError for Error {
    fn storage_kind(&self) -> Option<StoreErrorKind> {
        match self {
            Error::Store(e) => e.storage_kind(),
            _ => None,
        }
    }
}

impl Error {
    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::Invalid { code, .. }
            | Error::Conflict { code, .. }
            | Error::Forbidden { code, .. }
            | Error::Internal { code, .. }
            | Error::Unavailable { code, .. }
            | Error::Throttled { code, .. } => code,
            Error::Unauthenticated { .. } => "invalid_key",
            Error::Store(e) => e.code(),
            Error::MasterKeyMismatch { .. } => "master_key_mismatch",
        }
    }

    pub fn invalid(code: &'static str, message: impl Into<String>) -> Error {
        Error::Invalid { code, message: message.into() }
    }

    pub fn internal(code: &'static str, message: impl Into<String>) -> Error {
        Error::Internal { code, message: message.into() }
    }

    pub fn unavailable(code: &'static str, message: impl Into<String>, retry_after_secs: u32) -> Error {
        Error::Unavailable { code, message: message.into(), retry_after_secs }
    }

    /// Whether a statement failed on a UNIQUE or PRIMARY KEY constraint, on either engine.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Store(e) if e.is_unique_violation())
    }

    /// Whether this is the gateway's own failure (a 5xx), which a caller may retry and which
    /// is never stored as an answer.
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            Error::Internal { .. }
                | Error::Unavailable { .. }
                | Error::Store(_)
                | Error::MasterKeyMismatch { .. }
        )
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
