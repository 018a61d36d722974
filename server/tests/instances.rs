//! Two server processes on one database, as a deployment with several instances runs them:
//! one SQLite file, or one PostgreSQL database with `NAIVE_TEST_ENGINE=postgres`.
//! Each caches valid keys in its own memory; a change made through one instance reaches the
//! other's caches through their bounded age (`gateway::cache::MAX_AGE`) at the latest. Each
//! leases the holds of the calls it carries out: an instance starting never ends another's
//! calls in flight, and a killed instance's holds are ended by the survivor.

mod common;

use std::time::{Duration, Instant};

use common::COMPANY_KEY;
use common::process::{LEASE_SECS, start, wait_until_listening};
use serde_json::{Value, json};

async fn post(c: &reqwest::Client, url: String, key: &str, body: Value) -> (u16, Value) {
    let r = c.post(url).bearer_auth(key).json(&body).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_revoked_on_one_instance_is_refused_by_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 0);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let c = server::http_client();

    let (s, profile) = post(
        &c,
        format!("{}/v1/agent-profiles", a.base),
        COMPANY_KEY,
        json!({"name": "shared-bot", "kit": "Default"}),
    )
    .await;
    assert_eq!(s, 201, "{profile}");
    let id = profile["id"].as_str().unwrap();
    let (s, key) = post(&c, format!("{}/v1/agent-profiles/{id}/keys", a.base), COMPANY_KEY, json!({})).await;
    assert_eq!(s, 201, "{key}");
    let (secret, key_id) = (key["secret"].as_str().unwrap(), key["key"]["id"].as_str().unwrap());
    let read = |base: &str| format!("{base}/v1/users/{id}/web/read");
    // B authenticates the key once, so it is in B's cache.
    let (s, body) = post(&c, read(&b.base), secret, json!({"url": "https://example.test/"})).await;
    assert_eq!(s, 200, "{body}");

    // A kit saved through A governs B's next decisions: this one drops `web`.
    let r = c
        .put(format!("{}/v1/kits/Default", a.base))
        .bearer_auth(COMPANY_KEY)
        .header("If-Match", "\"1\"")
        .json(&json!({"name": "Default", "primitives": ["cards"]}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let saved = Instant::now();
    loop {
        let (s, body) = post(&c, read(&b.base), secret, json!({"url": "https://example.test/k"})).await;
        if s == 403 {
            assert!(body.to_string().contains("primitive_disabled_by_kit"), "{body}");
            break;
        }
        assert_eq!(s, 200, "{body}");
        assert!(saved.elapsed() < Duration::from_secs(30), "B still decides on the kit A replaced");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("B decided on A's kit {:?} after the save answered", saved.elapsed());

    // Revoked through A.
    let r = c
        .delete(format!("{}/v1/agent-profiles/{id}/keys/{key_id}", a.base))
        .bearer_auth(COMPANY_KEY)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    assert_eq!(post(&c, read(&a.base), secret, json!({"url": "https://example.test/"})).await.0, 401);

    // B refuses it too once its cached copy has aged out; a generous bound, not a timing test.
    let revoked = Instant::now();
    loop {
        let (s, body) = post(&c, read(&b.base), secret, json!({"url": "https://example.test/b"})).await;
        if s == 401 {
            break;
        }
        // Until B sees the revoke, the key still authenticates there and A's kit refuses
        // the call.
        assert_eq!(s, 403, "B answered {body}");
        assert!(body.to_string().contains("primitive_disabled_by_kit"), "{body}");
        assert!(revoked.elapsed() < Duration::from_secs(30), "B still accepts a key A revoked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("B refused the key {:?} after the revoke answered", revoked.elapsed());
    a.kill();
    b.kill();
}

/// A profile on a kit that lets it charge up to $1,000 without approval, and its key.
async fn charging_agent(c: &reqwest::Client, base: &str) -> (String, String) {
    let kit = json!({"name": "Shared", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "1000"}}});
    let r = c.put(format!("{base}/v1/kits/Shared")).bearer_auth(COMPANY_KEY).json(&kit).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let (s, p) =
        post(c, format!("{base}/v1/agent-profiles"), COMPANY_KEY, json!({"name": "payer", "kit": "Shared"}))
            .await;
    assert_eq!(s, 201, "{p}");
    let id = p["id"].as_str().unwrap().to_string();
    let (s, k) = post(c, format!("{base}/v1/agent-profiles/{id}/keys"), COMPANY_KEY, json!({})).await;
    assert_eq!(s, 201, "{k}");
    (id, k["secret"].as_str().unwrap().to_string())
}

/// Starts a $12 charge on `base`; its answer arrives when the sandbox's latency has passed.
fn charge(base: &str, profile: &str, key: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let (url, key) = (format!("{base}/v1/users/{profile}/cards/charge"), key.to_string());
    tokio::spawn(async move {
        let c = server::http_client();
        match c.post(url).bearer_auth(key).json(&json!({"amount": "12.00", "merchant": "acme"})).send().await
        {
            Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or(Value::Null)),
            Err(_) => (0, Value::Null),
        }
    })
}

/// The pending holds of `profile`'s calls (the demo tenant's parked approvals keep theirs).
async fn pending_holds(db: &str, profile: &str) -> Vec<String> {
    let store = gateway::Store::open(db).await.unwrap();
    let ids: Vec<(String,)> = store
        .all("SELECT id FROM holds WHERE status = 'pending' AND profile_id = ?", &[&profile])
        .await
        .unwrap();
    store.close().await;
    ids.into_iter().map(|(id,)| id).collect()
}

/// Every tenant's books balance and its chain verifies.
async fn books_balance(db: &str) {
    let gw = gateway::Gateway::open(db).await.unwrap();
    for tenant in gw.tenants().await.unwrap() {
        let report = gw.check_ledger(&tenant.id).await.unwrap();
        assert!(report.violations.is_empty(), "{:#?}", report.violations);
        assert!(gw.verify_log(&tenant.id).await.unwrap().ok);
    }
}

/// Start-up recovery used to end every pending hold no approval kept, so a second instance
/// (or a rolling restart's new process) voided the first's calls still running, and their
/// settles failed after the provider had acted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_starting_leaves_the_others_calls_in_flight_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    // Each call takes longer than a lease, so A must renew it while the call runs.
    let latency = (LEASE_SECS + 3) * 1_000;
    let a = start(&db, latency);
    wait_until_listening(&a.base).await;
    let c = server::http_client();
    let (profile, key) = charging_agent(&c, &a.base).await;
    let in_flight = charge(&a.base, &profile, &key);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(pending_holds(&db, &profile).await.len(), 1, "the charge is in flight on A");
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let (s, body) = in_flight.await.unwrap();
    assert_eq!(s, 200, "the charge A carried out completed: {body}");
    assert!(body["hold_id"].is_string(), "{body}");
    assert_eq!(pending_holds(&db, &profile).await, Vec::<String>::new());
    a.kill();
    b.kill();
    books_balance(&db).await;
}

