//! Revoke (SPEC §5.2, §3): suspends an agent profile and cascades to all of its sub-agents.
//!
//! Guarantees, in one transaction: every profile in the subtree becomes `revoked`, its runtime
//! slot is released (stopped, reason `revoked`), its pending approvals are denied and their
//! holds voided. From then on every call with their keys is refused `agent_profile_revoked`,
//! reads included, because the pipeline checks status on every call.

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::sqlite::SqliteConnection;

use crate::Gateway;
use crate::activity::{self, Kind, NewEntry};
use crate::error::Result;
use crate::ids::{ProfileId, TenantId};
use crate::ledger::{self, HoldEnd};

/// What a revoke did, or would do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeReport {
    /// The profile and every sub-agent beneath it.
    pub profiles: Vec<ProfileId>,
    pub approvals_denied: Vec<String>,
    pub holds_voided: usize,
}

async fn subtree(c: &mut SqliteConnection, tenant: &TenantId, root: &ProfileId) -> Result<Vec<ProfileId>> {
    let ids: Vec<String> = sqlx::query_scalar(
        "WITH RECURSIVE sub(id, depth) AS ( \
           SELECT id, 0 FROM agent_profiles WHERE id = ? AND tenant_id = ? \
           UNION ALL SELECT p.id, s.depth + 1 FROM agent_profiles p JOIN sub s ON p.parent_id = s.id) \
         SELECT id FROM sub ORDER BY depth, id",
    )
    .bind(root.as_str())
    .bind(tenant.as_str())
    .fetch_all(&mut *c)
    .await?;
    Ok(ids.into_iter().map(ProfileId::from_db).collect())
}

async fn pending_approvals(
    c: &mut SqliteConnection,
    profiles: &[ProfileId],
) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for p in profiles {
        let rows: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT id, hold_id FROM approvals WHERE profile_id = ? AND status = 'pending' ORDER BY requested_at")
                .bind(p.as_str())
                .fetch_all(&mut *c)
                .await?;
        out.extend(rows);
    }
    Ok(out)
}

impl Gateway {
    /// What revoking `profile` would touch, without changing anything.
    pub async fn revoke_preview(&self, tenant: &TenantId, profile: &ProfileId) -> Result<RevokeReport> {
        self.profile(tenant, profile).await?;
        let mut c = self.store.pool().acquire().await?;
        let profiles = subtree(&mut c, tenant, profile).await?;
        let approvals = pending_approvals(&mut c, &profiles).await?;
        Ok(RevokeReport {
            holds_voided: approvals.iter().filter(|(_, h)| h.is_some()).count(),
            approvals_denied: approvals.into_iter().map(|(a, _)| a).collect(),
            profiles,
        })
    }

    /// Revokes `profile` and its whole subtree.
    pub async fn revoke_profile(
        &self,
        tenant: &TenantId,
        profile: &ProfileId,
        actor: &str,
    ) -> Result<RevokeReport> {
        self.profile(tenant, profile).await?;
        let (t, p, actor) = (tenant.clone(), profile.clone(), actor.to_string());
        let (report, entries) = self
            .writer
            .run(move |c| {
                Box::pin(async move {
                    let profiles = subtree(c, &t, &p).await?;
                    let approvals = pending_approvals(c, &profiles).await?;
                    let mut entries = Vec::new();
                    for id in &profiles {
                        sqlx::query("UPDATE agent_profiles SET status = 'revoked', runtime_state = 'stopped', runtime_reason = 'revoked' WHERE id = ?")
                            .bind(id.as_str())
                            .execute(&mut *c)
                            .await?;
                    }
                    let mut holds_voided = 0;
                    for (approval, hold) in &approvals {
                        sqlx::query("UPDATE approvals SET status = 'denied', decided_by = ?, decided_at = ?, decision_reason = 'agent profile revoked' WHERE id = ? AND status = 'pending'")
                            .bind(&actor)
                            .bind(Utc::now())
                            .bind(approval)
                            .execute(&mut *c)
                            .await?;
                        crate::approvals::trail(c, approval, &actor, "denied", Some("agent profile revoked")).await?;
                        if let Some(h) = hold {
                            ledger::end(c, h, HoldEnd::Voided, policy::Money::ZERO).await?;
                            holds_voided += 1;
                        }
                    }
                    let report = RevokeReport { profiles, approvals_denied: approvals.into_iter().map(|(a, _)| a).collect(), holds_voided };
                    entries.push(
                        activity::append(
                            c,
                            NewEntry::new(&t, &actor, Kind::Revoke)
                                .profile(&p)
                                .verdict("revoked")
                                .detail(json!({ "cascade": report.profiles, "approvals_denied": report.approvals_denied, "holds_voided": report.holds_voided })),
                        )
                        .await?,
                    );
                    Ok((report, entries))
                })
            })
            .await?;
        self.bus.publish(entries);
        Ok(report)
    }
}
