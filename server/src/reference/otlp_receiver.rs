//! A reference OpenTelemetry collector for traces (`server otlp-receiver`): it takes OTLP/HTTP
//! exports (`POST /v1/traces`, protobuf, as the server's exporter sends them), decodes them
//! and keeps what a test or a benchmark asks about: how many spans arrived, by name
//! (`GET /spans`). It stores nothing else and forwards nothing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// Spans received, by name.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

/// Serves on `listen` until the process ends.
pub async fn serve(listen: SocketAddr) -> Result<(), String> {
    let counts = Counts::default();
    let app =
        axum::Router::new().route("/v1/traces", post(export)).route("/spans", get(spans)).with_state(counts);
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