/// SIGKILL an instance with a call in flight: the survivor's sweeper ends its hold once the
/// lease lapses, the log says so, and the books balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_instances_hold_is_ended_by_the_survivor() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 30_000);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let c = server::http_client();
    let (profile, key) = charging_agent(&c, &a.base).await;
    let in_flight = charge(&a.base, &profile, &key);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = pending_holds(&db, &profile).await;
    assert_eq!(held.len(), 1, "the charge is in flight on A");
    a.kill();
    assert_eq!(in_flight.await.unwrap().0, 0, "A died before answering");
    let killed = Instant::now();
    while !pending_holds(&db, &profile).await.is_empty() {
        assert!(killed.elapsed() < Duration::from_secs(LEASE_SECS + 30), "B never ended A's hold");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r =
        c.get(format!("{}/v1/users/{profile}/logs", b.base)).bearer_auth(COMPANY_KEY).send().await.unwrap();
    let log: Value = r.json().await.unwrap();
    let expired = log["items"].as_array().unwrap().iter().find(|e| e["verdict"] == "expired");
    let expired = expired.unwrap_or_else(|| panic!("no entry says the hold expired: {log}"));
    assert_eq!(expired["detail"]["hold_id"], held[0].as_str(), "{expired}");
    assert_eq!(expired["actor"], "system", "{expired}");
    b.kill();
    books_balance(&db).await;
}

