//! The one error body of `/v1` for errors that are not verdicts: a stable `code`, a message
//! that says what to do, and the HTTP status. Verdicts use the refusal envelope instead.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Problem {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
        Problem { status: status.as_u16(), code, message: message.into() }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, [(header::CONTENT_TYPE, "application/problem+json")], Json(self)).into_response()
    }
}

/// Each gateway error's status; the code and message pass through unchanged.
impl From<gateway::Error> for Problem {
    fn from(e: gateway::Error) -> Problem {
        use gateway::Error as E;
        let status = match &e {
            E::NotFound { .. } => StatusCode::NOT_FOUND,
            E::Invalid { code: "args_too_large", .. } => StatusCode::PAYLOAD_TOO_LARGE,
            E::Invalid { .. } => StatusCode::BAD_REQUEST,
            E::Conflict { .. } => StatusCode::CONFLICT,
            E::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            E::Forbidden { .. } => StatusCode::FORBIDDEN,
            E::UnsupportedDatabase { .. }
            | E::DatabaseDirectory { .. }
            | E::DatabaseOpen { .. }
            | E::Migrate(_) => StatusCode::SERVICE_UNAVAILABLE,
            E::Storage(_) | E::Sql(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %e, "request failed");
            return Problem::new(
                status,
                e.code(),
                "the gateway failed to complete the request; it was rolled back, try again",
            );
        }
        Problem::new(status, e.code(), e.to_string())
    }
}
