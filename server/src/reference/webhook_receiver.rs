//! `server webhook-receiver`: a reference receiver for the gateway's webhooks, the kind of
//! endpoint an approver's tooling runs. It accepts `POST` on any path, verifies the Standard
//! Webhooks signature when it knows the secret (and those that came before, once told it),
//! and keeps every request it got, answered or not, for `GET /received`, with when each arrived. Tests run it as its own process;
//! `--fail-first N` makes it answer 500 to the first N deliveries of each message,
//! `--always-fail` to all of them, `--latency-ms N` answers each one N ms late (a slow
//! receiver), and `--max-body N` answers 413 to a body longer than N bytes (a collector's
//! size limit).
//!
//! Verifying a delivery (what any receiver does): take the secret's base64 part after
//! `whsec_` as the key, compute `base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>"))`
//! and compare it with each `v1,<signature>` in `webhook-signature`; refuse a timestamp more
//! than five minutes off; deduplicate on `webhook-id`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

#[derive(Default)]
struct Seen {
    requests: Vec<Value>,
    /// Deliveries seen per message id.
    per_message: HashMap<String, u32>,
    /// The signing secret, once a test (or the operator) has told it.
    secret: Option<String>,
}

#[derive(Clone)]
struct Receiver {
    seen: Arc<Mutex<Seen>>,
    fail_first: u32,
    always_fail: bool,
    latency: std::time::Duration,
    max_body: Option<usize>,
}

/// How the receiver answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Behaviour {
    /// Answer 500 to the first this many deliveries of each message.
    pub fail_first: u32,
    /// Answer 500 to every delivery.
    pub always_fail: bool,
    /// Answer each delivery this many milliseconds after it arrived.
    pub latency_ms: u64,
    /// Answer 413 to a body longer than this.
    pub max_body: Option<usize>,
}

/// Serves on `listen` until the process ends.
pub async fn serve(listen: SocketAddr, secret: Option<String>, how: Behaviour) -> Result<(), String> {
    let seen = Seen { secret, ..Seen::default() };
    let state = Receiver {
        seen: Arc::new(Mutex::new(seen)),
        fail_first: how.fail_first,
        always_fail: how.always_fail,
        latency: std::time::Duration::from_millis(how.latency_ms),
        max_body: how.max_body,
    };
    let app = axum::Router::new()
        .route("/received", get(received))
        .route("/secret", post(set_secret))
        .fallback(post(receive))
        .with_state(state);
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Reference webhook receiver listening on http://{addr}");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

/// Whether the request's signature is the secret's, and its timestamp recent.
fn verified(secret: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |n| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default();
    signed_by(secret, [header("webhook-id"), header("webhook-timestamp"), header("webhook-signature")], body)
}

/// Whether a delivery's `[id, timestamp, signature]` are the secret's for `body`, and its
/// timestamp within five minutes of now.
fn signed_by(secret: &str, [id, ts, signature]: [&str; 3], body: &[u8]) -> bool {
    let Ok(t) = ts.parse::<i64>() else { return false };
    if chrono::Utc::now().timestamp().abs_diff(t) > 300 {
        return false;
    }
    let expected = gateway::delivery::webhooks::sign(secret, id, t, body);
    signature.split(' ').any(|s| gateway::secrets::digest_eq(s, &expected))
}

/// Verifies, with the secret just learned, the requests that arrived before it (a stream
/// starts sending the moment it is added, before its secret can be passed on).
fn verify_earlier(seen: &mut Seen, secret: &str) {
    for q in seen.requests.iter_mut().filter(|q| q["verified"].is_null()) {
        let part = |k: &str| q[k].as_str().unwrap_or_default().to_string();
        let parts = [part("webhook_id"), part("webhook_timestamp"), part("webhook_signature")];
        let ok = signed_by(secret, [&parts[0], &parts[1], &parts[2]], part("body").as_bytes());
        q["verified"] = json!(ok);
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let arrived = chrono::Utc::now();
    if !r.latency.is_zero() {
        tokio::time::sleep(r.latency).await;
    }
    let mut seen = r.seen.lock().expect("the receiver lock");
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let n = {
        let n = seen.per_message.entry(id.clone()).or_default();
        *n += 1;
        *n
    };
    let too_large = r.max_body.is_some_and(|m| body.len() > m);
    let status = match () {
        _ if too_large => 413,
        _ if r.always_fail || n <= r.fail_first => 500,
        _ => 200,
    };
    let verified = seen.secret.as_deref().map(|s| verified(s, &headers, &body));
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    seen.requests.push(json!({
        "webhook_id": id,
        "webhook_timestamp": header("webhook-timestamp"),
        "webhook_signature": header("webhook-signature"),
        "body": String::from_utf8_lossy(&body),
        "verified": verified,
        "answered": status,
        "arrived_at": arrived.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "answered_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }));
    if status == 413 {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than --max-body").into_response();
    }
    if status == 500 {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the receiver is failing on purpose").into_response();
    }
    Json(json!({ "received": id })).into_response()
}

async fn received(State(r): State<Receiver>) -> Response {
    let seen = r.seen.lock().expect("the receiver lock");
    Json(json!({ "items": seen.requests })).into_response()
}

async fn set_secret(State(r): State<Receiver>, Json(v): Json<Value>) -> Response {
    let Some(secret) = v["secret"].as_str().filter(|s| s.starts_with("whsec_")) else {
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": "a secret is whsec_…" }))).into_response();
    };
    let mut seen = r.seen.lock().expect("the receiver lock");
    verify_earlier(&mut seen, secret);
    seen.secret = Some(secret.to_string());
    StatusCode::NO_CONTENT.into_response()
}
