//! The tenant's Slack app over HTTP (company key): read it, set it (the bot token and signing
//! secret into the vault, never shown again), remove it. Its messages are sent by the
//! delivery worker (`gateway::delivery::slack`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::slack::{SlackApp, SlackDelivery, SlackSettings};
use gateway::domain::slack_links::SlackLink;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem, Query};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};
use crate::v1::runtime::CommandFilter;

const WHAT: &str = "managing the Slack app";

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct SlackDeliveryList {
    pub items: Vec<SlackDelivery>,
}
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct SlackLinkList {
    pub items: Vec<SlackLink>,
}

const EXAMPLE: &str = r#"{"bot_token": "xoxb-…", "signing_secret": "…", "channels": ["C0123456789"]}"#;

#[utoipa::path(get, path = "/v1/slack", tag = "slack", operation_id = "get_slack",
    responses((status = 200, description = "The tenant's Slack app, without its secrets.", body = SlackApp)))]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.slack_app(&tenant).await?).into_response())
}

#[utoipa::path(put, path = "/v1/slack", tag = "slack", operation_id = "put_slack",
    request_body = SlackSettings,
    responses((status = 200, description = "Checked with Slack (`auth.test`) and stored; parked calls are posted to its channels from now on.", body = SlackApp)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let settings: SlackSettings = json_body(&body, EXAMPLE)?;
    Ok(Json(state.gateway.put_slack_app(&tenant, settings, ACTOR, Transport::Http).await?).into_response())
}

#[utoipa::path(delete, path = "/v1/slack", tag = "slack", operation_id = "delete_slack",
    responses((status = 204, description = "Removed with its secrets; messages waiting to be sent become dead letters.")))]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_slack_app(&tenant, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(get, path = "/v1/slack/deliveries", tag = "slack", operation_id = "list_slack_deliveries",
    params(CommandFilter),
    responses((status = 200, description = "Slack posts and updates, newest first: queued, delivered, rejected by Slack and dead letters.", body = SlackDeliveryList)))]
pub async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Query(f): Query<CommandFilter>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(SlackDeliveryList { items: state.gateway.slack_deliveries(&tenant, f.status).await? })
        .into_response())
}

#[utoipa::path(post, path = "/v1/slack/deliveries/{message_id}/retry", tag = "slack", operation_id = "retry_slack_delivery",
    params(("message_id" = String, Path, description = "A dead letter's message id.")),
    responses((status = 200, description = "Queued again with its attempts reset.", body = gateway::delivery::outbox::CommandState)))]
pub async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.retry_delivery(&tenant, &id, ACTOR, Transport::Http).await?).into_response())
}

#[utoipa::path(get, path = "/v1/slack/links", tag = "slack", operation_id = "list_slack_links",
    responses((status = 200, description = "The Slack users linked to console users, by username: a click by one of them is that person's vote.", body = SlackLinkList)))]
pub async fn links(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(SlackLinkList { items: state.gateway.slack_links(&tenant).await? }).into_response())
}

#[utoipa::path(delete, path = "/v1/slack/links/{slack_user_id}", tag = "slack", operation_id = "delete_slack_link",
    params(("slack_user_id" = String, Path, description = "The linked Slack user (`U…`).")),
    responses((status = 204, description = "Removed: the person's next click asks them to link again.")))]
pub async fn unlink(
    State(state): State<AppState>,
    caller: Caller,
    Path(slack_user): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.unlink_slack(&tenant, &slack_user, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
