//! Tenants and company keys.
//!
//! Guarantees: a tenant is created together with its permissive "Default" kit and one company
//! key, in one transaction, so a tenant never exists half set up. The company key's token is
//! returned once and only its hash is kept.

use chrono::{DateTime, Utc};
use policy::{Kit, KitDiff, Money};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::keys::KeyTable;
use crate::domain::periods::{Calendar, TenantClock, TenantRate};
use crate::error::{Error, Result};
use crate::ids::{KeyId, TenantId};
use crate::secrets::MintedKey;
use crate::sql::{Tx, for_update};
use crate::store::Store;
use crate::stored;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    /// Platform credits left.
    pub credit: Money,
    pub created_at: DateTime<Utc>,
}

/// The longest tenant name we accept.
pub(crate) const MAX_NAME_LEN: usize = 120;

/// A company key as listed: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CompanyKeyInfo {
    pub id: KeyId,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    /// Set when rotated with a grace period: the key works until then.
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

const COMPANY_KEY_COLUMNS: &str = "id, prefix, created_at, last_used_at, expires_at, revoked_at";

/// A row of [`COMPANY_KEY_COLUMNS`].
impl crate::sql::FromRow for CompanyKeyInfo {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<CompanyKeyInfo> {
        Ok(CompanyKeyInfo {
            id: r.get(0)?,
            prefix: r.get(1)?,
            created_at: r.get(2)?,
            last_used_at: r.get(3)?,
            expires_at: r.get(4)?,
            revoked_at: r.get(5)?,
        })
    }
}

/// A tenant's company keys, newest first.
pub(crate) async fn company_keys(store: &Store, tenant: &TenantId) -> Result<Vec<CompanyKeyInfo>> {
    let sql = format!(
        "SELECT {COMPANY_KEY_COLUMNS} FROM company_keys WHERE tenant_id = ? ORDER BY created_at DESC, id"
    );
    Ok(store.all(&sql, &[tenant]).await?)
}

/// One of a tenant's company keys.
pub(crate) async fn company_key(
    store: &Store,
    tenant: &TenantId,
    id: &KeyId,
) -> Result<Option<CompanyKeyInfo>> {
    let sql = format!("SELECT {COMPANY_KEY_COLUMNS} FROM company_keys WHERE tenant_id = ? AND id = ?");
    Ok(store.opt(&sql, &[tenant, id]).await?)
}

/// A new company key; with `old`, the key it replaces ends (after its grace period).
pub(crate) fn issue_company_key(
    tx: &dyn Tx,
    t: &TenantId,
    kid: &KeyId,
    k: &MintedKey,
    old: Option<&(KeyId, i64)>,
    actor: &str,
) -> Result<activity::Entry> {
    insert_company_key(tx, t, kid, k, &stored::ts(Utc::now()))?;
    let e = NewEntry::new(t, actor, Kind::Key).via_actor();
    let e = match old {
        None => e.verdict(Verdict::Issued).detail(json!({ "company_key_id": kid, "prefix": k.prefix })),
        Some((old, grace)) => {
            crate::domain::keys::rotate_out(tx, KeyTable::Company, t, old, *grace, kid)?;
            e.verdict(Verdict::Rotated)
                .detail(json!({ "company_key_id": old, "replaced_by": kid, "grace_secs": grace }))
        }
    };
    activity::append(tx, e)
}

/// Revokes `k` unless it is the tenant's last active company key. The active keys are read
/// locked, so two revokes at once on PostgreSQL cannot each leave the other as the last.
pub(crate) fn revoke_company_key(
    tx: &dyn Tx,
    t: &TenantId,
    k: &KeyId,
    actor: &str,
) -> Result<activity::Entry> {
    let active = tx.rows(
        &format!(
            "SELECT id FROM company_keys WHERE tenant_id = ? AND revoked_at IS NULL AND expires_at IS NULL{}",
            for_update(tx)
        ),
        &[&t.as_str()],
    )?;
    let ids = active.iter().map(|r| r.get::<String>(0)).collect::<::store::Result<Vec<_>>>()?;
    if !ids.iter().any(|id| id != k.as_str()) {
        return Err(Error::Conflict {
            code: "last_company_key",
            message: "this is the tenant's last active company key; issue another before revoking it".into(),
        });
    }
    crate::domain::keys::revoke_now(tx, KeyTable::Company, t, k)?;
    activity::append(
        tx,
        NewEntry::new(t, actor, Kind::Key)
            .via_actor()
            .verdict(Verdict::Revoked)
            .detail(json!({ "company_key_id": k })),
    )
}

