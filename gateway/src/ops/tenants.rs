//! Tenants as operations: creating one with its first kit and company key, reading them, and
//! issuing or revoking company keys.

use chrono::Utc;
use policy::{Kit, Money};

use crate::Gateway;
use crate::domain::keys::IssuedKey;

use crate::domain::tenants::{
    self as tenants, CompanyKeyInfo, MAX_NAME_LEN, Retention, SettingsInput, Tenant, TenantSettings,
    insert_tenant, issue_company_key, revoke_company_key,
};
use crate::error::{Error, Result};
use crate::ids::{KeyId, TenantId};
use crate::secrets::{self, MintedKey};

impl Gateway {
    /// Creates a tenant with the Default kit and a company key. `company_key` lets an operator
    /// choose the token (it must have the `nv_<prefix>_<secret>` form); otherwise one is minted.
    pub async fn create_tenant(
        &self,
        name: &str,
        credit: Money,
        company_key: Option<&str>,
    ) -> Result<(Tenant, IssuedKey)> {
        let name = crate::ids::display_name(name, MAX_NAME_LEN, "invalid_tenant_name", "a tenant name")?;
        let name = name.as_str();
        let key: MintedKey = match company_key {
            Some(t) => secrets::key_from_token(t).ok_or_else(|| {
                Error::invalid(
                    "invalid_key_format",
                    "a company key must look like nv_<8 lowercase letters or digits>_<16+ letters or digits>",
                )
            })?,
            None => secrets::mint_key(),
        };
        let tenant =
            Tenant { id: TenantId::generate(), name: name.to_string(), credit, created_at: Utc::now() };
        let key_id = KeyId::generate();
        let kit = Kit::default_kit();
        let (t, k, kid) = (tenant.clone(), key.clone(), key_id.clone());
        self.write(move |c| insert_tenant(c, &t, &kit, &kid, &k)).await?;
        tracing::info!(tenant = %tenant.id, name = %tenant.name, "tenant created");
        Ok((tenant, IssuedKey { id: key_id, token: key.token }))
    }

    /// The tenant's time zone (with a change not yet in effect) and its own rate limit.
    pub async fn tenant_settings(&self, tenant: &TenantId) -> Result<TenantSettings> {
        Ok(tenants::settings_of(&*self.tenant_clock(tenant).await?, self.now()))
    }

    /// Saves the tenant's time zone and rate limit: a zone change takes effect at the
    /// current zone's next midnight, a rate limit at once. `400` for an unknown zone or a
    /// rate out of bounds, with nothing saved.
    pub async fn set_tenant_settings(
        &self,
        tenant: &TenantId,
        input: SettingsInput,
        actor: &str,
    ) -> Result<TenantSettings> {
        let (t, now, actor) = (tenant.clone(), self.now(), actor.to_string());
        let saved =
            self.write_for(tenant, move |c| tenants::save_settings(c, &t, &input, now, &actor)).await?;
        self.clock_cache.invalidate_key(tenant);
        Ok(saved)
    }
}

impl Gateway {
    /// How long the tenant's archived log entries stay in the database.
    pub async fn log_retention(&self, tenant: &TenantId) -> Result<Retention> {
        tenants::retention(&self.store, tenant).await
    }

    /// Saves the tenant's retention; `400 invalid_retention` for days out of bounds, with
    /// nothing saved. The archiver deletes what it allows on its next round.
    pub async fn set_log_retention(&self, tenant: &TenantId, r: Retention, actor: &str) -> Result<Retention> {
        let (t, actor) = (tenant.clone(), actor.to_string());
        self.write_for(tenant, move |c| tenants::save_retention(c, &t, r, &actor)).await
    }
}

/// Company keys: listed, issued, rotated (with an optional grace period) and revoked, like an
/// agent's keys. A tenant always keeps one active company key, so it can never lock itself out.
impl Gateway {
    pub async fn company_keys(&self, tenant: &TenantId) -> Result<Vec<CompanyKeyInfo>> {
        tenants::company_keys(&self.store, tenant).await
    }

    async fn company_key(&self, tenant: &TenantId, id: &KeyId) -> Result<CompanyKeyInfo> {
        tenants::company_key(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "company key" })
    }

    /// A new company key, shown once; with `old`, that key ends (after `grace` seconds) in the
    /// same transaction.
    pub async fn issue_company_key(
        &self,
        tenant: &TenantId,
        old: Option<(&KeyId, Option<i64>)>,
        actor: &str,
    ) -> Result<(CompanyKeyInfo, IssuedKey)> {
        let old = match old {
            Some((id, grace)) => {
                self.company_key(tenant, id).await?;
                Some((id.clone(), crate::domain::keys::check_grace(grace)?))
            }
            None => None,
        };
        let key = secrets::mint_key();
        let id = KeyId::generate();
        let (t, kid, k, actor, rotating) =
            (tenant.clone(), id.clone(), key.clone(), actor.to_string(), old.is_some());
        self.write(move |c| issue_company_key(c, &t, &kid, &k, old.as_ref(), &actor)).await?;
        if rotating {
            self.invalidate_keys();
        }
        Ok((self.company_key(tenant, &id).await?, IssuedKey { id, token: key.token }))
    }

    /// Revokes a company key at once; the tenant's last active key cannot be revoked.
    pub async fn revoke_company_key(
        &self,
        tenant: &TenantId,
        id: &KeyId,
        actor: &str,
    ) -> Result<CompanyKeyInfo> {
        self.company_key(tenant, id).await?;
        let (t, k, actor) = (tenant.clone(), id.clone(), actor.to_string());
        self.write(move |c| revoke_company_key(c, &t, &k, &actor)).await?;
        self.invalidate_keys();
        self.company_key(tenant, id).await
    }
}
