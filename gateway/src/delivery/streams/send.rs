//! Sending one batch of a stream: its entries in the stream's format (the entry, or its OCSF
//! event), in its kind's body (newline-delimited JSON, Splunk HEC events, an OTLP/HTTP logs
//! export), signed the Standard Webhooks way or carrying the receiver's token, and what the
//! receiver's answer means for the cursor.

use crate::audit::activity::Entry;
use crate::delivery::egress::Egress;
use crate::delivery::webhooks::deliver::{Auth, Signed, signed_post};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use prost::Message;

use super::{StreamAuth, StreamFormat, StreamKind, StreamRow, ocsf, otlp};

/// What became of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The receiver answered 2xx: the cursor may move past the batch.
    Acked,
    /// The receiver answered 2xx but rejected some records (OTLP's `partial_success`), with
    /// its reason: the cursor moves too (OTLP says such records must not be sent again), and
    /// the reason is shown in the stream's health.
    Partly(String),
    /// The receiver answered 413: the batch was too large for it.
    TooLarge,
    /// Anything else, as a stable code (`stream_http_503`, `stream_timeout`, …).
    Failed(String),
}

/// Writes entry `e` in `format` as one line of JSON (no newline).
fn write_event(out: &mut Vec<u8>, format: StreamFormat, e: &Entry) {
    match format {
        StreamFormat::Entry => serde_json::to_writer(out, e),
        StreamFormat::Ocsf => serde_json::to_writer(out, &ocsf::event(e)),
    }
    .expect("an event serializes");
}

/// A newline-delimited JSON body: each entry's event on its own line, each line ending `\n`.
pub(crate) fn ndjson(format: StreamFormat, entries: &[Entry]) -> Vec<u8> {
    let mut body = Vec::with_capacity(entries.len() * 512);
    for e in entries {
        write_event(&mut body, format, e);
        body.push(b'\n');
    }
    body
}

/// A Splunk HTTP Event Collector body: one `{"time", "source", "sourcetype", "event"}` object
/// per entry, one per line (HEC's batched form).
pub(crate) fn hec(format: StreamFormat, entries: &[Entry]) -> Vec<u8> {
    let sourcetype = match format {
        StreamFormat::Entry => "naive:activity",
        StreamFormat::Ocsf => "naive:ocsf",
    };
    let mut body = Vec::with_capacity(entries.len() * 640);
    for e in entries {
        let time = e.at.timestamp_millis() as f64 / 1000.0;
        let head =
            format!(r#"{{"time":{time:.3},"source":"naive-gateway","sourcetype":"{sourcetype}","event":"#);
        body.extend_from_slice(head.as_bytes());
        write_event(&mut body, format, e);
        body.extend_from_slice(b"}\n");
    }
    body
}

/// The batch's body and its content type, as the stream's kind wants them.
pub(crate) fn body(s: &StreamRow, entries: &[Entry]) -> (Vec<u8>, &'static str) {
    match s.kind {
        StreamKind::Ndjson => (ndjson(s.format, entries), "application/x-ndjson"),
        StreamKind::SplunkHec => (hec(s.format, entries), "application/json"),
        StreamKind::Otlp => {
            let event = |e: &Entry| {
                let mut line = Vec::new();
                write_event(&mut line, s.format, e);
                String::from_utf8(line).expect("JSON is UTF-8")
            };
            (otlp::export(&s.tenant, entries, event), "application/x-protobuf")
        }
    }
}

/// POSTs `entries` (in order, not empty) to the stream's receiver, with `secret` (its signing
/// secret or its token, as the stream's auth says). The batch's message id is
/// `<stream>.<first seq>-<last seq>`, the same on every retry of the same batch, so a receiver
/// can drop a batch it already has.
pub(crate) async fn send(egress: &Egress, s: &StreamRow, secret: &str, entries: &[Entry]) -> Sent {
    let (first, last) = (entries[0].seq, entries[entries.len() - 1].seq);
    let id = format!("{}.{first}-{last}", s.id);
    let auth = match (s.auth, s.kind) {
        (StreamAuth::Signed, _) => Auth::Sign(secret),
        (StreamAuth::Token, StreamKind::SplunkHec) => Auth::Authorization(format!("Splunk {secret}")),
        (StreamAuth::Token, _) => Auth::Authorization(format!("Bearer {secret}")),
    };
    let (body, content_type) = body(s, entries);
    let m = Signed {
        url: &s.url,
        auth,
        id: &id,
        content_type,
        headers: vec![("naive-stream", s.id.clone()), ("naive-batch", format!("{first}-{last}"))],
        prefix: "stream",
    };
    match signed_post(egress, m, body).await {
        Ok(r) if r.status().is_success() && s.kind == StreamKind::Otlp => otlp_answer(r).await,
        Ok(r) if r.status().is_success() => Sent::Acked,
        Ok(r) if r.status() == reqwest::StatusCode::PAYLOAD_TOO_LARGE => Sent::TooLarge,
        Ok(r) => Sent::Failed(format!("stream_http_{}", r.status().as_u16())),
        Err(code) => Sent::Failed(code),
    }
}

/// What a collector's 2xx answer to an export says: every record taken, or some rejected
/// (`partial_success` with `rejected_log_records` above zero), with its message. An answer
/// that does not decode (a collector answering JSON, or nothing) is taken as all accepted.
async fn otlp_answer(r: reqwest::Response) -> Sent {
    let body = r.bytes().await.unwrap_or_default();
    let partial = ExportLogsServiceResponse::decode(body).ok().and_then(|a| a.partial_success);
    match partial {
        Some(p) if p.rejected_log_records > 0 => Sent::Partly(format!(
            "otlp_partial_success: the collector rejected {} log records ({})",
            p.rejected_log_records, p.error_message
        )),
        _ => Sent::Acked,
    }
}
