//! Revoke (docs/architecture.md#identities-and-roles) as a rule: suspends an agent profile
//! and cascades to all of its sub-agents.
//!
//! Guarantees, in one transaction: every profile in the subtree becomes `revoked`, its runtime
//! slot is released (stopped, reason `revoked`), its pending approvals are denied and their
//! holds voided. From then on every call with their keys is refused `agent_profile_revoked`,
//! reads included, because the pipeline checks status on every call.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::activity::{self, Kind, NewEntry, Verdict};
use crate::domain::approvals::{self, Approval, ApprovalStatus};
use crate::domain::ledger;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::sql::{Tx, lock_key};

/// What a revoke did, or would do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevokeReport {
    /// The profile and every sub-agent beneath it.
    pub profiles: Vec<ProfileId>,
    pub approvals_denied: Vec<String>,
    pub holds_voided: usize,
}

fn subtree(c: &dyn Tx, tenant: &TenantId, root: &ProfileId) -> Result<Vec<ProfileId>> {
    c.rows(
        "WITH RECURSIVE sub(id, depth) AS ( \
           SELECT id, 0 FROM agent_profiles WHERE id = ? AND tenant_id = ? \
           UNION ALL SELECT p.id, s.depth + 1 FROM agent_profiles p JOIN sub s ON p.parent_id = s.id) \
         SELECT id FROM sub ORDER BY depth, id DESC",
        &[&root.as_str(), &tenant.as_str()],
    )?
    .iter()
    .map(|r| Ok(ProfileId::from_db(r.get::<String>(0)?)))
    .collect()
}

/// What revoking `root` touches, read inside a writer job so it matches what a revoke does.
pub(crate) fn plan(
    c: &dyn Tx,
    tenant: &TenantId,
    root: &ProfileId,
) -> Result<(Vec<ProfileId>, Vec<Approval>)> {
    let profiles = subtree(c, tenant, root)?;
    let approvals = approvals::pending_for(c, &profiles)?;
    Ok((profiles, approvals))
}

/// Revokes `root`'s subtree. On PostgreSQL it first locks the subtree's accounts (deepest
/// first, the order reservations take them), which a call deciding for one of these profiles
/// locks before it reads their status: such a call either commits (its park or hold) before
/// this reads the approvals and holds, or waits and then sees the revoke. The tenant's tree
/// changes take turns ([`crate::domain::profiles::insert_profile`]), so no sub-agent is created
/// beneath the subtree meanwhile.
pub(crate) fn revoke(
    c: &dyn Tx,
    tenant: &TenantId,
    root: &ProfileId,
    actor: &str,
    confirmed_profiles: Option<usize>,
) -> Result<RevokeReport> {
    lock_key(c, &["profile tree", tenant.as_str()])?;
    let profiles = subtree(c, tenant, root)?;
    if let Some(confirmed) = confirmed_profiles
        && confirmed != profiles.len()
    {
        return Err(Error::Conflict {
            code: "cascade_changed",
            message: format!(
                "revoking now reaches {} profiles, not the {confirmed} you confirmed; check the new preview and confirm again",
                profiles.len()
            ),
        });
    }
    // Deepest first, then by id within a depth: the one order every locker of several
    // accounts follows ([`ledger::lock_for_ending`]).
    let deepest_first: Vec<ProfileId> = profiles.iter().rev().cloned().collect();
    crate::audit::activity::lock_tenant(c, tenant)?;
    ledger::lock_accounts(c, &deepest_first)?;
    for id in &profiles {
        crate::domain::profiles::mark_revoked(c, id)?;
        crate::domain::oauth::revoke_profile_connections(c, tenant, id, actor)?;
    }
    let approvals = approvals::pending_for(c, &profiles)?;
    for a in &approvals {
        approvals::close(c, a, ApprovalStatus::Denied, actor, None, "agent profile revoked")?;
    }
    let report = RevokeReport {
        profiles,
        holds_voided: approvals.iter().filter(|a| a.hold_id.is_some()).count(),
        approvals_denied: approvals.into_iter().map(|a| a.id).collect(),
    };
    activity::append(
        c,
        NewEntry::new(tenant, actor, Kind::Revoke).via_actor().profile(root).verdict(Verdict::Revoked).detail(
            json!({ "cascade": report.profiles, "approvals_denied": report.approvals_denied, "holds_voided": report.holds_voided }),
        ),
    )?;
    Ok(report)
}
