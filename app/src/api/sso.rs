//! Server functions behind the users page's single sign-on section: the tenant's connection
//! as a form shows it, saving it, and testing it against the provider (admins only).
//!
//! The group mapping travels as text, one line per provider group:
//! `finance-team -> finance, approver, group:treasury` gives members of `finance-team` the
//! roles finance and approver and puts them in the approval group treasury.

// `save_sso` takes one argument per form field, and the client function the server macro
// generates beside it cannot carry an attribute.
#![allow(clippy::too_many_arguments, reason = "one argument per form field of a plain form post")]

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_roles,
};

/// The tenant's connection, as the form shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SsoView {
    /// Whether a connection is stored.
    pub stored: bool,
    pub issuer: String,
    pub client_id: String,
    pub scopes: String,
    pub groups_claim: String,
    pub mapping: String,
    pub default_role: String,
    pub create_users: bool,
    pub domains: String,
    pub required: bool,
    pub break_glass: String,
    /// What to register at the provider as the redirect URI.
    pub redirect_uri: String,
    /// The tenant's sign-in address (its people's bookmark).
    pub login_address: String,
    /// The users bound to the provider: (username, email, last sign-in).
    pub people: Vec<(String, String, String)>,
    /// Where the directory sends SCIM requests.
    pub scim_base: String,
    /// The SCIM token's prefix and when it was issued, if there is one.
    pub scim_token: Option<(String, String)>,
    /// A SCIM token just issued, shown this once.
    pub new_scim_token: Option<String>,
}

/// The mapping's lines, parsed; a line that does not read says which and why.
#[cfg(feature = "ssr")]
pub(crate) fn parse_mapping(text: &str) -> Result<Vec<gateway::domain::sso::GroupMapping>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().map(str::trim).enumerate().filter(|(_, l)| !l.is_empty()) {
        let (group, items) = line
            .split_once("->")
            .ok_or_else(|| format!("line {}: write `provider-group -> role, group:name`", n + 1))?;
        let mut m = gateway::domain::sso::GroupMapping {
            group: group.trim().to_string(),
            roles: Vec::new(),
            approval_groups: Vec::new(),
        };
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match (item.strip_prefix("group:"), gateway::Role::parse(item)) {
                (Some(g), _) => m.approval_groups.push(g.trim().to_string()),
                (None, Some(r)) => m.roles.push(r),
                (None, None) => {
                    return Err(format!(
                        "line {}: `{item}` is not a role (admin, approver, reviewer, finance) or `group:name`",
                        n + 1
                    ));
                }
            }
        }
        out.push(m);
    }
    Ok(out)
}

