//! Approvals (docs/architecture.md#approvals): a parked call waits for a human.
//!
//! Guarantees: an approval binds the exact call (subject, action, argument digest, kit version
//! and amount) and approving executes that call once; the hold stays reserved while parked;
//! deny (with a required reason) and expiry void the hold; neither the requesting agent nor
//! the human who owns its profile can decide; the sweeper expires overdue approvals into
//! denials even with no traffic; decided approvals keep their whole trail.

use std::time::Duration as StdDuration;

use crate::sql::{Row, Tx, for_update, skip_locked};
use chrono::{DateTime, Utc};
use policy::Money;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Gateway;
use crate::audit::activity::{self, Entry, Kind, NewEntry};
use crate::db;
use crate::domain::calls::{ActionResponse, Disposition};
use crate::domain::ledger::{self, HoldEnd};
use crate::domain::principal::{APPROVERS, Human, Subject};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

/// How often the sweeper looks for overdue approvals and orphaned holds.
pub const SWEEP_INTERVAL_MS: u64 = 1_000;
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
    /// The credential a human decided with (`console session`, `token tok_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
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
    fn full(&self) -> bool {
        self.approvals_expired >= SWEEP_BATCH || self.holds_expired >= SWEEP_BATCH
    }
}

/// The most approvals, and the most orphaned holds, one sweep job ends: a job stays short
/// however large the backlog, and [`Gateway::sweep`] runs jobs until one is not full.
pub const SWEEP_BATCH: usize = 500;
/// The most jobs one [`Gateway::sweep`] runs; what is left waits for the next tick.
const MAX_SWEEP_JOBS: usize = 40;

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
        args: db::json("approval's arguments", &r.args)?,
        args_digest: r.args_digest,
        amount: Money::from_units(r.amount_units)
            .ok_or_else(|| db::corrupt("amount", &r.amount_units.to_string()))?,
        kit_name: r.kit_name,
        kit_version: u32::try_from(r.kit_version)
            .map_err(|_| db::corrupt("kit version", &r.kit_version.to_string()))?,
        reason: r.reason,
        status: db::named("approval status", &r.status, ApprovalStatus::parse)?,
        requested_at: r.requested_at,
        expires_at: r.expires_at,
        decided_by: r.decided_by,
        decided_at: r.decided_at,
        decision_reason: r.decision_reason,
        result: r.result.map(|s| db::json("approval's result", &s)).transpose()?,
        trail: Vec::new(),
    })
}

/// A trail step as read back: when, who, what, the note, the credential.
pub(crate) type TrailRow = (DateTime<Utc>, String, String, Option<String>, Option<String>);

pub(crate) fn trail_step((at, actor, step, note, credential): TrailRow) -> TrailStep {
    TrailStep { at, actor, step, note, credential }
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
        &[&approval, &db::ts(Utc::now()), &actor, &step, &note, &credential],
    )?;
    Ok(())
}

/// An optional note on a decision: trimmed, empty as none, at most [`MAX_REASON_LEN`].
fn optional_note(note: Option<&str>) -> Result<Option<String>> {
    let Some(n) = note.map(str::trim).filter(|n| !n.is_empty()) else { return Ok(None) };
    if n.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid(
            "note_too_long",
            format!("a note is at most {MAX_REASON_LEN} characters"),
        ));
    }
    Ok(Some(n.to_string()))
}

/// A decision's free text (a reason, a `because`, a note) as sent: at most
/// [`MAX_REASON_LEN`] characters (else `too_long`) of plain text, line breaks allowed,
/// control characters not. Trimmed; `None` when blank.
pub(crate) fn decision_text(text: &str, field: &str, too_long: &'static str) -> Result<Option<String>> {
    if text.chars().count() > MAX_REASON_LEN {
        return Err(Error::invalid(too_long, format!("{field} is at most {MAX_REASON_LEN} characters")));
    }
    if !policy::args::is_plain_text(text) {
        return Err(Error::invalid("invalid_text", format!("{field} is text without control characters")));
    }
    let t = text.trim();
    Ok((!t.is_empty()).then(|| t.to_string()))
}

