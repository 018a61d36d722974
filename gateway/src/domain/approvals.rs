//! Approvals (docs/architecture.md#approvals): a parked call waits for a human.
//!
//! Guarantees: an approval binds the exact call (subject, action, argument digest, kit version
//! and amount) and approving executes that call once; the hold stays reserved while parked;
//! deny (with a required reason) and expiry void the hold; neither the requesting agent nor
//! the human who owns its profile can decide; the sweeper expires overdue approvals into
//! denials even with no traffic; decided approvals keep their whole trail.
//!
//! Teams (a kit's approval rules): an approval may need several distinct people, one of them
//! holding a role or in a group; each person counts once whatever credential they use, the
//! call runs once when the last needed approval arrives, and one deny ends it. An escalation
//! fires at most once ([`escalate_due`]), and lets its fallback role or group stand in.

use crate::sql::{Row, Tx, for_update, skip_locked};
use chrono::{DateTime, Utc};
use policy::Money;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::activity::{self, Entry, Kind, NewEntry, Verdict};
use crate::domain::ledger::{self, HoldEnd};
use crate::domain::principal::Human;
use crate::domain::trail::{TrailRow, decision_text, trail_step};
use crate::domain::users::Role;
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
    /// What releasing the call takes, and the approvals it has.
    pub quorum: Quorum,
    /// The agent's own words on why it asks: plain text, never markup.
    pub justification: Option<String>,
}

/// What releasing a parked call takes: `required` distinct people, one of them holding
/// `role` or in `group` when either is set (or, once escalated, the fallback's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Quorum {
    pub required: u8,
    pub role: Option<String>,
    pub group: Option<String>,
    /// The kit's `limits.approve.rules` entry that set it, if one did.
    pub rule: Option<u32>,
    pub escalate_at: Option<DateTime<Utc>>,
    pub escalated_at: Option<DateTime<Utc>>,
    pub fallback_role: Option<String>,
    pub fallback_group: Option<String>,
    /// The approvals given so far, oldest first.
    pub votes: Vec<Vote>,
}

/// One person's approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Vote {
    pub username: String,
    pub credential: String,
    pub at: DateTime<Utc>,
    pub note: Option<String>,
    /// Whether they met the named role or group.
    pub named: bool,
}

impl Quorum {
    /// One approver, anyone: a call no rule governs.
    pub fn single() -> Quorum {
        Quorum {
            required: 1,
            role: None,
            group: None,
            rule: None,
            escalate_at: None,
            escalated_at: None,
            fallback_role: None,
            fallback_group: None,
            votes: Vec::new(),
        }
    }

    /// What `rule` asks of a call parked at `now`, and the window it waits.
    pub(crate) fn of(
        rule: Option<(usize, &policy::ApprovalRule)>,
        now: DateTime<Utc>,
        default_ttl: chrono::Duration,
    ) -> (Quorum, chrono::Duration) {
        let Some((i, r)) = rule else { return (Quorum::single(), default_ttl) };
        let ttl = r.window.map_or(default_ttl, |w| chrono::Duration::seconds(i64::from(w.secs())));
        let e = r.escalate.as_ref();
        let q = Quorum {
            required: r.approvers,
            role: r.role.clone(),
            group: r.group.clone(),
            rule: u32::try_from(i).ok(),
            escalate_at: e.map(|e| now + chrono::Duration::seconds(i64::from(e.after.secs()))),
            escalated_at: None,
            fallback_role: e.and_then(|e| e.role.clone()),
            fallback_group: e.and_then(|e| e.group.clone()),
            votes: Vec::new(),
        };
        (q, ttl)
    }

    /// Whether one of the approvers must hold a role or be in a group.
    pub fn names_someone(&self) -> bool {
        self.role.is_some() || self.group.is_some()
    }

    /// Whether a role or group is named at all, its own or a fallback's: if not, nobody's
    /// groups need reading.
    pub fn names_anyone(&self) -> bool {
        self.names_someone() || self.fallback_role.is_some() || self.fallback_group.is_some()
    }

    /// Whether someone with `roles`, in `groups`, is whom this approval names: its role or
    /// group, or, once escalated, its fallback's. The deciding job and the console's "may
    /// this person decide?" both ask this.
    pub fn names(&self, roles: &[crate::Role], groups: &[String]) -> bool {
        let fits = |role: &Option<String>, group: &Option<String>| {
            role.as_deref().is_some_and(|r| roles.iter().any(|x| x.as_str() == r))
                || group.as_ref().is_some_and(|g| groups.contains(g))
        };
        fits(&self.role, &self.group)
            || (self.escalated_at.is_some() && fits(&self.fallback_role, &self.fallback_group))
    }

