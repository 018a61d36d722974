//! An OpenID provider that hands out the ID token a test or benchmark made: discovery, keys
//! and a token endpoint, in-process. The tests play an attacker with it (tokens forged every
//! way); the benchmark signs honest tokens with it, so the provider's own time is known.
#![allow(dead_code, reason = "the tests and the benchmark each use a part")]

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use openidconnect::core::{CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey};
use openidconnect::{JsonWebKeyId, PrivateSigningKey};
use serde_json::{Value, json};

pub const KEY: &str = include_str!("../fixtures/idp-key.pem");
pub const OTHER_KEY: &str = include_str!("../fixtures/idp-other-key.pem");
pub const ROTATED_KEY: &str = include_str!("../fixtures/idp-rotated-key.pem");

pub fn key(pem: &str, kid: &str) -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(kid.into()))).unwrap()
}

/// What the hostile provider publishes and hands out next.
#[derive(Default)]
pub struct Hostile {
    pub issuer: String,
    pub jwks: Value,
    /// What the token endpoint hands out next (taken once).
    pub next_token: Option<String>,
    pub jwks_reads: usize,
}

pub type Shared = Arc<Mutex<Hostile>>;

async fn discovery(State(h): State<Shared>) -> Json<Value> {
    let iss = h.lock().unwrap().issuer.clone();
    Json(json!({
        "issuer": iss,
        "authorization_endpoint": format!("{iss}/authorize"),
        "token_endpoint": format!("{iss}/token"),
        "jwks_uri": format!("{iss}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }))
}

async fn jwks(State(h): State<Shared>) -> Json<Value> {
    let mut h = h.lock().unwrap();
    h.jwks_reads += 1;
    Json(h.jwks.clone())
}

async fn token(State(h): State<Shared>) -> Json<Value> {
    let t = h.lock().unwrap().next_token.take().unwrap_or_default();
    Json(json!({ "access_token": "at", "token_type": "Bearer", "id_token": t }))
}

pub async fn start_hostile() -> Shared {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let published = key(KEY, "k1").as_verification_key();
    let state: Shared =
        Arc::new(Mutex::new(Hostile { issuer, jwks: json!({ "keys": [published] }), ..Default::default() }));
    let app = Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/token", post(token))
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    state
}

pub fn jwt(header: Value, claims: &Value, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
    let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
    let sig = sign(input.as_bytes());
    format!("{input}.{}", B64.encode(sig))
}

pub fn rs256(k: &CoreRsaPrivateSigningKey, kid: &str, claims: &Value) -> String {
    jwt(json!({ "alg": "RS256", "typ": "JWT", "kid": kid }), claims, |m| {
        k.sign(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, m).unwrap()
    })
}

pub fn claims(issuer: &str, nonce: &str, sub: &str) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({ "iss": issuer, "sub": sub, "aud": "naive", "iat": now, "exp": now + 300, "nonce": nonce,
            "email": format!("{sub}@example.com"), "groups": ["reviewers"] })
}
