//! `gateway`: the domain services every governed action passes through.
//!
//! It keeps its state through the `store` crate (re-exported as [`store`], with [`sql`], its
//! statement interface) and calls `policy` for every decision. It names no database driver
//! and knows nothing of HTTP: the `/v1` API, MCP and the console's server functions are thin
//! callers of [`Gateway`].
//!
//! The layers, lowest first; a module names only its own layer and those below
//! (`gateway/tests/tidy.rs` checks it, `docs/architecture.md` says why):
//! - below them all, the `store` crate: the engine chosen by URL scheme, the statement
//!   interface written once for both engines, SQLite's single writer with group commit,
//!   PostgreSQL's runners; with [`error`], [`ids`], [`cache`] and [`secrets`] beside it.
//! - [`audit`]: the tamper-evident log and the live bus.
//! - [`domain`]: the rules and their SQL, one owner per table: tenants, users, profiles, kits,
//!   keys, the pipeline's vocabulary, the ledger, approvals, the brain, the vault.
//! - [`delivery`]: what leaves the process, through one guarded client.
//! - [`ops`]: operations that compose several domains; the rest of `impl Gateway` moves
//!   there family by family.
//! - this file: [`Gateway`], its configuration, and `Gateway::write`, the one way to change
//!   state.

pub mod audit;
pub mod cache;
pub mod csv;
pub mod delivery;
pub mod domain;
pub mod error;
pub mod ids;
pub mod ops;
pub mod secrets;
pub use ::store;
pub use ::store::sql;
pub(crate) use ::store::stored;
#[doc(hidden)]
pub mod testing;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use domain::credentials::{Credential, Person};
pub use domain::keys::IssuedKey;
pub use domain::kits::KitRecord;
pub use domain::profiles::{Profile, RuntimeState, TreeEntry};
pub use domain::tenants::Tenant;
pub use domain::users::{ConsoleUser, Role};
pub use error::{Error, Result};
pub use ids::{KeyId, ProfileId, TenantId, TokenId, UserId};
pub use store::Store;

use audit::bus::{self, Bus};
use audit::{activity, pg_listen};
use cache::GenCache;
use delivery::connectors::{Sandbox, TenantConnectors};
use delivery::{egress, outbox, webhooks};
use domain::{chain, credentials, ledger, periods, users, vault};
use ops::upgrades;
use policy::{Catalog, Kit};
use store::writer::Writer;

/// Tunables, with the product's defaults.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// How long a parked action waits for a human (15 minutes by default).
    pub approval_ttl_secs: i64,
    /// The most jobs committed together; 1 means one transaction per job.
    pub max_batch: usize,
    /// How long a hold in flight stays leased to this instance without a renewal
    /// ([`leases`](crate::domain::ledger::leases)).
    pub hold_lease_secs: i64,
    /// The vault's master key. Without one the vault is locked: secrets cannot be stored or
    /// opened, so HTTP connectors that need one answer `unavailable`.
    pub master_key: Option<vault::MasterKey>,
    /// How the outbox retries deliveries.
    pub outbox: outbox::OutboxConfig,
    /// Where people reach the console, for the links in notifications.
    pub public_url: String,
    /// The internal addresses outbound calls may reach anyway ([`egress`]); none by default.
    pub egress_allow: egress::Allowance,
    /// Certificate authorities trusted for outbound https besides the system's (`--egress-ca`).
    pub egress_roots: Vec<reqwest::Certificate>,
    /// Slack's Web API ([`delivery::slack`]); the reference program's in tests.
    pub slack_api_url: String,
    /// How long an OAuth access token works, at most an hour ([`domain::oauth::ACCESS_SECS`]).
    pub oauth_access_secs: i64,
    /// Benchmarks only: outbound calls without the egress guard, to measure what it costs.
    #[doc(hidden)]
    pub egress_unguarded_for_benchmarks: bool,
    /// Where budget periods and rate windows read the time ([`periods::Clock`]).
    pub clock: periods::Clock,
    /// Whether the gateway counts what it does for `/metrics` ([`audit::metrics`]); on by
    /// default.
    pub metrics: bool,
    /// How often replays may run ([`ops::replay::ReplayLimits`]).
    pub replays: ops::replay::ReplayLimits,
    /// Where the log's archive is, for the messages that send people there
    /// ([`ops::archive`]); None when nothing is archived.
    pub archive_url: Option<String>,
    /// Tests only: how long the archiver waits after storing each object of a range, so a
    /// crash test can kill it between the data object, the manifest and the record.
    #[doc(hidden)]
    pub archive_pause_ms: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            approval_ttl_secs: 15 * 60,
            max_batch: store::writer::DEFAULT_MAX_BATCH,
            hold_lease_secs: ledger::leases::DEFAULT_LEASE_SECS,
            master_key: None,
            outbox: outbox::OutboxConfig::default(),
            public_url: "http://127.0.0.1:3000".into(),
            egress_allow: egress::Allowance::default(),
            egress_roots: Vec::new(),
            oauth_access_secs: domain::oauth::ACCESS_SECS,
            slack_api_url: delivery::slack::DEFAULT_API_URL.into(),
            egress_unguarded_for_benchmarks: false,
            clock: periods::Clock::System,
            metrics: true,
            replays: ops::replay::ReplayLimits::default(),
            archive_url: None,
            archive_pause_ms: 0,
        }
    }
}

