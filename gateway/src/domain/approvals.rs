//! Approvals (docs/architecture.md#approvals): a parked call waits for a human.
//!
//! Guarantees: an approval binds the exact call (subject, action, argument digest, kit version
//! and amount) and approving executes that call once; the hold stays reserved while parked;
//! deny (with a required reason) and expiry void the hold; neither the requesting agent nor
//! the human who owns its profile can decide; the sweeper expires overdue approvals into
//! denials even with no traffic; decided approvals keep their whole trail.

use crate::sql::{Row, Tx, for_update, skip_locked};
use chrono::{DateTime, Utc};
use policy::Money;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::domain::ledger::{self, HoldEnd};
use crate::domain::principal::Human;
use crate::domain::trail::{TrailRow, decision_text, trail_step};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::store::Store;
use crate::stored;

pub use crate::domain::trail::{MAX_REASON_LEN, TrailStep};

/// How often the sweeper looks for overdue approvals and orphaned holds.
pub const SWEEP_INTERVAL_MS: u64 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
    Expired,
}

impl ApprovalStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
        }
    }
    pub fn parse(s: &str) -> Option<ApprovalStatus> {
        [ApprovalStatus::Pending, ApprovalStatus::Approved, ApprovalStatus::Denied, ApprovalStatus::Expired]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    pub id: String,
    pub tenant_id: TenantId,
    pub profile_id: ProfileId,
    pub hold_id: Option<String>,
    pub action: String,
    pub args: Value,
    pub args_digest: String,
    pub amount: Money,
    pub kit_name: String,
    pub kit_version: u32,
    pub reason: String,
    pub status: ApprovalStatus,
    pub requested_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decision_reason: Option<String>,
    pub result: Option<Value>,
    pub trail: Vec<TrailStep>,
}

/// Filters for [`Gateway::approvals`].
#[derive(Clone, Debug, Default)]
pub struct ApprovalQuery {
    pub status: Option<ApprovalStatus>,
    pub profile: Option<ProfileId>,
    pub limit: Option<i64>,
}

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub approvals_expired: usize,
    pub holds_expired: usize,
}

impl SweepReport {
    /// Whether a batch was full, so more may be due.
    pub(crate) fn full(&self) -> bool {
        self.approvals_expired >= SWEEP_BATCH || self.holds_expired >= SWEEP_BATCH
    }
}

/// The most approvals, and the most orphaned holds, one sweep job ends: a job stays short
/// however large the backlog, and [`Gateway::sweep`] runs jobs until one is not full.
pub const SWEEP_BATCH: usize = 500;
/// The most jobs one [`Gateway::sweep`] runs; what is left waits for the next tick.
pub(crate) const MAX_SWEEP_JOBS: usize = 40;

struct ApprovalRow {
    id: String,
    tenant_id: String,
    profile_id: String,
    hold_id: Option<String>,
    action: String,
    args: String,
    args_digest: String,
    amount_units: i64,
    kit_name: String,
    kit_version: i64,
    reason: String,
    status: String,
    requested_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    decided_by: Option<String>,
    decided_at: Option<DateTime<Utc>>,
    decision_reason: Option<String>,
    result: Option<String>,
}
const COLUMNS: &str = "id, tenant_id, profile_id, hold_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, status, \
                       requested_at, expires_at, decided_by, decided_at, decision_reason, result";

fn from_row(r: ApprovalRow) -> Result<Approval> {
    Ok(Approval {
        id: r.id,
        tenant_id: TenantId::from_db(r.tenant_id),
        profile_id: ProfileId::from_db(r.profile_id),
        hold_id: r.hold_id,
        action: r.action,
        args: stored::json("approval's arguments", &r.args)?,
        args_digest: r.args_digest,
        amount: Money::from_units(r.amount_units)
            .ok_or_else(|| stored::corrupt("amount", &r.amount_units.to_string()))?,
        kit_name: r.kit_name,
        kit_version: u32::try_from(r.kit_version)
            .map_err(|_| stored::corrupt("kit version", &r.kit_version.to_string()))?,
        reason: r.reason,
        status: stored::named("approval status", &r.status, ApprovalStatus::parse)?,
        requested_at: r.requested_at,
        expires_at: r.expires_at,
        decided_by: r.decided_by,
        decided_at: r.decided_at,
        decision_reason: r.decision_reason,
        result: r.result.map(|s| stored::json("approval's result", &s)).transpose()?,
        trail: Vec::new(),
    })
}

/// Appends a step to an approval's trail.
pub(crate) fn trail(
    c: &dyn crate::sql::Tx,
    approval: &str,
    actor: &str,
    step: &str,
    note: Option<&str>,
    credential: Option<&str>,
) -> Result<()> {
    c.exec(
        "INSERT INTO approval_trail (approval_id, at, actor, step, note, credential) VALUES (?, ?, ?, ?, ?, ?)",
        &[&approval, &stored::ts(Utc::now()), &actor, &step, &note, &credential],
    )?;
    Ok(())
}

