//! Scoped agent keys (docs/architecture.md#identities-and-roles): `nv_<prefix>_<secret>`, sealed to one
//! agent profile.
//!
//! Guarantees: only a hash is stored and the token is returned once, at issue or rotation;
//! a revoked key, or a rotated one past its grace period, never authenticates; every key
//! operation is scoped by tenant and profile and is recorded in the activity log.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::error::{Error, Result};
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::sql::Tx;
use crate::store::Store;
use crate::stored;

/// A key token shown once at creation.
#[derive(Clone, Debug)]
pub struct IssuedKey {
    pub id: KeyId,
    pub token: String,
}

/// Which table a key lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyTable {
    Agent,
    Company,
}

impl KeyTable {
    pub(crate) const fn name(self) -> &'static str {
        match self {
            KeyTable::Agent => "agent_keys",
            KeyTable::Company => "company_keys",
        }
    }
}

/// A key as listed: never its secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyInfo {
    pub id: KeyId,
    pub profile_id: ProfileId,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Longest grace period a rotation may give the old key.
pub const MAX_GRACE_SECS: i64 = 7 * 24 * 3600;

const KEY_COLUMNS: &str = "id, profile_id, prefix, created_at, last_used_at, expires_at, revoked_at";

/// A row of [`KEY_COLUMNS`].
impl crate::sql::FromRow for KeyInfo {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<KeyInfo> {
        Ok(KeyInfo {
            id: r.get(0)?,
            profile_id: r.get(1)?,
            prefix: r.get(2)?,
            created_at: r.get(3)?,
            last_used_at: r.get(4)?,
            expires_at: r.get(5)?,
            revoked_at: r.get(6)?,
        })
    }
}

/// A profile's keys, newest first.
pub(crate) async fn list(store: &Store, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<KeyInfo>> {
    let sql = format!(
        "SELECT {KEY_COLUMNS} FROM agent_keys WHERE tenant_id = ? AND profile_id = ? AND connection_id IS NULL ORDER BY created_at DESC, id"
    );
    Ok(store.all(&sql, &[tenant, profile]).await?)
}

/// One of a profile's keys.
pub(crate) async fn get(
    store: &Store,
    tenant: &TenantId,
    profile: &ProfileId,
    key: &KeyId,
) -> Result<Option<KeyInfo>> {
    let sql = format!(
        "SELECT {KEY_COLUMNS} FROM agent_keys WHERE tenant_id = ? AND profile_id = ? AND id = ? AND connection_id IS NULL"
    );
    Ok(store.opt(&sql, &[tenant, profile, key]).await?)
}

/// A grace period in range, or `invalid_grace_period`.
pub(crate) fn check_grace(grace_secs: Option<i64>) -> Result<i64> {
    let grace = grace_secs.unwrap_or(0);
    if !(0..=MAX_GRACE_SECS).contains(&grace) {
        return Err(Error::invalid(
            "invalid_grace_period",
            format!("a grace period is 0 to {MAX_GRACE_SECS} seconds"),
        ));
    }
    Ok(grace)
}

/// Ends an active key for its replacement: at once without a grace period, else when it
/// elapses. A key already revoked or rotated is `key_not_active`.
pub(crate) fn rotate_out(
    tx: &dyn Tx,
    table: KeyTable,
    tenant: &TenantId,
    key: &KeyId,
    grace: i64,
    replaced_by: &KeyId,
) -> Result<()> {
    let column = if grace > 0 { "expires_at" } else { "revoked_at" };
    let changed = tx.exec(
        &format!(
            "UPDATE {} SET {column} = ?, replaced_by = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL AND expires_at IS NULL",
            table.name()
        ),
        &[&stored::ts(Utc::now() + Duration::seconds(grace)), &replaced_by.as_str(), &key.as_str(), &tenant.as_str()],
    )?;
    if changed == 0 {
        return Err(Error::Conflict {
            code: "key_not_active",
            message: "this key was already revoked or rotated; rotate the active one".into(),
        });
    }
    Ok(())
}

/// Revokes a key at once (also one in its grace period). Revoking a revoked key changes nothing.
pub(crate) fn revoke_now(tx: &dyn Tx, table: KeyTable, tenant: &TenantId, key: &KeyId) -> Result<()> {
    tx.exec(
        &format!(
            "UPDATE {} SET revoked_at = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL",
            table.name()
        ),
        &[&stored::ts(Utc::now()), &key.as_str(), &tenant.as_str()],
    )?;
    Ok(())
}

/// Stores a new agent key (its secret's hash) and records it; with `old`, the key it
/// replaces ends after `grace` seconds.
pub(crate) fn insert_key(
    c: &dyn Tx,
    t: &TenantId,
    i: &KeyInfo,
    hash: &str,
    actor: &str,
    old: Option<&(KeyId, i64)>,
) -> Result<crate::audit::activity::Entry> {
    c.exec(
        "INSERT INTO agent_keys (id, tenant_id, profile_id, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        &[&i.id.as_str(), &t.as_str(), &i.profile_id.as_str(), &i.prefix, &hash, &stored::ts(i.created_at)],
    )?;
    let entry = NewEntry::new(t, actor, Kind::Key).via_actor().profile(&i.profile_id);
    let entry = match old {
        None => {
            entry.verdict(Verdict::Issued).detail(serde_json::json!({"key_id": i.id, "prefix": i.prefix}))
        }
        Some((old, grace)) => {
            rotate_out(c, KeyTable::Agent, t, old, *grace, &i.id)?;
            entry
                .verdict(Verdict::Rotated)
                .detail(serde_json::json!({"key_id": old, "replaced_by": i.id, "grace_secs": grace}))
        }
    };
    activity::append(c, entry)
}

/// Stores an OAuth access token as a key of the connection's profile, working until
/// `expires_at` ([`crate::domain::oauth`]). It is not listed among the profile's keys: its
/// connection is.
pub(crate) fn insert_access_key(
    c: &dyn Tx,
    t: &TenantId,
    i: &KeyInfo,
    hash: &str,
    connection: &crate::ids::ConnectionId,
) -> Result<()> {
    c.exec(
        "INSERT INTO agent_keys (id, tenant_id, profile_id, prefix, secret_hash, created_at, expires_at, connection_id) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        &[&i.id, t, &i.profile_id, &i.prefix, &hash, &i.created_at, &i.expires_at, connection],
    )?;
    Ok(())
}

/// Revokes every access token of an OAuth connection at once.
pub(crate) fn revoke_connection_keys(
    c: &dyn Tx,
    t: &TenantId,
    connection: &crate::ids::ConnectionId,
) -> Result<()> {
    c.exec(
        "UPDATE agent_keys SET revoked_at = ? WHERE tenant_id = ? AND connection_id = ? AND revoked_at IS NULL",
        &[&Utc::now(), t, connection],
    )?;
    Ok(())
}
