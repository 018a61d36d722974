//! Notifications: webhooks that tell approvers and operators what happened, delivered through
//! the outbox.
//!
//! A tenant admin registers endpoints, each with an event filter and a body format (the
//! Standard Webhooks JSON, or a Slack-compatible `{"text": …}`). The signing secret is made
//! here, shown once, and kept in the vault as `webhook-<id>`.
//!
//! Guarantees:
//! - An event is queued for every endpoint that subscribes to it in the same transaction as
//!   the activity entry it reports ([`on_entry`], which `Gateway::write` runs for every entry
//!   a job appends): no entry without its notifications, no
//!   notification of something that rolled back.
//! - Each delivery is signed the Standard Webhooks way ([`sign`]): `webhook-id` (the message
//!   id, the same on every retry, for the receiver's deduplication), `webhook-timestamp` and
//!   `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`.
//! - An endpoint's messages go out in order; one that fails holds up only its endpoint, is
//!   retried with backoff and becomes a dead letter after the attempt limit.

pub(crate) mod deliver;
mod events;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::stored;

pub use deliver::WebhookProbe;
pub use events::EVENTS;
pub(crate) use events::on_entry;

/// The outbox channel of webhook messages.
pub const CHANNEL: &str = crate::delivery::outbox::WEBHOOK;
/// The most endpoints a tenant may have.
pub const MAX_ENDPOINTS: usize = 20;

/// How an endpoint wants its bodies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `{"type", "timestamp", "data"}`, as Standard Webhooks describes.
    #[default]
    Standard,
    /// `{"text": "…"}` with the link, for a Slack incoming webhook or anything like it.
    Slack,
}

impl Format {
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::Standard => "standard",
            Format::Slack => "slack",
        }
    }
    fn parse(s: &str) -> Option<Format> {
        [Format::Standard, Format::Slack].into_iter().find(|f| f.as_str() == s)
    }
}

/// An event's name, for the API document: one of [`EVENTS`].
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code, reason = "only its schema is used")]
pub enum EventName {
    #[schema(rename = "approval.parked")]
    ApprovalParked,
    #[schema(rename = "approval.decided")]
    ApprovalDecided,
    #[schema(rename = "approval.expired")]
    ApprovalExpired,
    #[schema(rename = "approval.escalated")]
    ApprovalEscalated,
    #[schema(rename = "proposal.created")]
    ProposalCreated,
    #[schema(rename = "budget.soft_cap_crossed")]
    BudgetSoftCapCrossed,
    #[schema(rename = "budget.exhausted")]
    BudgetExhausted,
    #[schema(rename = "runtime.stopped")]
    RuntimeStopped,
    #[schema(rename = "profile.revoked")]
    ProfileRevoked,
}

/// What an admin registers.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// Where to POST, `http://` or `https://`.
    pub url: String,
    /// The events it receives, from [`EVENTS`].
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<EventName>, min_items = 1))]
    pub events: Vec<String>,
    #[serde(default)]
    pub format: Format,
}

/// A registered endpoint. Its secret's value is never shown again.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub format: Format,
    /// The vault secret its signing key is kept under.
    pub secret_name: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

/// A new endpoint and its signing secret, shown this once.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedEndpoint {
    pub endpoint: Endpoint,
    /// `whsec_…`: verify signatures with it. It is not shown again: a replay of the same
    /// Idempotency-Key answers null here and `secret_withheld: true`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub secret: String,
    /// True in a replay, where the secret is withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_withheld: Option<bool>,
}

/// One message's delivery state.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookDelivery {
    pub message_id: String,
    pub endpoint_id: String,
    pub event: String,
    pub status: crate::delivery::outbox::DeliveryStatus,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, where the key is the secret's
/// base64 part after `whsec_`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(secret.trim_start_matches("whsec_")).unwrap_or_else(|_| secret.as_bytes().to_vec());
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", b64.encode(mac.finalize().into_bytes()))
}

pub(crate) fn new_secret() -> String {
    let mut key = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut key);
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(key))
}

/// Checks what an admin registers; the URL as it will be called.
pub(crate) fn check(spec: &EndpointSpec) -> Result<url::Url> {
    let url = crate::delivery::runtime::registry::check_url(&spec.url).map_err(|_| {
        Error::invalid(
            "invalid_webhook_url",
            "the webhook URL must be http:// or https:// with a host, without credentials, a query or a fragment",
        )
    })?;
    if spec.events.is_empty() {
        return Err(Error::invalid("no_events", format!("name at least one event: {}", EVENTS.join(", "))));
    }
    if let Some(e) = spec.events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        return Err(Error::invalid(
            "unknown_event",
            format!("`{e}` is not an event; the events are {}", EVENTS.join(", ")),
        ));
    }
    if let Some((i, e)) = spec.events.iter().enumerate().find(|(i, e)| spec.events[..*i].contains(e)) {
        return Err(Error::invalid(
            "duplicate_event",
            format!("`{e}` is named twice (at {i}); name each event once"),
        ));
    }
    Ok(url)
}

