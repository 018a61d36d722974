//! The health figures an operator and a tenant's admin watch: holds pending, approvals
//! waiting by age, the outbox's depth and oldest row, budgets near their cap, connector
//! errors in the last hour, the archive's and the log streams' lag. One function reads them, for every tenant (the scrape's gauges,
//! [`Gateway::scrape`]) or for one (the console's overview); nothing here writes.

use chrono::{Duration, Utc};

use crate::Gateway;
use crate::audit::gauges;
pub use crate::audit::gauges::{AGE_BUCKETS, OutboxFigure};
use crate::audit::metrics::{Age, Channel, PoolState};
use crate::delivery::outbox::{CHANNELS, label};
pub use crate::delivery::streams::StreamFigures;
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};

/// Budgets whose spent and held money reaches this share of their hard cap are "near" it.
pub const NEAR_CAP: f64 = 0.9;

/// The most budgets with money held whose caps one reading looks at.
const NEAR_CAP_SCAN: i64 = 1_000;

/// What [`Gateway::health_figures`] reads.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HealthFigures {
    pub holds_pending: i64,
    pub holds_pending_units: i64,
    pub budgets_near_cap: i64,
    /// Waiting approvals per [`AGE_BUCKETS`] bucket, in its order.
    pub approvals_by_age: Vec<i64>,
    pub oldest_approval_secs: Option<i64>,
    pub outbox: Vec<OutboxFigure>,
    /// Governed calls whose connector or egress failed in the last hour.
    pub connector_errors_last_hour: i64,
    /// Seconds since the oldest log entry not yet archived was appended; None without an
    /// archive, or with every entry archived.
    #[serde(default)]
    pub oldest_unarchived_secs: Option<i64>,
    /// How far behind the log streams are (docs/streams.md).
    #[serde(default)]
    pub streams: StreamFigures,
}

impl Gateway {
    /// The health figures of `tenant`, or of every tenant when `None`.
    pub async fn health_figures(&self, tenant: Option<&TenantId>) -> Result<HealthFigures> {
        let now = Utc::now();
        let (holds_pending, holds_pending_units) = gauges::holds_pending(&self.store, tenant).await?;
        let (approvals_by_age, oldest) = gauges::approvals_by_age(&self.store, tenant, now).await?;
        let mut outbox = Vec::with_capacity(CHANNELS.len());
        for channel in CHANNELS {
            outbox.push(gauges::outbox_figure(&self.store, tenant, channel, now).await?);
        }
        let since = now - Duration::hours(1);
        Ok(HealthFigures {
            holds_pending,
            holds_pending_units,
            budgets_near_cap: self.budgets_near_cap(tenant).await?,
            approvals_by_age,
            oldest_approval_secs: gauges::secs_since(oldest, now),
            outbox,
            connector_errors_last_hour: gauges::connector_errors_since(&self.store, tenant, since).await?,
            oldest_unarchived_secs: match self.config.archive_url {
                Some(_) => gauges::secs_since(gauges::oldest_unarchived(&self.store, tenant).await?, now),
                None => None,
            },
            streams: crate::delivery::streams::figures(&self.store, tenant, self.now()).await?,
        })
    }

    /// Budgets with money held whose spent and held money is at least [`NEAR_CAP`] of their
    /// effective kit's hard cap (the first [`NEAR_CAP_SCAN`] of them).
    async fn budgets_near_cap(&self, tenant: Option<&TenantId>) -> Result<i64> {
        let rows = gauges::budgets_holding(&self.store, tenant, NEAR_CAP_SCAN).await?;
        let mut near = 0;
        for (tenant, profile, used) in rows {
            let links = self.cached_links(&TenantId::from_db(tenant), &ProfileId::from_db(profile)).await?;
            if let Some(cap) = links[0].kit.limits.budget.hard_cap
                && used as f64 >= cap.units() as f64 * NEAR_CAP
            {
                near += 1;
            }
        }
        Ok(near)
    }

    /// The Prometheus text exposition: what the gateway counted, and the gauges read now
    /// across every tenant. Empty when metrics are off.
    pub async fn scrape(&self) -> Result<String> {
        let Some(f) = self.metrics.get() else { return Ok(String::new()) };
        let h = self.health_figures(None).await?;
        f.holds_pending.set(h.holds_pending);
        f.holds_pending_cents.set(h.holds_pending_units / (policy::money::UNITS_PER_DOLLAR / 100));
        f.budgets_near_cap.set(h.budgets_near_cap);
        for ((age, _), n) in AGE_BUCKETS.iter().zip(&h.approvals_by_age) {
            f.approvals_waiting.get_or_create(&Age { age }).set(*n);
        }
        f.approval_oldest_seconds.set(h.oldest_approval_secs.unwrap_or(0));
        f.archive_oldest_unarchived_seconds.set(h.oldest_unarchived_secs.unwrap_or(0));
        f.stream_lag_entries.set(h.streams.lag_entries);
        f.stream_lag_seconds.set(h.streams.lag_secs);
        f.streams_failing.set(h.streams.failing);
        f.stream_dead_letters.set(h.streams.dead_letters);
        for o in &h.outbox {
            let channel = label(&o.channel);
            f.outbox_depth.get_or_create(&Channel { channel }).set(o.depth);
            f.outbox_oldest_seconds.get_or_create(&Channel { channel }).set(o.oldest_secs.unwrap_or(0));
        }
        if let Some(pg) = self.store.postgres() {
            let stats = pg.stats();
            f.pg_job_retries.inc_by(stats.conflicts.saturating_sub(f.pg_job_retries.get()));
            f.pg_batches.inc_by(stats.transactions.saturating_sub(f.pg_batches.get()));
            f.pg_batch_jobs.inc_by(stats.keyed_jobs.saturating_sub(f.pg_batch_jobs.get()));
            let held = stats.keys_held_ns as f64 / 1e9;
            f.pg_tenant_lock_held_seconds.inc_by((held - f.pg_tenant_lock_held_seconds.get()).max(0.0));
            let (open, idle, max) = pg.pool_use();
            for (state, n) in [("idle", idle), ("used", open - idle.min(open)), ("max", max)] {
                f.pg_pool.get_or_create(&PoolState { state }).set(i64::from(n));
            }
        }
        Ok(self.metrics.encode())
    }
}
