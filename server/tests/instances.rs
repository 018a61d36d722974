//! Two server processes on one database, as a deployment with several instances runs them.
//! Each caches valid keys in its own memory; a change made through one instance reaches the
//! other's caches through their bounded age (`gateway::cache::MAX_AGE`) at the latest.

mod common;

use std::time::{Duration, Instant};

use common::COMPANY_KEY;
use common::process::{start, wait_until_listening};
use serde_json::{Value, json};

async fn post(c: &reqwest::Client, url: String, key: &str, body: Value) -> (u16, Value) {
    let r = c.post(url).bearer_auth(key).json(&body).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_revoked_on_one_instance_is_refused_by_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/shared.db", dir.path().display());
    let a = start(&db, 0);
    wait_until_listening(&a.base).await;
    let b = start(&db, 0);
    wait_until_listening(&b.base).await;
    let c = reqwest::Client::new();

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
        let (s, _) = post(&c, read(&b.base), secret, json!({"url": "https://example.test/b"})).await;
        if s == 401 {
            break;
        }
        assert_eq!(s, 200);
        assert!(revoked.elapsed() < Duration::from_secs(30), "B still accepts a key A revoked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    a.kill();
    b.kill();
}