/// A new tenant, its Default kit and its first company key.
pub(crate) fn insert_tenant(
    tx: &dyn Tx,
    t: &Tenant,
    kit: &Kit,
    key_id: &KeyId,
    key: &MintedKey,
) -> Result<()> {
    let at = stored::ts(t.created_at);
    tx.exec(
        "INSERT INTO tenants (id, name, credit_units, created_at) VALUES (?, ?, ?, ?)",
        &[&t.id.as_str(), &t.name, &t.credit.units(), &at],
    )?;
    let first = crate::domain::kits::KitRecord {
        kit: kit.clone(),
        author: "system".into(),
        diff: KitDiff::default(),
        created_at: t.created_at,
    };
    crate::domain::kits::insert_version(tx, &t.id, &first)?;
    insert_company_key(tx, &t.id, key_id, key, &at)
}

/// Moves a tenant's platform credit: `pending` is added to what is held, `available` to what
/// is left to spend (both negative to release or spend). The ledger decides the amounts.
pub(crate) fn move_credit(c: &dyn Tx, tenant: &TenantId, pending: i64, available: i64) -> Result<()> {
    crate::audit::activity::lock_tenant(c, tenant)?;
    c.exec(MOVE_CREDIT, &[&pending, &available, &tenant.as_str()])?;
    Ok(())
}

/// [`move_credit`]'s statement; its arguments are `pending`, `available` and the tenant.
pub(crate) const MOVE_CREDIT: &str = "UPDATE tenants SET credit_pending_units = credit_pending_units + ?, credit_units = credit_units + ? WHERE id = ?";

fn insert_company_key(tx: &dyn Tx, tenant: &TenantId, id: &KeyId, k: &MintedKey, at: &str) -> Result<()> {
    tx.exec(
        "INSERT INTO company_keys (id, tenant_id, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)",
        &[&id.as_str(), &tenant.as_str(), &k.prefix, &k.hash, &at],
    )
    .map_err(|e| {
        if e.is_unique_violation() {
            Error::Conflict {
                code: "key_prefix_taken",
                message: "that company key's prefix is already in use; choose another".into(),
            }
        } else {
            e.into()
        }
    })?;
    Ok(())
}

const TENANT_COLUMNS: &str = "id, name, credit_units, created_at";

/// A row of [`TENANT_COLUMNS`].
impl crate::sql::FromRow for Tenant {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<Tenant> {
        let credit: i64 = r.get(2)?;
        Ok(Tenant {
            id: TenantId::from_db(r.get(0)?),
            name: r.get(1)?,
            credit: Money::from_units(credit)
                .ok_or_else(|| stored::corrupt("credit", &credit.to_string()))?,
            created_at: r.get(3)?,
        })
    }
}

/// One tenant; `not_found` for an unknown id.
pub(crate) async fn one(store: &Store, id: &TenantId) -> Result<Tenant> {
    let sql = format!("SELECT {TENANT_COLUMNS} FROM tenants WHERE id = ?");
    store.opt(&sql, &[id]).await?.ok_or(Error::NotFound { what: "tenant" })
}

/// Every tenant, oldest first.
pub(crate) async fn all(store: &Store) -> Result<Vec<Tenant>> {
    let sql = format!("SELECT {TENANT_COLUMNS} FROM tenants ORDER BY created_at, id");
    Ok(store.all(&sql, &[]).await?)
}

/// A tenant's calendar and its own rate limit, as `/v1/tenant/settings` shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TenantSettings {
    /// The IANA time zone budget periods are counted in.
    pub time_zone: String,
    /// A change asked for and not yet in effect: the zone, and when it takes effect (the
    /// current zone's next midnight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_time_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone_changes_at: Option<DateTime<Utc>>,
    /// The most calls all of the tenant's agents together may make per window.
    #[serde(default)]
    pub rate_limit: Option<TenantRate>,
}

