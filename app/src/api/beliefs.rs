//! The company's beliefs (`/beliefs`): claims a reviewer accepted, as the page shows them, with
//! the agent that proposed each and the proposal, writeback and run it came from.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;

/// One belief, ready to show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BeliefRow {
    pub id: String,
    /// The claim in one line.
    pub claim: String,
    pub object_type: String,
    pub since: String,
    pub accepted_by: String,
    pub because: Option<String>,
    /// The agent whose writeback proposed it, by name.
    pub agent: String,
    pub proposal_id: String,
    pub writeback_id: String,
    pub run_id: String,
}

/// The beliefs that match the filters (empty means any), newest first, at most 200.
#[server]
pub async fn beliefs_view(object_type: String, q: String) -> Result<Vec<BeliefRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("beliefs").await?;
    let opt = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let query = gateway::domain::brain::BeliefQuery {
        object_type: opt(object_type),
        search: opt(q),
        limit: Some(200),
    };
    let beliefs = gw.beliefs(&tenant.id, &query).await.map_err(to_fn_error)?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let agent_of = |id: &gateway::ProfileId| {
        profiles.iter().find(|p| &p.id == id).map_or_else(|| id.to_string(), |p| p.name.clone())
    };
    Ok(beliefs
        .into_iter()
        .map(|b| BeliefRow {
            claim: crate::api::proposals::claim_text(&b.content),
            agent: agent_of(&b.profile_id),
            since: b.since.to_rfc3339(),
            accepted_by: b.accepted_by.unwrap_or_else(|| "a reviewer".into()),
            because: b.because,
            id: b.id,
            object_type: b.object_type,
            proposal_id: b.proposal_id,
            writeback_id: b.writeback_id,
            run_id: b.run_id,
        })
        .collect())
}
