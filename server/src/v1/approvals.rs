//! Approvals over HTTP (docs/architecture.md#approvals).
//!
//! `GET /v1/approvals/{id}`: an agent polls its own approval; the company sees any of its
//! tenant's. `GET /v1/approvals?status=&profile=`: the company's list. Deciding needs a human
//! with their own credential (a personal API token with the `approver` or `admin` role, or the
//! console session); never the company key, never the requesting agent, and never the
//! profile's owner. The call is decided again under the kit in force when it is approved.

use axum::Json;
use axum::extract::State;

use crate::http::problem::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
use gateway::ops::approvals::{BulkDecision, BulkOutcome, Decided};
use serde::Deserialize;

use crate::http::auth::{Caller, Human};
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::respond;

/// The most approvals one list returns.
const MAX_PAGE: i64 = 200;

#[utoipa::path(get, path = "/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "The approval id.")),
    responses((status = 200, description = "The approval, its result and its trail.", body = gateway::domain::approvals::Approval),
        (status = 403, description = "The agent's profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let approval = match &caller {
        Caller::Agent(subject) => state.gateway.approval_for_subject(subject, &id).await?,
        Caller::Company(tenant) => state.gateway.approval(tenant, &id).await?,
    };
    Ok(Json(approval).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    status: Option<ApprovalStatus>,
    /// Only this profile's approvals.
    #[param(pattern = "^prf_[A-Za-z0-9]{1,64}$")]
    profile: Option<String>,
    /// At most this many (clamped to 1 to 200).
    limit: Option<i64>,
    /// An action, or a pattern such as `cards.*`.
    action: Option<String>,
    /// Only calls costing at least this much.
    min_amount: Option<policy::Money>,
    /// Words in the action, the agent's justification, the decider or their reason.
    q: Option<String>,
}

#[utoipa::path(get, path = "/v1/approvals", tag = "approvals", params(ListQuery),
    responses((status = 200, description = "The tenant's approvals, newest first; with `Accept: text/csv`, every one the filters match (up to 10,000) with its whole trail, one line per step.",
        content((crate::v1::dto::ApprovalList = "application/json"), (String = "text/csv")))))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Query(q): Query<ListQuery>,
) -> Result<Response, Problem> {
    let Caller::Company(tenant) = caller else {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "company_key_required",
            "listing approvals needs the company key",
        ));
    };
    let status = q.status;
    let profile = match q.profile.as_deref() {
        None => None,
        Some(p) => Some(gateway::ProfileId::parse(p).ok_or_else(|| {
            Problem::new(StatusCode::BAD_REQUEST, "invalid_profile", "profile is an id like prf_…")
        })?),
    };
    let limit = q.limit.map(|l| l.clamp(1, MAX_PAGE));
    let query = ApprovalQuery {
        status,
        profile,
        limit,
        action: q.action,
        min_amount: q.min_amount,
        requested_before: None,
        search: q.q,
    };
    let csv = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("text/csv"));
    if csv {
        let body = state.gateway.export_approvals(&tenant, &query).await?;
        return Ok(([(axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response());
    }
    let items = state.gateway.approvals(&tenant, &query).await?;
    Ok(Json(crate::v1::dto::ApprovalList { items }).into_response())
}

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// Why, for the trail: at most 2000 characters.
    #[schema(schema_with = crate::v1::dto::decision_note)]
    note: Option<String>,
}

#[utoipa::path(post, path = "/v1/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path, description = "The approval id.")),
    request_body(content = ApproveBody, description = "An optional note."),
    responses((status = 200, description = "The last approval needed: the bound call ran once; its result.", body = gateway::domain::calls::Executed),
        (status = 202, description = "Recorded; the approval needs more approvers (its `quorum` says who).", body = gateway::domain::approvals::Approval),
        (status = 409, description = "`already_approved` (one person counts once, whatever credential), `named_approver_needed` (the last place is for the named role or group), `approval_already_decided`, `approval_expired`.", body = Problem),
        (status = 503, description = "The connector was unavailable; the hold is voided.", body = policy::Envelope, content_type = "application/json")))]
pub async fn approve(
    State(state): State<AppState>,
    human: Human,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let b: ApproveBody = if body.is_empty() {
        ApproveBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| Problem::new(StatusCode::BAD_REQUEST, "invalid_json", e.to_string()))?
    };
    Ok(match state.gateway.approve(&human.tenant, &id, &human.user, b.note.as_deref()).await? {
        Decided::Ran(resp) => respond(resp),
        Decided::Waiting(a) => (StatusCode::ACCEPTED, Json(a)).into_response(),
    })
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    /// The approvals to decide, 1 to 200, each named once.
    ids: Vec<String>,
    decision: BulkDecision,
    /// One note for all of them: optional to approve, required to deny.
    #[schema(schema_with = crate::v1::dto::decision_note)]
    note: Option<String>,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct BulkAnswer {
    /// One outcome per id, in the order given.
    pub items: Vec<BulkOutcome>,
}

#[utoipa::path(post, path = "/v1/approvals/decide", tag = "approvals",
    request_body(content = BulkBody, example = json!({"ids": ["apr_…", "apr_…"], "decision": "approve", "note": "month-end batch"})),
    responses((status = 200, description = "Each approval decided on its own, as if alone; `items` says what became of each, and why one did not go through.", body = BulkAnswer),
        (status = 400, description = "`invalid_bulk`, `duplicate_approval`, `reason_required` (a deny needs a note): nothing was decided.", body = Problem)))]
pub async fn decide_many(
    State(state): State<AppState>,
    human: Human,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let b: BulkBody =
        crate::v1::reply::json_body(&body, r#"{"ids": ["apr_…"], "decision": "approve", "note": "…"}"#)?;
    let items =
        state.gateway.decide_many(&human.tenant, &b.ids, b.decision, &human.user, b.note.as_deref()).await?;
    Ok(Json(BulkAnswer { items }).into_response())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyBody {
    /// Why, for the agent and the trail: required, at most 2000 characters.
    #[schema(schema_with = crate::v1::dto::decision_text)]
    reason: String,
}

#[utoipa::path(post, path = "/v1/approvals/{id}/deny", tag = "approvals",
    params(("id" = String, Path, description = "The approval id.")),
    request_body = DenyBody,
    responses((status = 200, description = "Denied; the hold is voided.", body = gateway::domain::approvals::Approval)))]
pub async fn deny(
    State(state): State<AppState>,
    human: Human,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let b: DenyBody = serde_json::from_slice(&body).map_err(|_| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "reason_required",
            "send {\"reason\": \"…\"}: a denial needs a reason",
        )
    })?;
    Ok(Json(state.gateway.deny(&human.tenant, &id, &human.user, &b.reason).await?).into_response())
}
