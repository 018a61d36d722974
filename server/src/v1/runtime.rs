//! The tenant's team runtime over HTTP (company key): registration, one read of its state (a
//! live probe), and the outbox of commands with its dead letters. Agents reach the runtime
//! through the pipeline instead, as the `teams.*` actions.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::outbox::{CommandState, DeliveryStatus};
use gateway::delivery::runtime::RuntimeInfo;
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem, Query};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing the team runtime";
const EXAMPLE: &str =
    r#"{"url": "https://runtime.example.com/", "secret": "a shared secret of at least 16 characters"}"#;

/// A runtime's registration. The secret is stored in the vault and never shown again.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeRegistration {
    /// The runtime's control wire, `http://` or `https://`.
    pub url: String,
    /// The shared secret every request is signed with (at least 16 characters). Needed the
    /// first time; left out, the stored one stays.
    #[serde(default)]
    #[schema(min_length = 16, max_length = 4096)]
    pub secret: Option<String>,
}

#[utoipa::path(get, path = "/v1/runtime", tag = "runtime", operation_id = "get_runtime",
    responses((status = 200, description = "Which runtime, whether it is claimed, reachable now (probed) or when last seen.", body = RuntimeInfo)))]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let info = state.gateway.runtime(&tenant).await?.ok_or(gateway::Error::NotFound { what: "runtime" })?;
    Ok(Json(info).into_response())
}

#[utoipa::path(put, path = "/v1/runtime", tag = "runtime", operation_id = "put_runtime",
    request_body = RuntimeRegistration,
    responses((status = 200, description = "Registered and, if it answered, claimed for this tenant.", body = RuntimeInfo)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let r: RuntimeRegistration = json_body(&body, EXAMPLE)?;
    let info =
        state.gateway.register_runtime(&tenant, &r.url, r.secret.as_deref(), ACTOR, Transport::Http).await?;
    Ok(Json(info).into_response())
}

#[utoipa::path(delete, path = "/v1/runtime", tag = "runtime", operation_id = "delete_runtime",
    responses((status = 204, description = "Removed; runtime writes are refused until one is registered again.")))]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_runtime(&tenant, ACTOR, Transport::Http).await?;
    Ok(axum::http::StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CommandFilter {
    /// Only commands in this state.
    pub status: Option<DeliveryStatus>,
}

/// Runtime commands, newest first (at most 200).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct CommandList {
    pub items: Vec<CommandState>,
}

#[utoipa::path(get, path = "/v1/runtime/commands", tag = "runtime", operation_id = "list_commands",
    params(CommandFilter),
    responses((status = 200, description = "The outbox's runtime commands: queued, delivered, rejected and dead letters.", body = CommandList)))]
pub async fn commands(
    State(state): State<AppState>,
    caller: Caller,
    Query(f): Query<CommandFilter>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(CommandList { items: state.gateway.commands(&tenant, f.status).await? }).into_response())
}

#[utoipa::path(get, path = "/v1/runtime/commands/{command_id}", tag = "runtime", operation_id = "get_command",
    params(("command_id" = String, Path, description = "The id a comment or unblock answered with.")),
    responses((status = 200, description = "The command's delivery state.", body = CommandState)))]
pub async fn command(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.command(&tenant, &id).await?).into_response())
}

#[utoipa::path(post, path = "/v1/runtime/commands/{command_id}/retry", tag = "runtime", operation_id = "retry_command",
    params(("command_id" = String, Path, description = "A dead letter's command id.")),
    responses((status = 200, description = "Queued again with its attempts reset.", body = CommandState)))]
pub async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.retry_delivery(&tenant, &id, ACTOR, Transport::Http).await?).into_response())
}

#[utoipa::path(post, path = "/v1/runtime/commands/purge", tag = "runtime", operation_id = "purge_commands",
    responses((status = 200, description = "Every command queued for the runtime, and every dead letter, now ends `purged` and is never sent (a runtime gone for good). Delivered and rejected ones are untouched.", body = gateway::delivery::outbox::Purged)))]
pub async fn purge(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.purge_runtime_backlog(&tenant, ACTOR, Transport::Http).await?).into_response())
}

/// The tenant's outbox queues.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct QueueList {
    pub items: Vec<gateway::delivery::outbox::Queue>,
}

#[utoipa::path(get, path = "/v1/outbox", tag = "runtime", operation_id = "list_outbox_queues",
    responses((status = 200, description = "Each queue with rows waiting: the runtime's (`destination` empty) and each webhook endpoint's, with how many wait (of at most `limit`; a runtime write past it is refused `outbox_full`) and when it is next due.", body = QueueList)))]
pub async fn queues(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let items = state.gateway.backlogs(&tenant).await?;
    Ok(Json(QueueList { items }).into_response())
}
