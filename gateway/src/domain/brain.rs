//! Brain governance (docs/architecture.md#brain-governance): writeback envelopes become proposals;
//! proposals are decided.
//!
//! Guarantees: every proposal keeps a decision trail (proposed, parked, accepted, rejected;
//! who, when, because); `because` is required for every decision; a reject applies at once;
//! a human reviewer's accept canonizes the claim into the tenant's beliefs exactly once; an
//! agent's accept never canonizes, it parks for a human and returns an approval id.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::principal::{Human, Subject};
use crate::domain::trail::{TrailRow, TrailStep, decision_text};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{FromRow, Row, Tx, for_update};
use crate::store::Store;
use crate::stored;

/// The MCP/HTTP tool name an agent's accept is parked under.
pub const DECIDE_TOOL: &str = "naive_brain_decide_proposal";
const MAX_CLAIMS: usize = 100;
const MAX_CLAIM_BYTES: usize = 8 * 1024;
const MAX_LABEL_LEN: usize = 200;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WritebackInput {
    #[cfg_attr(feature = "openapi", schema(schema_with = label_schema))]
    pub run_id: String,
    #[cfg_attr(feature = "openapi", schema(schema_with = label_schema))]
    pub source: String,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 100))]
    pub claims: Vec<ClaimInput>,
}

/// A writeback's labels in the API document: what [`label`] accepts.
#[cfg(feature = "openapi")]
fn label_schema() -> utoipa::openapi::Object {
    policy::args::name_schema(MAX_LABEL_LEN)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ClaimInput {
    /// A lowercase word: fact, entity, preference, skill…
    #[cfg_attr(feature = "openapi", schema(pattern = "^[a-z_]{1,40}$"))]
    pub object_type: String,
    /// The claim itself: a JSON object of at most 8 KiB.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub content: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    Pending,
    Parked,
    Accepted,
    Rejected,
}

impl ProposalStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::Parked => "parked",
            ProposalStatus::Accepted => "accepted",
            ProposalStatus::Rejected => "rejected",
        }
    }
    pub fn parse(s: &str) -> Option<ProposalStatus> {
        [ProposalStatus::Pending, ProposalStatus::Parked, ProposalStatus::Accepted, ProposalStatus::Rejected]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Accept,
    Reject,
}

/// Who decides a proposal.
#[derive(Clone, Debug)]
pub enum Decider {
    Human(Human),
    Agent(Subject),
}

impl Decider {
    /// The credential a human decided with; an agent's key is in its subject.
    pub fn credential(&self) -> Option<String> {
        match self {
            Decider::Human(h) => Some(h.credential.clone()),
            Decider::Agent(_) => None,
        }
    }

    /// Who the trail and the log name: the human's username, or the agent's profile.
    pub fn actor(&self) -> String {
        match self {
            Decider::Human(h) => h.username.clone(),
            Decider::Agent(s) => s.profile.to_string(),
        }
    }

