//! Sending webhook messages: rendering a body in the endpoint's format, signing it, and
//! recording what the endpoint answered.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::{Endpoint, Format, sign};
use crate::Gateway;
use crate::delivery::connectors::Failure;
use crate::delivery::connectors::http::probe_answer;
use crate::delivery::egress::{EGRESS_REFUSED, Failed};
use crate::delivery::outbox::queue::{ClaimedQueue, Outcome};
use crate::error::Result;
use crate::ids::TenantId;

/// How long an endpoint may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What an endpoint answered a test event.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookProbe {
    pub ok: bool,
    pub status: Option<u16>,
    pub latency_ms: u64,
    /// The start of the body it answered, or why there was none.
    pub answer: String,
}

/// Where a message's event can be seen on the console.
fn link(public_url: &str, event: &str, data: &Value) -> String {
    let base = public_url.trim_end_matches('/');
    match (event, data["approval_id"].as_str()) {
        (e, Some(id)) if e.starts_with("approval.") || e == "budget.soft_cap_crossed" => {
            format!("{base}/?approval={id}")
        }
        ("proposal.created", _) => format!("{base}/proposals"),
        _ => format!("{base}/activity"),
    }
}

/// The body an endpoint receives for a queued payload (`{type, timestamp, data}`).
fn render(format: Format, payload: &str, public_url: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let event = v["type"].as_str().unwrap_or_default().to_string();
    let url = link(public_url, &event, &v["data"]);
    v["data"]["link"] = json!(url);
    let body = match format {
        Format::Standard => v,
        Format::Slack => json!({ "text": summary(&event, &v["data"], &url) }),
    };
    serde_json::to_vec(&body).expect("JSON serializes")
}

/// One line a person reads, ending in the link.
fn summary(event: &str, d: &Value, url: &str) -> String {
    let action = d["action"].as_str().unwrap_or("a call");
    let who = d["profile_id"].as_str().unwrap_or("an agent");
    let amount = d["amount"].as_str().map(|a| format!(" of ${a}")).unwrap_or_default();
    let what = match event {
        "approval.parked" => format!("{who} asks to run {action}{amount}: it waits for your approval"),
        "approval.decided" => {
            format!("{action}{amount} for {who} was {}", d["decision"].as_str().unwrap_or("decided"))
        }
        "approval.expired" => {
            format!("the approval of {action}{amount} for {who} expired and became a refusal")
        }
        "proposal.created" => "new proposed beliefs wait for review".to_string(),
        "budget.soft_cap_crossed" => format!("{who} crossed a soft cap with {action}{amount}"),
        "budget.exhausted" => format!("{who} exhausted its budget and was stopped"),
        "runtime.stopped" => {
            format!("{who}'s runtime stopped ({})", d["reason"].as_str().unwrap_or("stopped"))
        }
        "profile.revoked" => format!("{who} was revoked"),
        _ => format!("{event} from the Naïve gateway"),
    };
    format!("{what} <{url}>")
}

impl Gateway {
    /// Sends an endpoint's claimed messages in order, stopping at the first that fails: the
    /// ones before it delivered, it a failed attempt, the rest left queued untried. An endpoint
    /// whose secret cannot be opened fails its first message with that reason.
    pub(crate) async fn send_webhooks(&self, q: &ClaimedQueue) -> Outcome {
        let fail = |i: usize, code: String, mut outcome: Outcome| {
            outcome.failed = q.rows[i..=i].to_vec();
            outcome.failure = Some(code);
            outcome
        };
        let (secret, e) = match self.webhook(&q.tenant, &q.destination).await {
            Ok(e) => match self.open_secret(&q.tenant, &e.secret_name).await {
                Ok(secret) => (secret, e),
                Err(err) => {
                    tracing::warn!(endpoint = %e.id, error = %err, "a webhook's signing secret does not open");
                    return fail(0, "webhook_secret_unavailable".into(), Outcome::default());
                }
            },
            Err(crate::Error::NotFound { .. }) => {
                return fail(0, "endpoint_removed".into(), Outcome::default());
            }
            Err(err) => return fail(0, format!("webhook_unreadable: {}", err.code()), Outcome::default()),
        };
        let mut outcome = Outcome::default();
        for (i, row) in q.rows.iter().enumerate() {
            let body = render(e.format, &row.payload, &self.config.public_url);
            match self.post(&e, &secret, &row.id, &body).await {
                Ok(()) => outcome.delivered.push(row.seq),
                Err(code) => return fail(i, code, outcome),
            }
        }
        outcome
    }

