//! The vault as operations: storing, listing, opening and deleting a tenant's secrets, and
//! rotating the master key.

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::domain::vault::{
    MasterKey, SecretInfo, check_name, check_value, delete_in, infos, put_in, rotate_in,
};
use crate::error::Result;
use crate::ids::TenantId;

impl Gateway {
    /// Stores `value` as the tenant's secret `name` (replacing any value it had); what may be
    /// known of it, and whether it is new. The value never leaves the vault again.
    pub async fn put_secret(
        &self,
        tenant: &TenantId,
        name: &str,
        value: &str,
        actor: &str,
        via: Transport,
    ) -> Result<(SecretInfo, bool)> {
        check_name(name)?;
        check_value(value)?;
        let master = self.vault.master()?.clone();
        let (t, n, v, a) = (tenant.clone(), name.to_string(), value.to_string(), actor.to_string());
        let (created, key) = self.write(move |c| put_in(c, &master, &t, &n, &v, &a, via)).await?;
        self.vault.remember(tenant, &key);
        self.connectors_changed(tenant);
        Ok((self.secret(tenant, name).await?, created))
    }

    /// The tenant's secrets by name, without their values.
    pub async fn secrets(&self, tenant: &TenantId) -> Result<Vec<SecretInfo>> {
        infos(&self.store, tenant).await
    }

    /// Deletes the tenant's secret `name`; refused while a connector uses it.
    pub async fn delete_secret(
        &self,
        tenant: &TenantId,
        name: &str,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        let (t, n, a) = (tenant.clone(), name.to_string(), actor.to_string());
        self.write(move |c| delete_in(c, &t, &n, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// Re-wraps every tenant's data key under `new` in one transaction, after checking that
    /// this gateway's master key is the database's; how many data keys were re-wrapped.
    pub async fn rotate_master_key(&self, new: MasterKey) -> Result<usize> {
        let old = self.vault.master()?.clone();
        self.write(move |c| rotate_in(c, &old, &new)).await
    }
}
