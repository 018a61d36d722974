//! The reads behind the health gauges (holds pending, approvals waiting by age, each outbox
//! channel's depth and oldest row, budgets with money held, connector errors): counts across
//! the owners' tables, for every tenant or for one. Nothing here writes, and each read is one
//! statement, so a scrape costs the database a fixed handful of queries.

use chrono::{DateTime, Duration, Utc};

use crate::error::Result;
use crate::ids::TenantId;
use crate::sql::ToValue;
use crate::store::Store;

/// The age buckets of waiting approvals, with the age each one starts at.
pub const AGE_BUCKETS: [(&str, i64); 5] =
    [("under_5m", 0), ("5m_to_15m", 300), ("15m_to_1h", 900), ("1h_to_1d", 3_600), ("over_1d", 86_400)];

/// One outbox channel's queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutboxFigure {
    pub channel: String,
    pub depth: i64,
    /// Seconds the oldest queued row has waited, when one is queued.
    pub oldest_secs: Option<i64>,
}

/// ` AND tenant_id = ?` and its argument when scoped to one tenant.
fn scope(tenant: Option<&TenantId>) -> (&'static str, Vec<&dyn ToValue>) {
    match tenant {
        Some(t) => (" AND tenant_id = ?", vec![t as &dyn ToValue]),
        None => ("", Vec::new()),
    }
}

pub(crate) fn secs_since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<i64> {
    t.map(|t| (now - t).num_seconds().max(0))
}

/// Holds pending, and the money they hold (in units).
pub(crate) async fn holds_pending(store: &Store, tenant: Option<&TenantId>) -> Result<(i64, i64)> {
    let (and, args) = scope(tenant);
    let sql = format!(
        "SELECT COUNT(*), CAST(COALESCE(SUM(amount_units), 0) AS BIGINT) FROM holds WHERE status = 'pending'{and}"
    );
    Ok(store.one(&sql, &args).await?)
}

/// Governed calls whose connector or egress failed since `since`.
pub(crate) async fn connector_errors_since(
    store: &Store,
    tenant: Option<&TenantId>,
    since: DateTime<Utc>,
) -> Result<i64> {
    let (and, mut args) = scope(tenant);
    args.insert(0, &since);
    let sql = format!("SELECT COUNT(*) FROM activity WHERE verdict = 'unavailable' AND at >= ?{and}");
    let (n,): (i64,) = store.one(&sql, &args).await?;
    Ok(n)
}

pub(crate) async fn approvals_by_age(
    store: &Store,
    tenant: Option<&TenantId>,
    now: DateTime<Utc>,
) -> Result<(Vec<i64>, Option<DateTime<Utc>>)> {
    let (and, scoped) = scope(tenant);
    let starts: Vec<DateTime<Utc>> = AGE_BUCKETS.iter().map(|(_, s)| now - Duration::seconds(*s)).collect();
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
    let row = store.rows(&sql, &args).await?;
    let row = row.first().ok_or_else(|| crate::error::Error::internal("health_read", "no row"))?;
    let counts = (0..AGE_BUCKETS.len()).map(|i| row.get::<i64>(i)).collect::<::store::Result<Vec<_>>>()?;
    Ok((counts, row.get::<Option<DateTime<Utc>>>(AGE_BUCKETS.len())?))
}

pub(crate) async fn outbox_figure(
    store: &Store,
    tenant: Option<&TenantId>,
    channel: &str,
    now: DateTime<Utc>,
) -> Result<OutboxFigure> {
    let (and, scoped) = scope(tenant);
    let mut args: Vec<&dyn ToValue> = vec![&channel];
    args.extend(scoped);
    let (depth,): (i64,) = store
        .one(
            &format!(
                "SELECT CAST(COALESCE(SUM(queued), 0) AS BIGINT) FROM outbox_queues WHERE channel = ?{and}"
            ),
            &args,
        )
        .await?;
    let oldest: Option<(DateTime<Utc>,)> = store
        .opt(
            &format!(
                "SELECT created_at FROM outbox WHERE status = 'queued' AND channel = ?{and} ORDER BY seq LIMIT 1"
            ),
            &args,
        )
        .await?;
    Ok(OutboxFigure { channel: channel.into(), depth, oldest_secs: secs_since(oldest.map(|o| o.0), now) })
}

/// Each budget with money held: its tenant, profile, and posted plus pending money (in
/// units); the first `limit` of them.
pub(crate) async fn budgets_holding(
    store: &Store,
    tenant: Option<&TenantId>,
    limit: i64,
) -> Result<Vec<(String, String, i64)>> {
    let (and, args) = scope(tenant);
    let sql = format!(
        "SELECT tenant_id, profile_id, posted_units + pending_units FROM budget_accounts \
         WHERE profile_id IN (SELECT DISTINCT profile_id FROM holds WHERE status = 'pending'{and}) LIMIT {limit}"
    );
    Ok(store.all(&sql, &args).await?)
}

/// When the oldest log entry not yet archived was appended, of `tenant` or of any: the first
/// entry of each tenant after its last archived range.
pub(crate) async fn oldest_unarchived(
    store: &Store,
    tenant: Option<&TenantId>,
) -> Result<Option<DateTime<Utc>>> {
    let (and, args) = scope(tenant);
    let sql = format!(
        "SELECT MIN(a.at) FROM (SELECT id AS tenant_id FROM tenants) t JOIN activity a ON a.seq = \
           (SELECT MIN(seq) FROM activity WHERE tenant_id = t.tenant_id AND seq > COALESCE( \
             (SELECT MAX(last_seq) FROM archive_ranges r WHERE r.tenant_id = t.tenant_id AND r.archived_at IS NOT NULL), 0)) \
         WHERE 1 = 1{}",
        and.replace("tenant_id", "t.tenant_id")
    );
    let (at,): (Option<String>,) = store.one(&sql, &args).await?;
    Ok(at.map(|a| crate::stored::parse_ts(&a)).transpose()?)
}
