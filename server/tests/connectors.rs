//! Connectors and the vault, black-box: the real server on a fresh database and the reference
//! upstream (`server upstream`) as its own process, talked to over HTTP as an admin and an
//! agent would. The credential the upstream checks lives in the gateway's vault and never
//! reaches the agent, or any answer, log entry or event.

mod common;

use common::process::{UPSTREAM_SECRET, Upstream, start_upstream};
use common::{COMPANY_KEY, OPERATOR_KEY, TestApp, spawn_app};
use serde_json::{Value, json};

const KIT: &str = "Ops";

/// An agent on a kit with cards and email, a $500 hard cap and no approvals below it.
async fn agent(app: &TestApp) -> (String, String) {
    app.put_kit(json!({"name": KIT, "primitives": ["cards", "email", "web"], "limits": {"budget": {"hard_cap": "500"}}}))
        .await;
    let (profile, _, key) = app.new_agent("buyer", KIT, None).await;
    (profile, key)
}

async fn company(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (s, _, b) = app.send(method, path, Some(COMPANY_KEY), body, &[]).await;
    (s, b)
}

/// Stores the upstream's credential and points `cards` (bearer) and `email` (signed body) at it.
async fn connect(app: &TestApp, up: &Upstream, timeout_ms: u64) {
    let (s, b) =
        company(app, "PUT", "/v1/vault/secrets/upstream", Some(json!({ "value": UPSTREAM_SECRET }))).await;
    assert!(s == 201 || s == 200, "{s} {b}");
    let cards = json!({"kind": "http", "url": format!("{}/cards/charge", up.base), "timeout_ms": timeout_ms,
        "auth": {"kind": "bearer", "secret": "upstream"}});
    let (s, b) = company(app, "PUT", "/v1/connectors/cards", Some(cards)).await;
    assert_eq!(s, 200, "{b}");
    let mail = json!({"kind": "http", "url": format!("{}/mail/send", up.base), "auth": {"kind": "hmac", "secret": "upstream"}});
    let (s, b) = company(app, "PUT", "/v1/connectors/email", Some(mail)).await;
    assert_eq!(s, 200, "{b}");
}

async fn charge(
    app: &TestApp,
    profile: &str,
    key: &str,
    amount: &str,
    merchant: &str,
    idem: Option<&str>,
) -> (u16, Value) {
    let headers: Vec<(&str, &str)> = idem.iter().map(|k| ("idempotency-key", *k)).collect();
    let body = json!({ "amount": amount, "merchant": merchant });
    let (s, _, b) =
        app.send("POST", &format!("/v1/users/{profile}/cards/charge"), Some(key), Some(body), &headers).await;
    (s, b)
}