fn required_reason(reason: &str, what: &str) -> Result<String> {
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
    let now = Utc::now();
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
            &db::ts(now),
            &db::ts(expires),
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
        &[&status.as_str(), &actor, &db::ts(Utc::now()), &reason, &a.id],
    )?;
    if changed == 0 {
        return Err(Error::Conflict {
            code: "approval_already_decided",
            message: "this approval was already decided or expired".into(),
        });
    }
    trail(c, &a.id, actor, status.as_str(), Some(reason), credential)?;
    let hold_end = if status == ApprovalStatus::Expired { HoldEnd::Expired } else { HoldEnd::Voided };
    if let Some(h) = &a.hold_id {
        ledger::end(c, h, hold_end, Money::ZERO, None)?;
    }
    crate::domain::brain::return_parked(c, &a.id, actor, reason)?;
    let mut entry = NewEntry::new(&a.tenant_id, actor, Kind::Approval);
    entry.transport = by.map(|h| h.via);
    Ok(vec![activity::append(
        c,
        entry
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict(status.as_str())
            .amount(a.amount)
            .kit_version(a.kit_version)
            .detail(json!({ "approval_id": a.id, "reason": reason, "hold_id": a.hold_id, "hold": hold_end.as_str(), "credential": credential })),
    )?])
}

