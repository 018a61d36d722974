//! The tenant's log streams over HTTP (company key): add one (its signing secret is in the
//! answer, once), list them with their health (cursor, lag, last error), read one, remove
//! one, and list and retry the entries a stream's receiver refused for good (docs/streams.md).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::delivery::streams::{CreatedStream, DeadLetter, Stream, StreamSpec};

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body, secret_bearing};

const WHAT: &str = "managing log streams";
const EXAMPLE: &str = r#"{"url": "https://collector.example.com/services/collector/event", "kind": "splunk_hec", "format": "ocsf", "token": "<the HEC token>", "start": "now"}"#;

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct StreamList {
    pub items: Vec<Stream>,
}

#[utoipa::path(get, path = "/v1/streams", tag = "streams", operation_id = "list_streams",
    responses((status = 200, description = "The tenant's log streams with their health (never their secrets).", body = StreamList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(StreamList { items: state.gateway.streams(&tenant).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/streams", tag = "streams", operation_id = "create_stream",
    request_body = StreamSpec,
    responses((status = 201, description = "Added. `secret` verifies its batches' signatures and is not shown again; null when the stream carries the collector's token.", body = CreatedStream),
        (status = 400, description = "A URL that is not http(s), an internal address, a batch size out of bounds, or a Splunk HEC stream without its token.", body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let spec: StreamSpec = json_body(&body, EXAMPLE)?;
    let created = state.gateway.create_stream(&tenant, spec, ACTOR, Transport::Http).await?;
    let made_here = created.secret.is_some();
    let answer = (StatusCode::CREATED, Json(created)).into_response();
    // A collector's token is never in the answer, so there is nothing to withhold on a replay.
    Ok(if made_here { secret_bearing(answer) } else { answer })
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct DeadLetterList {
    pub items: Vec<DeadLetter>,
}

#[utoipa::path(get, path = "/v1/streams/{id}/dead-letters", tag = "streams", operation_id = "list_stream_dead_letters",
    params(("id" = String, Path, description = "The stream's id.")),
    responses((status = 200, description = "The entries the stream's receiver refused for good (a single entry too large), skipped and kept to send again, oldest first.", body = DeadLetterList)))]
pub async fn dead_letters(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(DeadLetterList { items: state.gateway.stream_dead_letters(&tenant, &id).await? }).into_response())
}

#[utoipa::path(post, path = "/v1/streams/{id}/dead-letters/{seq}/retry", tag = "streams", operation_id = "retry_stream_dead_letter",
    params(("id" = String, Path, description = "The stream's id."), ("seq" = i64, Path, description = "The dead letter's entry.")),
    responses((status = 204, description = "Sent and acknowledged: no longer a dead letter."),
        (status = 409, description = "The receiver refused it again (`dead_letter_refused`), or retention deleted the entry (`entry_deleted`).", body = Problem)))]
pub async fn retry_dead_letter(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, seq)): Path<(String, i64)>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.retry_stream_dead_letter(&tenant, &id, seq).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(get, path = "/v1/streams/{id}", tag = "streams", operation_id = "get_stream",
    params(("id" = String, Path, description = "The stream's id.")),
    responses((status = 200, description = "The stream and its health: its cursor, its lag in entries and seconds, its last error.", body = Stream)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.stream(&tenant, &id).await?).into_response())
}

#[utoipa::path(delete, path = "/v1/streams/{id}", tag = "streams", operation_id = "delete_stream",
    params(("id" = String, Path, description = "The stream's id.")),
    responses((status = 204, description = "Removed with its secret; retention no longer waits for it.")))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_stream(&tenant, &id, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
