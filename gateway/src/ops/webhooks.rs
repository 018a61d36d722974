//! Webhook delivery as operations: sending a queue's signed messages, and a test message.

use serde_json::json;
use std::time::Instant;

use crate::Gateway;
use crate::audit::activity::Transport;
use crate::delivery::connectors::Failure;
use crate::delivery::connectors::http::probe_answer;
use crate::delivery::outbox::queue::{ClaimedQueue, Outcome};
use crate::delivery::webhooks::deliver::{Auth, Signed, WebhookProbe, render, signed_post};
use crate::delivery::webhooks::{
    CHANNEL, CreatedEndpoint, Endpoint, EndpointSpec, WebhookDelivery, check, delete_in, insert, list,
    make_room, new_secret, one,
};
use crate::error::{Error, Result};
use crate::ids::TenantId;

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
            let Ok(body) = render(e.format, &row.payload, &self.config.public_url) else {
                return fail(i, "corrupt_row".into(), outcome);
            };
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
        let m = Signed {
            url: &e.url,
            auth: Auth::Sign(secret),
            id,
            content_type: "application/json",
            headers: Vec::new(),
            prefix: "webhook",
        };
        signed_post(&self.egress, m, body).await
    }

    /// Sends the endpoint a signed `webhook.test` event now and shows what it answered.
    pub async fn test_webhook(&self, tenant: &TenantId, id: &str) -> Result<WebhookProbe> {
        let e = self.webhook(tenant, id).await?;
        let secret = self.open_secret(tenant, &e.secret_name).await?;
        let msg = format!("msg_test_{}", uuid::Uuid::now_v7().simple());
        let payload = json!({ "type": "webhook.test", "timestamp": chrono::Utc::now(),
            "data": { "message": "a test event from the Naïve gateway", "webhook_id": id } });
        let body = render(e.format, &payload.to_string(), &self.config.public_url)?;
        let started = Instant::now();
        let sent = self.send_signed(&e, &secret, &msg, body).await.map_err(|code| Failure::new(code, 0));
        let (status, answer) = probe_answer(sent).await;
        let latency_ms = started.elapsed().as_millis() as u64;
        Ok(WebhookProbe { ok: status.is_some_and(|s| (200..300).contains(&s)), status, latency_ms, answer })
    }
}

impl Gateway {
    /// Registers an endpoint; its signing secret is in the answer, and nowhere ever again.
    pub async fn create_webhook(
        &self,
        tenant: &TenantId,
        spec: EndpointSpec,
        actor: &str,
        via: Transport,
    ) -> Result<CreatedEndpoint> {
        let url = check(&spec)?;
        self.check_egress(&url).await?;
        let id = format!("whk_{}", uuid::Uuid::now_v7().simple());
        let secret = new_secret();
        let secret_name = format!("webhook-{id}");
        let (t, i, a, s) = (tenant.clone(), id.clone(), actor.to_string(), secret_name.clone());
        self.write_with_secret(tenant, (&secret_name, &secret), (actor, via), move |c| {
            make_room(c, &t)?;
            insert(c, &t, &i, &spec, &s, &a, via)
        })
        .await?;
        let endpoint = self
            .webhooks(tenant)
            .await?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or(Error::NotFound { what: "webhook" })?;
        Ok(CreatedEndpoint { endpoint, secret, secret_withheld: None })
    }

    /// The tenant's endpoints, oldest first.
    pub async fn webhooks(&self, tenant: &TenantId) -> Result<Vec<Endpoint>> {
        list(&self.store, tenant).await
    }

    pub(crate) async fn webhook(&self, tenant: &TenantId, id: &str) -> Result<Endpoint> {
        one(&self.store, tenant, id).await
    }

    /// Removes an endpoint and its secret; its queued messages end as dead letters.
    pub async fn delete_webhook(
        &self,
        tenant: &TenantId,
        id: &str,
        actor: &str,
        via: Transport,
    ) -> Result<()> {
        let (t, i, a) = (tenant.clone(), id.to_string(), actor.to_string());
        self.write_for(tenant, move |c| delete_in(c, &t, &i, &a, via)).await
    }

    /// The tenant's webhook messages, newest first, optionally of one endpoint or status.
    pub async fn webhook_deliveries(
        &self,
        tenant: &TenantId,
        status: Option<crate::delivery::outbox::DeliveryStatus>,
    ) -> Result<Vec<WebhookDelivery>> {
        let rows = crate::delivery::outbox::rows(&self.store, tenant, CHANNEL, status).await?;
        Ok(rows
            .into_iter()
            .map(|s| WebhookDelivery {
                message_id: s.command_id,
                endpoint_id: s.task_id,
                event: s.kind,
                status: s.status,
                attempts: s.attempts,
                last_error: s.last_error,
                created_at: s.created_at,
                delivered_at: s.delivered_at,
            })
            .collect())
    }
}
