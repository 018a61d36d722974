//! W3C trace context for the spans the gateway opens: a governed call's span, the commits and
//! the connector call beneath it, a human's decision linked to the call it parked, and the
//! `traceparent` header every outbound call carries (connectors, webhooks, the control
//! wire). The server exports the spans (`server::telemetry`); with no exporter the spans
//! are not sampled, nothing here allocates, and no header is sent.
//!
//! Guarantees: only ids cross (trace id, span id, flags); nothing about a call's arguments
//! or its tenant is put on the wire or into a span by this module.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `traceparent` of the current span, when it is being traced.
pub fn current() -> Option<String> {
    of(&tracing::Span::current())
}

/// The `traceparent` of `span`, when it is being traced.
pub fn of(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| format(&sc))
}

/// `00-{trace id}-{span id}-{flags}`.
pub fn format(sc: &SpanContext) -> String {
    format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8())
}

/// A `traceparent` read back: version 00, a trace id and a span id not all zeros, flags.
pub fn parse(traceparent: &str) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 || flags.len() != 2
    {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()?);
    let sc = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    sc.is_valid().then_some(sc)
}

/// Makes `span` a child of the remote span `traceparent` names, when it names one.
pub fn continue_from(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(sc) = traceparent.and_then(parse) {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(sc));
    }
}

/// Links `span` to the span `traceparent` names (a parked call, from its decision).
pub fn link_to(span: &tracing::Span, traceparent: Option<&str>) {
    if let Some(sc) = traceparent.and_then(parse) {
        span.add_link(sc);
    }
}

/// `req` with the current span's `traceparent`, when it is being traced.
pub fn carried(req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match current() {
        Some(tp) => req.header("traceparent", tp),
        None => req,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_itself_and_bad_ones_do_not_read() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(parse(tp).map(|sc| format(&sc)).as_deref(), Some(tp));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-xyz92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
