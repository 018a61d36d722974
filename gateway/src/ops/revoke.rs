//! Revoke as operations: the preview of what a revoke touches and the revoke itself, each
//! one job of [`crate::domain::revoke`], then the caches and streams that must look again.

use crate::Gateway;
use crate::domain::revoke::{RevokeReport, plan, revoke};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    /// What revoking `profile` would touch, without changing anything.
    pub async fn revoke_preview(&self, tenant: &TenantId, profile: &ProfileId) -> Result<RevokeReport> {
        self.profile(tenant, profile).await?;
        let (t, p) = (tenant.clone(), profile.clone());
        let (profiles, approvals) = self.write(move |c| plan(c, &t, &p)).await?;
        Ok(RevokeReport {
            holds_voided: approvals.iter().filter(|a| a.hold_id.is_some()).count(),
            approvals_denied: approvals.into_iter().map(|a| a.id).collect(),
            profiles,
        })
    }

    /// Revokes `profile` and its whole subtree. With `confirmed_profiles` (the size of the
    /// cascade a human previewed), a subtree that has grown or shrunk since is refused with
    /// `cascade_changed` and nothing is revoked: the check and the revoke are one writer job,
    /// so no sub-agent can be created between them.
    pub async fn revoke_profile(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        actor: &str,
        confirmed_profiles: Option<usize>,
    ) -> Result<RevokeReport> {
        self.profile(tenant, profile).await?;
        let (t, p, actor) = (tenant.clone(), profile.clone(), actor.to_string());
        let report = self.write(move |c| revoke(c, &t, &p, &actor, confirmed_profiles)).await?;
        self.agents_changed(Some(tenant));
        // Its OAuth connections were revoked with it: their tokens leave the key cache.
        self.invalidate_keys();
        self.invalidate_links();
        self.credentials_changed();
        Ok(report)
    }
}