/// What an admin sets: a time zone and the tenant's own rate limit (none to remove it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SettingsInput {
    pub time_zone: String,
    #[serde(default)]
    pub rate_limit: Option<TenantRate>,
}

const CLOCK_COLUMNS: &str = "time_zone, next_time_zone, time_zone_from, rate_calls, rate_per";

type ClockRow = (String, Option<String>, Option<String>, Option<i64>, Option<String>);

/// The tenant's calendar and rate limit, as reservations read them.
pub(crate) async fn clock(store: &Store, tenant: &TenantId) -> Result<TenantClock> {
    let sql = format!("SELECT {CLOCK_COLUMNS} FROM tenants WHERE id = ?");
    let row: Option<ClockRow> = store.opt(&sql, &[tenant]).await?;
    let (zone, next, from, calls, per) = row.ok_or(Error::NotFound { what: "tenant" })?;
    TenantClock::from_columns(zone, next, from, calls, per)
}

/// The settings as shown: a change whose moment has passed is the zone now.
pub(crate) fn settings_of(clock: &TenantClock, now: DateTime<Utc>) -> TenantSettings {
    let zone = clock.calendar.zone_at(now);
    let next = clock.calendar.next.filter(|(_, from)| now < *from);
    TenantSettings {
        time_zone: zone.name().to_string(),
        next_time_zone: next.map(|(z, _)| z.name().to_string()),
        time_zone_changes_at: next.map(|(_, from)| from),
        rate_limit: clock.rate,
    }
}

/// Saves `input` at `now`, by `actor`: a new zone takes effect at the current zone's next
/// midnight (asking for the zone in effect cancels a pending change), a rate limit at once.
/// Checks everything before writing anything; records the change in the activity log.
pub(crate) fn save_settings(
    c: &dyn Tx,
    tenant: &TenantId,
    input: &SettingsInput,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<TenantSettings> {
    let zone = crate::domain::periods::parse_zone(&input.time_zone)?;
    if let Some(r) = input.rate_limit {
        policy::RateLimit::check_calls(r.calls)
            .map_err(|m| Error::invalid("invalid_rate_limit", format!("rate_limit.calls: {m}")))?;
    }
    activity::lock_tenant(c, tenant)?;
    let sql = format!("SELECT {CLOCK_COLUMNS} FROM tenants WHERE id = ?");
    let r = c.row(&sql, &[tenant])?.ok_or(Error::NotFound { what: "tenant" })?;
    let old = TenantClock::from_columns(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)?;
    // A change asked for replaces one still pending: the new zone waits for the midnight of
    // the zone in effect now, whatever the pending one would have been.
    let current = old.calendar.zone_at(now);
    let calendar = Calendar { zone: current, next: None };
    let next = (zone != current).then(|| (zone, calendar.next_midnight(now)));
    let new = TenantClock { calendar: Calendar { zone: current, next }, rate: input.rate_limit };
    c.exec(
        "UPDATE tenants SET time_zone = ?, next_time_zone = ?, time_zone_from = ?, rate_calls = ?, rate_per = ? WHERE id = ?",
        &[
            &current.name(),
            &next.map(|(z, _)| z.name()),
            &next.map(|(_, from)| stored::ts(from)),
            &input.rate_limit.map(|r| i64::from(r.calls)),
            &input.rate_limit.map(|r| r.per.as_str()),
            tenant,
        ],
    )?;
    let settings = settings_of(&new, now);
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Settings).verdict(Verdict::Changed).detail(json!({
            "before": settings_of(&old, now),
            "after": settings,
        })),
    )?;
    Ok(settings)
}

/// How long the tenant's log entries stay in the database once archived
/// (docs/archive.md), as `/v1/tenant/retention` shows and takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Retention {
    /// Days after its day ends that an archived entry is deleted from the database (1 to
    /// 36,500); null keeps every entry.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 36500))]
    pub log_days: Option<u32>,
}

/// The longest retention one can ask for: a hundred years.
pub const MAX_RETENTION_DAYS: u32 = 36_500;

/// The tenant's retention.
pub(crate) async fn retention(store: &Store, tenant: &TenantId) -> Result<Retention> {
    let row: Option<(Option<i64>,)> =
        store.opt("SELECT log_retention_days FROM tenants WHERE id = ?", &[tenant]).await?;
    let (days,) = row.ok_or(Error::NotFound { what: "tenant" })?;
    Ok(Retention { log_days: days.and_then(|d| u32::try_from(d).ok()) })
}

