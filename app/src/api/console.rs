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
