//! `server slack`: a reference for the few Slack Web API methods the gateway uses, so tests
//! and `make run` see what a workspace would show. It answers `auth.test`,
//! `chat.postMessage`, `chat.update` and `views.open` under `/api/` the way Slack documents
//! them (`{"ok": true, …}`, or `{"ok": false, "error": …}` with HTTP 200), keeps every call it
//! got (`GET /calls`) and every message as it stands now (`GET /messages`), and
//! `--rate-limit-first N` answers the first N `chat.postMessage` calls `429` with
//! `Retry-After: 1`, as Slack does when a method's rate is exceeded.
//!
//! It also plays Slack's side of interactivity: its driver, `POST /interact` with
//! `{"url", "payload"}`, sends the payload to the gateway's Request URL the way Slack does
//! (form-encoded `payload=<json>`, signed `v0` with `--signing-secret` and the current
//! timestamp, unless the body names its own `timestamp` or `signature`), first giving a click
//! a `response_url` here and a `trigger_id`; it answers with the gateway's status and body and
//! what it sent. Replies to a `response_url` are kept (`GET /responses`), as are the forms
//! `views.open` opened (`GET /views`).
//!
//! For a person (`make run`), `GET /` shows the workspace as a page ([`super::slack_page`]):
//! each message with working Approve and Deny buttons, sent to the Request URL set with
//! `POST /request-url`, the replies only the clicker sees, and the Deny form.
//!
//! A bot token is any `xoxb-…` token (one containing `revoked` is answered `token_revoked`,
//! as a token uninstalled from its workspace is); the workspace is `T0REFERENCE` ("Reference
//! workspace") and the bot `U0NAIVEBOT`. A channel is any id that starts with `C` or `G`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const TEAM_ID: &str = "T0REFERENCE";
pub const TEAM_NAME: &str = "Reference workspace";
pub const BOT_USER: &str = "U0NAIVEBOT";
/// The signing secret its driver signs with unless told another.
pub const SIGNING_SECRET: &str = "reference-signing-secret-0123456789";

#[derive(Default)]
/// What the workspace holds: calls, messages, replies and forms, as its routes show them.
pub struct Workspace {
    calls: Vec<Value>,
    /// Each message as it stands: `{channel, ts, text, blocks, updates}`.
    pub(crate) messages: Vec<Value>,
    next_ts: u64,
    limited_left: u32,
    /// Replies to a `response_url`: `{n, body}`.
    pub(crate) responses: Vec<Value>,
    /// Forms opened with `views.open`: `{trigger_id, view}`.
    pub(crate) views: Vec<Value>,
    sent: u64,
    signing_secret: String,
    base: String,
    /// Where its page's buttons send clicks: the app's Request URL (`POST /request-url`).
    pub(crate) request_url: Option<String>,
}

/// The workspace, shared by its routes.
pub type Shared = Arc<Mutex<Workspace>>;

/// Serves on `listen` until the process ends, with `page` (the page for a person,
/// [`super::slack_page::routes`]) beside the Web API.
pub async fn serve(
    listen: SocketAddr,
    rate_limit_first: u32,
    signing_secret: String,
    page: axum::Router<Shared>,
) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let state: Shared = Arc::new(Mutex::new(Workspace {
        limited_left: rate_limit_first,
        signing_secret,
        base: format!("http://{addr}"),
        ..Default::default()
    }));
    let app = axum::Router::new()
        .route("/api/{method}", post(method))
        .route("/calls", get(calls))
        .route("/messages", get(messages))
        .route("/interact", post(interact))
        .route("/respond/{n}", post(respond))
        .route("/responses", get(|s: State<Shared>| listed(s, |w| &w.responses)))
        .route("/views", get(|s: State<Shared>| listed(s, |w| &w.views)))
        .merge(page)
        .with_state(state);
    println!("Reference Slack API listening on http://{addr}");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

