//! No tenant can slow another (#30 findings 2 and 3), black-box: the real server, the
//! reference team runtime and webhook receivers as their own processes.
//! - A tenant whose runtime is down with a 40,000-command backlog (its queue's bound, here)
//!   is refused `outbox_full` past it; another tenant's governed calls keep their latency,
//!   and its commands are delivered as before.
//! - A receiver that takes 9 s to answer holds up only its own endpoint.
//! - Two instances under a slow receiver deliver each message once, in order: a delivery
//!   renews its lease while it waits.

mod common;

use std::time::{Duration, Instant};

use common::process::{
    RUNTIME_SECRET, call, start_fresh, start_on, start_receiver, start_runtime, wait_until_listening,
};
use common::{COMPANY_KEY, TestApp, spawn_with};
use gateway::domain::calls::{ActionCall, Disposition};
use serde_json::{Value, json};

async fn send(app: &TestApp, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let (s, _, b) = app.send(method, path, Some(key), body, &[]).await;
    (s, b)
}

/// A tenant with its own company key, an agent on a kit with `tasks` and `web`, and that
/// agent's key: (tenant, company key, profile, agent key).
async fn tenant(app: &TestApp, name: &str) -> (gateway::TenantId, String, String, String) {
    let (t, company) = app.gateway.create_tenant(name, policy::Money::dollars(1_000), None).await.unwrap();
    let kit = json!({"name": "Team", "primitives": ["tasks", "web"]});
    assert_eq!(send(app, "PUT", "/v1/kits/Team", &company.token, Some(kit)).await.0, 201);
    let body = json!({"name": format!("{name}-bot"), "kit": "Team"});
    let (s, p) = send(app, "POST", "/v1/agent-profiles", &company.token, Some(body)).await;
    assert_eq!(s, 201, "{p}");
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(app, "POST", &format!("/v1/agent-profiles/{id}/keys"), &company.token, None).await;
    (t.id, company.token, id, k["secret"].as_str().unwrap().to_string())
}

/// The median of `n` governed `web.read`s by `profile`, over HTTP, one after another.
async fn read_p50(app: &TestApp, profile: &str, key: &str, n: usize) -> Duration {
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let (s, b) = app
            .web_read(&gateway::ProfileId::parse(profile).unwrap(), key, &format!("https://x.test/{i}"))
            .await;
        took.push(started.elapsed());
        assert_eq!(s, 200, "{b}");
    }
    took.sort();
    took[n / 2]
}

/// The backlog a runtime that was down over a weekend leaves, and the bound it reaches here.
const BACKLOG: usize = 40_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_with_a_stuck_backlog_slows_no_one_else() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut config = common::config(&db);
    // The stuck queue may hold the whole backlog; its rows keep failing without dying.
    config.outbox_max_queued = BACKLOG as i64;
    config.outbox_max_attempts = 1_000;
    let app = spawn_with(config).await;
    let mut down = start_runtime(4, 0);
    let up = start_runtime(4, 0);
    let (stuck_id, stuck_company, _, stuck_key) = tenant(&app, "Stuck").await;
    let (_, busy_company, busy, busy_key) = tenant(&app, "Busy").await;
    for (company, rt) in [(&stuck_company, &down), (&busy_company, &up)] {
        let body = json!({"url": rt.base, "secret": RUNTIME_SECRET});
        let (s, b) = send(&app, "PUT", "/v1/runtime", company, Some(body)).await;
        assert_eq!(s, 200, "{b}");
    }
    // Busy's calls before anything is stuck.
    let before = read_p50(&app, &busy, &busy_key, 200).await;
    down.stop();

    // The weekend's backlog, all but the last few commands, which arrive over the API: the
    // queue fills to its bound, and every comment past it is refused and writes nothing.
    let soon = chrono::Utc::now() + chrono::Duration::seconds(1);
    app.gateway.seed_stuck_queue(&stuck_id, "runtime", "", BACKLOG - 10, soon).await.unwrap();
    let (queued, full) = flood(&app, &stuck_key, 30).await;
    assert_eq!((queued, full), (10, 20), "the bound holds");
    let refused = comment(&app, &stuck_key, "one more").await;
    assert_eq!(refused.disposition, Disposition::Full);
    assert_eq!(refused.json()["error"]["details"]["reason"], "outbox_full", "{}", refused.body);
    assert!(refused.json()["message"].as_str().unwrap().contains(&BACKLOG.to_string()), "{}", refused.body);
    let body = refused.json();
    let wait = body["recovery"].as_array().unwrap().iter().find(|s| s["kind"] == "wait_for_delivery");
    assert!(
        wait.is_some_and(|w| w["command_id"].as_str().is_some_and(|c| c.starts_with("cmd_"))),
        "{}",
        refused.body
    );
    let (s, queues) = send(&app, "GET", "/v1/outbox", &stuck_company, None).await;
    assert_eq!(s, 200, "{queues}");
    assert_eq!(
        (&queues["items"][0]["queued"], &queues["items"][0]["limit"]),
        (&json!(BACKLOG), &json!(BACKLOG)),
        "{queues}"
    );

    // Busy's reads keep their latency while the stuck queue keeps failing, and its comments
    // reach its runtime as before.
    let after = read_p50(&app, &busy, &busy_key, 200).await;
    println!("busy's web.read p50: {before:?} before, {after:?} beside a stuck backlog of {BACKLOG}");
    assert!(after < before * 3 + Duration::from_millis(5), "{before:?} -> {after:?}");
    let started = Instant::now();
    let done = comment(&app, &busy_key, "still flowing").await;
    assert_eq!(done.disposition, Disposition::Executed, "{}", done.body);
    while !up.comments("T-1").await.iter().any(|c| c == "still flowing") {
        assert!(started.elapsed() < Duration::from_secs(20), "busy's command was never delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The operator gives up on the dead runtime's backlog; the queue is gone.
    let (s, purged) = send(&app, "POST", "/v1/runtime/commands/purge", &stuck_company, None).await;
    assert_eq!((s, purged["purged"].as_u64()), (200, Some(BACKLOG as u64)), "{purged}");
    let (_, queues) = send(&app, "GET", "/v1/outbox", &stuck_company, None).await;
    assert_eq!(queues["items"], json!([]), "{queues}");
    assert_eq!(comment(&app, &stuck_key, "room again").await.disposition, Disposition::Executed);
}

/// One comment on T-1 by the holder of `key`, in-process.
async fn comment(app: &TestApp, key: &str, body: &str) -> gateway::domain::calls::ActionResponse {
    let call = ActionCall {
        token: key.to_string(),
        action: "teams.comment".into(),
        args: json!({"task_id": "T-1", "body": body}),
        idempotency_key: None,
    };
    app.gateway.perform(call).await.unwrap()
}

/// `n` comments from 8 callers at once: how many were queued and how many refused full.
async fn flood(app: &TestApp, key: &str, n: usize) -> (usize, usize) {
    let callers = 8;
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let (gw, key) = (app.gateway.clone(), key.to_string());
            tokio::spawn(async move {
                let (mut queued, mut full) = (0, 0);
                for i in (c..n).step_by(callers) {
                    let call = ActionCall {
                        token: key.clone(),
                        action: "teams.comment".into(),
                        args: json!({"task_id": "T-1", "body": format!("comment {i}")}),
                        idempotency_key: None,
                    };
                    match gw.perform(call).await.unwrap().disposition {
                        Disposition::Executed => queued += 1,
                        Disposition::Full => full += 1,
                        other => panic!("comment {i}: {other:?}"),
                    }
                }
                (queued, full)
            })
        })
        .collect();
    let mut totals = (0, 0);
    for t in tasks {
        let (q, f) = t.await.unwrap();
        totals = (totals.0 + q, totals.1 + f);
    }
    totals
}

