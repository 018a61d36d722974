//! The outbox's queues: one per destination (a tenant's team runtime, one webhook endpoint),
//! each a row of `outbox_queues` that counts its queued rows and says when it is next due.
//! This module is the only writer of that table.
//!
//! Guarantees:
//! - [`admit`] counts a row into its queue only below [`MAX_QUEUED`], and writes nothing when
//!   the queue is full.
//! - [`claim`] reads the queues due now (`outbox_queues_due`) and, of each, its first rows in
//!   order (`outbox_pending`); a queue that is backing off or leased is never read.
//! - A claimed queue is leased to its claim's owner until [`ClaimedQueue::lease_until`], which
//!   [`renew`] moves while the delivery runs; [`settle`] records an outcome only while the
//!   owner still holds the lease, so a delivery that lost its queue (to a lapsed lease, or a
//!   purge) changes nothing.
//! - The count is exact: every row that leaves `queued` is counted out in the transaction that
//!   ends it, and a queue with no row left is deleted.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::{Claimed, Full, MAX_QUEUED, OutboxConfig};
use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::error::Result;
use crate::ids::TenantId;
use crate::sql::{FromRow, Tx, lock_key};

/// The most rows one delivery of a queue carries (a runtime's batch; an endpoint's run).
pub const BATCH: usize = crate::delivery::runtime::wire::MAX_BATCH;

/// A queue as an admin sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Queue {
    /// `runtime`, `webhook` or `slack`.
    pub channel: String,
    /// `""` for the runtime, the endpoint's id for a webhook.
    pub destination: String,
    /// Rows waiting in it.
    pub queued: i64,
    /// The most it holds.
    pub limit: i64,
    /// When it is next due: now, a retry's time, or the end of a delivery in flight.
    pub due_at: DateTime<Utc>,
    /// Whether a delivery of it is in flight.
    pub in_flight: bool,
}

/// One queue claimed for a delivery, with the rows it carries, in order.
#[derive(Clone, Debug)]
pub struct ClaimedQueue {
    pub tenant: TenantId,
    pub channel: &'static str,
    pub destination: String,
    /// Who holds the lease: the delivery that claimed it.
    pub owner: String,
    pub lease_until: DateTime<Utc>,
    pub(crate) rows: Vec<Claimed>,
}

/// What became of a claimed queue's rows.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub delivered: Vec<i64>,
    /// Rows the receiver refused for good, with its code and message.
    pub rejected: Vec<(Claimed, String, Option<String>)>,
    /// Rows that got no answer, with why: each counts an attempt.
    pub failed: Vec<Claimed>,
    pub failure: Option<String>,
    /// Not before this is a failed row tried again (the receiver said when: `Retry-After`).
    pub not_before: Option<DateTime<Utc>>,
}

const KEY: &str = "tenant_id = ? AND channel = ? AND destination = ?";

/// Counts one more row into the queue, creating it due now; false, with nothing written,
/// when it already holds `max` rows. One statement, so two first enqueues at once on
/// PostgreSQL both count (the second updates what the first inserted).
pub(crate) fn admit(
    c: &dyn Tx,
    tenant: &TenantId,
    channel: &str,
    destination: &str,
    max: i64,
) -> Result<bool> {
    let counted = c.exec(
        "INSERT INTO outbox_queues (tenant_id, channel, destination, queued, due_at) VALUES (?, ?, ?, 1, ?) \
         ON CONFLICT (tenant_id, channel, destination) DO UPDATE SET queued = outbox_queues.queued + 1 \
         WHERE outbox_queues.queued < ?",
        &[tenant, &channel, &destination, &Utc::now(), &max],
    )?;
    Ok(counted == 1)
}

/// Locks the queue's row until commit on PostgreSQL, so an enqueue in flight commits before
/// this job reads the queue's rows (SQLite's single writer needs nothing).
pub(crate) fn lock(c: &dyn Tx, tenant: &TenantId, channel: &str, destination: &str) -> Result<()> {
    let sql = format!("SELECT queued FROM outbox_queues WHERE {KEY}{}", crate::sql::for_update(c));
    c.rows(&sql, &[tenant, &channel, &destination])?;
    Ok(())
}

