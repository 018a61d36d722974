//! Recovery of calls in flight to a networked connector whose carrying instance died.
//!
//! Before a call leaves for an HTTP upstream, the job that leases its hold also records what
//! is being sent (a row of `carries`: the subject, action, checked arguments, action id and
//! reservation). The job that ends the hold deletes it. If the lease lapses with the row still
//! there, the instance carrying the call died (or lost it) after the upstream may have acted.
//! Expiring the hold then would leave the upstream's charge unposted, so instead any
//! instance's sweeper claims the row (a fresh lease on the hold), sends the same call again
//! with the same action id (which the upstream uses as its idempotency key, so it answers what
//! it did the first time, or does it now, once) and settles the hold on that answer, with an
//! activity entry saying the call was recovered.
//!
//! Guarantees:
//! - The ledger ends up agreeing with the upstream: an action the upstream carried out is
//!   posted at the cost it reported; one it refused is voided.
//! - A resend that gets no answer (a timeout, a refused connection) settles nothing; it is
//!   tried again with backoff, [`MAX_ATTEMPTS`] times in all. After that the ordinary sweep
//!   expires the hold, and its entry names the action id to look up on the upstream.
//! - What a call carried out of its deciding job was decided on waits in `pending_inputs`
//!   until the job that ends its hold moves it onto the call's entry.
//! - Each hold still ends exactly once: a recovery that loses a race to another settle fails
//!   its settle job, and nothing is written twice.

use chrono::{DateTime, Duration, Utc};
use policy::Money;
use serde_json::Value;

use crate::domain::calls::ReservedCall;
use crate::domain::ledger::leases::{self, Lease};
use crate::domain::principal::Subject;
use crate::error::Result;
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::sql::{Tx, skip_locked};
use crate::stored;

/// How many times a lost call is sent again before its hold is left to expire.
pub const MAX_ATTEMPTS: i64 = 5;
/// How many lost calls one sweep tick claims.
const CLAIM_BATCH: usize = 64;

/// Records `carry` as sent to a networked connector, in the job that leased its hold.
pub(crate) fn record(c: &dyn Tx, carry: &ReservedCall) -> Result<()> {
    let now = stored::ts(Utc::now());
    let s = &carry.subject;
    c.exec(
        "INSERT INTO carries (hold_id, tenant_id, profile_id, key_id, via, action, args, action_id, cost_units, kit_version, actor, attempts, next_try_at, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
        &[
            &carry.hold,
            &s.tenant.as_str(),
            &s.profile.as_str(),
            &s.key.as_str(),
            &s.via.as_str(),
            &carry.tool.name,
            &carry.args.to_string(),
            &carry.action_id,
            &carry.cost.units(),
            &i64::from(carry.kit_version),
            &carry.actor,
            &now,
            &now,
        ],
    )?;
    Ok(())
}

/// Keeps what the call of `hold` was decided on ([`crate::domain::replay::Inputs`]) until the
/// job that ends the hold records it with the call's entry ([`take_inputs`]).
pub(crate) fn keep_inputs(c: &dyn Tx, hold: &str, inputs: &str) -> Result<()> {
    c.exec("INSERT INTO pending_inputs (hold_id, inputs) VALUES (?, ?)", &[&hold, &inputs])?;
    Ok(())
}

/// The decision inputs kept for `hold`, forgetting them, in the job that ends it.
pub(crate) fn take_inputs(c: &dyn Tx, hold: &str) -> Result<Option<String>> {
    match c.row("DELETE FROM pending_inputs WHERE hold_id = ? RETURNING inputs", &[&hold])? {
        Some(r) => Ok(Some(r.get(0)?)),
        None => Ok(None),
    }
}

/// Forgets the kept inputs of holds another path ended (a revoke, an expiry), in the sweep.
pub(crate) fn forget_ended_inputs(c: &dyn Tx) -> Result<()> {
    c.exec(
        "DELETE FROM pending_inputs WHERE EXISTS \
         (SELECT 1 FROM holds h WHERE h.id = pending_inputs.hold_id AND h.status <> 'pending')",
        &[],
    )?;
    Ok(())
}

