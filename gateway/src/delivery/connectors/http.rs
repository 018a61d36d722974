//! The `http` connector: carries an allowed action out by POSTing it to a tenant's upstream
//! (a card processor, a mail relay), with a credential from the vault the agent never sees.
//!
//! The wire protocol (docs/connectors.md, "Connector protocol", says the same for upstream authors):
//! - `POST <url>` with `Content-Type: application/json`, `Idempotency-Key: <action_id>` and
//!   `Naive-Action: <action>`, and the body
//!   `{"action": "cards.charge", "action_id": "act_…", "args": {…}, "reserved": "48.00"}`:
//!   the arguments as the action's declaration accepted them, and the most the upstream may
//!   report as the actual cost. One agent call keeps its `action_id` on every retry with the
//!   same Idempotency-Key, so an upstream that keys on it never acts twice.
//! - The credential goes in as `Authorization: Bearer <secret>`, `Authorization: Basic
//!   <base64(secret)>` (the secret is `user:password`), a named header, or signs the body:
//!   `Naive-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
//! - A 2xx answer is `{"result": <any JSON>, "cost": "47.50"}`: what the agent gets back and
//!   the actual cost, at most `reserved`. The hold posts that cost plus the platform's price.
//! - Anything else is a failure the agent sees as `unavailable` with the hold voided: no
//!   answer within the timeout, a non-2xx status (a 429 or 503's `Retry-After` is passed on),
//!   a body that is not that JSON or is over [`MAX_RESPONSE_BYTES`], or a cost that is
//!   negative, malformed or above `reserved`.
//! - A test probe (the console's "test connection") is the same request with the body
//!   `{"test": true, "action_id": "test_…"}`; any 2xx means the upstream is there and took the
//!   credential.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::future::BoxFuture;
use hmac::{Hmac, Mac};
use policy::{Money, MoneyError};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::Sha256;

use super::{Call, Connector, ConnectorKind, Done, Failure};
use crate::delivery::egress::{Egress, Failed, ReadError};

/// The largest upstream answer read; a larger one is a failure.
pub const MAX_RESPONSE_BYTES: usize = crate::delivery::egress::MAX_ANSWER_BYTES;
/// How long an agent is told to wait after a failure the upstream gave no hint for.
const RETRY_AFTER_SECS: u32 = 5;
/// The longest `Retry-After` passed on to an agent.
const MAX_RETRY_AFTER_SECS: u32 = 300;
/// How much of an upstream's answer a test probe shows: enough to recognise the service,
/// too little to read a page through it.
pub const TEST_ANSWER_CHARS: usize = 200;
/// The longest a test probe waits, whatever the connector's timeout: someone is watching.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A credential opened from the vault, and how it travels.
#[derive(Clone)]
pub enum Credential {
    None,
    Bearer(String),
    Basic(String),
    Header(HeaderName, String),
    Hmac(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret itself.
        f.write_str(match self {
            Credential::None => "None",
            Credential::Bearer(_) => "Bearer(…)",
            Credential::Basic(_) => "Basic(…)",
            Credential::Header(..) => "Header(…)",
            Credential::Hmac(_) => "Hmac(…)",
        })
    }
}

/// One tenant's upstream for one primitive or action.
#[derive(Debug)]
pub struct Http {
    egress: Egress,
    url: reqwest::Url,
    timeout: Duration,
    credential: Credential,
}

/// What a test probe saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Probe {
    /// Whether the upstream answered 2xx.
    pub ok: bool,
    /// The HTTP status, if the upstream answered at all.
    pub status: Option<u16>,
    pub latency_ms: u64,
    /// The start of the upstream's answer, or why there was none.
    pub answer: String,
}

impl Http {
    pub fn new(egress: Egress, url: reqwest::Url, timeout: Duration, credential: Credential) -> Http {
        Http { egress, url, timeout, credential }
    }

