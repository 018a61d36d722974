//! `gateway`: the domain services every governed action passes through.
//!
//! It owns storage (sqlx) and calls `policy` for every decision. It knows nothing of HTTP:
//! the `/v1` API, MCP and the console's server functions are thin callers of [`Gateway`].
//!
//! - [`store`]: the storage boundary, chosen by URL scheme; [`writer`]: the single writer
//!   with group commit that every state change goes through.
//! - [`tenants`], [`users`], [`profiles`], [`kits`], [`keys`]: identities and policy documents.
//! - [`pipeline`]: the governed action pipeline; [`ledger`]: holds and balances;
//!   [`connectors`]: what carries actions out.
//! - [`approvals`], [`revoke`], [`brain`]: the human decisions.
//! - [`activity`], [`events`]: the tamper-evident log and the live bus.
//! - [`secrets`]: key tokens and password hashing; [`demo`]: the demo tenant.

pub mod activity;
pub mod approvals;
pub mod brain;
pub mod connectors;
mod db;
mod deferred;
pub mod demo;
pub mod error;
pub mod events;
pub mod idempotency;
pub mod ids;
pub mod keys;
pub mod kits;
pub mod ledger;
pub mod pipeline;
pub mod profiles;
pub mod revoke;
pub mod secrets;
pub mod sessions;
pub mod store;
pub mod tenants;
pub mod users;
pub mod writer;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

pub use error::{Error, Result};
pub use ids::{KeyId, ProfileId, TenantId, UserId};
pub use kits::KitRecord;
pub use profiles::{Profile, RuntimeState, TreeEntry};
pub use store::Store;
pub use tenants::{IssuedKey, Tenant};
pub use users::{ConsoleUser, Role};

use connectors::{Connectors, Sandbox};
use events::Bus;
use policy::{Catalog, Kit};
use writer::Writer;

/// Tunables, with the SPEC's defaults.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// How long a parked action waits for a human (SPEC §7: 15 minutes).
    pub approval_ttl_secs: i64,
    /// The most jobs committed together; 1 means one transaction per job.
    pub max_batch: usize,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig { approval_ttl_secs: 15 * 60, max_batch: writer::DEFAULT_MAX_BATCH }
    }
}

/// The gateway's services over one store. Cheap to clone; share one per process.
#[derive(Clone)]
pub struct Gateway {
    store: Store,
    writer: Writer,
    indexer: deferred::Indexer,
    bus: Bus,
    catalog: Arc<Catalog>,
    connectors: Connectors,
    sandbox: Arc<Sandbox>,
    config: GatewayConfig,
    /// Current kit versions by (tenant, name); replaced on every save through this process.
    kit_cache: Arc<RwLock<HashMap<(TenantId, String), Kit>>>,
    /// Each profile's ancestry with effective kits, for the hot path. Cleared on every kit
    /// save and revoke; the profile's status is re-read inside the deciding job regardless.
    links_cache: Arc<RwLock<HashMap<ProfileId, Arc<Vec<pipeline::Link>>>>>,
    /// Valid key tokens (by hash) to their subjects. Cleared on every key change.
    auth_cache: Arc<RwLock<HashMap<String, keys::CachedKey>>>,
}

/// Caches above this many entries are cleared rather than grown.
const MAX_CACHE_ENTRIES: usize = 100_000;

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Opens and migrates the database at `url`, with the default configuration.
    pub async fn open(url: &str) -> Result<Gateway> {
        Gateway::open_with(url, GatewayConfig::default()).await
    }

    pub async fn open_with(url: &str, config: GatewayConfig) -> Result<Gateway> {
        let store = Store::open(url).await?;
        let writer = Writer::start(&store, config.max_batch)?;
        let indexer = deferred::Indexer::start(&store)?;
        let sandbox = Arc::new(Sandbox::default());
        Ok(Gateway {
            store,
            writer,
            indexer,
            bus: Bus::default(),
            catalog: Arc::new(Catalog::builtin()),
            connectors: Connectors::sandbox(sandbox.clone()),
            sandbox,
            config,
            kit_cache: Arc::default(),
            links_cache: Arc::default(),
            auth_cache: Arc::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The live event bus.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The built-in sandbox connector, to inject latency or failures in tests.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Routes a primitive to another connector (for example [`connectors::Http`]).
    pub fn set_connector(&mut self, primitive: policy::Primitive, c: Arc<dyn connectors::Connector>) {
        self.connectors.set(primitive, c);
    }

    /// The writer's (commits, jobs) counters: jobs per commit is the group-commit batch size.
    pub fn writer_stats(&self) -> (u64, u64) {
        self.writer.stats()
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// Forgets every cached ancestry, after a change to kits or profile status.
    pub(crate) fn invalidate_links(&self) {
        self.links_cache.write().expect("links cache lock").clear();
    }

    /// Forgets every cached key, after a key is issued, rotated or revoked.
    pub(crate) fn invalidate_keys(&self) {
        self.auth_cache.write().expect("auth cache lock").clear();
    }
}
