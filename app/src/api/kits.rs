//! Server functions behind the AccountKit editor: the kit with its history and what the
//! simulator needs, and saving a draft (admins only) as the next version.
//!
//! Guarantees: a save names the version it was edited from, and the gateway refuses it with
//! `kit_version_conflict` if someone saved in between, so no edit silently overwrites another.
//! The kit is validated again on the server whatever the browser said.

use leptos::prelude::*;
use policy::{Kit, KitDiff, Money};
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;
use crate::components::kit_editor::SimProfile;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitVersionRow {
    pub kit: Kit,
    pub author: String,
    pub diff: KitDiff,
    pub created_at: String,
}

#[cfg(feature = "ssr")]
impl From<gateway::KitRecord> for KitVersionRow {
    fn from(r: gateway::KitRecord) -> Self {
        KitVersionRow { kit: r.kit, author: r.author, diff: r.diff, created_at: r.created_at.to_rfc3339() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitSummary {
    pub current: KitVersionRow,
    pub history: Vec<KitVersionRow>,
    pub profiles: usize,
}

#[server]
pub async fn list_kits() -> Result<Vec<KitSummary>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("kits").await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let mut out = Vec::new();
    for current in gw.kits(&tenant.id).await.map_err(to_fn_error)? {
        let history = gw.kit_versions(&tenant.id, &current.kit.name).await.map_err(to_fn_error)?;
        out.push(KitSummary {
            profiles: profiles.iter().filter(|p| p.kit_name == current.kit.name).count(),
            current: current.into(),
            history: history.into_iter().map(Into::into).collect(),
        });
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitEditorData {
    pub current: KitVersionRow,
    /// Newest first.
    pub history: Vec<KitVersionRow>,
    /// The profiles on this kit, with their spend, for the simulator.
    pub profiles: Vec<SimProfile>,
    pub credit: Money,
    pub can_edit: bool,
}

#[server]
pub async fn kit_editor(name: String) -> Result<KitEditorData, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("kits").await?;
    // The history holds the current version too: the newest is it.
    let mut history: Vec<KitVersionRow> =
        gw.kit_versions(&tenant.id, &name).await.map_err(to_fn_error)?.into_iter().map(Into::into).collect();
    history.sort_by_key(|r| std::cmp::Reverse(r.kit.version));
    let current = history
        .first()
        .cloned()
        .ok_or_else(|| ServerFnError::new(format!("not_found: no kit named \"{name}\"")))?;
    let mut profiles = Vec::new();
    for p in gw.profiles(&tenant.id).await.map_err(to_fn_error)? {
        if p.kit_name != name || p.status != policy::SubjectStatus::Active {
            continue;
        }
        let totals = gw.budget(&tenant.id, &p.id).await.map_err(to_fn_error)?.totals;
        profiles.push(SimProfile {
            id: p.id.as_str().to_string(),
            name: p.name,
            posted: totals.posted,
            pending: totals.pending,
        });
    }
    Ok(KitEditorData {
        current,
        history,
        profiles,
        credit: tenant.credit,
        can_edit: user.has(gateway::Role::Admin),
    })
}

/// The simulator's verdict for a kit with period or rate limits: `kit_json` (a draft or the
/// saved version) decided for `profile` (an id, or empty for a new agent) at `at`, a
/// wall-clock moment in the tenant's zone (`2026-12-31T23:50`; empty for now), on the period
/// and rate views the gateway computes, by the same [`simulate`] the browser runs for other
/// kits. Reads only.
#[server(prefix = "/api", endpoint = "simulate_at")]
pub async fn simulate_at(
    kit_json: String,
    profile: String,
    at: String,
    tool: String,
    amount: String,
    merchant: String,
    recipient: String,
) -> Result<crate::components::kit_editor::SimOutcome, ServerFnError> {
    use crate::api::to_fn_error;
    use crate::components::kit_editor::{SimAction, simulate};
    let (gw, tenant, _) = require_view("kits").await?;
    let kit = Kit::from_json(&kit_json).map_err(|e| ServerFnError::new(format!("invalid_kit: {e}")))?;
    let at = if at.trim().is_empty() {
        gw.now()
    } else {
        gw.tenant_moment(&tenant.id, &at).await.map_err(to_fn_error)?
    };
    let amount = if amount.trim().is_empty() { Ok(Money::ZERO) } else { Money::parse(amount.trim()) }
        .map_err(|e| ServerFnError::new(format!("invalid_amount: the amount is not an amount: {e}")))?;
    let mut me =
        SimProfile { id: profile.clone(), name: String::new(), posted: Money::ZERO, pending: Money::ZERO };
    let id = if profile.is_empty() {
        None
    } else {
        let id = gateway::ProfileId::parse(&profile)
            .ok_or_else(|| ServerFnError::new("not_found: no such agent profile"))?;
        let totals = gw.budget(&tenant.id, &id).await.map_err(to_fn_error)?.totals;
        (me.posted, me.pending) = (totals.posted, totals.pending);
        Some(id)
    };
    let (periods, rates) =
        gw.limit_views(&tenant.id, id.as_ref(), &kit, &tool, at).await.map_err(to_fn_error)?;
    let opt = |s: String| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let action = SimAction { tool, amount, merchant: opt(merchant), recipient: opt(recipient) };
    simulate(&kit, &me, tenant.credit, &action, (&periods, &rates)).map_err(ServerFnError::new)
}

/// Saves `kit_json` as the version after `expected_version` (admins only; the gateway
/// validates it again and refuses a stale version with `kit_version_conflict`): back to the
/// editor with `?saved=vN`, or with `?error=` saying why not. A browser without JavaScript
/// follows the redirect; the editor's island posts the same form and reads the page it lands on.
/// Unless `confirm_refusals` is given, a draft that would have refused calls that ran in the
/// last week is not saved: the answer says how many and how much, and how to save anyway.
#[server(prefix = "/api", endpoint = "save_kit")]
pub async fn save_kit(
    name: String,
    expected_version: u32,
    kit_json: String,
    confirm_refusals: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{
        forms::form,
        session::{encode_query_value, require_roles},
    };
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "editing kits").await?;
        let mut kit = parse_kit(&kit_json)?;
        kit.name = name.clone();
        if confirm_refusals.is_none() {
            would_refuse(&gw, &tenant.id, &kit).await?;
        }
        let record = gw
            .save_kit(&tenant.id, kit, Some(policy::KitVersion(expected_version)), &user.username)
            .await
            .map_err(to_fn_error)?;
        let done = saved_in_words(&record);
        leptos_axum::redirect(&format!(
            "/kits/{}?saved={}&done={}",
            encode_query_value(&name),
            record.kit.version,
            encode_query_value(&done)
        ));
        Ok(())
    })
    .await
}

