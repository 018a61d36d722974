//! Who is signed in, and what they may open: the session cookie, the console's views and the
//! roles each needs, where each user lands, and the one check every server function makes.
//!
//! The session is the signed-in console user, read on every call from the HttpOnly session
//! cookie; every query is scoped to that user's tenant, and each view checks the user's roles
//! on the server ([`VIEWS`]). A call without a live session, or by a role without access,
//! fails with `signed_out:` or `forbidden:`, which the pages turn into a sign-in link or a 403
//! page.

use leptos::prelude::*;
use policy::Money;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{gateway, to_fn_error};

/// Who is looking at the console, for the top bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub username: String,
    pub tenant_name: String,
    pub tenant_credit: Money,
    /// The views this user's roles open, as (href, label), in navigation order.
    pub views: Vec<(String, String)>,
    /// Where this user's work starts ([`landing`]).
    pub landing: String,
}

/// One console view: its key, where it lives, its label in the navigation, and which roles
/// open it.
#[derive(Debug)]
pub struct View {
    pub key: &'static str,
    pub href: &'static str,
    pub label: &'static str,
    pub roles: &'static [&'static str],
}

const EVERYONE: &[&str] = &["admin", "approver", "reviewer", "finance"];

/// The console's views in navigation order, and who may open each
/// (docs/architecture.md#identities-and-roles): admins
/// everything, approvers the inbox, reviewers the proposals, finance spend and caps and
/// read-only elsewhere; the beliefs and the activity feed are for everyone signed in. The
/// navigation offers a user only the views their roles open; the server checks again.
pub const VIEWS: &[View] = &[
    View { key: "overview", href: "/overview", label: "Overview", roles: &["admin"] },
    View { key: "inbox", href: "/", label: "Inbox", roles: &["admin", "approver", "finance"] },
    View {
        key: "proposals",
        href: "/proposals",
        label: "Proposals",
        roles: &["admin", "reviewer", "finance"],
    },
    View { key: "beliefs", href: "/beliefs", label: "Beliefs", roles: EVERYONE },
    View { key: "kits", href: "/kits", label: "Kits", roles: &["admin", "finance"] },
    View { key: "spend", href: "/spend", label: "Spend", roles: &["admin", "finance"] },
    View { key: "activity", href: "/activity", label: "Activity", roles: EVERYONE },
    View { key: "profiles", href: "/profiles", label: "Profiles", roles: &["admin", "finance"] },
    View { key: "connectors", href: "/connectors", label: "Connectors", roles: &["admin"] },
    View { key: "runtime", href: "/runtime", label: "Runtime", roles: &["admin"] },
    View { key: "users", href: "/users", label: "Users", roles: &["admin"] },
];

/// The views a user with these roles opens, in navigation order.
pub fn views_for<R: AsRef<str>>(roles: &[R]) -> impl Iterator<Item = &'static View> + '_ {
    VIEWS.iter().filter(|v| roles.iter().any(|r| v.roles.contains(&r.as_ref())))
}

/// Where a user lands after signing in: the work of their first role in the order admin (the
/// overview of what needs them), approver (the inbox), reviewer (the proposals), finance
/// (spend); their account page when they have none of these.
pub fn landing<R: AsRef<str>>(roles: &[R]) -> &'static str {
    let has = |role: &str| roles.iter().any(|r| r.as_ref() == role);
    match () {
        _ if has("admin") => "/overview",
        _ if has("approver") => "/",
        _ if has("reviewer") => "/proposals",
        _ if has("finance") => "/spend",
        _ => "/account",
    }
}

/// The name of the session cookie over plain HTTP (local development).
pub const SESSION_COOKIE: &str = "naive_session";
/// Its name when cookies are Secure: the `__Host-` prefix makes the browser accept it only
/// from this host, over HTTPS, for every path, so no sibling domain can plant one.
pub const SECURE_SESSION_COOKIE: &str = "__Host-naive_session";

/// How the server names and marks the session cookie; the router puts it into context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieSettings {
    pub secure: bool,
}

impl CookieSettings {
    pub const fn name(self) -> &'static str {
        if self.secure { SECURE_SESSION_COOKIE } else { SESSION_COOKIE }
    }
}

/// Percent-encodes a value for a URL query (paths keep their slashes). The console and the
/// server's redirects both use it.
pub fn encode_query_value(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The session token in a `Cookie` header, if any, under the name `settings` give it (only
/// the `__Host-` one when cookies are secure).
pub fn session_token(cookie_header: &str, settings: CookieSettings) -> Option<&str> {
    cookie_header
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == settings.name())
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// The session cookie of this request.
#[cfg(feature = "ssr")]
pub(crate) async fn token() -> Result<Option<String>, ServerFnError> {
    let headers: axum::http::HeaderMap = leptos_axum::extract().await?;
    Ok(headers
        .get(axum::http::header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| {
            session_token(c, use_context::<CookieSettings>().unwrap_or(CookieSettings { secure: false }))
        })
        .map(str::to_string))
}

/// The signed-in user of this request and their tenant, or `None` when signed out.
#[cfg(feature = "ssr")]
pub(crate) async fn current()
-> Result<Option<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser)>, ServerFnError> {
    let gw = gateway()?;
    let Some(token) = token().await? else { return Ok(None) };
    let token = token.as_str();
    let Some(user) = gw.session_user(token).await.map_err(to_fn_error)? else { return Ok(None) };
    let tenant = gw.tenant(&user.tenant_id).await.map_err(to_fn_error)?;
    Ok(Some((gw, tenant, user)))
}

/// The signed-in user, or `signed_out:`.
#[cfg(feature = "ssr")]
pub(crate) async fn require_session()
-> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    current().await?.ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))
}

/// The signed-in user, if one of their roles may open `view`; otherwise `forbidden:` (and the
/// response becomes a 403).
#[cfg(feature = "ssr")]
pub(crate) async fn require_view(
    view: &str,
) -> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    let (gw, tenant, user) = require_session().await?;
    let allowed = VIEWS.iter().find(|v| v.key == view).map_or(&[][..], |v| v.roles);
    if user.roles.iter().any(|r| allowed.contains(&r.as_str())) {
        return Ok((gw, tenant, user));
    }
    if let Some(res) = use_context::<leptos_axum::ResponseOptions>() {
        res.set_status(axum::http::StatusCode::FORBIDDEN);
    }
    Err(ServerFnError::new(format!(
        "forbidden: {} cannot open this page; it needs one of these roles: {}",
        user.username,
        allowed.join(", ")
    )))
}

/// The signed-in user, if they hold one of `roles`; otherwise `forbidden:` saying that `what`
/// needs them. Every console action goes through this one check.
#[cfg(feature = "ssr")]
pub(crate) async fn require_roles(
    roles: &[gateway::Role],
    what: &str,
) -> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError> {
    let (gw, tenant, user) = require_session().await?;
    if !roles.iter().any(|r| user.has(*r)) {
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        return Err(ServerFnError::new(format!("forbidden: {what} needs the {} role", names.join(" or "))));
    }
    Ok((gw, tenant, user))
}

#[server]
pub async fn session_info() -> Result<Option<SessionSummary>, ServerFnError> {
    Ok(current().await?.map(|(_, t, u)| {
        let roles: Vec<&str> = u.roles.iter().map(|r| r.as_str()).collect();
        SessionSummary {
            views: views_for(&roles).map(|v| (v.href.to_string(), v.label.to_string())).collect(),
            landing: landing(&roles).to_string(),
            username: u.username,
            tenant_name: t.name,
            tenant_credit: t.credit,
        }
    }))
}