async fn method(
    State(s): State<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_string();
    let args: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut w = s.lock().expect("the workspace lock");
    let limited = name == "chat.postMessage" && w.limited_left > 0;
    if limited {
        w.limited_left -= 1;
    }
    w.calls.push(json!({ "method": name, "args": args, "limited": limited,
        "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true) }));
    if limited {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            Json(json!({ "ok": false, "error": "ratelimited" })),
        )
            .into_response();
    }
    if !token.starts_with("xoxb-") {
        return Json(json!({ "ok": false, "error": "invalid_auth" })).into_response();
    }
    Json(answer(&mut w, &token, &name, &args)).into_response()
}

/// What Slack answers `name` with `args`.
fn answer(w: &mut Workspace, token: &str, name: &str, args: &Value) -> Value {
    if token.contains("revoked") {
        return json!({ "ok": false, "error": "token_revoked" });
    }
    let channel = args["channel"].as_str().unwrap_or_default().to_string();
    let known_channel = channel.starts_with('C') || channel.starts_with('G');
    match name {
        "auth.test" => json!({ "ok": true, "team_id": TEAM_ID, "team": TEAM_NAME, "user_id": BOT_USER,
            "url": "https://reference.slack.invalid/" }),
        "chat.postMessage" if !known_channel => json!({ "ok": false, "error": "channel_not_found" }),
        "chat.postMessage" => {
            w.next_ts += 1;
            let ts = format!("1700000000.{:06}", w.next_ts);
            w.messages.push(json!({ "channel": channel, "ts": ts, "text": args["text"],
                "blocks": args["blocks"], "updates": 0 }));
            json!({ "ok": true, "channel": channel, "ts": ts })
        }
        "chat.update" => {
            let ts = args["ts"].as_str().unwrap_or_default();
            let Some(m) = w.messages.iter_mut().find(|m| m["channel"] == channel.as_str() && m["ts"] == ts)
            else {
                return json!({ "ok": false, "error": "message_not_found" });
            };
            let updates = m["updates"].as_i64().unwrap_or(0) + 1;
            *m = json!({ "channel": channel, "ts": ts, "text": args["text"], "blocks": args["blocks"], "updates": updates });
            json!({ "ok": true, "channel": channel, "ts": ts })
        }
        "views.open" if args["trigger_id"].is_string() => {
            w.views.push(json!({ "trigger_id": args["trigger_id"], "view": args["view"] }));
            json!({ "ok": true, "view": args["view"] })
        }
        "views.open" => json!({ "ok": false, "error": "invalid_trigger_id" }),
        _ => json!({ "ok": false, "error": "unknown_method" }),
    }
}

async fn calls(State(s): State<Shared>) -> Response {
    Json(json!({ "items": s.lock().expect("the workspace lock").calls })).into_response()
}

async fn messages(State(s): State<Shared>) -> Response {
    Json(json!({ "items": s.lock().expect("the workspace lock").messages })).into_response()
}

async fn listed(State(s): State<Shared>, what: fn(&Workspace) -> &Vec<Value>) -> Response {
    Json(json!({ "items": what(&s.lock().expect("the workspace lock")) })).into_response()
}

async fn respond(State(s): State<Shared>, Path(n): Path<u64>, Json(body): Json<Value>) -> Response {
    s.lock().expect("the workspace lock").responses.push(json!({ "n": n, "body": body }));
    Json(json!({ "ok": true })).into_response()
}

/// Slack's `v0` signature of `body` at `timestamp`: HMAC-SHA256 over `v0:{timestamp}:{body}`.
pub fn sign(secret: &str, timestamp: &str, body: &str) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// The driver: sends `payload` to `url` as Slack would; the gateway's answer and what was sent.
async fn interact(State(s): State<Shared>, Json(req): Json<Value>) -> Response {
    Json(drive(&s, &req).await).into_response()
}

/// Sends `req`'s `payload` to its `url` as Slack would (see the module doc).
pub(crate) async fn drive(s: &Shared, req: &Value) -> Value {
    let mut payload = req["payload"].clone();
    let (secret, body) = {
        let mut w = s.lock().expect("the workspace lock");
        w.sent += 1;
        if payload["type"] == "block_actions" {
            let n = w.sent;
            if payload["response_url"].is_null() {
                payload["response_url"] = json!(format!("{}/respond/{n}", w.base));
            }
            if payload["trigger_id"].is_null() {
                payload["trigger_id"] = json!(format!("{n}.reference.trigger"));
            }
        }
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", &payload.to_string())
            .finish();
        (w.signing_secret.clone(), body)
    };
    let timestamp =
        req["timestamp"].as_str().map_or_else(|| chrono::Utc::now().timestamp().to_string(), str::to_string);
    let signature =
        req["signature"].as_str().map_or_else(|| sign(&secret, &timestamp, &body), str::to_string);
    let sent = crate::http_client()
        .post(req["url"].as_str().unwrap_or_default())
        .header("x-slack-request-timestamp", &timestamp)
        .header("x-slack-signature", &signature)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body.clone())
        .send()
        .await;
    let (status, answer) = match sent {
        Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    };
    json!({ "status": status, "body": answer, "payload": payload,
        "sent": { "timestamp": timestamp, "signature": signature, "body": body } })
}
