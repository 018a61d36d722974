//! Notifications end to end: the real server binary and the reference webhook receiver
//! (`server webhook-receiver`) as separate processes, on the engine under test. Events reach
//! the endpoints that want them through the outbox, signed the Standard Webhooks way, once
//! each however often the endpoint fails first, and a dead letter after the attempt limit.

mod common;

use std::time::Duration;

use common::COMPANY_KEY;
use common::process::{Receiver, approver_token, call, start_fresh, start_receiver};
use serde_json::{Value, json};

async fn send(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    call(base, method, path, key, body, None).await
}

/// Registers the receiver for `events`; (endpoint id, secret).
async fn subscribe(base: &str, receiver: &Receiver, events: &[&str]) -> (String, String) {
    let body = json!({"url": format!("{}/hook", receiver.base), "events": events});
    let (s, b) = send(base, "POST", "/v1/webhooks", COMPANY_KEY, Some(body)).await;
    assert_eq!(s, 201, "{b}");
    (b["endpoint"]["id"].as_str().unwrap().to_string(), b["secret"].as_str().unwrap().to_string())
}

/// An agent whose charges above $50 park: (profile, key).
async fn parking_agent(base: &str) -> (String, String) {
    let kit = json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "50"}}});
    let (s, b) = send(base, "PUT", "/v1/kits/Parks", COMPANY_KEY, Some(kit)).await;
    assert_eq!(s, 201, "{b}");
    let (_, p) = send(
        base,
        "POST",
        "/v1/agent-profiles",
        COMPANY_KEY,
        Some(json!({"name": "parker", "kit": "Parks"})),
    )
    .await;
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), COMPANY_KEY, None).await;
    (id, k["secret"].as_str().unwrap().to_string())
}

