//! Server functions for one agent profile: its keys (issue, rotate, revoke) and revoking the
//! profile after a preview of the cascade.
//!
//! Guarantees: every action is an admin's (docs/architecture.md#identities-and-roles) and is a POST; a
//! key's secret leaves the
//! server exactly once. Because the forms work without JavaScript, a new secret cannot travel
//! in a response body the browser keeps: it waits, sealed, for the issuing session and key
//! (`gateway::domain::handovers`, in the database, so the redirected page may reach any instance),
//! the page it redirects to takes it (and so deletes it), and a reload shows only the key's
//! prefix.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRow {
    pub id: String,
    pub name: String,
    pub depth: usize,
    pub kit_name: String,
    pub status: String,
    pub runtime: String,
    pub runtime_reason: Option<String>,
    pub owner: Option<String>,
    /// The parent profile's id, for a sub-agent.
    pub parent_id: Option<String>,
    pub created_at: String,
}

/// The tenant's profiles in tree order; with `runtime` (`running` or `stopped`), only the
/// active ones whose hosted runtime is in that state.
#[server]
pub async fn list_profiles(runtime: String) -> Result<Vec<ProfileRow>, ServerFnError> {
    let (gw, tenant, _) = require_view("profiles").await?;
    let rows = profile_rows(&gw, &tenant.id).await?;
    Ok(match runtime.trim() {
        "" => rows,
        state @ ("running" | "stopped") => {
            rows.into_iter().filter(|p| p.runtime == state && p.status == "active").collect()
        }
        _ => return Err(ServerFnError::new("invalid_filter: runtime is running or stopped")),
    })
}

/// The tenant's profiles in tree order, as the profile pages show them.
#[cfg(feature = "ssr")]
pub(crate) async fn profile_rows(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
) -> Result<Vec<ProfileRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let users = gw.users(tenant).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(tenant).await.map_err(to_fn_error)?;
    Ok(tree
        .into_iter()
        .map(|e| {
            let p = e.profile;
            ProfileRow {
                id: p.id.to_string(),
                name: p.name,
                depth: e.depth,
                kit_name: p.kit_name,
                status: p.status.as_str().to_string(),
                runtime: p.runtime.as_str().to_string(),
                runtime_reason: p.runtime_reason,
                owner: p.owner.and_then(|o| users.iter().find(|u| u.id == o).map(|u| u.username.clone())),
                parent_id: p.parent.map(|id| id.to_string()),
                created_at: p.created_at.to_rfc3339(),
            }
        })
        .collect())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyRow {
    pub id: String,
    pub prefix: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    /// `active`, `expiring` (rotated, in its grace period), `expired` or `revoked`.
    pub state: String,
}

/// What revoking the profile would touch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CascadePreview {
    /// The profile and every sub-agent beneath it, by name.
    pub profiles: Vec<String>,
    pub approvals_denied: usize,
    pub holds_voided: usize,
}

/// A secret shown once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NewSecret {
    pub key_id: String,
    pub token: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileFull {
    pub profile: ProfileRow,
    pub parent: Option<String>,
    pub keys: Vec<KeyRow>,
    pub cascade: CascadePreview,
    /// The secret just issued or rotated by this session, if the URL names it.
    pub new_secret: Option<NewSecret>,
    /// Whether the viewer may change keys and revoke (admins).
    pub can_manage: bool,
    /// Where agents reach the gateway over MCP, as this page was reached.
    pub mcp_url: String,
    /// MCP clients connected through OAuth to act as this profile.
    pub connections: Vec<crate::api::oauth::ConnectionRow>,
}

#[cfg(feature = "ssr")]
fn parse_profile(id: &str) -> Result<gateway::ProfileId, ServerFnError> {
    gateway::ProfileId::parse(id).ok_or_else(|| ServerFnError::new("not_found: no such agent profile"))
}

