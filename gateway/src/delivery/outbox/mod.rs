//! The outbox: what leaves the gateway asynchronously, held durably until it is delivered.
//!
//! A runtime write (a comment, an unblock) inserts its command here in the same transaction
//! as the call's activity entry and ledger rows, so an answered `queued` is a command that
//! exists, and a failed call leaves none. Webhook messages are queued in the transaction of
//! the entry they report. The delivery worker ([`delivery`]) claims what is due ([`queue`])
//! and sends it.
//!
//! Each destination has one queue: a tenant's team runtime (every runtime command of the
//! tenant) and each webhook endpoint. Guarantees:
//! - Order per queue: a queue's rows go out in `seq` order, and nothing is sent while an
//!   earlier row of its queue waits (backing off, or in flight). A runtime's order is so also
//!   the order of each task's commands.
//! - Bounded: a queue holds at most [`MAX_QUEUED`] queued rows. A runtime write past it is
//!   refused `outbox_full` with the figure and the oldest command to wait for, and writes
//!   nothing; an event for a full endpoint is recorded as a dead letter (`outbox_full`), never
//!   failing the action it reports.
//! - A claim reads only queues that are due and only their first rows, through
//!   `outbox_queues_due` and `outbox_pending`: a queue that is backing off or in flight costs
//!   a claim nothing, however long it is.
//! - A claimed queue is leased to the claiming delivery, which renews the lease while it
//!   sends; a lease that lapses (the instance died) makes the queue due again, so nothing is
//!   lost, and a delivery that lost its lease records nothing. A runtime applies a command id
//!   once and a receiver deduplicates on `webhook-id`: at least once on the wire, exactly once
//!   in effect.
//! - Each row ends once: `delivered`, `rejected` (the receiver refused it for good, with its
//!   code), `purged` (an admin gave up on its queue) or, after [`OutboxConfig::max_attempts`]
//!   attempts without an answer, `dead`. A dead letter stays visible and an admin can queue
//!   it again ([`Gateway::retry_delivery`](crate::Gateway::retry_delivery)). Delivered and purged rows are deleted after
//!   [`OutboxConfig::retention_secs`].

pub mod delivery;
pub mod queue;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Transport, Verdict};
use crate::delivery::runtime::wire::Command;
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::{FromRow, Tx};

pub use queue::{ClaimedQueue, Queue};

/// The channel of runtime commands.
pub const RUNTIME: &str = "runtime";
/// The channel of webhook messages (the webhooks module writes its rows).
pub const WEBHOOK: &str = "webhook";
/// The channel of Slack messages (the Slack module writes its rows).
pub const SLACK: &str = "slack";
/// The most queued rows one queue holds: each webhook endpoint's, and by default a tenant's
/// runtime's ([`OutboxConfig::max_queued`]).
pub const MAX_QUEUED: i64 = 10_000;
/// The most rows one listing shows.
pub const LIST_LIMIT: usize = 200;
/// Every channel, for a lookup by id alone: rows are indexed by (tenant, channel, id), so
/// [`ANY_CHANNEL`] names each, bound from [`CHANNELS`] after the tenant.
const ANY_CHANNEL: &str = "channel IN (?, ?, ?)";
pub(crate) const CHANNELS: [&str; 3] = [RUNTIME, WEBHOOK, SLACK];

/// A stored channel's name as the closed label it is (for spans and metrics); an unknown one
/// reads as the webhook channel.
pub(crate) fn label(channel: &str) -> &'static str {
    CHANNELS.into_iter().find(|c| *c == channel).unwrap_or(WEBHOOK)
}

/// How deliveries are retried, and how long finished rows are kept.
#[derive(Clone, Copy, Debug)]
pub struct OutboxConfig {
    /// Attempts without an answer before a row is a dead letter.
    pub max_attempts: u32,
    /// The first retry's delay; each next one doubles, up to `backoff_max_ms`, with jitter.
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// How long delivered and purged rows are kept before they are deleted.
    pub retention_secs: i64,
    /// How long dead letters and rejections are kept, from when they were queued: long
    /// enough for an admin to retry them, bounded so an endpoint that stays full (each event
    /// a dead letter) cannot grow the table without end.
    pub dead_retention_secs: i64,
    /// The most commands a tenant's runtime queue holds; a write past it is `outbox_full`.
    pub max_queued: i64,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        OutboxConfig {
            max_attempts: 10,
            backoff_base_ms: 500,
            backoff_max_ms: 60_000,
            retention_secs: 7 * 86_400,
            dead_retention_secs: 30 * 86_400,
            max_queued: MAX_QUEUED,
        }
    }
}

