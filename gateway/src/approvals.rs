//! Approvals (SPEC §7): a parked call waits for a human.
//!
//! Guarantees: an approval binds the exact call (subject, action, argument digest, kit version
//! and amount) and approving executes that call once; the hold stays reserved while parked;
//! deny (with a required reason) and expiry void the hold; neither the requesting agent nor
//! the human who owns its profile can decide; the sweeper expires overdue approvals into
//! denials even with no traffic; decided approvals keep their whole trail.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use policy::Money;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Gateway;
use crate::activity::{self, Entry, Kind, NewEntry};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId, UserId};
use crate::keys::Subject;
use crate::ledger::{self, HoldEnd};
use crate::pipeline::{ActionResponse, Disposition};

/// How often the sweeper looks for overdue approvals and orphaned holds.
pub const SWEEP_INTERVAL_MS: u64 = 1_000;
/// A pending hold with no pending approval older than this was left by a crash or a lost
/// connector call, and is expired. Longer than any connector timeout.
pub const ORPHAN_HOLD_SECS: i64 = 120;
/// The longest reason or note accepted on a decision.
pub const MAX_REASON_LEN: usize = 2_000;

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
pub struct TrailStep {
    pub at: DateTime<Utc>,
    pub actor: String,
    pub step: String,
    pub note: Option<String>,
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

/// A human deciding in the console or through a company key acting for a named user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Human {
    pub user: UserId,
    pub username: String,
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

#[derive(sqlx::FromRow)]
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

fn from_row(r: ApprovalRow) -> Approval {
    Approval {
        id: r.id,
        tenant_id: TenantId::from_db(r.tenant_id),
        profile_id: ProfileId::from_db(r.profile_id),
        hold_id: r.hold_id,
        action: r.action,
        args: serde_json::from_str(&r.args).unwrap_or(Value::Null),
        args_digest: r.args_digest,
        amount: Money::from_units(r.amount_units).unwrap_or(Money::ZERO),
        kit_name: r.kit_name,
        kit_version: u32::try_from(r.kit_version).unwrap_or(0),
        reason: r.reason,
        status: ApprovalStatus::parse(&r.status).unwrap_or(ApprovalStatus::Expired),
        requested_at: r.requested_at,
        expires_at: r.expires_at,
        decided_by: r.decided_by,
        decided_at: r.decided_at,
        decision_reason: r.decision_reason,
        result: r.result.and_then(|s| serde_json::from_str(&s).ok()),
        trail: Vec::new(),
    }
}

/// Appends a step to an approval's trail.
pub(crate) fn trail(
    c: &Connection,
    approval: &str,
    actor: &str,
    step: &str,
    note: Option<&str>,
) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO approval_trail (approval_id, at, actor, step, note) VALUES (?, ?, ?, ?, ?)",
    )?
    .execute(params![approval, db::ts(Utc::now()), actor, step, note])?;
    Ok(())
}

fn required_reason(reason: &str, what: &str) -> Result<String> {
    let r = reason.trim();
    if r.is_empty() {
        return Err(Error::invalid(
            "reason_required",
            format!("{what} needs a reason; say why, for the agent and the audit trail"),
        ));
    }
    if r.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid(
            "reason_too_long",
            format!("a reason is at most {MAX_REASON_LEN} characters"),
        ));
    }
    Ok(r.to_string())
}

/// Ends a pending approval as denied or expired and voids or expires its hold.
fn close(
    c: &Connection,
    a: &Approval,
    status: ApprovalStatus,
    actor: &str,
    reason: &str,
) -> Result<Vec<Entry>> {
    let changed = c
        .prepare_cached(
            "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ? WHERE id = ? AND status = 'pending'",
        )?
        .execute(params![status.as_str(), actor, db::ts(Utc::now()), reason, a.id])?;
    if changed == 0 {
        return Err(Error::Conflict {
            code: "approval_already_decided",
            message: "this approval was already decided or expired".into(),
        });
    }
    trail(c, &a.id, actor, status.as_str(), Some(reason))?;
    let hold_end = if status == ApprovalStatus::Expired { HoldEnd::Expired } else { HoldEnd::Voided };
    if let Some(h) = &a.hold_id {
        ledger::end(c, h, hold_end, Money::ZERO)?;
    }
    c.prepare_cached("UPDATE proposals SET status = 'pending', approval_id = NULL WHERE approval_id = ? AND status = 'parked'")?
        .execute([&a.id])?;
    Ok(vec![activity::append(
        c,
        NewEntry::new(&a.tenant_id, actor, Kind::Approval)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(status.as_str())
            .amount(a.amount)
            .kit_version(a.kit_version)
            .detail(json!({ "approval_id": a.id, "reason": reason, "hold_id": a.hold_id, "hold": hold_end.as_str() })),
    )?])
}

