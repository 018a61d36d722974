//! Server functions behind the Runtime page's Slack section (admins): set the tenant's Slack
//! app (its bot token and signing secret accepted once, into the vault, never sent back),
//! remove it, and remove a person's Slack link. The page reads the app and its links with the
//! rest of the Runtime page ([`crate::api::runtime::runtime_page`]). And the link page
//! (`/slack/link`), where a signed-in person links the Slack user a single-use link was sent
//! to ([`slack_link_view`], [`link_slack`]).
//!
//! Guarantees: admins only, but for linking oneself; each change goes through the gateway
//! function `/v1/slack` calls and is recorded as a console action by the person who made it.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_roles,
    to_fn_error,
};

/// The tenant's Slack app as the page shows it: never its secrets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlackView {
    pub team_name: String,
    pub team_id: String,
    pub channels: Vec<String>,
    pub updated_by: String,
    pub updated_at: String,
    /// The Request URL to paste under the app's Interactivity & Shortcuts.
    pub interactions_url: String,
    /// Who linked which Slack user: (Slack user id, Slack name, username, when).
    pub links: Vec<(String, String, String, String)>,
}

/// What a link code offers the signed-in person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkView {
    pub slack_name: String,
    pub slack_user_id: String,
    pub team_name: String,
    pub username: String,
    pub expires_at: String,
}

#[cfg(feature = "ssr")]
pub(crate) fn slack_view(
    a: gateway::delivery::slack::SlackApp,
    links: Vec<gateway::domain::slack_links::SlackLink>,
) -> SlackView {
    SlackView {
        team_name: a.team_name,
        team_id: a.team_id,
        channels: a.channels,
        updated_by: a.updated_by,
        updated_at: a.updated_at.to_rfc3339(),
        interactions_url: a.interactions_url,
        links: links
            .into_iter()
            .map(|l| (l.slack_user_id, l.slack_name, l.username, l.linked_at.to_rfc3339()))
            .collect(),
    }
}

/// Sets the Slack app: an empty secret field keeps the stored one; channels are separated by
/// commas, spaces or lines. A plain form post.
#[server(prefix = "/api", endpoint = "put_slack")]
pub async fn put_slack(
    bot_token: String,
    signing_secret: String,
    channels: String,
) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing the Slack app").await?;
        let given = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        let settings = gateway::delivery::slack::SlackSettings {
            bot_token: given(bot_token),
            signing_secret: given(signing_secret),
            channels: channels
                .split([',', ' ', '\n', '\r'])
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect(),
        };
        let app = gw
            .put_slack_app(&tenant.id, settings, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        let notice = format!(
            "Connected Slack workspace {}: parked calls are posted to {}.",
            app.team_name,
            app.channels.join(", ")
        );
        back_with_notice(&notice).await;
        Ok(())
    })
    .await
}

/// Removes the Slack app and its secrets. A plain form post.
#[server(prefix = "/api", endpoint = "remove_slack")]
pub async fn remove_slack() -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing the Slack app").await?;
        gw.delete_slack_app(&tenant.id, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice("Removed the Slack app and its secrets: nothing more is posted to Slack.").await;
        Ok(())
    })
    .await
}

/// Removes a person's Slack link (admins): their next click asks them to link again.
#[server(prefix = "/api", endpoint = "unlink_slack")]
pub async fn unlink_slack(slack_user_id: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing the Slack app").await?;
        gw.unlink_slack(
            &tenant.id,
            &slack_user_id,
            &by.username,
            gateway::audit::activity::Transport::Console,
        )
        .await
        .map_err(to_fn_error)?;
        back_with_notice(&format!(
            "Removed the link of Slack user {slack_user_id}: their next click asks them to link again."
        ))
        .await;
        Ok(())
    })
    .await
}

/// What the link code offers the signed-in person: another organization's, used or expired
/// codes are refused with what to do.
#[server]
pub async fn slack_link_view(code: String) -> Result<LinkView, ServerFnError> {
    let (gw, tenant, user) = crate::api::session::require_session().await?;
    let offer = gw.slack_link_offer(&tenant.id, &code).await.map_err(to_fn_error)?;
    let team_name = gw.slack_app(&tenant.id).await.map(|a| a.team_name).unwrap_or_default();
    Ok(LinkView {
        slack_name: offer.slack_name,
        slack_user_id: offer.slack_user_id,
        team_name,
        username: user.username,
        expires_at: offer.expires_at.to_rfc3339(),
    })
}

/// Links the code's Slack user to the signed-in person, then shows their account page with
/// what happened. A plain form post.
#[server(prefix = "/api", endpoint = "link_slack")]
pub async fn link_slack(code: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, _, user) = crate::api::session::require_session().await?;
        let link = gw.link_slack(&code, &user).await.map_err(to_fn_error)?;
        let done = format!(
            "Linked Slack user @{} to {}: a click on Approve or Deny in Slack is now your vote. Go back to Slack and click again.",
            link.slack_name, link.username
        );
        leptos_axum::redirect(&format!("/account?done={}", crate::api::session::encode_query_value(&done)));
        Ok(())
    })
    .await
}