/// Waits until the receiver has answered 200 to `n` messages; every request it got.
async fn until_delivered(receiver: &Receiver, n: usize) -> Vec<Value> {
    for _ in 0..600 {
        let got = receiver.received().await;
        if got.iter().filter(|r| r["answered"] == 200).count() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the receiver never got {n} messages: {:?}", receiver.received().await);
}

/// Waits until the gateway lists `n` deliveries none of which is still queued; the list.
async fn until_settled(base: &str, n: usize) -> Value {
    for _ in 0..600 {
        let (_, list) = send(base, "GET", "/v1/webhooks/deliveries", COMPANY_KEY, None).await;
        let items = list["items"].as_array().unwrap();
        if items.len() >= n && items.iter().all(|d| d["status"] != "queued") {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the gateway never settled {n} deliveries");
}

/// #15: an endpoint that answers 500 twice and then 200 gets each event once, signed; the
/// parked approval's message links to that item in the inbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_failing_twice_gets_each_event_once_signed_with_a_link() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    let receiver = start_receiver(&["--fail-first", "2"]);
    let (endpoint, secret) = subscribe(base, &receiver, &["approval.parked", "approval.decided"]).await;
    receiver.set_secret(&secret).await;
    let (profile, key) = parking_agent(base).await;
    let charge = json!({"amount": "60.00", "merchant": "acme"});
    let (st, parked) =
        send(base, "POST", &format!("/v1/users/{profile}/cards/charge"), &key, Some(charge)).await;
    assert_eq!(st, 202, "{parked}");
    let approval = parked["recovery"][0]["approval_id"].as_str().unwrap().to_string();
    let token = approver_token(base).await;
    let (st, b) =
        send(base, "POST", &format!("/v1/approvals/{approval}/approve"), &token, Some(json!({}))).await;
    assert_eq!(st, 200, "{b}");

    let got = until_delivered(&receiver, 2).await;
    let bodies: Vec<Value> = got
        .iter()
        .filter(|r| r["answered"] == 200)
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        bodies.iter().map(|b| b["type"].as_str().unwrap()).collect::<Vec<_>>(),
        ["approval.parked", "approval.decided"]
    );
    assert_eq!(bodies[0]["data"]["approval_id"], approval.as_str());
    assert_eq!(bodies[0]["data"]["link"], format!("{base}/?approval={approval}"));
    assert_eq!(bodies[1]["data"]["decision"], "approved");
    for id in got.iter().map(|r| r["webhook_id"].as_str().unwrap()).collect::<std::collections::BTreeSet<_>>()
    {
        let tries: Vec<i64> =
            got.iter().filter(|r| r["webhook_id"] == id).map(|r| r["answered"].as_i64().unwrap()).collect();
        assert_eq!(tries, [500, 500, 200], "message {id} is delivered once, after two failures");
    }
    assert!(got.iter().all(|r| r["verified"] == true), "every delivery verifies: {got:?}");
    // The receiver records a request before it answers, so the gateway may not have marked
    // the last attempt yet: wait until it has.
    let list = until_settled(base, 2).await;
    for d in list["items"].as_array().unwrap() {
        assert_eq!(
            (d["status"].clone(), d["attempts"].clone(), d["endpoint_id"].clone()),
            (json!("delivered"), json!(2), json!(endpoint)),
            "{d}"
        );
    }
    // Nothing shows the secret again, and the vault keeps it while the endpoint uses it.
    let (_, hooks) = send(base, "GET", "/v1/webhooks", COMPANY_KEY, None).await;
    assert!(!hooks.to_string().contains("whsec_"), "{hooks}");
    let name = hooks["items"][0]["secret_name"].as_str().unwrap().to_string();
    let (st, b) = send(base, "DELETE", &format!("/v1/vault/secrets/{name}"), COMPANY_KEY, None).await;
    assert_eq!((st, b["code"].clone()), (409, json!("secret_in_use")), "{b}");
    // A test event shows the endpoint's answer, here its first failure.
    let (st, probe) = send(base, "POST", &format!("/v1/webhooks/{endpoint}/test"), COMPANY_KEY, None).await;
    assert_eq!(
        (st, probe["ok"].clone(), probe["status"].clone()),
        (200, json!(false), json!(500)),
        "{probe}"
    );
    assert!(probe["answer"].as_str().unwrap().contains("failing on purpose"));
}

/// After the attempt limit a message is a dead letter, listed as one, and can be queued again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_never_answers_ends_in_a_dead_letter() {
    let s = start_fresh(&[("NAIVE_OUTBOX_MAX_ATTEMPTS", "2")]).await;
    let base = &s.server.base;
    let receiver = start_receiver(&["--always-fail"]);
    subscribe(base, &receiver, &["profile.revoked"]).await;
    let (profile, _) = parking_agent(base).await;
    let (st, b) = send(
        base,
        "POST",
        &format!("/v1/agent-profiles/{profile}/revoke"),
        COMPANY_KEY,
        Some(json!({"reason": "test"})),
    )
    .await;
    assert_eq!(st, 200, "{b}");
    let mut dead = Value::Null;
    for _ in 0..300 {
        let (_, list) = send(base, "GET", "/v1/webhooks/deliveries?status=dead", COMPANY_KEY, None).await;
        if let Some(d) = list["items"].as_array().and_then(|a| a.first()) {
            dead = d.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        (dead["event"].clone(), dead["attempts"].clone()),
        (json!("profile.revoked"), json!(2)),
        "{dead}"
    );
    assert_eq!(dead["last_error"], "webhook_http_500");
    assert_eq!(receiver.received().await.len(), 2, "two attempts, then no more");
    let id = dead["message_id"].as_str().unwrap();
    let (st, again) =
        send(base, "POST", &format!("/v1/webhooks/deliveries/{id}/retry"), COMPANY_KEY, None).await;
    assert_eq!((st, again["status"].clone()), (200, json!("queued")), "{again}");
}

/// Registration refuses what cannot work, with codes that say what to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_refuses_unknown_events_and_bad_urls() {
    let s = start_fresh(&[]).await;
    let base = &s.server.base;
    for (body, code) in [
        (json!({"url": "http://hooks.example.com/", "events": ["approval.maybe"]}), "unknown_event"),
        (json!({"url": "http://hooks.example.com/", "events": []}), "no_events"),
        (json!({"url": "mailto:x@example.com", "events": ["approval.parked"]}), "invalid_webhook_url"),
    ] {
        let (st, b) = send(base, "POST", "/v1/webhooks", COMPANY_KEY, Some(body)).await;
        assert_eq!((st, b["code"].clone()), (400, json!(code)), "{b}");
    }
    let (_, hooks) = send(base, "GET", "/v1/webhooks", COMPANY_KEY, None).await;
    assert_eq!(hooks["items"], json!([]));
}

