//! Readiness (issue #36): `/readyz` is 200 with every check `ok` on a running server, turns 503
//! `draining` as soon as the server starts stopping (while it still serves, `/healthz` too),
//! and is 503 while the database is unreachable, ready again when it returns, never hanging.

mod common;

use std::time::{Duration, Instant};

use common::spawn_with;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

async fn readyz(app: &common::TestApp) -> (u16, Value) {
    let (s, body) = app.get("/readyz").await;
    (s, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Polls `/readyz` until `want` holds of its answer, for at most `within`.
async fn until(app: &common::TestApp, within: Duration, want: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let started = Instant::now();
    loop {
        let (s, b) = readyz(app).await;
        if want(s, &b) || started.elapsed() > within {
            return (s, b);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn ready_while_running_and_not_ready_first_when_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut app = spawn_with(server::config::Config { drain_secs: 3, ..common::config(&url) }).await;
    let (s, b) = readyz(&app).await;
    assert_eq!((s, b["status"].as_str()), (200, Some("ready")), "{b}");
    for check in ["database", "migrations", "writer", "sweeper", "delivery"] {
        assert_eq!(b["checks"][check], "ok", "{check}: {b}");
    }
    app.begin_stop();
    let (s, b) = until(&app, Duration::from_secs(2), |s, _| s == 503).await;
    assert_eq!((s, b["status"].as_str()), (503, Some("draining")), "{b}");
    // Still serving while it drains: only readiness changed.
    assert_eq!(app.get("/healthz").await.0, 200);
    assert_eq!(b["checks"]["database"], "ok");
}

/// A TCP relay to PostgreSQL that can cut every connection and refuse new ones, then come
/// back on the same port: the database unreachable and returning, for this server only.
struct Relay {
    port: u16,
    upstream: String,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Relay {
    async fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut r = Relay { port, upstream: upstream.to_string(), task: None };
        r.serve(listener);
        r
    }

    fn serve(&mut self, listener: TcpListener) {
        let upstream = self.upstream.clone();
        self.task = Some(tokio::spawn(async move {
            let mut links = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                links.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        }));
    }

    /// Drops the listener and every relayed connection (the JoinSet aborts them).
    fn cut(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    async fn restore(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }
}

#[tokio::test]
async fn not_ready_while_the_database_is_unreachable_and_ready_again_when_it_returns() {
    let cluster = gateway::testing::Cluster::get();
    let url = cluster.fresh_database().await;
    let (head, db) = url.rsplit_once('/').unwrap();
    let (user, upstream) = head.rsplit_once('@').unwrap();
    let mut relay = Relay::start(upstream).await;
    let through = format!("{user}@127.0.0.1:{}/{db}", relay.port);
    let app = spawn_with(common::config(&through)).await;
    let (s, b) = readyz(&app).await;
    assert_eq!((s, b["status"].as_str()), (200, Some("ready")), "{b}");

    relay.cut();
    let started = Instant::now();
    let (s, b) = until(&app, Duration::from_secs(15), |s, _| s == 503).await;
    assert_eq!((s, b["status"].as_str()), (503, Some("not_ready")), "{b}");
    assert_ne!(b["checks"]["database"], "ok", "{b}");
    assert!(started.elapsed() < Duration::from_secs(15), "the probe answers, it does not hang");

    relay.restore().await;
    let (s, b) = until(&app, Duration::from_secs(30), |s, _| s == 200).await;
    assert_eq!((s, b["status"].as_str()), (200, Some("ready")), "ready again once the database returns: {b}");
    relay.cut();
    drop(app);
}