/// The full queue's figure and its oldest row, for the refusal.
pub(crate) fn full(
    c: &dyn Tx,
    tenant: &TenantId,
    channel: &str,
    destination: &str,
    limit: i64,
) -> Result<Full> {
    let queued = c
        .row(&format!("SELECT queued FROM outbox_queues WHERE {KEY}"), &[tenant, &channel, &destination])?
        .map(|r| r.get::<i64>(0))
        .transpose()?
        .unwrap_or(limit);
    let oldest = c
        .row(
            &format!("SELECT id FROM outbox WHERE {KEY} AND status = 'queued' ORDER BY seq LIMIT 1"),
            &[tenant, &channel, &destination],
        )?
        .map(|r| r.get::<String>(0))
        .transpose()?;
    Ok(Full { queued, limit, oldest })
}

/// Ends a removed destination's queue: every queued row dead with `why`, the queue forgotten.
pub(crate) fn bury(c: &dyn Tx, tenant: &TenantId, channel: &str, destination: &str, why: &str) -> Result<()> {
    lock(c, tenant, channel, destination)?;
    c.exec(
        "UPDATE outbox SET status = 'dead', last_error = ?, lease_until = NULL WHERE tenant_id = ? AND channel = ? AND destination = ? AND status = 'queued'",
        &[&why, &tenant.as_str(), &channel, &destination],
    )?;
    forget(c, tenant, channel, destination)
}

/// Deletes a queue whose rows are all gone (purged, or their endpoint removed); the caller
/// [`lock`]ed it before ending its rows.
pub(crate) fn forget(c: &dyn Tx, tenant: &TenantId, channel: &str, destination: &str) -> Result<()> {
    c.exec(&format!("DELETE FROM outbox_queues WHERE {KEY}"), &[tenant, &channel, &destination])?;
    Ok(())
}

