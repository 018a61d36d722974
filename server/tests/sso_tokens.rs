//! The ID token's checks, black-box: the real server signs people in through a provider the
//! test plays as an attacker would (discovery, keys and a token endpoint that hands out the ID
//! token the test made). A token for another client, expired, from another issuer, signed by
//! a key the provider does not publish, with `alg: none`, as an HMAC keyed with the provider's
//! public key, or with another sign-in's nonce is refused with a page, and nothing is created.
//! The provider's key rotation is picked up; a flood of unknown key ids fetches the keys at
//! most once per gap.

mod common;

use common::token_idp::{KEY, OTHER_KEY, ROTATED_KEY, Shared, claims, jwt, key, rs256, start_hostile};
use common::{COMPANY_KEY, TestApp, spawn_app};
use openidconnect::PrivateSigningKey;
use serde_json::json;

/// Starts a sign-in: its state, its nonce and the browser's flight cookie.
async fn begin(app: &TestApp) -> (String, String, String) {
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let res = app.raw_client().get(format!("{}/login/sso/{tenant}", app.base)).send().await.unwrap();
    assert_eq!(res.status(), 303);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let to = url::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
    let q = |k: &str| to.query_pairs().find(|(n, _)| n == k).unwrap().1.to_string();
    (q("state"), q("nonce"), cookie)
}