    /// "1 of 2, approved by alice": how far it has come.
    pub fn progress(&self) -> String {
        let by: Vec<&str> = self.votes.iter().map(|v| v.username.as_str()).collect();
        let mut s = format!("{} of {}", by.len(), self.required);
        if !by.is_empty() {
            s.push_str(&format!(", approved by {}", by.join(", ")));
        }
        s
    }

    /// Who may still decide, in words: "1 more, from role finance (or group treasury)".
    pub fn still_needed(&self) -> String {
        self.needed_after(self.votes.len(), self.votes.iter().any(|v| v.named))
    }

    /// [`Quorum::still_needed`] once `counted` approvals are in, `named` whether one of them
    /// is from the named role or group.
    fn needed_after(&self, counted: usize, named: bool) -> String {
        let left = usize::from(self.required).saturating_sub(counted);
        let mut s = format!("{left} more approver{}", if left == 1 { "" } else { "s" });
        if self.names_someone() && !named {
            s.push_str(&format!(", one of them {}", self.named_words()));
        }
        s
    }

    /// "with role finance or (escalated) in group treasury".
    pub fn named_words(&self) -> String {
        let who = |role: &Option<String>, group: &Option<String>| match (role, group) {
            (Some(r), _) => Some(format!("with role {r}")),
            (None, Some(g)) => Some(format!("in group {g}")),
            _ => None,
        };
        let own = who(&self.role, &self.group).unwrap_or_default();
        match (self.escalated_at, who(&self.fallback_role, &self.fallback_group)) {
            (Some(_), Some(f)) => format!("{own} or {f}"),
            _ => own,
        }
    }
}

/// Filters for [`Gateway::approvals`](crate::Gateway::approvals): each narrows the list when given.
#[derive(Clone, Debug, Default)]
pub struct ApprovalQuery {
    pub status: Option<ApprovalStatus>,
    pub profile: Option<ProfileId>,
    pub limit: Option<i64>,
    /// An action, or a pattern such as `cards.*`.
    pub action: Option<String>,
    /// Only calls costing at least this much.
    pub min_amount: Option<Money>,
    /// Only approvals requested before this moment (older than an age).
    pub requested_before: Option<DateTime<Utc>>,
    /// Words found in the action, the agent's justification, the decider or their reason.
    pub search: Option<String>,
}

/// The most approvals one CSV export holds.
pub const MAX_EXPORT: i64 = 10_000;

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub approvals_expired: usize,
    pub holds_expired: usize,
    pub escalated: usize,
}

impl SweepReport {
    /// Whether a batch was full, so more may be due.
    pub(crate) fn full(&self) -> bool {
        self.approvals_expired >= SWEEP_BATCH
            || self.holds_expired >= SWEEP_BATCH
            || self.escalated >= SWEEP_BATCH
    }
}

/// The most approvals, and the most orphaned holds, one sweep job ends: a job stays short
/// however large the backlog, and [`Gateway::sweep`](crate::Gateway::sweep) runs jobs until one is not full.
pub const SWEEP_BATCH: usize = 500;
/// The most jobs one [`Gateway::sweep`](crate::Gateway::sweep) runs; what is left waits for the next tick.
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
    required: i64,
    need_role: Option<String>,
    need_group: Option<String>,
    rule_index: Option<i64>,
    escalate_at: Option<DateTime<Utc>>,
    escalated_at: Option<DateTime<Utc>>,
    fallback_role: Option<String>,
    fallback_group: Option<String>,
    justification: Option<String>,
}
const COLUMNS: &str = "id, tenant_id, profile_id, hold_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, status, \
                       requested_at, expires_at, decided_by, decided_at, decision_reason, result, \
                       required, need_role, need_group, rule_index, escalate_at, escalated_at, fallback_role, fallback_group, justification";

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
        quorum: Quorum {
            required: u8::try_from(r.required)
                .map_err(|_| stored::corrupt("required approvers", &r.required.to_string()))?,
            role: r.need_role,
            group: r.need_group,
            rule: r.rule_index.and_then(|i| u32::try_from(i).ok()),
            escalate_at: r.escalate_at,
            escalated_at: r.escalated_at,
            fallback_role: r.fallback_role,
            fallback_group: r.fallback_group,
            votes: Vec::new(),
        },
        justification: r.justification,
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
    /// What releasing it takes ([`Quorum::of`]).
    pub quorum: Quorum,
    /// The agent's words on why, already checked ([`justification`]).
    pub justification: Option<&'a str>,
    /// The W3C trace context of the call that parked, when it was traced: its decision's
    /// span links to it ([`crate::audit::trace`]).
    pub traceparent: Option<&'a str>,
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
    let q = &r.quorum;
    c.exec(
        "INSERT INTO approvals (id, tenant_id, profile_id, hold_id, action, args, args_digest, amount_units, kit_name, kit_version, reason, status, requested_at, expires_at, \
         required, need_role, need_group, rule_index, escalate_at, fallback_role, fallback_group, justification, traceparent) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            &i64::from(q.required),
            &q.role,
            &q.group,
            &q.rule.map(i64::from),
            &q.escalate_at.map(stored::ts),
            &q.fallback_role,
            &q.fallback_group,
            &r.justification,
            &r.traceparent,
        ],
    )?;
    trail(c, &id, r.actor, "requested", Some(r.note), None)?;
    if let Some(j) = r.justification {
        trail(c, &id, r.actor, "justified", Some(j), None)?;
    }
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

