//! The gateway's side of the control wire: one tenant's runtime, reached with its shared
//! secret. Every request is signed ([`wire::sign`]); every answer is read with a size limit.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use super::wire::{self, Batch, BatchAnswer, Board, Run, Status};
use crate::delivery::egress::{EGRESS_REFUSED, Failed, ReadError};

/// How long a read of the runtime may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a batch of commands may take.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request to the runtime got no usable answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// No answer: refused connection, timeout, broken answer. Worth trying again.
    #[error("{0}")]
    Unreachable(String),
    /// The runtime answered a 4xx: `code` says why. Sending the same again will not help.
    #[error("the runtime refused the request ({status} {code})")]
    Refused { status: u16, code: String },
}

impl WireError {
    /// The stable code recorded for it.
    pub fn code(&self) -> String {
        match self {
            WireError::Unreachable(c) => c.clone(),
            WireError::Refused { code, .. } => code.clone(),
        }
    }
}

/// One runtime, as the gateway reaches it.
#[derive(Clone)]
pub struct RuntimeClient {
    base: url::Url,
    secret: String,
    egress: crate::delivery::egress::Egress,
}

impl std::fmt::Debug for RuntimeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeClient").field("base", &self.base.as_str()).finish_non_exhaustive()
    }
}

impl RuntimeClient {
    pub fn new(base: url::Url, secret: String, egress: crate::delivery::egress::Egress) -> RuntimeClient {
        RuntimeClient { base, secret, egress }
    }

    pub async fn status(&self) -> Result<Status, WireError> {
        self.get("/control/status").await
    }

    pub async fn board(&self, status: Option<&str>, role: Option<&str>) -> Result<Board, WireError> {
        let q = {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            if let Some(s) = status {
                q.append_pair("status", s);
            }
            if let Some(r) = role {
                q.append_pair("role", r);
            }
            q.finish()
        };
        let path = if q.is_empty() { "/control/board".to_string() } else { format!("/control/board?{q}") };
        self.get(&path).await
    }

    pub async fn run(&self, run_id: &str) -> Result<Run, WireError> {
        // One path segment, never `.` or `..`, so the path signed is the path asked for.
        if !policy::args::is_ref(run_id, 200) {
            return Err(WireError::Refused { status: 400, code: "invalid_run_id".into() });
        }
        let id: String = url::form_urlencoded::byte_serialize(run_id.as_bytes()).collect();
        self.get(&format!("/control/runs/{id}")).await
    }

    /// Claims the runtime for `tenant`; a runtime another tenant claimed refuses.
    pub async fn claim(&self, tenant: &str) -> Result<Status, WireError> {
        let body = serde_json::to_vec(&serde_json::json!({ "tenant_id": tenant })).expect("JSON serializes");
        self.send("POST", "/control/claim", body, READ_TIMEOUT).await
    }

    /// Sends a batch of commands; the runtime's answer for each, in order.
    pub async fn commands(&self, batch: &Batch) -> Result<BatchAnswer, WireError> {
        let body = serde_json::to_vec(batch).expect("JSON serializes");
        self.send("POST", "/control/commands", body, SEND_TIMEOUT).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, WireError> {
        self.send("GET", path, Vec::new(), READ_TIMEOUT).await
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<T, WireError> {
        let url = self
            .base
            .join(path.trim_start_matches('/'))
            .map_err(|_| WireError::Unreachable("runtime_bad_url".into()))?;
        self.egress.check_url(&url).map_err(|_| WireError::Unreachable(EGRESS_REFUSED.into()))?;
        let signed_path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let t = chrono::Utc::now().timestamp();
        let method_v: reqwest::Method = method.parse().expect("a known method");
        let res = crate::audit::trace::carried(self.egress.client().request(method_v, url))
            .timeout(timeout)
            .header(CONTENT_TYPE, "application/json")
            .header(wire::TIMESTAMP_HEADER, t.to_string())
            .header(wire::SIGNATURE_HEADER, wire::sign(&self.secret, method, &signed_path, t, &body))
            .body(body)
            .send()
            .await
            .map_err(|e| {
                WireError::Unreachable(transport_code(&e, "runtime_timeout", "runtime_unreachable").into())
            })?;
        let status = res.status();
        let bytes = crate::delivery::egress::read_limited(res, crate::delivery::egress::MAX_ANSWER_BYTES)
            .await
            .map_err(|e| {
                WireError::Unreachable(
                    match e {
                        ReadError::TooLarge => "connector_response_too_large",
                        ReadError::Transport(e) => {
                            transport_code(&e, "connector_timeout", "connector_unreachable")
                        }
                    }
                    .into(),
                )
            })?;
        if status.is_client_error() && status.as_u16() != 408 && status.as_u16() != 429 {
            let code = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .unwrap_or_else(|| format!("runtime_http_{}", status.as_u16()));
            return Err(WireError::Refused { status: status.as_u16(), code });
        }
        if !status.is_success() {
            return Err(WireError::Unreachable(format!("runtime_http_{}", status.as_u16())));
        }
        serde_json::from_slice(&bytes).map_err(|_| WireError::Unreachable("runtime_malformed_answer".into()))
    }
}

/// The code of a request or read that failed in transport.
fn transport_code(e: &reqwest::Error, timeout: &'static str, unreachable: &'static str) -> &'static str {
    match crate::delivery::egress::failed(e) {
        Failed::Refused => EGRESS_REFUSED,
        Failed::Timeout => timeout,
        Failed::Unreachable => unreachable,
    }
}
