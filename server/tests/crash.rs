//! The real server binary killed with SIGKILL while agents call and approvers decide, then
//! started again on the same database through the real start-up path: every action it
//! acknowledged is there, and every hold has ended (or still waits on a pending approval).

mod common;

use std::time::Duration;

use common::COMPANY_KEY;
use common::process::{
    LEASE_SECS, UPSTREAM_SECRET, approver_token, start, start_upstream, wait_until_listening,
};
use serde_json::{Value, json};

async fn send(
    c: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Value,
) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    match c.request(m, format!("{base}{path}")).bearer_auth(key).json(&body).send().await {
        Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
        // The server died under the request: nothing was acknowledged.
        Err(_) => (0, Value::Null),
    }
}

/// What the clients were told, to check against the database after a crash.
#[derive(Default)]
struct Acknowledged {
    /// Holds of calls that answered 200 (ran) and of approvals that answered 200 (ran).
    posted_holds: Vec<String>,
    /// Approvals that answered 202 (parked).
    parked: Vec<String>,
}

async fn setup(base: &str) -> Vec<(String, String)> {
    let c = server::http_client();
    let kit = json!({"name": "Crash", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "100000"}, "approve": {"above": "50"}}});
    let (s, b) = send(&c, base, "PUT", "/v1/kits/Crash", COMPANY_KEY, kit).await;
    assert_eq!(s, 201, "{b}");
    let mut agents = Vec::new();
    for i in 0..4 {
        let (s, p) = send(
            &c,
            base,
            "POST",
            "/v1/agent-profiles",
            COMPANY_KEY,
            json!({"name": format!("crash-{i}"), "kit": "Crash"}),
        )
        .await;
        assert_eq!(s, 201, "{p}");
        let id = p["id"].as_str().unwrap().to_string();
        let (_, k) =
            send(&c, base, "POST", &format!("/v1/agent-profiles/{id}/keys"), COMPANY_KEY, json!({})).await;
        agents.push((id, k["secret"].as_str().unwrap().to_string()));
    }
    agents
}

/// Agents charge (small charges run, big ones park) and the approver approves what parks,
/// until the process dies under them.
async fn load(base: String, agents: Vec<(String, String)>, token: String, seed: u64) -> Acknowledged {
    load_until(base, agents, token, seed, None).await
}

