//! Registering a tenant's connected apps ([`super::apps`]): a toolkit name, the app's MCP
//! URL, a timeout and a credential from the vault, checked before anything is stored, every
//! change in the activity log. A registered app's credential is opened when the tenant's
//! connectors are built, so a change governs the next call on this instance at once (and on
//! others within [`crate::cache::MAX_AGE`]).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::HttpSpec;
use super::apps::{AppRecord, AppTool};
use super::config::AuthSpec;
use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
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
pub(crate) fn check_app(spec: &HttpSpec) -> Result<url::Url> {
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

/// The tenant's connected apps, by toolkit.
pub(crate) async fn list(store: &crate::store::Store, tenant: &TenantId) -> Result<Vec<AppRecord>> {
    let sql = "SELECT toolkit, spec, updated_by, updated_at FROM connected_apps WHERE tenant_id = ? ORDER BY toolkit";
    let rows: Vec<AppRow> = store.all(sql, &[tenant]).await?;
    rows.into_iter().map(record).collect()
}

pub(crate) fn record((toolkit, spec, updated_by, updated_at): AppRow) -> Result<AppRecord> {
    let app = serde_json::from_str(&spec).map_err(|e| {
        Error::internal("storage_decode", format!("a stored connected app does not read back: {e}"))
    })?;
    Ok(AppRecord { toolkit, app, updated_by, updated_at, problem: None })
}

pub(crate) fn save_in(
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
            .verdict(Verdict::Mcp)
            .detail(json!({ "toolkit": toolkit, "connector": "mcp", "url": spec.url, "secret": secret })),
    )?;
    Ok(())
}

pub(crate) fn delete_in(
    c: &dyn Tx,
    tenant: &TenantId,
    toolkit: &str,
    actor: &str,
    via: Transport,
) -> Result<()> {
    if c.exec("DELETE FROM connected_apps WHERE tenant_id = ? AND toolkit = ?", &[tenant, &toolkit])? == 0 {
        return Err(Error::NotFound { what: "connected app" });
    }
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict(Verdict::Removed)
            .detail(json!({ "toolkit": toolkit, "connector": "mcp" })),
    )?;
    Ok(())
}

/// The stable code a broken app's calls and listing show for why its settings cannot be used.
pub(crate) fn app_problem(e: &Error) -> &'static str {
    match e.code() {
        "invalid_secret_value" => "connected_app_secret_unusable",
        "unknown_secret" => "connected_app_secret_missing",
        _ => "connected_app_misconfigured",
    }
}
