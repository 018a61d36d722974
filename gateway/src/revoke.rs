//! Revoke (SPEC §5.2, §3): suspends an agent profile and cascades to all of its sub-agents.
//!
//! Guarantees, in one transaction: every profile in the subtree becomes `revoked`, its runtime
//! slot is released (stopped, reason `revoked`), its pending approvals are denied and their
//! holds voided. From then on every call with their keys is refused `agent_profile_revoked`,
//! reads included, because the pipeline checks status on every call.

use chrono::Utc;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Gateway;
use crate::activity::{self, Kind, NewEntry};
use crate::db;
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};
use crate::ledger::{self, HoldEnd};

/// What a revoke did, or would do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevokeReport {
    /// The profile and every sub-agent beneath it.
    pub profiles: Vec<ProfileId>,
    pub approvals_denied: Vec<String>,
    pub holds_voided: usize,
}

/// A pending approval and the hold it keeps.
type PendingApproval = (String, Option<String>);

fn subtree(c: &Connection, tenant: &TenantId, root: &ProfileId) -> Result<Vec<ProfileId>> {
    let ids = c
        .prepare_cached(
            "WITH RECURSIVE sub(id, depth) AS ( \
               SELECT id, 0 FROM agent_profiles WHERE id = ? AND tenant_id = ? \
               UNION ALL SELECT p.id, s.depth + 1 FROM agent_profiles p JOIN sub s ON p.parent_id = s.id) \
             SELECT id FROM sub ORDER BY depth, id",
        )?
        .query_map(params![root.as_str(), tenant.as_str()], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids.into_iter().map(ProfileId::from_db).collect())
}

fn pending_approvals(c: &Connection, profiles: &[ProfileId]) -> Result<Vec<PendingApproval>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, hold_id FROM approvals WHERE profile_id = ? AND status = 'pending' ORDER BY requested_at",
    )?;
    let mut out = Vec::new();
    for p in profiles {
        let rows = stmt
            .query_map([p.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        out.extend(rows);
    }
    Ok(out)
}

/// What revoking `root` touches, read inside a writer job so it matches what a revoke does.
fn plan(
    c: &Connection,
    tenant: &TenantId,
    root: &ProfileId,
) -> Result<(Vec<ProfileId>, Vec<PendingApproval>)> {
    let profiles = subtree(c, tenant, root)?;
    let approvals = pending_approvals(c, &profiles)?;
    Ok((profiles, approvals))
}

impl Gateway {
    /// What revoking `profile` would touch, without changing anything.
    pub async fn revoke_preview(&self, tenant: &TenantId, profile: &ProfileId) -> Result<RevokeReport> {
        self.profile(tenant, profile).await?;
        let (t, p) = (tenant.clone(), profile.clone());
        let (profiles, approvals) = self.writer.run(move |c| plan(c, &t, &p)).await?;
        Ok(RevokeReport {
            holds_voided: approvals.iter().filter(|(_, h)| h.is_some()).count(),
            approvals_denied: approvals.into_iter().map(|(a, _)| a).collect(),
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
        let (report, _) = self
            .writer
            .run(move |c| {
                let (profiles, approvals) = plan(c, &t, &p)?;
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
                for id in &profiles {
                    c.prepare_cached(
                        "UPDATE agent_profiles SET status = 'revoked', runtime_state = 'stopped', runtime_reason = 'revoked' WHERE id = ?",
                    )?
                    .execute([id.as_str()])?;
                }
                let mut holds_voided = 0;
                for (approval, hold) in &approvals {
                    c.prepare_cached(
                        "UPDATE approvals SET status = 'denied', decided_by = ?, decided_at = ?, decision_reason = 'agent profile revoked' \
                         WHERE id = ? AND status = 'pending'",
                    )?
                    .execute(params![actor, db::ts(Utc::now()), approval])?;
                    crate::approvals::trail(c, approval, &actor, "denied", Some("agent profile revoked"), None)?;
                    if let Some(h) = hold {
                        ledger::end(c, h, HoldEnd::Voided, policy::Money::ZERO, None)?;
                        holds_voided += 1;
                    }
                }
                let report = RevokeReport { profiles, approvals_denied: approvals.into_iter().map(|(a, _)| a).collect(), holds_voided };
                let entry = activity::append(
                    c,
                    NewEntry::new(&t, &actor, Kind::Revoke).via_actor().profile(&p).verdict("revoked").detail(
                        json!({ "cascade": report.profiles, "approvals_denied": report.approvals_denied, "holds_voided": report.holds_voided }),
                    ),
                )?;
                Ok((report, vec![entry]))
            })
            .await?;
        self.invalidate_links();
        self.credentials_changed();
        Ok(report)
    }
}
