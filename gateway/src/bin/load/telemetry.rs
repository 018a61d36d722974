//! `gateway-load bench … --otlp URL`: what metrics and traces cost a governed call (#36), in
//! process. `web.read` on SQLite with group commit on three fresh databases (metrics off;
//! metrics on, the default; metrics on with the gateway's spans exported over OTLP/HTTP to
//! the receiver at URL, the reference `server otlp-receiver`), in interleaved rounds, with
//! the medians and their ratios to metrics off. Traces are switched on for the traced side's
//! rounds only, through a reloadable filter on the process's one subscriber: the other sides
//! run with every span disabled, as a server without `OTEL_EXPORTER_OTLP_ENDPOINT` does.

use gateway::{Gateway, GatewayConfig};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, reload};

use super::{Work, drive, setup};

/// Rounds per side; the figures are their medians.
const ROUNDS: usize = 5;

/// The filter in front of the OTLP layer: nothing, or the gateway's spans.
fn filter(on: bool) -> Targets {
    let level = if on { LevelFilter::DEBUG } else { LevelFilter::OFF };
    Targets::new().with_target("gateway", level)
}

/// Installs the OTLP layer behind a filter that starts closed; answers the switch.
fn install(
    otlp: &str,
) -> (opentelemetry_sdk::trace::SdkTracerProvider, reload::Handle<Targets, tracing_subscriber::Registry>) {
    gateway::delivery::egress::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{otlp}/v1/traces"))
        .build()
        .expect("an OTLP exporter");
    let provider =
        opentelemetry_sdk::trace::SdkTracerProvider::builder().with_batch_exporter(exporter).build();
    let (switch, handle) = reload::Layer::new(filter(false));
    // As the server exports (server/src/telemetry.rs): spans only, nothing added per span.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("gateway-load"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_target(false)
        .with_filter(switch)
        .with_filter(tracing_subscriber::filter::filter_fn(|m| m.is_span()));
    tracing_subscriber::registry().with(layer).init();
    (provider, handle)
}

pub async fn compare(callers: usize, actions: u64, otlp: &str) {
    let (provider, switch) = install(otlp);
    let work = Work::Read;
    let mut sides = Vec::new();
    for metrics in [false, true, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = GatewayConfig { metrics, ..Default::default() };
        let url = format!("sqlite://{}/bench.db", dir.path().display());
        let gw = Gateway::open_with(&url, config).await.expect("open");
        let tokens = setup(&gw, callers, work.kit()).await;
        sides.push((gw, tokens, dir));
    }
    let labels = ["metrics off", "metrics on", "metrics on, traced"];
    let per_round = actions.div_ceil(ROUNDS as u64);
    let mut rates = [Vec::new(), Vec::new(), Vec::new()];
    for round in 1..=ROUNDS {
        for (i, (gw, tokens, _)) in sides.iter().enumerate() {
            switch.reload(filter(i == 2)).expect("the filter reloads");
            let phase = drive(std::slice::from_ref(gw), tokens.clone(), work.clone(), per_round).await;
            phase.report(&format!("  round {round}, {}", labels[i]), "actions/s");
            rates[i].push(phase.rate());
        }
    }
    switch.reload(filter(false)).expect("the filter reloads");
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [off, on, traced] = rates.map(|mut r| median(&mut r));
    println!(
        "web.read in process, metrics on / off: {on:.0} / {off:.0} actions/s = {:.3}x (target: within 3 %); traced / off: {traced:.0} / {off:.0} = {:.3}x (target: within 10 %)   (medians of {ROUNDS} rounds)",
        on / off,
        traced / off
    );
    if let Err(e) = provider.shutdown() {
        println!("  exporting the last spans failed: {e}");
    }
    for (gw, ..) in &sides {
        gw.store().close().await;
    }
}
