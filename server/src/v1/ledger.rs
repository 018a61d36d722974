//! Spend and the activity log over HTTP.
//!
//! `GET /v1/users/{user_id}/budget`: posted, pending and caps of a profile and the shared pools
//! above it. `GET /v1/users/{user_id}/logs?after=&before=&limit=`: that profile's activity,
//! keyset-paginated by event id. `GET /v1/logs/verify`: the tenant's audit chain, with the first
//! broken link. An agent sees only its own profile; the company key sees its tenant's.

use axum::Json;
use axum::extract::State;

use crate::http::problem::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::ProfileId;
use gateway::audit::activity::LogQuery;
use serde::Deserialize;

use crate::http::auth::{Caller, Operator};
use crate::http::problem::Problem;
use crate::state::AppState;

/// The profile a caller may read: an agent only its own, the company any of its tenant's.
async fn readable_profile(state: &AppState, caller: &Caller, user_id: &str) -> Result<ProfileId, Problem> {
    let not_found = || Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile for this key");
    let id = ProfileId::parse(user_id).ok_or_else(not_found)?;
    if let Caller::Agent(subject) = caller
        && subject.profile != id
    {
        return Err(not_found());
    }
    state.gateway.profile(caller.tenant(), &id).await?;
    Ok(id)
}

#[utoipa::path(get, path = "/v1/users/{user_id}/budget", tag = "spend",
    params(("user_id" = String, Path, description = "A profile id.")),
    responses((status = 200, description = "Posted, pending and caps, with the shared pools above.", body = gateway::domain::ledger::Budget),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn budget(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
) -> Result<Response, Problem> {
    let id = readable_profile(&state, &caller, &user_id).await?;
    Ok(Json(state.gateway.budget(caller.tenant(), &id).await?).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    after: Option<i64>,
    before: Option<i64>,
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/v1/users/{user_id}/logs", tag = "activity",
    params(("user_id" = String, Path, description = "A profile id."), LogParams),
    responses((status = 200, description = "The profile's activity, keyset-paged.", body = crate::v1::dto::LogPage),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn logs(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    Query(q): Query<LogParams>,
) -> Result<Response, Problem> {
    let id = readable_profile(&state, &caller, &user_id).await?;
    let entries = state
        .gateway
        .log(
            caller.tenant(),
            &LogQuery { profile: Some(id), after: q.after, before: q.before, limit: q.limit },
        )
        .await?;
    Ok(log_page(entries, q.after.is_some()))
}

/// A page of the log with its cursor: older entries before the last one, or newer ones after
/// it when resuming.
fn log_page(entries: Vec<gateway::audit::activity::Entry>, resuming: bool) -> Response {
    let next = entries
        .last()
        .map(|e| if resuming { format!("after={}", e.seq) } else { format!("before={}", e.seq) });
    Json(crate::v1::dto::LogPage { items: entries, next }).into_response()
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LedgerParams {
    /// Period start, RFC 3339, inclusive.
    #[param(format = DateTime)]
    from: Option<String>,
    /// Period end, RFC 3339, exclusive.
    #[param(format = DateTime)]
    to: Option<String>,
    after: Option<i64>,
    limit: Option<i64>,
}

fn instant(v: Option<&str>, field: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, Problem> {
    v.map(|s| {
        chrono::DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&chrono::Utc)).map_err(|_| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid_period",
                format!("`{field}` must be an RFC 3339 time such as 2026-11-01T00:00:00Z"),
            )
        })
    })
    .transpose()
}

/// `GET /v1/users/{user_id}/ledger`: entries oldest first with a keyset cursor and a period;
/// `Accept: text/csv` exports every entry the filter matches (up to a bound), not one page.
#[utoipa::path(get, path = "/v1/users/{user_id}/ledger", tag = "spend",
    params(("user_id" = String, Path, description = "A profile id."), LedgerParams),
    responses((status = 200, description = "Entries oldest first; with `Accept: text/csv`, every entry the filter matches as CSV.",
            content((crate::v1::dto::LedgerPage = "application/json"), (String = "text/csv"))),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn ledger(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    Query(q): Query<LedgerParams>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Problem> {
    let id = readable_profile(&state, &caller, &user_id).await?;
    let query = gateway::domain::ledger::LedgerQuery {
        from: instant(q.from.as_deref(), "from")?,
        to: instant(q.to.as_deref(), "to")?,
        after: q.after,
        limit: q.limit,
    };
    let csv = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/csv"));
    if csv {
        let all = gateway::domain::ledger::LedgerQuery { limit: None, ..query };
        let rows = state
            .gateway
            .ledger_entries(caller.tenant(), &id, &all, gateway::domain::ledger::MAX_LEDGER_EXPORT)
            .await?;
        let out = gateway::domain::ledger::to_csv(&rows);
        let disposition = format!("attachment; filename=\"ledger-{id}.csv\"");
        return Ok((
            [
                (axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                (axum::http::header::CONTENT_DISPOSITION, disposition),
            ],
            out,
        )
            .into_response());
    }
    let items = state
        .gateway
        .ledger_entries(caller.tenant(), &id, &query, gateway::domain::ledger::MAX_LEDGER_PAGE)
        .await?;
    let next = items.last().map(|e| format!("after={}", e.seq));
    Ok(Json(crate::v1::dto::LedgerPage { items, next }).into_response())
}

#[utoipa::path(get, path = "/v1/logs/verify", tag = "activity",
    responses((status = 200, description = "The audit chain's state and its first broken link.", body = gateway::audit::activity::ChainReport)))]
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

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AllLogParams {
    /// Narrow to one tenant.
    tenant: Option<String>,
    after: Option<i64>,
    before: Option<i64>,
    limit: Option<i64>,
}

/// `GET /v1/logs`: every tenant's activity for the operator, keyset-paginated like a
/// profile's log.
#[utoipa::path(get, path = "/v1/logs", tag = "activity", params(AllLogParams),
    responses((status = 200, description = "Every tenant's activity, for the operator key only.", body = crate::v1::dto::LogPage)))]
pub async fn all_logs(
    State(state): State<AppState>,
    _operator: Operator,
    Query(q): Query<AllLogParams>,
) -> Result<Response, Problem> {
    let tenant = match q.tenant.as_deref() {
        None => None,
        Some(t) => Some(gateway::TenantId::parse(t).ok_or_else(|| {
            Problem::new(StatusCode::BAD_REQUEST, "invalid_tenant", "`tenant` is a tenant id such as ten_…")
        })?),
    };
    let entries = state
        .gateway
        .log_all(
            tenant.as_ref(),
            &LogQuery { profile: None, after: q.after, before: q.before, limit: q.limit },
        )
        .await?;
    Ok(log_page(entries, q.after.is_some()))
}