/// An optional note on a decision: trimmed, empty as none, at most [`MAX_REASON_LEN`].
pub(crate) fn optional_note(note: Option<&str>) -> Result<Option<String>> {
    let Some(n) = note.map(str::trim).filter(|n| !n.is_empty()) else { return Ok(None) };
    if n.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid(
            "note_too_long",
            format!("a note is at most {MAX_REASON_LEN} characters"),
        ));
    }
    Ok(Some(n.to_string()))
}

pub(crate) fn required_reason(reason: &str, what: &str) -> Result<String> {
    decision_text(reason, "a reason", "reason_too_long")?.ok_or_else(|| {
        Error::invalid(
            "reason_required",
            format!("{what} needs a reason; say why, for the agent and the audit trail"),
        )
    })
}

/// A call, or an agent's accept, that waits for a human: what [`open`] records.
pub(crate) struct Request<'a> {
    pub tenant: &'a TenantId,
    pub profile: &'a ProfileId,
    /// The hold that keeps the call's money reserved while it waits.
    pub hold: Option<&'a str>,
    pub action: &'a str,
    pub args: &'a Value,
    pub args_digest: &'a str,
    pub amount: Money,
    pub kit: &'a policy::Kit,
    /// Why it waits: the refusal's stable detail.
    pub reason: &'a str,
    /// Who asked, and their words, for the trail's first step.
    pub actor: &'a str,
    pub note: &'a str,
    pub ttl: chrono::Duration,
    /// When it was asked for ([`crate::GatewayConfig::clock`]): it expires `ttl` later.
    pub now: chrono::DateTime<Utc>,
}

/// An approval just opened: its id and when it expires.
pub(crate) struct Opened {
    pub id: String,
    pub expires_at: DateTime<Utc>,
}

impl Opened {
    /// The handle a parked envelope carries.
    pub fn handle(&self) -> policy::ApprovalHandle {
        policy::ApprovalHandle {
            approval_id: self.id.clone(),
            expires_at: self.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }
}

/// Opens a pending approval and its trail's `requested` step: the one place a row is added
/// to `approvals`.
pub(crate) fn open(c: &dyn Tx, r: &Request) -> Result<Opened> {
    let id = format!("apr_{}", uuid::Uuid::now_v7().simple());
    let now = r.now;
    let expires = now + r.ttl;
    c.exec(
        "INSERT INTO approvals (id, tenant_id, profile_id, hold_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, status, requested_at, expires_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
        &[
            &id,
            &r.tenant.as_str(),
            &r.profile.as_str(),
            &r.hold,
            &r.action,
            &r.args.to_string(),
            &r.args_digest,
            &r.amount.units(),
            &r.kit.name,
            &i64::from(r.kit.version.0),
            &r.reason,
            &stored::ts(now),
            &stored::ts(expires),
        ],
    )?;
    trail(c, &id, r.actor, "requested", Some(r.note), None)?;
    Ok(Opened { id, expires_at: expires })
}

/// The pending approvals of `profiles`, oldest first, locked until commit on PostgreSQL.
pub(crate) fn pending_for(c: &dyn Tx, profiles: &[ProfileId]) -> Result<Vec<Approval>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE profile_id = ? AND status = 'pending' ORDER BY requested_at{}",
        for_update(c)
    );
    let mut out = Vec::new();
    for p in profiles {
        for r in c.rows(&sql, &[&p.as_str()])? {
            out.push(from_row(crate::sql::FromRow::from_row(&r)?)?);
        }
    }
    Ok(out)
}

/// Denies the agent's accept of `proposal` still waiting on a human, if there is one: the
/// proposal was decided another way.
pub(crate) fn deny_accept_of(c: &dyn Tx, proposal: &str, actor: &str, reason: &str) -> Result<()> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE action = ? AND status = 'pending' AND {} = ?{}",
        crate::sql::json_text(c, "args", "proposal_id"),
        for_update(c)
    );
    for r in c.rows(&sql, &[&crate::domain::brain::DECIDE_TOOL, &proposal])? {
        let a = from_row(crate::sql::FromRow::from_row(&r)?)?;
        close(c, &a, ApprovalStatus::Denied, actor, None, reason)?;
    }
    Ok(())
}

/// Records what an approved call answered, once, with the trail step that says how it ended
/// (`executed` or `failed`).
/// The approval that released `hold` and has no result yet, if there is one.
pub(crate) fn awaiting_result(c: &dyn Tx, hold: &str) -> Result<Option<String>> {
    match c.row("SELECT id FROM approvals WHERE hold_id = ? AND result IS NULL", &[&hold])? {
        Some(row) => Ok(Some(row.get(0)?)),
        None => Ok(None),
    }
}