impl OutboxConfig {
    /// The delay before attempt `attempts + 1`: exponential, capped, with full jitter over its
    /// upper half (so retries of many rows spread out but never come early).
    pub fn backoff(&self, attempts: u32) -> Duration {
        let exp = self.backoff_base_ms.saturating_mul(1u64 << attempts.min(20).saturating_sub(1));
        let cap = exp.min(self.backoff_max_ms).max(1);
        let jittered = cap / 2 + rand::random::<u64>() % (cap / 2 + 1);
        Duration::milliseconds(jittered as i64)
    }
}

/// Where a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Queued,
    Delivered,
    Rejected,
    Dead,
    /// An admin purged its queue's backlog: it will not be sent.
    Purged,
}

impl DeliveryStatus {
    pub fn parse(s: &str) -> Option<DeliveryStatus> {
        serde_json::from_value(json!(s)).ok()
    }
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Queued => "queued",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Rejected => "rejected",
            DeliveryStatus::Dead => "dead",
            DeliveryStatus::Purged => "purged",
        }
    }
}

/// One command's delivery state.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommandState {
    pub command_id: String,
    pub task_id: String,
    /// `comment`, `unblock` or `delete`.
    pub kind: String,
    pub author: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    /// When the next attempt is due, while queued.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last failure's code (a transport failure, or the runtime's refusal).
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// A claimed row on its way out.
#[derive(Clone, Debug)]
pub(crate) struct Claimed {
    pub seq: i64,
    pub id: String,
    pub tenant: TenantId,
    /// A runtime command's task, a webhook message's endpoint.
    pub key: String,
    /// Who queued it.
    pub author: String,
    pub payload: String,
}

impl Claimed {
    /// The runtime command this row carries: its id, task and author from their columns, what
    /// it asks from the payload. Rows queued before the payload held only that (a whole
    /// [`Command`]) read the same, since the extra fields are ignored.
    pub(crate) fn command(&self) -> serde_json::Result<Command> {
        Ok(Command {
            command_id: self.id.clone(),
            task_id: self.key.clone(),
            author: self.author.clone(),
            kind: serde_json::from_str(&self.payload)?,
        })
    }
}

pub use crate::domain::connector::Full;

/// Queues `command` for the tenant's runtime, in the caller's transaction: whether the runtime
/// answered its last contact (`None` before any), as the transaction sees it, or the full
/// queue it did not fit in (nothing written then).
///
/// Two statements for the answer, not one `INSERT ... RETURNING (SELECT reachable ...)`:
/// SQLite runs a RETURNING clause as a trigger over a temporary table, with a statement
/// journal, and that cost more than the second statement saves.
pub(crate) fn enqueue(
    c: &dyn Tx,
    tenant: &TenantId,
    command: &Command,
    max_queued: i64,
) -> Result<std::result::Result<Option<bool>, Full>> {
    // Only what the command asks; its id, task and author have columns of their own.
    let payload = serde_json::to_string(&command.kind).expect("commands serialize");
    let row = NewRow {
        id: &command.command_id,
        channel: RUNTIME,
        destination: "",
        key: &command.task_id,
        kind: command.kind.name(),
        author: &command.author,
        payload: &payload,
    };
    if let Err(full) = insert(c, tenant, &row, max_queued)? {
        return Ok(Err(full));
    }
    let reachable = c.row("SELECT reachable FROM runtimes WHERE tenant_id = ?", &[tenant])?;
    Ok(Ok(reachable.map(|r| r.get::<Option<i64>>(0)).transpose()?.flatten().map(|r| r != 0)))
}

/// One row to queue.
pub(crate) struct NewRow<'a> {
    pub id: &'a str,
    pub channel: &'a str,
    /// The queue it joins: `""` for the tenant's runtime, an endpoint's id.
    pub destination: &'a str,
    /// A runtime command's task, a webhook message's endpoint.
    pub key: &'a str,
    pub kind: &'a str,
    pub author: &'a str,
    pub payload: &'a str,
}