/// Each kit's shadow draft, or none, by tenant and kit name.
type Shadows = GenCache<(TenantId, String), Option<Arc<Kit>>>;

/// The gateway's services over one store. Cheap to clone (one reference count: every request
/// takes a clone, through axum's state and the MCP SDK's service factory); share one per
/// process.
#[derive(Clone)]
pub struct Gateway(Arc<Services>);

impl std::ops::Deref for Gateway {
    type Target = Services;
    fn deref(&self) -> &Services {
        &self.0
    }
}

/// What a [`Gateway`] shares between its clones. Reached through the gateway's methods only.
#[doc(hidden)]
pub struct Services {
    store: Store,
    writes: Writes,
    /// SQLite's per-profile index builder ([`store::profile_index`]); PostgreSQL indexes in place.
    indexer: Option<store::profile_index::Indexer>,
    /// Publishes what other instances commit ([`bus`]); `None` for an in-memory database.
    _follower: Option<bus::Follower>,
    bus: Bus,
    catalog: Arc<Catalog>,
    sandbox: Arc<Sandbox>,
    /// Each tenant's connectors, built from its settings with their credentials opened.
    connector_cache: Arc<GenCache<TenantId, Arc<TenantConnectors>>>,
    /// The one guarded client for every call to a place a tenant configured ([`egress`]).
    egress: egress::Egress,
    vault: vault::Vault,
    /// The OpenID providers tenants sign in with: discovery and keys, cached ([`delivery::oidc`]).
    oidc: delivery::oidc::Providers,
    /// The OAuth clients' metadata documents, cached ([`delivery::client_metadata`]).
    oauth_clients: delivery::client_metadata::ClientDocuments,
    config: GatewayConfig,
    /// The holds this instance carries out, and its leases on them.
    leases: Arc<ledger::leases::Leases>,
    /// Current kit versions by (tenant, name). Invalidated on every save; a deciding job
    /// checks the versions it used against the database regardless.
    kit_cache: Arc<GenCache<(TenantId, String), Kit>>,
    /// Each kit's shadow draft, or none ([`domain::shadow`]). Invalidated on every start,
    /// discard and promotion, here and (through their log entries) on every instance.
    shadow_cache: Arc<Shadows>,
    /// The replays running and each caller's budget of them ([`ops::replay::ReplayLimits`]).
    replays: ops::replay::ReplayMeter,
    /// Each profile's ancestry with effective kits, for the hot path. Invalidated on every
    /// kit save and revoke; statuses are re-read inside the deciding job regardless.
    links_cache: Arc<GenCache<ProfileId, Arc<Vec<chain::Link>>>>,
    /// Each tenant's calendar and rate limit. Invalidated on every settings save; a deciding
    /// job checks them against the database regardless.
    clock_cache: Arc<GenCache<TenantId, Arc<periods::TenantClock>>>,
    /// Valid key tokens (by hash) to their credentials. Invalidated on every key change.
    auth_cache: Arc<GenCache<String, credentials::CachedKey>>,
    /// Ticks when a credential may have stopped being valid (see [`credentials`]).
    credential_epoch: Arc<tokio::sync::watch::Sender<u64>>,
    visibility_epoch: Arc<tokio::sync::watch::Sender<u64>>,
    /// Which tenants' agents may see or hold something else since a signal, so a watcher of
    /// one tenant's agent skips the others' changes ([`Gateway::agent_changes`]).
    agent_marks: Arc<cache::ChangeMarks>,
    /// Test hook: how long a cache fill waits between its read and its insert.
    cache_fill_pause_ms: Arc<AtomicU64>,
    /// Where each tenant's audit chain was last verified intact, so the console hashes only
    /// what is new.
    chain_marks: Arc<std::sync::Mutex<std::collections::HashMap<TenantId, activity::ChainMark>>>,
    /// Bounds concurrent argon2 verifications ([`users::MAX_PASSWORD_CHECKS`]).
    password_checks: Arc<tokio::sync::Semaphore>,
    /// Verifications running now, and the most that ever ran at once.
    password_checks_running: Arc<std::sync::atomic::AtomicUsize>,
    password_check_peak: Arc<std::sync::atomic::AtomicUsize>,
    /// Wakes the outbox's delivery worker ([`outbox::delivery`]).
    outbox_wake: Arc<tokio::sync::Notify>,
    /// What `/metrics` exposes ([`audit::metrics`]).
    metrics: Arc<audit::metrics::Metrics>,
}