/// The longest justification an agent may give, in characters.
pub const MAX_JUSTIFICATION_LEN: usize = 500;

/// An agent's justification: trimmed, empty as none, plain text of at most
/// [`MAX_JUSTIFICATION_LEN`] characters ([`policy::args::is_plain_text`]: line breaks and
/// tabs allowed; no other control character, and none of the invisible characters that
/// reorder or hide what an approver reads).
pub fn justification(text: Option<&str>) -> Result<Option<String>> {
    let Some(t) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    if t.chars().count() > MAX_JUSTIFICATION_LEN {
        return Err(Error::invalid(
            "justification_too_long",
            format!("a justification is at most {MAX_JUSTIFICATION_LEN} characters; say why in fewer words"),
        ));
    }
    if !policy::args::is_plain_text(t) {
        return Err(Error::invalid(
            "invalid_justification",
            "a justification is plain text: no control characters besides line breaks and tabs, and no \
             invisible formatting characters (bidirectional overrides, zero-width characters)",
        ));
    }
    Ok(Some(t.to_string()))
}

/// Whether `by` may decide `a` at all, and whether they meet its named role or group: an
/// approver or admin may, and so may whoever the approval names (its fallback once
/// escalated). `role_required` otherwise.
pub(crate) fn voter(c: &dyn Tx, a: &Approval, by: &Human) -> Result<bool> {
    let groups =
        if by.groups { crate::domain::groups::of_user(c, &a.tenant_id, &by.user_id)? } else { Vec::new() };
    let named = a.quorum.names_anyone() && a.quorum.names(&by.roles, &groups);
    if !named {
        by.require(crate::domain::principal::APPROVERS)?;
    }
    Ok(named)
}

/// An earlier vote of `a` as it stands now: whether its voter may still decide (an approver
/// or admin, or named by `a`), and whether they are named, on the roles they hold now that
/// their credential carried and, if it carried groups, the groups they are in now.
struct Standing {
    user: String,
    eligible: bool,
    named: bool,
}

/// The votes `a` has so far, each judged on who holds what now ([`Standing`]): a voter who
/// lost the role or left the group that made their vote count, or who is gone, counts no more.
fn standing_votes(c: &dyn Tx, a: &Approval) -> Result<Vec<Standing>> {
    let rows = c.rows(
        "SELECT v.user_id, v.scope_roles, v.scope_groups, u.roles FROM approval_votes v \
         LEFT JOIN console_users u ON u.id = v.user_id AND u.tenant_id = ? WHERE v.approval_id = ?",
        &[&a.tenant_id.as_str(), &a.id],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let (user, scope, in_groups, held): (String, String, i64, Option<String>) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let Some(held) = held else {
            out.push(Standing { user, eligible: false, named: false });
            continue;
        };
        // Votes from before scopes were kept carry none: the user's roles, as then.
        let carried: Vec<Role> = scope.split(',').filter_map(Role::parse).collect();
        let roles: Vec<Role> = held
            .split(',')
            .filter_map(Role::parse)
            .filter(|r| carried.is_empty() || carried.contains(r))
            .collect();
        let id = crate::ids::UserId::from_db(user.clone());
        let groups =
            if in_groups != 0 { crate::domain::groups::of_user(c, &a.tenant_id, &id)? } else { Vec::new() };
        let named = a.quorum.names_anyone() && a.quorum.names(&roles, &groups);
        let eligible = named || roles.iter().any(|r| crate::domain::principal::APPROVERS.contains(r));
        out.push(Standing { user, eligible, named });
    }
    Ok(out)
}