/// Claims up to `max_queues` queues of `channel` that are due at `now`, each with up to
/// [`BATCH`] of its first rows that are due, leased until `lease_until` to a token of its own
/// (`owner` and a random part), so no two deliveries ever hold one lease. Claims of every
/// instance take turns.
pub(crate) fn claim(
    c: &dyn Tx,
    channel: &'static str,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    owner: &str,
    max_queues: usize,
) -> Result<Vec<ClaimedQueue>> {
    lock_key(c, &["outbox claim", channel])?;
    // The queue rows an enqueue holds (it holds its tenant's lock too) are skipped, not
    // waited for: a claim waiting on one queue while holding another would close a circle
    // with a batch enqueueing into both.
    let due_sql = format!("{DUE_SQL}{}", crate::sql::skip_locked(c, "outbox_queues"));
    let due: Vec<(String, String)> = c
        .rows(&due_sql, &[&channel, &now, &(max_queues as i64)])?
        .iter()
        .map(FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    let mut claimed = Vec::with_capacity(due.len());
    for (tenant, destination) in due {
        let tenant = TenantId::from_db(tenant);
        let token = format!("{owner}.{}", uuid::Uuid::new_v4().simple());
        let key: [&dyn crate::sql::ToValue; 3] = [&tenant, &channel, &destination];
        let next = match head(c, &tenant, channel, &destination, now) {
            Ok(Head::Empty) => {
                // An enqueue in flight may hold a row this read did not see: wait for it.
                lock(c, &tenant, channel, &destination)?;
                match head(c, &tenant, channel, &destination, now)? {
                    Head::Empty => {
                        forget(c, &tenant, channel, &destination)?;
                        continue;
                    }
                    other => other,
                }
            }
            Ok(other) => other,
            Err(e) => {
                // One unreadable row holds back its own queue only, for a minute.
                tracing::error!(tenant = %tenant, channel, destination, error = %e, "an outbox queue's rows do not read");
                let later = now + chrono::Duration::seconds(60);
                c.exec(
                    &format!("UPDATE outbox_queues SET due_at = ? WHERE {KEY}"),
                    &[&later, key[0], key[1], key[2]],
                )?;
                continue;
            }
        };
        match next {
            Head::Empty => {}
            Head::NotDue(at) => {
                c.exec(
                    &format!("UPDATE outbox_queues SET due_at = ? WHERE {KEY}"),
                    &[&at, key[0], key[1], key[2]],
                )?;
            }
            Head::Due(rows) => {
                c.exec(
                    &format!("UPDATE outbox_queues SET due_at = ?, lease_owner = ? WHERE {KEY}"),
                    &[&lease_until, &token, key[0], key[1], key[2]],
                )?;
                claimed.push(ClaimedQueue { tenant, channel, destination, owner: token, lease_until, rows });
            }
        }
    }
    Ok(claimed)
}

/// The queues of a channel due now, soonest first: read from `outbox_queues_due` alone.
const DUE_SQL: &str = "SELECT tenant_id, destination FROM outbox_queues WHERE channel = ? AND due_at <= ? ORDER BY due_at LIMIT ?";

/// A queue's first rows in order: read from `outbox_pending` alone.
fn head_sql() -> String {
    format!(
        "SELECT seq, id, ordering_key, author, payload, next_attempt_at FROM outbox \
         WHERE {KEY} AND status = 'queued' ORDER BY seq LIMIT {BATCH}"
    )
}

/// The start of a queue: its first rows that are due, in order, or when its first row is due.
enum Head {
    Due(Vec<Claimed>),
    NotDue(DateTime<Utc>),
    Empty,
}

fn head(c: &dyn Tx, tenant: &TenantId, channel: &str, destination: &str, now: DateTime<Utc>) -> Result<Head> {
    type Row = (i64, String, String, String, String, DateTime<Utc>);
    let rows: Vec<Row> = c
        .rows(&head_sql(), &[tenant, &channel, &destination])?
        .iter()
        .map(FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    let Some(first) = rows.first() else { return Ok(Head::Empty) };
    if first.5 > now {
        return Ok(Head::NotDue(first.5));
    }
    // A row backing off holds back every row after it.
    let due = rows
        .into_iter()
        .take_while(|r| r.5 <= now)
        .map(|(seq, id, key, author, payload, _)| Claimed {
            seq,
            id,
            tenant: tenant.clone(),
            key,
            author,
            payload,
        })
        .collect();
    Ok(Head::Due(due))
}

/// Moves the lease's end to `lease_until`; false when `q`'s owner no longer holds it.
pub(crate) fn renew(c: &dyn Tx, q: &ClaimedQueue, lease_until: DateTime<Utc>) -> Result<bool> {
    let sql = format!("UPDATE outbox_queues SET due_at = ? WHERE {KEY} AND lease_owner = ?");
    Ok(c.exec(&sql, &[&lease_until, &q.tenant, &q.channel, &q.destination, &q.owner])? == 1)
}

/// Records what became of a claimed queue's rows and gives its lease back: the queue is due
/// again now, at its failed head's retry, or deleted when nothing is left in it. Nothing is
/// recorded when the lease is no longer `q`'s. Answers how many rows failed this attempt and,
/// of those, how many became dead letters.
pub(crate) fn settle(
    c: &dyn Tx,
    q: &ClaimedQueue,
    outcome: &Outcome,
    config: &OutboxConfig,
) -> Result<(u64, u64)> {
    // The tenant's lock first, as every writer of its log takes it (docs/architecture.md, the
    // lock order): settling may append to the log, and a batch of the tenant's calls holds
    // that lock while it enqueues into this queue.
    crate::audit::activity::lock_tenant(c, &q.tenant)?;
    let key: [&dyn crate::sql::ToValue; 3] = [&q.tenant, &q.channel, &q.destination];
    // Takes the queue's row (locked until commit on PostgreSQL) only while the lease is q's.
    let held = format!("UPDATE outbox_queues SET lease_owner = lease_owner WHERE {KEY} AND lease_owner = ?");
    if c.exec(&held, &[key[0], key[1], key[2], &q.owner])? == 0 {
        return Ok((0, 0));
    }
    let now = Utc::now();
    let mut ended = delivered(c, &outcome.delivered, now)?;
    for (row, code, message) in &outcome.rejected {
        ended += rejected(c, row, code, message.as_deref())?;
    }
    let code = outcome.failure.as_deref().unwrap_or("delivery_failed");
    let (dead, retry_at) = failed(c, &outcome.failed, code, now, outcome.not_before, config)?;
    ended += dead;
    c.exec(
        &format!(
            "UPDATE outbox_queues SET queued = CASE WHEN queued > ? THEN queued - ? ELSE 0 END, \
             due_at = ?, lease_owner = NULL WHERE {KEY} AND lease_owner = ?"
        ),
        &[&(ended as i64), &(ended as i64), &retry_at.unwrap_or(now), key[0], key[1], key[2], &q.owner],
    )?;
    c.exec(&format!("DELETE FROM outbox_queues WHERE {KEY} AND queued = 0"), &key)?;
    Ok((outcome.failed.len() as u64, dead))
}

/// `1, 2, 3`: integers only, so the list is safe to inline.
fn in_list(seqs: impl Iterator<Item = i64>) -> String {
    seqs.map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// Marks `seqs` delivered at `now`; how many were still queued.
fn delivered(c: &dyn Tx, seqs: &[i64], now: DateTime<Utc>) -> Result<u64> {
    let mut n = 0;
    for chunk in seqs.chunks(100) {
        let list = in_list(chunk.iter().copied());
        n += c.exec(
            &format!("UPDATE outbox SET status = 'delivered', delivered_at = ?, lease_until = NULL, last_error = NULL WHERE seq IN ({list}) AND status = 'queued'"),
            &[&now],
        )?;
    }
    Ok(n)
}

/// Marks one row rejected for good by its receiver, with the receiver's code, and records it.
fn rejected(c: &dyn Tx, row: &Claimed, code: &str, message: Option<&str>) -> Result<u64> {
    let n = c.exec(
        "UPDATE outbox SET status = 'rejected', lease_until = NULL, last_error = ? WHERE seq = ? AND status = 'queued'",
        &[&code, &row.seq],
    )?;
    activity::append(
        c,
        NewEntry::new(&row.tenant, activity::SYSTEM_ACTOR, Kind::Connector)
            .verdict(Verdict::CommandRejected)
            .detail(json!({ "command_id": row.id, "code": code, "message": message })),
    )?;
    Ok(n)
}

/// Counts a failed attempt for `rows` at `now`: each backs off, or becomes a dead letter
/// (recorded) once it has had `config.max_attempts`. How many died, and the earliest retry.
fn failed(
    c: &dyn Tx,
    rows: &[Claimed],
    code: &str,
    now: DateTime<Utc>,
    not_before: Option<DateTime<Utc>>,
    config: &OutboxConfig,
) -> Result<(u64, Option<DateTime<Utc>>)> {
    let (mut dead, mut retry_at) = (0, None::<DateTime<Utc>>);
    for row in rows {
        let attempts: Option<i64> = c
            .row("SELECT attempts FROM outbox WHERE seq = ? AND status = 'queued'", &[&row.seq])?
            .map(|r| r.get(0))
            .transpose()?;
        let Some(attempts) = attempts.map(|a| a + 1) else { continue };
        if attempts >= i64::from(config.max_attempts) {
            c.exec(
                "UPDATE outbox SET status = 'dead', attempts = ?, lease_until = NULL, last_error = ? WHERE seq = ?",
                &[&attempts, &code, &row.seq],
            )?;
            activity::append(
                c,
                NewEntry::new(&row.tenant, activity::SYSTEM_ACTOR, Kind::Connector)
                    .verdict(Verdict::DeadLetter)
                    .detail(json!({ "id": row.id, "code": code, "attempts": attempts })),
            )?;
            dead += 1;
        } else {
            let next = not_before.map_or(now, |n| n.max(now)).max(now + config.backoff(attempts as u32));
            c.exec(
                "UPDATE outbox SET attempts = ?, next_attempt_at = ?, lease_until = NULL, last_error = ? WHERE seq = ?",
                &[&attempts, &next, &code, &row.seq],
            )?;
            retry_at = Some(retry_at.map_or(next, |r| r.min(next)));
        }
    }
    Ok((dead, retry_at))
}

/// The tenant's queues: the runtime's first (holding at most `runtime_limit`), then each
/// endpoint's.
pub(crate) async fn of_tenant(
    store: &crate::store::Store,
    tenant: &TenantId,
    runtime_limit: i64,
) -> Result<Vec<Queue>> {
    type QueueRow = (String, String, i64, DateTime<Utc>, Option<String>);
    let rows: Vec<QueueRow> = store
        .all(
            "SELECT channel, destination, queued, due_at, lease_owner FROM outbox_queues WHERE tenant_id = ? \
             ORDER BY channel DESC, destination",
            &[tenant],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|(channel, destination, queued, due_at, owner)| Queue {
            limit: if channel == super::RUNTIME { runtime_limit } else { MAX_QUEUED },
            channel,
            destination,
            queued,
            due_at,
            in_flight: owner.is_some() && due_at > Utc::now(),
        })
        .collect())
}

pub(crate) fn seed_batch(
    c: &dyn Tx,
    tenant: &TenantId,
    channel: &str,
    destination: &str,
    n: usize,
    retry_at: DateTime<Utc>,
) -> Result<()> {
    let (now, key) = (Utc::now(), if channel == super::RUNTIME { "T-1" } else { destination });
    let payload = if channel == super::RUNTIME { r#"{"kind":"comment","body":"stuck"}"# } else { "{}" };
    for _ in 0..n {
        let id = format!(
            "{}_{}",
            if channel == super::RUNTIME { "cmd" } else { "msg" },
            uuid::Uuid::now_v7().simple()
        );
        c.exec(
            "INSERT INTO outbox (id, tenant_id, channel, destination, ordering_key, kind, author, payload, status, attempts, next_attempt_at, last_error, created_at) \
             VALUES (?, ?, ?, ?, ?, 'comment', 'seed', ?, 'queued', 3, ?, 'runtime_unreachable', ?)",
            &[&id, tenant, &channel, &destination, &key, &payload, &retry_at, &now],
        )?;
    }
    c.exec(
        "INSERT INTO outbox_queues (tenant_id, channel, destination, queued, due_at) VALUES (?, ?, ?, ?, ?) \
         ON CONFLICT (tenant_id, channel, destination) DO UPDATE SET queued = outbox_queues.queued + excluded.queued, due_at = excluded.due_at",
        &[tenant, &channel, &destination, &(n as i64), &retry_at],
    )?;
    Ok(())
}

/// How many seqs one pass of the retention sweep looks at.
pub(crate) const SWEEP_SPAN: i64 = 5_000;

/// Deletes, among the `span` seqs after `after`, delivered and purged rows that ended before
/// `finished`, and dead letters and rejections queued before `dead`; where the next pass
/// starts: past this span when every row in it was created before the later of the two, else
/// `None`, as past the last row: the sweep starts over from the first row, so a row that
/// ended late in a span already passed is deleted on a later round.
pub(crate) fn sweep_finished(
    c: &dyn Tx,
    after: i64,
    (finished, dead): (DateTime<Utc>, DateTime<Utc>),
    span: i64,
) -> Result<Option<i64>> {
    let first: Option<i64> = c
        .row("SELECT MIN(seq) FROM outbox WHERE seq > ?", &[&after])?
        .map(|r| r.get::<Option<i64>>(0))
        .transpose()?
        .flatten();
    let Some(first) = first else { return Ok(None) };
    let (lo, hi) = (first - 1, first - 1 + span);
    let deleted = c.exec(
        "DELETE FROM outbox WHERE seq > ? AND seq <= ? AND ((status IN ('delivered', 'purged') AND delivered_at < ?) \
         OR (status IN ('dead', 'rejected') AND created_at < ?))",
        &[&lo, &hi, &finished, &dead],
    )?;
    let before = finished.max(dead);
    let newest: Option<DateTime<Utc>> = c
        .row(
            "SELECT created_at FROM outbox WHERE seq > ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            &[&lo, &hi],
        )?
        .map(|r| r.get(0))
        .transpose()?;
    if deleted > 0 {
        tracing::debug!(deleted, "the outbox's retention sweep deleted finished rows");
    }
    Ok(newest.is_none_or(|t| t < before).then_some(hi))
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::delivery::outbox::{NewRow, insert};
    use crate::testing::TestDb;

    const A: &str = "ten_queue_a";
    const B: &str = "ten_queue_b";

    fn tenant(id: &str) -> TenantId {
        TenantId::from_db(id.into())
    }

    fn setup(c: &dyn Tx) -> Result<()> {
        for t in [A, B] {
            c.exec(
                "INSERT INTO tenants (id, name, credit_units, created_at) VALUES (?, ?, 0, ?)",
                &[&t, &t, &Utc::now()],
            )?;
        }
        Ok(())
    }

    /// Queues `n` runtime commands for `t`, named `cmd_<t>_<i>`, `i` from how many `t` has.
    fn queue_n(c: &dyn Tx, t: &str, n: usize) -> Result<()> {
        let (had,): (i64,) = FromRow::from_row(
            &c.row("SELECT COUNT(*) FROM outbox WHERE tenant_id = ?", &[&t])?.expect("a count"),
        )?;
        for i in had as usize..had as usize + n {
            let id = format!("cmd_{t}_{i:05}");
            let row = NewRow {
                id: &id,
                channel: crate::delivery::outbox::RUNTIME,
                destination: "",
                key: "T-1",
                kind: "comment",
                author: "a",
                payload: "{}",
            };
            insert(c, &tenant(t), &row, MAX_QUEUED)?.expect("room in the queue");
        }
        Ok(())
    }

    fn config() -> OutboxConfig {
        OutboxConfig {
            max_attempts: 3,
            backoff_base_ms: 60_000,
            backoff_max_ms: 60_000,
            ..Default::default()
        }
    }

    fn ids(q: &ClaimedQueue) -> Vec<String> {
        q.rows.iter().map(|r| r.id.clone()).collect()
    }

    /// A's runtime is down: its whole backlog backs off. B's queue is claimed as if A's did
    /// not exist, and A's comes back, head first, when its retry is due.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backed_off_queue_is_not_read_and_comes_back_in_order_on_both_engines() {
        for db in TestDb::both().await {
            let name = db.name();
            db.run(|c| {
                setup(c)?;
                queue_n(c, A, 3 * BATCH)?;
                queue_n(c, B, 3)
            })
            .await
            .unwrap();
            let now = Utc::now() + Duration::seconds(1);
            let lease = now + Duration::seconds(30);
            let claimed = db.run(move |c| claim(c, "runtime", now, lease, "one", 10)).await.unwrap();
            assert_eq!(claimed.len(), 2, "{name}: both queues are due");
            let a = claimed.iter().find(|q| q.tenant.as_str() == A).unwrap().clone();
            assert_eq!(ids(&a)[0], format!("cmd_{A}_00000"), "{name}: in order");
            assert_eq!(a.rows.len(), BATCH, "{name}: one batch");
            // A's batch gets no answer: it backs off a minute; B's is delivered.
            let b = claimed.iter().find(|q| q.tenant.as_str() == B).unwrap().clone();
            let failed = Outcome {
                failed: a.rows.clone(),
                failure: Some("runtime_unreachable".into()),
                ..Default::default()
            };
            let done = Outcome { delivered: b.rows.iter().map(|r| r.seq).collect(), ..Default::default() };
            db.run(move |c| {
                settle(c, &a, &failed, &config())?;
                settle(c, &b, &done, &config())
            })
            .await
            .unwrap();
            db.run(|c| {
                for i in 3..5 {
                    let id = format!("cmd_{B}_x{i}");
                    let row = NewRow {
                        id: &id,
                        channel: "runtime",
                        destination: "",
                        key: "T-1",
                        kind: "comment",
                        author: "a",
                        payload: "{}",
                    };
                    insert(c, &tenant(B), &row, MAX_QUEUED)?.expect("room");
                }
                Ok(())
            })
            .await
            .unwrap();
            let later = now + Duration::seconds(2);
            let claimed = db
                .run(move |c| claim(c, "runtime", later, later + Duration::seconds(30), "two", 10))
                .await
                .unwrap();
            assert_eq!(claimed.len(), 1, "{name}: only B is due");
            assert_eq!(ids(&claimed[0]), vec![format!("cmd_{B}_x3"), format!("cmd_{B}_x4")], "{name}");
            let retry = now + Duration::seconds(61);
            let claimed = db
                .run(move |c| claim(c, "runtime", retry, retry + Duration::seconds(30), "three", 10))
                .await
                .unwrap();
            let a = claimed.iter().find(|q| q.tenant.as_str() == A).expect("A is due again");
            assert_eq!(ids(a)[0], format!("cmd_{A}_00000"), "{name}: the failed head goes first");
        }
    }

    /// Ends row `id` as `status` at `at`, as if it had been created at `created`.
    fn end_row(c: &dyn Tx, id: &str, status: &str, created: DateTime<Utc>, at: DateTime<Utc>) -> Result<()> {
        c.exec(
            "UPDATE outbox SET status = ?, created_at = ?, delivered_at = ? WHERE id = ?",
            &[&status, &created, &at, &id],
        )?;
        Ok(())
    }

    /// One round of the sweep as the worker runs it, in spans of two seqs from `from`;
    /// where the next round starts.
    fn sweep_round(c: &dyn Tx, from: i64, before: (DateTime<Utc>, DateTime<Utc>)) -> Result<i64> {
        let mut after = from;
        for _ in 0..100 {
            match sweep_finished(c, after, before, 2)? {
                Some(next) if next > after => after = next,
                Some(_) => return Ok(after),
                None => return Ok(0),
            }
        }
        Ok(after)
    }

    fn left(c: &dyn Tx) -> Result<Vec<String>> {
        Ok(c.rows("SELECT id FROM outbox ORDER BY seq", &[])?
            .iter()
            .map(|r| r.get(0))
            .collect::<::store::Result<_>>()?)
    }

    /// Finished rows go once retention has passed; queued ones stay, and dead ones until their
    /// own retention has passed; and a row that was delivered late, in a span a round had
    /// already passed, goes on a later round.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sweep_deletes_finished_rows_after_retention_and_comes_back_for_late_ones_on_both_engines() {
        for db in TestDb::both().await {
            let name = db.name();
            let (now, old) = (Utc::now(), Utc::now() - Duration::days(10));
            let before = now - Duration::days(7);
            let id = |i: usize| format!("cmd_{A}_{i:05}");
            let first = db
                .run(move |c| {
                    setup(c)?;
                    queue_n(c, A, 8)?;
                    for (i, status, created, at) in [
                        (0, "delivered", old, old),
                        (1, "purged", old, old),
                        (2, "dead", old, old),
                        (4, "delivered", old, old),
                        (5, "delivered", old, old),
                        (7, "delivered", now, now),
                    ] {
                        end_row(c, &id(i), status, created, at)?;
                    }
                    // Row 3 was queued ten days ago and is still waiting; row 6 is new.
                    c.exec("UPDATE outbox SET created_at = ? WHERE id = ?", &[&old, &id(3)])?;
                    let next = sweep_round(c, 0, (before, old - Duration::days(1)))?;
                    Ok((next, left(c)?))
                })
                .await
                .unwrap();
            assert_eq!(
                first.1,
                vec![id(2), id(3), id(6), id(7)],
                "{name}: old finished rows went, the rest stayed"
            );
            // Row 3 is delivered now; eight days later both it and row 7 are past retention.
            let later = now + Duration::days(8);
            let second = db
                .run(move |c| {
                    end_row(c, &id(3), "delivered", old, now)?;
                    sweep_round(c, first.0, (later, old - Duration::days(1)))?;
                    left(c)
                })
                .await
                .unwrap();
            assert_eq!(second, vec![id(2), id(6)], "{name}: the late row went too");
            // Once the dead letters' retention has passed, the dead row goes too.
            let third = db.run(move |c| sweep_round(c, 0, (later, now)).and_then(|_| left(c))).await.unwrap();
            assert_eq!(third, vec![id(6)], "{name}: the old dead letter went");
        }
    }

    #[tokio::test]
    async fn a_claim_reads_due_queues_and_queue_heads_by_index_only() {
        let store = crate::Store::open("sqlite::memory:").await.expect("migrates");
        for (sql, index) in [(DUE_SQL.to_string(), "outbox_queues_due"), (head_sql(), "outbox_pending")] {
            let plan = store.sqlite_query_plan(&sql).unwrap();
            assert!(plan.contains(index) && !plan.contains("TEMP B-TREE"), "{sql}:\n{plan}");
        }
    }

    /// A queue takes rows up to its bound and then writes nothing; an enqueue past it learns
    /// the figure and the oldest row. A delivery frees room.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_admits_nothing_until_a_delivery_frees_room_on_both_engines() {
        for db in TestDb::both().await {
            let name = db.name();
            db.run(|c| {
                setup(c)?;
                queue_n(c, A, 2)?;
                c.exec("UPDATE outbox_queues SET queued = ? WHERE tenant_id = ?", &[&(MAX_QUEUED - 1), &A])?;
                queue_n(c, A, 1)
            })
            .await
            .unwrap();
            let full = db
                .run(|c| {
                    let row = NewRow {
                        id: "cmd_over",
                        channel: "runtime",
                        destination: "",
                        key: "T-1",
                        kind: "comment",
                        author: "a",
                        payload: "{}",
                    };
                    insert(c, &tenant(A), &row, MAX_QUEUED)
                })
                .await
                .unwrap()
                .unwrap_err();
            assert_eq!(
                full,
                Full { queued: MAX_QUEUED, limit: MAX_QUEUED, oldest: Some(format!("cmd_{A}_00000")) },
                "{name}"
            );
            let rows: i64 = db
                .run(|c| {
                    Ok(c.row("SELECT COUNT(*) FROM outbox WHERE id = 'cmd_over'", &[])?.unwrap().get(0)?)
                })
                .await
                .unwrap();
            assert_eq!(rows, 0, "{name}: nothing written past the bound");
            let now = Utc::now() + Duration::seconds(1);
            let q = db
                .run(move |c| claim(c, "runtime", now, now + Duration::seconds(9), "one", 1))
                .await
                .unwrap();
            let done = Outcome { delivered: vec![q[0].rows[0].seq], ..Default::default() };
            let q0 = q[0].clone();
            db.run(move |c| settle(c, &q0, &done, &config())).await.unwrap();
            db.run(|c| queue_n(c, B, 1)).await.unwrap();
            db.run(|c| {
                let row = NewRow {
                    id: "cmd_room",
                    channel: "runtime",
                    destination: "",
                    key: "T-1",
                    kind: "comment",
                    author: "a",
                    payload: "{}",
                };
                insert(c, &tenant(A), &row, MAX_QUEUED)
            })
            .await
            .unwrap()
            .expect("a delivered row made room");
        }
    }

    /// A delivery whose lease lapsed and was taken over records nothing: the rows are the new
    /// owner's to deliver, once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delivery_that_lost_its_lease_records_nothing_on_both_engines() {
        for db in TestDb::both().await {
            let name = db.name();
            db.run(|c| {
                setup(c)?;
                queue_n(c, A, 2)
            })
            .await
            .unwrap();
            let now = Utc::now() + Duration::seconds(1);
            let first = db
                .run(move |c| claim(c, "runtime", now, now + Duration::seconds(5), "first", 4))
                .await
                .unwrap();
            let early = db
                .run(move |c| claim(c, "runtime", now, now + Duration::seconds(5), "early", 4))
                .await
                .unwrap();
            assert!(early.is_empty(), "{name}: leased queues are not claimed");
            let lapsed = now + Duration::seconds(6);
            let second = db
                .run(move |c| claim(c, "runtime", lapsed, lapsed + Duration::seconds(5), "second", 4))
                .await
                .unwrap();
            assert_eq!(ids(&second[0]), ids(&first[0]), "{name}: the same rows, to the new owner");
            assert_ne!(first[0].owner, second[0].owner, "{name}: every claim holds a lease of its own");
            let (f, s) = (first[0].clone(), second[0].clone());
            let renewed = db.run(move |c| renew(c, &f, lapsed + Duration::seconds(9))).await.unwrap();
            assert!(!renewed, "{name}: the old owner cannot renew");
            let f = first[0].clone();
            let stale =
                Outcome { failed: f.rows.clone(), failure: Some("late".into()), ..Default::default() };
            db.run(move |c| settle(c, &f, &stale, &config())).await.unwrap();
            let attempts: i64 = db
                .run(|c| Ok(c.row("SELECT MAX(attempts) FROM outbox", &[])?.unwrap().get(0)?))
                .await
                .unwrap();
            assert_eq!(attempts, 0, "{name}: the lost lease recorded nothing");
            let done = Outcome { delivered: s.rows.iter().map(|r| r.seq).collect(), ..Default::default() };
            db.run(move |c| settle(c, &s, &done, &config())).await.unwrap();
            let left: i64 = db
                .run(|c| Ok(c.row("SELECT COUNT(*) FROM outbox_queues", &[])?.unwrap().get(0)?))
                .await
                .unwrap();
            assert_eq!(left, 0, "{name}: an empty queue is gone");
        }
    }
}