pub(crate) fn record_result(
    c: &dyn Tx,
    id: &str,
    result: &Value,
    actor: &str,
    step: &str,
    note: Option<&str>,
) -> Result<()> {
    let sql = "UPDATE approvals SET result = ? WHERE id = ? AND result IS NULL";
    if c.exec(sql, &[&result.to_string(), &id])? == 0 {
        return Ok(());
    }
    trail(c, id, actor, step, note, None)
}

/// Ends a pending approval as denied or expired, voids or expires its hold and returns a
/// proposal parked on it to the reviewers: every deny and expiry goes through here.
pub(crate) fn close(
    c: &dyn Tx,
    a: &Approval,
    status: ApprovalStatus,
    actor: &str,
    by: Option<&Human>,
    reason: &str,
) -> Result<Vec<Entry>> {
    let credential = by.map(|h| h.credential.as_str());
    let changed = c.exec(
        "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ? WHERE id = ? AND status = 'pending'",
        &[&status.as_str(), &actor, &stored::ts(Utc::now()), &reason, &a.id],
    )?;
    if changed == 0 {
        return Err(Error::Conflict {
            code: "approval_already_decided",
            message: "this approval was already decided or expired".into(),
        });
    }
    trail(c, &a.id, actor, status.as_str(), Some(reason), credential)?;
    let (hold_end, verdict) = match status {
        ApprovalStatus::Expired => (HoldEnd::Expired, Verdict::Expired),
        _ => (HoldEnd::Voided, Verdict::Denied),
    };
    if let Some(h) = &a.hold_id {
        ledger::end(c, &a.tenant_id, h, hold_end, Money::ZERO, None)?;
    }
    crate::domain::brain::return_parked(c, &a.id, actor, reason)?;
    let mut entry = NewEntry::new(&a.tenant_id, actor, Kind::Approval);
    entry.transport = by.map(|h| h.via);
    Ok(vec![activity::append(
        c,
        entry
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(verdict)
            .amount(a.amount)
            .kit_version(a.kit_version)
            .detail(json!({ "approval_id": a.id, "reason": reason, "hold_id": a.hold_id, "hold": hold_end.as_str(), "credential": credential })),
    )?])
}

/// Marks a pending approval approved, with the decider's trail step. The caller has checked
/// that it may be (the decider, the kits and caps in force).
pub(crate) fn mark_approved(c: &dyn Tx, a: &Approval, by: &Human, note: Option<&str>) -> Result<()> {
    c.exec(
        "UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, decision_reason = ? WHERE id = ? AND status = 'pending'",
        &[&by.username, &stored::ts(Utc::now()), &note, &a.id],
    )?;
    trail(c, &a.id, &by.username, "approved", note, Some(&by.credential))
}

/// Marks a pending approval denied because the kits or caps in force refuse its call now:
/// `reason` says so, and the refusal is its result.
pub(crate) fn mark_refused(
    c: &dyn Tx,
    a: &Approval,
    by: &Human,
    reason: &str,
    env: &policy::Envelope,
) -> Result<()> {
    c.exec(
        "UPDATE approvals SET status = 'denied', decided_by = ?, decided_at = ?, decision_reason = ?, result = ? WHERE id = ? AND status = 'pending'",
        &[&by.username, &stored::ts(Utc::now()), &reason, &serde_json::to_string(env).expect("envelopes serialize"), &a.id],
    )?;
    trail(c, &a.id, &by.username, "refused", Some(&env.message), Some(&by.credential))
}

impl crate::sql::FromRow for ApprovalRow {
    fn from_row(r: &Row) -> ::store::Result<ApprovalRow> {
        Ok(ApprovalRow {
            id: r.get(0)?,
            tenant_id: r.get(1)?,
            profile_id: r.get(2)?,
            hold_id: r.get(3)?,
            action: r.get(4)?,
            args: r.get(5)?,
            args_digest: r.get(6)?,
            amount_units: r.get(7)?,
            kit_name: r.get(8)?,
            kit_version: r.get(9)?,
            reason: r.get(10)?,
            status: r.get(11)?,
            requested_at: r.get(12)?,
            expires_at: r.get(13)?,
            decided_by: r.get(14)?,
            decided_at: r.get(15)?,
            decision_reason: r.get(16)?,
            result: r.get(17)?,
        })
    }
}

