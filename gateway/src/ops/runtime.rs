//! The team runtime as operations: registering a tenant's runtime, probing it, removing it,
//! and noting when it last answered.

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::runtime::client::WireError;
use crate::delivery::runtime::registry::{
    RuntimeInfo, SECRET_NAME, check_secret, check_url, delete_in, note_contact_in, save_in,
};
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// Registers (or re-points) the tenant's runtime. `secret` may be left out when only the
    /// URL changes. The runtime is claimed for the tenant at once if it answers.
    pub async fn register_runtime(
        &self,
        tenant: &TenantId,
        url: &str,
        secret: Option<&str>,
        actor: &str,
        via: Transport,
    ) -> Result<RuntimeInfo> {
        let url = check_url(url)?;
        self.check_egress(&url).await?;
        match secret {
            Some(s) => {
                check_secret(s)?;
                self.put_secret(tenant, SECRET_NAME, s, actor, via).await?;
            }
            None if self.runtime_row(tenant).await?.is_none() => {
                return Err(Error::invalid(
                    "secret_required",
                    "registering a runtime needs its shared secret (at least 16 characters)",
                ));
            }
            None => {}
        }
        let (t, u, a) = (tenant.clone(), url.to_string(), actor.to_string());
        self.write(move |c| save_in(c, &t, &u, &a, via)).await?;
        self.connectors_changed(tenant);
        if let Some(client) = self.runtime_client(tenant).await? {
            let claimed = client.claim(tenant.as_str()).await;
            self.note_contact(tenant, claimed.as_ref().map(|_| ()).map_err(WireError::code), claimed.is_ok())
                .await?;
        }
        self.runtime(tenant).await?.ok_or(Error::NotFound { what: "runtime" })
    }

    /// Removes the tenant's runtime; its secret stays in the vault until deleted there.
    pub async fn delete_runtime(&self, tenant: &TenantId, actor: &str, via: Transport) -> Result<()> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| delete_in(c, &t, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// The tenant's runtime, probed now: `None` when none is registered.
    pub async fn runtime(&self, tenant: &TenantId) -> Result<Option<RuntimeInfo>> {
        let Some(client) = self.runtime_client(tenant).await? else { return Ok(None) };
        let live = client.status().await;
        let claimed = live.as_ref().ok().map(|s| s.claimed_by.as_deref() == Some(tenant.as_str()));
        self.note_contact(
            tenant,
            live.as_ref().map(|_| ()).map_err(WireError::code),
            claimed.unwrap_or(false),
        )
        .await?;
        let Some(row) = self.runtime_row(tenant).await? else { return Ok(None) };
        let (url, claimed, reachable, last_seen_at, last_error, updated_by, updated_at) = row;
        Ok(Some(RuntimeInfo {
            url,
            secret: self.secret(tenant, SECRET_NAME).await?,
            claimed: claimed != 0,
            reachable: reachable.map(|r| r != 0),
            last_seen_at,
            last_error,
            live: live.ok(),
            updated_by,
            updated_at,
        }))
    }

    /// Records the outcome of a contact with the tenant's runtime. A claim seen (or made)
    /// sticks; an error is kept until the next answer.
    pub(crate) async fn note_contact(
        &self,
        tenant: &TenantId,
        outcome: std::result::Result<(), String>,
        claimed: bool,
    ) -> Result<()> {
        let t = tenant.clone();
        self.write(move |c| note_contact_in(c, &t, &outcome, claimed)).await
    }
}