/// A kit from the editor's JSON, with each error's path.
#[cfg(feature = "ssr")]
pub(crate) fn parse_kit(json: &str) -> Result<Kit, ServerFnError> {
    Kit::from_json(json).map_err(|e| {
        let all: Vec<String> = e.0.iter().map(ToString::to_string).collect();
        ServerFnError::new(format!("invalid_kit: {}", all.join("; ")))
    })
}

/// Refuses to save `kit` when, against the last week, it would have refused calls that ran.
#[cfg(feature = "ssr")]
async fn would_refuse(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
    kit: &Kit,
) -> Result<(), ServerFnError> {
    let days = crate::api::replay::EDITOR_DAYS;
    let req = gateway::ops::replay::ReplayRequest::recent(Some(kit.clone()), days, 1);
    let r = gw.replay(tenant, &kit.name, req).await.map_err(crate::api::to_fn_error)?;
    let Some(t) = r.summary.transitions.iter().find(|t| t.from == "allow" && t.to == "deny") else {
        return Ok(());
    };
    Err(ServerFnError::new(format!(
        "would_refuse: against the last {days} days this draft would have refused {} call{} that ran ({} of spend). Nothing was saved: tick \"Save even if…\" and save again to confirm.",
        t.calls,
        if t.calls == 1 { "" } else { "s" },
        t.amount
    )))
}

/// A saved version in words: its number, what it changed (the first few changes of its
/// `KitDiff`), and when agents get it.
#[cfg(feature = "ssr")]
fn saved_in_words(record: &gateway::KitRecord) -> String {
    const SHOWN: usize = 3;
    let changes: Vec<&str> = record.diff.changes.iter().map(|c| c.text.as_str()).collect();
    let mut what = changes.iter().take(SHOWN).copied().collect::<Vec<_>>().join("; ");
    if changes.len() > SHOWN {
        what.push_str(&format!("; and {} more", changes.len() - SHOWN));
    }
    let what = if what.is_empty() { String::new() } else { format!(": {what}") };
    format!(
        "Saved {} as {}{what}. Agents on it get it on their next call.",
        record.kit.name, record.kit.version
    )
}