/// Queues `row`, due now, in the caller's transaction; or, when its queue already holds
/// `max_queued` rows, writes nothing and says so.
pub(crate) fn insert(
    c: &dyn Tx,
    tenant: &TenantId,
    row: &NewRow<'_>,
    max_queued: i64,
) -> Result<std::result::Result<(), Full>> {
    if !queue::admit(c, tenant, row.channel, row.destination, max_queued)? {
        return Ok(Err(queue::full(c, tenant, row.channel, row.destination, max_queued)?));
    }
    write_row(c, tenant, row, "queued", None)?;
    Ok(Ok(()))
}

/// Writes `row` with `status`, due now.
fn write_row(
    c: &dyn Tx,
    tenant: &TenantId,
    row: &NewRow<'_>,
    status: &str,
    error: Option<&str>,
) -> Result<()> {
    let now = crate::stored::ts(Utc::now());
    c.exec(
        "INSERT INTO outbox (id, tenant_id, channel, destination, ordering_key, kind, author, payload, status, attempts, next_attempt_at, last_error, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
        &[&row.id, tenant, &row.channel, &row.destination, &row.key, &row.kind, &row.author, &row.payload, &status, &now, &error, &now],
    )?;
    Ok(())
}

/// Records `row` as a dead letter at once, because its queue is full: what it reports still
/// happened, and an admin can queue it again once the queue drains.
pub(crate) fn insert_dead(c: &dyn Tx, tenant: &TenantId, row: &NewRow<'_>) -> Result<()> {
    write_row(c, tenant, row, "dead", Some("outbox_full"))
}

/// A new command id.
pub(crate) fn command_id() -> String {
    format!("cmd_{}", uuid::Uuid::now_v7().simple())
}

const STATE_COLUMNS: &str =
    "id, ordering_key, kind, author, status, attempts, next_attempt_at, last_error, created_at, delivered_at";
/// A row of [`STATE_COLUMNS`].
impl crate::sql::FromRow for CommandState {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<CommandState> {
        let status = crate::stored::named("delivery status", &r.get::<String>(4)?, DeliveryStatus::parse)?;
        Ok(CommandState {
            command_id: r.get(0)?,
            task_id: r.get(1)?,
            kind: r.get(2)?,
            author: r.get(3)?,
            status,
            attempts: r.get(5)?,
            next_attempt_at: if status == DeliveryStatus::Queued { Some(r.get(6)?) } else { None },
            last_error: r.get(7)?,
            created_at: r.get(8)?,
            delivered_at: r.get(9)?,
        })
    }
}

/// One command's state, in a job (the `teams.command` tool reads it in its own transaction).
pub(crate) fn command_in(c: &dyn Tx, tenant: &TenantId, id: &str) -> Result<Option<CommandState>> {
    let sql = format!("SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND channel = ? AND id = ?");
    match c.row(&sql, &[tenant, &RUNTIME, &id])? {
        Some(r) => Ok(Some(crate::sql::FromRow::from_row(&r)?)),
        None => Ok(None),
    }
}

/// One row's state, read outside any job; only a row of `channel` when one is given.
pub(crate) async fn read_row(
    store: &crate::store::Store,
    tenant: &TenantId,
    id: &str,
    channel: Option<&str>,
) -> Result<Option<CommandState>> {
    let row: Option<CommandState> = match channel {
        Some(channel) => {
            let sql =
                format!("SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND channel = ? AND id = ?");
            store.opt(&sql, &[tenant, &channel, &id]).await?
        }
        None => {
            let sql = format!(
                "SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ?"
            );
            store.opt(&sql, &[tenant, &CHANNELS[0], &CHANNELS[1], &CHANNELS[2], &id]).await?
        }
    };
    Ok(row)
}

/// One runtime command's state, read outside any job.
pub(crate) async fn read_command(
    store: &crate::store::Store,
    tenant: &TenantId,
    id: &str,
) -> Result<Option<CommandState>> {
    read_row(store, tenant, id, Some(RUNTIME)).await
}

/// The tenant's rows of `channel`, newest first (at most [`LIST_LIMIT`]), optionally only
/// those in `status`. Ids are UUIDv7 behind one prefix per channel, so newest first is
/// descending id, which the `(tenant_id, channel, id)` index reads in order.
pub(crate) async fn rows(
    store: &crate::store::Store,
    tenant: &TenantId,
    channel: &str,
    status: Option<DeliveryStatus>,
) -> Result<Vec<CommandState>> {
    let filter = if status.is_some() { "AND status = ?" } else { "AND ? IS NULL" };
    let sql = format!(
        "SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND channel = ? {filter} ORDER BY id DESC LIMIT {LIST_LIMIT}"
    );
    let status = status.map(DeliveryStatus::as_str);
    Ok(store.all(&sql, &[tenant, &channel, &status]).await?)
}

