//! The tenant's single sign-on connection over HTTP (company key): read it, set it (the client
//! secret into the vault, never shown again), remove it, and test it against the provider.
//! People sign in through the browser (`crate::http::sso`), not here.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use gateway::domain::sso::{SsoConnection, SsoSettings};
use gateway::ops::sso::SsoProbe;

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::{ACTOR, json_body};

const WHAT: &str = "managing single sign-on";
const EXAMPLE: &str = r#"{"issuer": "https://login.example.com/realms/acme", "client_id": "naive", "client_secret": "…", "mapping": [{"group": "finance", "roles": ["finance"]}], "create_users": true, "domains": ["example.com"]}"#;

#[utoipa::path(get, path = "/v1/sso/oidc", tag = "sso", operation_id = "get_sso",
    responses((status = 200, description = "The tenant's OpenID connection, without its secret.", body = SsoConnection)))]
pub async fn get(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.sso_connection(&tenant).await?).into_response())
}

#[utoipa::path(put, path = "/v1/sso/oidc", tag = "sso", operation_id = "put_sso",
    request_body = SsoSettings,
    responses((status = 200, description = "Stored; people sign in with it from their next sign-in.", body = SsoConnection)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    let settings: SsoSettings = json_body(&body, EXAMPLE)?;
    Ok(Json(state.gateway.put_sso_connection(&tenant, settings, ACTOR, Transport::Http).await?)
        .into_response())
}

#[utoipa::path(delete, path = "/v1/sso/oidc", tag = "sso", operation_id = "delete_sso",
    responses((status = 204, description = "Removed; people bound to the provider cannot sign in until it is set again.")))]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    state.gateway.delete_sso_connection(&tenant, ACTOR, Transport::Http).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(post, path = "/v1/sso/oidc/test", tag = "sso", operation_id = "test_sso",
    responses((status = 200, description = "The provider's discovery document and keys were read now.", body = SsoProbe)))]
pub async fn test(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company(WHAT)?;
    Ok(Json(state.gateway.test_sso_connection(&tenant).await?).into_response())
}
