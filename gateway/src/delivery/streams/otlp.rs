//! A batch of log entries as an OTLP/HTTP logs export (the stream kind `otlp`): one
//! `ExportLogsServiceRequest` of the official OpenTelemetry protocol messages, protobuf-encoded.
//!
//! Guarantees: one resource (`service.name = naive-gateway`, `naive.tenant_id`) and one scope
//! (`naive.activity`) holding one log record per entry, in the log's order. Each record's
//! timestamp is the entry's, its body the event (the entry or its OCSF event) as a JSON
//! string, and its attributes carry `naive.seq`, `naive.kind`, `naive.verdict`,
//! `naive.action`, `naive.hash` and `naive.prev_hash`, so a collector can index, order and
//! verify without parsing the body.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use policy::activity::Verdict;
use prost::Message;

use crate::audit::activity::Entry;
use crate::ids::TenantId;

/// The protobuf body of an export of `entries` of `tenant`, each record's body `event(entry)`.
pub(crate) fn export(tenant: &TenantId, entries: &[Entry], event: impl Fn(&Entry) -> String) -> Vec<u8> {
    let now = nanos(chrono::Utc::now());
    let records = entries.iter().map(|e| record(e, event(e), now)).collect();
    let resource = Resource {
        attributes: vec![text("service.name", "naive-gateway"), text("naive.tenant_id", tenant.as_str())],
        ..Default::default()
    };
    let scope = InstrumentationScope {
        name: "naive.activity".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        ..Default::default()
    };
    let logs = ResourceLogs {
        resource: Some(resource),
        scope_logs: vec![ScopeLogs { scope: Some(scope), log_records: records, ..Default::default() }],
        ..Default::default()
    };
    ExportLogsServiceRequest { resource_logs: vec![logs] }.encode_to_vec()
}

fn record(e: &Entry, body: String, observed: u64) -> LogRecord {
    let (severity, severity_text) = severity(e.verdict);
    let mut attributes = vec![
        KeyValue { key: "naive.seq".to_string(), value: Some(int(e.seq)), ..Default::default() },
        text("naive.kind", e.kind.as_str()),
        text("naive.actor", e.actor.as_str()),
        text("naive.hash", &e.hash),
        text("naive.prev_hash", &e.prev_hash),
    ];
    if let Some(v) = e.verdict {
        attributes.push(text("naive.verdict", v.as_str()));
    }
    if let Some(a) = &e.action {
        attributes.push(text("naive.action", a));
    }
    LogRecord {
        time_unix_nano: nanos(e.at),
        observed_time_unix_nano: observed,
        severity_number: severity as i32,
        severity_text: severity_text.to_string(),
        event_name: format!("naive.{}", e.kind.as_str()),
        body: Some(AnyValue { value: Some(any_value::Value::StringValue(body)) }),
        attributes,
        ..Default::default()
    }
}

/// Refusals and failures are WARN, everything else INFO.
fn severity(v: Option<Verdict>) -> (SeverityNumber, &'static str) {
    use Verdict as V;
    match v {
        Some(
            V::Deny
            | V::Denied
            | V::Refused
            | V::Unavailable
            | V::Expired
            | V::Escalated
            | V::CommandRejected
            | V::DeadLetter
            | V::SignInFailed,
        ) => (SeverityNumber::Warn, "WARN"),
        _ => (SeverityNumber::Info, "INFO"),
    }
}

fn nanos(at: chrono::DateTime<chrono::Utc>) -> u64 {
    at.timestamp_nanos_opt().map_or(0, |n| n.max(0) as u64)
}

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_string())) }),
        ..Default::default()
    }
}

fn int(n: i64) -> AnyValue {
    AnyValue { value: Some(any_value::Value::IntValue(n)) }
}