/// What one approval did to its call.
pub(crate) enum Counted {
    /// More approvals are needed; the vote is recorded.
    Waiting,
    /// It was the last one needed: decide the call again and run it.
    Last,
}

/// Records `by`'s approval of pending `a` (whether they meet its named role or group is
/// `named`). One person counts once: `already_approved` for a second vote, whatever the
/// credential; `named_approver_needed` when this vote would fill the last place without
/// anyone from the named role or group.
pub(crate) fn vote(c: &dyn Tx, a: &Approval, by: &Human, note: Option<&str>, named: bool) -> Result<Counted> {
    let votes = standing_votes(c, a)?;
    let counted: Vec<&Standing> = votes.iter().filter(|v| v.eligible).collect();
    if votes.iter().any(|v| v.user == by.user_id.as_str()) {
        // `a` is the row alone: what it still needs is counted from the standing votes.
        let needs = a.quorum.needed_after(counted.len(), counted.iter().any(|v| v.named));
        return Err(Error::Conflict {
            code: "already_approved",
            message: format!(
                "{} has approved this already; it still needs {needs}, from someone else",
                by.username
            ),
        });
    }
    let any_named = named || counted.iter().any(|v| v.named);
    let count = counted.len() + 1;
    let required = usize::from(a.quorum.required);
    if a.quorum.names_someone() && !any_named && count >= required {
        return Err(Error::Conflict {
            code: "named_approver_needed",
            message: format!(
                "the last approval this call needs must come from someone {}; ask them",
                a.quorum.named_words()
            ),
        });
    }
    let scope = by.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",");
    c.exec(
        "INSERT INTO approval_votes (approval_id, user_id, username, credential, at, note, named, scope_roles, scope_groups) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &[
            &a.id,
            &by.user_id.as_str(),
            &by.username,
            &by.credential,
            &stored::ts(Utc::now()),
            &note,
            &i64::from(named),
            &scope,
            &i64::from(by.groups),
        ],
    )?;
    if count < required {
        let progress = format!("{count} of {required}");
        let text = note.map_or(progress.clone(), |n| format!("{progress}: {n}"));
        trail(c, &a.id, &by.username, "voted", Some(&text), Some(&by.credential))?;
        return Ok(Counted::Waiting);
    }
    Ok(Counted::Last)
}

/// A vote as read back: the approval, username, credential, when, note, named.
type VoteRow = (String, String, String, DateTime<Utc>, Option<String>, i64);

/// The approvals given to approval `id`, oldest first.
async fn votes_of(store: &Store, id: &str) -> Result<Vec<Vote>> {
    Ok(votes_of_many(store, &[id.to_string()]).await?.into_iter().map(|(_, v)| v).collect())
}

/// The approvals given to each of `ids`, oldest first, with the approval each is for.
async fn votes_of_many(store: &Store, ids: &[String]) -> Result<Vec<(String, Vote)>> {
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT approval_id, username, credential, at, note, named FROM approval_votes \
         WHERE approval_id IN ({marks}) ORDER BY at, user_id"
    );
    let args: Vec<&dyn crate::sql::ToValue> = ids.iter().map(|i| i as &dyn crate::sql::ToValue).collect();
    let rows: Vec<VoteRow> = store.all(&sql, &args).await?;
    Ok(rows
        .into_iter()
        .map(|(id, username, credential, at, note, named)| {
            (id, Vote { username, credential, at, note, named: named != 0 })
        })
        .collect())
}

