//! Server functions behind replay and shadow in the kit editor (docs/architecture.md#replay-and-shadow):
//! a draft decided again over the last week of recorded calls (a summary for the editor, the
//! whole list on its own page), and a kit's shadow: started from a draft, its running totals
//! and differences, promoted (a save from the live version, with its diff) or discarded.
//!
//! Each is a thin call into the gateway's one function per operation, the same `/v1` calls.

use leptos::prelude::*;
use policy::KitDiff;
use serde::{Deserialize, Serialize};

#[cfg(feature = "ssr")]
use crate::api::session::require_view;

pub use crate::components::replay::{
    ChangeRow, EDITOR_CHANGES, EDITOR_DAYS, Effect, PAGE_CHANGES, ReplayView, TransitionRow,
};

/// A running shadow as the kit editor shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShadowData {
    pub started_by: String,
    pub started_at: String,
    pub based_on: u32,
    pub live_version: u32,
    /// The shadow's mark (the entry that started it): a promotion names it.
    pub after_seq: i64,
    pub effect: Effect,
    pub recent: Vec<ChangeRow>,
    /// What promoting it would change against the live version.
    pub diff: KitDiff,
    pub can_edit: bool,
}

#[cfg(feature = "ssr")]
fn effect(s: gateway::domain::replay::Summary, calls: u64) -> Effect {
    Effect {
        calls,
        changed: s.changed,
        transitions: s
            .transitions
            .into_iter()
            .map(|t| TransitionRow { from: t.from, to: t.to, calls: t.calls, amount: t.amount })
            .collect(),
        refused: s.money.refused,
        parked: s.money.parked,
        ran: s.money.ran,
    }
}

#[cfg(feature = "ssr")]
fn rows(profiles: &[gateway::Profile], changes: Vec<gateway::domain::replay::Change>) -> Vec<ChangeRow> {
    changes
        .into_iter()
        .map(|c| {
            let (agent, agent_id) = crate::api::named(profiles, c.profile_id.as_str().to_string());
            ChangeRow {
                seq: c.seq,
                at: c.at.to_rfc3339(),
                agent,
                agent_id,
                action: c.action,
                amount: c.amount,
                was: (c.was.verdict, c.was.detail),
                would_be: (c.would_be.verdict, c.would_be.detail),
            }
        })
        .collect()
}

/// `kit_json` (a draft) or `version` (a saved one; the current if neither) of kit `name`,
/// decided again over the last [`EDITOR_DAYS`] days; `limit` changed calls after `after`.
#[cfg(feature = "ssr")]
pub(crate) async fn replay_view(
    name: &str,
    kit_json: &str,
    version: Option<u32>,
    (after, limit): (Option<i64>, usize),
) -> Result<ReplayView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_view("kits").await?;
    let draft = if kit_json.trim().is_empty() { None } else { Some(crate::api::kits::parse_kit(kit_json)?) };
    let req = gateway::ops::replay::ReplayRequest {
        version,
        after,
        ..gateway::ops::replay::ReplayRequest::recent(draft, EDITOR_DAYS, limit)
    };
    let r = gw.replay(&tenant.id, name, req).await.map_err(to_fn_error)?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let calls = r.summary.calls;
    Ok(ReplayView {
        kit: r.kit,
        from: r.from.to_rfc3339(),
        to: r.to.to_rfc3339(),
        effect: effect(r.summary, calls),
        changes: rows(&profiles, r.changes),
        next: r.next,
    })
}

/// The replay page: every changed call, [`PAGE_CHANGES`] at a time.
#[server]
pub async fn replay_kit(
    name: String,
    kit_json: String,
    version: Option<u32>,
    after: Option<i64>,
) -> Result<ReplayView, ServerFnError> {
    replay_view(&name, &kit_json, version, (after, PAGE_CHANGES)).await
}

