//! The one error body of `/v1` for errors that are not verdicts: a stable `code`, a message
//! that says what to do, and the HTTP status. Verdicts use the refusal envelope instead.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// The HTTP status, repeated.
    pub status: u16,
    /// A stable code to branch on, such as `invalid_amount` or `idempotency_key_reused`.
    pub code: &'static str,
    /// What went wrong and what to do about it.
    pub message: String,
    /// Seconds to wait before retrying, sent as `Retry-After` (a 503).
    #[serde(skip)]
    pub retry_after_secs: Option<u32>,
}

/// Query parameters, refused with a problem body (not axum's plain text) when they do not
/// parse.
#[derive(Debug, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(Problem))]
pub struct Query<T>(pub T);

impl From<axum::extract::rejection::QueryRejection> for Problem {
    fn from(e: axum::extract::rejection::QueryRejection) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_query", e.body_text())
    }
}

/// Path parameters, refused with a problem body when they do not parse.
#[derive(Debug, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(Problem))]
pub struct Path<T>(pub T);

impl From<axum::extract::rejection::PathRejection> for Problem {
    fn from(e: axum::extract::rejection::PathRejection) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_path", e.body_text())
    }
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
        Problem { status: status.as_u16(), code, message: message.into(), retry_after_secs: None }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry = self.retry_after_secs;
        let mut res =
            (status, [(header::CONTENT_TYPE, "application/problem+json")], Json(self)).into_response();
        if let Some(secs) = retry {
            res.headers_mut().insert(header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        res
    }
}

/// Each gateway error's status; the code and message pass through unchanged. Our own
/// failures are 5xx (a 503 says when to retry) and are never stored as an answer.
impl From<gateway::Error> for Problem {
    fn from(e: gateway::Error) -> Problem {
        use gateway::Error as E;
        if let E::Unavailable { code, message, retry_after_secs } = &e {
            let mut p = Problem::new(StatusCode::SERVICE_UNAVAILABLE, code, message.clone());
            p.retry_after_secs = Some(*retry_after_secs);
            return p;
        }
        if let E::Throttled { code, message, retry_after_secs } = &e {
            let mut p = Problem::new(StatusCode::TOO_MANY_REQUESTS, code, message.clone());
            p.retry_after_secs = Some(*retry_after_secs);
            return p;
        }
        let status = match &e {
            E::Internal { .. } | E::Unavailable { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            E::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
            E::NotFound { .. } => StatusCode::NOT_FOUND,
            E::Invalid { code: "args_too_large", .. } => StatusCode::PAYLOAD_TOO_LARGE,
            E::Invalid { .. } => StatusCode::BAD_REQUEST,
            E::Conflict { .. } => StatusCode::CONFLICT,
            E::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            E::Forbidden { .. } => StatusCode::FORBIDDEN,
            // A statement that failed is ours; a database that cannot be opened or migrated
            // is unavailable.
            E::Store(gateway::store::Error::Storage(_)) | E::MasterKeyMismatch { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            E::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %e, "request failed");
            if let E::Internal { code, message } = &e {
                return Problem::new(status, code, message.clone());
            }
            return Problem::new(
                status,
                e.code(),
                "the gateway failed to complete the request; it was rolled back, try again",
            );
        }
        Problem::new(status, e.code(), e.to_string())
    }
}
