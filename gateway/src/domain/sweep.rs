//! The sweep: one job that expires overdue approvals into denials, ends the pending holds
//! nobody will settle (their lease lapsed, or the approval that kept them was decided), and
//! forgets ended sessions, sign-in windows and unclaimed secrets. Every instance's sweeper
//! runs it; on PostgreSQL rows another transaction holds are skipped, so sweeps on several
//! instances at once end different holds, and each hold still ends exactly once.

use chrono::{DateTime, Utc};
use policy::Money;
use serde_json::json;

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::domain::approvals::{self, Approval, ApprovalStatus, SweepReport};
use crate::domain::ledger::{self, HoldEnd};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Tx, skip_locked};

/// The two "now"s a sweep reads: the wall clock (leases, sessions, sign-in windows, secrets
/// handed over, which the system clock set) and the gateway's clock (approvals' expiry and
/// rate windows, which it set: [`crate::GatewayConfig::clock`]). They are the same moment
/// except in tests that drive the clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Now {
    pub wall: DateTime<Utc>,
    pub clock: DateTime<Utc>,
}

impl Now {
    /// Both at `t`.
    #[cfg(test)]
    pub(crate) fn at(t: DateTime<Utc>) -> Now {
        Now { wall: t, clock: t }
    }
}

/// One sweep at `now`: escalations due, expired approvals, orphaned holds, ended sessions, sign-in windows
/// and unclaimed secrets. On PostgreSQL rows another transaction holds are skipped, so sweeps
/// on several instances at once each end different holds.
pub(crate) fn sweep_once(c: &dyn Tx, now: Now) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    // The tenants with work due first (the first lock in the lock order), then both sets
    // (each row locked, skipping those another instance's sweep or a settle holds), then
    // every account and tenant row they touch, in order, then the work.
    let locked = lock_tenants_due(c, now)?;
    let mine = |t: &TenantId| locked.as_ref().is_none_or(|l| l.contains(t));
    let mut due = approvals::due(c, now.clock)?;
    due.retain(|a| mine(&a.tenant_id));
    let mut orphans = orphans(c, now.wall)?;
    orphans.retain(|o| mine(&o.tenant));
    let holds: Vec<&str> = due
        .iter()
        .filter_map(|a| a.hold_id.as_deref())
        .chain(orphans.iter().map(|o| o.hold.as_str()))
        .collect();
    ledger::lock_for_ending(c, &holds)?;
    expire(c, due, &mut report)?;
    end_orphans(c, orphans, &mut report)?;
    // After the expiries, so an approval that expired in this sweep is not escalated too.
    report.escalated = approvals::escalate_due(c, now.clock, &|a| mine(&a.tenant_id))?;
    crate::domain::sessions::forget_ended(c, now.wall)?;
    crate::domain::logins::forget_ended(c, now.wall)?;
    crate::domain::handovers::forget_unclaimed(c, now.wall)?;
    crate::domain::reserve::forget_ended_windows(c, now.clock)?;
    crate::domain::in_flight::forget_ended_inputs(c)?;
    Ok(report)
}

/// On PostgreSQL, takes the lock ([`activity::lock_tenant`]) of every tenant with an
/// approval due or a pending hold whose lease lapsed or whose approval was decided, in
/// ascending key order, and returns them; a tenant that gains work after this read waits for
/// the next sweep. `None` on SQLite, whose single writer needs no locks.
fn lock_tenants_due(c: &dyn Tx, now: Now) -> Result<Option<Vec<TenantId>>> {
    if c.engine() != crate::sql::Engine::Postgres {
        return Ok(None);
    }
    let rows = c.rows(
        "SELECT tenant_id FROM approvals WHERE status = 'pending' AND expires_at <= ?1 \
         UNION SELECT tenant_id FROM approvals WHERE status = 'pending' AND escalated_at IS NULL AND escalate_at <= ?1 \
         UNION SELECT h.tenant_id FROM holds h LEFT JOIN approvals a ON a.hold_id = h.id \
         WHERE h.status = 'pending' AND (COALESCE(h.lease_until, h.created_at) <= ?2 \
           OR a.status IN ('denied', 'expired'))",
        &[&crate::stored::ts(now.clock), &crate::stored::ts(now.wall)],
    )?;
    let mut tenants =
        rows.iter().map(|r| Ok(TenantId::from_db(r.get(0)?))).collect::<::store::Result<Vec<TenantId>>>()?;
    tenants.sort_by_key(activity::tenant_key);
    for t in &tenants {
        activity::lock_tenant(c, t)?;
    }
    Ok(Some(tenants))
}

