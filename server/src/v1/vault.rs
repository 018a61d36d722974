//! The tenant's vault over HTTP (company key): store, list and delete provider credentials.
//! A secret's value goes in once and never comes out: every answer, log line, event and error
//! carries its name, fingerprint, author, creation and last use only.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use serde::Deserialize;

use crate::http::auth::Caller;
use crate::http::problem::{Path, Problem};
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing the vault";

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct SecretList {
    pub items: Vec<gateway::domain::vault::SecretInfo>,
}

/// A secret's value, written once.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSecret {
    /// The credential, 1 to 4096 characters of text; for Basic authentication `user:password`.
    #[schema(min_length = 1, max_length = 4096)]
    value: String,
}

#[utoipa::path(get, path = "/v1/vault/secrets", tag = "vault", operation_id = "list_secrets",
    responses((status = 200, description = "The tenant's secrets, never their values.", body = SecretList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(SecretList { items: state.gateway.secrets(&tenant).await? }).into_response())
}

#[utoipa::path(get, path = "/v1/vault/secrets/{name}", tag = "vault", operation_id = "get_secret",
    params(("name" = String, Path, description = "The secret's name, such as `card-processor`.")),
    responses((status = 200, description = "What may be known of the secret: never its value.", body = gateway::domain::vault::SecretInfo)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.secret(&tenant, &name).await?).into_response())
}

#[utoipa::path(put, path = "/v1/vault/secrets/{name}", tag = "vault", operation_id = "put_secret",
    params(("name" = String, Path, description = "1 to 64 of a-z, 0-9, '.', '_' and '-'.")),
    request_body = PutSecret,
    responses((status = 201, description = "Stored; the value is never shown again.", body = gateway::domain::vault::SecretInfo),
        (status = 200, description = "Replaced; connectors using it use the new value from their next call.", body = gateway::domain::vault::SecretInfo)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let req: PutSecret = json_body(&body, r#"{"value": "sk_live_…"}"#)?;
    let (info, created) =
        state.gateway.put_secret(&tenant, &name, &req.value, ACTOR, Transport::Http).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(info)).into_response())
}

#[utoipa::path(delete, path = "/v1/vault/secrets/{name}", tag = "vault", operation_id = "delete_secret",
    params(("name" = String, Path, description = "The secret's name.")),
    responses((status = 204, description = "Deleted.")))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_secret(&tenant, &name, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
