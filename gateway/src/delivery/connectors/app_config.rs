//! Registering a tenant's connected apps ([`super::apps`]): a toolkit name, the app's MCP
//! URL, a timeout and a credential from the vault, checked before anything is stored, every
//! change in the activity log. A registered app's credential is opened when the tenant's
//! connectors are built, so a change governs the next call on this instance at once (and on
//! others within [`crate::cache::MAX_AGE`]).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::json;

use super::apps::{AppClient, AppEntry, AppRecord, AppTool, Apps};
use super::config::AuthSpec;
use super::{HttpSpec, TenantConnectors};
use crate::Gateway;
use crate::audit::activity::{self, Kind, NewEntry, Transport};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;

/// The longest toolkit name.
pub const MAX_TOOLKIT_LEN: usize = 64;

/// What a test of a connected app found: its tools, or why it did not answer.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AppProbe {
    pub ok: bool,
    pub tools: Vec<AppTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A toolkit name: 1 to 64 of lowercase letters, digits, `-` and `_`, starting with a letter.
pub fn check_toolkit(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_TOOLKIT_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        return Ok(());
    }
    Err(Error::invalid(
        "invalid_toolkit",
        format!(
            "a toolkit name is 1 to {MAX_TOOLKIT_LEN} lowercase letters, digits, - and _, starting with a letter (such as `tracker`)"
        ),
    ))
}

/// The longest an app may take to answer one request.
pub const MAX_APP_TIMEOUT_MS: u64 = 60_000;

/// Checks an app's settings; the HMAC credential kind signs connector bodies and has no
/// meaning for an MCP server. The URL as it will be called.
fn check_app(spec: &HttpSpec) -> Result<url::Url> {
    let url = spec.check()?;
    if spec.timeout_ms > MAX_APP_TIMEOUT_MS {
        return Err(Error::invalid(
            "invalid_timeout",
            format!("a connected app's timeout_ms is at most {MAX_APP_TIMEOUT_MS} milliseconds"),
        ));
    }
    if matches!(spec.auth, AuthSpec::Hmac { .. }) {
        return Err(Error::invalid(
            "invalid_app_auth",
            "a connected app takes a bearer, basic or header credential (or none), not hmac",
        ));
    }
    Ok(url)
}

type AppRow = (String, String, String, DateTime<Utc>);

fn record((toolkit, spec, updated_by, updated_at): AppRow) -> Result<AppRecord> {
    let app = serde_json::from_str(&spec).map_err(|e| {
        Error::internal("storage_decode", format!("a stored connected app does not read back: {e}"))
    })?;
    Ok(AppRecord { toolkit, app, updated_by, updated_at, problem: None })
}

fn save_in(
    c: &dyn Tx,
    tenant: &TenantId,
    toolkit: &str,
    spec: &HttpSpec,
    actor: &str,
    via: Transport,
) -> Result<()> {
    let secret = spec.auth.secret();
    super::config::require_secret(c, tenant, secret)?;
    let body = serde_json::to_string(spec).expect("specs serialize");
    c.exec(
        "INSERT INTO connected_apps (tenant_id, toolkit, spec, secret_name, updated_by, updated_at) VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (tenant_id, toolkit) DO UPDATE SET spec = excluded.spec, secret_name = excluded.secret_name, \
         updated_by = excluded.updated_by, updated_at = excluded.updated_at",
        &[tenant, &toolkit, &body, &secret, &actor, &Utc::now()],
    )?;
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict("mcp")
            .detail(json!({ "toolkit": toolkit, "connector": "mcp", "url": spec.url, "secret": secret })),
    )?;
    Ok(())
}

fn delete_in(c: &dyn Tx, tenant: &TenantId, toolkit: &str, actor: &str, via: Transport) -> Result<()> {
    if c.exec("DELETE FROM connected_apps WHERE tenant_id = ? AND toolkit = ?", &[tenant, &toolkit])? == 0 {
        return Err(Error::NotFound { what: "connected app" });
    }
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict("removed")
            .detail(json!({ "toolkit": toolkit, "connector": "mcp" })),
    )?;
    Ok(())
}

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
        let rows: Vec<AppRow> = self
            .store
            .all(
                "SELECT toolkit, spec, updated_by, updated_at FROM connected_apps WHERE tenant_id = ? ORDER BY toolkit",
                &[tenant],
            )
            .await?;
        rows.into_iter().map(record).collect()
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

/// The stable code a broken app's calls and listing show for why its settings cannot be used.
fn app_problem(e: &Error) -> &'static str {
    match e.code() {
        "invalid_secret_value" => "connected_app_secret_unusable",
        "unknown_secret" => "connected_app_secret_missing",
        _ => "connected_app_misconfigured",
    }
}
