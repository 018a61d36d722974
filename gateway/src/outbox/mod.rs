//! The outbox: what leaves the gateway asynchronously, held durably until it is delivered.
//!
//! A runtime write (a comment, an unblock) inserts its command here in the same transaction
//! as the call's activity entry and ledger rows, so an answered `queued` is a command that
//! exists, and a failed call leaves none. The delivery worker ([`delivery`]) claims
//! what is due and sends it.
//!
//! Guarantees:
//! - Order per ordering key (a runtime command's task): a row is claimed only when no earlier
//!   row of its key is still queued and waiting (backing off or leased), and a batch carries
//!   a key's rows in order.
//! - A claimed row is leased to the claiming instance; a lease that lapses (the instance
//!   died) makes it due again, so nothing is lost. A runtime applies a command id once, so a
//!   second send is harmless: at least once on the wire, exactly once in effect.
//! - Each row ends once: `delivered`, `rejected` (the receiver refused it for good, with its
//!   code) or, after [`OutboxConfig::max_attempts`] attempts without an answer, `dead`. A
//!   dead letter stays visible and an admin can queue it again ([`Gateway::retry_delivery`]).

pub mod delivery;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::json;

use crate::Gateway;
use crate::activity::{self, Kind, NewEntry, Transport};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::runtime::wire::{self, Command};
use crate::sql::{Tx, lock_key};

/// The channel of runtime commands.
pub const RUNTIME: &str = "runtime";
/// The most rows one claim takes.
pub const CLAIM_LIMIT: usize = wire::MAX_BATCH;
/// The most rows one listing shows.
pub const LIST_LIMIT: usize = 200;
/// Every channel, for a lookup by id alone: rows are indexed by (tenant, channel, id), so
/// [`ANY_CHANNEL`] names each, bound from [`CHANNELS`] after the tenant.
const ANY_CHANNEL: &str = "channel IN (?, ?)";
const CHANNELS: [&str; 2] = [RUNTIME, crate::webhooks::CHANNEL];

/// How deliveries are retried.
#[derive(Clone, Copy, Debug)]
pub struct OutboxConfig {
    /// Attempts without an answer before a row is a dead letter.
    pub max_attempts: u32,
    /// The first retry's delay; each next one doubles, up to `backoff_max_ms`, with jitter.
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        OutboxConfig { max_attempts: 10, backoff_base_ms: 500, backoff_max_ms: 60_000 }
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
    /// The ordering key: a runtime command's task, a webhook message's endpoint.
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

/// Queues `command` for the tenant's runtime, in the caller's transaction. Returns whether
/// the runtime answered its last contact (`None` before any), as the transaction sees it.
///
/// Two statements, not one `INSERT ... RETURNING (SELECT reachable ...)`: SQLite runs a
/// RETURNING clause as a trigger over a temporary table, with a statement journal, and that
/// cost more than the second statement saves.
pub(crate) fn enqueue(c: &dyn Tx, tenant: &TenantId, command: &Command) -> Result<Option<bool>> {
    // Only what the command asks; its id, task and author have columns of their own.
    let payload = serde_json::to_string(&command.kind).expect("commands serialize");
    let row = NewRow {
        id: &command.command_id,
        channel: RUNTIME,
        key: &command.task_id,
        kind: command.kind.name(),
        author: &command.author,
        payload: &payload,
    };
    insert(c, tenant, &row)?;
    let reachable = c.row("SELECT reachable FROM runtimes WHERE tenant_id = ?", &[tenant])?;
    Ok(reachable.map(|r| r.get::<Option<i64>>(0)).transpose()?.flatten().map(|r| r != 0))
}

/// One row to queue.
pub(crate) struct NewRow<'a> {
    pub id: &'a str,
    pub channel: &'a str,
    /// Rows of one key are delivered in order.
    pub key: &'a str,
    pub kind: &'a str,
    pub author: &'a str,
    pub payload: &'a str,
}

/// Queues `row`, due now, in the caller's transaction.
pub(crate) fn insert(c: &dyn Tx, tenant: &TenantId, row: &NewRow<'_>) -> Result<()> {
    let now = crate::db::ts(Utc::now());
    c.exec(
        "INSERT INTO outbox (id, tenant_id, channel, ordering_key, kind, author, payload, status, attempts, next_attempt_at, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?)",
        &[&row.id, tenant, &row.channel, &row.key, &row.kind, &row.author, &row.payload, &now, &now],
    )?;
    Ok(())
}

