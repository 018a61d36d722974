//! Server functions behind the Runtime page (admins): the team runtime's registration and
//! live state, the outbox's runtime commands and webhook messages (dead letters retried from
//! here), the webhook endpoints with their test button, the log streams
//! ([`crate::api::streams`]) and the archive and retention ([`crate::api::archive`]).
//!
//! Guarantees: admins only; every change goes through the same gateway function as `/v1`
//! and is recorded as a console action by the admin who made it; the runtime's shared secret
//! is accepted once and never sent back; a webhook's signing secret is shown once, on the
//! page the creating form lands on, through the session's one-time handover.

// The webhook form posts one checkbox per event, so its server function takes one argument
// per event; the macro's generated client function does not carry an attribute on the item.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::{require_roles, require_view},
    to_fn_error,
};

/// The registered runtime as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeView {
    pub url: String,
    pub fingerprint: String,
    pub claimed: bool,
    /// Whether it answered just now.
    pub reachable: bool,
    pub last_seen_at: Option<String>,
    pub last_error: Option<String>,
    /// `name · n tasks · m blocked · k runs active`, when it answered.
    pub live: Option<String>,
}

/// One outbox row: a runtime command or a webhook message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub id: String,
    /// The task (a command) or the endpoint (a message).
    pub key: String,
    /// `comment`, `unblock`… or the event.
    pub kind: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointRow {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub created_by: String,
    pub created_at: String,
}

/// One outbox queue with rows waiting: the runtime's, or one endpoint's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BacklogRow {
    /// `runtime`, `webhook` or `slack`.
    pub channel: String,
    /// The endpoint's id, or empty for the runtime.
    pub destination: String,
    pub queued: i64,
    pub max: i64,
    pub in_flight: bool,
    pub due_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeData {
    pub runtime: Option<RuntimeView>,
    /// The outbox's queues with rows waiting, each with its purge button.
    pub backlogs: Vec<BacklogRow>,
    pub commands: Vec<DeliveryRow>,
    pub webhooks: Vec<EndpointRow>,
    pub deliveries: Vec<DeliveryRow>,
    /// Every event an endpoint may subscribe to, for the form.
    pub events: Vec<String>,
    /// A new endpoint's signing secret, on the one page load that shows it: (id, secret).
    pub new_secret: Option<(String, String)>,
    /// The tenant's Slack app, if it has one.
    pub slack: Option<crate::api::slack::SlackView>,
    /// Its posts and updates, newest first.
    pub slack_deliveries: Vec<DeliveryRow>,
    /// The tenant's log streams with their health.
    pub streams: Vec<crate::api::streams::StreamView>,
    /// How far the log is archived and deleted, and the retention.
    pub archive: crate::api::archive::ArchiveView,
}

#[cfg(feature = "ssr")]
fn runtime_view(r: gateway::delivery::runtime::RuntimeInfo) -> RuntimeView {
    RuntimeView {
        url: r.url,
        fingerprint: r.secret.fingerprint,
        claimed: r.claimed,
        reachable: r.live.is_some(),
        last_seen_at: r.last_seen_at.map(|t| t.to_rfc3339()),
        last_error: r.last_error,
        live: r.live.map(|s| {
            format!(
                "{} · {} tasks · {} blocked · {} runs active",
                s.runtime, s.tasks, s.blocked, s.runs_active
            )
        }),
    }
}

#[cfg(feature = "ssr")]
fn delivery_row(s: gateway::delivery::outbox::CommandState) -> DeliveryRow {
    DeliveryRow {
        id: s.command_id,
        key: s.task_id,
        kind: s.kind,
        status: s.status.as_str().to_string(),
        attempts: s.attempts,
        last_error: s.last_error,
        created_at: s.created_at.to_rfc3339(),
    }
}

