//! A randomized race over HTTP on one hard cap: 256 concurrent charges through `/v1`, with
//! approvals, denials, double decisions and expiries, and a kit save that lowers the cap while
//! the calls are in flight. At the end posted + pending is within the cap in force, every
//! hold has ended exactly once, and what the clients were told ran adds up to what posted.
//! `NAIVE_SEED=<n>` replays a run.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::COMPANY_KEY;
use policy::Money;
use serde_json::{Value, json};
use server::reference::demo_agent::Dice;
use tokio::sync::Mutex;

const CALLS: u64 = 256;

fn kit(cap: &str) -> Value {
    json!({"name": "Race", "primitives": ["cards"], "limits": {"budget": {"hard_cap": cap}, "approve": {"above": "10"}}})
}

/// Costs the clients were told ran, in units.
type Seen = Arc<Mutex<i64>>;

async fn note_cost(seen: &Seen, body: &Value) {
    let cost: Money = serde_json::from_value(body["cost"].clone()).expect("a ran call says its cost");
    *seen.lock().await += cost.units();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_decisions_and_a_cap_cut_never_overspend() {
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("NAIVE_SEED={seed}");
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(&format!("sqlite://{}/race.db", dir.path().display()));
    config.approval_ttl_secs = 2;
    let app = Arc::new(common::spawn_with(config).await);
    app.put_kit(kit("100")).await;
    let (profile, _, key) = app.new_agent("racer", "Race", None).await;
    let (_, approver) = app.personal_token("approver", &["approver"]).await;
    let seen: Seen = Arc::default();
    let parked: Arc<Mutex<Vec<String>>> = Arc::default();

    // Small charges run at once (256 of the largest come to $51.20, under the lowered cap);
    // large ones park for a human.
    let mut dice = Dice(seed);
    let mut calls = Vec::new();
    for _ in 0..CALLS {
        let amount = ["0.10", "0.15", "0.20", "12.00", "20.00", "35.00"][dice.next(6) as usize];
        let delay = Duration::from_millis(dice.next(400));
        let (app, profile, key, seen, parked) =
            (app.clone(), profile.clone(), key.clone(), seen.clone(), parked.clone());
        calls.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let body = json!({"amount": amount, "merchant": "acme"});
            let (s, _, b) = app
                .send("POST", &format!("/v1/users/{profile}/cards/charge"), Some(&key), Some(body), &[])
                .await;
            match s {
                200 => note_cost(&seen, &b).await,
                202 => {
                    parked.lock().await.push(b["recovery"][0]["approval_id"].as_str().unwrap().to_string())
                }
                403 => assert_eq!(b["reason"], "budget_exceeded", "{b}"),
                _ => panic!("{s} {b}"),
            }
        }));
    }
    // The cap is cut while calls are in flight; humans decide only under the new cap.
    tokio::time::sleep(Duration::from_millis(150)).await;
    app.put_kit(kit("60")).await;
    let decider = tokio::spawn(decide(app.clone(), approver, parked.clone(), seen.clone(), seed));
    for c in calls {
        c.await.unwrap();
    }
    decider.await.unwrap();

    // Whatever was left alone expires.
    let db = app.database().await;
    for _ in 0..100 {
        let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM holds WHERE status = 'pending'")
            .fetch_one(&db)
            .await
            .unwrap();
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, _, b) =
        app.send("GET", &format!("/v1/users/{profile}/budget"), Some(COMPANY_KEY), None, &[]).await;
    let posted: Money = serde_json::from_value(b["totals"]["posted"].clone()).unwrap();
    let pending: Money = serde_json::from_value(b["totals"]["pending"].clone()).unwrap();
    assert_eq!(pending, Money::ZERO, "every hold ended: {b}");
    assert!(posted <= Money::dollars(60), "posted {posted} is over the cap in force ($60.00)");
    assert_eq!(posted.units(), *seen.lock().await, "what the clients were told ran is what posted");
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let report = app.gateway.check_ledger(&tenant).await.unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    let ended: Vec<(String, i64)> = sqlx::query_as(
        "SELECT h.id, (SELECT COUNT(*) FROM ledger_entries e WHERE e.hold_id = h.id AND e.kind != 'hold') FROM holds h",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    for (hold, endings) in ended {
        assert_eq!(endings, 1, "hold {hold} ended {endings} times");
    }
    Arc::try_unwrap(app).ok().unwrap().stop().await;
}

/// Decides parked approvals as they come: approve, deny, approve twice at once, approve and
/// deny at once, or leave it to expire.
async fn decide(
    app: Arc<common::TestApp>,
    token: String,
    parked: Arc<Mutex<Vec<String>>>,
    seen: Seen,
    seed: u64,
) {
    let mut dice = Dice(seed ^ 0x9e37_79b9_7f4a_7c15);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while tokio::time::Instant::now() < deadline {
        let batch: Vec<String> = parked.lock().await.drain(..).collect();
        if batch.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        for id in batch {
            let verbs: &[&str] = match dice.next(5) {
                0 => &["approve"],
                1 => &["deny"],
                2 => &["approve", "approve"],
                3 => &["approve", "deny"],
                _ => &[],
            };
            let answers = futures_util::future::join_all(verbs.iter().map(|verb| {
                let (app, token, id) = (app.clone(), token.clone(), id.clone());
                async move {
                    let body = if *verb == "deny" { json!({"reason": "not now"}) } else { json!({}) };
                    let (s, _, b) = app
                        .send("POST", &format!("/v1/approvals/{id}/{verb}"), Some(&token), Some(body), &[])
                        .await;
                    (*verb, s, b)
                }
            }))
            .await;
            let mut decided = 0;
            for (verb, s, b) in answers {
                match (verb, s) {
                    ("approve", 200) => {
                        note_cost(&seen, &b).await;
                        decided += 1;
                    }
                    // Refused under the lowered cap: decided, and its hold voided.
                    ("approve", 403) if b["reason"] == "budget_exceeded" => decided += 1,
                    ("deny", 200) => decided += 1,
                    (_, 409)
                        if b["code"] == "approval_already_decided" || b["code"] == "approval_expired" => {}
                    _ => panic!("{verb} {id}: {s} {b}"),
                }
            }
            assert!(decided <= 1, "{id} was decided {decided} times");
        }
    }
}