/// Expires `due` into denials that void their holds.
fn expire(c: &dyn Tx, due: Vec<Approval>, report: &mut SweepReport) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for a in due {
        entries.extend(approvals::close(
            c,
            &a,
            ApprovalStatus::Expired,
            crate::audit::activity::SYSTEM_ACTOR,
            None,
            "expired before a decision (on_expiry: deny)",
        )?);
        report.approvals_expired += 1;
    }
    Ok(entries)
}

/// A pending hold nobody will settle, and the approval that released it, if one did.
struct Orphan {
    hold: String,
    tenant: TenantId,
    profile: ProfileId,
    action: String,
    amount: Money,
    approval: Option<String>,
}

/// A row of the columns [`orphans`] reads.
impl crate::sql::FromRow for Orphan {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<Orphan> {
        let units: i64 = r.get(4)?;
        Ok(Orphan {
            hold: r.get(0)?,
            tenant: TenantId::from_db(r.get(1)?),
            profile: ProfileId::from_db(r.get(2)?),
            action: r.get(3)?,
            amount: Money::from_units(units)
                .ok_or_else(|| crate::stored::corrupt("amount", &units.to_string()))?,
            approval: r.get(5)?,
        })
    }
}

/// The pending holds no pending approval keeps whose lease lapsed by `now` (a hold from
/// before leases, with none, counts as lapsed), locked on PostgreSQL (skipping those locked
/// elsewhere, such as one being settled right now).
fn orphans(c: &dyn Tx, now: DateTime<Utc>) -> Result<Vec<Orphan>> {
    let sql = format!(
        "SELECT h.id, h.tenant_id, h.profile_id, h.action, h.amount_units, a.id FROM holds h \
         LEFT JOIN approvals a ON a.hold_id = h.id \
         WHERE h.status = 'pending' AND ((a.id IS NULL OR a.status = 'approved') \
           AND COALESCE(h.lease_until, h.created_at) <= ?1 \
           AND NOT EXISTS (SELECT 1 FROM carries r WHERE r.hold_id = h.id AND r.attempts < ?2) \
           OR a.status IN ('denied', 'expired')) LIMIT {}{}",
        approvals::SWEEP_BATCH,
        skip_locked(c, "h")
    );
    let attempts = crate::domain::in_flight::MAX_ATTEMPTS;
    Ok(c.rows(&sql, &[&crate::stored::ts(now), &attempts])?
        .iter()
        .map(crate::sql::FromRow::from_row)
        .collect::<::store::Result<_>>()?)
}

/// Ends `orphans`. An approved call that never completed says so in its result and trail.
fn end_orphans(c: &dyn Tx, orphans: Vec<Orphan>, report: &mut SweepReport) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for Orphan { hold, tenant, profile, action, amount, approval } in orphans {
        ledger::end(c, &tenant, &hold, HoldEnd::Expired, Money::ZERO, None)?;
        crate::domain::reserve::forget_claim(c, &hold)?;
        let lost = crate::domain::in_flight::lost_call(c, &hold)?;
        let inputs = crate::domain::in_flight::take_inputs(c, &hold)?;
        if let Some(a) = &approval {
            let note = "the approved call never completed; its hold expired and nothing was charged";
            let result = json!({ "ok": false, "error": "never_completed", "message": note, "hold_id": hold });
            approvals::record_result(c, a, &result, "system", "failed", Some(note))?;
        }
        entries.push(activity::append(
            c,
            NewEntry::new(&tenant, "system", Kind::Hold)
                .profile(&profile)
                .action(action)
                .verdict(Verdict::Expired)
                .amount(amount)
                .detail(match lost {
                    Some(action_id) => json!({ "hold_id": hold, "approval_id": approval, "action_id": action_id,
                        "reason": "the call went to the upstream but no answer came back, even to resends; nothing was charged here: look the action id up on the upstream" }),
                    None => json!({ "hold_id": hold, "approval_id": approval, "reason": "the action never completed" }),
                })
                .inputs(inputs),
        )?);
        report.holds_expired += 1;
    }
    Ok(entries)
}
