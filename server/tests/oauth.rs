//! OAuth for MCP clients, black-box, on either engine (docs/mcp.md#connecting-with-oauth): a
//! client ID metadata document served over https by a CA the server trusts (`--egress-ca`),
//! the consent page signed in as the admin, the code exchanged with its PKCE verifier, the
//! access token used at `/mcp`, and a refresh token reused, which revokes the connection.
//! The official SDKs' clients run the same flow in the MCP suite and the browser tests.

mod common;

use std::sync::Arc;

use base64::Engine as _;
use common::{ADMIN_PASSWORD, COMPANY_KEY, TestApp, spawn_configured};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const REDIRECT: &str = "http://127.0.0.1:40123/callback";

/// An https server that answers every path with a client ID metadata document naming that
/// path as its client id: the reference program a client's document host is here.
async fn documents() -> String {
    let certs = CertificateDer::pem_file_iter(format!("{FIXTURES}/localhost-cert.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{FIXTURES}/localhost-key.pem")).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let tls = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let origin = base.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, origin) = (acceptor.clone(), origin.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut head = vec![0u8; 4096];
                let n = tls.read(&mut head).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&head[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                let body = json!({ "client_id": format!("{origin}{path}"), "client_name": "Rust connector",
                    "redirect_uris": [REDIRECT] })
                .to_string();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    base
}

async fn app() -> TestApp {
    spawn_configured(|c| c.egress_ca = Some(format!("{FIXTURES}/test-ca.pem").into())).await
}

/// A PKCE verifier (43 to 128 unreserved characters) and its S256 challenge.
fn pkce() -> (String, String) {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let verifier = format!("verifier-{nanos}-{}", "x".repeat(40));
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// Where a continue page's refresh leads.
fn continued(page: &str) -> String {
    let start = page.find("content=\"0;url=").expect("a continue page") + "content=\"0;url=".len();
    let rest = &page[start..];
    rest[..rest.find('"').unwrap()].replace("&amp;", "&")
}

/// The admin consents in the console to `client_id` acting as `profile`: the code.
async fn consent(app: &TestApp, cookie: &str, client_id: &str, profile: &str, challenge: &str) -> String {
    let query = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("state", "st-1"),
        ("scope", "mcp"),
    ];
    let url = reqwest::Url::parse_with_params(&format!("{}/oauth/authorize", app.base), query).unwrap();
    let (status, page) = app.get_signed_in(&url[url::Position::BeforePath..], cookie).await;
    assert_eq!(status, 200, "{page}");
    let to = continued(&page);
    let (status, shown) = app.get_signed_in(&to, cookie).await;
    assert!(status == 200 && shown.contains("Rust connector"), "{status} {shown}");
    let mut form: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    form.extend(
        [("decision", "allow"), ("act_as", "profile"), ("profile_id", profile)]
            .map(|(k, v)| (k.into(), v.into())),
    );
    let res = app
        .raw_client()
        .post(format!("{}/oauth/authorize", app.base))
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .form(&form)
        .send()
        .await
        .unwrap();
    let back = continued(&res.text().await.unwrap());
    assert!(back.starts_with(REDIRECT) && back.contains("state=st-1"), "{back}");
    let url = reqwest::Url::parse(&back).unwrap();
    url.query_pairs().find(|(k, _)| k == "code").unwrap().1.to_string()
}

async fn token(app: &TestApp, form: &[(&str, &str)]) -> (u16, Value) {
    let res = app.client.post(format!("{}/oauth/token", app.base)).form(form).send().await.unwrap();
    assert_eq!(res.headers()["cache-control"], "no-store");
    (res.status().as_u16(), res.json().await.unwrap())
}

/// `tools/list` at `/mcp` with `access_token`, statelessly: the status and body.
async fn tools(app: &TestApp, access_token: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth", "version": "1"}}});
    let res = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(access_token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_connects_through_consent_and_a_reused_refresh_token_revokes_it() {
    let app = app().await;
    let docs = documents().await;
    app.put_kit(json!({"name": "OAuthWeb", "primitives": ["web"], "limits": {}})).await;
    let (profile, _, _) = app.new_agent("oauth-agent", "OAuthWeb", None).await;
    let cookie = app.sign_in("admin", ADMIN_PASSWORD).await;
    let client_id = format!("{docs}/oauth/client.json");
    let (verifier, challenge) = pkce();
    let code = consent(&app, &cookie, &client_id, &profile, &challenge).await;

    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ];
    let (status, first) = token(&app, &exchange).await;
    assert_eq!(status, 200, "{first}");
    let access = first["access_token"].as_str().unwrap();
    assert_eq!(tools(&app, access).await.0, 200);
    // Good at /mcp only.
    let (s, _, b) = app.send("GET", &format!("/v1/users/{profile}/budget"), Some(access), None, &[]).await;
    assert_eq!((s, b["code"].as_str()), (401, Some("token_for_mcp_only")));
    // The connection is the profile's, listed with who made it.
    let id = gateway::ProfileId::parse(&profile).unwrap();
    let tenant = app.gateway.authenticate_company_key(COMPANY_KEY).await.unwrap().unwrap();
    let listed = app.gateway.oauth_connections(&tenant, &id).await.unwrap();
    assert_eq!((listed.len(), listed[0].connected_by.as_str()), (1, "admin"));

    // Rotation, then the rotated token again: the family is revoked.
    let refresh = first["refresh_token"].as_str().unwrap();
    let rotate =
        [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", client_id.as_str())];
    let (status, second) = token(&app, &rotate).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(tools(&app, second["access_token"].as_str().unwrap()).await.0, 200);
    let (status, refused) = token(&app, &rotate).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
    let (status, _) = tools(&app, second["access_token"].as_str().unwrap()).await;
    assert_eq!(status, 401, "the family's newest access token died with it");
    let listed = app.gateway.oauth_connections(&tenant, &id).await.unwrap();
    assert!(listed[0].revoked_at.is_some());
    // The code, used again, is refused too.
    let (status, again) = token(&app, &exchange).await;
    assert_eq!((status, again["error"].as_str()), (400, Some("invalid_grant")));
}