/// Escalates the pending approvals whose escalation is due and `mine` keeps (their tenant's
/// lock is held), each once: the trail says so and the log entry tells the approvers again
/// (`approval.escalated`). Rows another instance's sweep holds are skipped.
pub(crate) fn escalate_due(
    c: &dyn Tx,
    now: DateTime<Utc>,
    mine: &dyn Fn(&Approval) -> bool,
) -> Result<usize> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND escalated_at IS NULL AND escalate_at <= ? \
         ORDER BY escalate_at LIMIT {SWEEP_BATCH}{}",
        skip_locked(c, "approvals")
    );
    let rows = c.rows(&sql, &[&stored::ts(now)])?;
    let mut escalated = 0;
    for r in &rows {
        let a = from_row(crate::sql::FromRow::from_row(r)?)?;
        if !mine(&a) {
            continue;
        }
        escalated += 1;
        let sql = "UPDATE approvals SET escalated_at = ? WHERE id = ? AND escalated_at IS NULL";
        if c.exec(sql, &[&stored::ts(now), &a.id])? == 0 {
            continue;
        }
        let mut escalated = a.quorum.clone();
        escalated.escalated_at = Some(now);
        let who = escalated.named_words();
        let note = if who.is_empty() {
            "waited past its escalation; approvers notified again".to_string()
        } else {
            format!("waited past its escalation; now also decidable by someone {who}")
        };
        trail(c, &a.id, "gateway", "escalated", Some(&note), None)?;
        activity::append(
            c,
            NewEntry::new(&a.tenant_id, "gateway", Kind::Approval)
                .profile(&a.profile_id)
                .action(&a.action)
                .verdict(Verdict::Escalated)
                .amount(a.amount)
                .kit_version(a.kit_version)
                .detail(json!({
                    "approval_id": a.id, "expires_at": a.expires_at, "progress": a.quorum.progress(),
                    "fallback_role": a.quorum.fallback_role, "fallback_group": a.quorum.fallback_group,
                    "justification": a.justification,
                })),
        )?;
    }
    Ok(escalated)
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
            required: r.get(18)?,
            need_role: r.get(19)?,
            need_group: r.get(20)?,
            rule_index: r.get(21)?,
            escalate_at: r.get(22)?,
            escalated_at: r.get(23)?,
            fallback_role: r.get(24)?,
            fallback_group: r.get(25)?,
            justification: r.get(26)?,
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
    a.quorum.votes = votes_of(store, id).await?;
    Ok(a)
}

/// Approvals, newest first, without trails.
pub(crate) async fn list(store: &Store, tenant: &TenantId, q: &ApprovalQuery) -> Result<Vec<Approval>> {
    list_up_to(store, tenant, q, q.limit.unwrap_or(100).clamp(1, 500)).await
}