/// Finishes a sign-in with the token the provider hands out: the status and the page.
async fn finish(app: &TestApp, h: &Shared, (state, cookie): (&str, &str), token: String) -> (u16, String) {
    h.lock().unwrap().next_token = Some(token);
    let res = app
        .raw_client()
        .get(format!("{}/login/sso/callback?code=c&state={state}", app.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn app_with_hostile() -> (TestApp, Shared) {
    let app = spawn_app().await;
    let h = start_hostile().await;
    let issuer = h.lock().unwrap().issuer.clone();
    let res = app
        .client
        .put(format!("{}/v1/sso/oidc", app.base))
        .bearer_auth(COMPANY_KEY)
        .json(&json!({ "issuer": issuer, "client_id": "naive", "client_secret": "s3cret",
                       "mapping": [{ "group": "reviewers", "roles": ["reviewer"] }], "create_users": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    (app, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_foreign_id_tokens_are_refused_and_create_nothing() {
    let (app, h) = app_with_hostile().await;
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let issuer = h.lock().unwrap().issuer.clone();
    let users = app.gateway.users(&tenant).await.unwrap().len();
    let k1 = key(KEY, "k1");
    let public_n = serde_json::to_value(k1.as_verification_key()).unwrap()["n"].as_str().unwrap().to_string();
    type Forge = Box<dyn Fn(&str, &str) -> String>;
    let (iss, k) = (issuer.clone(), key(KEY, "k1"));
    let (iss2, other) = (issuer.clone(), key(OTHER_KEY, "k1"));
    let (iss3, iss4, iss5, iss6, iss7) =
        (issuer.clone(), issuer.clone(), issuer.clone(), issuer.clone(), issuer.clone());
    let (ka, kb, kc) = (key(KEY, "k1"), key(KEY, "k1"), key(KEY, "k1"));
    let cases: Vec<(&str, Forge, &str)> = vec![
        (
            "another client",
            Box::new(move |_, n| {
                let mut c = claims(&iss, n, "eve");
                c["aud"] = json!("someone-else");
                rs256(&k, "k1", &c)
            }),
            "another client",
        ),
        (
            "expired",
            Box::new(move |_, n| {
                let mut c = claims(&iss3, n, "eve");
                c["exp"] = json!(chrono::Utc::now().timestamp() - 600);
                rs256(&ka, "k1", &c)
            }),
            "expired",
        ),
        (
            "another issuer",
            Box::new(move |_, n| {
                let mut c = claims(&iss4, n, "eve");
                c["iss"] = json!("https://evil.example");
                rs256(&kb, "k1", &c)
            }),
            "another issuer",
        ),
        (
            "another key, the published kid",
            Box::new(move |_, n| rs256(&other, "k1", &claims(&iss2, n, "eve"))),
            "signature",
        ),
        (
            "alg none",
            Box::new(move |_, n| {
                jwt(json!({ "alg": "none", "typ": "JWT" }), &claims(&iss5, n, "eve"), |_| Vec::new())
            }),
            "ID token",
        ),
        (
            "HMAC keyed with the public key",
            Box::new(move |_, n| {
                use hmac::Mac;
                let n_bytes = public_n.clone();
                jwt(
                    json!({ "alg": "HS256", "typ": "JWT", "kid": "k1" }),
                    &claims(&iss6, n, "eve"),
                    move |m| {
                        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(n_bytes.as_bytes()).unwrap();
                        mac.update(m);
                        mac.finalize().into_bytes().to_vec()
                    },
                )
            }),
            "ID token",
        ),
        (
            "another sign-in's nonce",
            Box::new(move |_, _| rs256(&kc, "k1", &claims(&iss7, "an-old-nonce", "eve"))),
            "nonce",
        ),
    ];
    for (what, forge, says) in cases {
        let (state, nonce, cookie) = begin(&app).await;
        let (status, page) = finish(&app, &h, (&state, &cookie), forge(&state, &nonce)).await;
        assert_eq!(status, 403, "{what}: {page}");
        assert!(page.contains(says), "{what}: {page}");
        assert_eq!(app.gateway.users(&tenant).await.unwrap().len(), users, "{what}: nothing created");
    }
    // A callback that names another issuer (RFC 9207 `iss`): refused before the code is sent.
    let (state, nonce, cookie) = begin(&app).await;
    h.lock().unwrap().next_token = Some(rs256(&k1, "k1", &claims(&issuer, &nonce, "eve")));
    let res = app
        .raw_client()
        .get(format!("{}/login/sso/callback?code=c&state={state}&iss=https%3A%2F%2Fevil.example", app.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert!(res.text().await.unwrap().contains("another issuer"));
    h.lock().unwrap().next_token = None;
    // The same harness with an honest token signs in: the refusals above were the tokens'.
    let (state, nonce, cookie) = begin(&app).await;
    let (status, page) =
        finish(&app, &h, (&state, &cookie), rs256(&k1, "k1", &claims(&issuer, &nonce, "eve"))).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(app.gateway.users(&tenant).await.unwrap().len(), users + 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_once_and_unknown_key_ids_cost_one_fetch_per_gap() {
    let (app, h) = app_with_hostile().await;
    let issuer = h.lock().unwrap().issuer.clone();
    let (k1, k2) = (key(KEY, "k1"), key(ROTATED_KEY, "k2"));
    let (state, nonce, cookie) = begin(&app).await;
    assert_eq!(
        finish(&app, &h, (&state, &cookie), rs256(&k1, "k1", &claims(&issuer, &nonce, "ann"))).await.0,
        200
    );
    let reads = h.lock().unwrap().jwks_reads;

    // A flood of made-up key ids: refused, and at most one read of the keys per gap (none at
    // all at this machine's usual speed, where the flood takes a second).
    let flood = std::time::Instant::now();
    for i in 0..20 {
        let (state, nonce, cookie) = begin(&app).await;
        let t = rs256(&k1, &format!("made-up-{i}"), &claims(&issuer, &nonce, "ann"));
        assert_eq!(finish(&app, &h, (&state, &cookie), t).await.0, 403);
    }
    let gaps =
        (flood.elapsed().as_secs_f64() / gateway::delivery::oidc::JWKS_REFETCH_GAP.as_secs_f64()).ceil();
    let extra = h.lock().unwrap().jwks_reads - reads;
    assert!(extra as f64 <= gaps, "{extra} fetches in {gaps} gaps");
    let reads = h.lock().unwrap().jwks_reads;

    // The provider rotates to k2; past the gap, the first token signed with it refetches once.
    h.lock().unwrap().jwks = json!({ "keys": [k2.as_verification_key()] });
    tokio::time::sleep(gateway::delivery::oidc::JWKS_REFETCH_GAP).await;
    for _ in 0..3 {
        let (state, nonce, cookie) = begin(&app).await;
        let t = rs256(&k2, "k2", &claims(&issuer, &nonce, "ann"));
        let (status, page) = finish(&app, &h, (&state, &cookie), t).await;
        assert_eq!(status, 200, "{page}");
    }
    assert_eq!(h.lock().unwrap().jwks_reads, reads + 1, "one fetch for the rotation");
    app.stop().await;
}
