//! Spend and the activity log over HTTP.
//!
//! `GET /v1/users/{user_id}/budget`: posted, pending and caps of a profile and the shared pools
//! above it. `GET /v1/users/{user_id}/logs?after=&before=&limit=`: that profile's activity,
//! keyset-paginated by event id. `GET /v1/logs/verify`: the tenant's audit chain, with the first
//! broken link. An agent sees only its own profile; the company key sees its tenant's.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::ProfileId;
use gateway::activity::LogQuery;
use serde::Deserialize;

use crate::auth::Caller;
use crate::problem::Problem;
use crate::startup::AppState;

/// The profile a caller may read: an agent only its own, the company any of its tenant's.
async fn readable_profile(
    state: &AppState,
    caller: &Caller,
    user_id: &str,
    action: &str,
) -> Result<Result<ProfileId, Response>, Problem> {
    let not_found = || Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile for this key");
    let id = ProfileId::parse(user_id).ok_or_else(not_found)?;
    if let Caller::Agent(subject) = caller {
        if subject.profile != id {
            return Err(not_found());
        }
        if let Some(env) = state.gateway.inactive_refusal(subject, action).await? {
            return Ok(Err((StatusCode::FORBIDDEN, Json(env)).into_response()));
        }
    }
    state.gateway.profile(caller.tenant(), &id).await?;
    Ok(Ok(id))
}

pub async fn budget(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
) -> Result<Response, Problem> {
    let id = match readable_profile(&state, &caller, &user_id, "budget.get").await? {
        Ok(id) => id,
        Err(refusal) => return Ok(refusal),
    };
    Ok(Json(state.gateway.budget(caller.tenant(), &id).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogParams {
    after: Option<i64>,
    before: Option<i64>,
    limit: Option<i64>,
}

pub async fn logs(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    Query(q): Query<LogParams>,
) -> Result<Response, Problem> {
    let id = match readable_profile(&state, &caller, &user_id, "logs.get").await? {
        Ok(id) => id,
        Err(refusal) => return Ok(refusal),
    };
    let entries = state
        .gateway
        .log(
            caller.tenant(),
            &LogQuery { profile: Some(id), after: q.after, before: q.before, limit: q.limit },
        )
        .await?;
    // The next page: older entries before the last one, or newer ones after it when resuming.
    let next = entries
        .last()
        .map(|e| if q.after.is_some() { format!("after={}", e.seq) } else { format!("before={}", e.seq) });
    Ok(Json(serde_json::json!({ "items": entries, "next": next })).into_response())
}

pub async fn verify(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    let Caller::Company(tenant) = caller else {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "company_key_required",
            "verifying the audit chain needs the company key",
        ));
    };
    Ok(Json(state.gateway.verify_log(&tenant).await?).into_response())
}