/// Registers a receiver for parked approvals; the endpoint's id.
async fn subscribe(base: &str, receiver_base: &str) -> String {
    let body = json!({"url": format!("{receiver_base}/hook"), "events": ["approval.parked"]});
    let (s, b) = call(base, "POST", "/v1/webhooks", COMPANY_KEY, Some(body), None).await;
    assert_eq!(s, 201, "{b}");
    b["endpoint"]["id"].as_str().unwrap().to_string()
}

/// An agent whose every charge parks, on the demo tenant: (profile, key).
async fn parker(base: &str) -> (String, String) {
    let kit = json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "1"}}});
    assert_eq!(call(base, "PUT", "/v1/kits/Parks", COMPANY_KEY, Some(kit), None).await.0, 201);
    let body = json!({"name": "parker", "kit": "Parks"});
    let (_, p) = call(base, "POST", "/v1/agent-profiles", COMPANY_KEY, Some(body), None).await;
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = call(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), COMPANY_KEY, None, None).await;
    (id, k["secret"].as_str().unwrap().to_string())
}

async fn park(base: &str, profile: &str, key: &str, n: usize) {
    for i in 0..n {
        let body = json!({"amount": format!("{}.00", 10 + i), "merchant": "acme"});
        let (s, b) =
            call(base, "POST", &format!("/v1/users/{profile}/cards/charge"), key, Some(body), None).await;
        assert_eq!(s, 202, "{b}");
    }
}

/// Webhook ids the receiver answered 200, in arrival order.
async fn answered(receiver: &common::process::Receiver) -> Vec<String> {
    receiver
        .received()
        .await
        .iter()
        .filter(|r| r["answered"] == 200)
        .map(|r| r["webhook_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_after_nine_seconds_holds_up_only_its_own_endpoint() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    let slow = start_receiver(&["--latency-ms", "9000"]);
    let fast = start_receiver(&[]);
    subscribe(base, &slow.base).await;
    subscribe(base, &fast.base).await;
    let (profile, key) = parker(base).await;
    let started = Instant::now();
    park(base, &profile, &key, 3).await;
    while answered(&fast).await.len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(8), "the fast endpoint waited on the slow one");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fast_took = started.elapsed();
    assert!(answered(&slow).await.is_empty(), "the slow receiver has not answered yet");
    println!("the fast endpoint had all 3 messages after {fast_took:?}; the slow one answers each after 9 s");
}

/// Two instances on one database, a receiver slower than the lease: each message arrives
/// once, in the order it was queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_deliver_each_message_once_in_order_under_a_slow_receiver() {
    let first = start_fresh(&[]).await;
    let second = start_on(&first.db, &[]);
    wait_until_listening(&second.base).await;
    // Each answer takes longer than a lease (2 s here) lasts without a renewal.
    let slow = start_receiver(&["--latency-ms", "2500"]);
    subscribe(&first.server.base, &slow.base).await;
    let (profile, key) = parker(&first.server.base).await;
    park(&second.base, &profile, &key, 4).await;
    let started = Instant::now();
    while slow.received().await.len() < 4 {
        assert!(started.elapsed() < Duration::from_secs(60), "{:?}", slow.received().await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Wait out one more lease: a second send of anything would have arrived by now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let got: Vec<String> =
        slow.received().await.iter().map(|r| r["webhook_id"].as_str().unwrap().to_string()).collect();
    let once: std::collections::BTreeSet<&String> = got.iter().collect();
    assert_eq!(once.len(), got.len(), "a message arrived twice: {got:?}");
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted, "out of order (ids are time-ordered): {got:?}");
    assert_eq!(got.len(), 4, "{got:?}");
}
