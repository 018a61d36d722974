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
//! - Each hold still ends exactly once: a recovery that loses a race to another settle fails
//!   its settle job, and nothing is written twice.

use chrono::{DateTime, Duration, Utc};
use policy::Money;
use serde_json::Value;

use crate::db;
use crate::domain::calls::Carry;
use crate::domain::ledger::leases::{self, Lease};
use crate::domain::principal::Subject;
use crate::error::Result;
use crate::ids::{KeyId, ProfileId, TenantId};
use crate::sql::{Tx, skip_locked};

/// How many times a lost call is sent again before its hold is left to expire.
pub const MAX_ATTEMPTS: i64 = 5;
/// How many lost calls one sweep tick claims.
const CLAIM_BATCH: usize = 64;

/// Records `carry` as sent to a networked connector, in the job that leased its hold.
pub(crate) fn record(c: &dyn Tx, carry: &Carry) -> Result<()> {
    let now = db::ts(Utc::now());
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

type CarryRow = (String, String, String, String, String, String, String, String, i64, i64, String, i64);

/// Claims up to [`CLAIM_BATCH`] lost calls due for a resend at `now`: leases their holds to
/// `lease`'s instance and counts the attempt.
pub(crate) fn claim(
    c: &dyn Tx,
    catalog: &policy::Catalog,
    now: DateTime<Utc>,
    lease: &Lease,
) -> Result<Vec<Carry>> {
    let sql = format!(
        "SELECT r.hold_id, r.tenant_id, r.profile_id, r.key_id, r.via, r.action, r.args, r.action_id, r.cost_units, r.kit_version, r.actor, r.attempts \
         FROM carries r JOIN holds h ON h.id = r.hold_id \
         WHERE h.status = 'pending' AND COALESCE(h.lease_until, h.created_at) <= ?1 AND r.next_try_at <= ?1 AND r.attempts < ?2 \
         ORDER BY r.next_try_at LIMIT {CLAIM_BATCH}{}",
        skip_locked(c, "r, h")
    );
    let rows: Vec<CarryRow> = c
        .rows(&sql, &[&db::ts(now), &MAX_ATTEMPTS])?
        .iter()
        .map(crate::sql::FromRow::from_row)
        .collect::<Result<_>>()?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let attempts = row.11 + 1;
        let next = now + Duration::seconds(2i64.pow(attempts.clamp(1, 8) as u32));
        leases::take(c, &row.0, lease)?;
        c.exec(
            "UPDATE carries SET attempts = ?, next_try_at = ? WHERE hold_id = ?",
            &[&attempts, &db::ts(next), &row.0],
        )?;
        if let Some(carry) = carry_of(catalog, row) {
            claimed.push(carry);
        }
    }
    Ok(claimed)
}

fn carry_of(catalog: &policy::Catalog, r: CarryRow) -> Option<Carry> {
    let (hold, tenant, profile, key, via, action, args, action_id, cost, version, actor, _) = r;
    Some(Carry {
        subject: Subject {
            tenant: TenantId::from_db(tenant),
            profile: ProfileId::from_db(profile),
            key: KeyId::from_db(key),
            via: crate::audit::activity::Transport::parse(&via)?,
        },
        tool: catalog.get(&action)?.clone(),
        args: serde_json::from_str::<Value>(&args).ok()?,
        hold,
        cost: Money::from_units(cost)?,
        kit_version: u32::try_from(version).ok()?,
        actor,
        action_id,
    })
}