    /// The transport the decision came by.
    pub fn via(&self) -> crate::audit::activity::Transport {
        match self {
            Decider::Human(h) => h.via,
            Decider::Agent(s) => s.via,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Proposal {
    pub id: String,
    pub writeback_id: String,
    pub run_id: String,
    pub object_type: String,
    pub content: Value,
    pub status: ProposalStatus,
    pub approval_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub trail: Vec<TrailStep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Writeback {
    pub id: String,
    pub profile_id: ProfileId,
    pub run_id: String,
    pub source: String,
    pub envelope: Value,
    pub received_at: DateTime<Utc>,
    pub proposals: Vec<Proposal>,
}

/// A writeback that was recorded: each of its claims is now a pending proposal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WritebackAccepted {
    pub ok: bool,
    pub writeback: Writeback,
}

/// A decided proposal: the proposal with its trail, and, on accept, the belief it became.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProposalDecided {
    pub ok: bool,
    pub proposal: Proposal,
    /// Present when the proposal was accepted into a belief.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub belief_id: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct ProposalQuery {
    pub status: Option<ProposalStatus>,
    pub object_type: Option<String>,
    pub run_id: Option<String>,
    pub limit: Option<i64>,
}

fn label(v: &str, field: &str) -> Result<String> {
    crate::ids::display_name(v, MAX_LABEL_LEN, "invalid_writeback", &format!("`{field}`"))
}

pub(crate) fn because(b: &str) -> Result<String> {
    decision_text(b, "`because`", "because_too_long")?.ok_or_else(|| {
        Error::invalid("because_required", "a decision needs `because`: say why, for the trail")
    })
}

pub(crate) fn trail(
    c: &dyn Tx,
    proposal: &str,
    actor: &str,
    step: &str,
    because: Option<&str>,
    credential: Option<&str>,
) -> Result<()> {
    c.exec(
        "INSERT INTO proposal_trail (proposal_id, at, actor, step, because, credential) VALUES (?, ?, ?, ?, ?, ?)",
        &[&proposal, &stored::ts(Utc::now()), &actor, &step, &because, &credential],
    )?;
    Ok(())
}

/// The profile whose writeback carried `proposal`.
pub(crate) fn proposer(c: &dyn Tx, proposal: &str) -> Result<Option<ProfileId>> {
    let row = c.row(PROPOSER, &[&proposal])?;
    Ok(row.map(|r| r.get::<String>(0).map(ProfileId::from_db)).transpose()?)
}

pub(crate) const PROPOSER: &str =
    "SELECT w.profile_id FROM proposals p JOIN writebacks w ON w.id = p.writeback_id WHERE p.id = ?";

/// Puts the proposal parked on approval `approval` back in the reviewers' queue, with a
/// `returned` step saying why: the approval was denied or expired.
pub(crate) fn return_parked(c: &dyn Tx, approval: &str, actor: &str, reason: &str) -> Result<()> {
    let parked =
        c.row("SELECT id FROM proposals WHERE approval_id = ? AND status = 'parked'", &[&approval])?;
    let Some(id) = parked.map(|r| r.get::<String>(0)).transpose()? else {
        return Ok(());
    };
    c.exec("UPDATE proposals SET status = 'pending', approval_id = NULL WHERE id = ?", &[&id])?;
    trail(c, &id, actor, "returned", Some(reason), None)
}

/// A writeback as sent, checked: its `run_id` and `source` as labels, 1 to [`MAX_CLAIMS`]
/// claims, each a lowercase object type and a JSON object of at most [`MAX_CLAIM_BYTES`].
pub(crate) fn check_writeback(input: &WritebackInput) -> Result<(String, String)> {
    let run_id = label(&input.run_id, "run_id")?;
    let source = label(&input.source, "source")?;
    if input.claims.is_empty() || input.claims.len() > MAX_CLAIMS {
        return Err(Error::invalid(
            "invalid_writeback",
            format!("a writeback carries 1 to {MAX_CLAIMS} claims"),
        ));
    }
    for (i, c) in input.claims.iter().enumerate() {
        let t = &c.object_type;
        if t.is_empty() || t.len() > 40 || !t.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            return Err(Error::invalid(
                "invalid_writeback",
                format!(
                    "claims[{i}].object_type must be a lowercase word such as fact, entity, preference or skill"
                ),
            ));
        }
        if !c.content.is_object() || c.content.to_string().len() > MAX_CLAIM_BYTES {
            return Err(Error::invalid(
                "invalid_writeback",
                format!("claims[{i}].content must be a JSON object of at most {MAX_CLAIM_BYTES} bytes"),
            ));
        }
    }
    Ok((run_id, source))
}

/// Records a writeback and its claims as pending proposals, each with its `proposed` step.
/// Returns the proposals' ids.
pub(crate) fn record_writeback(
    c: &dyn Tx,
    s: &Subject,
    id: &str,
    input: &WritebackInput,
    run_id: &str,
    source: &str,
) -> Result<Vec<String>> {
    let now = Utc::now();
    let envelope = serde_json::to_value(input).expect("input serializes");
    c.exec(
        "INSERT INTO writebacks (id, tenant_id, profile_id, run_id, source, envelope, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[&id, &s.tenant.as_str(), &s.profile.as_str(), &run_id, &source, &envelope.to_string(), &stored::ts(now)],
    )?;
    let mut ids = Vec::new();
    for claim in &input.claims {
        let pid = format!("prp_{}", uuid::Uuid::now_v7().simple());
        c.exec(
            "INSERT INTO proposals (id, tenant_id, writeback_id, run_id, object_type, content, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
            &[&pid, &s.tenant.as_str(), &id, &run_id, &claim.object_type, &claim.content.to_string(), &stored::ts(now)],
        )?;
        trail(c, &pid, s.profile.as_str(), "proposed", None, None)?;
        ids.push(pid);
    }
    Ok(ids)
}

/// Rejects a pending or parked proposal, with the decider's step; a proposal decided
/// meanwhile is a conflict.
pub(crate) fn mark_rejected(
    c: &dyn Tx,
    pid: &str,
    actor: &str,
    because: &str,
    credential: Option<&str>,
) -> Result<()> {
    let changed = c.exec(
        "UPDATE proposals SET status = 'rejected' WHERE id = ? AND status IN ('pending', 'parked')",
        &[&pid],
    )?;
    if changed == 0 {
        return Err(Error::Conflict {
            code: "proposal_already_decided",
            message: "this proposal was decided meanwhile".into(),
        });
    }
    trail(c, pid, actor, "rejected", Some(because), credential)
}

/// Parks a pending proposal on the approval that waits for a human to decide an agent's
/// accept, with the agent's step.
pub(crate) fn mark_parked(c: &dyn Tx, pid: &str, approval: &str, actor: &str, because: &str) -> Result<()> {
    c.exec(
        "UPDATE proposals SET status = 'parked', approval_id = ? WHERE id = ? AND status = 'pending'",
        &[&approval, &pid],
    )?;
    trail(c, pid, actor, "parked", Some(because), None)
}

/// Turns a pending or parked proposal into a belief, once, and returns the belief's id; a
/// proposal already decided is a conflict. Locked on PostgreSQL, so a reject at the same
/// moment waits and then finds it decided.
pub(crate) fn accept(c: &dyn Tx, tenant: &TenantId, pid: &str) -> Result<String> {
    let sql = format!(
        "SELECT object_type, content FROM proposals WHERE id = ? AND tenant_id = ? AND status IN ('pending', 'parked'){}",
        for_update(c)
    );
    let row = match c.row(&sql, &[&pid, &tenant.as_str()])? {
        Some(r) => Some((r.get::<String>(0)?, r.get::<String>(1)?)),
        None => None,
    };
    let Some((object_type, content)) = row else {
        return Err(Error::Conflict {
            code: "proposal_already_decided",
            message: "this proposal was already decided".into(),
        });
    };
    let belief = format!("blf_{}", uuid::Uuid::now_v7().simple());
    c.exec(
        "INSERT INTO beliefs (id, tenant_id, proposal_id, object_type, content, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        &[&belief, &tenant.as_str(), &pid, &object_type, &content, &stored::ts(Utc::now())],
    )?;
    c.exec("UPDATE proposals SET status = 'accepted' WHERE id = ?", &[&pid])?;
    Ok(belief)
}

/// Appends a step to a proposal's trail (for an accept, once its approval is settled).
pub(crate) fn step(
    c: &dyn Tx,
    pid: &str,
    actor: &str,
    step: &str,
    because: &str,
    credential: Option<&str>,
) -> Result<()> {
    trail(c, pid, actor, step, Some(because), credential)
}

const COLUMNS: &str = "id, writeback_id, run_id, object_type, content, status, approval_id, created_at";

/// A row of [`COLUMNS`], without its trail.
impl FromRow for Proposal {
    fn from_row(r: &Row) -> ::store::Result<Proposal> {
        let (content, status): (String, String) = (r.get(4)?, r.get(5)?);
        Ok(Proposal {
            id: r.get(0)?,
            writeback_id: r.get(1)?,
            run_id: r.get(2)?,
            object_type: r.get(3)?,
            content: stored::json("proposal's content", &content)?,
            status: stored::named("proposal status", &status, ProposalStatus::parse)?,
            approval_id: r.get(6)?,
            created_at: r.get(7)?,
            trail: Vec::new(),
        })
    }
}

const WRITEBACK_COLUMNS: &str = "id, profile_id, run_id, source, envelope, received_at";

/// A row of [`WRITEBACK_COLUMNS`], without its proposals.
impl FromRow for Writeback {
    fn from_row(r: &Row) -> ::store::Result<Writeback> {
        let envelope: String = r.get(4)?;
        Ok(Writeback {
            id: r.get(0)?,
            profile_id: r.get(1)?,
            run_id: r.get(2)?,
            source: r.get(3)?,
            envelope: stored::json("writeback's envelope", &envelope)?,
            received_at: r.get(5)?,
            proposals: Vec::new(),
        })
    }
}

/// The tenant's proposals, newest first, without their trails.
pub(crate) async fn proposals(store: &Store, tenant: &TenantId, q: &ProposalQuery) -> Result<Vec<Proposal>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM proposals WHERE tenant_id = ?1 AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR object_type = ?3) \
         AND (?4 IS NULL OR run_id = ?4) ORDER BY created_at DESC, id DESC LIMIT ?5"
    );
    let (status, limit) = (q.status.map(ProposalStatus::as_str), q.limit.unwrap_or(100).clamp(1, 500));
    Ok(store.all(&sql, &[tenant, &status, &q.object_type, &q.run_id, &limit]).await?)
}