async fn list_up_to(
    store: &Store,
    tenant: &TenantId,
    q: &ApprovalQuery,
    limit: i64,
) -> Result<Vec<Approval>> {
    // Each filter is in the SQL only when given, so the planner picks the index that
    // serves exactly that page (a pinned plan test in this module's tests).
    let sql = approvals_sql(q);
    let status = q.status.map(|s| s.as_str());
    let (action, min, before) =
        (action_like(q), q.min_amount.map(Money::units), q.requested_before.map(stored::ts));
    let search = q.search.as_deref().map(|s| format!("%{}%", like_escaped(&s.to_lowercase())));
    let mut args: Vec<&dyn crate::sql::ToValue> = vec![tenant];
    let given: [Option<&dyn crate::sql::ToValue>; 6] = [
        status.as_ref().map(|s| s as &dyn crate::sql::ToValue),
        q.profile.as_ref().map(|p| p as &dyn crate::sql::ToValue),
        action.as_ref().map(|a| a as &dyn crate::sql::ToValue),
        min.as_ref().map(|m| m as &dyn crate::sql::ToValue),
        before.as_ref().map(|b| b as &dyn crate::sql::ToValue),
        search.as_ref().map(|s| s as &dyn crate::sql::ToValue),
    ];
    args.extend(given.into_iter().flatten());
    if let Some(s) = &search {
        // The search's other three places bind the same words.
        args.extend([s as &dyn crate::sql::ToValue, s, s]);
    }
    args.push(&limit);
    let rows: Vec<ApprovalRow> = store.all(&sql, &args).await?;
    let mut out: Vec<Approval> = rows.into_iter().map(from_row).collect::<Result<_>>()?;
    // Only an approval that needs more than one person has votes to show beside its status:
    // theirs are read in one statement per few hundred, not one per row.
    let several: Vec<String> = out.iter().filter(|a| a.quorum.required > 1).map(|a| a.id.clone()).collect();
    for chunk in several.chunks(500) {
        for (id, vote) in votes_of_many(store, chunk).await? {
            if let Some(a) = out.iter_mut().find(|a| a.id == id) {
                a.quorum.votes.push(vote);
            }
        }
    }
    Ok(out)
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

/// The approvals list: newest first, filtered by what `q` gives (binds in the order of the
/// filters below after the tenant, then the limit).
fn approvals_sql(q: &ApprovalQuery) -> String {
    let mut sql = format!("SELECT {COLUMNS} FROM approvals WHERE tenant_id = ?");
    let filters = [
        (q.status.is_some(), " AND status = ?"),
        (q.profile.is_some(), " AND profile_id = ?"),
        (q.action.is_some(), " AND action LIKE ? ESCAPE '\\'"),
        (q.min_amount.is_some(), " AND amount_units >= ?"),
        (q.requested_before.is_some(), " AND requested_at < ?"),
        (
            q.search.is_some(),
            " AND (LOWER(action) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(justification, '')) LIKE ? ESCAPE '\\' \
             OR LOWER(COALESCE(decided_by, '')) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(decision_reason, '')) LIKE ? ESCAPE '\\')",
        ),
    ];
    for (given, part) in filters {
        if given {
            sql.push_str(part);
        }
    }
    sql.push_str(" ORDER BY requested_at DESC, id DESC LIMIT ?");
    sql
}

/// `_`, `%` and `\` taken literally in a LIKE pattern.
fn like_escaped(s: &str) -> String {
    s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// The action filter as a LIKE pattern: `cards.*` is every action of `cards`.
fn action_like(q: &ApprovalQuery) -> Option<String> {
    let a = q.action.as_deref()?.trim();
    Some(match a.strip_suffix('*') {
        Some(prefix) => format!("{}%", like_escaped(prefix)),
        None => like_escaped(a),
    })
}

/// The approvals `q` matches (up to [`MAX_EXPORT`], newest first) as CSV, one line per step
/// of each one's trail: who, with which credential, when, their note, and the kit version
/// it was asked under.
pub(crate) async fn export_csv(store: &Store, tenant: &TenantId, q: &ApprovalQuery) -> Result<String> {
    use crate::csv::field;
    let mut out = String::from(
        "approval_id,requested_at,profile_id,action,amount,kit,kit_version,status,required,justification,step_at,step,actor,credential,note\n",
    );
    for a in list_up_to(store, tenant, q, MAX_EXPORT).await? {
        let a = read(store, tenant, &a.id).await?;
        for t in &a.trail {
            let cells = [
                a.id.clone(),
                a.requested_at.to_rfc3339(),
                a.profile_id.to_string(),
                a.action.clone(),
                a.amount.to_decimal_string(),
                a.kit_name.clone(),
                a.kit_version.to_string(),
                a.status.as_str().to_string(),
                a.quorum.required.to_string(),
                a.justification.clone().unwrap_or_default(),
                t.at.to_rfc3339(),
                t.step.clone(),
                t.actor.clone(),
                t.credential.clone().unwrap_or_default(),
                t.note.clone().unwrap_or_default(),
            ];
            out.push_str(&cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
    }
    Ok(out)
}

/// Of the approvals `ids`: each one's status, when it was decided and when it expires (replay
/// reads what became of the calls it parked).
pub(crate) async fn outcomes(
    store: &Store,
    ids: &[String],
) -> Result<Vec<(String, String, Option<DateTime<Utc>>, DateTime<Utc>)>> {
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!("SELECT id, status, decided_at, expires_at FROM approvals WHERE id IN ({marks})");
    let args: Vec<&dyn crate::sql::ToValue> = ids.iter().map(|i| i as &dyn crate::sql::ToValue).collect();
    Ok(store.all(&sql, &args).await?)
}

/// The trace context the call that parked approval `id` ran under, if it carried one.
pub(crate) async fn traceparent(store: &Store, tenant: &TenantId, id: &str) -> Result<Option<String>> {
    let sql = "SELECT traceparent FROM approvals WHERE tenant_id = ? AND id = ?";
    let parked: Option<(Option<String>,)> = store.opt(sql, &[tenant, &id]).await?;
    Ok(parked.and_then(|p| p.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_inbox_page_is_read_in_index_order_without_sorting_the_tenants_approvals() {
        let store = crate::Store::open("sqlite::memory:").await.unwrap();
        for (status, index) in
            [(Some(ApprovalStatus::Pending), "approvals_by_status"), (None, "approvals_by_time")]
        {
            let q = ApprovalQuery { status, ..Default::default() };
            let plan = store.sqlite_query_plan(&approvals_sql(&q)).unwrap();
            assert!(
                plan.contains(index) && !plan.contains("TEMP B-TREE"),
                "status filter {status:?}:\n{plan}"
            );
        }
    }
}