#[server]
pub async fn runtime_page(issued: Option<String>) -> Result<RuntimeData, ServerFnError> {
    let (gw, tenant, _) = require_view("runtime").await?;
    let t = &tenant.id;
    let runtime = gw.runtime(t).await.map_err(to_fn_error)?.map(runtime_view);
    let commands = gw.commands(t, None).await.map_err(to_fn_error)?.into_iter().map(delivery_row).collect();
    let (webhooks, deliveries) = webhook_part(&gw, t).await?;
    let new_secret = match (issued, crate::api::session::token().await?) {
        (Some(id), Some(session)) => {
            gw.take_secret(&session, &id).await.map_err(to_fn_error)?.map(|secret| (id, secret))
        }
        _ => None,
    };
    let events = gateway::delivery::webhooks::EVENTS.iter().map(|e| e.to_string()).collect();
    let backlogs = gw
        .backlogs(t)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|q| BacklogRow {
            channel: q.channel,
            destination: q.destination,
            queued: q.queued,
            max: q.limit,
            in_flight: q.in_flight,
            due_at: q.due_at.to_rfc3339(),
        })
        .collect();
    let (slack, slack_deliveries) = slack_part(&gw, t).await?;
    let streams = crate::api::streams::streams_part(&gw, t).await?;
    let archive = crate::api::archive::archive_part(&gw, t).await?;
    Ok(RuntimeData {
        runtime,
        backlogs,
        commands,
        webhooks,
        deliveries,
        events,
        new_secret,
        slack,
        slack_deliveries,
        streams,
        archive,
    })
}

/// The tenant's webhook endpoints and their messages.
#[cfg(feature = "ssr")]
async fn webhook_part(
    gw: &gateway::Gateway,
    t: &gateway::TenantId,
) -> Result<(Vec<EndpointRow>, Vec<DeliveryRow>), ServerFnError> {
    let deliveries = gw
        .webhook_deliveries(t, None)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|d| DeliveryRow {
            id: d.message_id,
            key: d.endpoint_id,
            kind: d.event,
            status: d.status.as_str().to_string(),
            attempts: d.attempts,
            last_error: d.last_error,
            created_at: d.created_at.to_rfc3339(),
        })
        .collect();
    let webhooks = gw
        .webhooks(t)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|e| EndpointRow {
            id: e.id,
            url: e.url,
            events: e.events,
            format: e.format.as_str().to_string(),
            created_by: e.created_by,
            created_at: e.created_at.to_rfc3339(),
        })
        .collect();
    Ok((webhooks, deliveries))
}

/// The tenant's Slack app, if it has one, and its posts and updates.
#[cfg(feature = "ssr")]
async fn slack_part(
    gw: &gateway::Gateway,
    t: &gateway::TenantId,
) -> Result<(Option<crate::api::slack::SlackView>, Vec<DeliveryRow>), ServerFnError> {
    let app = match gw.slack_app(t).await {
        Ok(a) => Some(crate::api::slack::slack_view(a, gw.slack_links(t).await.map_err(to_fn_error)?)),
        Err(gateway::Error::NotFound { .. }) => None,
        Err(e) => return Err(to_fn_error(e)),
    };
    let rows = gw.slack_deliveries(t, None).await.map_err(to_fn_error)?;
    let rows = rows
        .into_iter()
        .map(|d| DeliveryRow {
            id: d.message_id,
            key: d.channel,
            kind: d.job,
            status: d.status.as_str().to_string(),
            attempts: d.attempts,
            last_error: d.last_error,
            created_at: d.created_at.to_rfc3339(),
        })
        .collect();
    Ok((app, rows))
}

/// Gives up on one queue's backlog (the runtime's, or an endpoint's): its queued rows and its
/// dead letters end `purged` and are never sent. A plain form post.
#[server(prefix = "/api", endpoint = "purge_backlog")]
pub async fn purge_backlog(channel: String, destination: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "purging the outbox").await?;
        let via = gateway::audit::activity::Transport::Console;
        let (n, what) = match channel.as_str() {
            "runtime" => (
                gw.purge_runtime_backlog(&tenant.id, &by.username, via).await,
                "the team runtime".to_string(),
            ),
            _ => (
                gw.purge_webhook_backlog(&tenant.id, &destination, &by.username, via).await,
                format!("webhook {destination}"),
            ),
        };
        let p = n.map_err(to_fn_error)?;
        let dead = match p.dead_letters {
            0 => String::new(),
            n => format!(" and {n} dead letter{}", if n == 1 { "" } else { "s" }),
        };
        let notice = format!("Purged {} queued{dead} for {what}: they will not be sent.", p.purged);
        back_with_notice(&notice).await;
        Ok(())
    })
    .await
}