impl crate::sql::FromRow for ApprovalRow {
    fn from_row(r: &Row) -> Result<ApprovalRow> {
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
fn load(c: &dyn Tx, tenant: &TenantId, id: &str) -> Result<Approval> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?{}", for_update(c));
    let row = c.row(&sql, &[&tenant.as_str(), &id])?.ok_or(Error::NotFound { what: "approval" })?;
    from_row(crate::sql::FromRow::from_row(&row)?)
}

impl Gateway {
    /// One approval with its trail.
    pub async fn approval(&self, tenant: &TenantId, id: &str) -> Result<Approval> {
        let sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ? AND id = ?");
        let row: Option<ApprovalRow> = self.store.opt(&sql, &[&tenant.as_str(), &id]).await?;
        let mut a = row.map(from_row).transpose()?.ok_or(Error::NotFound { what: "approval" })?;
        let steps: Vec<TrailRow> = self
            .store
            .all(
                "SELECT at, actor, step, note, credential FROM approval_trail WHERE approval_id = ? ORDER BY seq",
                &[&id],
            )
            .await?;
        a.trail = steps.into_iter().map(trail_step).collect();
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
    /// How many pending approvals `user` may decide (none of their own agents', or their
    /// sub-agents'), and when the soonest of them expires.
    pub async fn waiting_for(
        &self,
        tenant: &TenantId,
        user: &crate::UserId,
    ) -> Result<(u64, Option<DateTime<Utc>>)> {
        let (n, soonest): (i64, Option<DateTime<Utc>>) = self
            .store
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

    pub async fn approvals(&self, tenant: &TenantId, q: &ApprovalQuery) -> Result<Vec<Approval>> {
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
        let rows: Vec<ApprovalRow> = self.store.all(&sql, &args).await?;
        rows.into_iter().map(from_row).collect()
    }

    /// Approves and executes the bound call exactly once, if the kit and caps in force now
    /// still allow it. The hold a parked call keeps is a reservation, not a licence: the call
    /// is decided again, in the job that approves it, on the current kits, statuses and
    /// totals (its own hold given back). If they refuse it now, the approval ends refused with
    /// the reason, its hold is voided, and the answer is the refusal envelope.
    pub async fn approve(
        &self,
        tenant: &TenantId,
        id: &str,
        by: &Human,
        note: Option<&str>,
    ) -> Result<ActionResponse> {
        by.require(APPROVERS)?;
        let note = optional_note(note)?;
        let (t, id_, by_, catalog) = (tenant.clone(), id.to_string(), by.clone(), self.catalog.clone());
        let lease = self.leases.lease();
        let decided =
            self.write(move |c| approve_job(c, &catalog, &t, &id_, &by_, note.as_deref(), &lease)).await?;
        let (a, kit_version) = match decided {
            Approved::Refused(resp) => {
                return Ok(resp);
            }
            Approved::Run { approval, kit_version } => (*approval, kit_version),
        };
        let resp = self.run_approved(&a, by, kit_version).await?;
        let (id_, body, d) = (a.id.clone(), resp.body.clone(), resp.disposition);
        let actor = by.username.clone();
        self.write(move |c| {
            let step = if d == Disposition::Executed { "executed" } else { "failed" };
            record_result(c, &id_, &body, &actor, step, None)
        })
        .await?;
        Ok(resp)
    }

    /// Carries out the call an approval bound: a brain accept canonizes, anything else runs
    /// through its connector and settles its hold.
    async fn run_approved(&self, a: &Approval, by: &Human, kit_version: u32) -> Result<ActionResponse> {
        if let Some((proposal, because)) = crate::domain::brain::proposal_in(a) {
            return self
                .canonize(&a.tenant_id, &proposal, &by.username, &because, Some(&by.credential), by.via)
                .await;
        }
        let subject = Subject {
            tenant: a.tenant_id.clone(),
            profile: a.profile_id.clone(),
            key: crate::ids::KeyId::from_db("approval".into()),
            via: by.via,
        };
        let tool = self.tool(&a.action)?;
        let hold = a
            .hold_id
            .clone()
            .ok_or_else(|| Error::internal("approval_without_hold", "a parked call has no hold"))?;
        let connector = self.connector_for(&subject.tenant, &tool).await?;
        let carry = crate::domain::calls::Carry {
            subject,
            tool,
            args: a.args.clone(),
            action_id: hold.clone(),
            hold,
            cost: a.amount,
            kit_version,
            actor: by.username.clone(),
        };
        if connector.kind() == crate::delivery::connectors::ConnectorKind::Http {
            let recorded = carry.clone();
            self.write(move |c| crate::domain::recovery::record(c, &recorded)).await?;
        }
        self.carry_out(carry, connector).await
    }

    /// Why `by` may not decide `a`, as the error approving or denying it would give: the
    /// roles their credential carries, and that they own neither the profile that asked nor
    /// one above it (nor, for an agent's accept, the proposer's). The console asks before
    /// showing the buttons; the deciding job checks again in its transaction.
    pub async fn may_decide(&self, a: &Approval, by: &Human) -> Result<()> {
        by.require(APPROVERS)?;
        self.ensure_not_owner(&a.profile_id, by).await?;
        if let Some((proposal, _)) = crate::domain::brain::proposal_in(a)
            && let Some(proposer) = self.proposer(&proposal).await?
        {
            self.ensure_not_owner(&proposer, by).await?;
        }
        Ok(())
    }

    /// Denies with a required reason; voids the hold.
    pub async fn deny(&self, tenant: &TenantId, id: &str, by: &Human, reason: &str) -> Result<Approval> {
        by.require(APPROVERS)?;
        let reason = required_reason(reason, "a denial")?;
        let (t, id_, by_) = (tenant.clone(), id.to_string(), by.clone());
        self.write(move |c| {
            let a = load(c, &t, &id_)?;
            check_decider(c, &a, &by_)?;
            close(c, &a, ApprovalStatus::Denied, &by_.username, Some(&by_), &reason)
        })
        .await?;
        self.approval(tenant, id).await
    }

    /// Expires overdue approvals (into denials), ends orphaned holds and deletes expired
    /// console sessions, ended sign-in windows and unclaimed new secrets, in one job. A hold is orphaned when no pending approval keeps it and
    /// no instance holds a live lease on it ([`crate::domain::ledger::leases`]): the instance carrying out
    /// its call crashed, or lost the call. Every instance may sweep; each hold ends once.
    /// A backlog larger than one job's batch is drained in several jobs, up to
    /// [`MAX_SWEEP_JOBS`] of them.
    pub async fn sweep(&self) -> Result<SweepReport> {
        let mut total = SweepReport::default();
        for _ in 0..MAX_SWEEP_JOBS {
            let r = self.write(move |c| sweep_once(c, Utc::now())).await?;
            total.approvals_expired += r.approvals_expired;
            total.holds_expired += r.holds_expired;
            if !r.full() {
                break;
            }
        }
        Ok(total)
    }

    /// Renews this instance's leases on the holds it is carrying out now.
    pub async fn renew_leases(&self) -> Result<usize> {
        let holds = self.leases.carried();
        if holds.is_empty() {
            return Ok(0);
        }
        let lease = self.leases.lease();
        self.write(move |c| crate::domain::ledger::leases::renew(c, &holds, &lease)).await
    }

    /// Every [`SWEEP_INTERVAL_MS`] until the handle is stopped or dropped: renews this
    /// instance's leases, then runs [`Gateway::sweep`].
    pub fn start_sweeper(&self) -> SweeperHandle {
        let gw = self.clone();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(StdDuration::from_millis(SWEEP_INTERVAL_MS));
            for n in 0u64.. {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => break,
                }
                gw.sweep_tick(n).await;
            }
        });
        SweeperHandle { task: Some(task), stop }
    }

