//! Server functions behind the Runtime page's Slack section (admins): set the tenant's Slack
//! app (its bot token and signing secret accepted once, into the vault, never sent back) and
//! remove it. The page reads the app with the rest of the Runtime page
//! ([`crate::api::runtime::runtime_page`]).
//!
//! Guarantees: admins only; each change goes through the gateway function `/v1/slack` calls
//! and is recorded as a console action by the admin who made it.

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
}

#[cfg(feature = "ssr")]
pub(crate) fn slack_view(a: gateway::delivery::slack::SlackApp) -> SlackView {
    SlackView {
        team_name: a.team_name,
        team_id: a.team_id,
        channels: a.channels,
        updated_by: a.updated_by,
        updated_at: a.updated_at.to_rfc3339(),
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
