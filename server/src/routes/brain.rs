//! Brain governance over HTTP (SPEC §9).
//!
//! Agents submit writeback envelopes and read and decide proposals, all gated by the `brain`
//! primitive of their kit. An agent's accept parks for a human (202 with the approval to
//! poll); its reject applies at once. The company key acting for a console user with the
//! `reviewer` or `admin` role (named in `X-Naive-User`) decides directly.

use axum::Json;
use axum::extract::{FromRequestParts, State};

use crate::problem::{Path, Query};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use gateway::Role;
use gateway::brain::{Decider, Decision, ProposalQuery, ProposalStatus, WritebackInput};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{Agent, Caller, Human};
use crate::problem::Problem;
use crate::routes::actions::respond;
use crate::startup::AppState;

/// Lets an agent through only if its kit allows `tool`; the company always passes.
async fn gated(state: &AppState, caller: &Caller, tool: &str) -> Result<Option<Response>, Problem> {
    if let Caller::Agent(s) = caller {
        if let Some(env) = state.gateway.inactive_refusal(s, tool).await? {
            return Ok(Some((StatusCode::FORBIDDEN, Json(env)).into_response()));
        }
        if let Some(refused) = state.gateway.gate(s, tool, &json!({})).await? {
            return Ok(Some(respond(refused)));
        }
    }
    Ok(None)
}

#[utoipa::path(post, path = "/v1/brain/writebacks", tag = "brain", params(("Idempotency-Key" = Option<String>, Header, description = "Makes a resend harmless: the first answer is replayed.")),
    request_body = gateway::brain::WritebackInput,
    responses((status = 200, description = "Recorded; each claim became a proposal.", body = gateway::brain::Writeback),
        (status = 403, description = "The kit does not enable brain, or the profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn submit(
    State(state): State<AppState>,
    Agent(subject): Agent,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let input: WritebackInput = serde_json::from_slice(&body).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_writeback",
            format!(r#"expected {{"run_id": "…", "source": "…", "claims": [{{"object_type": "fact", "content": …}}]}}: {e}"#),
        )
    })?;
    let r = state.gateway.submit_writeback(&subject, input).await?;
    let mut res = respond(r);
    if res.status() == StatusCode::OK {
        *res.status_mut() = StatusCode::CREATED;
    }
    Ok(res)
}

#[utoipa::path(get, path = "/v1/brain/writebacks", tag = "brain",
    responses((status = 200, description = "Writebacks, newest first.", body = crate::openapi::WritebackList)))]
pub async fn writebacks(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_writebacks").await? {
        return Ok(refused);
    }
    Ok(Json(json!({ "items": state.gateway.writebacks(caller.tenant(), None).await? })).into_response())
}

#[utoipa::path(get, path = "/v1/brain/writebacks/{id}", tag = "brain",
    params(("id" = String, Path, description = "The writeback id.")),
    responses((status = 200, description = "The writeback with its proposals.", body = gateway::brain::Writeback)))]
pub async fn writeback(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_writeback").await? {
        return Ok(refused);
    }
    Ok(Json(state.gateway.writeback(caller.tenant(), &id).await?).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProposalParams {
    status: Option<String>,
    object_type: Option<String>,
    run_id: Option<String>,
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/v1/brain/proposals", tag = "brain", params(ProposalParams),
    responses((status = 200, description = "Proposals with their trails.", body = crate::openapi::ProposalList)))]
pub async fn proposals(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<ProposalParams>,
) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_proposals").await? {
        return Ok(refused);
    }
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(ProposalStatus::parse(s).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid_status",
                "status is one of pending, parked, accepted, rejected",
            )
        })?),
    };
    let query = ProposalQuery { status, object_type: q.object_type, run_id: q.run_id, limit: q.limit };
    Ok(Json(json!({ "items": state.gateway.proposals(caller.tenant(), &query).await? })).into_response())
}

#[utoipa::path(get, path = "/v1/brain/proposals/{id}", tag = "brain",
    params(("id" = String, Path, description = "The proposal id.")),
    responses((status = 200, description = "The proposal with its decision trail.", body = gateway::brain::Proposal)))]
pub async fn proposal(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_proposal").await? {
        return Ok(refused);
    }
    Ok(Json(state.gateway.proposal(caller.tenant(), &id).await?).into_response())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    decision: Decision,
    because: String,
}

/// An agent, or a human reviewer acting through the company key.
pub enum DecidingCaller {
    Agent(gateway::keys::Subject),
    Human(Human),
}

impl FromRequestParts<AppState> for DecidingCaller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<DecidingCaller, Problem> {
        if parts.headers.contains_key("x-naive-user") {
            return Ok(DecidingCaller::Human(Human::from_request_parts(parts, state).await?));
        }
        match Caller::from_request_parts(parts, state).await? {
            Caller::Agent(s) => Ok(DecidingCaller::Agent(s)),
            Caller::Company(_) => Err(Problem::new(
                StatusCode::BAD_REQUEST,
                "user_required",
                "name the deciding console user in the X-Naive-User header",
            )),
        }
    }
}

#[utoipa::path(post, path = "/v1/brain/proposals/{id}/decision", tag = "brain",
    params(("id" = String, Path, description = "The proposal id."),
        ("X-Naive-User" = Option<String>, Header, description = "With the company key: the reviewer deciding."), ("Idempotency-Key" = Option<String>, Header, description = "Makes a resend harmless: the first answer is replayed.")),
    request_body = DecisionBody,
    responses((status = 200, description = "Decided.", body = crate::openapi::ProposalDecided),
        (status = 202, description = "An agent's accept parks for a human.", body = policy::Envelope, content_type = "application/json"),
        (status = 403, description = "Refused by the kit, or the profile is revoked.", body = policy::Envelope, content_type = "application/json")))]
pub async fn decide(
    State(state): State<AppState>,
    caller: DecidingCaller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let b: DecisionBody = serde_json::from_slice(&body).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_decision",
            format!(r#"expected {{"decision": "accept"|"reject", "because": "…"}}: {e}"#),
        )
    })?;
    let (tenant, decider) = match caller {
        DecidingCaller::Agent(s) => {
            if let Some(env) = state.gateway.inactive_refusal(&s, gateway::brain::DECIDE_TOOL).await? {
                return Ok((StatusCode::FORBIDDEN, Json(env)).into_response());
            }
            (s.tenant.clone(), Decider::Agent(s))
        }
        DecidingCaller::Human(h) => {
            h.require(&[Role::Reviewer, Role::Admin])?;
            (h.tenant.clone(), Decider::Human(h.user))
        }
    };
    Ok(respond(state.gateway.decide_proposal(&tenant, &id, &decider, b.decision, &b.because).await?))
}
