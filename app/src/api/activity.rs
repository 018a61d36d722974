//! Server functions behind the activity feed: the tenant's log with agent names in place of
//! profile ids, filtered and paged, with the audit chain verified since the last look. The
//! live stream renders its rows with the same [`activity_row`].

use leptos::prelude::*;
use policy::Money;
use policy::activity::{Kind, Transport, Verdict};
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;

/// One line of the activity log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub seq: i64,
    pub at: String,
    /// Who, by name where one is known.
    pub actor: String,
    /// The profile id behind `actor` when it is an agent, shown on hover.
    pub actor_id: Option<String>,
    pub agent: Option<String>,
    /// The agent's profile id, shown on hover.
    pub agent_id: Option<String>,
    pub kind: Kind,
    pub action: Option<String>,
    pub verdict: Option<Verdict>,
    pub amount: Option<Money>,
    pub kit_version: Option<u32>,
    /// None for the gateway's own work.
    pub transport: Option<Transport>,
    /// What carried out an action: `sandbox` (nothing real happened) or `http`.
    pub connector: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityView {
    pub rows: Vec<ActivityRow>,
    /// The cursor of older entries, when there are more.
    pub older: Option<i64>,
    /// The tenant's agent names, for the filter.
    pub agents: Vec<String>,
    pub chain_ok: bool,
    pub chain_entries: u64,
    /// How many entries this look verified: those appended since the last one.
    pub chain_checked: u64,
    pub first_broken: Option<i64>,
}

#[server]
pub async fn activity_feed(
    agent: String,
    kind: String,
    verdict: String,
    transport: String,
    before: Option<i64>,
) -> Result<ActivityView, ServerFnError> {
    use crate::api::to_fn_error;
    const PAGE: i64 = 200;
    let (gw, tenant, _) = require_view("activity").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let profile = match agent.trim() {
        "" => None,
        name => Some(
            profiles
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.id.clone())
                .ok_or_else(|| ServerFnError::new(format!("not_found: no agent named {name}")))?,
        ),
    };
    let q = gateway::audit::activity::LogQuery { profile, before, limit: Some(PAGE), ..Default::default() };
    let entries = gw.log(&tenant.id, &q).await.map_err(to_fn_error)?;
    let older = (entries.len() as i64 == PAGE).then(|| entries.last().map(|e| e.seq)).flatten();
    let kind = filter("kind", &kind, Kind::parse)?;
    let verdict = filter("verdict", &verdict, Verdict::parse)?;
    let transport = filter("transport", &transport, Transport::parse)?;
    let chain = gw.verify_log_since_last(&tenant.id).await.map_err(to_fn_error)?;
    Ok(ActivityView {
        older,
        agents: profiles.iter().map(|p| p.name.clone()).collect(),
        rows: entries
            .into_iter()
            .filter(|e| kind.is_none_or(|k| e.kind == k))
            .filter(|e| verdict.is_none_or(|v| e.verdict == Some(v)))
            .filter(|e| transport.is_none_or(|t| e.transport == Some(t)))
            .map(|e| activity_row(e, &profiles))
            .collect(),
        chain_ok: chain.ok,
        chain_entries: chain.entries,
        chain_checked: chain.checked,
        first_broken: chain.first_broken,
    })
}

/// A filter from the page's query: none when empty, `bad_filter` when it names no value.
#[cfg(feature = "ssr")]
fn filter<T>(name: &str, value: &str, parse: fn(&str) -> Option<T>) -> Result<Option<T>, ServerFnError> {
    match value.trim() {
        "" => Ok(None),
        v => parse(v).map(Some).ok_or_else(|| {
            ServerFnError::new(format!("bad_filter: no {name} is called `{v}`; choose one from the list"))
        }),
    }
}

/// One log entry as the console shows it, with agent names in place of profile ids. The
/// activity page and the live stream (`/console/events`) both use it.
#[cfg(feature = "ssr")]
pub fn activity_row(e: gateway::audit::activity::Entry, profiles: &[gateway::Profile]) -> ActivityRow {
    let (actor, actor_id) = crate::api::named(profiles, e.actor.to_string());
    let agent = e.profile_id.as_ref().and_then(|id| profiles.iter().find(|p| &p.id == id));
    ActivityRow {
        agent: agent.map(|p| p.name.clone()),
        agent_id: e.profile_id.as_ref().map(|id| id.to_string()),
        actor_id,
        actor,
        seq: e.seq,
        at: e.at.to_rfc3339(),
        connector: e.detail.get("connector").and_then(|c| c.as_str()).map(str::to_string),
        kind: e.kind,
        action: e.action,
        verdict: e.verdict,
        amount: e.amount,
        kit_version: e.kit_version,
        transport: e.transport,
    }
}
