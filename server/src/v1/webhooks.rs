//! The tenant's webhook endpoints over HTTP (company key): register one (its signing secret is
//! in the answer, once), list, remove, send a test event, and read the deliveries with their
//! dead letters.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::webhooks::{CreatedEndpoint, Endpoint, EndpointSpec, WebhookDelivery, WebhookProbe};

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem, Query};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body, secret_bearing};
use crate::v1::runtime::CommandFilter;

const WHAT: &str = "managing webhooks";
const EXAMPLE: &str = r#"{"url": "https://hooks.example.com/naive", "events": ["approval.parked", "approval.decided"], "format": "standard"}"#;

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct EndpointList {
    pub items: Vec<Endpoint>,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    pub items: Vec<WebhookDelivery>,
}

#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", operation_id = "list_webhooks",
    responses((status = 200, description = "The registered endpoints (never their secrets).", body = EndpointList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(EndpointList { items: state.gateway.webhooks(&tenant).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", operation_id = "create_webhook",
    request_body = EndpointSpec,
    responses((status = 201, description = "Registered. `secret` verifies its signatures and is not shown again.", body = CreatedEndpoint)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let spec: EndpointSpec = json_body(&body, EXAMPLE)?;
    let created = state.gateway.create_webhook(&tenant, spec, ACTOR, Transport::Http).await?;
    // The signing secret is shown once: a resend of the same Idempotency-Key learns the
    // endpoint exists, never the secret.
    Ok(secret_bearing((StatusCode::CREATED, Json(created)).into_response()))
}

#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", operation_id = "delete_webhook",
    params(("id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Removed with its secret; its queued messages become dead letters.")))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_webhook(&tenant, &id, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/test", tag = "webhooks", operation_id = "test_webhook",
    params(("id" = String, Path, description = "The endpoint's id.")),
    responses((status = 200, description = "What the endpoint answered a signed `webhook.test` event.", body = WebhookProbe)))]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.test_webhook(&tenant, &id).await?).into_response())
}

#[utoipa::path(get, path = "/v1/webhooks/deliveries", tag = "webhooks", operation_id = "list_webhook_deliveries",
    params(CommandFilter),
    responses((status = 200, description = "Webhook messages, newest first: queued, delivered and dead letters.", body = DeliveryList)))]
pub async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Query(f): Query<CommandFilter>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(DeliveryList { items: state.gateway.webhook_deliveries(&tenant, f.status).await? })
        .into_response())
}

#[utoipa::path(post, path = "/v1/webhooks/deliveries/{message_id}/retry", tag = "webhooks", operation_id = "retry_webhook_delivery",
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

#[utoipa::path(post, path = "/v1/webhooks/{id}/purge", tag = "webhooks", operation_id = "purge_webhook",
    params(("id" = String, Path, description = "The endpoint's id.")),
    responses((status = 200, description = "Every message queued for the endpoint, and every dead letter of it, now ends `purged` and is never sent.", body = gateway::delivery::outbox::Purged)))]
pub async fn purge(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.purge_webhook_backlog(&tenant, &id, ACTOR, Transport::Http).await?).into_response())
}