/// #30 finding 7: a webhook's signing secret is shown once, a resend of its creation included;
/// the endpoint cap holds under concurrent creations; an event list names each event once;
/// and removing an endpoint keeps its secret while a connector uses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_shown_once_and_the_caps_hold_under_concurrency() {
    let app = common::spawn_app().await;
    let receiver = start_receiver(&[]);
    let url = format!("{}/hook", receiver.base);
    let body = json!({"url": url, "events": ["approval.parked"]});
    let headers = [("idempotency-key", "hook-once")];
    let (s, _, first) =
        app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(body.clone()), &headers).await;
    assert_eq!(s, 201, "{first}");
    assert!(first["secret"].as_str().unwrap().starts_with("whsec_"), "{first}");
    let (s, h, again) =
        app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(body.clone()), &headers).await;
    assert_eq!((s, h.get("idempotent-replayed").map(|v| v.to_str().unwrap())), (201, Some("true")));
    assert_eq!((&again["secret"], &again["secret_withheld"]), (&Value::Null, &json!(true)), "{again}");
    assert_eq!(again["endpoint"]["id"], first["endpoint"]["id"]);
    let stored: Vec<(Vec<u8>,)> =
        app.gateway.store().all("SELECT body FROM request_idempotency", &[]).await.unwrap();
    assert!(
        !stored.is_empty() && stored.iter().all(|(b,)| !String::from_utf8_lossy(b).contains("whsec_")),
        "the secret is kept nowhere in clear"
    );

    let twice = json!({"url": url, "events": ["approval.parked", "approval.parked"]});
    let (s, _, b) = app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(twice), &[]).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("duplicate_event")), "{b}");

    // 40 creations at once against a cap of 20 (one exists): 19 more are made.
    let creations: Vec<_> = (0..40)
        .map(|_| {
            let (client, base, body) = (app.client.clone(), app.base.clone(), body.clone());
            tokio::spawn(async move {
                let r = client
                    .post(format!("{base}/v1/webhooks"))
                    .bearer_auth(COMPANY_KEY)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                r.status().as_u16()
            })
        })
        .collect();
    let mut made = 0;
    for c in creations {
        match c.await.unwrap() {
            201 => made += 1,
            409 => {}
            other => panic!("a creation answered {other}"),
        }
    }
    assert_eq!(made, gateway::delivery::webhooks::MAX_ENDPOINTS - 1);
    let (_, _, list) = app.send("GET", "/v1/webhooks", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(list["items"].as_array().unwrap().len(), gateway::delivery::webhooks::MAX_ENDPOINTS);

    // An admin points a connector at the first endpoint's signing secret: removing the
    // endpoint is refused while it does, and the secret stays.
    let id = first["endpoint"]["id"].as_str().unwrap();
    let secret_name = first["endpoint"]["secret_name"].as_str().unwrap();
    let spec = json!({"kind": "http", "url": "https://processor.example.com/", "auth": {"kind": "bearer", "secret": secret_name}});
    let (s, _, b) = app.send("PUT", "/v1/connectors/cards", Some(COMPANY_KEY), Some(spec), &[]).await;
    assert_eq!(s, 200, "{b}");
    let (s, _, b) = app.send("DELETE", &format!("/v1/webhooks/{id}"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!((s, b["code"].as_str()), (409, Some("secret_in_use")), "{b}");
    let (s, _, _) =
        app.send("GET", &format!("/v1/vault/secrets/{secret_name}"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200, "the secret stays");
    let (s, _, _) = app
        .send("PUT", "/v1/connectors/cards", Some(COMPANY_KEY), Some(json!({"kind": "sandbox"})), &[])
        .await;
    assert_eq!(s, 200);
    let (s, _, b) = app.send("DELETE", &format!("/v1/webhooks/{id}"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 204, "{b}");
    let (s, _, _) =
        app.send("GET", &format!("/v1/vault/secrets/{secret_name}"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 404, "its secret went with it");
}
