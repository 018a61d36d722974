//! Logs and traces for the process: log lines on stderr (`--log-format text|json`, filtered by
//! `RUST_LOG`), and OpenTelemetry spans exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, with the
//! standard variables the exporter reads (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`,
//! `OTEL_SERVICE_NAME`). Unset, no span is opened, so tracing costs nothing.
//!
//! The spans exported are the gateway's (a governed call, its commits and connector call, a
//! human's decision linked to the call it parked, an outbox delivery) and the server's
//! (each HTTP request, each MCP tool call), opened through OpenTelemetry's API
//! (`gateway::audit::trace`), whatever `RUST_LOG` says: log lines and spans are separate.

use gateway::audit::trace;
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::LogFormat;

/// What [`init`] set up; [`Telemetry::shutdown`] sends the spans still buffered.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Whether an OTLP endpoint is configured.
pub fn exporting() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

/// Installs the process's subscriber: the log layer, and the OTLP layer when configured.
pub fn init(format: LogFormat) -> Telemetry {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=warn"));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = match format {
        LogFormat::Text => logs.with_filter(filter).boxed(),
        LogFormat::Json => logs.json().flatten_event(true).with_filter(filter).boxed(),
    };
    let (provider, failed) = match exporting().then(provider).transpose() {
        Ok(p) => (p, None),
        Err(e) => (None, Some(e)),
    };
    if let Some(p) = &provider {
        opentelemetry::global::set_tracer_provider(p.clone());
        trace::install(opentelemetry::global::tracer("naive"));
    }
    tracing_subscriber::registry().with(logs).init();
    if let Some(e) = failed {
        tracing::error!(error = %e, "the OTLP exporter could not be built: no spans are exported");
    }
    Telemetry { provider }
}

fn provider() -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    gateway::delivery::egress::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder().with_http().build()?;
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "naive-gateway".into());
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(service).build();
    let sampler = operator_sampler(sampling_ratio());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .with_sampler(sampler)
        .build())
}

/// The share of calls traced, from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`
/// (`always_on`, `always_off`, `traceidratio`, each also `parentbased_…`); all unless set.
fn sampling_ratio() -> f64 {
    let kind = std::env::var("OTEL_TRACES_SAMPLER").unwrap_or_default();
    let arg = || std::env::var("OTEL_TRACES_SAMPLER_ARG").ok().and_then(|a| a.trim().parse::<f64>().ok());
    match kind.trim().trim_start_matches("parentbased_") {
        "" | "always_on" => 1.0,
        "always_off" => 0.0,
        "traceidratio" => arg().unwrap_or(1.0).clamp(0.0, 1.0),
        other => {
            eprintln!(
                "warning: OTEL_TRACES_SAMPLER={other} is not one this server knows; every call is traced"
            );
            1.0
        }
    }
}

/// The operator's sampler: a new trace is kept at `ratio` by its id, a trace a caller
/// continues (its `traceparent`) at `ratio` by a draw of our own, so neither the caller's
/// `sampled` flag nor a trace id it picked decides; a span inside a trace follows its parent.
fn operator_sampler(ratio: f64) -> opentelemetry_sdk::trace::ParentBasedSampler {
    use opentelemetry_sdk::trace::Sampler;
    Sampler::parent_based(Sampler::TraceIdRatioBased(ratio))
        .with_remote_parent_sampled(Chance(ratio))
        .with_remote_parent_not_sampled(Chance(ratio))
}

/// Keeps a span with probability `.0`, whatever its parent says.
#[derive(Clone, Debug)]
struct Chance(f64);

impl opentelemetry_sdk::trace::ShouldSample for Chance {
    fn should_sample(
        &self,
        parent: Option<&opentelemetry::Context>,
        _: opentelemetry::trace::TraceId,
        _: &str,
        _: &opentelemetry::trace::SpanKind,
        _: &[opentelemetry::KeyValue],
        _: &[opentelemetry::trace::Link],
    ) -> opentelemetry_sdk::trace::SamplingResult {
        use opentelemetry::trace::TraceContextExt;
        use opentelemetry_sdk::trace::SamplingDecision;
        let keep = self.0 >= 1.0 || rand::random::<f64>() < self.0;
        let decision = if keep { SamplingDecision::RecordAndSample } else { SamplingDecision::Drop };
        let trace_state = parent.map(|cx| cx.span().span_context().trace_state().clone()).unwrap_or_default();
        opentelemetry_sdk::trace::SamplingResult { decision, attributes: Vec::new(), trace_state }
    }
}

impl Telemetry {
    /// Sends what is buffered and stops the exporter (at most a few seconds).
    pub fn shutdown(self) {
        if let Some(p) = self.provider
            && let Err(e) = p.shutdown_with_timeout(std::time::Duration::from_secs(5))
        {
            eprintln!("warning: exporting the last spans failed: {e}");
        }
    }
}

/// Runs one HTTP request under its span, a child of the `traceparent` it carries (W3C trace
/// context), ended when the response's head is ready; the span rides in the request's
/// extensions ([`trace::Parent`]) to work the request starts on another task. Logs the
/// request: at debug level (`server::request`: method, route, status, milliseconds), and at
/// error level whatever the level when it failed with a 5xx. Its `route` is the route's
/// template (`/v1/vault/secrets/{name}`), never the path a caller sent, so no span or log
/// line carries a tenant's names or ids; a path no route matches is `{unmatched}`, a method
/// outside the standard ones `_OTHER`.
pub async fn traced_request(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let started = std::time::Instant::now();
    let matched = req.extensions().get::<axum::extract::MatchedPath>().cloned();
    let route = matched.as_ref().map_or("{unmatched}", |m| m.as_str());
    let method = method_label(req.method());
    let span = request_span(&mut req, method, route);
    let res = span.wrap(next.run(req)).await;
    let (status, ms) = (res.status().as_u16(), started.elapsed().as_secs_f64() * 1e3);
    if res.status().is_server_error() {
        tracing::error!(target: "server::request", method, route, status, ms, "request failed");
    } else {
        tracing::debug!(target: "server::request", method, route, status, ms, "request");
    }
    res
}

/// The span of one request, put in its extensions; nothing when tracing is off.
fn request_span(req: &mut axum::extract::Request, method: &'static str, route: &str) -> trace::Span {
    if !trace::on() {
        return trace::Span::none();
    }
    let parent = req.headers().get("traceparent").and_then(|v| v.to_str().ok());
    let span = trace::Span::continuing("request", SpanKind::Server, (parent, None), || {
        vec![KeyValue::new("method", method), KeyValue::new("route", route.to_string())]
    });
    if let Some(p) = span.as_parent() {
        req.extensions_mut().insert(p);
    }
    span
}

/// A request's method as a closed label: the standard ones, else `_OTHER`.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "_OTHER",
    }
}