#[cfg(feature = "ssr")]
fn parse_key(id: &str) -> Result<gateway::KeyId, ServerFnError> {
    gateway::KeyId::parse(id).ok_or_else(|| ServerFnError::new("not_found: no such key"))
}

#[cfg(feature = "ssr")]
fn key_row(k: gateway::domain::keys::KeyInfo, now: chrono::DateTime<chrono::Utc>) -> KeyRow {
    let state = match (k.revoked_at, k.expires_at) {
        (Some(_), _) => "revoked",
        (None, Some(e)) if e <= now => "expired",
        (None, Some(_)) => "expiring",
        (None, None) => "active",
    };
    KeyRow {
        id: k.id.to_string(),
        prefix: k.prefix,
        created_at: k.created_at.to_rfc3339(),
        last_used_at: k.last_used_at.map(|t| t.to_rfc3339()),
        expires_at: k.expires_at.map(|t| t.to_rfc3339()),
        revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        state: state.into(),
    }
}

/// Keeps the new secret for this session and sends the browser to the profile's page, which
/// shows it once.
#[cfg(feature = "ssr")]
async fn hand_over(
    profile: &gateway::ProfileId,
    issued: gateway::IssuedKey,
    done: &str,
) -> Result<(), ServerFnError> {
    let session = crate::api::session::token()
        .await?
        .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
    let gw = crate::api::gateway()?;
    gw.hand_over_secret(&session, issued.id.as_str(), &issued.token)
        .await
        .map_err(crate::api::to_fn_error)?;
    let done = crate::api::session::encode_query_value(done);
    leptos_axum::redirect(&format!(
        "/profiles/{}?issued={}&done={done}",
        profile.as_str(),
        issued.id.as_str()
    ));
    Ok(())
}

/// One profile's page: its place in the tree, its keys and what revoking it would touch.
#[server]
pub async fn profile_detail(id: String, issued: Option<String>) -> Result<ProfileFull, ServerFnError> {
    use crate::api::session;
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("profiles").await?;
    let pid = parse_profile(&id)?;
    let rows = profile_rows(&gw, &tenant.id).await?;
    let profile = rows
        .iter()
        .find(|p| p.id == id)
        .cloned()
        .ok_or_else(|| ServerFnError::new("not_found: no such agent profile"))?;
    let parent = profile
        .parent_id
        .as_ref()
        .and_then(|parent| rows.iter().find(|r| &r.id == parent).map(|r| r.name.clone()));
    let now = chrono::Utc::now();
    let keys =
        gw.keys(&tenant.id, &pid).await.map_err(to_fn_error)?.into_iter().map(|k| key_row(k, now)).collect();
    let report = gw.revoke_preview(&tenant.id, &pid).await.map_err(to_fn_error)?;
    let name_of = |id: &gateway::ProfileId| {
        rows.iter().find(|r| r.id == id.as_str()).map_or_else(|| id.to_string(), |r| r.name.clone())
    };
    let cascade = CascadePreview {
        profiles: report.profiles.iter().map(name_of).collect(),
        approvals_denied: report.approvals_denied.len(),
        holds_voided: report.holds_voided,
    };
    let new_secret = match (issued, session::token().await?) {
        (Some(key_id), Some(session)) => gw
            .take_secret(&session, &key_id)
            .await
            .map_err(to_fn_error)?
            .map(|token| NewSecret { key_id, token }),
        _ => None,
    };
    let can_manage = user.has(gateway::Role::Admin);
    let connections = crate::api::oauth::connection_rows(&gw, &tenant.id, &pid).await?;
    let mcp_url = mcp_url().await;
    Ok(ProfileFull { profile, parent, keys, cascade, new_secret, can_manage, mcp_url, connections })
}

