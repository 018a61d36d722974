//! Slack approvals as operations (docs/slack.md): an admin sets the tenant's Slack app (the
//! bot token checked with `auth.test` before anything is kept; both secrets into the vault in
//! the transaction that keeps the app). The delivery worker sends a channel's queued posts
//! and updates (`ops/outbox.rs`).

use serde_json::json;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::slack::api::{self, ApiError};
use crate::delivery::slack::{
    self, BOT_TOKEN, CHANNEL, SIGNING_SECRET, SlackApp, SlackDelivery, SlackSettings, Workspace,
};
use crate::domain::vault;
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's Slack app.
    pub async fn slack_app(&self, tenant: &TenantId) -> Result<SlackApp> {
        slack::get(&self.store, tenant).await?.ok_or(Error::NotFound { what: "Slack app" })
    }

    /// Sets the tenant's Slack app. A bot token given is asked whose it is (`auth.test`)
    /// before anything is written; without one, the kept token is asked.
    pub async fn put_slack_app(
        &self,
        tenant: &TenantId,
        settings: SlackSettings,
        actor: &str,
        via: Transport,
    ) -> Result<SlackApp> {
        settings.check()?;
        let master = self.vault.master()?.clone();
        let token = match &settings.bot_token {
            Some(t) => t.clone(),
            None => self.open_secret(tenant, BOT_TOKEN).await.map_err(|_| {
                Error::invalid("slack_secrets_needed", "give the app's bot token (`bot_token`)")
            })?,
        };
        let workspace = self.slack_workspace(&token).await?;
        let (t, a, s) = (tenant.clone(), actor.to_string(), settings);
        let keys = self
            .write(move |c| {
                let mut keys = Vec::new();
                for (name, value) in [(BOT_TOKEN, &s.bot_token), (SIGNING_SECRET, &s.signing_secret)] {
                    if let Some(v) = value {
                        keys.push(vault::put_in(c, &master, &t, name, v, &a, via)?.1);
                    }
                }
                slack::put_in(c, &t, &s, &workspace, &a, via)?;
                Ok(keys)
            })
            .await?;
        for key in &keys {
            self.vault.remember(tenant, key);
        }
        self.slack_app(tenant).await
    }

    /// Removes the tenant's Slack app and its secrets; its queued messages end as dead
    /// letters, and the messages already in Slack stay as they are.
    pub async fn delete_slack_app(&self, tenant: &TenantId, actor: &str, via: Transport) -> Result<()> {
        let (t, a) = (tenant.clone(), actor.to_string());
        self.write_for(tenant, move |c| slack::delete_in(c, &t, &a, via)).await
    }

    /// The tenant's Slack messages, newest first, optionally of one status: a dead letter can
    /// be queued again with [`Gateway::retry_delivery`].
    pub async fn slack_deliveries(
        &self,
        tenant: &TenantId,
        status: Option<crate::delivery::outbox::DeliveryStatus>,
    ) -> Result<Vec<SlackDelivery>> {
        let rows = crate::delivery::outbox::rows(&self.store, tenant, CHANNEL, status).await?;
        Ok(rows
            .into_iter()
            .map(|s| SlackDelivery {
                message_id: s.command_id,
                channel: s.task_id,
                job: s.kind,
                status: s.status,
                attempts: s.attempts,
                last_error: s.last_error,
                created_at: s.created_at,
                delivered_at: s.delivered_at,
            })
            .collect())
    }

    /// Whose workspace and bot a token is; a token Slack refuses is the admin's to fix.
    async fn slack_workspace(&self, token: &str) -> Result<Workspace> {
        match api::call(&self.egress, &self.config.slack_api_url, token, "auth.test", &json!({})).await {
            Ok(v) => Ok(Workspace {
                team_id: v["team_id"].as_str().unwrap_or_default().to_string(),
                team_name: v["team"].as_str().unwrap_or_default().to_string(),
                bot_user_id: v["user_id"].as_str().unwrap_or_default().to_string(),
            }),
            Err(ApiError::Refused(code)) => Err(Error::invalid(
                "slack_token_refused",
                format!("Slack refused the bot token ({code}); copy the app's Bot User OAuth Token again"),
            )),
            // As an unreachable OpenID provider is: the admin's to check, then try again.
            Err(e) => Err(Error::invalid(
                "slack_unreachable",
                format!(
                    "Slack's API did not answer ({}); try again, or ask the operator whether egress allows it",
                    e.code()
                ),
            )),
        }
    }
}
