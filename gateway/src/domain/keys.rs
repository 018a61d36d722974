//! Scoped agent keys (docs/architecture.md#identities-and-roles): `nv_<prefix>_<secret>`, sealed to one
//! agent profile.
//!
//! Guarantees: only a hash is stored and the token is returned once, at issue or rotation;
//! a revoked key, or a rotated one past its grace period, never authenticates; every key
//! operation is scoped by tenant and profile and is recorded in the activity log.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::Gateway;

use crate::audit::activity::{self, Kind, NewEntry};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::secrets;
use crate::sql::Tx;

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

type KeyRow = (
    String,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

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
        &[&db::ts(Utc::now() + Duration::seconds(grace)), &replaced_by.as_str(), &key.as_str(), &tenant.as_str()],
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
        &[&db::ts(Utc::now()), &key.as_str(), &tenant.as_str()],
    )?;
    Ok(())
}

impl Gateway {
    /// Issues a new key for the profile. The token is in the result and nowhere else.
    pub async fn issue_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        actor: &str,
    ) -> Result<(KeyInfo, IssuedKey)> {
        self.replace_key(tenant, profile, None, actor).await
    }

    pub async fn keys(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<KeyInfo>> {
        self.profile(tenant, profile).await?;
        let rows: Vec<KeyRow> = self
            .store
            .all(
                "SELECT id, profile_id, prefix, created_at, last_used_at, expires_at, revoked_at FROM agent_keys \
                 WHERE tenant_id = ? AND profile_id = ? ORDER BY created_at DESC, id",
                &[tenant, profile],
            )
            .await?;
        Ok(rows.into_iter().map(key_from_row).collect())
    }

    /// Replaces a key with a new one, in one transaction. With a grace period the old key
    /// keeps working until it elapses; without one it stops at once.
    pub async fn rotate_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        key: &KeyId,
        grace_secs: Option<i64>,
        actor: &str,
    ) -> Result<(KeyInfo, IssuedKey)> {
        let grace = check_grace(grace_secs)?;
        self.key(tenant, profile, key).await?;
        self.replace_key(tenant, profile, Some((key.clone(), grace)), actor).await
    }

    /// Mints a key for `profile`; with `old`, ends that key (after its grace period) in the
    /// same job, so a rotation never leaves two active keys or none.
    async fn replace_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        old: Option<(KeyId, i64)>,
        actor: &str,
    ) -> Result<(KeyInfo, IssuedKey)> {
        self.profile(tenant, profile).await?;
        let minted = secrets::mint_key();
        let info = KeyInfo {
            id: KeyId::generate(),
            profile_id: profile.clone(),
            prefix: minted.prefix.clone(),
            created_at: Utc::now(),
            last_used_at: None,
            expires_at: None,
            revoked_at: None,
        };
        let (t, i, actor, hash) = (tenant.clone(), info.clone(), actor.to_string(), minted.hash.clone());
        let rotating = old.is_some();
        self
            .write(move |c| {
                c.exec(
                    "INSERT INTO agent_keys (id, tenant_id, profile_id, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    &[&i.id.as_str(), &t.as_str(), &i.profile_id.as_str(), &i.prefix, &hash, &db::ts(i.created_at)],
                )?;
                let entry = NewEntry::new(&t, actor.as_str(), Kind::Key).via_actor().profile(&i.profile_id);
                let entry = match &old {
                    None => entry.verdict("issued").detail(serde_json::json!({"key_id": i.id, "prefix": i.prefix})),
                    Some((old, grace)) => {
                        rotate_out(c, KeyTable::Agent, &t, old, *grace, &i.id)?;
                        entry.verdict("rotated").detail(serde_json::json!({"key_id": old, "replaced_by": i.id, "grace_secs": grace}))
                    }
                };
                activity::append(c, entry)
            })
            .await?;
        if rotating {
            self.agents_changed(Some(tenant));
            self.invalidate_keys();
        }
        Ok((info.clone(), IssuedKey { id: info.id, token: minted.token }))
    }

    pub async fn revoke_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        key: &KeyId,
        actor: &str,
    ) -> Result<KeyInfo> {
        self.key(tenant, profile, key).await?;
        let (t, k, p, actor) = (tenant.clone(), key.clone(), profile.clone(), actor.to_string());
        self.write(move |c| {
            revoke_now(c, KeyTable::Agent, &t, &k)?;
            activity::append(
                c,
                NewEntry::new(&t, actor.as_str(), Kind::Key)
                    .via_actor()
                    .profile(&p)
                    .verdict("revoked")
                    .detail(serde_json::json!({"key_id": k})),
            )
        })
        .await?;
        self.agents_changed(Some(tenant));
        self.invalidate_keys();
        self.key(tenant, profile, key).await
    }

    async fn key(&self, tenant: &TenantId, profile: &ProfileId, key: &KeyId) -> Result<KeyInfo> {
        let row: Option<KeyRow> = self
            .store
            .opt(
                "SELECT id, profile_id, prefix, created_at, last_used_at, expires_at, revoked_at FROM agent_keys \
                 WHERE tenant_id = ? AND profile_id = ? AND id = ?",
                &[tenant, profile, key],
            )
            .await?;
        row.map(key_from_row).ok_or(Error::NotFound { what: "key" })
    }
}

fn key_from_row((id, profile, prefix, created_at, last_used_at, expires_at, revoked_at): KeyRow) -> KeyInfo {
    KeyInfo {
        id: KeyId::from_db(id),
        profile_id: ProfileId::from_db(profile),
        prefix,
        created_at,
        last_used_at,
        expires_at,
        revoked_at,
    }
}