fn row_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApprovalRow> {
    let t = |i: usize| -> rusqlite::Result<DateTime<Utc>> { Ok(db::parse_ts(&r.get::<_, String>(i)?)) };
    let ot = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
        Ok(r.get::<_, Option<String>>(i)?.map(|s| db::parse_ts(&s)))
    };
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
        requested_at: t(12)?,
        expires_at: t(13)?,
        decided_by: r.get(14)?,
        decided_at: ot(15)?,
        decision_reason: r.get(16)?,
        result: r.get(17)?,
    })
}

fn load(c: &Connection, tenant: &TenantId, id: &str) -> Result<Approval> {
    c.prepare_cached(&format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?"))?
        .query_row(params![tenant.as_str(), id], row_from)
        .optional()?
        .map(from_row)
        .ok_or(Error::NotFound { what: "approval" })
}

impl Gateway {
    /// One approval with its trail.
    pub async fn approval(&self, tenant: &TenantId, id: &str) -> Result<Approval> {
        let mut a = sqlx::query_as::<_, ApprovalRow>(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?"
        ))
        .bind(tenant.as_str())
        .bind(id)
        .fetch_optional(self.store.pool())
        .await?
        .map(from_row)
        .ok_or(Error::NotFound { what: "approval" })?;
        let steps: Vec<(DateTime<Utc>, String, String, Option<String>)> = sqlx::query_as(
            "SELECT at, actor, step, note FROM approval_trail WHERE approval_id = ? ORDER BY seq",
        )
        .bind(id)
        .fetch_all(self.store.pool())
        .await?;
        a.trail =
            steps.into_iter().map(|(at, actor, step, note)| TrailStep { at, actor, step, note }).collect();
        Ok(a)
    }

    /// An agent polling its own approval: another profile's approval does not exist for it.
    pub async fn approval_for_subject(&self, subject: &Subject, id: &str) -> Result<Approval> {
        let a = self.approval(&subject.tenant, id).await?;
        if a.profile_id != subject.profile {
            return Err(Error::NotFound { what: "approval" });
        }
        Ok(a)
    }

    /// Approvals, newest first, without trails.
    pub async fn approvals(&self, tenant: &TenantId, q: &ApprovalQuery) -> Result<Vec<Approval>> {
        // Each filter is in the SQL only when given, so the planner picks the index that
        // serves exactly that page (a pinned plan test in this module's tests).
        let sql = approvals_sql(q.status.is_some(), q.profile.is_some());
        let mut query = sqlx::query_as::<_, ApprovalRow>(&sql).bind(tenant.as_str());
        if let Some(s) = q.status {
            query = query.bind(s.as_str());
        }
        if let Some(p) = &q.profile {
            query = query.bind(p.as_str());
        }
        let rows = query.bind(q.limit.unwrap_or(100).clamp(1, 500)).fetch_all(self.store.pool()).await?;
        Ok(rows.into_iter().map(from_row).collect())
    }

    /// Approves and executes the bound call exactly once.
    pub async fn approve(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Human,
        note: Option<&str>,
    ) -> Result<ActionResponse> {
        let (t, id_, by_, note) = (tenant.clone(), id.to_string(), by.clone(), note.map(str::to_string));
        let (a, entries) = self
            .writer
            .run(move |c| {
                let a = load(c, &t, &id_)?;
                check_decider(c, &a, &by_)?;
                if a.status != ApprovalStatus::Pending {
                    return Err(Error::Conflict {
                        code: "approval_already_decided",
                        message: format!("this approval is already {}", a.status.as_str()),
                    });
                }
                if a.expires_at <= Utc::now() {
                    return Err(Error::Conflict { code: "approval_expired", message: "this approval has expired; the agent must ask again".into() });
                }
                c.prepare_cached(
                    "UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, decision_reason = ? WHERE id = ? AND status = 'pending'",
                )?
                .execute(params![by_.username, db::ts(Utc::now()), note, a.id])?;
                trail(c, &a.id, &by_.username, "approved", note.as_deref())?;
                let e = activity::append(
                    c,
                    NewEntry::new(&a.tenant_id, &by_.username, Kind::Approval)
                        .profile(&a.profile_id)
                        .action(&a.action)
                        .verdict("approved")
                        .amount(a.amount)
                        .kit_version(a.kit_version)
                        .detail(json!({ "approval_id": a.id })),
                )?;
                Ok((a, vec![e]))
            })
            .await?;
        self.bus.publish(entries);
        let subject = Subject {
            tenant: a.tenant_id.clone(),
            profile: a.profile_id.clone(),
            key: crate::ids::KeyId::from_db("approval".into()),
        };
        let resp = if let Some((proposal, because)) = crate::brain::proposal_in(&a) {
            self.canonize(&a.tenant_id, &proposal, &by.username, &because).await?
        } else {
            let tool = self.catalog.get(&a.action).cloned().ok_or(Error::NotFound { what: "tool" })?;
            let hold = a.hold_id.clone().ok_or(Error::NotFound { what: "hold" })?;
            self.execute_and_settle(
                &subject,
                &tool,
                a.args.clone(),
                hold,
                a.amount,
                a.kit_version,
                &by.username,
            )
            .await?
        };
        let (id_, body, d) = (a.id.clone(), resp.body.clone(), resp.disposition);
        let actor = by.username.clone();
        self.writer
            .run(move |c| {
                c.prepare_cached("UPDATE approvals SET result = ? WHERE id = ?")?
                    .execute(params![body.to_string(), id_])?;
                let step = if d == Disposition::Executed { "executed" } else { "failed" };
                trail(c, &id_, &actor, step, None)
            })
            .await?;
        Ok(resp)
    }

    /// Denies with a required reason; voids the hold.
    pub async fn deny(&self, tenant: &TenantId, id: &str, by: &Human, reason: &str) -> Result<Approval> {
        let reason = required_reason(reason, "a denial")?;
        let (t, id_, by_) = (tenant.clone(), id.to_string(), by.clone());
        let entries = self
            .writer
            .run(move |c| {
                let a = load(c, &t, &id_)?;
                check_decider(c, &a, &by_)?;
                close(c, &a, ApprovalStatus::Denied, &by_.username, &reason)
            })
            .await?;
        self.bus.publish(entries);
        self.approval(tenant, id).await
    }

    /// Expires overdue approvals (into denials) and orphaned holds. `orphan_all` expires every
    /// pending hold without a pending approval, as after a restart when nothing is in flight.
    pub async fn sweep(&self, orphan_all: bool) -> Result<SweepReport> {
        let (report, entries) = self
            .writer
            .run(move |c| {
                let now = Utc::now();
                let due = c
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT 500"
                    ))?
                    .query_map([db::ts(now)], row_from)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let mut entries = Vec::new();
                let mut report = SweepReport::default();
                for a in due.into_iter().map(from_row) {
                    entries.extend(close(c, &a, ApprovalStatus::Expired, "system", "expired before a decision (on_expiry: deny)")?);
                    report.approvals_expired += 1;
                }
                let cutoff = if orphan_all { now } else { now - chrono::Duration::seconds(ORPHAN_HOLD_SECS) };
                let orphans = c
                    .prepare_cached(
                        "SELECT h.id, h.tenant_id, h.profile_id, h.action, h.amount_units FROM holds h WHERE h.status = 'pending' AND h.created_at <= ? \
                         AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.hold_id = h.id AND a.status IN ('pending', 'approved')) LIMIT 500",
                    )?
                    .query_map([db::ts(cutoff)], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, i64>(4)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                for (hold, tenant, profile, action, amount) in orphans {
                    ledger::end(c, &hold, HoldEnd::Expired, Money::ZERO)?;
                    c.prepare_cached("DELETE FROM idempotency WHERE status = 0 AND response = ?")?.execute([&hold])?;
                    let t = TenantId::from_db(tenant);
                    entries.push(activity::append(
                        c,
                        NewEntry::new(&t, "system", Kind::Hold)
                            .profile(&ProfileId::from_db(profile))
                            .action(action)
                            .verdict("expired")
                            .amount(Money::from_units(amount).unwrap_or(Money::ZERO))
                            .detail(json!({ "hold_id": hold, "reason": "the action never completed" })),
                    )?);
                    report.holds_expired += 1;
                }
                Ok((report, entries))
            })
            .await?;
        self.bus.publish(entries);
        Ok(report)
    }

    /// Runs [`Gateway::sweep`] every [`SWEEP_INTERVAL_MS`] until the handle is dropped. Only
    /// holds older than [`ORPHAN_HOLD_SECS`] count as orphaned here, so actions in flight are
    /// never touched; call `sweep(true)` once before serving to recover from a crash.
    pub fn start_sweeper(&self) -> SweeperHandle {
        let gw = self.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(StdDuration::from_millis(SWEEP_INTERVAL_MS));
            for n in 0u64.. {
                tick.tick().await;
                if let Err(e) = gw.sweep(false).await {
                    tracing::warn!(error = %e, "sweep failed; retrying next tick");
                }
                // Stored Idempotency-Key responses age out far more slowly than approvals.
                if n % 600 == 0
                    && let Err(e) = gw.forget_old_requests().await
                {
                    tracing::warn!(error = %e, "forgetting old idempotency keys failed; retrying later");
                }
            }
        });
        SweeperHandle { task }
    }
}

