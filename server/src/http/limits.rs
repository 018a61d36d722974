//! The limits every request meets: the largest body, and the one problem body that says so
//! whichever layer refused it.

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A body refused for its size, by the limit layer or an extractor, answers with the one
/// problem body like every other refusal (they answer plain text).
pub(crate) async fn too_large_as_problem(res: axum::response::Response) -> axum::response::Response {
    let problem =
        res.headers().get(axum::http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().ends_with(b"json"));
    if res.status() != axum::http::StatusCode::PAYLOAD_TOO_LARGE || problem {
        return res;
    }
    too_large()
}

/// The answer to a body over [`MAX_BODY_BYTES`].
pub(crate) fn too_large() -> axum::response::Response {
    use axum::response::IntoResponse;
    crate::http::problem::Problem::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("request bodies are at most {MAX_BODY_BYTES} bytes"),
    )
    .into_response()
}
