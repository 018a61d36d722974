//! Scoped agent keys (SPEC §3): `nv_<prefix>_<secret>`, sealed to one agent profile.
//!
//! Guarantees: only a hash is stored and the token is returned once, at issue or rotation;
//! a revoked key, or a rotated one past its grace period, never authenticates; every key
//! operation is scoped by tenant and profile and is recorded in the activity log.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::Gateway;
use rusqlite::params;

use crate::activity::{self, Kind, NewEntry};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::secrets;
use crate::tenants::IssuedKey;

/// Who is calling: resolved from a scoped key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub tenant: TenantId,
    pub profile: ProfileId,
    pub key: KeyId,
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

/// A validated key held in the gateway's cache.
#[derive(Clone, Debug)]
pub(crate) struct CachedKey {
    subject: Subject,
    expires_at: Option<DateTime<Utc>>,
    last_used_at: Option<DateTime<Utc>>,
}

/// Longest grace period a rotation may give the old key.
pub const MAX_GRACE_SECS: i64 = 7 * 24 * 3600;
/// `last_used_at` is refreshed at most this often, to keep writes off the hot path.
const LAST_USED_RESOLUTION_SECS: i64 = 60;

type KeyRow = (
    String,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

impl Gateway {
    /// Issues a new key for the profile. The token is in the result and nowhere else.
    pub async fn issue_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
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
        let (t, i, actor) = (tenant.clone(), info.clone(), actor.to_string());
        let hash = minted.hash.clone();
        let entry = self
            .writer
            .run(move |c| {
                c.prepare_cached(
                    "INSERT INTO agent_keys (id, tenant_id, profile_id, prefix, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                )?
                .execute(params![i.id.as_str(), t.as_str(), i.profile_id.as_str(), i.prefix, hash, db::ts(i.created_at)])?;
                activity::append(
                    c,
                    NewEntry::new(&t, actor.as_str(), Kind::Key)
                        .profile(&i.profile_id)
                        .verdict("issued")
                        .detail(serde_json::json!({"key_id": i.id, "prefix": i.prefix})),
                )
            })
            .await?;
        self.bus.publish([entry]);
        Ok((info.clone(), IssuedKey { id: info.id, token: minted.token }))
    }

    pub async fn keys(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<KeyInfo>> {
        self.profile(tenant, profile).await?;
        let rows = sqlx::query_as::<_, KeyRow>(
            "SELECT id, profile_id, prefix, created_at, last_used_at, expires_at, revoked_at FROM agent_keys \
             WHERE tenant_id = ? AND profile_id = ? ORDER BY created_at DESC, id",
        )
        .bind(tenant.as_str())
        .bind(profile.as_str())
        .fetch_all(self.store.pool())
        .await?;
        Ok(rows.into_iter().map(key_from_row).collect())
    }

    /// Replaces a key with a new one. With a grace period the old key keeps working until it
    /// elapses; without one it stops at once.
    pub async fn rotate_key(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        key: &KeyId,
        grace_secs: Option<i64>,
        actor: &str,
    ) -> Result<(KeyInfo, IssuedKey)> {
        let grace = grace_secs.unwrap_or(0);
        if !(0..=MAX_GRACE_SECS).contains(&grace) {
            return Err(Error::invalid(
                "invalid_grace_period",
                format!("a grace period is 0 to {MAX_GRACE_SECS} seconds"),
            ));
        }
        let old = self.key(tenant, profile, key).await?;
        if old.revoked_at.is_some() || old.expires_at.is_some() {
            return Err(Error::Conflict {
                code: "key_not_active",
                message: "this key was already revoked or rotated; rotate the active one".into(),
            });
        }
        let (info, issued) = self.issue_key(tenant, profile, actor).await?;
        let now = Utc::now();
        let (t, k, new_id, actor) = (tenant.clone(), key.clone(), info.id.clone(), actor.to_string());
        let p = profile.clone();
        let entry = self
            .writer
            .run(move |c| {
                let sql = if grace > 0 {
                    "UPDATE agent_keys SET expires_at = ?, replaced_by = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL"
                } else {
                    "UPDATE agent_keys SET revoked_at = ?, replaced_by = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL"
                };
                c.prepare_cached(sql)?.execute(params![db::ts(now + Duration::seconds(grace)), new_id.as_str(), k.as_str(), t.as_str()])?;
                activity::append(
                    c,
                    NewEntry::new(&t, actor.as_str(), Kind::Key)
                        .profile(&p)
                        .verdict("rotated")
                        .detail(serde_json::json!({"key_id": k, "replaced_by": new_id, "grace_secs": grace})),
                )
            })
            .await?;
        self.bus.publish([entry]);
        self.invalidate_keys();
        Ok((info, issued))
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
        let entry = self
            .writer
            .run(move |c| {
                c.prepare_cached("UPDATE agent_keys SET revoked_at = ? WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL")?
                    .execute(params![db::ts(Utc::now()), k.as_str(), t.as_str()])?;
                activity::append(
                    c,
                    NewEntry::new(&t, actor.as_str(), Kind::Key).profile(&p).verdict("revoked").detail(serde_json::json!({"key_id": k})),
                )
            })
            .await?;
        self.bus.publish([entry]);
        self.invalidate_keys();
        self.key(tenant, profile, key).await
    }

    async fn key(&self, tenant: &TenantId, profile: &ProfileId, key: &KeyId) -> Result<KeyInfo> {
        sqlx::query_as::<_, KeyRow>(
            "SELECT id, profile_id, prefix, created_at, last_used_at, expires_at, revoked_at FROM agent_keys \
             WHERE tenant_id = ? AND profile_id = ? AND id = ?",
        )
        .bind(tenant.as_str())
        .bind(profile.as_str())
        .bind(key.as_str())
        .fetch_optional(self.store.pool())
        .await?
        .map(key_from_row)
        .ok_or(Error::NotFound { what: "key" })
    }

    /// The subject a scoped key belongs to, or `None` for a malformed, unknown, revoked or
    /// expired key. Does not look at the profile's status: revocation is a policy decision.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Subject>> {
        let Some(prefix) = secrets::split_token(token) else { return Ok(None) };
        let hash = secrets::hash_token(token);
        let now = Utc::now();
        let cached = self.auth_cache.read().expect("auth cache lock").get(&hash).cloned();
        let entry = match cached {
            Some(e) => e,
            None => {
                let row = sqlx::query_as::<
                    _,
                    (String, String, String, String, Option<DateTime<Utc>>, Option<DateTime<Utc>>),
                >(
                    "SELECT id, tenant_id, profile_id, secret_hash, last_used_at, expires_at FROM agent_keys \
                     WHERE prefix = ? AND revoked_at IS NULL",
                )
                .bind(prefix)
                .fetch_optional(self.store.pool())
                .await?;
                let Some((id, tenant, profile, stored, last_used_at, expires_at)) = row else {
                    return Ok(None);
                };
                if !secrets::digest_eq(&hash, &stored) {
                    return Ok(None);
                }
                let e = CachedKey {
                    subject: Subject {
                        tenant: TenantId::from_db(tenant),
                        profile: ProfileId::from_db(profile),
                        key: KeyId::from_db(id),
                    },
                    expires_at,
                    last_used_at,
                };
                let mut cache = self.auth_cache.write().expect("auth cache lock");
                if cache.len() >= crate::MAX_CACHE_ENTRIES {
                    cache.clear();
                }
                cache.insert(hash.clone(), e.clone());
                e
            }
        };
        if entry.expires_at.is_some_and(|e| e <= now) {
            return Ok(None);
        }
        if entry.last_used_at.is_none_or(|l| (now - l).num_seconds() >= LAST_USED_RESOLUTION_SECS) {
            if let Some(e) = self.auth_cache.write().expect("auth cache lock").get_mut(&hash) {
                e.last_used_at = Some(now);
            }
            let id = entry.subject.key.clone();
            // Best effort and off the caller's path: a lost timestamp is not worth a failed call.
            let writer = self.writer.clone();
            tokio::spawn(async move {
                let _ = writer
                    .run(move |c| {
                        c.prepare_cached("UPDATE agent_keys SET last_used_at = ? WHERE id = ?")?
                            .execute(params![db::ts(now), id.as_str()])?;
                        Ok(())
                    })
                    .await;
            });
        }
        Ok(Some(entry.subject))
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
