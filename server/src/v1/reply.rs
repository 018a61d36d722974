//! How a `/v1` handler reads a JSON body and answers: one status per pipeline disposition,
//! and the marks the idempotency layer reads.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gateway::domain::calls::{ActionResponse, Disposition};

use crate::http::problem::Problem;

/// What administrative changes are recorded as, when made with the company key.
pub(crate) const ACTOR: &str = gateway::audit::activity::COMPANY_KEY_ACTOR;

/// The HTTP form of a pipeline answer.
pub fn respond(r: ActionResponse) -> Response {
    let status = match r.disposition {
        Disposition::Executed => StatusCode::OK,
        Disposition::Parked => StatusCode::ACCEPTED,
        // A full rate window: the one retryable refusal, with `Retry-After`.
        Disposition::Refused if r.rate_limited() => StatusCode::TOO_MANY_REQUESTS,
        Disposition::Refused => StatusCode::FORBIDDEN,
        Disposition::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Disposition::Full => StatusCode::CONFLICT,
    };
    let retry_after = r.retry_after_secs();
    let mut res = (status, Json(r.body)).into_response();
    if let Some(secs) = retry_after {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if r.replayed {
        res.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    res
}

pub(crate) fn json_body<T: serde::de::DeserializeOwned>(body: &[u8], example: &str) -> Result<T, Problem> {
    serde_json::from_slice(if body.is_empty() { b"{}" } else { body }).map_err(|e| {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_json", format!("expected {example}: {e}"))
    })
}

/// Marks a response that shows a secret, which is never stored for an Idempotency-Key replay.
pub(crate) fn secret_bearing(mut res: Response) -> Response {
    res.extensions_mut().insert(crate::http::idempotency::SecretBearing);
    res
}
