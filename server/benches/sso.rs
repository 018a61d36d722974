//! Single sign-on's cost on this machine (issue #49), on the path production takes: the real
//! application on port 0 (SQLite), a provider in-process that signs an honest RS256 ID token
//! for each sign-in (`tests/common/token_idp.rs`), and an HTTP client playing the browser.
//!
//! Prints, for N sign-ins: the callback's time p50/p90/p99 (the code exchange at the provider's
//! token endpoint, which only hands out a token signed before the callback, so the provider's
//! own time is outside it; the ID token's checks; the sign-in's transaction), the provider's
//! signing time apart, a password sign-in (argon2id) for scale, and how many times the keys
//! were fetched during the timed sign-ins (target: none while cached).
//!
//!   cargo bench -p server --bench sso [-- --sign-ins 500]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::token_idp::{KEY, claims, key, rs256, start_hostile};
use common::{ADMIN_PASSWORD, COMPANY_KEY, spawn_app};
use serde_json::json;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn line(what: &str, mut v: Vec<Duration>) -> f64 {
    v.sort();
    let p50 = pct(&v, 0.5);
    println!("{what:<44} p50 {p50:7.2} ms   p90 {:7.2} ms   p99 {:7.2} ms", pct(&v, 0.9), pct(&v, 0.99));
    p50
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize =
        std::env::args().skip_while(|a| a != "--sign-ins").nth(1).and_then(|v| v.parse().ok()).unwrap_or(300);
    let app = spawn_app().await;
    let idp = start_hostile().await;
    let issuer = idp.lock().unwrap().issuer.clone();
    let res = app
        .client
        .put(format!("{}/v1/sso/oidc", app.base))
        .bearer_auth(COMPANY_KEY)
        .json(&json!({ "issuer": issuer, "client_id": "naive", "client_secret": "s3cret",
                       "mapping": [{ "group": "reviewers", "roles": ["reviewer"] }], "create_users": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let signer = key(KEY, "k1");
    let raw = app.raw_client();
    let (mut callback, mut provider) = (Vec::new(), Vec::new());
    let mut fetches_before = 0;
    for i in 0..n + 20 {
        if i == 20 {
            fetches_before = app.gateway.oidc_key_fetches();
        }
        let res = raw.get(format!("{}/login/sso/{tenant}", app.base)).send().await.unwrap();
        let cookie = res.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
        let to = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
        let q = |k: &str| to.query_pairs().find(|(n, _)| n == k).unwrap().1.to_string();
        // The provider's own time: signing the token (its token endpoint only hands it out).
        let signing = Instant::now();
        let token = rs256(&signer, "k1", &claims(&issuer, &q("nonce"), &format!("person{}", i % 50)));
        let signed = signing.elapsed();
        idp.lock().unwrap().next_token = Some(token);
        let t = Instant::now();
        let res = raw
            .get(format!("{}/login/sso/callback?code=c&state={}", app.base, q("state")))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        let took = t.elapsed();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
        if i >= 20 {
            callback.push(took);
            provider.push(signed);
        }
    }
    let fetches = app.gateway.oidc_key_fetches() - fetches_before;
    let mut password = Vec::new();
    for _ in 0..n.min(100) {
        let t = Instant::now();
        let res = raw
            .post(format!("{}/login", app.base))
            .form(&[("username", "admin"), ("password", ADMIN_PASSWORD)])
            .send()
            .await
            .unwrap();
        password.push(t.elapsed());
        assert_eq!(res.status(), 303);
    }
    println!("single sign-on, {n} sign-ins after 20 to warm up (one SQLite file, two cores)");
    line("callback: exchange, ID token checks, session", callback);
    println!("  (target: at most 20 ms p50; the provider signed each token before, not inside it)");
    line("the provider signing one token (RS256)", provider);
    line("password sign-in (argon2id), for scale", password);
    println!("key fetches during the timed sign-ins: {fetches} (target: 0 while cached)");
    app.stop().await;
}
