//! The gateway's spans and W3C trace context: a governed call's span, the commits and the
//! connector call beneath it, a human's decision linked to the call it parked, an outbox
//! delivery, the server's request and MCP tool-call spans, and the `traceparent` header every
//! outbound call carries (connectors, webhooks, the control wire).
//!
//! The spans are OpenTelemetry's own, opened through its API when a piece of work starts and
//! ended when it ends: a span costs its start, its attributes and its end, not a registry entry
//! and an enter and exit on every poll of the future it covers (what `tracing` spans cost
//! through `tracing-opentelemetry`). The work runs with its span's context current
//! ([`Span::wrap`]), so the spans it opens are its children and its outbound calls carry it.
//!
//! The server installs the tracer when it exports (`server::telemetry`); until then no span is
//! opened, nothing here allocates, and no header is sent. A span the sampler drops is still
//! opened, unrecorded (ids only), so its context travels on (flagged not sampled); nothing
//! beneath it is opened, since the sampler would drop that too.
//!
//! Guarantees: only ids cross (trace id, span id, flags); nothing about a call's arguments
//! or its tenant is put on the wire or into a span by this module.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::Either;
use opentelemetry::context::{FutureExt as _, WithContext};
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer as _,
};
use opentelemetry::{Context, KeyValue};

static TRACER: OnceLock<BoxedTracer> = OnceLock::new();
static ON: AtomicBool = AtomicBool::new(false);

/// Installs the tracer every span is opened with (the first one installed stays) and turns
/// tracing on.
pub fn install(tracer: BoxedTracer) {
    let _ = TRACER.set(tracer);
    switch(true);
}

/// Turns tracing on or off once a tracer is installed (the in-process benchmark's sides).
pub fn switch(on: bool) {
    ON.store(on && TRACER.get().is_some(), Ordering::Relaxed);
}

/// Whether spans are being opened.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn tracer() -> Option<&'static BoxedTracer> {
    if on() { TRACER.get() } else { None }
}

/// One span, ended when dropped. With tracing off it is nothing.
#[must_use = "a span ends when it is dropped"]
pub struct Span {
    cx: Option<Context>,
}

impl Span {
    /// No span (tracing is off, or nothing is to be traced).
    pub const fn none() -> Span {
        Span { cx: None }
    }

    /// A span under the current one, or the first of a new trace.
    pub fn start(name: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) -> Span {
        Self::open(name, SpanKind::Internal, None, attributes)
    }

    /// A span under the remote span `traceparent` names when it names one, else under
    /// `local` when given, else as [`Span::start`].
    pub fn continuing(
        name: &'static str,
        kind: SpanKind,
        (traceparent, local): (Option<&str>, Option<&Parent>),
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        let remote = || Some(Context::new().with_remote_span_context(traceparent.and_then(parse)?));
        let parent = remote().or_else(|| local.map(|p| p.0.clone()));
        Self::open(name, kind, parent, attributes)
    }

    fn open(
        name: &'static str,
        kind: SpanKind,
        parent: Option<Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        let Some(tracer) = tracer() else { return Span::none() };
        let parent = parent.unwrap_or_else(Context::current);
        // Beneath a span of ours the sampler dropped, the sampler drops every span (it
        // follows a local parent): none is built, and the work runs on in the dropped span's
        // context.
        let sc = parent.span().span_context().clone();
        if sc.is_valid() && !sc.is_remote() && !parent.span().is_recording() {
            return Span::none();
        }
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(tracer, &parent);
        Span { cx: Some(parent.with_span(span)) }
    }

    /// This span as the parent of work that does not run within it (it travels in a
    /// request's extensions to the task that serves it), when it was opened.
    pub fn as_parent(&self) -> Option<Parent> {
        self.cx.clone().map(Parent)
    }

    /// Whether this span is recorded (opened and kept by the sampler).
    pub fn is_recording(&self) -> bool {
        self.cx.as_ref().is_some_and(|cx| cx.span().is_recording())
    }

    /// Sets an attribute, when the span is recorded.
    pub fn record(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        if let Some(cx) = self.cx.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().set_attribute(KeyValue::new(key, value));
        }
    }

    /// Links this span to the span `traceparent` names (a parked call, from its decision).
    pub fn link_to(&self, traceparent: Option<&str>) {
        if let (Some(cx), Some(sc)) = (&self.cx, traceparent.and_then(parse)) {
            cx.span().add_link(sc, Vec::new());
        }
    }

    /// `work` with this span's context current whenever it runs, so what it opens is this
    /// span's child; `work` as it is when tracing is off.
    pub fn wrap<F: Future>(&self, work: F) -> Either<WithContext<F>, F> {
        match &self.cx {
            Some(cx) => Either::Left(work.with_context(cx.clone())),
            None => Either::Right(work),
        }
    }
}

/// A span's context, carried to work that runs on another task (an MCP tool call the SDK
/// serves on a task of its own, from the HTTP request that brought it).
#[derive(Clone)]
pub struct Parent(Context);

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

/// `work` under a new span named `name`, a child of the current one, opened now and ended
/// when the work ends.
pub fn within<F: Future>(
    name: &'static str,
    attributes: impl FnOnce() -> Vec<KeyValue>,
    work: F,
) -> Within<F> {
    let span = Span::start(name, attributes);
    let work = span.wrap(work);
    Within { span, work }
}

pin_project_lite::pin_project! {
    /// [`within`]'s future. Not an `async fn`: one would hold `work` twice, as its argument
    /// and as what it awaits, and a governed call's commit is a kilobyte that every call's
    /// future carries and copies.
    pub struct Within<F: Future> {
        span: Span,
        #[pin]
        work: Either<WithContext<F>, F>,
    }
}

impl<F: Future> Future for Within<F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        self.project().work.poll(cx)
    }
}

/// Sets an attribute on the current span, when it is recorded.
pub fn record_current(key: &'static str, value: impl Into<opentelemetry::Value>) {
    if on() {
        Context::map_current(|cx| {
            if cx.span().is_recording() {
                cx.span().set_attribute(KeyValue::new(key, value));
            }
        });
    }
}

/// The `traceparent` of the current span, when tracing is on and a span is current.
pub fn current() -> Option<String> {
    if !on() {
        return None;
    }
    Context::map_current(|cx| {
        let sc = cx.span().span_context().clone();
        sc.is_valid().then(|| format(&sc))
    })
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
