//! Egress, black-box (#30 finding 1): the real server on a fresh database, as a hostile tenant
//! admin would try it. Every URL a tenant configures (a connector, a connected app, the team
//! runtime, a webhook endpoint, a log stream) is refused when it points into the operator's network, in
//! every spelling, unless the operator allowed it (`--egress-allow`); a name that resolves
//! there is refused when it is saved, and again when it is called; and a test probe shows a
//! short excerpt only. Every target is on loopback: nothing here reaches another address.

mod common;

use common::process::{UPSTREAM_SECRET, start_upstream};
use common::{COMPANY_KEY, TestApp, config, spawn_with};
use serde_json::{Value, json};

async fn company(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (s, _, b) = app.send(method, path, Some(COMPANY_KEY), body, &[]).await;
    (s, b)
}

/// The server on `db`, with `allow` as its egress allowance.
async fn server_on(db: &str, allow: &[&str]) -> TestApp {
    let mut c = config(db);
    c.egress_allow = allow.iter().map(|a| a.to_string()).collect();
    spawn_with(c).await
}

/// Every way the reviewers reached the gateway itself, and the other internal ranges.
fn inside(port: u16) -> Vec<String> {
    [
        "127.0.0.1",
        "localhost",
        "127.1",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "[::1]",
        "2130706433",
        "169.254.169.254",
        "10.1.2.3",
        "100.64.0.1",
        "[fd00::1]",
    ]
    .iter()
    .map(|h| format!("http://{h}:{port}/"))
    .collect()
}

/// The five kinds of target, each set to `url`: the status and the body of each answer.
async fn configure_all(app: &TestApp, url: &str) -> Vec<(&'static str, u16, Value)> {
    let connector = json!({"kind": "http", "url": url});
    let (a, ab) = company(app, "PUT", "/v1/connectors/web.read", Some(connector)).await;
    let (b, bb) = company(app, "PUT", "/v1/connected-apps/probe", Some(json!({"url": url}))).await;
    let runtime = json!({"url": url, "secret": "rt_shared_secret_0123456789"});
    let (c, cb) = company(app, "PUT", "/v1/runtime", Some(runtime)).await;
    let hook = json!({"url": url, "events": ["approval.parked"]});
    let (d, db) = company(app, "POST", "/v1/webhooks", Some(hook)).await;
    let (e, eb) = company(app, "POST", "/v1/streams", Some(json!({"url": url}))).await;
    vec![
        ("connector", a, ab),
        ("connected app", b, bb),
        ("runtime", c, cb),
        ("webhook", d, db),
        ("log stream", e, eb),
    ]
}

#[tokio::test]
async fn every_internal_spelling_is_refused_for_every_kind_of_target() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let app = server_on(&db, &[]).await;
    let port: u16 = app.base.rsplit(':').next().unwrap().parse().unwrap();
    for url in inside(port) {
        for (kind, status, body) in configure_all(&app, &url).await {
            assert_eq!(
                (status, body["code"].as_str()),
                (400, Some("egress_refused")),
                "{kind} at {url}: {body}"
            );
        }
    }
    // Nothing was stored: every target still runs where it did.
    let (_, connectors) = company(&app, "GET", "/v1/connectors", None).await;
    assert_eq!(connectors["items"], json!([]), "{connectors}");
    let (_, hooks) = company(&app, "GET", "/v1/webhooks", None).await;
    assert_eq!(hooks["items"], json!([]), "{hooks}");
    let (_, streams) = company(&app, "GET", "/v1/streams", None).await;
    assert_eq!(streams["items"], json!([]), "{streams}");
    let (s, _) = company(&app, "GET", "/v1/runtime", None).await;
    assert_eq!(s, 404, "no runtime registered");
}

/// Stores the upstream's credential and points `cards` at `url`.
async fn connect_cards(app: &TestApp, url: &str) -> (u16, Value) {
    let (s, b) =
        company(app, "PUT", "/v1/vault/secrets/upstream", Some(json!({ "value": UPSTREAM_SECRET }))).await;
    assert!(s == 200 || s == 201, "{s} {b}");
    let spec = json!({"kind": "http", "url": url, "auth": {"kind": "bearer", "secret": "upstream"}});
    company(app, "PUT", "/v1/connectors/cards", Some(spec)).await
}

async fn charge(app: &TestApp, profile: &str, key: &str) -> (u16, Value) {
    let body = json!({ "amount": "5.00", "merchant": "acme" });
    let (s, _, b) =
        app.send("POST", &format!("/v1/users/{profile}/cards/charge"), Some(key), Some(body), &[]).await;
    (s, b)
}

/// The operator allowed the reference upstream; a connector set to it by name and one by
/// address work. Started again without the allowance, the same settings are refused when
/// called, not only when saved: the name resolves to loopback, the address is loopback, and
/// neither call reaches the upstream.
#[tokio::test]
async fn a_name_or_address_inside_is_refused_when_called_even_after_it_was_saved() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let up = start_upstream();
    let up_port = up.base.rsplit(':').next().unwrap().to_string();
    let allowed = format!("127.0.0.1:{up_port}");
    let app = server_on(&db, &[&allowed]).await;
    app.put_kit(
        json!({"name": "Ops", "primitives": ["cards", "email"], "limits": {"budget": {"hard_cap": "500"}}}),
    )
    .await;
    let (profile, _, key) = app.new_agent("buyer", "Ops", None).await;
    let by_name = format!("http://localhost:{up_port}/cards/charge");
    let (s, b) = connect_cards(&app, &by_name).await;
    assert_eq!(s, 200, "the allowance covers what localhost resolves to: {b}");
    let by_address = json!({"kind": "http", "url": format!("{}/mail/send", up.base), "auth": {"kind": "hmac", "secret": "upstream"}});
    assert_eq!(company(&app, "PUT", "/v1/connectors/email", Some(by_address)).await.0, 200);
    let (s, b) = charge(&app, &profile, &key).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(up.records().await.len(), 1);
    app.stop().await;

    let app = server_on(&db, &[]).await;
    let (s, b) = charge(&app, &profile, &key).await;
    assert_eq!((s, b["verdict"].as_str()), (503, Some("unavailable")), "{b}");
    assert_eq!(b["error"]["details"]["reason"], "egress_refused", "{b}");
    let mail = json!({"to": "ops@x.test", "subject": "hi"});
    let (s, _, b) =
        app.send("POST", &format!("/v1/users/{profile}/email/send"), Some(&key), Some(mail), &[]).await;
    assert_eq!((s, b["error"]["details"]["reason"].as_str()), (503, Some("egress_refused")), "{b}");
    let (s, probe) = company(&app, "POST", "/v1/connectors/cards/test", None).await;
    assert_eq!(s, 200, "{probe}");
    assert_eq!((probe["ok"].as_bool(), probe["status"].as_u64()), (Some(false), None), "{probe}");
    assert_eq!(probe["answer"], "egress_refused", "{probe}");
    assert_eq!(up.records().await.len(), 1, "nothing reached the upstream");
    assert_balance_untouched(&app, &profile, &key).await;
}

/// A refused call voided its hold: nothing pending, only the first charge posted.
async fn assert_balance_untouched(app: &TestApp, profile: &str, key: &str) {
    let (s, _, b) = app.send("GET", &format!("/v1/users/{profile}/budget"), Some(key), None, &[]).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (b["totals"]["pending"].as_str(), b["totals"]["posted"].as_str()),
        (Some("0.00"), Some("5.00"))
    );
}
