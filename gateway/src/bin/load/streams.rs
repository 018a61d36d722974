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
    let subject = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key");
    let (tenant, profile) = (subject.tenant, subject.profile);
    let seeded =
        super::archive_load::seed_day(&path, (&tenant, &[profile]), Utc::now().date_naive(), entries);
    println!("  seeded {entries} entries in {seeded:.1}s");
    let spec = StreamSpec {
        url: format!("{}/bench", receiver.trim_end_matches('/')),
        kind: Default::default(),
        format: Default::default(),
        start: StreamStart::Beginning,
        max_entries: Some(batch),
        token: None,
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
        // Not too often: each look counts the stream's backlog, as the console and /metrics do.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "  caught up {entries} entries in {took:.1}s: {:.0} entries/s (target: under 60 s for 1,000,000)",
        entries as f64 / took
    );
    worker.stop().await;
    gw.store().close().await;
}

/// Rounds of the streams' comparison.
const COMPARE_ROUNDS: usize = 5;

/// What a log stream costs live calls (#54): `web.read` and a $0.01 `cards.charge` on the
/// sandbox, SQLite with group commit, on a database without a stream and on one whose stream
/// sends every entry to the reference receiver at `receiver` while the calls append them (the
/// worker in this process, the receiver beside it on the same cores), in interleaved rounds;
/// the medians and their ratios, and how long the stream took to drain after the last round.
pub async fn compare(callers: usize, actions: u64, receiver: &str) {
    for work in [super::Work::Read, super::Work::Charge] {
        let mut sides = Vec::new();
        for streamed in [false, true] {
            sides.push(side(callers, &work, streamed.then_some(receiver)).await);
        }
        let per_round = actions.div_ceil(COMPARE_ROUNDS as u64);
        let (mut rates, mut cpus) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
        for round in 1..=COMPARE_ROUNDS {
            for (i, s) in sides.iter().enumerate() {
                let phase =
                    super::drive(std::slice::from_ref(&s.gw), s.tokens.clone(), work.clone(), per_round)
                        .await;
                let label = if i == 0 { "no stream" } else { "streaming" };
                phase.report(&format!("  {work:?}, round {round}, {label}"), "actions/s");
                rates[i].push(phase.rate());
                cpus[i].push(phase.cpu_us());
            }
        }
        let drained = sides[1].drain().await;
        let median = |mut r: Vec<f64>| {
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        };
        let ([off, on], [off_cpu, on_cpu]) = (rates.map(median), cpus.map(median));
        println!(
            "{work:?} with a log stream on / off: {on:.0} / {off:.0} actions/s = {:.3}x (target: at least 0.95x); this process's CPU per call {on_cpu:.0} / {off_cpu:.0} µs (+{:.0} µs: the stream reading, rendering and sending each entry)   (medians of {COMPARE_ROUNDS} rounds; the stream drained {drained:.1}s after the last round)",
            on / off,
            on_cpu - off_cpu
        );
        for s in sides {
            s.gw.store().close().await;
        }
    }
}

/// One side of [`compare`]: a fresh database, its callers' keys, and with `receiver` a
/// stream to it from now on with the stream worker running.
struct Side {
    gw: Gateway,
    tokens: Vec<String>,
    stream: Option<(gateway::TenantId, String, gateway::delivery::outbox::delivery::DeliveryHandle)>,
    _dir: tempfile::TempDir,
}

async fn side(callers: usize, work: &super::Work, receiver: Option<&str>) -> Side {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = GatewayConfig {
        egress_allow: Allowance::loopback(),
        master_key: Some(gateway::domain::vault::MasterKey::generate()),
        ..Default::default()
    };
    let gw = Gateway::open_with(&format!("sqlite://{}/bench.db", dir.path().display()), config)
        .await
        .expect("open");
    let tokens = super::setup(&gw, callers, work.kit()).await;
    let mut stream = None;
    if let Some(url) = receiver {
        let tenant = gw.authenticate(&tokens[0]).await.expect("auth").expect("a key").tenant;
        let spec = StreamSpec {
            url: format!("{}/compare", url.trim_end_matches('/')),
            kind: Default::default(),
            format: Default::default(),
            start: StreamStart::Now,
            max_entries: None,
            token: None,
        };
        let id = gw.create_stream(&tenant, spec, "bench", Transport::Http).await.expect("a stream").stream.id;
        stream = Some((tenant, id, gw.start_streams()));
    }
    Side { gw, tokens, stream, _dir: dir }
}

impl Side {
    /// Waits until the stream has sent everything; the seconds it took.
    async fn drain(&self) -> f64 {
        let Some((tenant, id, _)) = &self.stream else { return 0.0 };
        let started = Instant::now();
        while self.gw.stream(tenant, id).await.expect("the stream").health.lag_entries > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        started.elapsed().as_secs_f64()
    }
}
