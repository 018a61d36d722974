//! Server functions behind the console's read views: the session, profiles, kits and spend.
//!
//! Until sign-in lands, the session is the first tenant's first admin: the console is a
//! single-operator tool on a local database. Every query below is scoped to that tenant.

use leptos::prelude::*;
use policy::{Kit, KitDiff, Money};
use serde::{Deserialize, Serialize};

/// Who is looking at the console, for the top bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub username: String,
    pub tenant_name: String,
    pub tenant_credit: Money,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRow {
    pub id: String,
    pub name: String,
    pub depth: usize,
    pub kit_name: String,
    pub status: String,
    pub runtime: String,
    pub runtime_reason: Option<String>,
    pub owner: Option<String>,
    pub created_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitVersionRow {
    pub kit: Kit,
    pub author: String,
    pub diff: KitDiff,
    pub created_at: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KitSummary {
    pub current: KitVersionRow,
    pub history: Vec<KitVersionRow>,
    pub profiles: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpendRow {
    pub profile: String,
    pub depth: usize,
    pub kit_name: String,
    pub hard_cap: Option<Money>,
    pub soft_cap: Option<Money>,
    pub approve_above: Option<Money>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantOverview {
    pub profiles: usize,
    pub active_profiles: usize,
    pub kits: usize,
    pub brain_kits: usize,
}

/// A parked action waiting in the inbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxRow {
    pub id: String,
    pub agent: String,
    pub action: String,
    pub summary: String,
    pub amount: Money,
    pub kit: String,
    pub reason: String,
    pub requested_at: String,
    pub expires_at: String,
    pub seconds_left: i64,
}

/// One line of the activity log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityRow {
    pub seq: i64,
    pub at: String,
    pub actor: String,
    pub agent: Option<String>,
    pub kind: String,
    pub action: Option<String>,
    pub verdict: Option<String>,
    pub amount: Option<Money>,
    pub kit_version: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityView {
    pub rows: Vec<ActivityRow>,
    pub chain_ok: bool,
    pub chain_entries: u64,
    pub first_broken: Option<i64>,
}

/// The arguments in one readable line: `merchant: acme · memo: cable ties`.
pub fn summarize_args(args: &serde_json::Value) -> String {
    const MAX_LEN: usize = 120;
    let mut parts = Vec::new();
    if let Some(obj) = args.as_object() {
        let mut fields: Vec<_> = obj.iter().collect();
        fields.sort_by_key(|(k, _)| k.as_str());
        for (k, v) in fields {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            parts.push(format!("{k}: {v}"));
        }
    }
    let mut line = parts.join(" · ");
    if line.chars().count() > MAX_LEN {
        line = line.chars().take(MAX_LEN - 1).collect::<String>() + "…";
    }
    line
}

#[cfg(feature = "ssr")]
mod session {
    use super::*;
    use crate::api::{gateway, to_fn_error};

    /// The tenant and user this request acts as.
    pub(crate) async fn current()
    -> Result<Option<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser)>, ServerFnError> {
        let gw = gateway()?;
        let Some(tenant) = gw.tenants().await.map_err(to_fn_error)?.into_iter().next() else {
            return Ok(None);
        };
        let users = gw.users(&tenant.id).await.map_err(to_fn_error)?;
        let Some(user) = users.iter().find(|u| u.has(gateway::Role::Admin)).or(users.first()).cloned() else {
            return Ok(None);
        };
        Ok(Some((gw, tenant, user)))
    }
}

/// Fails with a readable message when the database has no tenant yet.
#[cfg(feature = "ssr")]
async fn require_session() -> Result<(gateway::Gateway, gateway::Tenant, gateway::ConsoleUser), ServerFnError>
{
    session::current().await?.ok_or_else(|| {
        ServerFnError::new("no_tenant: this database has no tenant yet; restart the server without --no-demo to seed the demo tenant")
    })
}

#[server]
pub async fn session_info() -> Result<Option<SessionSummary>, ServerFnError> {
    Ok(session::current().await?.map(|(_, t, u)| SessionSummary {
        username: u.username,
        tenant_name: t.name,
        tenant_credit: t.credit,
    }))
}

#[server]
pub async fn list_profiles() -> Result<Vec<ProfileRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_session().await?;
    let users = gw.users(&tenant.id).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(&tenant.id).await.map_err(to_fn_error)?;
    Ok(tree
        .into_iter()
        .map(|e| {
            let p = e.profile;
            ProfileRow {
                id: p.id.to_string(),
                name: p.name,
                depth: e.depth,
                kit_name: p.kit_name,
                status: p.status.as_str().to_string(),
                runtime: p.runtime.as_str().to_string(),
                runtime_reason: p.runtime_reason,
                owner: p.owner.and_then(|o| users.iter().find(|u| u.id == o).map(|u| u.username.clone())),
                created_at: p.created_at.to_rfc3339(),
            }
        })
        .collect())
}

#[server]
pub async fn list_kits() -> Result<Vec<KitSummary>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_session().await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let mut out = Vec::new();
    for current in gw.kits(&tenant.id).await.map_err(to_fn_error)? {
        let history = gw.kit_versions(&tenant.id, &current.kit.name).await.map_err(to_fn_error)?;
        let row = |r: gateway::KitRecord| KitVersionRow {
            kit: r.kit,
            author: r.author,
            diff: r.diff,
            created_at: r.created_at.to_rfc3339(),
        };
        out.push(KitSummary {
            profiles: profiles.iter().filter(|p| p.kit_name == current.kit.name).count(),
            current: row(current),
            history: history.into_iter().map(row).collect(),
        });
    }
    Ok(out)
}

