//! The storage engines behind the gateway. It owns the statement interface both engines run
//! ([`sql`]: `Tx`, `Row`, `Value`, one SQL text for SQLite and PostgreSQL), [`Store`] chosen
//! by the URL's scheme, SQLite's single [`writer`] and its per-profile [`profile_index`],
//! PostgreSQL's job runners ([`postgres`]), both engines' migrations (`migrations/`), the text
//! form of stored values ([`stored`]) and the storage errors ([`Error`]), which carry no
//! driver type.
//!
//! Guarantees: a job's writes commit together or not at all, and its caller hears back only
//! after COMMIT, on either engine; a value reads back as the Rust type it was written from on
//! both engines; a stored value that does not read back is an internal `corrupt_row` or
//! `storage_decode` error, never a default; an engine's failure keeps its kind (a unique
//! violation, a conflict that running the job again resolves, a driver failure) so callers
//! branch on the kind, not on the driver's words.
//!
//! It knows nothing of tenants, kits or verdicts: the gateway's domain sits above it, writes
//! its jobs against [`sql::Tx`] and turns an [`Error`] into its own with the same code. Only
//! this crate names `rusqlite` or `sqlx`.

pub mod counts;
mod database;
mod error;
pub mod postgres;
pub mod profile_index;
mod reads;
pub mod seeding;
pub mod sql;
pub mod sqlite_memory;
pub mod stored;
pub mod testing;
pub mod writer;

pub use database::{ACCEPTED_SCHEMES, Store, migrate_postgres};
pub use error::{Error, JobError, Result, StoreError, StoreErrorKind, redact};