/// Opens `/v1/events` on `base`, resuming after `last` when given.
async fn open_events(base: &str, last: Option<i64>) -> reqwest::Response {
    let mut req = server::http_client().get(format!("{base}/v1/events")).bearer_auth(COMPANY_KEY);
    if let Some(id) = last {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res
}

/// Reads a stream until `count` events arrived; returns their ids in order.
async fn event_ids(mut res: reqwest::Response, count: usize) -> Vec<i64> {
    let (mut buf, mut ids) = (String::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, res.chunk()).await;
        let chunk = chunk.unwrap_or_else(|_| panic!("only {ids:?} of {count} events arrived")).unwrap();
        buf.push_str(std::str::from_utf8(&chunk.expect("the stream stays open")).unwrap());
        while let Some(end) = buf.find('\n') {
            let line: String = buf.drain(..=end).collect();
            if let Some(id) = line.trim_end().strip_prefix("id:") {
                ids.push(id.trim().parse().unwrap());
            }
        }
    }
    ids
}

/// The sequence numbers of `profile`'s log entries after `after`, oldest first.
async fn logged_ids(base: &str, profile: &str, after: i64) -> Vec<i64> {
    let c = server::http_client();
    let url = format!("{base}/v1/users/{profile}/logs?limit=500&after={after}");
    let page: Value = c.get(url).bearer_auth(COMPANY_KEY).send().await.unwrap().json().await.unwrap();
    page["items"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect()
}

/// What A commits reaches a live event stream on B in commit order, interleaved with B's own;
/// a client resuming with `Last-Event-ID` on A gets exactly what followed, neither lost nor
/// repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_on_one_instance_carries_the_others_commits_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 0);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let c = server::http_client();
    let (profile, key) = charging_agent(&c, &a.base).await;
    let first = *logged_ids(&a.base, &profile, 0).await.last().unwrap();
    let live_on_b = tokio::spawn(event_ids(open_events(&b.base, Some(first)).await, 45));
    // Calls through both instances at once, so their commits interleave.
    let mut calls = Vec::new();
    for (n, base) in [&a.base, &b.base].into_iter().enumerate() {
        let (c, base, profile, key) = (c.clone(), base.clone(), profile.clone(), key.clone());
        calls.push(tokio::spawn(async move {
            for i in 0..20 {
                let url = format!("{base}/v1/users/{profile}/cards/charge");
                let body = json!({"amount": "1.00", "merchant": "acme", "memo": format!("{n}-{i}")});
                assert_eq!(post(&c, url, &key, body).await.0, 200);
            }
        }));
    }
    for t in calls {
        t.await.unwrap();
    }
    // Then through A alone: only B's follower can bring these to B.
    for i in 0..5 {
        let url = format!("{}/v1/users/{profile}/cards/charge", a.base);
        let body = json!({"amount": "1.00", "merchant": "acme", "memo": format!("last-{i}")});
        assert_eq!(post(&c, url, &key, body).await.0, 200);
    }
    let logged = logged_ids(&a.base, &profile, first).await;
    assert_eq!(logged.len(), 45, "one entry per charge: {logged:?}");
    assert_eq!(live_on_b.await.unwrap(), logged, "B's live stream is the log, in order, once each");
    let on_a = event_ids(open_events(&a.base, Some(logged[19])).await, 25).await;
    assert_eq!(on_a, logged[20..], "resumed on A after {}", logged[19]);
    a.kill();
    b.kill();
}

/// The sign-in limit is one limit across instances: five wrong passwords through A use up the
/// window on B too, even for the right password (each instance counted its own before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_on_one_instance_count_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 0);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let c = server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let sign_in = |base: &str, password: &str| {
        let req = c.post(format!("{base}/login")).form(&[("username", "approver"), ("password", password)]);
        async move { req.send().await.unwrap() }
    };
    for _ in 0..gateway::domain::logins::MAX_FAILED_LOGINS {
        let r = sign_in(&a.base, "wrong password").await;
        assert_eq!(r.status().as_u16(), 303, "a wrong password is sent back to the form");
    }
    let r = sign_in(&b.base, common::ADMIN_PASSWORD).await;
    assert_eq!(r.status().as_u16(), 429, "B counts A's failures");
    let wait: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait > 0 && wait <= gateway::domain::logins::LOGIN_WINDOW_SECS as u64, "{wait}");
    a.kill();
    b.kill();
}

