//! `GET /healthz`: the process is up and the database answers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

#[utoipa::path(get, path = "/healthz", tag = "meta",
    responses((status = 200, description = "Up, and the database answers.", body = Object),
        (status = 503, description = "The database does not answer.", body = Object)))]
pub async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.gateway.store().ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({ "status": "ok", "database": "ok" }))),
        Err(e) => {
            tracing::warn!(error = %e, "health check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "degraded", "database": e.code() })))
        }
    }
}