/// The `/mcp` endpoint at the host and scheme this request came by (a proxy's, if it says).
#[cfg(feature = "ssr")]
async fn mcp_url() -> String {
    let headers: axum::http::HeaderMap = leptos_axum::extract().await.unwrap_or_default();
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let host = get("x-forwarded-host").or_else(|| get("host")).unwrap_or_else(|| "127.0.0.1:3000".into());
    let secure = use_context::<crate::api::session::CookieSettings>().is_some_and(|c| c.secure);
    let scheme = get("x-forwarded-proto").unwrap_or_else(|| if secure { "https" } else { "http" }.into());
    format!("{scheme}://{host}/mcp")
}

/// Issues a new key for the profile; the page it lands on shows the secret once.
#[server(prefix = "/api", endpoint = "create_key")]
pub async fn create_key(profile_id: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{forms::form, session::require_roles};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "managing keys").await?;
        let pid = parse_profile(&profile_id)?;
        let name = gw.profile(&tenant.id, &pid).await.map_err(to_fn_error)?.name;
        let (_, issued) = gw.issue_key(&tenant.id, &pid, &user.username).await.map_err(to_fn_error)?;
        let done = format!("Issued key {} for {name}; the profile's other keys keep working.", issued.id);
        hand_over(&pid, issued, &done).await
    })
    .await
}

/// Replaces a key; with a grace period the old one keeps working until it ends.
#[server(prefix = "/api", endpoint = "rotate_key")]
pub async fn rotate_key(
    profile_id: String,
    key_id: String,
    grace_secs: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{forms::form, session::require_roles};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "managing keys").await?;
        let pid = parse_profile(&profile_id)?;
        let grace = match grace_secs.as_deref().map(str::trim).filter(|g| !g.is_empty()) {
            None => None,
            Some(g) => Some(g.parse::<i64>().map_err(|_| {
                ServerFnError::new("invalid_grace: the grace period is a whole number of seconds")
            })?),
        };
        let (_, issued) = gw
            .rotate_key(&tenant.id, &pid, &parse_key(&key_id)?, grace, &user.username)
            .await
            .map_err(to_fn_error)?;
        let old = match grace.filter(|g| *g > 0) {
            None => "stopped working now".to_string(),
            Some(g) => {
                let until = chrono::Utc::now() + chrono::Duration::seconds(g);
                format!("keeps working until {} ({g} s of grace)", until.format("%Y-%m-%d %H:%M:%S UTC"))
            }
        };
        let done = format!("Rotated key {key_id} into key {}; the old key {old}.", issued.id);
        hand_over(&pid, issued, &done).await
    })
    .await
}

/// Revokes one key at once.
#[server(prefix = "/api", endpoint = "revoke_key")]
pub async fn revoke_key(profile_id: String, key_id: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{forms::form, session::require_roles};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "managing keys").await?;
        gw.revoke_key(&tenant.id, &parse_profile(&profile_id)?, &parse_key(&key_id)?, &user.username)
            .await
            .map_err(to_fn_error)?;
        let done = format!("Key {key_id} is revoked: its next call, over HTTP or MCP, gets 401.");
        crate::api::forms::back_with_notice(&done).await;
        Ok(())
    })
    .await
}

/// Revokes the profile and its sub-agents. The form carries the cascade the admin saw; if it
/// has grown since (a new sub-agent), nothing happens and the page shows the new preview.
#[server(prefix = "/api", endpoint = "revoke_profile")]
pub async fn revoke_profile(profile_id: String, confirm_count: usize) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{forms::form, session::require_roles};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "revoking agent profiles").await?;
        let pid = parse_profile(&profile_id)?;
        let r = gw
            .revoke_profile(&tenant.id, &pid, &user.username, Some(confirm_count))
            .await
            .map_err(to_fn_error)?;
        let done = format!(
            "Revoked {} profile(s) with their keys; {} pending approval(s) denied, {} hold(s) voided.",
            r.profiles.len(),
            r.approvals_denied.len(),
            r.holds_voided
        );
        crate::api::forms::back_with_notice(&done).await;
        Ok(())
    })
    .await
}
