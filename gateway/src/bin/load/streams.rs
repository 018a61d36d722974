//! `gateway-load streams --receiver URL [--entries 1000000] [--batch 500]`: how fast a log
//! stream catches up (issue #54: a million entries in under a minute). A fresh SQLite file
//! gets `entries` chained charge entries of one tenant (as `gateway-load archive` seeds
//! them); a stream from the beginning is added to the reference receiver at URL (`server
//! webhook-receiver`, its own release process), and the stream worker the server runs sends
//! the backlog through the egress guard (loopback allowed), signed, a batch at a time. Prints
//! the entries per second until the stream's lag is zero.

use std::time::{Duration, Instant};

use chrono::Utc;
use gateway::audit::activity::Transport;
use gateway::delivery::egress::Allowance;
use gateway::delivery::streams::{StreamSpec, StreamStart};
use gateway::domain::periods::Clock;
use gateway::{Gateway, GatewayConfig};

const KIT: &str =
    r#"{"name":"Streamed","primitives":["cards"],"limits":{"budget":{"hard_cap":"100000000"}}}"#;

pub async fn run(receiver: &str, entries: u64, batch: i64) {
    println!(
        "a log stream's catch-up: {entries} entries to the reference receiver, batches of {batch} (SQLite)"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = format!("{}/streams.db", dir.path().display());
    let config = GatewayConfig {
        clock: Clock::manual(Utc::now()),
        egress_allow: Allowance::loopback(),
        master_key: Some(gateway::domain::vault::MasterKey::generate()),
        ..Default::default()
    };
    let gw = Gateway::open_with(&format!("sqlite://{path}"), config).await.expect("open");
    let tokens = super::setup(&gw, 1, KIT).await;
    let tenant = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key").tenant;
    let seeded = super::archive_load::seed_day(&path, &tenant, Utc::now().date_naive(), entries);
    println!("  seeded {entries} entries in {seeded:.1}s");
    let spec = StreamSpec {
        url: format!("{}/bench", receiver.trim_end_matches('/')),
        kind: Default::default(),
        format: Default::default(),
        start: StreamStart::Beginning,
        max_entries: Some(batch),
    };
    let created = gw.create_stream(&tenant, spec, "bench", Transport::Http).await.expect("a stream");
    let worker = gw.start_streams();
    let started = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let s = gw.stream(&tenant, &created.stream.id).await.expect("the stream");
        if s.health.lag_entries == 0 {
            assert!(s.health.sent as u64 >= entries, "every entry was acknowledged: {:?}", s.health);
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            println!(
                "  {:>5.1}s: {} sent, {} behind",
                started.elapsed().as_secs_f64(),
                s.health.sent,
                s.health.lag_entries
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "  caught up {entries} entries in {took:.1}s: {:.0} entries/s (target: under 60 s for 1,000,000)",
        entries as f64 / took
    );
    worker.stop().await;
    gw.store().close().await;
}
