//! Connectors: what actually carries out an allowed action, one per primitive.
//!
//! The built-in `sandbox` connector answers every primitive with deterministic results (a
//! charge id, a message id, page text) derived from the arguments, and can be told to add
//! latency or to fail, for tests. The `http` connector POSTs the action to an upstream URL
//! with a timeout. A connector failure becomes the `unavailable` verdict and voids the hold.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use policy::{Money, Primitive};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// One action to carry out.
#[derive(Clone, Debug)]
pub struct Call {
    pub action: String,
    pub primitive: Primitive,
    pub args: Value,
    /// What the gateway reserved; the connector reports what it actually cost.
    pub reserved: Money,
}

/// A connector's success: the result for the agent and the actual cost to post.
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    pub result: Value,
    pub cost: Money,
}

/// A connector's failure: always retryable from the agent's point of view.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Failure {
    /// A stable code such as `connector_timeout`.
    pub detail: String,
    pub retry_after_secs: u32,
}

pub trait Connector: Send + Sync + 'static {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>>;

    /// Carries the call out at once, without waiting on anything, if this connector can
    /// (an in-process computation). The gateway then settles in the same transaction that
    /// reserved the hold. `None` means the call needs [`Connector::execute`].
    fn execute_now(&self, _call: &Call) -> Option<Result<Done, Failure>> {
        None
    }
}

/// Connectors by primitive. Every primitive has one; the sandbox is the default.
#[derive(Clone)]
pub struct Connectors {
    by_primitive: HashMap<Primitive, Arc<dyn Connector>>,
}

impl std::fmt::Debug for Connectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connectors").field("primitives", &self.by_primitive.len()).finish()
    }
}

impl Connectors {
    /// The sandbox for every primitive.
    pub fn sandbox(sandbox: Arc<Sandbox>) -> Connectors {
        Connectors {
            by_primitive: Primitive::ALL
                .into_iter()
                .map(|p| (p, sandbox.clone() as Arc<dyn Connector>))
                .collect(),
        }
    }

    pub fn set(&mut self, primitive: Primitive, c: Arc<dyn Connector>) {
        self.by_primitive.insert(primitive, c);
    }

    pub fn get(&self, p: Primitive) -> &Arc<dyn Connector> {
        self.by_primitive.get(&p).expect("every primitive has a connector")
    }
}

/// The deterministic built-in connector.
#[derive(Debug, Default)]
pub struct Sandbox {
    latency_ms: AtomicU64,
    /// The next this-many calls fail.
    fail_next: AtomicU32,
    calls: AtomicU64,
}

impl Sandbox {
    pub fn set_latency_ms(&self, ms: u64) {
        self.latency_ms.store(ms, Ordering::Relaxed);
    }
    pub fn fail_next(&self, n: u32) {
        self.fail_next.store(n, Ordering::Relaxed);
    }
    /// Calls carried out so far (failures excluded).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

fn digest8(v: &Value) -> String {
    hex::encode(&Sha256::digest(v.to_string().as_bytes())[..8])
}

impl Sandbox {
    /// The deterministic answer: what a real connector would return, derived from the args.
    fn answer(&self, call: &Call) -> Result<Done, Failure> {
        let failing =
            self.fail_next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        if failing {
            return Err(Failure { detail: "sandbox_injected_failure".into(), retry_after_secs: 2 });
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let d = digest8(&call.args);
        let result = match call.primitive {
            Primitive::Cards => json!({ "charge_id": format!("ch_{d}"), "status": "succeeded" }),
            Primitive::Email | Primitive::Sms => {
                json!({ "message_id": format!("msg_{d}"), "status": "queued" })
            }
            Primitive::Web => json!({
                "url": call.args.get("url").cloned().unwrap_or(Value::Null),
                "text": format!("Sandbox page {d}: the quick brown fox reads the docs."),
            }),
            Primitive::Search => {
                json!({ "results": [ { "title": format!("Result {d}"), "url": format!("https://example.test/{d}") } ] })
            }
            Primitive::Brain => json!({ "answer": format!("Sandbox belief {d}"), "sources": [] }),
            Primitive::Tasks => json!({ "command_id": format!("cmd_{d}"), "status": "durably_queued" }),
            _ => json!({ "id": format!("{}_{d}", call.primitive.as_str()), "status": "ok" }),
        };
        Ok(Done { result, cost: call.reserved })
    }
}

impl Connector for Sandbox {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>> {
        Box::pin(async move {
            let ms = self.latency_ms.load(Ordering::Relaxed);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            self.answer(call)
        })
    }

    /// Without injected latency the sandbox answers at once.
    fn execute_now(&self, call: &Call) -> Option<Result<Done, Failure>> {
        (self.latency_ms.load(Ordering::Relaxed) == 0).then(|| self.answer(call))
    }
}

/// POSTs `{action, args}` to an upstream URL. A 2xx answer's JSON is the result; anything
/// else, or no answer within the timeout, is a failure.
pub struct Http {
    client: reqwest::Client,
    url: String,
    timeout: Duration,
}

impl Http {
    pub fn new(url: impl Into<String>, timeout: Duration) -> Http {
        Http { client: reqwest::Client::new(), url: url.into(), timeout }
    }
}

impl Connector for Http {
    fn execute<'a>(&'a self, call: &'a Call) -> BoxFuture<'a, Result<Done, Failure>> {
        Box::pin(async move {
            let send = self
                .client
                .post(&self.url)
                .timeout(self.timeout)
                .json(&json!({ "action": call.action, "args": call.args }))
                .send();
            let res = send.await.map_err(|e| Failure {
                detail: if e.is_timeout() {
                    "connector_timeout".into()
                } else {
                    "connector_unreachable".into()
                },
                retry_after_secs: 5,
            })?;
            if !res.status().is_success() {
                return Err(Failure {
                    detail: format!("connector_http_{}", res.status().as_u16()),
                    retry_after_secs: 5,
                });
            }
            let result: Value = res
                .json()
                .await
                .map_err(|_| Failure { detail: "connector_bad_response".into(), retry_after_secs: 5 })?;
            Ok(Done { result, cost: call.reserved })
        })
    }
}