/// Stops the sweeper when dropped. Each sweep is one atomic job, so stopping between or
/// during sweeps leaves nothing half done.
pub struct SweeperHandle {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SweeperHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Neither the requesting agent nor the human who owns its profile (or an ancestor's) may decide.
fn check_decider(c: &Connection, a: &Approval, by: &Human) -> Result<()> {
    let owners = c
        .prepare_cached(
            "WITH RECURSIVE chain(id, parent, owner) AS ( \
               SELECT id, parent_id, owner_user_id FROM agent_profiles WHERE id = ? \
               UNION ALL SELECT p.id, p.parent_id, p.owner_user_id FROM agent_profiles p JOIN chain c ON p.id = c.parent) \
             SELECT owner FROM chain",
        )?
        .query_map([a.profile_id.as_str()], |r| r.get::<_, Option<String>>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if owners.iter().flatten().any(|o| o == by.user.as_str()) {
        return Err(Error::Forbidden {
            code: "requester_cannot_decide",
            message: format!(
                "{} owns the agent profile that asked, so another approver must decide",
                by.username
            ),
        });
    }
    Ok(())
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

    #[test]
    fn an_inbox_page_is_read_in_index_order_without_sorting_the_tenants_approvals() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        for sql in [
            include_str!("../../migrations/sqlite/0001_foundation.sql"),
            include_str!("../../migrations/sqlite/0002_gateway_core.sql"),
            include_str!("../../migrations/sqlite/0003_deferred_indexes.sql"),
            include_str!("../../migrations/sqlite/0006_approval_pages.sql"),
        ] {
            c.execute_batch(sql).unwrap();
        }
        for (status, index) in [(true, "approvals_by_status"), (false, "approvals_by_time")] {
            let sql = format!("EXPLAIN QUERY PLAN {}", approvals_sql(status, false));
            let mut stmt = c.prepare(&sql).unwrap();
            let n = stmt.parameter_count();
            let plan: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(vec![rusqlite::types::Value::Null; n]), |r| r.get(3))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let plan = plan.join("\n");
            assert!(plan.contains(index) && !plan.contains("TEMP B-TREE"), "status filter {status}:\n{plan}");
        }
    }
}