    /// One tick of the sweeper; a failure is logged and the next tick tries again.
    async fn sweep_tick(&self, n: u64) {
        if let Err(e) = self.renew_leases().await {
            tracing::warn!(error = %e, "renewing leases failed; retrying next tick");
        }
        if let Err(e) = self.sweep().await {
            tracing::warn!(error = %e, "sweep failed; retrying next tick");
        }
        if let Err(e) = self.recover_lost_calls().await {
            tracing::warn!(error = %e, "claiming lost calls failed; retrying next tick");
        }
        // Stored Idempotency-Key responses age out far more slowly than approvals.
        if n.is_multiple_of(600)
            && let Err(e) = self.forget_old_requests().await
        {
            tracing::warn!(error = %e, "forgetting old idempotency keys failed; retrying later");
        }
    }
}

/// The running sweeper. [`SweeperHandle::stop`] lets a sweep in progress finish and waits for
/// it; dropping the handle aborts the task instead. Each sweep is one atomic job, so neither
/// leaves anything half done, but an aborted task does not wait: on PostgreSQL its last job
/// may still be running (holding its rows) on a runner thread when the drop returns.
pub struct SweeperHandle {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl SweeperHandle {
    /// Stops ticking, and returns once the sweep in progress, if any, has committed.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SweeperHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Neither the requesting agent nor the human who owns its profile (or an ancestor's) may
/// decide; for an agent's parked accept of a proposal, nor the owner of the profile that
/// proposed it.
fn check_decider(c: &dyn Tx, a: &Approval, by: &Human) -> Result<()> {
    crate::domain::profiles::ensure_not_owner(c, &a.profile_id, by)?;
    if let Some((proposal, _)) = crate::domain::brain::proposal_in(a)
        && let Some(proposer) = crate::domain::brain::proposer(c, &proposal)?
    {
        crate::domain::profiles::ensure_not_owner(c, &proposer, by)?;
    }
    Ok(())
}

/// What the approving job found.
enum Approved {
    /// The kit or caps in force refuse the call now; the approval ended refused.
    Refused(ActionResponse),
    /// Approved under the kit version given: run the bound call.
    Run { approval: Box<Approval>, kit_version: u32 },
}

/// Decides an approval in one job: the decider may decide, it is still pending, and the call
/// is allowed under the kits, statuses and totals in force now (its own hold given back).
fn approve_job(
    c: &dyn Tx,
    catalog: &policy::Catalog,
    tenant: &TenantId,
    id: &str,
    by: &Human,
    note: Option<&str>,
    lease: &crate::domain::ledger::leases::Lease,
) -> Result<Approved> {
    let a = load(c, tenant, id)?;
    check_decider(c, &a, by)?;
    if a.status != ApprovalStatus::Pending {
        return Err(Error::Conflict {
            code: "approval_already_decided",
            message: format!("this approval is already {}", a.status.as_str()),
        });
    }
    if a.expires_at <= Utc::now() {
        return Err(Error::Conflict {
            code: "approval_expired",
            message: "this approval has expired; the agent must ask again".into(),
        });
    }
    let links = crate::domain::chain::load_links(c, &a.tenant_id, &a.profile_id)?;
    let tool = catalog
        .get(&a.action)
        .cloned()
        .ok_or_else(|| Error::internal("unknown_tool", format!("{} is not in the catalog", a.action)))?;
    let checked = crate::domain::calls::check_args(&a.action, &a.args)?;
    let own = match &a.hold_id {
        Some(h) => Some((a.amount, held_credit(c, h)?)),
        None => None,
    };
    let (budgets, credit) = crate::domain::reserve::budget_views(c, &a.tenant_id, &links, own)?;
    let kit = &links[0].kit;
    let request = crate::domain::calls::request(&tool, &checked);
    let d = policy::evaluate(&policy::DecisionInput {
        subject: crate::domain::chain::chain_status(&links),
        kit,
        action: request,
        budgets: &budgets,
        company_credit: credit,
    });
    if let (policy::EngineVerdict::Deny, Some(refusal)) = (d.verdict, d.refusal) {
        let env = policy::Envelope::deny(kit, &request, refusal, 1, Vec::new());
        refuse_approved(c, &a, by, &env, kit.version.0)?;
        return Ok(Approved::Refused(ActionResponse::refused(&env)));
    }
    c.exec(
        "UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ?, decision_reason = ? WHERE id = ? AND status = 'pending'",
        &[&by.username, &db::ts(Utc::now()), &note, &a.id],
    )?;
    if let Some(h) = &a.hold_id {
        crate::domain::ledger::leases::take(c, h, lease)?;
    }
    trail(c, &a.id, &by.username, "approved", note, Some(&by.credential))?;
    activity::append(
        c,
        NewEntry::new(&a.tenant_id, &by.username, Kind::Approval)
            .via(by.via)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict("approved")
            .amount(a.amount)
            .kit_version(kit.version.0)
            .detail(json!({ "approval_id": a.id, "credential": by.credential })),
    )?;
    Ok(Approved::Run { approval: Box::new(a), kit_version: kit.version.0 })
}

/// The platform-credit part of a pending hold; a hold that has ended is a conflict.
fn held_credit(c: &dyn Tx, hold: &str) -> Result<Money> {
    let units: Option<i64> =
        match c.row("SELECT credit_units FROM holds WHERE id = ? AND status = 'pending'", &[&hold])? {
            Some(r) => Some(r.get(0)?),
            None => None,
        };
    units.and_then(Money::from_units).ok_or_else(|| Error::Conflict {
        code: "hold_already_ended",
        message: "this approval's hold has already ended; the agent must ask again".into(),
    })
}

/// Ends an approval refused at decision time: denied with the refusal as its reason and
/// result, its hold voided, the trail and the log saying why.
fn refuse_approved(
    c: &dyn Tx,
    a: &Approval,
    by: &Human,
    env: &policy::Envelope,
    kit_version: u32,
) -> Result<Vec<Entry>> {
    let reason = format!("refused when approved: {}", env.message);
    c.exec(
        "UPDATE approvals SET status = 'denied', decided_by = ?, decided_at = ?, decision_reason = ?, result = ? WHERE id = ? AND status = 'pending'",
        &[&by.username, &db::ts(Utc::now()), &reason, &serde_json::to_string(env).expect("envelopes serialize"), &a.id],
    )?;
    trail(c, &a.id, &by.username, "refused", Some(&env.message), Some(&by.credential))?;
    if let Some(h) = &a.hold_id {
        ledger::end(c, h, HoldEnd::Voided, Money::ZERO, Some(kit_version))?;
    }
    crate::domain::brain::return_parked(c, &a.id, &by.username, &reason)?;
    Ok(vec![activity::append(
        c,
        NewEntry::new(&a.tenant_id, &by.username, Kind::Approval)
            .via(by.via)
            .profile(&a.profile_id)
            .action(&a.action)
            .verdict("refused")
            .amount(a.amount)
            .kit_version(kit_version)
            .detail(json!({ "approval_id": a.id, "reason": env.error.details.reason, "hold_id": a.hold_id, "hold": "voided", "credential": by.credential })),
    )?])
}

/// One sweep at `now`: expired approvals, orphaned holds, ended sessions, sign-in windows
/// and unclaimed secrets. On PostgreSQL rows another transaction holds are skipped, so sweeps
/// on several instances at once each end different holds.
pub(crate) fn sweep_once(c: &dyn Tx, now: DateTime<Utc>) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    // Both sets first (each row locked, skipping those another instance's sweep or a
    // settle holds), then every account and tenant they touch, in order, then the work.
    let due = due_approvals(c, now)?;
    let orphans = orphans(c, now)?;
    let holds: Vec<&str> =
        due.iter().filter_map(|a| a.hold_id.as_deref()).chain(orphans.iter().map(|o| o.0.as_str())).collect();
    ledger::lock_for_ending(c, &holds)?;
    expire(c, due, &mut report)?;
    end_orphans(c, orphans, &mut report)?;
    crate::domain::sessions::forget_ended(c, now)?;
    crate::domain::logins::forget_ended(c, now)?;
    crate::domain::handovers::forget_unclaimed(c, now)?;
    Ok(report)
}

/// The approvals whose time is up, locked on PostgreSQL (skipping those locked elsewhere).
fn due_approvals(c: &dyn Tx, now: DateTime<Utc>) -> Result<Vec<Approval>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT {SWEEP_BATCH}{}",
        skip_locked(c, "approvals")
    );
    let rows = c.rows(&sql, &[&db::ts(now)])?;
    rows.iter().map(|r| crate::sql::FromRow::from_row(r).and_then(from_row)).collect()
}

