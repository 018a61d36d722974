//! The caches every governed call reads: a profile's chain with its effective kits, a
//! kit, a tenant's connectors and connected apps, the shadows running on a kit, the
//! tenant's runtime client and the catalog's tools. Each is rebuilt from its owner on a miss.

use std::sync::Arc;

use base64::Engine as _;
use policy::{Kit, ToolSpec};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};

use crate::Gateway;
use crate::delivery::connectors::app_config::{MAX_APP_TIMEOUT_MS, app_problem, check_app};
use crate::delivery::connectors::apps::{AppClient, AppEntry, AppRecord, Apps};
use crate::delivery::connectors::config::{AuthSpec, ConnectorSpec, HttpSpec, check_header};
use crate::delivery::connectors::http::{Credential, Http};
use crate::delivery::connectors::runtime::TeamRuntime;
use crate::delivery::connectors::{Broken, Connector, TenantConnectors};
use crate::delivery::runtime::client::RuntimeClient;
use crate::delivery::runtime::registry::{RuntimeRow, SECRET_NAME, check_url, runtime_row};
use crate::domain::chain::{self, Link};
use crate::domain::shadow::{self, ShadowChain};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    /// The profile and its ancestors with their effective kits, from the cache when possible.
    pub(crate) async fn cached_links(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
    ) -> Result<Arc<Vec<Link>>> {
        if let Some(l) = self.links_cache.get(profile)
            && &l[0].tenant == tenant
        {
            return Ok(l);
        }
        let generation = self.links_cache.generation();
        // Boxed, as the other misses below: a miss is rare, and its future would otherwise
        // make every call's future (which holds each await's future) that much bigger to copy.
        let links = Arc::new(Box::pin(self.links(tenant, profile)).await?);
        self.links_cache.insert(generation, profile.clone(), links.clone());
        Ok(links)
    }

    /// The profile and its ancestors with their statuses and effective (narrowed) kits.
    pub(crate) async fn links(&self, tenant: &TenantId, profile: &ProfileId) -> Result<Vec<Link>> {
        let rows = chain::rows(&self.store, tenant, profile).await?;
        let mut kits = Vec::with_capacity(rows.len());
        for (_, kit_name, _) in &rows {
            kits.push(self.cached_kit(tenant, kit_name).await?);
        }
        chain::assemble(tenant, rows, kits)
    }

    /// Each profile in `chain`'s effective kit, nearest first.
    pub async fn effective_kits(&self, tenant: &TenantId, chain: &[ProfileId]) -> Result<Vec<Kit>> {
        let Some(first) = chain.first() else { return Ok(Vec::new()) };
        Ok(self.links(tenant, first).await?.into_iter().map(|l| l.kit).collect())
    }

    pub(crate) fn tool(&self, action: &str) -> Result<ToolSpec> {
        self.catalog.get(action).cloned().ok_or_else(|| {
            Error::invalid(
                "unknown_action",
                format!("`{action}` is not a known action; actions look like `cards.charge` or `web.read`"),
            )
        })
    }

    /// The current version of a kit, from the cache when this process has seen it.
    pub(crate) async fn cached_kit(&self, tenant: &TenantId, name: &str) -> Result<Kit> {
        let key = (tenant.clone(), name.to_string());
        if let Some(k) = self.kit_cache.get(&key) {
            return Ok(k);
        }
        let generation = self.kit_cache.generation();
        let kit = self.current_kit(tenant, name).await?.kit;
        self.kit_cache.insert(generation, key, kit.clone());
        Ok(kit)
    }

    pub(crate) async fn tenant_connectors(&self, tenant: &TenantId) -> Result<Arc<TenantConnectors>> {
        if let Some(c) = self.connector_cache.get(tenant) {
            return Ok(c);
        }
        let generation = self.connector_cache.generation();
        let built = Arc::new(Box::pin(self.build_connectors(tenant)).await?);
        self.connector_cache.insert(generation, tenant.clone(), built.clone());
        Ok(built)
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
        // A connected app's client future is some 6 KB; every governed call holds this one.
        let listed = Box::pin(apps.tool(toolkit, name)).await.map_err(|f| {
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

    /// The shadows running on the kits of the chain `links`, each as the chain's effective
    /// kits with the draft in its kit's place ([`ShadowChain`]): what the deciding job
    /// evaluates beside the live kits. Nothing to build when none runs (a cached lookup per
    /// kit of the chain).
    pub(crate) async fn shadows_on(
        &self,
        tenant: &TenantId,
        links: &[crate::domain::chain::Link],
    ) -> Result<Arc<Vec<ShadowChain>>> {
        let mut out = Vec::new();
        for (level, l) in links.iter().enumerate() {
            let name = &l.kit.name;
            if links[..level].iter().any(|x| &x.kit.name == name) {
                continue;
            }
            let Some(draft) = self.shadow_for(tenant, name).await? else { continue };
            let mut own = Vec::with_capacity(links.len());
            for x in links {
                own.push(match &x.kit.name == name {
                    true => (*draft).clone(),
                    false => self.cached_kit(tenant, &x.kit.name).await?,
                });
            }
            let kits = crate::domain::chain::narrowed(own);
            out.push(ShadowChain { name: name.clone(), live_version: l.kit.version.0, kits });
        }
        Ok(Arc::new(out))
    }

    /// A client for the tenant's runtime, its secret opened; `None` when none is registered.
    pub(crate) async fn runtime_client(&self, tenant: &TenantId) -> Result<Option<RuntimeClient>> {
        let Some((url, ..)) = self.runtime_row(tenant).await? else { return Ok(None) };
        let url = check_url(&url)?;
        let secret = self.open_secret(tenant, SECRET_NAME).await?;
        Ok(Some(RuntimeClient::new(url, secret, self.egress.clone())))
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

    pub(crate) async fn app_client(&self, tenant: &TenantId, r: &AppRecord) -> Result<AppClient> {
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
        let timeout = std::time::Duration::from_millis(r.app.timeout_ms.min(MAX_APP_TIMEOUT_MS));
        Ok(AppClient::new(r.toolkit.clone(), url, self.egress.clone(), timeout, credential))
    }

    pub(crate) async fn runtime_row(&self, tenant: &TenantId) -> Result<Option<RuntimeRow>> {
        runtime_row(&self.store, tenant).await
    }

    pub(crate) async fn http_connector(&self, tenant: &TenantId, h: &HttpSpec) -> Result<Http> {
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
        Ok(Http::new(self.egress.clone(), url, std::time::Duration::from_millis(h.timeout_ms), credential))
    }

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

    /// The shadow of the kit `name`, cached.
    pub(crate) async fn shadow_for(&self, tenant: &TenantId, name: &str) -> Result<Option<Arc<Kit>>> {
        let key = (tenant.clone(), name.to_string());
        if let Some(s) = self.shadow_cache.get(&key) {
            return Ok(s);
        }
        let generation = self.shadow_cache.generation();
        let s = shadow::get(&self.store, tenant, name).await?.map(|s| Arc::new(s.kit));
        self.shadow_cache.insert(generation, key, s.clone());
        Ok(s)
    }
}