/// 256 charges on one $100 hard cap, spread over both instances at once, each call in
/// flight for a while: what the clients were told ran stays within the cap, equals what
/// posted, and the books balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_race_on_one_cap_over_two_instances_never_overspends() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 20);
    wait_until_listening(&a.base).await;
    let b = start(&db, 20);
    wait_until_listening(&b.base).await;
    let c = server::http_client();
    let kit = json!({"name": "Race", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "100"}}});
    let r =
        c.put(format!("{}/v1/kits/Race", a.base)).bearer_auth(COMPANY_KEY).json(&kit).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let (s, p) = post(
        &c,
        format!("{}/v1/agent-profiles", b.base),
        COMPANY_KEY,
        json!({"name": "racer", "kit": "Race"}),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let profile = p["id"].as_str().unwrap().to_string();
    let (_, k) =
        post(&c, format!("{}/v1/agent-profiles/{profile}/keys", a.base), COMPANY_KEY, json!({})).await;
    let key = k["secret"].as_str().unwrap().to_string();
    let told = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut calls = Vec::new();
    for i in 0..256u64 {
        let base = if i % 2 == 0 { a.base.clone() } else { b.base.clone() };
        let (c, profile, key, told) = (c.clone(), profile.clone(), key.clone(), told.clone());
        calls.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i * 7 % 300)).await;
            let amount = ["0.50", "1.25", "2.00", "3.00"][(i * 13 % 4) as usize];
            let url = format!("{base}/v1/users/{profile}/cards/charge");
            let (s, body) = post(&c, url, &key, json!({"amount": amount, "merchant": "acme"})).await;
            match s {
                200 => {
                    let cost: policy::Money = serde_json::from_value(body["cost"].clone()).unwrap();
                    told.fetch_add(cost.units(), std::sync::atomic::Ordering::Relaxed);
                }
                403 => assert!(body.to_string().contains("hard_cap"), "{body}"),
                _ => panic!("{s} {body}"),
            }
        }));
    }
    for t in calls {
        t.await.unwrap();
    }
    let told = told.load(std::sync::atomic::Ordering::Relaxed);
    let cap = policy::Money::parse("100").unwrap().units();
    assert!(told <= cap, "told {told} units ran against a cap of {cap}");
    assert!(told > cap / 2, "the cap was reached: {told}");
    let store = gateway::Store::open(&db).await.unwrap();
    let (posted,): (i64,) = store
        .one(
            "SELECT CAST(COALESCE(SUM(posted_units), 0) AS BIGINT) FROM holds WHERE profile_id = ? AND status = 'posted'",
            &[&profile],
        )
        .await
        .unwrap();
    store.close().await;
    assert_eq!(posted, told, "what posted is what the clients were told ran");
    a.kill();
    b.kill();
    books_balance(&db).await;
}

/// A personal token made through A is shown once by the page it redirects to even when that
/// page is served by B (behind a load balancer), and never again; the database only ever
/// held it sealed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_secret_is_shown_once_by_whichever_instance_serves_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let a = start(&db, 0);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let raw = server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = raw
        .post(format!("{}/login", a.base))
        .form(&[("username", "approver"), ("password", common::ADMIN_PASSWORD), ("next", "/")])
        .send()
        .await
        .unwrap();
    let cookie =
        res.headers().get("set-cookie").unwrap().to_str().unwrap().split(';').next().unwrap().to_string();
    let res = raw
        .post(format!("{}/api/create_token", a.base))
        .header("cookie", &cookie)
        .header("accept", "text/html")
        .header("referer", format!("{}/account", a.base))
        .form(&[("label", "handed over"), ("approver", "on")])
        .send()
        .await
        .unwrap();
    let to =
        res.headers().get("location").expect("redirected to the account page").to_str().unwrap().to_string();
    let store = gateway::Store::open(&db).await.unwrap();
    let sealed: Vec<(Vec<u8>,)> = store.all("SELECT sealed FROM secret_handovers", &[]).await.unwrap();
    assert_eq!(sealed.len(), 1, "the secret waits in the database");
    let page = |base: String| {
        let (raw, cookie, to) = (raw.clone(), cookie.clone(), to.clone());
        async move {
            raw.get(format!("{base}{to}"))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let secret = common::shown_secret(&page(b.base.clone()).await).expect("B shows the secret A made");
    assert!(secret.starts_with("nvu_"), "{secret}");
    assert!(
        !sealed[0].0.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "the database held the secret in the clear"
    );
    assert_eq!(common::shown_secret(&page(b.base.clone()).await), None, "shown once");
    assert_eq!(common::shown_secret(&page(a.base.clone()).await), None, "and not again on A");
    let (left,): (i64,) = store.one("SELECT COUNT(*) FROM secret_handovers", &[]).await.unwrap();
    assert_eq!(left, 0, "taking it deleted it");
    store.close().await;
    a.kill();
    b.kill();
}