/// Registers or re-points the team runtime. A plain form post.
#[server(prefix = "/api", endpoint = "register_runtime")]
pub async fn register_runtime(url: String, secret: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "registering the team runtime").await?;
        let secret = Some(secret.as_str()).filter(|s| !s.is_empty());
        let info = gw
            .register_runtime(
                &tenant.id,
                url.trim(),
                secret,
                &by.username,
                gateway::audit::activity::Transport::Console,
            )
            .await
            .map_err(to_fn_error)?;
        let state = match (info.live.is_some(), info.claimed) {
            (true, true) => "it answered and is claimed for this tenant",
            (true, false) => "it answered but is claimed by another tenant",
            _ => "it did not answer yet; commands wait in the outbox until it does",
        };
        back_with_notice(&format!("Registered the team runtime at {}: {state}.", info.url)).await;
        Ok(())
    })
    .await
}

/// Queues a dead letter again. A plain form post.
#[server(prefix = "/api", endpoint = "retry_delivery")]
pub async fn retry_delivery(id: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "retrying deliveries").await?;
        gw.retry_delivery(&tenant.id, &id, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice(&format!("Queued {id} again.")).await;
        Ok(())
    })
    .await
}

/// Registers a webhook endpoint for the ticked events; the page it lands on shows its
/// signing secret once. A plain form post.
#[server(prefix = "/api", endpoint = "create_webhook")]
pub async fn create_webhook(
    url: String,
    format: String,
    approval_parked: Option<String>,
    approval_decided: Option<String>,
    approval_expired: Option<String>,
    approval_escalated: Option<String>,
    proposal_created: Option<String>,
    budget_soft_cap_crossed: Option<String>,
    budget_exhausted: Option<String>,
    runtime_stopped: Option<String>,
    profile_revoked: Option<String>,
) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing webhooks").await?;
        // One tick per event, in the order of EVENTS: the length is checked when compiling, so
        // an event added there without its field here does not build.
        let ticks: [Option<String>; gateway::delivery::webhooks::EVENTS.len()] = [
            approval_parked,
            approval_decided,
            approval_expired,
            approval_escalated,
            proposal_created,
            budget_soft_cap_crossed,
            budget_exhausted,
            runtime_stopped,
            profile_revoked,
        ];
        let events = gateway::delivery::webhooks::EVENTS
            .iter()
            .zip(ticks)
            .filter(|(_, t)| t.is_some())
            .map(|(e, _)| e.to_string())
            .collect();
        let format = if format == "slack" {
            gateway::delivery::webhooks::Format::Slack
        } else {
            gateway::delivery::webhooks::Format::Standard
        };
        let spec = gateway::delivery::webhooks::EndpointSpec { url: url.trim().to_string(), events, format };
        let created = gw
            .create_webhook(&tenant.id, spec, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        let session = crate::api::session::token()
            .await?
            .ok_or_else(|| ServerFnError::new("signed_out: sign in to use the console"))?;
        let id = created.endpoint.id;
        gw.hand_over_secret(&session, &id, &created.secret).await.map_err(to_fn_error)?;
        leptos_axum::redirect(&format!("/runtime?issued={id}"));
        Ok(())
    })
    .await
}

/// Sends an endpoint a signed test event and shows its answer. A plain form post.
#[server(prefix = "/api", endpoint = "test_webhook")]
pub async fn test_webhook(id: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, _) = require_roles(&[gateway::Role::Admin], "testing webhooks").await?;
        let p = gw.test_webhook(&tenant.id, &id).await.map_err(to_fn_error)?;
        let status = p.status.map_or("no answer".to_string(), |s| format!("HTTP {s}"));
        let said = format!(
            "Test event to {id}: {status} in {} ms. The endpoint answered: {}",
            p.latency_ms, p.answer
        );
        if p.ok {
            back_with_notice(&said).await;
            Ok(())
        } else {
            Err(ServerFnError::new(format!("webhook_test_failed: {said}")))
        }
    })
    .await
}

/// Removes an endpoint and its secret. A plain form post.
#[server(prefix = "/api", endpoint = "delete_webhook")]
pub async fn delete_webhook(id: String) -> Result<(), ServerFnError> {
    form(async {
        let (gw, tenant, by) = require_roles(&[gateway::Role::Admin], "managing webhooks").await?;
        gw.delete_webhook(&tenant.id, &id, &by.username, gateway::audit::activity::Transport::Console)
            .await
            .map_err(to_fn_error)?;
        back_with_notice(&format!("Removed webhook {id}.")).await;
        Ok(())
    })
    .await
}