#[cfg(feature = "ssr")]
fn mapping_text(m: &[gateway::domain::sso::GroupMapping]) -> String {
    m.iter()
        .map(|m| {
            let items: Vec<String> = m
                .roles
                .iter()
                .map(|r| r.as_str().to_string())
                .chain(m.approval_groups.iter().map(|g| format!("group:{g}")))
                .collect();
            format!("{} -> {}", m.group, items.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[server]
pub async fn sso_settings(issued: Option<String>) -> Result<SsoView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "managing single sign-on").await?;
    let new_scim_token = match (issued.as_deref(), crate::api::session::token().await?) {
        (Some(SCIM_HANDOVER), Some(session)) => {
            gw.take_secret(&session, SCIM_HANDOVER).await.map_err(to_fn_error)?
        }
        _ => None,
    };
    let scim_token = gw
        .scim_token_info(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .map(|(prefix, at)| (prefix, at.to_rfc3339()));
    let base = gw.config().public_url.trim_end_matches('/').to_string();
    let users = gw.users(&tenant.id).await.map_err(to_fn_error)?;
    let people = gw
        .sso_identities(&tenant.id)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .filter_map(|i| {
            let u = users.iter().find(|u| u.id == i.user_id)?;
            Some((u.username.clone(), i.email.unwrap_or_default(), i.last_seen_at.to_rfc3339()))
        })
        .collect();
    let mut f = SsoView {
        redirect_uri: format!("{base}{}", gateway::ops::sso::CALLBACK_PATH),
        login_address: format!("{base}/login/sso/{}", tenant.id),
        people,
        scim_base: format!("{base}/scim/v2"),
        scim_token,
        new_scim_token,
        groups_claim: "groups".into(),
        scopes: "email profile".into(),
        ..Default::default()
    };
    match gw.sso_connection(&tenant.id).await {
        Ok(c) => {
            f.stored = true;
            f.issuer = c.issuer;
            f.client_id = c.client_id;
            f.scopes = c.scopes.join(" ");
            f.groups_claim = c.groups_claim;
            f.mapping = mapping_text(&c.mapping);
            f.default_role = c.default_role.map(|r| r.as_str().to_string()).unwrap_or_default();
            f.create_users = c.create_users;
            f.domains = c.domains.join(" ");
            f.required = c.required;
            f.break_glass = c.break_glass.unwrap_or_default();
        }
        Err(gateway::Error::NotFound { .. }) => {}
        Err(e) => return Err(to_fn_error(e)),
    }
    Ok(f)
}

/// Saves the tenant's connection (admin only). A plain form post; an empty client secret
/// keeps the stored one.
#[server(prefix = "/api", endpoint = "save_sso")]
pub async fn save_sso(
    issuer: String,
    client_id: String,
    client_secret: String,
    scopes: String,
    groups_claim: String,
    mapping: String,
    default_role: String,
    create_users: Option<String>,
    domains: String,
    required: Option<String>,
    break_glass: String,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::audit::activity::Transport;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing single sign-on").await?;
        let mapping =
            parse_mapping(&mapping).map_err(|m| ServerFnError::new(format!("invalid_mapping: {m}")))?;
        let words = |s: &str| {
            s.split([' ', ',', '\n']).map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect()
        };
        let settings = gateway::domain::sso::SsoSettings {
            issuer,
            client_id: client_id.trim().to_string(),
            client_secret: Some(client_secret).filter(|s| !s.is_empty()),
            scopes: words(&scopes),
            groups_claim: groups_claim.trim().to_string(),
            mapping,
            default_role: gateway::Role::parse(default_role.trim()),
            create_users: create_users.is_some(),
            domains: words(&domains),
            required: required.is_some(),
            break_glass: Some(break_glass.trim().to_string()).filter(|s| !s.is_empty()),
        };
        gw.put_sso_connection(&tenant.id, settings, &by.username, Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice("Saved single sign-on; people sign in with it from their next sign-in.").await;
        Ok(())
    })
    .await
}

/// Reads the provider's discovery document and keys now (admin only). A plain form post.
#[server(prefix = "/api", endpoint = "test_sso")]
pub async fn test_sso() -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "managing single sign-on").await?;
        let p = gw.test_sso_connection(&tenant.id).await.map_err(to_fn_error)?;
        back_with_notice(&format!(
            "The provider {} answered: sign-in goes to {}, with {} signing key(s) published.",
            p.issuer, p.authorization_endpoint, p.keys
        ))
        .await;
        Ok(())
    })
    .await
}

/// The handover name a new SCIM token waits under for the issuing session.
pub const SCIM_HANDOVER: &str = "scim-token";

/// Issues the tenant's SCIM token (admin only), replacing any other; the users page shows it
/// once. A plain form post.
#[server(prefix = "/api", endpoint = "create_scim_token")]
pub async fn create_scim_token() -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::audit::activity::Transport;
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing provisioning").await?;
        let session = crate::api::session::token()
            .await?
            .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
        let token = gw.create_scim_token(&tenant.id, &by.username, Transport::Console).await.map_err(to_fn_error)?;
        gw.hand_over_secret(&session, SCIM_HANDOVER, &token).await.map_err(to_fn_error)?;
        leptos_axum::redirect(&format!("/users?issued={SCIM_HANDOVER}&done=Issued+a+SCIM+token%3B+the+one+before+stopped+working+now.#scim"));
        Ok(())
    })
    .await
}