    /// The request with its headers and credential, for `body`; refused when the upstream's
    /// address is one egress refuses.
    fn request(
        &self,
        action: &str,
        action_id: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::RequestBuilder, Failure> {
        self.egress.check_url(&self.url).map_err(|_| Failure::new(EGRESS_REFUSED, RETRY_AFTER_SECS))?;
        let mut req = self
            .egress
            .client()
            .post(self.url.clone())
            .timeout(self.timeout)
            .header(CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", action_id)
            .header("Naive-Action", action);
        req = crate::audit::trace::carried(req);
        req = match &self.credential {
            Credential::None => req,
            Credential::Bearer(s) => req.header(AUTHORIZATION, sensitive(format!("Bearer {s}"))),
            Credential::Basic(s) => req.header(
                AUTHORIZATION,
                sensitive(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(s))),
            ),
            Credential::Header(name, s) => req.header(name.clone(), sensitive(s.clone())),
            Credential::Hmac(s) => req.header("Naive-Signature", signature(s, now_unix(), &body)),
        };
        Ok(req.body(body))
    }

    /// Sends a test probe and reports what came back.
    pub async fn probe(&self) -> Probe {
        let id = format!("test_{}", uuid::Uuid::new_v4().simple());
        let body = serde_json::to_vec(&json!({ "test": true, "action_id": id })).expect("JSON serializes");
        let started = Instant::now();
        let req = match self.request("test", &id, body) {
            Ok(req) => req.timeout(self.timeout.min(PROBE_TIMEOUT)),
            Err(f) => return Probe { ok: false, status: None, latency_ms: 0, answer: f.detail },
        };
        let sent = req.send().await.map_err(|e| transport_failure(&e));
        let (status, answer) = probe_answer(sent).await;
        let latency_ms = started.elapsed().as_millis() as u64;
        Probe { ok: status.is_some_and(|s| (200..300).contains(&s)), status, latency_ms, answer }
    }
}

/// What a test probe shows of an answer: its status and the first [`TEST_ANSWER_CHARS`]
/// characters of its body, or why there was none. Connectors and webhooks share it.
pub(crate) async fn probe_answer(sent: Result<reqwest::Response, Failure>) -> (Option<u16>, String) {
    match sent {
        Err(f) => (None, f.detail),
        Ok(res) => {
            let status = res.status().as_u16();
            let text = match read_limited(res).await {
                Ok(bytes) => String::from_utf8_lossy(&bytes).chars().take(TEST_ANSWER_CHARS).collect(),
                Err(f) => f.detail,
            };
            (Some(status), text)
        }
    }
}

/// A header value marked sensitive, so no debug output of the request shows it.
fn sensitive(v: String) -> HeaderValue {
    let mut h = HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    h.set_sensitive(true);
    h
}

fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

/// `t=<t>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

pub use crate::delivery::egress::EGRESS_REFUSED;

fn transport_failure(e: &reqwest::Error) -> Failure {
    let code = match crate::delivery::egress::failed(e) {
        Failed::Refused => EGRESS_REFUSED,
        Failed::Timeout => "connector_timeout",
        Failed::Unreachable => "connector_unreachable",
    };
    Failure::new(code, RETRY_AFTER_SECS)
}

/// The body, refusing one over [`MAX_RESPONSE_BYTES`] without reading it all.
pub(crate) async fn read_limited(res: reqwest::Response) -> Result<Vec<u8>, Failure> {
    crate::delivery::egress::read_limited(res, MAX_RESPONSE_BYTES).await.map_err(|e| match e {
        ReadError::TooLarge => Failure::new("connector_response_too_large", RETRY_AFTER_SECS),
        ReadError::Transport(e) => transport_failure(&e),
    })
}

/// The wait an upstream asked for, bounded, or the default.
fn retry_after(res: &reqwest::Response) -> u32 {
    res.headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(RETRY_AFTER_SECS, |s| s.clamp(1, MAX_RETRY_AFTER_SECS))
}

/// Reads `{"result", "cost"}` and checks the cost against what was reserved for it.
fn answer(body: &[u8], call: &Call) -> Result<Done, Failure> {
    let bad = || Failure::new("connector_bad_response", RETRY_AFTER_SECS);
    let v: Value = serde_json::from_slice(body).map_err(|_| bad())?;
    let result = v.get("result").cloned().ok_or_else(bad)?;
    let cost = match v.get("cost") {
        Some(Value::String(s)) => Money::parse(s),
        Some(Value::Number(n))
            if n.as_i64().is_some_and(|n| n < 0) || n.as_f64().is_some_and(|x| x < 0.0) =>
        {
            Err(MoneyError::Negative)
        }
        Some(Value::Number(n)) => Money::parse(&n.to_string()),
        _ => return Err(bad()),
    }
    .map_err(|_| Failure::new("connector_bad_cost", RETRY_AFTER_SECS))?;
    let limit = call.real_reserved();
    if cost > limit {
        return Err(Failure::new("connector_cost_above_hold", RETRY_AFTER_SECS));
    }
    let posted = cost
        .checked_add(call.price)
        .ok_or_else(|| Failure::new("connector_cost_above_hold", RETRY_AFTER_SECS))?;
    Ok(Done { result, cost: posted })
}

impl Connector for Http {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>> {
        Box::pin(async move {
            let body = json!({
                "action": call.action,
                "action_id": call.action_id,
                "args": call.args,
                "reserved": call.real_reserved(),
            });
            let body = serde_json::to_vec(&body).expect("JSON serializes");
            let res = self
                .request(&call.action, &call.action_id, body)?
                .send()
                .await
                .map_err(|e| transport_failure(&e))?;
            let status = res.status();
            if !status.is_success() {
                return Err(Failure::new(format!("connector_http_{}", status.as_u16()), retry_after(&res)));
            }
            answer(&read_limited(res).await?, call)
        })
    }

    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Http
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::Primitive;