/// [`load`], stopping at `until` if the process is still alive then.
async fn load_until(
    base: String,
    agents: Vec<(String, String)>,
    token: String,
    seed: u64,
    until: Option<std::time::Instant>,
) -> Acknowledged {
    let c = server::http_client_builder().timeout(Duration::from_secs(10)).build().unwrap();
    let ack = std::sync::Arc::new(tokio::sync::Mutex::new(Acknowledged::default()));
    let mut tasks = Vec::new();
    for (n, (profile, key)) in agents.into_iter().enumerate() {
        let (c, base, token, ack) = (c.clone(), base.clone(), token.clone(), ack.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                if until.is_some_and(|t| std::time::Instant::now() >= t) {
                    break;
                }
                let big = seed.wrapping_add(i + n as u64).is_multiple_of(3);
                let amount = if big { "75.00" } else { "1.25" };
                let body = json!({"amount": amount, "merchant": "acme", "memo": format!("{n}-{i}")});
                let (s, b) =
                    send(&c, &base, "POST", &format!("/v1/users/{profile}/cards/charge"), &key, body).await;
                match s {
                    200 => ack.lock().await.posted_holds.push(b["hold_id"].as_str().unwrap().to_string()),
                    202 => {
                        let id = b["recovery"][0]["approval_id"].as_str().unwrap().to_string();
                        ack.lock().await.parked.push(id.clone());
                        let (s, b) = send(
                            &c,
                            &base,
                            "POST",
                            &format!("/v1/approvals/{id}/approve"),
                            &token,
                            json!({}),
                        )
                        .await;
                        if s == 200 {
                            ack.lock().await.posted_holds.push(b["hold_id"].as_str().unwrap().to_string());
                        }
                    }
                    0 => break,
                    _ => {}
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    std::sync::Arc::try_unwrap(ack).ok().unwrap().into_inner()
}

/// The pending holds no pending approval keeps, once the running server's sweeper has had
/// the time to end the killed one's: its leases lapse [`LEASE_SECS`] after the last renewal.
async fn orphans_after_leases_lapse(store: &gateway::store::Store) -> Vec<(String, Option<String>)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(LEASE_SECS + 30);
    loop {
        let open: Vec<(String, Option<String>)> = store
            .all(
                "SELECT h.id, (SELECT status FROM approvals a WHERE a.hold_id = h.id) FROM holds h WHERE h.status = 'pending'",
                &[],
            )
            .await
            .unwrap();
        let orphans: Vec<_> = open.into_iter().filter(|(_, a)| a.as_deref() != Some("pending")).collect();
        if orphans.is_empty() || std::time::Instant::now() > deadline {
            return orphans;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every acknowledged action is in `db` (on either engine), and no hold was left behind.
async fn check(db: &str, ack: &Acknowledged) {
    let store = gateway::store::Store::open(db).await.unwrap();
    assert_eq!(orphans_after_leases_lapse(&store).await, Vec::new(), "holds that never ended");
    for hold in &ack.posted_holds {
        let status: Option<(String,)> =
            store.opt("SELECT status FROM holds WHERE id = ?", &[hold]).await.unwrap();
        assert_eq!(status.map(|s| s.0).as_deref(), Some("posted"), "acknowledged hold {hold}");
    }
    for approval in &ack.parked {
        let (n,): (i64,) =
            store.one("SELECT COUNT(*) FROM approvals WHERE id = ?", &[approval]).await.unwrap();
        assert_eq!(n, 1, "acknowledged approval {approval}");
    }
    store.close().await;
}

/// #11: an approved call that dies before it settles still ends its hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_killed_in_flight_ends_its_hold_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/crash.db", dir.path().display());
    let server = start(&db, 3_000);
    wait_until_listening(&server.base).await;
    let agents = setup(&server.base).await;
    let token = approver_token(&server.base).await;
    let c = server::http_client();
    let (profile, key) = &agents[0];
    let (s, b) = send(
        &c,
        &server.base,
        "POST",
        &format!("/v1/users/{profile}/cards/charge"),
        key,
        json!({"amount": "80", "merchant": "acme"}),
    )
    .await;
    assert_eq!(s, 202, "{b}");
    let id = b["recovery"][0]["approval_id"].as_str().unwrap().to_string();
    let approving = tokio::spawn({
        let (base, id) = (server.base.clone(), id.clone());
        async move {
            send(
                &server::http_client(),
                &base,
                "POST",
                &format!("/v1/approvals/{id}/approve"),
                &token,
                json!({}),
            )
            .await
        }
    });
    // The approval commits at once; the charge waits three seconds in the sandbox.
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.kill();
    assert_eq!(approving.await.unwrap().0, 0, "the approve was still in flight");

    let server = start(&db, 0);
    wait_until_listening(&server.base).await;
    check(&db, &Acknowledged::default()).await;
    let (_, a) =
        send(&c, &server.base, "GET", &format!("/v1/approvals/{id}"), COMPANY_KEY, Value::Null).await;
    assert_eq!(a["status"], "approved", "{a}");
    assert_eq!(a["result"]["ok"], false, "the approver can see the call never completed: {a}");
    assert!(a["trail"].as_array().unwrap().iter().any(|t| t["step"] == "failed"), "{a}");
    server.kill();
}

/// Several kills at random points under load; each restart recovers through start-up. On
/// PostgreSQL (the second pass of `make test`) the kills land with batches of the tenant's
/// jobs in flight: every acknowledged action is there, nothing else is half-there (no hold
/// left pending, the books balance), and the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_action_survives_repeated_kills() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("NAIVE_SEED={seed}");
    let server = start(&db, 0);
    wait_until_listening(&server.base).await;
    let agents = setup(&server.base).await;
    let token = approver_token(&server.base).await;
    server.kill();
    let mut all = Acknowledged::default();
    for round in 0..4u64 {
        // Some rounds give the sandbox latency, so approved calls are in flight when it dies.
        let latency = [0, 40, 0, 120][round as usize];
        let server = start(&db, latency);
        wait_until_listening(&server.base).await;
        check(&db, &all).await;
        let work =
            tokio::spawn(load(server.base.clone(), agents.clone(), token.clone(), seed.wrapping_add(round)));
        let after_ms = 300 + (seed.wrapping_mul(31).wrapping_add(round * 977)) % 700;
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        server.kill();
        let ack = work.await.unwrap();
        all.posted_holds.extend(ack.posted_holds);
        all.parked.extend(ack.parked);
    }
    assert!(all.posted_holds.len() > 20, "the load got going: {} posted", all.posted_holds.len());
    // The last start-up recovers the last kill; then the books balance and the chain holds.
    let server = start(&db, 0);
    wait_until_listening(&server.base).await;
    check(&db, &all).await;
    server.kill();
    let gw = gateway::Gateway::open(&db).await.unwrap();
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let report = gw.check_ledger(&tenant).await.unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(gw.verify_log(&tenant).await.unwrap().ok);
}

/// Two instances on one database under load; one is killed with SIGKILL mid-load. The
/// survivor's sweeper ends the dead one's holds once their leases lapse: every action either
/// instance acknowledged is there, no hold is left pending, and the books and chain verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_survivor_recovers_an_instance_killed_mid_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/crash.db", dir.path().display());
    let seed: u64 = std::env::var("NAIVE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("NAIVE_SEED={seed}");
    // Calls take a while on both, so the killed one has calls (and approved calls) in flight.
    let a = start(&db, 40);
    wait_until_listening(&a.base).await;
    let b = start(&db, 40);
    wait_until_listening(&b.base).await;
    let agents = setup(&a.base).await;
    let token = approver_token(&b.base).await;
    let stop_b = std::time::Instant::now() + Duration::from_millis(1_500);
    let on_a = tokio::spawn(load(a.base.clone(), agents.clone(), token.clone(), seed));
    let on_b = tokio::spawn(load_until(b.base.clone(), agents, token, seed.wrapping_add(1), Some(stop_b)));
    tokio::time::sleep(Duration::from_millis(300 + seed % 700)).await;
    a.kill();
    let mut ack = on_a.await.unwrap();
    let from_b = on_b.await.unwrap();
    ack.posted_holds.extend(from_b.posted_holds);
    ack.parked.extend(from_b.parked);
    assert!(ack.posted_holds.len() > 10, "the load got going: {} posted", ack.posted_holds.len());
    // B is alive and idle: its sweeper ends A's holds once their leases lapse.
    check(&db, &ack).await;
    b.kill();
    let gw = gateway::Gateway::open(&db).await.unwrap();
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let report = gw.check_ledger(&tenant).await.unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(gw.verify_log(&tenant).await.unwrap().ok);
}

/// Points the tenant's `cards` at the reference upstream, with its credential in the vault.
async fn connect_cards(base: &str, upstream: &str) {
    let c = server::http_client();
    let (s, b) =
        send(&c, base, "PUT", "/v1/vault/secrets/processor", COMPANY_KEY, json!({"value": UPSTREAM_SECRET}))
            .await;
    assert_eq!(s, 201, "{b}");
    let spec = json!({"kind": "http", "url": format!("{upstream}/cards/charge"), "timeout_ms": 20_000,
        "auth": {"kind": "bearer", "secret": "processor"}});
    let (s, b) = send(&c, base, "PUT", "/v1/connectors/cards", COMPANY_KEY, spec).await;
    assert_eq!(s, 200, "{b}");
}

/// #14: SIGKILL while 50 charges are in flight to the upstream. The upstream finishes them
/// (it does not know the gateway died); after a restart, the recovery sweep sends each lost
/// call again with its action id, and every hold settles on the upstream's answer: the ledger
/// posts exactly what the upstream charged, each once, and nothing is left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_to_an_upstream_settle_on_its_answer_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/crash.db", dir.path().display());
    let upstream = start_upstream();
    let server = start(&db, 0);
    wait_until_listening(&server.base).await;
    let agents = setup(&server.base).await;
    connect_cards(&server.base, &upstream.base).await;
    let c = server::http_client_builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut calls = Vec::new();
    for i in 0..50 {
        let (profile, key) = agents[i % agents.len()].clone();
        let (c, base) = (c.clone(), server.base.clone());
        // Each charge takes the processor 2.5 s; amounts differ so each posting is checkable.
        let body = json!({"amount": format!("{}.{:02}", 1 + i % 40, i), "merchant": "test-slow-2500"});
        calls.push(tokio::spawn(async move {
            send(&c, &base, "POST", &format!("/v1/users/{profile}/cards/charge"), &key, body).await.0
        }));
    }
    let pool = sqlx::SqlitePool::connect(&db).await.unwrap();
    wait_for_pending(&pool, 50).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    for call in calls {
        assert_eq!(call.await.unwrap(), 0, "every call was in flight when the gateway died");
    }

    let server = start(&db, 0);
    wait_until_listening(&server.base).await;
    let store = gateway::store::Store::open(&db).await.unwrap();
    assert_eq!(orphans_after_leases_lapse(&store).await, Vec::new(), "holds that never ended");
    store.close().await;
    let price = policy::Catalog::builtin().get("cards.charge").unwrap().price.units();
    let records = upstream_records(&upstream, 50).await;
    assert_eq!(records.len(), 50, "the upstream carried out every call once: {records:?}");
    let posted: std::collections::BTreeMap<String, i64> = sqlx::query_as(
        "SELECT id, posted_units FROM holds WHERE action = 'cards.charge' AND status = 'posted' AND id NOT IN \
         (SELECT json_extract(detail, '$.hold_id') FROM activity WHERE json_extract(detail, '$.connector') = 'sandbox')",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    let charged: std::collections::BTreeMap<String, i64> = records
        .iter()
        .map(|r| {
            let amount: policy::Money = r["amount"].as_str().unwrap().parse().unwrap();
            (r["action_id"].as_str().unwrap().to_string(), amount.units() + price)
        })
        .collect();
    assert_eq!(posted, charged, "the ledger posts what the upstream charged, and nothing else");
    let recovered: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM activity WHERE verdict = 'recovered'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(recovered, 50, "each recovery says what happened");
    pool.close().await;
    server.kill();
    let gw = gateway::Gateway::open(&db).await.unwrap();
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let report = gw.check_ledger(&tenant).await.unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(gw.verify_log(&tenant).await.unwrap().ok);
}

/// Waits until `n` holds are pending (the calls reserved and went out to the upstream).
async fn wait_for_pending(pool: &sqlx::SqlitePool, n: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM holds WHERE status = 'pending'")
            .fetch_one(pool)
            .await
            .unwrap();
        if pending >= n {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "only {pending} calls went out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The upstream's records once it has `n` (it finishes calls whose caller died), or after 30 s.
async fn upstream_records(upstream: &common::process::Upstream, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let records = upstream.records().await;
        if records.len() >= n || std::time::Instant::now() > deadline {
            return records;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
