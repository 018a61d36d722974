//! The health figures an operator and a tenant's admin watch: holds pending, approvals
//! waiting by age, the outbox's depth and oldest row, budgets near their cap, connector
//! errors in the last hour. One function reads them, for every tenant (the scrape's gauges,
//! [`Gateway::scrape`]) or for one (the console's overview); nothing here writes.

use chrono::{DateTime, Duration, Utc};

use crate::Gateway;
use crate::audit::metrics::{Age, Channel, PoolState};
use crate::delivery::outbox::{RUNTIME, WEBHOOK};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};
use crate::sql::ToValue;

/// The age buckets of waiting approvals, with the age each one starts at.
pub const AGE_BUCKETS: [(&str, i64); 5] =
    [("under_5m", 0), ("5m_to_15m", 300), ("15m_to_1h", 900), ("1h_to_1d", 3_600), ("over_1d", 86_400)];

/// Budgets whose spent and held money reaches this share of their hard cap are "near" it.
pub const NEAR_CAP: f64 = 0.9;

/// The most budgets with money held whose caps one reading looks at.
const NEAR_CAP_SCAN: i64 = 1_000;

/// One outbox channel's queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutboxFigure {
    pub channel: String,
    pub depth: i64,
    /// Seconds the oldest queued row has waited, when one is queued.
    pub oldest_secs: Option<i64>,
}

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
}

/// ` AND tenant_id = ?` and its argument when scoped to one tenant.
fn scope(tenant: Option<&TenantId>) -> (&'static str, Vec<&dyn ToValue>) {
    match tenant {
        Some(t) => (" AND tenant_id = ?", vec![t as &dyn ToValue]),
        None => ("", Vec::new()),
    }
}

fn secs_since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<i64> {
    t.map(|t| (now - t).num_seconds().max(0))
}

impl Gateway {
    /// The health figures of `tenant`, or of every tenant when `None`.
    pub async fn health_figures(&self, tenant: Option<&TenantId>) -> Result<HealthFigures> {
        let now = Utc::now();
        let (and, args) = scope(tenant);
        let (holds_pending, holds_pending_units): (i64, i64) = self
            .store
            .one(
                &format!(
                    "SELECT COUNT(*), CAST(COALESCE(SUM(amount_units), 0) AS BIGINT) FROM holds \
                     WHERE status = 'pending'{and}"
                ),
                &args,
            )
            .await?;
        let (approvals_by_age, oldest) = self.approvals_by_age(tenant, now).await?;
        let mut outbox = Vec::with_capacity(2);
        for channel in [RUNTIME, WEBHOOK] {
            outbox.push(self.outbox_figure(tenant, channel, now).await?);
        }
        let hour_ago = now - Duration::hours(1);
        let mut errs = args.clone();
        errs.insert(0, &hour_ago);
        let (connector_errors_last_hour,): (i64,) = self
            .store
            .one(
                &format!("SELECT COUNT(*) FROM activity WHERE verdict = 'unavailable' AND at >= ?{and}"),
                &errs,
            )
            .await?;
        Ok(HealthFigures {
            holds_pending,
            holds_pending_units,
            budgets_near_cap: self.budgets_near_cap(tenant).await?,
            approvals_by_age,
            oldest_approval_secs: secs_since(oldest, now),
            outbox,
            connector_errors_last_hour,
        })
    }

    async fn approvals_by_age(
        &self,
        tenant: Option<&TenantId>,
        now: DateTime<Utc>,
    ) -> Result<(Vec<i64>, Option<DateTime<Utc>>)> {
        let (and, scoped) = scope(tenant);
        let starts: Vec<DateTime<Utc>> =
            AGE_BUCKETS.iter().map(|(_, s)| now - Duration::seconds(*s)).collect();
        // A row is in the last bucket whose start it is at or before.
        let cases: Vec<String> = (0..AGE_BUCKETS.len())
            .map(|i| {
                let younger = if i + 1 < AGE_BUCKETS.len() { " AND requested_at > ?" } else { "" };
                format!(
                    "CAST(COALESCE(SUM(CASE WHEN requested_at <= ?{younger} THEN 1 ELSE 0 END), 0) AS BIGINT)"
                )
            })
            .collect();
        let mut args: Vec<&dyn ToValue> = Vec::new();
        for i in 0..AGE_BUCKETS.len() {
            args.push(&starts[i]);
            if let Some(next) = starts.get(i + 1) {
                args.push(next);
            }
        }
        args.extend(scoped);
        let sql = format!(
            "SELECT {}, MIN(requested_at) FROM approvals WHERE status = 'pending'{and}",
            cases.join(", ")
        );
        let row = self.store.rows(&sql, &args).await?;
        let row = row.first().ok_or_else(|| crate::error::Error::internal("health_read", "no row"))?;
        let counts =
            (0..AGE_BUCKETS.len()).map(|i| row.get::<i64>(i)).collect::<::store::Result<Vec<_>>>()?;
        Ok((counts, row.get::<Option<DateTime<Utc>>>(AGE_BUCKETS.len())?))
    }

    async fn outbox_figure(
        &self,
        tenant: Option<&TenantId>,
        channel: &str,
        now: DateTime<Utc>,
    ) -> Result<OutboxFigure> {
        let (and, scoped) = scope(tenant);
        let mut args: Vec<&dyn ToValue> = vec![&channel];
        args.extend(scoped);
        let (depth,): (i64,) = self
            .store
            .one(
                &format!(
                    "SELECT CAST(COALESCE(SUM(queued), 0) AS BIGINT) FROM outbox_queues WHERE channel = ?{and}"
                ),
                &args,
            )
            .await?;
        let oldest: Option<(DateTime<Utc>,)> = self
            .store
            .opt(
                &format!(
                    "SELECT created_at FROM outbox WHERE status = 'queued' AND channel = ?{and} ORDER BY seq LIMIT 1"
                ),
                &args,
            )
            .await?;
        Ok(OutboxFigure { channel: channel.into(), depth, oldest_secs: secs_since(oldest.map(|o| o.0), now) })
    }

    /// Budgets with money held whose spent and held money is at least [`NEAR_CAP`] of their
    /// effective kit's hard cap (the first [`NEAR_CAP_SCAN`] of them).
    async fn budgets_near_cap(&self, tenant: Option<&TenantId>) -> Result<i64> {
        let (and, args) = scope(tenant);
        let rows: Vec<(String, String, i64)> = self
            .store
            .all(
                &format!(
                    "SELECT tenant_id, profile_id, posted_units + pending_units FROM budget_accounts \
                     WHERE profile_id IN (SELECT DISTINCT profile_id FROM holds WHERE status = 'pending'{and}) \
                     LIMIT {NEAR_CAP_SCAN}"
                ),
                &args,
            )
            .await?;
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
        for o in &h.outbox {
            let channel = if o.channel == RUNTIME { RUNTIME } else { WEBHOOK };
            f.outbox_depth.get_or_create(&Channel { channel }).set(o.depth);
            f.outbox_oldest_seconds.get_or_create(&Channel { channel }).set(o.oldest_secs.unwrap_or(0));
        }
        if let Some(pg) = self.store.postgres() {
            let retries = pg.stats().conflicts;
            f.pg_job_retries.inc_by(retries.saturating_sub(f.pg_job_retries.get()));
            let (open, idle, max) = pg.pool_use();
            for (state, n) in [("idle", idle), ("used", open - idle.min(open)), ("max", max)] {
                f.pg_pool.get_or_create(&PoolState { state }).set(i64::from(n));
            }
        }
        Ok(self.metrics.encode())
    }
}
