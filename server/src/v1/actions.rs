//! Governed actions and their dry run, thin callers of `gateway::Gateway::perform_as` and
//! `explain_call`.
//!
//! `POST /v1/users/{user_id}/{primitive}/{verb}`: the body is the action's arguments. 200 with
//! the result; 202 with `wait_for_approval` for a park; 403 with the envelope for a deny; 503
//! with `Retry-After` for an outage. A key sealed to another profile sees 404.
//! `POST /v1/policy/explain`: `{action, args}` → `allow | deny | park` with every reason.

use axum::Json;
use axum::extract::State;

use crate::http::problem::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::auth::Agent;
use crate::http::problem::Problem;
use crate::state::AppState;
use crate::v1::dto::explained;
use crate::v1::reply::respond;

/// The document writes this route out once per catalog action, with that action's arguments
/// (`openapi::document`).
#[utoipa::path(post, path = "/v1/users/{user_id}/{primitive}/{verb}", tag = "actions",
    params(("user_id" = String, Path, description = "The calling agent's profile id."),
        ("primitive" = String, Path, description = "cards, email, web, brain…"),
        ("verb" = String, Path, description = "charge, send, read, query…"),
        ("Naive-Justification" = Option<String>, Header, description = "Why the agent asks, for the human who approves if the call parks: plain text of at most 500 characters, percent-encoded where not ASCII. Shown, never rendered as markup.")),
    responses((status = 200, description = "The action ran.", body = gateway::domain::calls::Executed),
        (status = 202, description = "Parked for a human: poll the approval in `recovery`.", body = policy::Envelope, content_type = "application/json"),
        (status = 403, description = "Refused: the verdict envelope says why and what would change it.", body = policy::Envelope, content_type = "application/json"),
        (status = 429, description = "Refused (`rate_limited`): a rate limit's window is full; the one retryable deny. Send again after `Retry-After` seconds; nothing was charged.", body = policy::Envelope, content_type = "application/json",
            headers(("Retry-After" = u64, description = "Seconds until the window ends."))),
        (status = 409, description = "Not queued (`outbox_full`): the tenant's runtime queue is at its bound; wait for the command in `recovery`, then send again. Nothing was charged.", body = policy::Envelope, content_type = "application/json",
            headers(("Retry-After" = u64, description = "Seconds to wait."))),
        (status = 503, description = "The connector is unavailable; retry after `Retry-After` seconds.", body = policy::Envelope, content_type = "application/json",
            headers(("Retry-After" = u64, description = "Seconds to wait.")))))]
pub async fn governed(
    State(state): State<AppState>,
    Agent(subject): Agent,
    Path((user_id, primitive, verb)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    if user_id != subject.profile.as_str() {
        return Err(Problem::new(StatusCode::NOT_FOUND, "not_found", "no such agent profile for this key"));
    }
    let args: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            Problem::new(StatusCode::BAD_REQUEST, "invalid_json", format!("the body is not JSON: {e}"))
        })?
    };
    let idem = crate::http::idempotency::idempotency_key(&headers)?;
    let why = justification(&headers)?;
    let action = format!("{primitive}.{verb}");
    let resp = state.gateway.perform_justified(&subject, action, args, idem, why.as_deref()).await?;
    Ok(respond(resp))
}

/// The header an agent says why it asks in: plain text, percent-encoded where it is not
/// ASCII (`Naive-Justification: Month-end%20supplier%20payment`).
pub const JUSTIFICATION: &str = "naive-justification";

/// The agent's justification, decoded; `invalid_justification` when it does not decode.
fn justification(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    let Some(v) = headers.get(JUSTIFICATION) else { return Ok(None) };
    let bad = || {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_justification",
            "Naive-Justification is plain text, percent-encoded (UTF-8) where it is not ASCII",
        )
    };
    let raw = v.to_str().map_err(|_| bad())?;
    let text = percent_encoding::percent_decode_str(raw).decode_utf8().map_err(|_| bad())?;
    Ok(Some(text.into_owned()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    action: String,
    /// The action's arguments; none is `{}` (null is not an object, and is refused).
    #[serde(default = "no_args")]
    args: Value,
}

fn no_args() -> Value {
    json!({})
}

#[utoipa::path(post, path = "/v1/policy/explain", tag = "actions",
    request_body = ExplainRequest,
    responses((status = 200, description = "What the call would meet now, with every reason; nothing is reserved.", body = crate::v1::dto::Explained),
        (status = 403, description = "The profile is revoked or suspended.", body = policy::Envelope, content_type = "application/json")))]
pub async fn explain(
    State(state): State<AppState>,
    Agent(subject): Agent,
    body: axum::body::Bytes,
) -> Result<Response, Problem> {
    let req: ExplainRequest = serde_json::from_slice(&body).map_err(|e| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("expected {{\"action\": \"cards.charge\", \"args\": {{…}}}}: {e}"),
        )
    })?;
    let e = state.gateway.explain_call(&subject, &req.action, &req.args).await?;
    Ok(Json(explained(req.action, e)).into_response())
}
