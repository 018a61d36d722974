//! Reading brain governance: proposals with their trails, writebacks, and beliefs; who proposed
//! a proposal, and whether a human may review it.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::Gateway;
use crate::domain::brain::{
    Belief, BeliefQuery, BeliefRow, COLUMNS, MAX_BELIEF_SEARCH, PROPOSER, Proposal, ProposalQuery,
    ProposalRow, ProposalStatus, Writeback, from_row,
};
use crate::domain::principal::{Human, REVIEWERS};
use crate::domain::trail::{TrailRow, TrailStep};
use crate::error::{Error, Result};
use crate::ids::{ProfileId, TenantId};

impl Gateway {
    /// Why `by` may not decide `proposal`, as deciding it would say: the roles their credential
    /// carries, and that they do not own the profile that proposed it or one above it.
    pub async fn may_review(&self, proposal: &str, by: &Human) -> Result<()> {
        by.require(REVIEWERS)?;
        if let Some(p) = self.proposer(proposal).await? {
            self.ensure_not_owner(&p, by).await?;
        }
        Ok(())
    }

    /// The profile whose writeback carried `proposal`, on committed rows.
    pub(crate) async fn proposer(&self, proposal: &str) -> Result<Option<ProfileId>> {
        let row: Option<(String,)> = self.store.opt(PROPOSER, &[&proposal]).await?;
        Ok(row.map(|r| ProfileId::from_db(r.0)))
    }

    pub async fn proposals(&self, tenant: &TenantId, q: &ProposalQuery) -> Result<Vec<Proposal>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM proposals WHERE tenant_id = ?1 AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR object_type = ?3) \
             AND (?4 IS NULL OR run_id = ?4) ORDER BY created_at DESC, id DESC LIMIT ?5"
        );
        let (status, limit) = (q.status.map(ProposalStatus::as_str), q.limit.unwrap_or(100).clamp(1, 500));
        let rows: Vec<ProposalRow> =
            self.store.all(&sql, &[tenant, &status, &q.object_type, &q.run_id, &limit]).await?;
        rows.into_iter().map(from_row).collect()
    }

    /// How many proposals wait for a reviewer: (pending, parked on an agent's accept).
    pub async fn proposals_waiting(&self, tenant: &TenantId) -> Result<(u64, u64)> {
        let (pending, parked): (i64, i64) = self
            .store
            .one(
                "SELECT CAST(COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN status = 'parked' THEN 1 ELSE 0 END), 0) AS BIGINT) FROM proposals \
                 WHERE tenant_id = ? AND status IN ('pending', 'parked')",
                &[tenant],
            )
            .await?;
        Ok((pending as u64, parked as u64))
    }

    /// One proposal with its decision trail.
    pub async fn proposal(&self, tenant: &TenantId, id: &str) -> Result<Proposal> {
        let sql = format!("SELECT {COLUMNS} FROM proposals WHERE tenant_id = ? AND id = ?");
        let row: Option<ProposalRow> = self.store.opt(&sql, &[tenant, &id]).await?;
        let mut p = row.map(from_row).transpose()?.ok_or(Error::NotFound { what: "proposal" })?;
        let steps: Vec<TrailRow> = self
            .store
            .all(
                "SELECT at, actor, step, because, credential FROM proposal_trail WHERE proposal_id = ? ORDER BY seq",
                &[&id],
            )
            .await?;
        p.trail = steps
            .into_iter()
            .map(|(at, actor, step, note, credential)| TrailStep { at, actor, step, note, credential })
            .collect();
        Ok(p)
    }

    pub async fn writebacks(&self, tenant: &TenantId, limit: Option<i64>) -> Result<Vec<Writeback>> {
        let limit = limit.unwrap_or(100).clamp(1, 500);
        let rows: Vec<(String, String, String, String, String, DateTime<Utc>)> = self
            .store
            .all(
                "SELECT id, profile_id, run_id, source, envelope, received_at FROM writebacks WHERE tenant_id = ? ORDER BY received_at DESC, id DESC LIMIT ?",
                &[tenant, &limit],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, profile, run_id, source, envelope, received_at)| Writeback {
                id,
                profile_id: ProfileId::from_db(profile),
                run_id,
                source,
                envelope: serde_json::from_str(&envelope).unwrap_or(Value::Null),
                received_at,
                proposals: Vec::new(),
            })
            .collect())
    }

    /// One writeback envelope and every proposal it carried.
    pub async fn writeback(&self, tenant: &TenantId, id: &str) -> Result<Writeback> {
        let (id, profile, run_id, source, envelope, received_at): (String, String, String, String, String, DateTime<Utc>) = self
            .store
            .opt(
                "SELECT id, profile_id, run_id, source, envelope, received_at FROM writebacks WHERE tenant_id = ? AND id = ?",
                &[tenant, &id],
            )
            .await?
            .ok_or(Error::NotFound { what: "writeback" })?;
        let sql = format!("SELECT {COLUMNS} FROM proposals WHERE writeback_id = ? ORDER BY id");
        let proposals: Vec<ProposalRow> = self.store.all(&sql, &[&id]).await?;
        Ok(Writeback {
            id,
            profile_id: ProfileId::from_db(profile),
            run_id,
            source,
            envelope: serde_json::from_str(&envelope).unwrap_or(Value::Null),
            received_at,
            proposals: proposals.into_iter().map(from_row).collect::<Result<_>>()?,
        })
    }

    /// The tenant's canonized beliefs, newest first: the company's source of truth, each with
    /// who accepted it, why, and the proposal, writeback and run it came from.
    pub async fn beliefs(&self, tenant: &TenantId, q: &BeliefQuery) -> Result<Vec<Belief>> {
        if q.search.as_ref().is_some_and(|s| s.chars().count() > MAX_BELIEF_SEARCH) {
            let message = format!("`q` is at most {MAX_BELIEF_SEARCH} characters");
            return Err(Error::Invalid { code: "search_too_long", message });
        }
        // A LIKE pattern both engines read alike: the text's own `%`, `_` and `\` escaped.
        let pattern = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|s| {
            let escaped = s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
            format!("%{escaped}%")
        });
        let limit = q.limit.unwrap_or(100).clamp(1, 500);
        let rows: Vec<BeliefRow> = self
            .store
            .all(
                "SELECT b.id, b.object_type, b.content, b.created_at, b.proposal_id, p.writeback_id, p.run_id, \
                 w.profile_id, t.actor, t.because FROM beliefs b JOIN proposals p ON p.id = b.proposal_id \
                 JOIN writebacks w ON w.id = p.writeback_id \
                 LEFT JOIN proposal_trail t ON t.proposal_id = b.proposal_id AND t.step = 'accepted' \
                 WHERE b.tenant_id = ?1 AND (?2 IS NULL OR b.object_type = ?2) \
                 AND (?3 IS NULL OR lower(b.content) LIKE lower(?3) ESCAPE '\\') \
                 ORDER BY b.created_at DESC, b.id DESC LIMIT ?4",
                &[tenant, &q.object_type, &pattern, &limit],
            )
            .await?;
        Ok(rows.into_iter().map(Belief::from_row).collect())
    }
}
