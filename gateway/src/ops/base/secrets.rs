//! The secret opener: a vault secret in the clear for the one call that needs it (a
//! connector's header, an app's credential), never stored or logged; and a secret stored
//! together with what uses it.

use chrono::{DateTime, Utc};

use crate::Gateway;
use crate::domain::vault::{
    DataKey, MasterKey, open, sealed, secret_aad, touch_in, unwrap_data_key, wrapped_data_key,
};
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
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

    /// A secret that travels in an HTTP header: one with a line break or another control
    /// character cannot, and is refused as `invalid_secret_value` here, where only the
    /// setting that names it fails.
    pub(crate) async fn open_header_secret(&self, tenant: &TenantId, name: &str) -> Result<String> {
        let value = self.open_secret(tenant, name).await?;
        if reqwest::header::HeaderValue::from_str(&value).is_err() {
            return Err(Error::invalid(
                "invalid_secret_value",
                format!(
                    "the secret `{name}` holds a line break or control character, so it cannot travel in an HTTP header; store it again"
                ),
            ));
        }
        Ok(value)
    }

    /// Stores `value` as the tenant's secret `name` and runs `then` (which records what uses
    /// it), in one job under the tenant's lock: both or neither.
    pub(crate) async fn write_with_secret<T: Send + 'static>(
        &self,
        tenant: &TenantId,
        (name, value): (&str, &str),
        (actor, via): (&str, crate::audit::activity::Transport),
        then: impl Fn(&dyn crate::sql::Tx) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let master = self.vault.master()?.clone();
        let (t, n, v, a) = (tenant.clone(), name.to_string(), value.to_string(), actor.to_string());
        let (out, key) = self
            .write_for(tenant, move |c| {
                let (_, key) = crate::domain::vault::put_in(c, &master, &t, &n, &v, &a, via)?;
                Ok((then(c)?, key))
            })
            .await?;
        self.vault.remember(tenant, &key);
        Ok(out)
    }

    /// The tenant's data key, opened once per process.
    pub(crate) async fn data_key(&self, master: &MasterKey, tenant: &TenantId) -> Result<DataKey> {
        if let Some(k) = self.vault.cached(tenant) {
            return Ok(k);
        }
        let wrapped = wrapped_data_key(&self.store, tenant).await?;
        let key = unwrap_data_key(master, tenant, &wrapped)?;
        self.vault.remember(tenant, &key);
        Ok(key)
    }

    /// Records a secret's use; best effort and off the caller's path.
    pub(crate) fn touch_secret(&self, tenant: &TenantId, name: &str, now: DateTime<Utc>) {
        let (gw, t, n) = (self.clone(), tenant.clone(), name.to_string());
        tokio::spawn(async move {
            let _ = gw.write(move |c| touch_in(c, &t, &n, now)).await;
        });
    }
}
