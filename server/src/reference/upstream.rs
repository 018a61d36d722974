//! `server upstream`: a reference upstream for the `http` connector, a small card processor
//! and mail relay in one process. It is what the demo's charges and mail cross real HTTP to,
//! what the tests run as a separate process, and what an upstream author reads first.
//!
//! - `POST /cards/charge` takes `Authorization: Bearer <secret>`; `POST /mail/send` takes the
//!   body signed, `Naive-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, no
//!   older than five minutes. A wrong credential is a 401 and nothing is recorded.
//! - It keys what it does on the gateway's `action_id`: the same id again gets the first answer
//!   and does nothing twice. Everything it did is in its own SQLite file, and `GET /records`
//!   (bearer) lists it, so a test can hold the gateway's ledger against what really happened.
//! - A test probe (`{"test": true}`) answers `{"ok": true, "service": …}` once the credential
//!   checks out.
//! - Scenarios, like a processor's test card numbers: a merchant (or the local part of a mail
//!   recipient) `test-slow-<ms>` answers after that long, `test-503` answers 503 with
//!   `Retry-After: 7`, `test-overcharge` reports a dollar more than was reserved,
//!   `test-negative` reports a negative cost, `test-malformed` answers text that is not JSON,
//!   and `test-partial` charges half the amount. Anything else succeeds at the full amount.
//! - `/mcp` is a connected app: a small issue tracker as an MCP server, behind the same bearer
//!   credential ([`crate::reference::upstream_tracker`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use policy::Money;
use serde_json::{Value, json};

/// How old a signature's timestamp may be.
const MAX_SIGNATURE_AGE_SECS: i64 = 300;

#[derive(Clone)]
struct Upstream {
    secret: Arc<str>,
    records: Arc<Mutex<rusqlite::Connection>>,
    latency: Duration,
}

/// Which of the two services a request is for.
#[derive(Clone, Copy)]
enum Service {
    Cards,
    Mail,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Cards => "card-processor",
            Service::Mail => "mail-relay",
        }
    }
}

/// Ends the process when standard input reaches its end (the parent holding it went away).
pub fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        std::process::exit(0);
    });
}

/// Opens (creating) the records file and binds `listen`; serves until the process ends.
pub async fn serve(listen: SocketAddr, db: &str, secret: &str, latency_ms: u64) -> Result<(), String> {
    let conn = rusqlite::Connection::open(db).map_err(|e| format!("cannot open {db}: {e}"))?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE IF NOT EXISTS records (
             action_id TEXT PRIMARY KEY, action TEXT NOT NULL, party TEXT NOT NULL,
             amount TEXT NOT NULL, answer TEXT NOT NULL, at TEXT NOT NULL)",
    )
    .map_err(|e| format!("cannot prepare {db}: {e}"))?;
    let state = Upstream {
        secret: secret.into(),
        records: Arc::new(Mutex::new(conn)),
        latency: Duration::from_millis(latency_ms),
    };
    let tracker =
        crate::reference::upstream_tracker::endpoint(state.records.clone(), secret.to_string(), false)?;
    let sprawling =
        crate::reference::upstream_tracker::endpoint(state.records.clone(), secret.to_string(), true)?;
    let app = axum::Router::new()
        .route("/cards/charge", post(cards))
        .route("/mail/send", post(mail))
        .route("/records", get(records))
        .with_state(state)
        .nest_service("/mcp", tracker)
        .nest_service("/mcp-sprawling", sprawling);
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Reference upstream listening on http://{addr} (records in {db})");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

fn refuse(status: StatusCode, code: &str) -> Response {
    (status, Json(json!({ "error": code }))).into_response()
}

fn bearer_ok(headers: &HeaderMap, secret: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    given.is_some_and(|g| gateway::secrets::digest_eq(g, secret))
}

fn signature_ok(headers: &HeaderMap, secret: &str, body: &[u8]) -> bool {
    let Some(sig) = headers.get("Naive-Signature").and_then(|v| v.to_str().ok()) else { return false };
    let Some(t) = sig.split(',').find_map(|p| p.strip_prefix("t=")).and_then(|t| t.parse::<i64>().ok())
    else {
        return false;
    };
    if chrono::Utc::now().timestamp().abs_diff(t) > MAX_SIGNATURE_AGE_SECS as u64 {
        return false;
    }
    gateway::secrets::digest_eq(&gateway::delivery::connectors::http::signature(secret, t, body), sig)
}

async fn cards(State(u): State<Upstream>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    if !bearer_ok(&headers, &u.secret) {
        return refuse(StatusCode::UNAUTHORIZED, "bad_credential");
    }
    carry_out(u, Service::Cards, body).await
}

async fn mail(State(u): State<Upstream>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    if !signature_ok(&headers, &u.secret, &body) {
        return refuse(StatusCode::UNAUTHORIZED, "bad_signature");
    }
    carry_out(u, Service::Mail, body).await
}

/// The first answer recorded for `action_id`.
fn stored_answer(conn: &rusqlite::Connection, action_id: &str) -> Option<String> {
    let mut stmt = conn.prepare_cached("SELECT answer FROM records WHERE action_id = ?1").ok()?;
    stmt.query_row([action_id], |r| r.get(0)).ok()
}

