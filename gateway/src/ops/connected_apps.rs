//! Connected apps as operations: listing a tenant's apps (checked), setting, deleting and
//! testing one, and building the apps a tenant's calls use.

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use std::sync::Arc;
use std::time::Duration;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::connectors::app_config::{
    AppProbe, MAX_APP_TIMEOUT_MS, app_problem, check_app, check_toolkit, delete_in, save_in,
};
use crate::delivery::connectors::apps::{AppClient, AppEntry, AppRecord, Apps};
use crate::delivery::connectors::config::AuthSpec;
use crate::delivery::connectors::{HttpSpec, TenantConnectors};
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

    /// The tenant's connected apps, by toolkit.
    pub async fn connected_apps(&self, tenant: &TenantId) -> Result<Vec<AppRecord>> {
        crate::delivery::connectors::app_config::list(&self.store, tenant).await
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

    /// The tenant's connected apps with their credentials opened. One whose settings cannot be
    /// used is kept as broken: its calls are `unavailable`, its listing names it, and every
    /// other call of the tenant runs as usual.
    pub(crate) async fn build_apps(&self, tenant: &TenantId, into: &mut TenantConnectors) -> Result<()> {
        let mut apps = Apps::default();
        for r in self.connected_apps(tenant).await? {
            let entry = match self.app_client(tenant, &r).await {
                Ok(c) => AppEntry::Ready(Arc::new(c)),
                Err(e) => {
                    tracing::warn!(tenant = %tenant, toolkit = %r.toolkit, error = %e, "a connected app cannot be used");
                    AppEntry::Broken(app_problem(&e))
                }
            };
            apps.by_toolkit.insert(r.toolkit.clone(), entry);
        }
        into.apps = Arc::new(apps);
        Ok(())
    }

    /// `tool` as the pipeline decides it: for a call of a connected app's tool the kit
    /// permits, `connections.execute` with that tool's effect (its annotations under the
    /// kit's pin), read from `apps`, the tenant's apps the call will be carried out on. A
    /// toolkit no app is registered under, or a tool its app does not have, is a 404 here.
    pub(crate) async fn connected_tool(
        &self,
        subject: &crate::domain::principal::Subject,
        tool: policy::ToolSpec,
        checked: &policy::args::CheckedArgs,
        apps: &Apps,
    ) -> Result<policy::ToolSpec> {
        let Some((toolkit, name)) = &checked.toolkit else { return Ok(tool) };
        let links = self.cached_links(&subject.tenant, &subject.profile).await?;
        if !links[0].kit.toolkits.permits(toolkit, name) {
            // The pipeline refuses it with request_toolkit; what the app has does not matter.
            return Ok(tool);
        }
        if apps.problem(toolkit).is_some() {
            // Its settings cannot be used: the call is refused `unavailable` by this same
            // `apps`' connector (the caller carries the call out on it), with the step for a
            // person, before anything could run.
            return Ok(tool);
        }
        let listed = apps.tool(toolkit, name).await.map_err(|f| {
            Error::unavailable(
                "connected_app_unavailable",
                format!(
                    "the connected app `{toolkit}` did not list its tools ({}); try again shortly",
                    f.detail
                ),
                f.retry_after_secs,
            )
        })?;
        match listed {
            Some(listed) => {
                let effect = links[0].kit.toolkits.effect(toolkit, name, listed.declared);
                Ok(policy::ToolSpec { effect, ..tool })
            }
            // A 404 like any resource the tenant does not have; naive_connections_tools lists them.
            None if apps.by_toolkit.contains_key(toolkit.as_str()) => {
                Err(Error::NotFound { what: "connected app tool" })
            }
            None => Err(Error::NotFound { what: "connected app" }),
        }
    }

    async fn app_client(&self, tenant: &TenantId, r: &AppRecord) -> Result<AppClient> {
        let url = check_app(&r.app)?;
        let value = |v: String| HeaderValue::from_str(&v).expect("header secrets are checked when opened");
        let credential = match &r.app.auth {
            AuthSpec::None | AuthSpec::Hmac { .. } => None,
            AuthSpec::Bearer { secret } => Some((
                AUTHORIZATION,
                value(format!("Bearer {}", self.open_header_secret(tenant, secret).await?)),
            )),
            AuthSpec::Basic { secret } => {
                let encoded = base64::engine::general_purpose::STANDARD
                    .encode(self.open_header_secret(tenant, secret).await?);
                Some((AUTHORIZATION, value(format!("Basic {encoded}"))))
            }
            AuthSpec::Header { header, secret } => {
                let name = HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| Error::invalid("invalid_header_name", "not a header name"))?;
                Some((name, value(self.open_header_secret(tenant, secret).await?)))
            }
        };
        let timeout = Duration::from_millis(r.app.timeout_ms.min(MAX_APP_TIMEOUT_MS));
        Ok(AppClient::new(r.toolkit.clone(), url, self.egress.clone(), timeout, credential))
    }
}
