//! A reference OpenTelemetry collector for traces and logs (`server otlp-receiver`): it takes
//! OTLP/HTTP exports (`POST /v1/traces` and `POST [/prefix]/v1/logs`, protobuf, as the server's
//! exporter and its log streams send them), decodes them with the official protocol types and
//! keeps what a test or a benchmark asks about: how many spans arrived, by name
//! (`GET /spans`), and every log record in arrival order with its resource's and its own
//! attributes (`GET /logs`). A body that does not decode is answered 400. With
//! `--max-record-bytes N` it rejects each log record whose body is longer, as a collector with
//! a size limit does: the export is answered 200 with OTLP's `partial_success` counting them,
//! and they are not kept. It stores nothing else and forwards nothing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::{Map, Value, json};

/// Spans received, by name.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;
/// Log records received, in order, as JSON, and the largest body a record may have.
#[derive(Clone, Default)]
struct Logs {
    kept: Arc<Mutex<Vec<Value>>>,
    max_record_bytes: Option<usize>,
}

/// Serves on `listen` until the process ends.
pub async fn serve(listen: SocketAddr, max_record_bytes: Option<usize>) -> Result<(), String> {
    let (counts, logs) = (Counts::default(), Logs { max_record_bytes, ..Logs::default() });
    let app = axum::Router::new()
        .route("/v1/traces", post(export))
        .route("/spans", get(spans))
        .with_state(counts)
        .merge(
            axum::Router::new()
                .route("/v1/logs", post(export_logs))
                // As behind a proxy that serves the collector under a path prefix.
                .route("/{prefix}/v1/logs", post(export_logs))
                .route("/logs", get(read_logs))
                .with_state(logs),
        );
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Reference OTLP receiver listening on http://{addr}");
    axum::serve(listener, app).await.map_err(|e| e.to_string())
}

async fn export(
    State(counts): State<Counts>,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
    let ty = [("content-type", "application/x-protobuf")];
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, ty, Vec::new());
    };
    let mut counts = counts.lock().expect("counts lock");
    for span in req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans) {
        *counts.entry(span.name).or_default() += 1;
    }
    (StatusCode::OK, ty, Vec::new())
}

async fn spans(State(counts): State<Counts>) -> axum::Json<BTreeMap<String, u64>> {
    axum::Json(counts.lock().expect("counts lock").clone())
}

async fn export_logs(
    State(logs): State<Logs>,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], Vec<u8>) {
    let ty = [("content-type", "application/x-protobuf")];
    let Ok(req) = ExportLogsServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, ty, Vec::new());
    };
    let too_long =
        |b: &Value| logs.max_record_bytes.is_some_and(|max| b.as_str().is_some_and(|s| s.len() > max));
    let (mut kept, mut rejected) = (logs.kept.lock().expect("logs lock"), 0);
    for r in req.resource_logs {
        let resource = attributes(&r.resource.map(|r| r.attributes).unwrap_or_default());
        for s in r.scope_logs {
            let scope = s.scope.map(|s| s.name).unwrap_or_default();
            for l in s.log_records {
                let body = l.body.as_ref().map_or(Value::Null, value);
                if too_long(&body) {
                    rejected += 1;
                    continue;
                }
                kept.push(json!({
                    "resource": resource, "scope": scope,
                    "time_unix_nano": l.time_unix_nano, "observed_time_unix_nano": l.observed_time_unix_nano,
                    "severity_number": l.severity_number, "severity_text": l.severity_text,
                    "event_name": l.event_name, "body": body, "attributes": attributes(&l.attributes),
                }));
            }
        }
    }
    (StatusCode::OK, ty, answer(rejected, logs.max_record_bytes))
}

/// The export's answer: empty when every record was taken, else `partial_success` with how
/// many were rejected and why.
fn answer(rejected: i64, max: Option<usize>) -> Vec<u8> {
    if rejected == 0 {
        return ExportLogsServiceResponse::default().encode_to_vec();
    }
    let partial_success = Some(ExportLogsPartialSuccess {
        rejected_log_records: rejected,
        error_message: format!("{rejected} log records are longer than {} bytes", max.unwrap_or(0)),
    });
    ExportLogsServiceResponse { partial_success }.encode_to_vec()
}

fn attributes(kvs: &[KeyValue]) -> Value {
    let map: Map<String, Value> =
        kvs.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, value))).collect();
    Value::Object(map)
}

/// An OTLP value as JSON (strings, numbers and booleans; anything else as its debug form).
fn value(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::IntValue(n)) => json!(n),
        Some(any_value::Value::DoubleValue(n)) => json!(n),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(other) => json!(format!("{other:?}")),
        None => Value::Null,
    }
}

async fn read_logs(State(logs): State<Logs>) -> axum::Json<Vec<Value>> {
    axum::Json(logs.kept.lock().expect("logs lock").clone())
}