/// A JSON body already serialized.
fn json_text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Once accepted, a request is carried out to the end even if the caller stops waiting, as a
/// real processor's charge is: the work runs in its own task, which a dropped connection
/// does not cancel.
async fn carry_out(u: Upstream, service: Service, body: axum::body::Bytes) -> Response {
    tokio::spawn(async move { handle(&u, service, &body).await })
        .await
        .unwrap_or_else(|_| refuse(StatusCode::INTERNAL_SERVER_ERROR, "handler_failed"))
}

/// Everything the upstream did, oldest first.
async fn records(State(u): State<Upstream>, headers: HeaderMap) -> Response {
    if !bearer_ok(&headers, &u.secret) {
        return refuse(StatusCode::UNAUTHORIZED, "bad_credential");
    }
    let conn = u.records.lock().expect("records lock");
    let mut stmt = conn
        .prepare("SELECT action_id, action, party, amount, at FROM records ORDER BY at, action_id")
        .expect("the records query prepares");
    let items: Vec<Value> = stmt
        .query_map([], |r| {
            Ok(json!({ "action_id": r.get::<_, String>(0)?, "action": r.get::<_, String>(1)?,
                "party": r.get::<_, String>(2)?, "amount": r.get::<_, String>(3)?, "at": r.get::<_, String>(4)? }))
        })
        .and_then(|rows| rows.collect())
        .unwrap_or_default();
    Json(json!({ "items": items })).into_response()
}

/// The request's scenario: the merchant, or the local part of the recipient.
fn party(service: Service, args: &Value) -> String {
    match service {
        Service::Cards => args["merchant"].as_str().unwrap_or_default().to_string(),
        Service::Mail => {
            args["to"].as_str().unwrap_or_default().split('@').next().unwrap_or_default().to_string()
        }
    }
}

async fn handle(u: &Upstream, service: Service, body: &[u8]) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return refuse(StatusCode::BAD_REQUEST, "body_not_json");
    };
    if req["test"] == json!(true) {
        return Json(json!({ "ok": true, "service": service.name() })).into_response();
    }
    let (Some(action_id), Some(action)) = (req["action_id"].as_str(), req["action"].as_str()) else {
        return refuse(StatusCode::BAD_REQUEST, "action_and_action_id_required");
    };
    if let Some(answer) = u.replay(action_id) {
        return answer;
    }
    let party = party(service, &req["args"]);
    if let Some(ms) = party.strip_prefix("test-slow-").and_then(|ms| ms.parse::<u64>().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    } else if !u.latency.is_zero() {
        tokio::time::sleep(u.latency).await;
    }
    let reserved = req["reserved"].as_str().and_then(|s| s.parse::<Money>().ok()).unwrap_or(Money::ZERO);
    let amount = match service {
        Service::Cards => {
            req["args"]["amount"].as_str().and_then(|s| s.parse::<Money>().ok()).unwrap_or(Money::ZERO)
        }
        Service::Mail => Money::ZERO,
    };
    match party.as_str() {
        "test-503" => {
            return ([(header::RETRY_AFTER, "7")], refuse(StatusCode::SERVICE_UNAVAILABLE, "busy"))
                .into_response();
        }
        "test-malformed" => return (StatusCode::OK, "this is not JSON").into_response(),
        "test-negative" => return Json(json!({ "result": {}, "cost": "-1.00" })).into_response(),
        "test-overcharge" => {
            let over = reserved.checked_add(Money::dollars(1)).unwrap_or(reserved);
            return Json(json!({ "result": {}, "cost": over })).into_response();
        }
        _ => {}
    }
    let charged = if party == "test-partial" {
        Money::from_units(amount.units() / 2).unwrap_or(amount)
    } else {
        amount
    };
    u.record(service, action_id, action, &party, charged)
}

impl Upstream {
    /// The first answer to `action_id`, if there was one.
    fn replay(&self, action_id: &str) -> Option<Response> {
        stored_answer(&self.records.lock().expect("records lock"), action_id).map(json_text)
    }

    /// Does the thing (records it) once per `action_id`, and answers.
    fn record(&self, service: Service, action_id: &str, action: &str, party: &str, cost: Money) -> Response {
        let short = &hex::encode(sha2::Digest::finalize(sha2::Digest::chain_update(
            sha2::Sha256::default(),
            action_id,
        )))[..16];
        let result = match service {
            Service::Cards => {
                json!({ "charge_id": format!("ch_{short}"), "status": "succeeded", "amount": cost, "merchant": party })
            }
            Service::Mail => json!({ "message_id": format!("msg_{short}"), "status": "queued" }),
        };
        let answer = json!({ "result": result, "cost": cost }).to_string();
        let conn = self.records.lock().expect("records lock");
        let inserted = conn
            .prepare_cached(
                "INSERT INTO records (action_id, action, party, amount, answer, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (action_id) DO NOTHING",
            )
            .and_then(|mut insert| {
                insert.execute(rusqlite::params![
                    action_id,
                    action,
                    party,
                    cost.to_decimal_string(),
                    answer,
                    chrono::Utc::now().to_rfc3339()
                ])
            });
        match inserted {
            // Another request with this id got there first: its answer stands.
            Ok(0) => json_text(stored_answer(&conn, action_id).unwrap_or(answer)),
            Ok(_) => json_text(answer),
            Err(_) => refuse(StatusCode::INTERNAL_SERVER_ERROR, "records_unavailable"),
        }
    }
}