    fn call(reserved: &str, price: &str) -> Call {
        Call {
            action: "cards.charge".into(),
            primitive: Primitive::Cards,
            args: json!({}),
            reserved: reserved.parse().unwrap(),
            price: price.parse().unwrap(),
            action_id: "act_1".into(),
            actor: "agt_1".into(),
        }
    }

    #[test]
    fn the_reported_cost_posts_with_the_price_and_never_above_the_hold() {
        let c = call("48.01", "0.01");
        let done = answer(br#"{"result":{"charge_id":"ch_1"},"cost":"47.50"}"#, &c).unwrap();
        assert_eq!(done.cost, "47.51".parse().unwrap());
        assert_eq!(done.result, json!({"charge_id": "ch_1"}));
        let full = answer(br#"{"result":null,"cost":"48.00"}"#, &c).unwrap();
        assert_eq!(full.cost, "48.01".parse().unwrap());
        for (body, code) in [
            (&br#"{"result":{},"cost":"48.0001"}"#[..], "connector_cost_above_hold"),
            (br#"{"result":{},"cost":"-1"}"#, "connector_bad_cost"),
            (br#"{"result":{},"cost":-1}"#, "connector_bad_cost"),
            (br#"{"result":{},"cost":"1.00001"}"#, "connector_bad_cost"),
            (br#"{"result":{}}"#, "connector_bad_response"),
            (br#"{"cost":"1"}"#, "connector_bad_response"),
            (b"<html>", "connector_bad_response"),
        ] {
            assert_eq!(answer(body, &c).unwrap_err().detail, code, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn signatures_cover_the_time_and_the_body() {
        let s = signature("k", 1_700_000_000, b"{}");
        assert!(s.starts_with("t=1700000000,v1="));
        assert_ne!(s, signature("k", 1_700_000_001, b"{}"));
        assert_ne!(s, signature("k", 1_700_000_000, b"{ }"));
        assert_ne!(s, signature("k2", 1_700_000_000, b"{}"));
    }

    /// A probe of an upstream that answers a page shows its status and the first
    /// [`TEST_ANSWER_CHARS`] characters, never the page.
    #[tokio::test]
    async fn a_probe_shows_the_status_and_a_short_excerpt() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = reqwest::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let _ = sock.read(&mut [0u8; 4096]).await;
            let page = "x".repeat(10_000);
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                page.len()
            );
            let _ = sock.write_all(format!("{head}{page}").as_bytes()).await;
        });
        let egress = Egress::new(crate::delivery::egress::Allowance::loopback());
        let probe = Http::new(egress, url, Duration::from_secs(2), Credential::None).probe().await;
        assert_eq!((probe.ok, probe.status), (false, Some(401)));
        assert_eq!(probe.answer.chars().count(), TEST_ANSWER_CHARS, "{}", probe.answer.len());
    }

    #[test]
    fn a_credential_never_prints() {
        let c = Credential::Bearer("sk_live_123".into());
        assert!(!format!("{c:?}").contains("sk_live"));
    }
}