/// A new command id.
pub(crate) fn command_id() -> String {
    format!("cmd_{}", uuid::Uuid::now_v7().simple())
}

/// Claims up to [`CLAIM_LIMIT`] due rows of `channel`, leased until `lease_until`: each row
/// whose key has no earlier row still waiting. Claims of all instances take turns.
///
/// The queued rows are read in `seq` order, a page at a time, and a key is blocked from its
/// first waiting row on. An index per key would answer "an earlier row still waiting?" with a
/// probe, but every enqueue would then write into one of as many places as there are keys,
/// and that index upkeep made a queued comment cost 0.55-0.65x a sandbox read instead of
/// about 0.75x (`make bench-outbox`).
pub(crate) fn claim(
    c: &dyn Tx,
    channel: &str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<Claimed>> {
    lock_key(c, &["outbox claim", channel])?;
    let picked = due_in_order(c, channel, now)?;
    let mut claimed = Vec::with_capacity(picked.len());
    for chunk in picked.chunks(100) {
        let seqs = in_list(chunk.iter().map(|(seq, ..)| *seq));
        let mut bodies: std::collections::HashMap<i64, (String, String, String)> = c
            .rows(&format!("SELECT seq, id, author, payload FROM outbox WHERE seq IN ({seqs})"), &[])?
            .iter()
            .map(|r| {
                crate::sql::FromRow::from_row(r)
                    .map(|(seq, id, author, payload)| (seq, (id, author, payload)))
            })
            .collect::<Result<_>>()?;
        c.exec(&format!("UPDATE outbox SET lease_until = ? WHERE seq IN ({seqs})"), &[&lease_until])?;
        for (seq, tenant, key) in chunk {
            let Some((id, author, payload)) = bodies.remove(seq) else { continue };
            claimed.push(Claimed {
                seq: *seq,
                id,
                tenant: TenantId::from_db(tenant.clone()),
                key: key.clone(),
                author,
                payload,
            });
        }
    }
    Ok(claimed)
}

/// How many queued rows one read of a claim's scan takes.
const CLAIM_SCAN_PAGE: usize = 1_000;

/// The first [`CLAIM_LIMIT`] rows of `channel` that are due now and whose key has no earlier
/// row waiting (backing off, or leased to an instance): `(seq, tenant, key)`, in `seq` order.
fn due_in_order(c: &dyn Tx, channel: &str, now: DateTime<Utc>) -> Result<Vec<(i64, String, String)>> {
    type Queued = (i64, String, String, DateTime<Utc>, Option<DateTime<Utc>>);
    let sql = format!(
        "SELECT seq, tenant_id, ordering_key, next_attempt_at, lease_until FROM outbox \
         WHERE status = 'queued' AND channel = ? AND seq > ? ORDER BY seq LIMIT {CLAIM_SCAN_PAGE}"
    );
    let mut blocked = std::collections::HashSet::new();
    let mut picked = Vec::new();
    let mut after = 0_i64;
    loop {
        let page: Vec<Queued> = c
            .rows(&sql, &[&channel, &after])?
            .iter()
            .map(crate::sql::FromRow::from_row)
            .collect::<Result<_>>()?;
        let last_page = page.len() < CLAIM_SCAN_PAGE;
        for (seq, tenant, key, next_attempt_at, lease) in page {
            after = seq;
            let tenant_key = (tenant, key);
            if blocked.contains(&tenant_key) {
                continue;
            }
            if next_attempt_at <= now && lease.is_none_or(|l| l <= now) {
                picked.push((seq, tenant_key.0, tenant_key.1));
                if picked.len() == CLAIM_LIMIT {
                    return Ok(picked);
                }
            } else {
                blocked.insert(tenant_key);
            }
        }
        if last_page {
            return Ok(picked);
        }
    }
}

/// `1, 2, 3`: integers only, so the list is safe to inline.
fn in_list(seqs: impl Iterator<Item = i64>) -> String {
    seqs.map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// Marks `seqs` delivered at `now`.
pub(crate) fn delivered(c: &dyn Tx, seqs: &[i64], now: DateTime<Utc>) -> Result<()> {
    for chunk in seqs.chunks(100) {
        let list = in_list(chunk.iter().copied());
        c.exec(
            &format!("UPDATE outbox SET status = 'delivered', delivered_at = ?, lease_until = NULL, last_error = NULL WHERE seq IN ({list}) AND status = 'queued'"),
            &[&now],
        )?;
    }
    Ok(())
}

/// Gives back the lease of `rows` without counting an attempt: they were claimed but not
/// sent (an earlier row of their key failed first).
pub(crate) fn release(c: &dyn Tx, rows: &[Claimed]) -> Result<()> {
    for chunk in rows.chunks(100) {
        let seqs = in_list(chunk.iter().map(|r| r.seq));
        c.exec(
            &format!("UPDATE outbox SET lease_until = NULL WHERE seq IN ({seqs}) AND status = 'queued'"),
            &[],
        )?;
    }
    Ok(())
}

/// Marks one row rejected for good by its receiver, with the receiver's code, and records it.
pub(crate) fn rejected(c: &dyn Tx, row: &Claimed, code: &str, message: Option<&str>) -> Result<()> {
    c.exec(
        "UPDATE outbox SET status = 'rejected', lease_until = NULL, last_error = ? WHERE seq = ? AND status = 'queued'",
        &[&code, &row.seq],
    )?;
    activity::append(
        c,
        NewEntry::new(&row.tenant, activity::SYSTEM_ACTOR, Kind::Connector)
            .verdict("command_rejected")
            .detail(json!({ "command_id": row.id, "code": code, "message": message })),
    )?;
    Ok(())
}

/// Counts a failed attempt for `rows` at `now`: each backs off, or becomes a dead letter
/// (recorded) once it has had `config.max_attempts`.
pub(crate) fn failed(
    c: &dyn Tx,
    rows: &[Claimed],
    code: &str,
    now: DateTime<Utc>,
    config: &OutboxConfig,
) -> Result<()> {
    for row in rows {
        let attempts: i64 = c
            .row("SELECT attempts FROM outbox WHERE seq = ? AND status = 'queued'", &[&row.seq])?
            .map(|r| r.get(0))
            .transpose()?
            .unwrap_or(-1);
        if attempts < 0 {
            continue;
        }
        let attempts = attempts + 1;
        if attempts >= i64::from(config.max_attempts) {
            c.exec(
                "UPDATE outbox SET status = 'dead', attempts = ?, lease_until = NULL, last_error = ? WHERE seq = ?",
                &[&attempts, &code, &row.seq],
            )?;
            activity::append(
                c,
                NewEntry::new(&row.tenant, activity::SYSTEM_ACTOR, Kind::Connector)
                    .verdict("dead_letter")
                    .detail(json!({ "command_id": row.id, "code": code, "attempts": attempts })),
            )?;
        } else {
            let next = now + config.backoff(attempts as u32);
            c.exec(
                "UPDATE outbox SET attempts = ?, next_attempt_at = ?, lease_until = NULL, last_error = ? WHERE seq = ?",
                &[&attempts, &next, &code, &row.seq],
            )?;
        }
    }
    Ok(())
}

const STATE_COLUMNS: &str =
    "id, ordering_key, kind, author, status, attempts, next_attempt_at, last_error, created_at, delivered_at";
type StateRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    DateTime<Utc>,
    Option<String>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

fn state(r: StateRow) -> CommandState {
    let (command_id, task_id, kind, author, status, attempts, next, last_error, created_at, delivered_at) = r;
    let status = DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Queued);
    CommandState {
        command_id,
        task_id,
        kind,
        author,
        status,
        attempts,
        next_attempt_at: (status == DeliveryStatus::Queued).then_some(next),
        last_error,
        created_at,
        delivered_at,
    }
}

/// One command's state, in a job (the `teams.command` tool reads it in its own transaction).
pub(crate) fn command_in(c: &dyn Tx, tenant: &TenantId, id: &str) -> Result<Option<CommandState>> {
    let sql = format!("SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND channel = ? AND id = ?");
    match c.row(&sql, &[tenant, &RUNTIME, &id])? {
        Some(r) => Ok(Some(state(crate::sql::FromRow::from_row(&r)?))),
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
    let row: Option<StateRow> = match channel {
        Some(channel) => {
            let sql =
                format!("SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND channel = ? AND id = ?");
            store.opt(&sql, &[tenant, &channel, &id]).await?
        }
        None => {
            let sql = format!(
                "SELECT {STATE_COLUMNS} FROM outbox WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ?"
            );
            store.opt(&sql, &[tenant, &CHANNELS[0], &CHANNELS[1], &id]).await?
        }
    };
    Ok(row.map(state))
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
    let rows: Vec<StateRow> = store.all(&sql, &[tenant, &channel, &status]).await?;
    Ok(rows.into_iter().map(state).collect())
}

impl Gateway {
    /// One of the tenant's runtime commands.
    pub async fn command(&self, tenant: &TenantId, id: &str) -> Result<CommandState> {
        read_command(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "command" })
    }

    /// The tenant's runtime commands, newest first, optionally only those in `status`.
    pub async fn commands(
        &self,
        tenant: &TenantId,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<CommandState>> {
        rows(&self.store, tenant, RUNTIME, status).await
    }

    /// Queues a dead letter (a runtime command or a webhook message) again, with its
    /// attempts reset; anything else is a conflict. Its state after.
    pub async fn retry_delivery(
        &self,
        tenant: &TenantId,
        id: &str,
        actor: &str,
        via: Transport,
    ) -> Result<CommandState> {
        let (t, i, a) = (tenant.clone(), id.to_string(), actor.to_string());
        self.write(move |c| retry_in(c, &t, &i, &a, via)).await?;
        self.wake_delivery();
        read_row(&self.store, tenant, id, None).await?.ok_or(Error::NotFound { what: "delivery" })
    }
}

fn retry_in(c: &dyn Tx, tenant: &TenantId, id: &str, actor: &str, via: Transport) -> Result<()> {
    let status: Option<String> = c
        .row(
            &format!("SELECT status FROM outbox WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ?"),
            &[tenant, &CHANNELS[0], &CHANNELS[1], &id],
        )?
        .map(|r| r.get(0))
        .transpose()?;
    let Some(status) = status else { return Err(Error::NotFound { what: "delivery" }) };
    if status != DeliveryStatus::Dead.as_str() {
        return Err(Error::Conflict {
            code: "not_a_dead_letter",
            message: format!("it is {status}; only a dead letter can be retried"),
        });
    }
    c.exec(
        &format!("UPDATE outbox SET status = 'queued', attempts = 0, next_attempt_at = ?, lease_until = NULL WHERE tenant_id = ? AND {ANY_CHANNEL} AND id = ?"),
        &[&Utc::now(), tenant, &CHANNELS[0], &CHANNELS[1], &id],
    )?;
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Connector)
            .via(via)
            .verdict("dead_letter_retried")
            .detail(json!({ "id": id })),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::wire::CommandKind;
    use crate::testing::TestDb;

    fn queue(c: &dyn Tx, key: &str) -> Result<()> {
        let tenant = TenantId::from_db("ten_claims".into());
        insert(
            c,
            &tenant,
            &NewRow { id: &command_id(), channel: "test", key, kind: "comment", author: "a", payload: "{}" },
        )
    }

    /// Keys in `claimed`, in claim order.
    fn keys(claimed: &[Claimed]) -> Vec<&str> {
        claimed.iter().map(|r| r.key.as_str()).collect()
    }

    /// Per key: `a` and `b` alternate over more rows than one page of the scan, then one `c`.
    const ROWS_EACH: usize = (CLAIM_SCAN_PAGE + 200) / 2;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_row_holds_back_its_key_and_no_other_on_both_engines() {
        for db in TestDb::both().await {
            let now = Utc::now();
            db.run(move |c| {
                c.exec(
                    "INSERT INTO tenants (id, name, credit_units, created_at) VALUES ('ten_claims', 'Claims', 0, ?)",
                    &[&now],
                )?;
                for i in 0..2 * ROWS_EACH {
                    queue(c, if i % 2 == 0 { "a" } else { "b" })?;
                }
                queue(c, "c")
            })
            .await
            .unwrap();
            let now = Utc::now() + Duration::seconds(1);
            // a's first row backs off a minute: every later row of a waits behind it.
            let later = now + Duration::seconds(60);
            db.run(move |c| {
                c.exec(
                    "UPDATE outbox SET next_attempt_at = ? WHERE seq = (SELECT MIN(seq) FROM outbox WHERE ordering_key = 'a')",
                    &[&later],
                )
            })
            .await
            .unwrap();
            let (name, lease) = (db.name(), now + Duration::hours(1));
            let claim_at = |at: DateTime<Utc>| db.run(move |c| claim(c, "test", at, lease));
            let first = claim_at(now).await.unwrap();
            assert_eq!(keys(&first), vec!["b"; CLAIM_LIMIT], "{name}: a waits, b is free up to the limit");
            assert!(first.windows(2).all(|w| w[0].seq < w[1].seq), "{name}: in order");
            // b's claimed rows are leased, so the rest of b waits behind them; c waits for nobody.
            assert_eq!(keys(&claim_at(now).await.unwrap()), vec!["c"], "{name}");
            let seqs: Vec<i64> = first.iter().map(|r| r.seq).collect();
            db.run(move |c| delivered(c, &seqs, now)).await.unwrap();
            // The rest of b, past the scan's first page.
            assert_eq!(keys(&claim_at(now).await.unwrap()), vec!["b"; ROWS_EACH - CLAIM_LIMIT], "{name}");
            // a's rows come once its first row is due again.
            let a = claim_at(later).await.unwrap();
            assert_eq!(keys(&a), vec!["a"; CLAIM_LIMIT.min(ROWS_EACH)], "{name}");
        }
    }

    /// A queued command's payload holds only what it asks; the claim gives back the whole
    /// command. A row queued by an older release, whose payload is the whole command, is
    /// delivered as the same command.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claimed_row_is_the_command_queued_in_either_payload_form_on_both_engines() {
        let command = |id: &str| Command {
            command_id: id.into(),
            task_id: "tsk_7".into(),
            author: "prf_writer".into(),
            kind: CommandKind::Comment { body: "shipped \"v2\"".into() },
        };
        let (new, old) = (command("cmd_new"), command("cmd_old"));
        for db in TestDb::both().await {
            let (n, o, now) = (new.clone(), old.clone(), Utc::now());
            db.run(move |c| {
                let tenant = TenantId::from_db("ten_claims".into());
                c.exec(
                    "INSERT INTO tenants (id, name, credit_units, created_at) VALUES (?, 'Claims', 0, ?)",
                    &[&tenant, &now],
                )?;
                let whole = serde_json::to_string(&o).unwrap();
                let row = NewRow {
                    id: &o.command_id,
                    channel: RUNTIME,
                    key: &o.task_id,
                    kind: "comment",
                    author: &o.author,
                    payload: &whole,
                };
                insert(c, &tenant, &row)?;
                enqueue(c, &tenant, &n).map(drop)
            })
            .await
            .unwrap();
            let (at, lease) = (now + Duration::seconds(1), now + Duration::hours(1));
            let claimed = db.run(move |c| claim(c, RUNTIME, at, lease)).await.unwrap();
            let commands: Vec<Command> = claimed.iter().map(|r| r.command().unwrap()).collect();
            assert_eq!(commands, vec![old.clone(), new.clone()], "{}", db.name());
            assert!(!claimed[1].payload.contains("prf_writer"), "{}: {}", db.name(), claimed[1].payload);
        }
    }

    #[test]
    fn backoff_grows_to_its_cap_and_never_comes_early() {
        let c = OutboxConfig { max_attempts: 10, backoff_base_ms: 100, backoff_max_ms: 1_000 };
        for _ in 0..100 {
            let first = c.backoff(1).num_milliseconds();
            assert!((50..=100).contains(&first), "{first}");
            let third = c.backoff(3).num_milliseconds();
            assert!((200..=400).contains(&third), "{third}");
            let late = c.backoff(30).num_milliseconds();
            assert!((500..=1_000).contains(&late), "{late}");
        }
    }
}