/// An approval, locked until commit on PostgreSQL, so two decisions on it take turns.
pub(crate) fn load(c: &dyn Tx, tenant: &TenantId, id: &str) -> Result<Approval> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?{}", for_update(c));
    let row = c.row(&sql, &[&tenant.as_str(), &id])?.ok_or(Error::NotFound { what: "approval" })?;
    from_row(crate::sql::FromRow::from_row(&row)?)
}

/// One approval with its trail, read outside any job.
pub(crate) async fn read(store: &Store, tenant: &TenantId, id: &str) -> Result<Approval> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?");
    let row: Option<ApprovalRow> = store.opt(&sql, &[&tenant.as_str(), &id]).await?;
    let mut a = row.map(from_row).transpose()?.ok_or(Error::NotFound { what: "approval" })?;
    let steps: Vec<TrailRow> = store
        .all(
            "SELECT at, actor, step, note, credential FROM approval_trail WHERE approval_id = ? ORDER BY seq",
            &[&id],
        )
        .await?;
    a.trail = steps.into_iter().map(trail_step).collect();
    Ok(a)
}

/// Approvals, newest first, without trails.
pub(crate) async fn list(store: &Store, tenant: &TenantId, q: &ApprovalQuery) -> Result<Vec<Approval>> {
    // Each filter is in the SQL only when given, so the planner picks the index that
    // serves exactly that page (a pinned plan test in this module's tests).
    let sql = approvals_sql(q.status.is_some(), q.profile.is_some());
    let (status, limit) = (q.status.map(|s| s.as_str()), q.limit.unwrap_or(100).clamp(1, 500));
    let mut args: Vec<&dyn crate::sql::ToValue> = vec![tenant];
    if let Some(s) = &status {
        args.push(s);
    }
    if let Some(p) = &q.profile {
        args.push(p);
    }
    args.push(&limit);
    let rows: Vec<ApprovalRow> = store.all(&sql, &args).await?;
    rows.into_iter().map(from_row).collect()
}

/// How many pending approvals `user` may decide (none of their own agents', or their
/// sub-agents'), and when the soonest of them expires.
pub(crate) async fn waiting_for(
    store: &Store,
    tenant: &TenantId,
    user: &crate::UserId,
) -> Result<(u64, Option<DateTime<Utc>>)> {
    let (n, soonest): (i64, Option<DateTime<Utc>>) = store
        .one(
            "WITH RECURSIVE mine(id) AS ( \
               SELECT id FROM agent_profiles WHERE tenant_id = ?1 AND owner_user_id = ?2 \
               UNION SELECT p.id FROM agent_profiles p JOIN mine m ON p.parent_id = m.id) \
             SELECT COUNT(*), MIN(expires_at) FROM approvals \
             WHERE tenant_id = ?1 AND status = 'pending' AND profile_id NOT IN (SELECT id FROM mine)",
            &[&tenant.as_str(), &user.as_str()],
        )
        .await?;
    Ok((n as u64, soonest))
}

/// The approvals whose time is up, locked on PostgreSQL (skipping those locked elsewhere).
pub(crate) fn due(c: &dyn Tx, now: DateTime<Utc>) -> Result<Vec<Approval>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT {SWEEP_BATCH}{}",
        skip_locked(c, "approvals")
    );
    let rows = c.rows(&sql, &[&stored::ts(now)])?;
    rows.iter().map(|r| crate::sql::FromRow::from_row(r).map_err(Error::from).and_then(from_row)).collect()
}

/// The proposal an approval would canonize, with the agent's `because`.
pub(crate) fn proposal_in(a: &Approval) -> Option<(String, String)> {
    (a.action == crate::domain::brain::DECIDE_TOOL).then(|| {
        let s = |k: &str| a.args.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        (s("proposal_id"), s("because"))
    })
}

impl Approval {
    /// Seconds left before expiry, never negative.
    pub fn seconds_left(&self, now: DateTime<Utc>) -> i64 {
        (self.expires_at - now).num_seconds().max(0)
    }
}

/// The approvals list: newest first, filtered by status and profile when given (binds in
/// that order after the tenant, then the limit).
fn approvals_sql(status: bool, profile: bool) -> String {
    let mut sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ?");
    if status {
        sql.push_str(" AND status = ?");
    }
    if profile {
        sql.push_str(" AND profile_id = ?");
    }
    sql.push_str(" ORDER BY requested_at DESC, id DESC LIMIT ?");
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_inbox_page_is_read_in_index_order_without_sorting_the_tenants_approvals() {
        let store = crate::Store::open("sqlite::memory:").await.unwrap();
        for (status, index) in [(true, "approvals_by_status"), (false, "approvals_by_time")] {
            let plan = store.sqlite_query_plan(&approvals_sql(status, false)).unwrap();
            assert!(plan.contains(index) && !plan.contains("TEMP B-TREE"), "status filter {status}:\n{plan}");
        }
    }
}