async fn pending_and_posted(app: &TestApp, profile: &str, key: &str) -> (String, String) {
    let (s, _, b) = app.send("GET", &format!("/v1/users/{profile}/budget"), Some(key), None, &[]).await;
    assert_eq!(s, 200, "{b}");
    let own = &b["totals"];
    (own["pending"].as_str().unwrap().to_string(), own["posted"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn a_charge_crosses_real_http_with_the_vault_credential_and_posts_the_actual_cost() {
    let app = spawn_app().await;
    let up = start_upstream();
    let (profile, key) = agent(&app).await;
    connect(&app, &up, 5_000).await;
    // The processor charges half for this merchant: the hold posts what it reports.
    let (s, b) = charge(&app, &profile, &key, "40.00", "test-partial", None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["connector"], "http");
    assert_eq!(b["cost"], "20.00");
    assert!(b["result"]["charge_id"].as_str().unwrap().starts_with("ch_"), "{b}");
    assert_eq!(pending_and_posted(&app, &profile, &key).await, ("0.00".into(), "20.00".into()));
    let records = up.records().await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["amount"], "20.00");
    assert_eq!(records[0]["action"], "cards.charge");
    // Mail goes out signed; the relay checks the signature.
    let (s, _, b) = app
        .send(
            "POST",
            &format!("/v1/users/{profile}/email/send"),
            Some(&key),
            Some(json!({"to": "ops@x.test", "subject": "hi"})),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["result"]["message_id"].as_str().unwrap().starts_with("msg_"), "{b}");
    assert_eq!(up.records().await.len(), 2);
    // The sandbox still serves what is not connected, and says so.
    let (s, b) = app.web_read(&gateway::ProfileId::parse(&profile).unwrap(), &key, "https://x.test/").await;
    assert_eq!(s, 200);
    assert_eq!(serde_json::from_str::<Value>(&b).unwrap()["connector"], "sandbox");
    assert_secret_absent(&app, &profile, &key).await;
}

/// Every answer, log entry and stored row an agent, the company or the operator can read is
/// free of the upstream's credential.
async fn assert_secret_absent(app: &TestApp, profile: &str, key: &str) {
    for (path, credential) in [
        (format!("/v1/users/{profile}/logs"), key),
        (format!("/v1/users/{profile}/ledger"), key),
        ("/v1/vault/secrets".to_string(), COMPANY_KEY),
        ("/v1/vault/secrets/upstream".to_string(), COMPANY_KEY),
        ("/v1/connectors".to_string(), COMPANY_KEY),
        ("/v1/logs".to_string(), OPERATOR_KEY),
    ] {
        let (s, _, b) = app.send("GET", &path, Some(credential), None, &[]).await;
        assert_eq!(s, 200, "{path}: {b}");
        assert!(!b.to_string().contains(UPSTREAM_SECRET), "{path} shows the secret: {b}");
    }
    let sealed: Vec<(Vec<u8>,)> =
        app.gateway.store().all("SELECT sealed FROM vault_secrets", &[]).await.unwrap();
    for (bytes,) in sealed {
        assert!(
            !bytes.windows(UPSTREAM_SECRET.len()).any(|w| w == UPSTREAM_SECRET.as_bytes()),
            "stored in clear"
        );
    }
    let details: Vec<(String,)> = app.gateway.store().all("SELECT detail FROM activity", &[]).await.unwrap();
    assert!(details.iter().all(|(d,)| !d.contains(UPSTREAM_SECRET)), "an activity entry holds the secret");
}

#[tokio::test]
async fn a_secret_goes_in_once_and_never_comes_out() {
    let app = spawn_app().await;
    let (s, first) =
        company(&app, "PUT", "/v1/vault/secrets/mail-relay", Some(json!({ "value": "first-value-1" }))).await;
    assert_eq!(s, 201, "{first}");
    assert_eq!(first["name"], "mail-relay");
    assert!(first["fingerprint"].as_str().unwrap().starts_with("fp_"));
    assert!(first.get("value").is_none() && !first.to_string().contains("first-value-1"), "{first}");
    let (s, again) =
        company(&app, "PUT", "/v1/vault/secrets/mail-relay", Some(json!({ "value": "second-value-2" })))
            .await;
    assert_eq!(s, 200, "replacing answers 200: {again}");
    assert_ne!(again["fingerprint"], first["fingerprint"], "a new value has a new fingerprint");
    let (_, one) = company(&app, "GET", "/v1/vault/secrets/mail-relay", None).await;
    let (_, list) = company(&app, "GET", "/v1/vault/secrets", None).await;
    for shown in [&one, &list] {
        let text = shown.to_string();
        assert!(!text.contains("first-value-1") && !text.contains("second-value-2"), "{text}");
    }
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(one["fingerprint"], again["fingerprint"]);
    // Bad input is a clear 4xx; an agent cannot touch the vault.
    let (s, b) = company(&app, "PUT", "/v1/vault/secrets/Bad%20Name", Some(json!({ "value": "x" }))).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_secret_name")));
    let (s, b) = company(&app, "PUT", "/v1/vault/secrets/x", Some(json!({ "value": "" }))).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_secret_value")));
    let (s, b) = company(&app, "PUT", "/v1/vault/secrets/x", Some(json!({ "value": "v", "extra": 1 }))).await;
    assert_eq!(s, 400, "{b}");
    let (_, key) = agent(&app).await;
    let (s, _, b) = app.send("GET", "/v1/vault/secrets", Some(&key), None, &[]).await;
    assert_eq!((s, b["code"].as_str()), (403, Some("company_key_required")));
    // A secret a connector names cannot be deleted; once free, it can, once.
    let spec = json!({"kind": "http", "url": "http://127.0.0.1:9/mail", "auth": {"kind": "bearer", "secret": "mail-relay"}});
    assert_eq!(company(&app, "PUT", "/v1/connectors/email.send", Some(spec)).await.0, 200);
    let (s, b) = company(&app, "DELETE", "/v1/vault/secrets/mail-relay", None).await;
    assert_eq!((s, b["code"].as_str()), (409, Some("secret_in_use")), "{b}");
    assert_eq!(
        company(&app, "PUT", "/v1/connectors/email.send", Some(json!({"kind": "sandbox"}))).await.0,
        200
    );
    assert_eq!(company(&app, "DELETE", "/v1/vault/secrets/mail-relay", None).await.0, 204);
    assert_eq!(company(&app, "DELETE", "/v1/vault/secrets/mail-relay", None).await.0, 404);
    assert_eq!(company(&app, "GET", "/v1/vault/secrets/mail-relay", None).await.0, 404);
}

#[tokio::test]
async fn connector_settings_are_checked_before_anything_is_stored() {
    let app = spawn_app().await;
    let ok_url = "https://processor.example.com/charge";
    for (target, spec, code) in [
        ("cards", json!({"kind": "http", "url": "ftp://x/y"}), "invalid_connector_url"),
        ("cards", json!({"kind": "http", "url": "https://u:p@x.example/"}), "invalid_connector_url"),
        ("cards", json!({"kind": "http", "url": ok_url, "timeout_ms": 5}), "invalid_timeout"),
        (
            "cards",
            json!({"kind": "http", "url": ok_url, "auth": {"kind": "bearer", "secret": "nope"}}),
            "unknown_secret",
        ),
        (
            "cards",
            json!({"kind": "http", "url": ok_url, "auth": {"kind": "header", "header": "Host", "secret": "nope"}}),
            "invalid_header_name",
        ),
        ("cardz", json!({"kind": "http", "url": ok_url}), "invalid_connector_target"),
        ("cards.steal", json!({"kind": "sandbox"}), "invalid_connector_target"),
    ] {
        let (s, b) = company(&app, "PUT", &format!("/v1/connectors/{target}"), Some(spec.clone())).await;
        assert_eq!((s, b["code"].as_str()), (400, Some(code)), "{spec}: {b}");
    }
    let (s, b) = company(&app, "PUT", "/v1/connectors/cards", Some(json!({"kind": "ftp"}))).await;
    assert_eq!(s, 400, "{b}");
    let (_, list) = company(&app, "GET", "/v1/connectors", None).await;
    assert_eq!(list["items"], json!([]), "nothing was stored");
    let (s, probe) = company(&app, "POST", "/v1/connectors/cards/test", None).await;
    assert_eq!(s, 200);
    assert!(
        probe["ok"].as_bool().unwrap() && probe["answer"].as_str().unwrap().starts_with("sandbox"),
        "{probe}"
    );
}

#[tokio::test]
async fn test_connection_shows_what_the_upstream_answers() {
    let app = spawn_app().await;
    let up = start_upstream();
    connect(&app, &up, 5_000).await;
    let (s, probe) = company(&app, "POST", "/v1/connectors/cards/test", None).await;
    assert_eq!(s, 200);
    assert_eq!(probe["ok"], true, "{probe}");
    assert_eq!(probe["status"], 200);
    assert!(probe["answer"].as_str().unwrap().contains("card-processor"), "{probe}");
    let (s, probe) = company(&app, "POST", "/v1/connectors/email/test", None).await;
    assert_eq!((s, probe["ok"].as_bool()), (200, Some(true)), "{probe}");
    // A wrong credential is the upstream's 401, shown; nothing is recorded.
    assert_eq!(
        company(&app, "PUT", "/v1/vault/secrets/upstream", Some(json!({"value": "wrong"}))).await.0,
        200
    );
    let (_, probe) = company(&app, "POST", "/v1/connectors/cards/test", None).await;
    assert_eq!((probe["ok"].as_bool(), probe["status"].as_u64()), (Some(false), Some(401)), "{probe}");
    assert!(up.records().await.is_empty());
}

#[tokio::test]
async fn upstream_failures_are_unavailable_with_the_hold_voided_never_a_500() {
    let app = spawn_app().await;
    let mut up = start_upstream();
    let (profile, key) = agent(&app).await;
    connect(&app, &up, 1_000).await;
    for (merchant, reason) in [
        ("test-slow-3000", "connector_timeout"),
        ("test-503", "connector_http_503"),
        ("test-overcharge", "connector_cost_above_hold"),
        ("test-negative", "connector_bad_cost"),
        ("test-malformed", "connector_bad_response"),
    ] {
        let (s, b) = charge(&app, &profile, &key, "10.00", merchant, None).await;
        assert_eq!(s, 503, "{merchant}: {b}");
        assert_eq!(
            (b["verdict"].as_str(), b["retryable"].as_bool()),
            (Some("unavailable"), Some(true)),
            "{b}"
        );
        assert_eq!(b["error"]["details"]["reason"], reason, "{merchant}: {b}");
        assert_eq!(
            pending_and_posted(&app, &profile, &key).await,
            ("0.00".into(), "0.00".into()),
            "{merchant}"
        );
    }
    // The connector error is recorded with its code.
    let (_, _, logs) = app.send("GET", &format!("/v1/users/{profile}/logs"), Some(&key), None, &[]).await;
    let reasons: Vec<&str> = logs["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "unavailable")
        .filter_map(|e| e["detail"]["reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), 5, "{logs}");
    assert!(reasons.contains(&"connector_cost_above_hold"));
    // An upstream that is gone is unavailable too.
    up.kill();
    let (s, b) = charge(&app, &profile, &key, "10.00", "acme", None).await;
    assert_eq!((s, b["error"]["details"]["reason"].as_str()), (503, Some("connector_unreachable")), "{b}");
    let (s, _, b) = app.send("GET", "/v1/logs/verify", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!((s, b["ok"].as_bool()), (200, Some(true)), "{b}");
}

/// The upstream did the charge after the gateway gave up waiting: the agent's resend with the
/// same Idempotency-Key reaches it as the same action, so it answers what it did instead of
/// charging again, and the ledger ends up agreeing with it.
#[tokio::test]
async fn a_resend_after_a_timeout_never_charges_twice() {
    let app = spawn_app().await;
    let up = start_upstream();
    let (profile, key) = agent(&app).await;
    connect(&app, &up, 300).await;
    let (s, b) = charge(&app, &profile, &key, "12.00", "test-slow-800", Some("order-17")).await;
    assert_eq!((s, b["error"]["details"]["reason"].as_str()), (503, Some("connector_timeout")), "{b}");
    // The upstream finishes the charge after the timeout.
    for _ in 0..100 {
        if !up.records().await.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(up.records().await.len(), 1);
    let (s, b) = charge(&app, &profile, &key, "12.00", "test-slow-800", Some("order-17")).await;
    assert_eq!(s, 200, "the resend is answered from the upstream's record at once: {b}");
    let records = up.records().await;
    assert_eq!(records.len(), 1, "charged once: {records:?}");
    assert_eq!(pending_and_posted(&app, &profile, &key).await, ("0.00".into(), "12.00".into()));
}

#[tokio::test]
async fn a_slow_upstream_holds_up_nobody_else() {
    let app = spawn_app().await;
    let up = start_upstream();
    let (profile, key) = agent(&app).await;
    connect(&app, &up, 20_000).await;
    let slow = {
        let (base, profile, key) = (app.base.clone(), profile.clone(), key.clone());
        tokio::spawn(async move {
            server::http_client()
                .post(format!("{base}/v1/users/{profile}/cards/charge"))
                .bearer_auth(key)
                .json(&json!({ "amount": "5.00", "merchant": "test-slow-5000" }))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    // Wait until the slow call holds its reservation, then run 64 others through the gateway
    // (32 to the same upstream, 32 on the sandbox) while it is in flight.
    while pending_and_posted(&app, &profile, &key).await.0 == "0.00" {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let others = (0..64).map(|i| {
        let (app, profile, key) = (&app, &profile, &key);
        async move {
            if i % 2 == 0 {
                charge(app, profile, key, "1.00", "acme", None).await.0
            } else {
                app.web_read(
                    &gateway::ProfileId::parse(profile).unwrap(),
                    key,
                    &format!("https://x.test/{i}"),
                )
                .await
                .0
            }
        }
    });
    let statuses = futures_util::future::join_all(others).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(!slow.is_finished(), "64 calls passed while the slow one was still in flight");
    let b = slow.await.unwrap();
    assert_eq!(b["connector"], "http", "{b}");
    assert_eq!(up.records().await.len(), 33);
    // $5 + 32 × $1 + 32 reads at 0.25¢.
    assert_eq!(pending_and_posted(&app, &profile, &key).await, ("0.00".into(), "37.08".into()));
}

async fn call_at(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = server::http_client()
        .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{base}{path}"))
        .bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
}

/// The real binary keeps its master key in a file it makes once (mode 0600); `server vault
/// rotate-master` re-wraps the vault and replaces the file, and the connector keeps working
/// after a restart; a server given another key refuses to start, with one line saying so.
#[tokio::test]
async fn the_master_key_is_made_once_rotated_without_breaking_connectors_and_never_replaced_silently() {
    use common::process::{command, start_keyed};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/k.db", dir.path().display());
    let key_file = dir.path().join("k.db.master-key");
    let up = start_upstream();

    let server = start_keyed(&db, None);
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    let first_key = std::fs::read_to_string(&key_file).unwrap();
    let b = server.base.clone();
    let (s, _) = call_at(
        &b,
        "PUT",
        "/v1/vault/secrets/upstream",
        COMPANY_KEY,
        Some(json!({"value": UPSTREAM_SECRET})),
    )
    .await;
    assert_eq!(s, 201);
    let spec = json!({"kind": "http", "url": format!("{}/cards/charge", up.base), "auth": {"kind": "bearer", "secret": "upstream"}});
    assert_eq!(call_at(&b, "PUT", "/v1/connectors/cards", COMPANY_KEY, Some(spec)).await.0, 200);
    let kit = json!({"name": KIT, "primitives": ["cards"], "limits": {"budget": {"hard_cap": "500"}}});
    assert_eq!(call_at(&b, "PUT", &format!("/v1/kits/{KIT}"), COMPANY_KEY, Some(kit)).await.0, 201);
    let (_, p) =
        call_at(&b, "POST", "/v1/agent-profiles", COMPANY_KEY, Some(json!({"name": "buyer", "kit": KIT})))
            .await;
    let profile = p["id"].as_str().unwrap().to_string();
    let (_, k) = call_at(&b, "POST", &format!("/v1/agent-profiles/{profile}/keys"), COMPANY_KEY, None).await;
    let key = k["secret"].as_str().unwrap().to_string();
    let charge_path = format!("/v1/users/{profile}/cards/charge");
    let one = json!({"amount": "3.00", "merchant": "acme"});
    let (s, r) = call_at(&b, "POST", &charge_path, &key, Some(one.clone())).await;
    assert_eq!((s, r["connector"].as_str()), (200, Some("http")), "{r}");
    server.kill();

    let out = command(&db, 0).args(["vault", "rotate-master"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said} {}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("1 tenant data key(s) re-wrapped") && said.contains("now holds the new key"),
        "{said}"
    );
    let second_key = std::fs::read_to_string(&key_file).unwrap();
    assert_ne!(first_key, second_key);
    assert!(!said.contains(second_key.trim()), "a key kept in its file is not printed");

    let server = start_keyed(&db, None);
    let (s, r) = call_at(&server.base, "POST", &charge_path, &key, Some(one)).await;
    assert_eq!((s, r["connector"].as_str()), (200, Some("http")), "after rotation: {r}");
    assert_eq!(up.records().await.len(), 2);
    server.kill();

    let out = command(&db, 0).env("NAIVE_MASTER_KEY", first_key.trim()).output().unwrap();
    assert!(!out.status.success(), "the old key is refused");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("error: the master key (mk_") && lines[0].contains("NAIVE_MASTER_KEY"),
        "{err}"
    );
}

/// `make run`'s wiring: the server starts the reference upstream as its own process and runs
/// the demo tenant's cards and email on it, and its tracker app, with a credential only the
/// vault holds.
#[tokio::test]
async fn the_demo_runs_its_cards_and_email_on_the_reference_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/demo.db", dir.path().display());
    let mut c = common::process::command(&db, 0);
    c.env("NAIVE_MASTER_KEY", common::MASTER_KEY).env("NAIVE_DEMO_UPSTREAM", "1");
    let server = common::process::spawn(c);
    let b = server.base.clone();
    let (s, list) = call_at(&b, "GET", "/v1/connectors", COMPANY_KEY, None).await;
    assert_eq!(s, 200);
    let targets: Vec<(&str, &str)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["target"].as_str().unwrap(), r["connector"]["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(targets, [("cards", "http"), ("email", "http")], "{list}");
    let (s, probe) = call_at(&b, "POST", "/v1/connectors/cards/test", COMPANY_KEY, None).await;
    assert_eq!((s, probe["ok"].as_bool()), (200, Some(true)), "{probe}");
    // Its MCP tracker is connected as the `tracker` toolkit, and lists its tools.
    let (s, probe) = call_at(&b, "POST", "/v1/connected-apps/tracker/test", COMPANY_KEY, None).await;
    assert_eq!((s, probe["tools"].as_array().map(Vec::len)), (200, Some(4)), "{probe}");
    let kit =
        json!({"name": KIT, "primitives": ["cards", "email"], "limits": {"budget": {"hard_cap": "100"}}});
    assert_eq!(call_at(&b, "PUT", &format!("/v1/kits/{KIT}"), COMPANY_KEY, Some(kit)).await.0, 201);
    let (_, p) =
        call_at(&b, "POST", "/v1/agent-profiles", COMPANY_KEY, Some(json!({"name": "d", "kit": KIT}))).await;
    let profile = p["id"].as_str().unwrap().to_string();
    let (_, k) = call_at(&b, "POST", &format!("/v1/agent-profiles/{profile}/keys"), COMPANY_KEY, None).await;
    let key = k["secret"].as_str().unwrap().to_string();
    let (s, r) = call_at(
        &b,
        "POST",
        &format!("/v1/users/{profile}/email/send"),
        &key,
        Some(json!({"to": "ops@x.test", "subject": "from the demo"})),
    )
    .await;
    assert_eq!((s, r["connector"].as_str()), (200, Some("http")), "{r}");
    assert!(r["result"]["message_id"].as_str().unwrap().starts_with("msg_"), "{r}");
    drop(server);
}
