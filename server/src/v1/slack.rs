//! The tenant's Slack app over HTTP (company key): read it, set it (the bot token and signing
//! secret into the vault, never shown again), remove it. Its messages are sent by the
//! delivery worker (`gateway::delivery::slack`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::slack::{SlackApp, SlackSettings};

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing the Slack app";
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
