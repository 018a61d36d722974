//! Server functions behind the proposal queue: proposed beliefs with their trails, one
//! proposal with its writeback envelope, and the accept and reject form post.
//!
//! Guarantees: deciding is a reviewer's or an admin's, with a required `because`; an accepted
//! claim becomes a belief listed under Beliefs, and the page says so.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::{
    forms::{back_with_notice, form},
    session::require_view,
};

/// One step of a decision trail: who, when, what, because.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrailRow {
    pub at: String,
    /// Who, by name where one is known.
    pub actor: String,
    /// The id behind that name, shown on hover.
    pub actor_id: Option<String>,
    pub step: String,
    pub note: Option<String>,
}

/// A proposed belief in the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalRow {
    pub id: String,
    /// The proposing agent's name.
    pub agent: String,
    /// Its profile id, shown on hover.
    pub agent_id: String,
    pub object_type: String,
    pub run_id: String,
    pub claim: String,
    pub status: String,
    pub created_at: String,
    pub trail: Vec<TrailRow>,
}

/// The queue with its filters, and what would fill it when it is empty.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalQueue {
    pub rows: Vec<ProposalRow>,
    pub brain_kits: usize,
    pub kits: usize,
}

/// One proposal in full: the claim, its writeback envelope and the trail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposalFull {
    pub row: ProposalRow,
    /// The claim's content, pretty-printed JSON.
    pub content: String,
    /// The writeback envelope it came in, pretty-printed JSON.
    pub envelope: String,
    pub why_not: Option<String>,
}

/// A claim's content in one line: its `claim` or `text` field when it has one.
#[cfg(feature = "ssr")]
pub(crate) fn claim_text(content: &serde_json::Value) -> String {
    ["claim", "text", "statement"]
        .iter()
        .find_map(|k| content.get(*k).and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_else(|| content.to_string())
}

/// A proposal as the queue shows it, with agents named where the trail records their
/// profile ids (the proposer, and an agent whose accept parked it).
#[cfg(feature = "ssr")]
fn proposal_row(
    p: gateway::domain::brain::Proposal,
    agent_id: &str,
    profiles: &[gateway::Profile],
) -> ProposalRow {
    let agent = profiles.iter().find(|p| p.id.as_str() == agent_id);
    ProposalRow {
        claim: claim_text(&p.content),
        agent: agent.map_or_else(|| "unknown".into(), |p| p.name.clone()),
        agent_id: agent_id.to_string(),
        status: p.status.as_str().to_string(),
        created_at: p.created_at.to_rfc3339(),
        trail: p
            .trail
            .into_iter()
            .map(|t| {
                let (actor, actor_id) = crate::api::named(profiles, t.actor);
                TrailRow { at: t.at.to_rfc3339(), actor, actor_id, step: t.step, note: t.note }
            })
            .collect(),
        id: p.id,
        object_type: p.object_type,
        run_id: p.run_id,
    }
}

/// The proposal queue, filtered by status, object type and run (empty means any).
#[server]
pub async fn proposals_view(
    status: String,
    object_type: String,
    run_id: String,
) -> Result<ProposalQueue, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("proposals").await?;
    let opt = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let status = match opt(status) {
        None => None,
        Some(s) => Some(gateway::domain::brain::ProposalStatus::parse(&s).ok_or_else(|| {
            ServerFnError::new("invalid_filter: status is pending, parked, accepted or rejected")
        })?),
    };
    let q = gateway::domain::brain::ProposalQuery {
        status,
        object_type: opt(object_type),
        run_id: opt(run_id),
        limit: Some(200),
    };
    let writebacks = gw.writebacks(&tenant.id, None).await.map_err(to_fn_error)?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let agent_of = |writeback: &str| {
        writebacks.iter().find(|w| w.id == writeback).map_or(String::new(), |w| w.profile_id.to_string())
    };
    let rows = gw
        .proposals(&tenant.id, &q)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|p| {
            let agent = agent_of(&p.writeback_id);
            proposal_row(p, &agent, &profiles)
        })
        .collect();
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    Ok(ProposalQueue {
        rows,
        kits: kits.len(),
        brain_kits: kits.iter().filter(|k| k.kit.primitives.contains(policy::Primitive::Brain)).count(),
    })
}

#[server]
pub async fn proposal_detail(id: String) -> Result<ProposalFull, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("proposals").await?;
    let p = gw.proposal(&tenant.id, &id).await.map_err(to_fn_error)?;
    let wb = gw.writeback(&tenant.id, &p.writeback_id).await.map_err(to_fn_error)?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    let human = gateway::domain::principal::Human::in_console(&user);
    let why_not = if !matches!(
        p.status,
        gateway::domain::brain::ProposalStatus::Pending | gateway::domain::brain::ProposalStatus::Parked
    ) {
        Some(format!("Already {}.", p.status.as_str()))
    } else {
        crate::api::inbox::why_not(gw.may_review(&p.id, &human).await, "reviewer")?
    };
    let content = pretty(&p.content);
    let row = proposal_row(p, wb.profile_id.as_str(), &profiles);
    Ok(ProposalFull { content, envelope: pretty(&wb.envelope), row, why_not })
}

/// Accepts or rejects a proposal, with the required `because`. A plain form post.
#[server(prefix = "/api", endpoint = "decide_proposal")]
pub async fn decide_proposal_form(
    id: String,
    decision: String,
    because: String,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    form(async {
        let (gw, tenant, user) = require_view("proposals").await?;
        let decision = match decision.as_str() {
            "accept" => gateway::domain::brain::Decision::Accept,
            "reject" => gateway::domain::brain::Decision::Reject,
            _ => return Err(ServerFnError::new("invalid_decision: the decision is accept or reject")),
        };
        let by = gateway::domain::brain::Decider::Human(gateway::domain::principal::Human::in_console(&user));
        let r = gw.decide_proposal(&tenant.id, &id, &by, decision, &because).await.map_err(to_fn_error)?;
        let done = match r.belief_id() {
            Some(belief) => format!("Accepted: the claim is now belief {belief}, listed under Beliefs."),
            None => "Rejected: the claim stays out of the company's beliefs.".to_string(),
        };
        back_with_notice(&done).await;
        Ok(())
    })
    .await
}