    /// POSTs one signed message; `Err` with a stable code unless the endpoint answered 2xx.
    async fn post(
        &self,
        e: &Endpoint,
        secret: &str,
        id: &str,
        body: &[u8],
    ) -> std::result::Result<(), String> {
        let res = self.send_signed(e, secret, id, body.to_vec()).await?;
        if res.status().is_success() {
            Ok(())
        } else {
            Err(format!("webhook_http_{}", res.status().as_u16()))
        }
    }

    async fn send_signed(
        &self,
        e: &Endpoint,
        secret: &str,
        id: &str,
        body: Vec<u8>,
    ) -> std::result::Result<reqwest::Response, String> {
        let url = url::Url::parse(&e.url).map_err(|_| "webhook_bad_url".to_string())?;
        self.egress.check_url(&url).map_err(|_| EGRESS_REFUSED.to_string())?;
        let t = chrono::Utc::now().timestamp();
        self.egress
            .client()
            .post(url)
            .timeout(TIMEOUT)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", t.to_string())
            .header("webhook-signature", sign(secret, id, t, &body))
            .body(body)
            .send()
            .await
            .map_err(|err| {
                match crate::delivery::egress::failed(&err) {
                    Failed::Refused => EGRESS_REFUSED,
                    Failed::Timeout => "webhook_timeout",
                    Failed::Unreachable => "webhook_unreachable",
                }
                .to_string()
            })
    }

    /// Sends the endpoint a signed `webhook.test` event now and shows what it answered.
    pub async fn test_webhook(&self, tenant: &TenantId, id: &str) -> Result<WebhookProbe> {
        let e = self.webhook(tenant, id).await?;
        let secret = self.open_secret(tenant, &e.secret_name).await?;
        let msg = format!("msg_test_{}", uuid::Uuid::now_v7().simple());
        let payload = json!({ "type": "webhook.test", "timestamp": chrono::Utc::now(),
            "data": { "message": "a test event from the Naïve gateway", "webhook_id": id } });
        let body = render(e.format, &payload.to_string(), &self.config.public_url);
        let started = Instant::now();
        let sent = self.send_signed(&e, &secret, &msg, body).await.map_err(|code| Failure::new(code, 0));
        let (status, answer) = probe_answer(sent).await;
        let latency_ms = started.elapsed().as_millis() as u64;
        Ok(WebhookProbe { ok: status.is_some_and(|s| (200..300).contains(&s)), status, latency_ms, answer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_events_link_to_their_inbox_item_and_slack_bodies_are_text() {
        let payload = json!({ "type": "approval.parked", "timestamp": "t",
            "data": { "approval_id": "apr_1", "action": "cards.charge", "amount": "60.00", "profile_id": "agt_1" } });
        let standard: Value =
            serde_json::from_slice(&render(Format::Standard, &payload.to_string(), "http://h:1/")).unwrap();
        assert_eq!(standard["data"]["link"], "http://h:1/?approval=apr_1");
        assert_eq!(standard["type"], "approval.parked");
        let slack: Value =
            serde_json::from_slice(&render(Format::Slack, &payload.to_string(), "http://h:1")).unwrap();
        let text = slack["text"].as_str().unwrap();
        assert!(
            text.contains("cards.charge of $60.00") && text.ends_with("<http://h:1/?approval=apr_1>"),
            "{text}"
        );
    }
}