#[server]
pub async fn spend_overview() -> Result<Vec<SpendRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_session().await?;
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    let tree = gw.profile_tree(&tenant.id).await.map_err(to_fn_error)?;
    Ok(tree
        .into_iter()
        .map(|e| {
            let kit = kits.iter().find(|k| k.kit.name == e.profile.kit_name).map(|k| &k.kit);
            SpendRow {
                profile: e.profile.name,
                depth: e.depth,
                kit_name: e.profile.kit_name.clone(),
                hard_cap: kit.and_then(|k| k.limits.budget.hard_cap),
                soft_cap: kit.and_then(|k| k.limits.budget.soft_cap),
                approve_above: kit.and_then(|k| k.limits.approve.above),
            }
        })
        .collect())
}

#[server]
pub async fn overview() -> Result<TenantOverview, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_session().await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let kits = gw.kits(&tenant.id).await.map_err(to_fn_error)?;
    Ok(TenantOverview {
        profiles: profiles.len(),
        active_profiles: profiles.iter().filter(|p| p.status == policy::SubjectStatus::Active).count(),
        kits: kits.len(),
        brain_kits: kits.iter().filter(|k| k.kit.primitives.contains(policy::Primitive::Brain)).count(),
    })
}

#[server]
pub async fn inbox() -> Result<Vec<InboxRow>, ServerFnError> {
    use crate::api::to_fn_error;
    use gateway::approvals::{ApprovalQuery, ApprovalStatus};
    let (gw, tenant, _) = require_session().await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let q = ApprovalQuery { status: Some(ApprovalStatus::Pending), ..Default::default() };
    let now = chrono::Utc::now();
    Ok(gw
        .approvals(&tenant.id, &q)
        .await
        .map_err(to_fn_error)?
        .into_iter()
        .map(|a| InboxRow {
            agent: profiles
                .iter()
                .find(|p| p.id == a.profile_id)
                .map_or_else(|| a.profile_id.to_string(), |p| p.name.clone()),
            summary: summarize_args(&a.args),
            seconds_left: a.seconds_left(now),
            id: a.id,
            action: a.action,
            amount: a.amount,
            kit: format!("{} v{}", a.kit_name, a.kit_version),
            reason: a.reason,
            requested_at: a.requested_at.to_rfc3339(),
            expires_at: a.expires_at.to_rfc3339(),
        })
        .collect())
}

#[server]
pub async fn activity_feed() -> Result<ActivityView, ServerFnError> {
    use crate::api::to_fn_error;
    let (gw, tenant, _) = require_session().await?;
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let entries = gw.log(&tenant.id, &Default::default()).await.map_err(to_fn_error)?;
    let chain = gw.verify_log(&tenant.id).await.map_err(to_fn_error)?;
    Ok(ActivityView {
        rows: entries
            .into_iter()
            .map(|e| ActivityRow {
                agent: e
                    .profile_id
                    .as_ref()
                    .and_then(|id| profiles.iter().find(|p| &p.id == id))
                    .map(|p| p.name.clone()),
                seq: e.seq,
                at: e.at.to_rfc3339(),
                actor: profiles
                    .iter()
                    .find(|p| p.id.as_str() == e.actor)
                    .map_or(e.actor.clone(), |p| p.name.clone()),
                kind: e.kind,
                action: e.action,
                verdict: e.verdict,
                amount: e.amount,
                kit_version: e.kit_version,
            })
            .collect(),
        chain_ok: chain.ok,
        chain_entries: chain.entries,
        first_broken: chain.first_broken,
    })
}
