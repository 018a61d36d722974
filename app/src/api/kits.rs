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

/// What the editor shows beside the form for the fields as typed: the diff and the simulated
/// verdicts as markup ([`crate::components::kit_editor::PreviewPanel`]), the draft's JSON
/// (empty while it has problems) and whether it differs from the saved version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Previewed {
    pub html: String,
    pub kit_json: String,
    pub changed: bool,
}

/// The editor's preview of kit `name`'s draft, `fields` (the form's fields, URL-encoded as it
/// posts them), edited from `expected_version`: its diff against that version, and the
/// simulator's verdicts (`sim`, the simulator's fields) for the draft and that version,
/// decided by the engine on the period and rate views the gateway would use. Reads only.
#[server(prefix = "/api", endpoint = "kit_preview")]
pub async fn kit_preview(
    name: String,
    expected_version: u32,
    fields: String,
    sim: String,
) -> Result<Previewed, ServerFnError> {
    use crate::api::to_fn_error;
    use crate::components::kit_editor::{Preview, PreviewPanel};
    let (gw, tenant, _) = require_view("kits").await?;
    let saved = gw
        .kit_versions(&tenant.id, &name)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .find(|r| r.kit.version.0 == expected_version)
        .ok_or_else(|| {
            ServerFnError::new(format!("not_found: kit \"{name}\" has no version {expected_version}"))
        })?
        .kit;
    let draft = kit_from_fields(&name, expected_version, &fields);
    let sim = sim_request(&gw, &tenant, &sim).await;
    let mut preview = Preview::waiting();
    let decide = async |kit: &Kit| match &sim {
        Ok(s) => simulate_for(&gw, &tenant, kit, s).await,
        Err(e) => Err(e.clone()),
    };
    preview.saved = Some((saved.version.0, decide(&saved).await));
    let (kit_json, changed) = match &draft {
        Ok(d) => {
            let diff = KitDiff::between(&saved, d);
            let changed = !diff.is_empty();
            preview.diff = Some(diff);
            preview.draft = Some(decide(d).await);
            (d.to_json_pretty(), changed)
        }
        Err(_) => {
            preview.draft = Some(Err("fix the draft's problems first".to_string()));
            (String::new(), false)
        }
    };
    let html = leptos::tachys::view::RenderHtml::to_html(view! { <PreviewPanel preview=preview /> });
    Ok(Previewed { html, kit_json, changed })
}

/// The kit the editor's fields (URL-encoded, as the form posts them) describe, as version
/// `version` of kit `name`: the same [`crate::components::kit_editor::KitText::from_fields`]
/// the browser checks them with; `invalid_kit` with each problem's path.
#[cfg(feature = "ssr")]
pub(crate) fn kit_from_fields(name: &str, version: u32, fields: &str) -> Result<Kit, ServerFnError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(fields.as_bytes()).into_owned().collect();
    let text = crate::components::kit_editor::KitText::from_fields(
        pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    );
    text.to_kit(name, policy::KitVersion(version)).map_err(|errs| {
        let all: Vec<String> = errs.iter().map(|e| format!("{}: {}", e.path, e.message)).collect();
        ServerFnError::new(format!("invalid_kit: {}", all.join("; ")))
    })
}

/// The simulator's question, from its fields: who acts (a profile by name, or a new agent),
/// what they do and at what moment.
#[cfg(feature = "ssr")]
struct SimRequest {
    profile: SimProfile,
    action: crate::components::kit_editor::SimAction,
    at: chrono::DateTime<chrono::Utc>,
}

#[cfg(feature = "ssr")]
async fn sim_request(
    gw: &gateway::Gateway,
    tenant: &gateway::Tenant,
    sim: &str,
) -> Result<SimRequest, String> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(sim.as_bytes()).into_owned().collect();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v.trim());
    let amount = if get("sim_amount").is_empty() { Ok(Money::ZERO) } else { Money::parse(get("sim_amount")) }
        .map_err(|e| format!("the amount is not an amount: {e}"))?;
    let at = match get("sim_at") {
        "" => gw.now(),
        at => gw.tenant_moment(&tenant.id, at).await.map_err(|e| e.to_string())?,
    };
    let mut profile = SimProfile {
        id: String::new(),
        name: "a new agent".into(),
        posted: Money::ZERO,
        pending: Money::ZERO,
    };
    let named = get("sim_profile");
    let known = gw.profiles(&tenant.id).await.map_err(|e| e.to_string())?;
    if let Some(p) = known.into_iter().find(|p| !named.is_empty() && p.name == named) {
        let totals = gw.budget(&tenant.id, &p.id).await.map_err(|e| e.to_string())?.totals;
        profile =
            SimProfile { id: p.id.to_string(), name: p.name, posted: totals.posted, pending: totals.pending };
    }
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let action = crate::components::kit_editor::SimAction {
        tool: get("sim_tool").to_string(),
        amount,
        merchant: opt(get("sim_merchant")),
        recipient: opt(get("sim_recipient")),
    };
    Ok(SimRequest { profile, action, at })
}

/// The simulator's verdict for `kit`: the engine's decision on the period and rate views the
/// gateway computes at the request's moment, with the envelope the agent would receive.
#[cfg(feature = "ssr")]
async fn simulate_for(
    gw: &gateway::Gateway,
    tenant: &gateway::Tenant,
    kit: &Kit,
    s: &SimRequest,
) -> Result<crate::components::kit_editor::SimOutcome, String> {
    let id = gateway::ProfileId::parse(&s.profile.id);
    let (periods, rates) = gw
        .limit_views(&tenant.id, id.as_ref(), kit, &s.action.tool, s.at)
        .await
        .map_err(|e| e.to_string())?;
    crate::components::kit_editor::simulate(kit, &s.profile, tenant.credit, &s.action, (&periods, &rates))
}

/// Saves the draft (the editor's `fields` as the island posts them, or else `kit_json` as a
/// browser without JavaScript posts it) as the version after `expected_version` (admins only; the gateway
/// validates it again and refuses a stale version with `kit_version_conflict`): back to the
/// editor with `?saved=vN`, or with `?error=` saying why not. A browser without JavaScript
/// follows the redirect; the editor's island posts the same form and reads the page it lands on.
/// Unless `confirm_refusals` is given, a draft that would have refused calls that ran in the
/// last week is not saved: the answer says how many and how much, and how to save anyway.
#[server(prefix = "/api", endpoint = "save_kit")]
pub async fn save_kit(
    name: String,
    expected_version: u32,
    kit_json: Option<String>,
    fields: Option<String>,
    confirm_refusals: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::api::to_fn_error;
    use crate::api::{
        forms::form,
        session::{encode_query_value, require_roles},
    };
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "editing kits").await?;
        let mut kit = match &fields {
            Some(f) => kit_from_fields(&name, expected_version, f)?,
            None => parse_kit(kit_json.as_deref().unwrap_or_default())?,
        };
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
    let days = crate::components::replay::EDITOR_DAYS;
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
