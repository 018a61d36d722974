//! `gateway-load bench … --otlp URL`: what metrics and traces cost a governed call (#36), in
//! process. `web.read` on SQLite with group commit on three fresh databases (metrics off;
//! metrics on, the default; metrics on with the gateway's spans exported over OTLP/HTTP to
//! the receiver at URL, the reference `server otlp-receiver`), in interleaved rounds, with
//! the medians and their ratios to metrics off. Traces are switched on for the traced side's
//! rounds only (`gateway::audit::trace::switch`): the other sides open no span, as a server
//! without `OTEL_EXPORTER_OTLP_ENDPOINT` does.

use gateway::audit::trace;
use gateway::{Gateway, GatewayConfig};
use opentelemetry_otlp::WithExportConfig as _;

use super::{Work, drive, setup};

/// Rounds per side; the figures are their medians.
const ROUNDS: usize = 5;

/// Installs the gateway's tracer with an OTLP exporter to `otlp`, switched off.
fn install(otlp: &str) -> opentelemetry_sdk::trace::SdkTracerProvider {
    gateway::delivery::egress::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{otlp}/v1/traces"))
        .build()
        .expect("an OTLP exporter");
    let provider =
        opentelemetry_sdk::trace::SdkTracerProvider::builder().with_batch_exporter(exporter).build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    trace::install(opentelemetry::global::tracer("gateway-load"));
    trace::switch(false);
    provider
}

pub async fn compare(callers: usize, actions: u64, otlp: &str) {
    let provider = install(otlp);
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
            trace::switch(i == 2);
            let phase = drive(std::slice::from_ref(gw), tokens.clone(), work.clone(), per_round).await;
            phase.report(&format!("  round {round}, {}", labels[i]), "actions/s");
            rates[i].push(phase.rate());
        }
    }
    trace::switch(false);
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
