//! Approval polling for agents: `GET /v1/approvals/{id}` returns the agent's own approval with
//! its status and trail. Another profile's approval does not exist for it (404).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::auth::Agent;
use crate::problem::Problem;
use crate::startup::AppState;

pub async fn get(
    State(state): State<AppState>,
    Agent(subject): Agent,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    if let Some(env) = state.gateway.inactive_refusal(&subject, "naive_approvals_get").await? {
        return Ok((StatusCode::FORBIDDEN, Json(env)).into_response());
    }
    Ok(Json(state.gateway.approval_for_subject(&subject, &id).await?).into_response())
}
