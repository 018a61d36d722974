//! Slack approvals as operations (docs/slack.md): an admin sets the tenant's Slack app (the
//! bot token checked with `auth.test` before anything is kept; both secrets into the vault in
//! the transaction that keeps the app). The delivery worker sends a channel's queued posts
//! and updates (`ops/outbox.rs`).
//!
//! A click in Slack arrives at the interactivity endpoint (`server/src/slack.rs`), which asks
//! here whether the request is Slack's and new ([`Gateway::slack_interaction`]) and who
//! clicked ([`Gateway::slack_decider`]), then decides through the same
//! [`Gateway::approve`] and [`Gateway::deny`] the console and `/v1` call. A person links
//! their Slack user themselves, through a single-use link sent only to them.

use chrono::Utc;
use serde_json::json;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::slack::api::{self, ApiError};
use crate::delivery::slack::interact::{self, Interaction, SlackUser};
use crate::delivery::slack::{
    self, BOT_TOKEN, CHANNEL, SIGNING_SECRET, SlackApp, SlackDelivery, SlackSettings, Workspace,
};
use crate::domain::approvals::Approval;
use crate::domain::principal::Human;
use crate::domain::slack_links::{self as links, LinkOffer, SlackLink};
use crate::domain::users::ConsoleUser;
use crate::domain::vault;
use crate::error::{Error, Result};
use crate::ids::TenantId;

impl Gateway {
    /// The tenant's Slack app.
    pub async fn slack_app(&self, tenant: &TenantId) -> Result<SlackApp> {
        slack::get(&self.store, tenant, &self.config.public_url)
            .await?
            .ok_or(Error::NotFound { what: "Slack app" })
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

    /// A request to the tenant's interactivity endpoint, read once its signature is the app's,
    /// its timestamp fresh, its workspace the app's and its signature not seen before.
    pub async fn slack_interaction(
        &self,
        tenant: &TenantId,
        timestamp: &str,
        signature: &str,
        body: &[u8],
    ) -> Result<Interaction> {
        let app = self.slack_app(tenant).await?;
        let secret = self.open_secret(tenant, SIGNING_SECRET).await?;
        interact::verify(&secret, timestamp, signature, body, Utc::now())?;
        let read = interact::read(body)?;
        let team = match &read {
            Interaction::Click { team_id, .. } | Interaction::DenyReason { team_id, .. } => Some(team_id),
            Interaction::Other => None,
        };
        if team.is_some_and(|t| *t != app.team_id) {
            return Err(Error::Forbidden {
                code: "slack_wrong_workspace",
                message: format!("this request comes from another workspace than {}", app.team_name),
            });
        }
        let (t, sig) = (tenant.clone(), signature.trim().to_string());
        self.write(move |c| links::seen_in(c, &t, &sig)).await?;
        Ok(read)
    }

    /// The console user `user` linked, deciding as themselves from `channel` (their roles and
    /// groups, as in the console); `None` when they have not linked.
    pub async fn slack_decider(
        &self,
        tenant: &TenantId,
        user: &SlackUser,
        channel: &str,
    ) -> Result<Option<Human>> {
        let Some(id) = links::linked(&self.store, tenant, &user.id).await? else { return Ok(None) };
        let person = crate::domain::users::by_id(&self.store, tenant, &id).await?;
        Ok(person.map(|u| Human::in_slack(&u, &user.shown(), channel)))
    }

    /// A single-use link, good for [`links::CODE_TTL_MINUTES`], through which `user` links
    /// their Slack user to whoever signs in to the console with it.
    pub async fn slack_link_url(&self, tenant: &TenantId, user: &SlackUser) -> Result<String> {
        let (t, u, now) = (tenant.clone(), user.clone(), self.now());
        let code = self.write(move |c| links::new_code_in(c, &t, &u.id, &u.name, now)).await?;
        Ok(format!("{}/slack/link?code={code}", self.config.public_url.trim_end_matches('/')))
    }

    /// Tells only the person who clicked, through the interaction's `response_url`.
    pub async fn slack_tell(&self, response_url: &str, text: &str) -> Result<()> {
        api::tell(&self.egress, response_url, text).await.map_err(|e| {
            Error::unavailable("slack_unreachable", format!("Slack did not take the reply ({})", e.code()), 5)
        })
    }

    /// Opens the form asking why `a` is denied, for the person whose click gave `trigger_id`.
    pub async fn slack_ask_reason(
        &self,
        tenant: &TenantId,
        trigger_id: &str,
        a: &Approval,
        channel: &str,
    ) -> Result<()> {
        let token = self.open_secret(tenant, BOT_TOKEN).await?;
        let body = json!({ "trigger_id": trigger_id, "view": slack::message::deny_form(a, channel) });
        api::call(&self.egress, &self.config.slack_api_url, &token, "views.open", &body).await.map_err(
            |e| {
                Error::unavailable(
                    "slack_unreachable",
                    format!("Slack did not open the form ({})", e.code()),
                    5,
                )
            },
        )?;
        Ok(())
    }

    /// What a link code offers the signed-in person of `tenant`: another tenant's code does
    /// not exist for them; a used or expired one says so.
    pub async fn slack_link_offer(&self, tenant: &TenantId, code: &str) -> Result<LinkOffer> {
        let offer = links::offer(&self.store, code).await?.filter(|o| o.tenant_id == *tenant);
        let offer = offer.ok_or(Error::NotFound { what: "Slack link" })?;
        links::usable(&offer, self.now())?;
        Ok(offer)
    }

    /// Links the code's Slack user to `user`, once.
    pub async fn link_slack(&self, code: &str, user: &ConsoleUser) -> Result<SlackLink> {
        let (code, u, now) = (code.to_string(), user.clone(), self.now());
        self.write_for(&user.tenant_id, move |c| links::redeem_in(c, &code, &u, now)).await
    }

    /// The tenant's Slack users linked to console users.
    pub async fn slack_links(&self, tenant: &TenantId) -> Result<Vec<SlackLink>> {
        links::list(&self.store, tenant).await
    }

    /// The Slack user `user` linked, if any.
    pub async fn slack_link_of(&self, tenant: &TenantId, user: &crate::UserId) -> Result<Option<SlackLink>> {
        links::of_user(&self.store, tenant, user).await
    }

    /// Removes a Slack user's link; their next click asks them to link again.
    pub async fn unlink_slack(
        &self,
        tenant: &TenantId,
        slack_user: &str,
        by: &str,
        via: Transport,
    ) -> Result<()> {
        let (t, u, b) = (tenant.clone(), slack_user.to_string(), by.to_string());
        self.write_for(tenant, move |c| links::unlink_in(c, &t, &u, &b, via)).await
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
