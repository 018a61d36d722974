//! The tenant's SCIM token over HTTP (company key): issuing one (shown once, replacing any
//! other) for the directory that provisions users and groups at `/scim/v2`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::audit::activity::Transport;
use serde::Serialize;

use crate::http::auth::Caller;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::ACTOR;

/// A SCIM token, shown once.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ScimToken {
    /// `nvs_<prefix>_<secret>`: give it to the directory as its bearer token. Shown only here.
    pub secret: String,
    /// Where the directory sends its requests.
    pub base_url: String,
}

#[utoipa::path(post, path = "/v1/scim/token", tag = "sso", operation_id = "create_scim_token",
    responses((status = 201, description = "Issued; any earlier token stops working now.", body = ScimToken)))]
pub async fn create(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let tenant = caller.company("managing provisioning")?;
    let secret = state.gateway.create_scim_token(&tenant, ACTOR, Transport::Http).await?;
    let base_url = format!("{}/scim/v2", state.gateway.config().public_url.trim_end_matches('/'));
    Ok((StatusCode::CREATED, Json(ScimToken { secret, base_url })).into_response())
}