/// Expires `due` into denials that void their holds.
fn expire(c: &dyn Tx, due: Vec<Approval>, report: &mut SweepReport) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for a in due {
        entries.extend(close(
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

/// A pending hold nobody will settle: the hold, its tenant, profile, action, amount, and the
/// approval that released it, if one did.
type Orphan = (String, String, String, String, i64, Option<String>);

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
           OR a.status IN ('denied', 'expired')) LIMIT {SWEEP_BATCH}{}",
        skip_locked(c, "h")
    );
    let attempts = crate::domain::recovery::MAX_ATTEMPTS;
    c.rows(&sql, &[&db::ts(now), &attempts])?.iter().map(crate::sql::FromRow::from_row).collect()
}

/// Ends `orphans`. An approved call that never completed says so in its result and trail.
fn end_orphans(c: &dyn Tx, orphans: Vec<Orphan>, report: &mut SweepReport) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for (hold, tenant, profile, action, amount, approval) in orphans {
        ledger::end(c, &hold, HoldEnd::Expired, Money::ZERO, None)?;
        crate::domain::reserve::forget_claim(c, &hold)?;
        let lost = crate::domain::recovery::lost_call(c, &hold)?;
        if let Some(a) = &approval {
            let note = "the approved call never completed; its hold expired and nothing was charged";
            let result = json!({ "ok": false, "error": "never_completed", "message": note, "hold_id": hold });
            record_result(c, a, &result, "system", "failed", Some(note))?;
        }
        entries.push(activity::append(
            c,
            NewEntry::new(&TenantId::from_db(tenant), "system", Kind::Hold)
                .profile(&ProfileId::from_db(profile))
                .action(action)
                .verdict("expired")
                .amount(Money::from_units(amount).unwrap_or(Money::ZERO))
                .detail(match lost {
                    Some(action_id) => json!({ "hold_id": hold, "approval_id": approval, "action_id": action_id,
                        "reason": "the call went to the upstream but no answer came back, even to resends; nothing was charged here: look the action id up on the upstream" }),
                    None => json!({ "hold_id": hold, "approval_id": approval, "reason": "the action never completed" }),
                }),
        )?);
        report.holds_expired += 1;
    }
    Ok(entries)
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
            include_str!("../../../migrations/sqlite/0001_foundation.sql"),
            include_str!("../../../migrations/sqlite/0002_gateway_core.sql"),
            include_str!("../../../migrations/sqlite/0003_deferred_indexes.sql"),
            include_str!("../../../migrations/sqlite/0006_approval_pages.sql"),
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