/// The editor's "Against the last 7 days": the summary of the draft (the editor's `fields`,
/// edited from `expected_version`) replayed, as HTML the island puts in place (so no renderer
/// of it ships in the wasm).
#[server(prefix = "/api", endpoint = "replay_summary")]
pub async fn replay_summary(
    name: String,
    expected_version: u32,
    fields: String,
) -> Result<String, ServerFnError> {
    let kit = crate::api::kits::kit_from_fields(&name, expected_version, &fields)?;
    let kit_json = kit.to_json_pretty();
    let view = replay_view(&name, &kit_json, None, (None, EDITOR_CHANGES)).await?;
    let html = leptos::tachys::view::RenderHtml::to_html(
        view! { <crate::components::replay::ReplaySummary view=view kit_json=kit_json /> },
    );
    Ok(html)
}

/// The running shadow of kit `name`, if any.
#[server]
pub async fn kit_shadow(name: String) -> Result<Option<ShadowData>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("kits").await?;
    let v = match gw.shadow(&tenant.id, &name).await {
        Ok(v) => v,
        Err(gateway::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(to_fn_error(e)),
    };
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let t = v.totals;
    let summary = gateway::domain::replay::Summary {
        calls: t.calls,
        changed: t.differed,
        transitions: t.transitions,
        money: t.money,
    };
    Ok(Some(ShadowData {
        started_by: v.shadow.started_by,
        started_at: v.shadow.started_at.to_rfc3339(),
        based_on: v.shadow.based_on,
        live_version: v.live_version,
        after_seq: v.shadow.after_seq,
        effect: effect(summary, t.calls),
        recent: rows(&profiles, t.recent),
        diff: v.diff,
        can_edit: user.has(gateway::Role::Admin),
    }))
}

/// Starts `kit_json` as kit `name`'s shadow (admins only): back to the editor.
#[server(prefix = "/api", endpoint = "start_shadow")]
pub async fn start_shadow(name: String, kit_json: String) -> Result<(), ServerFnError> {
    use crate::api::{forms::form, session::require_roles, to_fn_error};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "running a shadow kit").await?;
        let mut kit = crate::api::kits::parse_kit(&kit_json)?;
        kit.name = name.clone();
        gw.start_shadow(&tenant.id, kit, &user.username).await.map_err(to_fn_error)?;
        back(&name, "The draft now runs in shadow: every live call of this kit's agents is also decided under it, without effect.");
        Ok(())
    })
    .await
}

/// Ends kit `name`'s shadow without saving it (admins only).
#[server(prefix = "/api", endpoint = "discard_shadow")]
pub async fn discard_shadow(name: String) -> Result<(), ServerFnError> {
    use crate::api::{forms::form, session::require_roles, to_fn_error};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "running a shadow kit").await?;
        gw.discard_shadow(&tenant.id, &name, &user.username).await.map_err(to_fn_error)?;
        back(&name, "The shadow was discarded; the live kit is unchanged.");
        Ok(())
    })
    .await
}

/// Saves kit `name`'s shadow (the one started at entry `shadow`) as the version after
/// `expected_version` and ends it (admins only); `kit_version_conflict` if the live kit changed
/// since the page was shown, `shadow_changed` if the shadow did.
#[server(prefix = "/api", endpoint = "promote_shadow")]
pub async fn promote_shadow(name: String, expected_version: u32, shadow: i64) -> Result<(), ServerFnError> {
    use crate::api::{forms::form, session::require_roles, to_fn_error};
    form(async {
        let (gw, tenant, user) = require_roles(&[gateway::Role::Admin], "running a shadow kit").await?;
        let saved = gw
            .promote_shadow(&tenant.id, &name, (policy::KitVersion(expected_version), shadow), &user.username)
            .await
            .map_err(to_fn_error)?;
        back(
            &name,
            &format!(
                "The shadow is now the live kit, as {}. Agents on it get it on their next call.",
                saved.kit.version
            ),
        );
        Ok(())
    })
    .await
}

/// Back to kit `name`'s editor, saying `done`.
#[cfg(feature = "ssr")]
fn back(name: &str, done: &str) {
    use crate::api::session::encode_query_value;
    leptos_axum::redirect(&format!("/kits/{}?done={}", encode_query_value(name), encode_query_value(done)));
}
