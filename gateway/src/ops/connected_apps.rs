//! Connected apps as operations: listing a tenant's apps (checked), setting, deleting and
//! testing one, and building the apps a tenant's calls use.

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::connectors::HttpSpec;
use crate::delivery::connectors::app_config::{AppProbe, check_app, check_toolkit, delete_in, save_in};
use crate::delivery::connectors::apps::AppRecord;
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's connected apps, each with why it cannot be used now, if it cannot.
    pub async fn connected_apps_checked(&self, tenant: &TenantId) -> Result<Vec<AppRecord>> {
        let built = self.apps_for(tenant).await?;
        let mut records = self.connected_apps(tenant).await?;
        for r in &mut records {
            r.problem = built.problem(&r.toolkit).map(str::to_string);
        }
        Ok(records)
    }

    /// Registers (or changes) the connected app under `toolkit`.
    pub async fn set_connected_app(
        &self,
        tenant: &TenantId,
        toolkit: &str,
        spec: HttpSpec,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        check_toolkit(toolkit)?;
        self.check_egress(&check_app(&spec)?).await?;
        let (t, k, a) = (tenant.clone(), toolkit.to_string(), actor.to_string());
        self.write(move |c| save_in(c, &t, &k, &spec, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// Removes the connected app under `toolkit`; its tools are gone from the next listing.
    pub async fn delete_connected_app(
        &self,
        tenant: &TenantId,
        toolkit: &str,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        check_toolkit(toolkit)?;
        let (t, k, a) = (tenant.clone(), toolkit.to_string(), actor.to_string());
        self.write(move |c| delete_in(c, &t, &k, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// Lists the app's tools now, as the gateway's MCP client sees them.
    pub async fn test_connected_app(&self, tenant: &TenantId, toolkit: &str) -> Result<AppProbe> {
        check_toolkit(toolkit)?;
        let record = self.connected_apps(tenant).await?.into_iter().find(|r| r.toolkit == toolkit);
        let record = record.ok_or(Error::NotFound { what: "connected app" })?;
        let client = self.app_client(tenant, &record).await?;
        Ok(match client.tools().await {
            Ok(tools) => AppProbe { ok: true, tools: tools.to_vec(), error: None },
            Err(f) => AppProbe { ok: false, tools: Vec::new(), error: Some(f.detail) },
        })
    }
}
