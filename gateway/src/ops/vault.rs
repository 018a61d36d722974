//! The vault as operations: storing, listing, opening and deleting a tenant's secrets, and
//! rotating the master key.

use chrono::{DateTime, Utc};

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::domain::vault::{
    DataKey, MasterKey, SecretInfo, check_name, check_value, delete_in, info, infos, open, put_in, rotate_in,
    sealed, secret_aad, touch_in, unwrap_data_key, wrapped_data_key,
};
use crate::error::{Error, Result};
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

    /// What may be known of the tenant's secret `name`.
    pub async fn secret(&self, tenant: &TenantId, name: &str) -> Result<SecretInfo> {
        info(&self.store, tenant, name).await?.ok_or(Error::NotFound { what: "secret" })
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

    /// Opens the tenant's secret `name` for a connector about to use it, and notes the use.
    pub(crate) async fn open_secret(&self, tenant: &TenantId, name: &str) -> Result<String> {
        let master = self.vault.master()?;
        let Some(sealed) = sealed(&self.store, tenant, name).await? else {
            return Err(Error::invalid(
                "unknown_secret",
                format!("there is no secret named `{name}` in this tenant's vault; store it first"),
            ));
        };
        let key = self.data_key(master, tenant).await?;
        let plain = open(&key.cipher(), &sealed, &secret_aad(tenant, name))
            .ok_or_else(|| Error::internal("vault_corrupt", format!("the secret `{name}` does not open")))?;
        let now = Utc::now();
        if self.vault.should_touch(tenant, name, now) {
            self.touch_secret(tenant, name, now);
        }
        String::from_utf8(plain).map_err(|_| Error::internal("vault_corrupt", "a secret is not text"))
    }

    /// The tenant's data key, opened once per process.
    async fn data_key(&self, master: &MasterKey, tenant: &TenantId) -> Result<DataKey> {
        if let Some(k) = self.vault.cached(tenant) {
            return Ok(k);
        }
        let wrapped = wrapped_data_key(&self.store, tenant).await?;
        let key = unwrap_data_key(master, tenant, &wrapped)?;
        self.vault.remember(tenant, &key);
        Ok(key)
    }

    /// Records a secret's use; best effort and off the caller's path.
    fn touch_secret(&self, tenant: &TenantId, name: &str, now: DateTime<Utc>) {
        let (gw, t, n) = (self.clone(), tenant.clone(), name.to_string());
        tokio::spawn(async move {
            let _ = gw.write(move |c| touch_in(c, &t, &n, now)).await;
        });
    }

    /// Re-wraps every tenant's data key under `new` in one transaction, after checking that
    /// this gateway's master key is the database's; how many data keys were re-wrapped.
    pub async fn rotate_master_key(&self, new: MasterKey) -> Result<usize> {
        let old = self.vault.master()?.clone();
        self.write(move |c| rotate_in(c, &old, &new)).await
    }
}
