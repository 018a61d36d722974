//! "What needs me" (`/overview`): for the signed-in user, what waits for them in the views their
//! roles open: approvals they may decide and the soonest to expire, proposals for a reviewer,
//! profiles at or near a soft cap, agents whose hosted runtime is stopped, the audit
//! chain's state, and for an admin the tenant's health figures. Counts only; each links to
//! the view that holds the items.

use leptos::prelude::*;
use policy::Money;
use serde::{Deserialize, Serialize};

/// A profile whose spend (posted and pending) is at least this share of its soft cap counts
/// as near it.
pub const NEAR_SOFT_CAP: f64 = 0.8;

/// One profile at or near its soft cap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapRow {
    pub id: String,
    pub profile: String,
    pub used: Money,
    pub soft_cap: Money,
    pub over: bool,
}

/// An active agent whose hosted runtime is stopped, and why (`budget_exhausted`, …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoppedRow {
    pub id: String,
    pub profile: String,
    pub reason: Option<String>,
}

/// The tenant's health as an admin watches it: the figures the operator's gauges read, for
/// this tenant only (`gateway::ops::health`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Outbox rows queued (team runtime and webhooks), and how long the oldest has waited.
    pub outbox_depth: i64,
    pub outbox_oldest_secs: Option<i64>,
    /// How long the oldest waiting approval has waited.
    pub oldest_approval_secs: Option<i64>,
    /// Governed calls whose connector or egress failed in the last hour.
    pub connector_errors_last_hour: i64,
}

/// What waits for this user; a section is `None` when their roles do not open its view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NeedsMe {
    pub username: String,
    /// Pending approvals this user may decide, and when the soonest expires (RFC 3339).
    pub approvals: Option<(u64, Option<String>)>,
    /// Proposals waiting for a reviewer: (pending, parked on an agent's accept).
    pub proposals: Option<(u64, u64)>,
    pub caps: Option<Vec<CapRow>>,
    /// Active agents whose runtime is stopped.
    pub stopped: Option<Vec<StoppedRow>>,
    /// The audit chain: intact, and how many entries it holds.
    pub chain: (bool, u64),
    /// For an admin: the tenant's health figures.
    pub health: Option<Health>,
}

#[server]
pub async fn needs_me_view() -> Result<NeedsMe, ServerFnError> {
    use crate::api::session::{VIEWS, require_view};
    use crate::api::to_fn_error;
    let (gw, tenant, user) = require_view("overview").await?;
    let opens = |view: &str| {
        VIEWS.iter().any(|v| v.key == view && user.roles.iter().any(|r| v.roles.contains(&r.as_str())))
    };
    let approvals = match opens("inbox") {
        true => {
            let (n, soonest) = gw.waiting_for(&tenant.id, &user.id).await.map_err(to_fn_error)?;
            Some((n, soonest.map(|t| t.to_rfc3339())))
        }
        false => None,
    };
    let proposals = match opens("proposals") {
        true => Some(gw.proposals_waiting(&tenant.id).await.map_err(to_fn_error)?),
        false => None,
    };
    let profiles = gw.profiles(&tenant.id).await.map_err(to_fn_error)?;
    let caps = match opens("spend") {
        true => Some(near_soft_caps(&gw, &tenant.id, &profiles).await?),
        false => None,
    };
    let stopped = opens("profiles").then(|| stopped_runtimes(&profiles));
    let chain = gw.verify_log_since_last(&tenant.id).await.map_err(to_fn_error)?;
    let chain = (chain.ok, chain.entries);
    let health = match user.roles.contains(&gateway::Role::Admin) {
        true => Some(health(&gw, &tenant.id).await?),
        false => None,
    };
    Ok(NeedsMe { username: user.username, approvals, proposals, caps, stopped, chain, health })
}

/// The tenant's health figures, read as the scrape reads them, for this tenant only.
#[cfg(feature = "ssr")]
async fn health(gw: &gateway::Gateway, tenant: &gateway::TenantId) -> Result<Health, ServerFnError> {
    let h = gw.health_figures(Some(tenant)).await.map_err(crate::api::to_fn_error)?;
    Ok(Health {
        outbox_depth: h.outbox.iter().map(|o| o.depth).sum(),
        outbox_oldest_secs: h.outbox.iter().filter_map(|o| o.oldest_secs).max(),
        oldest_approval_secs: h.oldest_approval_secs,
        connector_errors_last_hour: h.connector_errors_last_hour,
    })
}

/// The profiles whose spend has reached [`NEAR_SOFT_CAP`] of their soft cap, fullest first.
#[cfg(feature = "ssr")]
async fn near_soft_caps(
    gw: &gateway::Gateway,
    tenant: &gateway::TenantId,
    profiles: &[gateway::Profile],
) -> Result<Vec<CapRow>, ServerFnError> {
    use crate::api::to_fn_error;
    let mut rows = Vec::new();
    for p in profiles {
        let b = gw.budget(tenant, &p.id).await.map_err(to_fn_error)?;
        let Some(soft) = b.soft_cap.filter(|s| !s.is_zero()) else { continue };
        let used = b.totals.posted.checked_add(b.totals.pending).unwrap_or(b.totals.posted);
        if used.units() as f64 >= soft.units() as f64 * NEAR_SOFT_CAP {
            rows.push(CapRow {
                id: p.id.to_string(),
                profile: p.name.clone(),
                used,
                soft_cap: soft,
                over: used >= soft,
            });
        }
    }
    rows.sort_by(|a, b| {
        let share = |r: &CapRow| r.used.units() as f64 / r.soft_cap.units() as f64;
        share(b).total_cmp(&share(a))
    });
    Ok(rows)
}

/// The active profiles whose hosted runtime is stopped (a revoked profile's is stopped for
/// good, so it needs nobody).
#[cfg(feature = "ssr")]
fn stopped_runtimes(profiles: &[gateway::Profile]) -> Vec<StoppedRow> {
    profiles
        .iter()
        .filter(|p| p.status == policy::SubjectStatus::Active && p.runtime == gateway::RuntimeState::Stopped)
        .map(|p| StoppedRow {
            id: p.id.to_string(),
            profile: p.name.clone(),
            reason: p.runtime_reason.clone(),
        })
        .collect()
}