pub(crate) fn retry_in(
    c: &dyn Tx,
    tenant: &TenantId,
    id: &str,
    actor: &str,
    via: Transport,
    max_runtime: i64,
) -> Result<()> {
    // The tenant's lock before the row and its queue's (docs/architecture.md, the lock order).
    activity::lock_tenant(c, tenant)?;
    let row: Option<(String, String, String)> = c
        .row(
            &format!("SELECT status, channel, destination FROM outbox WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ?"),
            &[tenant, &CHANNELS[0], &CHANNELS[1], &CHANNELS[2], &id],
        )?
        .map(|r| FromRow::from_row(&r))
        .transpose()?;
    let Some((status, channel, destination)) = row else { return Err(Error::NotFound { what: "delivery" }) };
    let not_dead = || Error::Conflict {
        code: "not_a_dead_letter",
        message: format!("it is {status}; only a dead letter can be retried"),
    };
    if status != DeliveryStatus::Dead.as_str() {
        return Err(not_dead());
    }
    if channel == WEBHOOK
        && c.row("SELECT 1 FROM webhook_endpoints WHERE tenant_id = ? AND id = ?", &[tenant, &destination])?
            .is_none()
    {
        return Err(Error::Conflict {
            code: "endpoint_removed",
            message: "its webhook endpoint was removed; register the endpoint again for new events".into(),
        });
    }
    if channel == SLACK && c.row("SELECT 1 FROM slack_apps WHERE tenant_id = ?", &[tenant])?.is_none() {
        return Err(Error::Conflict {
            code: "slack_app_removed",
            message: "the tenant's Slack app was removed; set it again for new messages".into(),
        });
    }
    // Only one retry of a dead letter takes it back into its queue.
    let taken = c.exec(
        &format!("UPDATE outbox SET status = 'queued', attempts = 0, next_attempt_at = ?, lease_until = NULL WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ? AND status = 'dead'"),
        &[&Utc::now(), tenant, &CHANNELS[0], &CHANNELS[1], &CHANNELS[2], &id],
    )?;
    if taken == 0 {
        return Err(not_dead());
    }
    let max = if channel == RUNTIME { max_runtime } else { MAX_QUEUED };
    if !queue::admit(c, tenant, &channel, &destination, max)? {
        return Err(full_conflict(&queue::full(c, tenant, &channel, &destination, max)?));
    }
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict(Verdict::DeadLetterRetried)
            .detail(json!({ "id": id })),
    )?;
    Ok(())
}

/// The conflict a full queue answers an admin with.
fn full_conflict(full: &Full) -> Error {
    Error::Conflict {
        code: "outbox_full",
        message: format!(
            "{} rows already wait in this queue (at most {}); wait for them to be delivered, or purge the backlog",
            full.queued, full.limit
        ),
    }
}

/// What a purge ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Purged {
    /// Rows that were waiting, now never sent.
    pub purged: u64,
    /// Dead letters given up on too (they would otherwise wait for their retention).
    pub dead_letters: u64,
}

/// Ends every queued row and every dead letter of one queue as `purged`, and forgets the
/// queue. The tenant's lock first, then the queue's row (docs/architecture.md, the lock order).
pub(crate) fn purge_in(
    c: &dyn Tx,
    tenant: &TenantId,
    channel: &str,
    destination: &str,
    actor: &str,
    via: Transport,
) -> Result<Purged> {
    activity::lock_tenant(c, tenant)?;
    queue::lock(c, tenant, channel, destination)?;
    let end = |status: &str| {
        c.exec(
            "UPDATE outbox SET status = 'purged', delivered_at = ?, lease_until = NULL \
             WHERE tenant_id = ? AND channel = ? AND destination = ? AND status = ?",
            &[&Utc::now(), tenant, &channel, &destination, &status],
        )
    };
    let purged = Purged { purged: end("queued")?, dead_letters: end("dead")? };
    queue::forget(c, tenant, channel, destination)?;
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict(Verdict::BacklogPurged)
            .detail(json!({ "channel": channel, "destination": destination, "purged": purged.purged,
                "dead_letters": purged.dead_letters })),
    )?;
    Ok(purged)
}