/// One proposal with its decision trail.
pub(crate) async fn proposal(store: &Store, tenant: &TenantId, id: &str) -> Result<Option<Proposal>> {
    let sql = format!("SELECT {COLUMNS} FROM proposals WHERE tenant_id = ? AND id = ?");
    let Some(mut p) = store.opt::<Proposal>(&sql, &[tenant, &id]).await? else { return Ok(None) };
    let sql =
        "SELECT at, actor, step, because, credential FROM proposal_trail WHERE proposal_id = ? ORDER BY seq";
    let steps: Vec<TrailRow> = store.all(sql, &[&id]).await?;
    p.trail = steps
        .into_iter()
        .map(|(at, actor, step, note, credential)| TrailStep { at, actor, step, note, credential })
        .collect();
    Ok(Some(p))
}

/// The tenant's writebacks, newest first, without their proposals.
pub(crate) async fn writebacks(store: &Store, tenant: &TenantId, limit: i64) -> Result<Vec<Writeback>> {
    let sql = format!(
        "SELECT {WRITEBACK_COLUMNS} FROM writebacks WHERE tenant_id = ? ORDER BY received_at DESC, id DESC LIMIT ?"
    );
    Ok(store.all(&sql, &[tenant, &limit]).await?)
}

/// One writeback with every proposal it carried.
pub(crate) async fn writeback(store: &Store, tenant: &TenantId, id: &str) -> Result<Option<Writeback>> {
    let sql = format!("SELECT {WRITEBACK_COLUMNS} FROM writebacks WHERE tenant_id = ? AND id = ?");
    let Some(mut w) = store.opt::<Writeback>(&sql, &[tenant, &id]).await? else { return Ok(None) };
    let sql = format!("SELECT {COLUMNS} FROM proposals WHERE writeback_id = ? ORDER BY id");
    w.proposals = store.all(&sql, &[&id]).await?;
    Ok(Some(w))
}

