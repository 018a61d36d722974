//! Server functions behind connecting an MCP client with OAuth (docs/mcp.md#connecting-with-oauth):
//! the consent page's view of a checked authorization request, and a profile's connected
//! clients with their revocation. The consent itself posts to `/oauth/authorize` (the server's
//! `http::oauth`), which answers the client.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// An authorization request's parameters, as the consent page carries them to its form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizeParams {
    pub response_type: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub code_challenge_method: String,
    pub resource: Option<String>,
    pub scope: Option<String>,
}

/// What the consent page shows: who asks, where they will be sent, and what they may act as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentView {
    pub client_name: String,
    pub client_id: String,
    pub redirect_host: String,
    pub resource: String,
    /// Active profiles the person may assign, as (id, name), in tree order.
    pub profiles: Vec<(String, String)>,
    /// Whether this person may connect clients (admins).
    pub may_connect: bool,
}

/// The host of a URL, to say where a client lives or sends the browser.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or_default().to_string()
}

/// A connected client, as the profile page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionRow {
    pub id: String,
    pub client_name: String,
    pub client_host: String,
    pub connected_by: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

#[server]
pub async fn consent_request(params: AuthorizeParams) -> Result<ConsentView, ServerFnError> {
    use crate::api::session::require_session;
    use crate::api::to_fn_error;
    use gateway::ops::oauth::{AuthorizeRequest, Refusal};
    let (gw, tenant, user) = require_session().await?;
    let req = AuthorizeRequest {
        response_type: params.response_type,
        client_id: params.client_id,
        redirect_uri: params.redirect_uri.clone(),
        state: params.state,
        code_challenge: params.code_challenge,
        code_challenge_method: params.code_challenge_method,
        resource: params.resource,
        scope: params.scope,
    };
    let doc = match gw.oauth_check(&req).await {
        Ok(doc) => doc,
        Err(Refusal::Show(e)) => return Err(to_fn_error(e)),
        Err(Refusal::Redirect(_)) => {
            return Err(ServerFnError::new(
                "invalid_request: the client's request is not valid; start again from the client",
            ));
        }
    };
    gw.check_client_accepted(&tenant.id, &doc).await.map_err(to_fn_error)?;
    let profiles = gw
        .profile_tree(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .filter(|e| e.profile.status == policy::SubjectStatus::Active)
        .map(|e| (e.profile.id.to_string(), format!("{}{}", "— ".repeat(e.depth), e.profile.name)))
        .collect();
    Ok(ConsentView {
        client_name: doc.client_name,
        client_id: doc.client_id,
        redirect_host: host_of(&params.redirect_uri),
        resource: gw.mcp_resource(),
        profiles,
        may_connect: gw.may_connect_clients(&user).await.map_err(to_fn_error)?,
    })
}

/// A profile's connected clients, for its page.
#[cfg(feature = "ssr")]
pub(crate) async fn connection_rows(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
    profile: &gateway::ProfileId,
) -> Result<Vec<ConnectionRow>, ServerFnError> {
    let rows = gw.oauth_connections(tenant, profile).await.map_err(crate::api::to_fn_error)?;
    Ok(rows
        .into_iter()
        .map(|c| ConnectionRow {
            id: c.id.to_string(),
            client_host: host_of(&c.client_id),
            client_name: c.client_name,
            connected_by: c.connected_by,
            created_at: c.created_at.to_rfc3339(),
            last_used_at: c.last_used_at.map(|t| t.to_rfc3339()),
            revoked_at: c.revoked_at.map(|t| t.to_rfc3339()),
        })
        .collect())
}

#[server(prefix = "/api", endpoint = "revoke_connection")]
pub async fn revoke_connection(connection_id: String) -> Result<(), ServerFnError> {
    use crate::api::forms::{back_with_notice, form};
    use crate::api::session::require_roles;
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "revoking a connected client").await?;
        let id = gateway::ids::ConnectionId::parse(&connection_id)
            .ok_or_else(|| ServerFnError::new("not_found: no such connection"))?;
        let c = gw.revoke_oauth_connection(&tenant.id, &id, &by.username).await.map_err(to_fn_error)?;
        back_with_notice(&format!("Revoked {}: its next request is refused.", c.client_name)).await;
        Ok(())
    })
    .await
}

/// The users page's MCP clients section: whether clients that register themselves are
/// accepted, who besides the admins may connect clients, and whom an admin could allow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSettings {
    pub dynamic_clients: bool,
    /// (user id, username) of the people allowed.
    pub connectors: Vec<(String, String)>,
    /// (user id, username) of the people not yet allowed who are not admins.
    pub others: Vec<(String, String)>,
}

#[server]
pub async fn client_settings_view() -> Result<ClientSettings, ServerFnError> {
    use crate::api::session::require_roles;
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "managing MCP clients").await?;
    let (dynamic_clients, allowed) = gw.oauth_settings(&tenant.id).await.map_err(to_fn_error)?;
    let users = gw.users(&tenant.id).await.map_err(to_fn_error)?;
    let others = users
        .into_iter()
        .filter(|u| !u.has(gateway::Role::Admin) && !allowed.iter().any(|(id, _)| *id == u.id))
        .map(|u| (u.id.to_string(), u.username))
        .collect();
    let connectors = allowed.into_iter().map(|(id, name)| (id.to_string(), name)).collect();
    Ok(ClientSettings { dynamic_clients, connectors, others })
}

#[server(prefix = "/api", endpoint = "set_dynamic_clients")]
pub async fn set_dynamic_clients(accept: Option<String>) -> Result<(), ServerFnError> {
    use crate::api::forms::{back_with_notice, form};
    use crate::api::session::require_roles;
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing MCP clients").await?;
        let on = accept.is_some();
        gw.set_oauth_dynamic_clients(&tenant.id, on, &by.username).await.map_err(to_fn_error)?;
        let said = if on {
            "Clients that register themselves are accepted now."
        } else {
            "Only clients with a metadata document are accepted now."
        };
        back_with_notice(said).await;
        Ok(())
    })
    .await
}

#[server(prefix = "/api", endpoint = "set_client_connector")]
pub async fn set_client_connector(user_id: String, allow: String) -> Result<(), ServerFnError> {
    use crate::api::forms::{back_with_notice, form};
    use crate::api::session::require_roles;
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing MCP clients").await?;
        let id =
            gateway::UserId::parse(&user_id).ok_or_else(|| ServerFnError::new("not_found: no such user"))?;
        let allow = allow == "yes";
        gw.set_client_connector(&tenant.id, &id, allow, &by.username).await.map_err(to_fn_error)?;
        back_with_notice(if allow {
            "Allowed to connect MCP clients."
        } else {
            "No longer allowed to connect MCP clients."
        })
        .await;
        Ok(())
    })
    .await
}
