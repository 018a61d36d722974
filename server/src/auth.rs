//! Who is calling `/v1`. Agents present a scoped key as `Authorization: Bearer nv_…`; the key
//! resolves to a subject (tenant and profile). The console's session and company keys are
//! other credentials that later routes add beside this extractor.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use gateway::keys::Subject;

use crate::problem::Problem;
use crate::startup::AppState;

/// An authenticated agent.
pub struct Agent(pub Subject);

impl FromRequestParts<AppState> for Agent {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Agent, Problem> {
        let header = parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let Some(token) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
            return Err(Problem::new(
                StatusCode::UNAUTHORIZED,
                "missing_key",
                "send the agent's scoped key as `Authorization: Bearer nv_<prefix>_<secret>`",
            ));
        };
        match state.gateway.authenticate(token.trim()).await? {
            Some(subject) => Ok(Agent(subject)),
            None => Err(Problem::new(
                StatusCode::UNAUTHORIZED,
                "invalid_key",
                "the key is malformed, unknown, revoked or expired; ask for a new scoped key",
            )),
        }
    }
}
