//! Agent keys as operations: listing a profile's keys, issuing, rotating (with an optional grace
//! period) and revoking one.

use chrono::Utc;

use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::keys::{self as keys, IssuedKey, KeyInfo, KeyTable, check_grace, insert_key, revoke_now};
use crate::error::{Error, Result};
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::secrets;

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
        keys::list(&self.store, tenant, profile).await
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
        self.write(move |c| insert_key(c, &t, &i, &hash, &actor, old.as_ref())).await?;
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
                    .verdict(Verdict::Revoked)
                    .detail(serde_json::json!({"key_id": k})),
            )
        })
        .await?;
        self.agents_changed(Some(tenant));
        self.invalidate_keys();
        self.key(tenant, profile, key).await
    }

    async fn key(&self, tenant: &TenantId, profile: &ProfileId, key: &KeyId) -> Result<KeyInfo> {
        keys::get(&self.store, tenant, profile, key).await?.ok_or(Error::NotFound { what: "key" })
    }
}
