//! Connectors as operations: listing and setting a tenant's connectors (checked), testing one,
//! and building, caching and forgetting the connectors each call is carried out on.

use policy::ToolSpec;
use std::sync::Arc;
use std::time::Duration;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::connectors::config::{
    AuthSpec, ConnectorRecord, ConnectorSpec, HttpSpec, Target, check_header, save_in,
};
use crate::delivery::connectors::http::{Credential, Http, Probe};
use crate::delivery::connectors::runtime::TeamRuntime;
use crate::delivery::connectors::{Broken, Connector, TenantConnectors};
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's configured connectors; every target not listed runs on the sandbox.
    pub async fn connectors(&self, tenant: &TenantId) -> Result<Vec<ConnectorRecord>> {
        crate::delivery::connectors::config::list(&self.store, tenant).await
    }

    /// The tenant's configured connectors, each with why it cannot run now, if it cannot.
    pub async fn connectors_checked(&self, tenant: &TenantId) -> Result<Vec<ConnectorRecord>> {
        let built = self.tenant_connectors(tenant).await?;
        let mut records = self.connectors(tenant).await?;
        for r in &mut records {
            r.problem = built.problems.get(&r.target).cloned();
        }
        Ok(records)
    }

    /// Sets where `target`'s calls run; `sandbox` returns it to the default.
    pub async fn set_connector(
        &self,
        tenant: &TenantId,
        target: &str,
        spec: ConnectorSpec,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        let target = Target::parse(target, &self.catalog)?.as_str().to_string();
        if let ConnectorSpec::Http(h) = &spec {
            self.check_egress(&h.check()?).await?;
        }
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write(move |c| save_in(c, &t, &target, &spec, &a, via)).await?;
        self.connectors_changed(tenant);
        Ok(())
    }

    /// Sends `target`'s connector a test probe and reports what came back; the sandbox
    /// always answers.
    pub async fn test_connector(&self, tenant: &TenantId, target: &str) -> Result<Probe> {
        let target = Target::parse(target, &self.catalog)?;
        let spec = self.connectors(tenant).await?.into_iter().find(|r| r.target == target.as_str());
        let Some(ConnectorRecord { connector: ConnectorSpec::Http(h), .. }) = spec else {
            return Ok(Probe {
                ok: true,
                status: None,
                latency_ms: 0,
                answer: "sandbox: built in, answers every action in-process; nothing real happens".into(),
            });
        };
        Ok(self.http_connector(tenant, &h).await?.probe().await)
    }

    /// The connector `tool`'s calls for `tenant` run on now.
    pub(crate) async fn connector_for(
        &self,
        tenant: &TenantId,
        tool: &ToolSpec,
    ) -> Result<Arc<dyn Connector>> {
        Ok(self.tenant_connectors(tenant).await?.pick(tool, &self.sandbox))
    }

    /// The tenant's connected apps, as its `connections` calls reach them now.
    pub(crate) async fn apps_for(
        &self,
        tenant: &TenantId,
    ) -> Result<Arc<crate::delivery::connectors::apps::Apps>> {
        Ok(self.tenant_connectors(tenant).await?.apps.clone())
    }

    pub(crate) async fn tenant_connectors(&self, tenant: &TenantId) -> Result<Arc<TenantConnectors>> {
        if let Some(c) = self.connector_cache.get(tenant) {
            return Ok(c);
        }
        let generation = self.connector_cache.generation();
        let built = Arc::new(self.build_connectors(tenant).await?);
        self.connector_cache.insert(generation, tenant.clone(), built.clone());
        Ok(built)
    }

    /// Every configured connector of the tenant, credentials opened. One that cannot run (its
    /// credential does not open or cannot travel in a header, its URL is refused) is built
    /// broken: its calls are `unavailable`, and every other call of the tenant runs as usual.
    async fn build_connectors(&self, tenant: &TenantId) -> Result<TenantConnectors> {
        let mut built = TenantConnectors {
            by_target: Default::default(),
            problems: Default::default(),
            apps: Default::default(),
            runtime: Arc::new(self.build_runtime(tenant).await?),
        };
        for r in self.connectors(tenant).await? {
            let ConnectorSpec::Http(h) = &r.connector else { continue };
            let c: Arc<dyn Connector> = match self.http_connector(tenant, h).await {
                Ok(http) => Arc::new(http),
                Err(e) => {
                    tracing::warn!(tenant = %tenant, target = %r.target, error = %e, "a connector cannot run");
                    built.problems.insert(r.target.clone(), e.code().to_string());
                    Arc::new(Broken { code: "connector_misconfigured" })
                }
            };
            built.by_target.insert(r.target, c);
        }
        self.build_apps(tenant, &mut built).await?;
        Ok(built)
    }

    async fn http_connector(&self, tenant: &TenantId, h: &HttpSpec) -> Result<Http> {
        let url = h.check()?;
        let credential = match &h.auth {
            AuthSpec::None => Credential::None,
            AuthSpec::Bearer { secret } => Credential::Bearer(self.open_header_secret(tenant, secret).await?),
            AuthSpec::Basic { secret } => Credential::Basic(self.open_header_secret(tenant, secret).await?),
            AuthSpec::Header { header, secret } => {
                Credential::Header(check_header(header)?, self.open_header_secret(tenant, secret).await?)
            }
            AuthSpec::Hmac { secret } => Credential::Hmac(self.open_secret(tenant, secret).await?),
        };
        Ok(Http::new(self.egress.clone(), url, Duration::from_millis(h.timeout_ms), credential))
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

    /// Forgets the tenant's built connectors, after one of its connectors, apps, secrets or
    /// its runtime changed here; other tenants' stay.
    pub(crate) fn connectors_changed(&self, tenant: &TenantId) {
        self.connector_cache.invalidate_key(tenant);
    }

    /// Forgets every tenant's built connectors, after another instance changed something.
    pub(crate) fn all_connectors_changed(&self) {
        self.connector_cache.invalidate();
    }
}

impl Gateway {
    /// The tenant's runtime connector, its secret opened; without a usable registration every
    /// write is `unavailable` with the reason and `teams.status` says so.
    pub(crate) async fn build_runtime(&self, tenant: &TenantId) -> Result<TeamRuntime> {
        let (client, missing) = match self.runtime_client(tenant).await {
            Ok(Some(c)) => (Some(c), ""),
            Ok(None) => (None, "runtime_not_registered"),
            Err(e) => {
                tracing::warn!(tenant = %tenant, error = %e, "the team runtime cannot be used");
                (None, "runtime_secret_unavailable")
            }
        };
        let max_queued = self.config.outbox.max_queued;
        Ok(TeamRuntime { tenant: tenant.clone(), client, missing, store: self.store.clone(), max_queued })
    }
}