/// Every tenant that deletes its archived entries, with its days.
pub(crate) async fn retaining(store: &Store) -> Result<Vec<(TenantId, i64)>> {
    Ok(store
        .all("SELECT id, log_retention_days FROM tenants WHERE log_retention_days IS NOT NULL", &[])
        .await?)
}

/// Saves the tenant's retention by `actor`, recorded in its log; `invalid_retention` for days
/// out of bounds, with nothing saved.
pub(crate) fn save_retention(c: &dyn Tx, tenant: &TenantId, r: Retention, actor: &str) -> Result<Retention> {
    if r.log_days.is_some_and(|d| d == 0 || d > MAX_RETENTION_DAYS) {
        return Err(Error::invalid(
            "invalid_retention",
            format!("log_days: between 1 and {MAX_RETENTION_DAYS}, or null to keep every entry"),
        ));
    }
    activity::lock_tenant(c, tenant)?;
    let old = c
        .row("SELECT log_retention_days FROM tenants WHERE id = ?", &[tenant])?
        .ok_or(Error::NotFound { what: "tenant" })?
        .get::<Option<i64>>(0)?;
    let days = r.log_days.map(i64::from);
    c.exec("UPDATE tenants SET log_retention_days = ? WHERE id = ?", &[&days, tenant])?;
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Settings)
            .verdict(Verdict::Changed)
            .detail(json!({ "before": { "log_days": old }, "after": r })),
    )?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::secrets;
    use crate::testing::{TestDb, held_open};

    fn tenant() -> Tenant {
        Tenant { id: TenantId::generate(), name: "Acme".into(), credit: Money::ZERO, created_at: Utc::now() }
    }

    #[tokio::test]
    async fn a_taken_key_prefix_is_refused_on_both_engines() {
        for db in TestDb::both().await {
            let key = secrets::mint_key();
            let (a, k) = (tenant(), key.clone());
            db.run(move |tx| insert_tenant(tx, &a, &Kit::default_kit(), &KeyId::generate(), &k))
                .await
                .unwrap();
            let b = tenant();
            let refused =
                db.run(move |tx| insert_tenant(tx, &b, &Kit::default_kit(), &KeyId::generate(), &key)).await;
            assert_eq!(refused.unwrap_err().code(), "key_prefix_taken", "{}", db.name());
            let tenants = db.run(|tx| Ok(tx.rows("SELECT id FROM tenants", &[])?.len())).await.unwrap();
            assert_eq!(tenants, 1, "{}: the refused tenant left nothing behind", db.name());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_revokes_at_once_never_leave_a_tenant_without_a_company_key_on_both_engines() {
        for db in TestDb::both().await {
            let db = Arc::new(db);
            let (t, first) = (tenant(), KeyId::generate());
            let (tt, f) = (t.clone(), first.clone());
            db.run(move |tx| insert_tenant(tx, &tt, &Kit::default_kit(), &f, &secrets::mint_key()))
                .await
                .unwrap();
            let second = KeyId::generate();
            let (tid, s) = (t.id.clone(), second.clone());
            db.run(move |tx| issue_company_key(tx, &tid, &s, &secrets::mint_key(), None, "admin"))
                .await
                .unwrap();
            let revokes = [first, second].map(|k| {
                let (db, tid) = (db.clone(), t.id.clone());
                tokio::spawn(async move {
                    db.run(held_open(move |tx| revoke_company_key(tx, &tid, &k, "admin"))).await
                })
            });
            let mut codes = Vec::new();
            for r in revokes {
                codes.push(r.await.unwrap().map(|_| "revoked").unwrap_or_else(|e| e.code()));
            }
            codes.sort();
            assert_eq!(codes, ["last_company_key", "revoked"], "{}", db.name());
            let tid = t.id.clone();
            let active = db
                .run(move |tx| {
                    let q = "SELECT id FROM company_keys WHERE tenant_id = ? AND revoked_at IS NULL";
                    Ok(tx.rows(q, &[&tid.as_str()])?.len())
                })
                .await
                .unwrap();
            assert_eq!(active, 1, "{}: one company key stays active", db.name());
        }
    }
}