/// Forgets the call of `hold`, in the job that ends it.
pub(crate) fn forget(c: &dyn Tx, hold: &str) -> Result<()> {
    c.exec("DELETE FROM carries WHERE hold_id = ?", &[&hold])?;
    Ok(())
}

/// The action id of a lost call `hold` carried, forgetting it: for the entry of a hold that
/// expires after every resend went unanswered.
pub(crate) fn lost_call(c: &dyn Tx, hold: &str) -> Result<Option<String>> {
    let id: Option<String> = match c.row("SELECT action_id FROM carries WHERE hold_id = ?", &[&hold])? {
        Some(r) => Some(r.get(0)?),
        None => None,
    };
    if id.is_some() {
        forget(c, hold)?;
    }
    Ok(id)
}

/// A carries row as [`claim`] reads it, before the catalog and the closed values are checked.
struct InFlightRow {
    hold: String,
    tenant: TenantId,
    profile: ProfileId,
    key: KeyId,
    via: String,
    action: String,
    args: String,
    action_id: String,
    cost: i64,
    kit_version: i64,
    actor: String,
    attempts: i64,
}

impl crate::sql::FromRow for InFlightRow {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<InFlightRow> {
        Ok(InFlightRow {
            hold: r.get(0)?,
            tenant: r.get(1)?,
            profile: r.get(2)?,
            key: r.get(3)?,
            via: r.get(4)?,
            action: r.get(5)?,
            args: r.get(6)?,
            action_id: r.get(7)?,
            cost: r.get(8)?,
            kit_version: r.get(9)?,
            actor: r.get(10)?,
            attempts: r.get(11)?,
        })
    }
}

/// Claims up to [`CLAIM_BATCH`] lost calls due for a resend at `now`: leases their holds to
/// `lease`'s instance and counts the attempt.
pub(crate) fn claim(
    c: &dyn Tx,
    catalog: &policy::Catalog,
    now: DateTime<Utc>,
    lease: &Lease,
) -> Result<Vec<ReservedCall>> {
    let sql = format!(
        "SELECT r.hold_id, r.tenant_id, r.profile_id, r.key_id, r.via, r.action, r.args, r.action_id, r.cost_units, r.kit_version, r.actor, r.attempts \
         FROM carries r JOIN holds h ON h.id = r.hold_id \
         WHERE h.status = 'pending' AND COALESCE(h.lease_until, h.created_at) <= ?1 AND r.next_try_at <= ?1 AND r.attempts < ?2 \
         ORDER BY r.next_try_at LIMIT {CLAIM_BATCH}{}",
        skip_locked(c, "r, h")
    );
    let rows: Vec<InFlightRow> = c
        .rows(&sql, &[&stored::ts(now), &MAX_ATTEMPTS])?
        .iter()
        .map(crate::sql::FromRow::from_row)
        .collect::<::store::Result<_>>()?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let attempts = row.attempts + 1;
        let next = now + Duration::seconds(2i64.pow(attempts.clamp(1, 8) as u32));
        leases::take(c, &row.hold, lease)?;
        c.exec(
            "UPDATE carries SET attempts = ?, next_try_at = ? WHERE hold_id = ?",
            &[&attempts, &stored::ts(next), &row.hold],
        )?;
        if let Some(carry) = carry_of(catalog, row) {
            claimed.push(carry);
        }
    }
    Ok(claimed)
}

/// The call a row carries; `None` when it no longer reads as one (its hold then lapses).
fn carry_of(catalog: &policy::Catalog, r: InFlightRow) -> Option<ReservedCall> {
    Some(ReservedCall {
        subject: Subject {
            tenant: r.tenant,
            profile: r.profile,
            key: r.key,
            via: crate::audit::activity::Transport::parse(&r.via)?,
            connection: None,
        },
        tool: catalog.get(&r.action)?.clone(),
        args: serde_json::from_str::<Value>(&r.args).ok()?,
        hold: r.hold,
        cost: Money::from_units(r.cost)?,
        kit_version: u32::try_from(r.kit_version).ok()?,
        actor: r.actor,
        action_id: r.action_id,
    })
}
