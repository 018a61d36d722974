//! The built-in `sandbox` connector: deterministic answers for every primitive (a charge id, a
//! message id, page text) derived from the arguments, so a tenant can try the whole pipeline
//! before connecting anything real. Every answer it gives is labelled `sandbox` by the
//! pipeline. Tests can make it slow or make its next calls fail.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use policy::Primitive;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Call, Connector, ConnectorKind, Done, Failure};

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

    /// The deterministic answer: what a real connector would return, derived from the args.
    fn answer(&self, call: &Call) -> Result<Done, Failure> {
        let failing =
            self.fail_next.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        if failing {
            return Err(Failure::new("sandbox_injected_failure", 2));
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

fn digest8(v: &Value) -> String {
    hex::encode(&Sha256::digest(v.to_string().as_bytes())[..8])
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

    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Sandbox
    }
}