const COLUMNS: &str = "id, url, events, format, secret_name, created_by, created_at";
/// A row of [`COLUMNS`].
impl crate::sql::FromRow for Endpoint {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<Endpoint> {
        Ok(Endpoint {
            id: r.get(0)?,
            url: r.get(1)?,
            events: stored::decode("endpoint's events", &r.get::<String>(2)?)?,
            format: stored::named("endpoint's format", &r.get::<String>(3)?, Format::parse)?,
            secret_name: r.get(4)?,
            created_by: r.get(5)?,
            created_at: r.get(6)?,
        })
    }
}

/// Removes an endpoint, its signing secret (unless a connector uses it now) and its queued
/// messages, and records it; `not_found` for an unknown one.
pub(crate) fn delete_in(c: &dyn Tx, t: &TenantId, i: &str, a: &str, via: Transport) -> Result<()> {
    // The tenant's lock before the endpoint's queue (docs/architecture.md, the lock order).
    activity::lock_tenant(c, t)?;
    let secret: Option<String> = c
        .row("SELECT secret_name FROM webhook_endpoints WHERE tenant_id = ? AND id = ?", &[t, &i])?
        .map(|r| r.get(0))
        .transpose()?;
    let Some(secret) = secret else { return Err(Error::NotFound { what: "webhook" }) };
    c.exec("DELETE FROM webhook_endpoints WHERE tenant_id = ? AND id = ?", &[t, &i])?;
    // Its signing secret goes with it, unless a connector has been pointed at it since.
    crate::domain::vault::delete_in(c, t, &secret, a, via)?;
    crate::delivery::outbox::queue::bury(c, t, CHANNEL, i, "endpoint_removed")?;
    activity::append(
        c,
        NewEntry::new(t, a, Kind::Connector)
            .via(via)
            .verdict(Verdict::WebhookRemoved)
            .detail(json!({ "webhook_id": i })),
    )?;
    Ok(())
}

/// Takes the tenant's turn to register an endpoint (concurrent registrations wait here, so
/// the cap holds) and refuses a tenant that has [`MAX_ENDPOINTS`] already.
pub(crate) fn make_room(c: &dyn Tx, tenant: &TenantId) -> Result<()> {
    crate::sql::lock_key(c, &["webhook endpoints", tenant.as_str()])?;
    let row = c.row("SELECT COUNT(*) FROM webhook_endpoints WHERE tenant_id = ?", &[tenant])?;
    let (n,): (i64,) = crate::sql::FromRow::from_row(&row.expect("a count"))?;
    if n >= MAX_ENDPOINTS as i64 {
        return Err(Error::Conflict {
            code: "too_many_webhooks",
            message: format!("a tenant has at most {MAX_ENDPOINTS} webhook endpoints; remove one first"),
        });
    }
    Ok(())
}

/// The tenant's endpoints, oldest first.
pub(crate) async fn list(store: &crate::store::Store, tenant: &TenantId) -> Result<Vec<Endpoint>> {
    let sql = format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = ? ORDER BY created_at, id");
    Ok(store.all(&sql, &[tenant]).await?)
}

/// One of the tenant's endpoints; `not_found` for another tenant's or an unknown one.
pub(crate) async fn one(store: &crate::store::Store, tenant: &TenantId, id: &str) -> Result<Endpoint> {
    let sql = format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = ? AND id = ?");
    let row: Option<Endpoint> = store.opt(&sql, &[tenant, &id]).await?;
    row.ok_or(Error::NotFound { what: "webhook" })
}

pub(crate) fn insert(
    c: &dyn Tx,
    tenant: &TenantId,
    id: &str,
    spec: &EndpointSpec,
    secret: &str,
    actor: &str,
    via: Transport,
) -> Result<()> {
    let events = serde_json::to_string(&spec.events).expect("strings serialize");
    c.exec(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, events, format, secret_name, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        &[&id, tenant, &spec.url, &events, &spec.format.as_str(), &secret, &actor, &Utc::now()],
    )?;
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict(Verdict::WebhookRegistered)
            .detail(json!({ "webhook_id": id, "url": spec.url, "events": spec.events, "format": spec.format.as_str() })),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example.
    #[test]
    fn signatures_match_the_standard_webhooks_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_whsec_base64() {
        let s = new_secret();
        assert!(s.starts_with("whsec_"));
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(&s[6..]).unwrap().len(), 24);
    }
}
