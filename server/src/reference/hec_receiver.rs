//! A reference Splunk HTTP Event Collector (`server hec-receiver`), the endpoint a Splunk
//! deployment exposes on port 8088. It takes `POST /services/collector/event` (and
//! `/services/collector`) with `Authorization: Splunk <token>` and a body of one or more HEC
//! event objects, concatenated or one per line, and answers as HEC does:
//!
//! - `200 {"text":"Success","code":0}` when every event is well formed;
//! - `401` code 2 (`Token is required`) or 3 (`Invalid authorization`), `403` code 4
//!   (`Invalid token`);
//! - `400` code 5 (`No data`), 6 (`Invalid data format`), 12 (`Event field is required`) or
//!   13 (`Event field cannot be blank`), with `invalid-event-number`; a refused request
//!   indexes none of its events.
//!
//! It keeps every accepted event, in order, for `GET /received` (and how many requests it
//! refused), and answers `GET /services/collector/health`. It stores nothing else.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::{Value, json};

#[derive(Default)]
struct Seen {
    events: Vec<Value>,
    requests: u64,
    refused: u64,
}

#[derive(Clone)]
struct Hec {
    token: Arc<str>,
    seen: Arc<Mutex<Seen>>,
}

/// Serves on `listen` until the process ends, accepting requests that carry `token`.
pub async fn serve(listen: SocketAddr, token: String) -> Result<(), String> {
    let state = Hec { token: token.into(), seen: Arc::default() };
    let app = axum::Router::new()
        .route("/services/collector/event", post(collect))
        .route("/services/collector", post(collect))
        .route(
            "/services/collector/health",
            get(|| async { Json(json!({"text": "HEC is healthy", "code": 17})) }),
        )
        .route("/received", get(received))
        .with_state(state);
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Reference Splunk HEC listening on http://{addr}");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

type Answer = (StatusCode, Json<Value>);

fn answer(status: StatusCode, text: &str, code: u32) -> Answer {
    (status, Json(json!({ "text": text, "code": code })))
}

async fn collect(State(hec): State<Hec>, headers: HeaderMap, body: Bytes) -> Answer {
    let outcome = authorized(&hec.token, &headers).and_then(|()| events(&body));
    let mut seen = hec.seen.lock().expect("seen lock");
    seen.requests += 1;
    match outcome {
        Ok(events) => {
            seen.events.extend(events);
            answer(StatusCode::OK, "Success", 0)
        }
        Err(refusal) => {
            seen.refused += 1;
            refusal
        }
    }
}

/// `Authorization: Splunk <token>`, as HEC checks it.
fn authorized(token: &str, headers: &HeaderMap) -> Result<(), Answer> {
    let Some(value) = headers.get("authorization") else {
        return Err(answer(StatusCode::UNAUTHORIZED, "Token is required", 2));
    };
    let given = value.to_str().ok().and_then(|v| v.strip_prefix("Splunk "));
    match given {
        None => Err(answer(StatusCode::UNAUTHORIZED, "Invalid authorization", 3)),
        Some(t) if t != token => Err(answer(StatusCode::FORBIDDEN, "Invalid token", 4)),
        Some(_) => Ok(()),
    }
}

/// The body's events, each an object with a non-blank `event` and, if it has one, a numeric
/// `time`; a refusal naming the first bad one (counted from 0) otherwise.
fn events(body: &[u8]) -> Result<Vec<Value>, Answer> {
    let bad = |text: &str, code: u32, n: usize| {
        (StatusCode::BAD_REQUEST, Json(json!({ "text": text, "code": code, "invalid-event-number": n })))
    };
    let mut out = Vec::new();
    for (n, item) in serde_json::Deserializer::from_slice(body).into_iter::<Value>().enumerate() {
        let Ok(Value::Object(event)) = item else { return Err(bad("Invalid data format", 6, n)) };
        match event.get("event") {
            None => return Err(bad("Event field is required", 12, n)),
            Some(Value::Null) => return Err(bad("Event field cannot be blank", 13, n)),
            Some(Value::String(s)) if s.is_empty() => return Err(bad("Event field cannot be blank", 13, n)),
            Some(_) => {}
        }
        let time_ok = match event.get("time") {
            None | Some(Value::Number(_)) => true,
            Some(Value::String(s)) => s.parse::<f64>().is_ok(),
            Some(_) => false,
        };
        if !time_ok {
            return Err(bad("Invalid data format", 6, n));
        }
        out.push(Value::Object(event));
    }
    if out.is_empty() {
        return Err(answer(StatusCode::BAD_REQUEST, "No data", 5));
    }
    Ok(out)
}

async fn received(State(hec): State<Hec>) -> Json<Value> {
    let seen = hec.seen.lock().expect("seen lock");
    Json(json!({ "events": seen.events, "requests": seen.requests, "refused": seen.refused }))
}
