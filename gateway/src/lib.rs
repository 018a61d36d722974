//! `gateway`: the domain services every governed action passes through.
//!
//! It owns storage (sqlx) and calls `policy` for every decision. It knows nothing of HTTP:
//! the `/v1` API, MCP and the console's server functions are thin callers of [`Gateway`].
//!
//! - [`store`]: the storage boundary (SQLite now, chosen by URL scheme).
//! - [`tenants`], [`users`], [`profiles`], [`kits`]: identities and policy documents.
//! - [`secrets`]: key tokens and password hashing.
//! - [`demo`]: the demo tenant for a first start.

pub mod demo;
pub mod error;
pub mod ids;
pub mod kits;
pub mod profiles;
pub mod secrets;
pub mod store;
pub mod tenants;
pub mod users;

pub use error::{Error, Result};
pub use ids::{KeyId, ProfileId, TenantId, UserId};
pub use kits::KitRecord;
pub use profiles::{Profile, RuntimeState, TreeEntry};
pub use store::Store;
pub use tenants::{IssuedKey, Tenant};
pub use users::{ConsoleUser, Role};

/// The gateway's services over one store. Cheap to clone; share one per process.
#[derive(Clone, Debug)]
pub struct Gateway {
    store: Store,
}

impl Gateway {
    /// Opens and migrates the database at `url`.
    pub async fn open(url: &str) -> Result<Gateway> {
        Ok(Gateway { store: Store::open(url).await? })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}
