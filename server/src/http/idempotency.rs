//! `Idempotency-Key` on every mutating `/v1` route (docs/architecture.md#surfaces).
//!
//! A layer around the routes, inside authentication: only a request whose credential was
//! resolved (and, for an agent, whose profile is active) is ever claimed or answered from the
//! store, so bad credentials write nothing and a revoked one gets its refusal, not a replay.
//! A POST, PUT, PATCH or DELETE that carries the header is
//! claimed in `gateway` under the credential that sent it, runs once, and its response is
//! stored; a resend of the same request (method, path, query and body) gets that response
//! again with `Idempotent-Replayed: true` and causes nothing. The same key on a different
//! request is a 409 `idempotency_key_reused`; a resend while the first is still running is a
//! 409 `idempotency_in_progress` with `Retry-After`. A 5xx or a 429 is not stored, so a retry runs.
//! A response that shows a secret (a new or rotated key) is stored with the secret withheld:
//! secrets are shown exactly once and only their hashes are kept, so a resend learns the key
//! exists (`"secret": null, "secret_withheld": true`) and can rotate it if the first answer
//! was lost. Governed actions and explain are left to the pipeline, which keeps its claim in the same
//! transaction as the action's effect.

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gateway::domain::calls::MAX_IDEMPOTENCY_KEY_LEN;
use gateway::domain::idempotency::{Claim, Stored};
use sha2::{Digest, Sha256};

use crate::http::problem::Problem;
use crate::state::AppState;

/// Routes that keep their own idempotency (or change nothing).
const OWN_CLAIMS: [&str; 2] = ["/v1/users/{user_id}/{primitive}/{verb}", "/v1/policy/explain"];
/// Response headers worth replaying.
const KEPT_HEADERS: [&str; 4] = ["content-type", "etag", "location", "retry-after"];
/// The largest response stored for replay.
const MAX_STORED_BYTES: usize = 1 << 20;

/// Set on a response whose body has a top-level `secret`.
#[derive(Clone, Copy, Debug)]
pub struct SecretBearing;

/// The body to store: the secret withheld when there is one.
fn storable(body: &[u8], secret_bearing: bool) -> Vec<u8> {
    if !secret_bearing {
        return body.to_vec();
    }
    let mut v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("secret".into(), serde_json::Value::Null);
        o.insert("secret_withheld".into(), serde_json::Value::Bool(true));
    }
    serde_json::to_vec(&v).expect("JSON serializes")
}

/// The request's `Idempotency-Key`, if it sent one: 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] visible
/// ASCII characters, or `invalid_idempotency_key`. The one check for every route.
pub fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<String>, Problem> {
    let Some(v) = headers.get("idempotency-key") else { return Ok(None) };
    let visible = |k: &&str| {
        (1..=MAX_IDEMPOTENCY_KEY_LEN).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic())
    };
    match v.to_str().ok().filter(visible) {
        Some(k) => Ok(Some(k.to_string())),
        None => Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
            format!("an Idempotency-Key is 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"),
        )),
    }
}

/// What the OpenAPI document says an `Idempotency-Key` is: exactly what
/// [`idempotency_key`] accepts.
pub const KEY_PATTERN: &str = "^[!-~]{1,200}$";
/// The longest Idempotency-Key, for the document.
pub const MAX_KEY_LEN: usize = MAX_IDEMPOTENCY_KEY_LEN;

pub async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mutating = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    let own = req.extensions().get::<MatchedPath>().is_some_and(|m| OWN_CLAIMS.contains(&m.as_str()));
    if !mutating || own {
        return next.run(req).await;
    }
    let key = match idempotency_key(req.headers()) {
        Ok(Some(k)) => k,
        Ok(None) => return next.run(req).await,
        Err(p) => return p.into_response(),
    };
    // The scope is the credential authentication resolved: two callers never share a key.
    let Some(scope) =
        req.extensions().get::<crate::http::auth::Resolved>().map(crate::http::auth::Resolved::scope)
    else {
        return next.run(req).await;
    };
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, crate::http::limits::MAX_BODY_BYTES).await else {
        return Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("request bodies are at most {} bytes", crate::http::limits::MAX_BODY_BYTES),
        )
        .into_response();
    };
    let digest = hex::encode(
        Sha256::new()
            .chain_update(parts.method.as_str())
            .chain_update([0])
            .chain_update(parts.uri.to_string())
            .chain_update([0])
            .chain_update(&bytes)
            .finalize(),
    );
    match state.gateway.claim_request(&scope, &key, &digest).await {
        Err(e) => Problem::from(e).into_response(),
        Ok(Claim::Mismatch) => Problem::new(
            StatusCode::CONFLICT,
            "idempotency_key_reused",
            "this Idempotency-Key was used for a different request; use a new key for a new request",
        )
        .into_response(),
        Ok(Claim::InProgress) => {
            let mut res = Problem::new(
                StatusCode::CONFLICT,
                "idempotency_in_progress",
                "the first request with this Idempotency-Key is still running; resend it shortly",
            )
            .into_response();
            res.headers_mut().insert("retry-after", HeaderValue::from_static("1"));
            res
        }
        Ok(Claim::Replay(stored)) => replay(stored),
        Ok(Claim::New) => {
            let res = next.run(Request::from_parts(parts, Body::from(bytes))).await;
            let (rparts, rbody) = res.into_parts();
            let rbytes = axum::body::to_bytes(rbody, MAX_STORED_BYTES).await.unwrap_or_default();
            let outcome = if rparts.status.is_server_error() || rparts.status == StatusCode::TOO_MANY_REQUESTS
            {
                state.gateway.release_request(&scope, &key).await
            } else {
                let headers = KEPT_HEADERS
                    .iter()
                    .filter_map(|n| {
                        rparts
                            .headers
                            .get(*n)
                            .and_then(|v| v.to_str().ok())
                            .map(|v| (n.to_string(), v.to_string()))
                    })
                    .collect();
                let body = storable(&rbytes, rparts.extensions.get::<SecretBearing>().is_some());
                let stored = Stored { status: rparts.status.as_u16(), headers, body };
                state.gateway.finish_request(&scope, &key, stored).await
            };
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "could not record the response to an Idempotency-Key");
            }
            Response::from_parts(rparts, Body::from(rbytes))
        }
    }
}

fn replay(stored: Stored) -> Response {
    let mut res = Response::new(Body::from(stored.body));
    *res.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    for (name, value) in stored.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            res.headers_mut().insert(n, v);
        }
    }
    res.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    res
}