/// `writer`, telling `metrics` of every batch it commits.
fn observed(writer: Writer, metrics: &Arc<audit::metrics::Metrics>) -> Writer {
    if metrics.get().is_some() {
        let m = metrics.clone();
        writer.observe(move |jobs, took| m.writer_batch(jobs, took));
    }
    writer
}

/// Where jobs run.
enum Writes {
    Sqlite(Writer),
    /// Jobs in batches on runner threads, whose log entries [`pg_listen::Announcer`] announces.
    Postgres {
        pg: store::postgres::Postgres,
    },
}

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
        let bus = Bus::default();
        let metrics = Arc::new(if config.metrics {
            audit::metrics::Metrics::on()
        } else {
            audit::metrics::Metrics::off()
        });
        let (writes, indexer, follower) = match store.postgres() {
            Some(pg) => {
                let instance: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
                pg_listen::start(pg.clone(), bus.clone(), instance.to_string());
                let announcer = pg_listen::Announcer::new(instance.clone());
                pg.set_journal(Arc::new(domain::reserve::book::Keeping::new(announcer)));
                (Writes::Postgres { pg: pg.clone() }, None, None)
            }
            None => (
                Writes::Sqlite(observed(Writer::start(&store, config.max_batch, bus.clone())?, &metrics)),
                Some(store::profile_index::Indexer::start(&store)?),
                bus::start_follower(&store, bus.clone())?,
            ),
        };
        let sandbox = Arc::new(Sandbox::default());
        let gateway = Gateway(Arc::new(Services {
            store,
            writes,
            indexer,
            _follower: follower,
            bus,
            catalog: Arc::new(Catalog::builtin()),
            sandbox,
            connector_cache: Arc::default(),
            egress: if config.egress_unguarded_for_benchmarks {
                egress::Egress::unguarded_for_benchmarks()
            } else {
                egress::Egress::trusting(config.egress_allow.clone(), config.egress_roots.clone())
            },
            vault: vault::Vault::new(config.master_key.clone()),
            oidc: Default::default(),
            oauth_clients: Default::default(),
            leases: Arc::new(ledger::leases::Leases::new(config.hold_lease_secs)),
            config,
            kit_cache: Arc::default(),
            shadow_cache: Arc::default(),
            replays: Default::default(),
            links_cache: Arc::default(),
            clock_cache: Arc::default(),
            auth_cache: Arc::default(),
            credential_epoch: Arc::new(tokio::sync::watch::channel(0).0),
            visibility_epoch: Arc::new(tokio::sync::watch::channel(0).0),
            agent_marks: Arc::default(),
            cache_fill_pause_ms: Arc::default(),
            chain_marks: Arc::default(),
            password_checks: Arc::new(tokio::sync::Semaphore::new(users::MAX_PASSWORD_CHECKS)),
            password_checks_running: Arc::default(),
            password_check_peak: Arc::default(),
            outbox_wake: Arc::default(),
            metrics,
        }));
        gateway.forget_what_changed_elsewhere();
        if let Some(master) = gateway.config.master_key.clone() {
            gateway.write(move |c| vault::check_master(c, &master)).await?;
        }
        let upgraded = gateway.write(upgrades::run).await?;
        if upgraded > 0 {
            tracing::info!(upgraded, "carried out the database's pending data upgrades");
        }
        Ok(gateway)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// What this gateway counts for `/metrics`.
    pub fn metrics(&self) -> &audit::metrics::Metrics {
        &self.metrics
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

    /// Indexes the newest rows now rather than at the indexer's next interval (for tests and
    /// benchmarks; reads are correct either way). PostgreSQL indexes in place.
    pub async fn index_recent(&self) -> Result<()> {
        match &self.indexer {
            Some(indexer) => Ok(indexer.catch_up().await?),
            None => Ok(()),
        }
    }

    /// The (commits, jobs) counters of the SQLite writer or the PostgreSQL runners: jobs per
    /// commit is the group-commit batch size.
    pub fn writer_stats(&self) -> (u64, u64) {
        match &self.writes {
            Writes::Sqlite(w) => w.stats(),
            Writes::Postgres { pg } => {
                let r = pg.stats();
                (r.transactions, r.jobs)
            }
        }
    }

    /// Runs an empty job through the writer (SQLite) or a runner (PostgreSQL): `Ok` when
    /// writes go through, for readiness.
    pub async fn writer_answers(&self) -> Result<()> {
        self.write(|_| Ok(())).await
    }

    /// Runs the job `f` atomically on the store's engine: on SQLite's single writer with
    /// group commit, on PostgreSQL in a transaction of its own (again after a conflict).
    /// Either way `f` may run more than once, and its caller hears back only after COMMIT,
    /// when what it appended to the log is on the bus.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&dyn sql::Tx) -> Result<T> + Send + 'static,
    {
        let (v, queued) = match &self.writes {
            Writes::Sqlite(w) => w.run(move |c| with_webhooks(c, &f)).await,
            Writes::Postgres { pg } => pg.run(move |tx| with_webhooks(tx, &f)).await,
        }?;
        self.wake_if(queued);
        Ok(v)
    }

    /// Wakes the delivery worker when a job's entries queued notifications, once they are
    /// committed, so they leave now rather than at the worker's next poll.
    fn wake_if(&self, queued: bool) {
        if queued {
            self.wake_delivery();
        }
    }

    /// [`Gateway::write`] for a job that changes `tenant`'s accounts, holds or log (a governed
    /// call, its settling, a decision on it). On PostgreSQL it joins a batch of that tenant's
    /// jobs that takes the tenant's lock once, before its first job, and commits once
    /// ([`activity::lock_tenant`]); SQLite batches every job anyway.
    ///
    /// Not an `async fn`: one would hold `f` as its argument and again in the job it awaits,
    /// and a governed call's future holds this one.
    pub(crate) fn write_for<T, F>(
        &self,
        tenant: &TenantId,
        f: F,
    ) -> impl Future<Output = Result<T>> + Send + use<'_, T, F>
    where
        T: Send + 'static,
        F: Fn(&dyn sql::Tx) -> Result<T> + Send + 'static,
    {
        self.write_wanting(tenant, None, f)
    }

    /// [`Gateway::write_for`] for a governed call that says what it will read (`want`): on
    /// PostgreSQL its batch reads what all its calls want in one statement before the first
    /// runs ([`crate::domain::reserve::book`]).
    pub(crate) fn write_wanting<T, F>(
        &self,
        tenant: &TenantId,
        want: Option<crate::domain::reserve::book::Want>,
        f: F,
    ) -> impl Future<Output = Result<T>> + Send + use<'_, T, F>
    where
        T: Send + 'static,
        F: Fn(&dyn sql::Tx) -> Result<T> + Send + 'static,
    {
        use futures_util::FutureExt as _;
        let job = match &self.writes {
            Writes::Sqlite(w) => w.run(move |c| with_webhooks(c, &f)).left_future(),
            Writes::Postgres { pg } => {
                let key = activity::tenant_key(tenant);
                let job = move |tx: &dyn sql::Tx| with_webhooks(tx, &f);
                match want {
                    Some(w) => pg.run_keyed_hinted(key, Box::new(w), job).left_future(),
                    None => pg.run_keyed(key, job).right_future(),
                }
                .right_future()
            }
        };
        job.map(move |done| {
            let (v, queued) = done?;
            self.wake_if(queued);
            Ok(v)
        })
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// Refuses a setting's URL that points into the operator's network
    /// (`400 egress_refused`), unless the operator allowed it.
    pub(crate) async fn check_egress(&self, url: &url::Url) -> Result<()> {
        self.egress.check_setting(url).await
    }

    /// This instance's leases on the holds it is carrying out.
    pub fn leases(&self) -> &ledger::leases::Leases {
        &self.leases
    }

    /// Forgets every cached ancestry, after a change to kits or profile status, and tells
    /// whoever shows a profile what it may use (an MCP session's tool list) to look again.
    pub(crate) fn invalidate_links(&self) {
        self.links_cache.invalidate();
        self.visibility_epoch.send_modify(|n| *n += 1);
    }

    /// Notes that what `tenant`'s agents may see or hold changed (a kit, a revoke, an agent
    /// key); `None` when it may be any tenant's (a change another instance made).
    pub(crate) fn agents_changed(&self, tenant: Option<&TenantId>) {
        self.agent_marks.bump(tenant);
    }

    /// A mark that moves only when `tenant`'s agents may see or hold something else: a
    /// watcher woken by [`Gateway::visibility_changes`] or [`Gateway::credential_changes`]
    /// reads the database again only when its tenant's mark moved.
    pub fn agent_changes(&self, tenant: &TenantId) -> (u64, u64) {
        self.agent_marks.of(tenant)
    }

    /// A receiver that changes whenever a kit or a profile's status changed, so what some
    /// profile may see may have changed.
    pub fn visibility_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.visibility_epoch.subscribe()
    }

    /// Drops the cached keys, kits, ancestries and connectors whenever another instance commits a change
    /// to them (a key, kit, profile, revoke or token entry the follower brought in), so it governs
    /// this instance's next decision; until the task runs, the caches' bounded age applies.
    fn forget_what_changed_elsewhere(&self) {
        let services = Arc::downgrade(&self.0);
        let mut changes = self.bus.access_changes();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let Some(s) = services.upgrade() else { return };
                let gw = Gateway(s);
                gw.kit_cache.invalidate();
                gw.shadow_cache.invalidate();
                gw.clock_cache.invalidate();
                gw.agents_changed(None);
                gw.invalidate_links();
                gw.invalidate_keys();
                gw.all_connectors_changed();
            }
        });
    }

    /// Forgets every cached key, after a key is rotated or revoked, and tells every stream
    /// holding a credential to check it again.
    pub(crate) fn invalidate_keys(&self) {
        self.auth_cache.invalidate();
        self.credentials_changed();
    }

    /// Test hook: makes every cache fill wait `pause` between its database read and its
    /// insert, so a test can land an invalidation in between. Zero turns it off.
    #[doc(hidden)]
    pub fn pause_cache_fills(&self, pause: std::time::Duration) {
        self.cache_fill_pause_ms.store(pause.as_millis() as u64, Ordering::Relaxed);
    }

    pub(crate) async fn cache_fill_pause(&self) {
        let ms = self.cache_fill_pause_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }
}

/// Runs the job `f`, then queues in the same transaction the webhook events of every log
/// entry it appended (and of any entry that queuing appends in turn): no entry is committed
/// without its notifications, and appending an entry does nothing but append it. Says whether
/// it queued any (webhook or Slack messages).
fn with_webhooks<T>(c: &dyn sql::Tx, f: &dyn Fn(&dyn sql::Tx) -> Result<T>) -> Result<(T, bool)> {
    let mut next = activity::appended::len();
    let v = f(c)?;
    let mut queued = false;
    loop {
        let entries = activity::appended::since(next);
        if entries.is_empty() {
            return Ok((v, queued));
        }
        next += entries.len();
        for e in &entries {
            queued |= webhooks::on_entry(c, e)?;
            queued |= delivery::slack::on_entry(c, e)?;
        }
    }
}
