//! Brain governance over HTTP (docs/architecture.md#brain-governance).
//!
//! Agents submit writeback envelopes and read and decide proposals, all gated by the `brain`
//! primitive of their kit. An agent's accept parks for a human (202 with the approval to
//! poll); its reject applies at once, and only for its own proposals (or its sub-agents').
//! A human reviewer decides directly with their own credential (a personal API token with
//! the `reviewer` or `admin` role, or the console session), never for their own agent.

use axum::Json;
use axum::extract::{FromRequestParts, State};

use crate::http::problem::{Path, Query};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use gateway::domain::brain::{Decider, Decision, ProposalQuery, ProposalStatus, WritebackInput};
use serde::Deserialize;
use serde_json::json;

use crate::http::auth::{Agent, Caller, Human, Resolved};
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::reply::respond;

/// Lets an agent through only if its kit allows `tool`; the company always passes.
async fn gated(state: &AppState, caller: &Caller, tool: &str) -> Result<Option<Response>, Problem> {
    if let Caller::Agent(s) = caller
        && let Some(refused) = state.gateway.gate(s, tool, &json!({})).await?
    {
        return Ok(Some(respond(refused)));
    }
    Ok(None)
}

#[utoipa::path(post, path = "/v1/brain/writebacks", tag = "brain", request_body = gateway::domain::brain::WritebackInput,
    responses((status = 201, description = "Recorded; each claim became a proposal.", body = gateway::domain::brain::WritebackAccepted),
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
    responses((status = 200, description = "Writebacks, newest first.", body = crate::v1::dto::WritebackList)))]
pub async fn writebacks(State(state): State<AppState>, caller: Caller) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_writebacks").await? {
        return Ok(refused);
    }
    let items = state.gateway.writebacks(caller.tenant(), None).await?;
    Ok(Json(crate::v1::dto::WritebackList { items }).into_response())
}

#[utoipa::path(get, path = "/v1/brain/writebacks/{id}", tag = "brain",
    params(("id" = String, Path, description = "The writeback id.")),
    responses((status = 200, description = "The writeback with its proposals.", body = gateway::domain::brain::Writeback)))]
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
    status: Option<ProposalStatus>,
    object_type: Option<String>,
    run_id: Option<String>,
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/v1/brain/proposals", tag = "brain", params(ProposalParams),
    responses((status = 200, description = "Proposals with their trails.", body = crate::v1::dto::ProposalList)))]
pub async fn proposals(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<ProposalParams>,
) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_proposals").await? {
        return Ok(refused);
    }
    let query =
        ProposalQuery { status: q.status, object_type: q.object_type, run_id: q.run_id, limit: q.limit };
    let items = state.gateway.proposals(caller.tenant(), &query).await?;
    Ok(Json(crate::v1::dto::ProposalList { items }).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct BeliefParams {
    /// Only beliefs of this object type.
    object_type: Option<String>,
    /// Only beliefs whose content contains this text, in any case.
    #[param(max_length = 200)]
    q: Option<String>,
    /// At most this many (1 to 500; default 100).
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/v1/brain/beliefs", tag = "brain", params(BeliefParams),
    responses((status = 200, description = "The company's beliefs, newest first, each with who accepted it and where it came from.", body = crate::v1::dto::BeliefList)))]
pub async fn beliefs(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<BeliefParams>,
) -> Result<Response, Problem> {
    if let Some(refused) = gated(&state, &caller, "naive_brain_beliefs").await? {
        return Ok(refused);
    }
    let query =
        gateway::domain::brain::BeliefQuery { object_type: q.object_type, search: q.q, limit: q.limit };
    let items = state.gateway.beliefs(caller.tenant(), &query).await?;
    Ok(Json(crate::v1::dto::BeliefList { items }).into_response())
}

#[utoipa::path(get, path = "/v1/brain/proposals/{id}", tag = "brain",
    params(("id" = String, Path, description = "The proposal id.")),
    responses((status = 200, description = "The proposal with its decision trail.", body = gateway::domain::brain::Proposal)))]
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
    /// Why, for the decision trail: required, at most 2000 characters.
    #[schema(schema_with = crate::v1::dto::decision_text)]
    because: String,
}

/// An agent, or a human reviewer with their own credential (a personal token or the console
/// session).
pub enum DecidingCaller {
    Agent(gateway::domain::principal::Subject),
    Human(Human),
}

impl FromRequestParts<AppState> for DecidingCaller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<DecidingCaller, Problem> {
        match parts.extensions.get::<Resolved>() {
            Some(Resolved::Agent(s)) => Ok(DecidingCaller::Agent(s.clone())),
            Some(r) => Ok(DecidingCaller::Human(Human::from_resolved(r)?)),
            None => {
                Err(Problem::new(StatusCode::UNAUTHORIZED, "missing_key", "send a key or a personal token"))
            }
        }
    }
}

#[utoipa::path(post, path = "/v1/brain/proposals/{id}/decision", tag = "brain",
    params(("id" = String, Path, description = "The proposal id.")),
    request_body = DecisionBody,
    responses((status = 200, description = "Decided.", body = gateway::domain::brain::ProposalDecided),
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
        DecidingCaller::Agent(s) => (s.tenant.clone(), Decider::Agent(s)),
        DecidingCaller::Human(h) => (h.tenant.clone(), Decider::Human(h.user)),
    };
    Ok(respond(state.gateway.decide_proposal(&tenant, &id, &decider, b.decision, &b.because).await?))
}
