//! The storage engines behind the gateway. It owns the statement interface both engines run
//! ([`sql`]: `Tx`, `Row`, `Value`, one SQL text for SQLite and PostgreSQL), the text form of
//! stored values ([`stored`]) and the storage errors ([`Error`]), which carry no driver type.
//!
//! Guarantees: a value reads back as the Rust type it was written from on both engines; a
//! stored value that does not read back is an internal `corrupt_row` or `storage_decode`
//! error, never a default; an engine's failure keeps its kind (a unique violation, a conflict
//! that running the job again resolves, a driver failure) so callers branch on the kind, not
//! on the driver's words.
//!
//! It knows nothing of tenants, kits or verdicts: the gateway's domain sits above it and
//! turns an [`Error`] into its own with the same code.

mod error;
pub mod sql;
pub mod stored;

pub use error::{Error, Result, StoreError, StoreErrorKind, redact};