/// The longest text a beliefs search may carry.
pub const MAX_BELIEF_SEARCH: usize = 200;

/// Which beliefs to list: one object type, a text the content contains (any case), at most
/// `limit` (1 to 500, default 100).
#[derive(Clone, Debug, Default)]
pub struct BeliefQuery {
    pub object_type: Option<String>,
    pub search: Option<String>,
    pub limit: Option<i64>,
}

/// A claim a reviewer accepted into the company's beliefs, and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Belief {
    pub id: String,
    pub object_type: String,
    pub content: Value,
    /// When it was accepted.
    pub since: DateTime<Utc>,
    /// Who accepted it (a console user's name), and why.
    pub accepted_by: Option<String>,
    pub because: Option<String>,
    pub proposal_id: String,
    pub writeback_id: String,
    pub run_id: String,
    /// The agent whose writeback proposed it.
    pub profile_id: ProfileId,
}

/// A row of the beliefs read in [`beliefs`].
impl FromRow for Belief {
    fn from_row(r: &Row) -> ::store::Result<Belief> {
        let content: String = r.get(2)?;
        Ok(Belief {
            id: r.get(0)?,
            object_type: r.get(1)?,
            content: stored::json("belief's content", &content)?,
            since: r.get(3)?,
            proposal_id: r.get(4)?,
            writeback_id: r.get(5)?,
            run_id: r.get(6)?,
            profile_id: r.get(7)?,
            accepted_by: r.get(8)?,
            because: r.get(9)?,
        })
    }
}

/// The tenant's canonized beliefs, newest first, each with who accepted it and why; `search`
/// is a text the content contains (any case).
pub(crate) async fn beliefs(store: &Store, tenant: &TenantId, q: &BeliefQuery) -> Result<Vec<Belief>> {
    // A LIKE pattern both engines read alike: the text's own `%`, `_` and `\` escaped.
    let pattern = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|s| {
        let escaped = s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        format!("%{escaped}%")
    });
    let limit = q.limit.unwrap_or(100).clamp(1, 500);
    Ok(store
        .all(
            "SELECT b.id, b.object_type, b.content, b.created_at, b.proposal_id, p.writeback_id, p.run_id, \
             w.profile_id, t.actor, t.because FROM beliefs b JOIN proposals p ON p.id = b.proposal_id \
             JOIN writebacks w ON w.id = p.writeback_id \
             LEFT JOIN proposal_trail t ON t.proposal_id = b.proposal_id AND t.step = 'accepted' \
             WHERE b.tenant_id = ?1 AND (?2 IS NULL OR b.object_type = ?2) \
             AND (?3 IS NULL OR lower(b.content) LIKE lower(?3) ESCAPE '\\') \
             ORDER BY b.created_at DESC, b.id DESC LIMIT ?4",
            &[tenant, &q.object_type, &pattern, &limit],
        )
        .await?)
}

/// How many of the tenant's proposals wait for a reviewer: (pending, parked on an agent's
/// accept).
pub(crate) async fn waiting(store: &Store, tenant: &TenantId) -> Result<(u64, u64)> {
    let (pending, parked): (i64, i64) = store
        .one(
            "SELECT CAST(COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN status = 'parked' THEN 1 ELSE 0 END), 0) AS BIGINT) FROM proposals \
             WHERE tenant_id = ? AND status IN ('pending', 'parked')",
            &[tenant],
        )
        .await?;
    Ok((pending as u64, parked as u64))
}
