//! Server functions behind a console user's own page (`/account`): who they are, their roles,
//! and their personal API tokens, which they create (the secret shown once, on the page the
//! form lands on) and revoke. Every signed-in user has this page; a token can carry only
//! roles its user holds.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::api::profiles::NewSecret;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenRow {
    pub id: String,
    pub label: String,
    pub prefix: String,
    pub roles: Vec<String>,
    /// Whether it acts for the user's approval groups.
    pub groups: bool,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccountData {
    pub username: String,
    pub roles: Vec<String>,
    pub tokens: Vec<TokenRow>,
    /// The token just created by this session, if the URL names it: shown once.
    pub new_secret: Option<NewSecret>,
    /// The Slack user this person linked (its id and name), whose clicks are their votes.
    pub slack: Option<(String, String)>,
}

#[server]
pub async fn account_view(issued: Option<String>) -> Result<AccountData, ServerFnError> {
    use crate::api::session::{self, require_session};
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_session().await?;
    let slack = gw
        .slack_link_of(&tenant.id, &user.id)
        .await
        .map_err(to_fn_error)?
        .map(|l| (l.slack_user_id, l.slack_name));
    let tokens = gw
        .user_tokens(&user)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|t| TokenRow {
            id: t.id.to_string(),
            label: t.label,
            prefix: t.prefix,
            roles: t.roles.iter().map(|r| r.as_str().to_string()).collect(),
            groups: t.groups,
            created_at: t.created_at.to_rfc3339(),
            last_used_at: t.last_used_at.map(|t| t.to_rfc3339()),
            revoked_at: t.revoked_at.map(|t| t.to_rfc3339()),
        })
        .collect();
    let new_secret = match (issued, session::token().await?) {
        (Some(id), Some(session)) => gw
            .take_secret(&session, &id)
            .await
            .map_err(to_fn_error)?
            .map(|token| NewSecret { key_id: id, token }),
        _ => None,
    };
    Ok(AccountData {
        username: user.username,
        roles: user.roles.iter().map(|r| r.as_str().to_string()).collect(),
        tokens,
        new_secret,
        slack,
    })
}

/// Removes the signed-in person's own Slack link: their clicks in Slack decide nothing until
/// they link again. A plain form post.
#[server(prefix = "/api", endpoint = "unlink_my_slack")]
pub async fn unlink_my_slack() -> Result<(), ServerFnError> {
    use crate::api::forms::{back_with_notice, form};
    use crate::api::session::require_session;
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, user) = require_session().await?;
        let Some(mine) = gw.slack_link_of(&tenant.id, &user.id).await.map_err(to_fn_error)? else {
            return Err(ServerFnError::new("not_found: your console user has no Slack user linked"));
        };
        let via = gateway::audit::activity::Transport::Console;
        gw.unlink_slack(&tenant.id, &mine.slack_user_id, &user.username, via).await.map_err(to_fn_error)?;
        back_with_notice("Unlinked your Slack user: a click in Slack decides nothing until you link again.")
            .await;
        Ok(())
    })
    .await
}

/// Creates a personal API token with the ticked roles (and, ticked, the user's approval
/// groups); the page it lands on shows it once.
#[server(prefix = "/api", endpoint = "create_token")]
pub async fn create_token(
    label: String,
    admin: Option<String>,
    approver: Option<String>,
    reviewer: Option<String>,
    finance: Option<String>,
    groups: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{
        forms::form,
        session::{self, require_session},
        users::ticked,
    };
    form(async {
        let (gw, _, user) = require_session().await?;
        let roles = ticked(admin, approver, reviewer, finance);
        let scope = (roles.as_slice(), groups.is_some());
        let (info, token) = gw.issue_user_token(&user, &label, scope).await.map_err(to_fn_error)?;
        let session = session::token()
            .await?
            .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
        gw.hand_over_secret(&session, info.id.as_str(), &token).await.map_err(to_fn_error)?;
        leptos_axum::redirect(&format!("/account?issued={}", info.id));
        Ok(())
    })
    .await
}

/// Revokes one of the signed-in user's tokens at once.
#[server(prefix = "/api", endpoint = "revoke_token")]
pub async fn revoke_token(token_id: String) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{forms::form, session::require_session};
    form(async {
        let (gw, _, user) = require_session().await?;
        let id = gateway::TokenId::parse(&token_id)
            .ok_or_else(|| ServerFnError::new("not_found: no such token"))?;
        gw.revoke_user_token(&user, &id).await.map_err(to_fn_error)?;
        Ok(())
    })
    .await
}
