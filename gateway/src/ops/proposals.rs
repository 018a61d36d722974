//! Reading brain governance: proposals with their trails, writebacks, and beliefs; who proposed
//! a proposal, and whether a human may review it.

use crate::Gateway;
use crate::domain::brain::{
    self, Belief, BeliefQuery, MAX_BELIEF_SEARCH, Proposal, ProposalQuery, Writeback,
};
use crate::domain::principal::{Human, REVIEWERS};
use crate::error::{Error, Result};
use crate::ids::TenantId;

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

    pub async fn proposals(&self, tenant: &TenantId, q: &ProposalQuery) -> Result<Vec<Proposal>> {
        brain::proposals(&self.store, tenant, q).await
    }

    /// How many proposals wait for a reviewer: (pending, parked on an agent's accept).
    pub async fn proposals_waiting(&self, tenant: &TenantId) -> Result<(u64, u64)> {
        crate::domain::brain::waiting(&self.store, tenant).await
    }

    pub async fn writebacks(&self, tenant: &TenantId, limit: Option<i64>) -> Result<Vec<Writeback>> {
        brain::writebacks(&self.store, tenant, limit.unwrap_or(100).clamp(1, 500)).await
    }

    /// One writeback envelope and every proposal it carried.
    pub async fn writeback(&self, tenant: &TenantId, id: &str) -> Result<Writeback> {
        brain::writeback(&self.store, tenant, id).await?.ok_or(Error::NotFound { what: "writeback" })
    }

    /// The tenant's canonized beliefs, newest first: the company's source of truth, each with
    /// who accepted it, why, and the proposal, writeback and run it came from.
    pub async fn beliefs(&self, tenant: &TenantId, q: &BeliefQuery) -> Result<Vec<Belief>> {
        if q.search.as_ref().is_some_and(|s| s.chars().count() > MAX_BELIEF_SEARCH) {
            let message = format!("`q` is at most {MAX_BELIEF_SEARCH} characters");
            return Err(Error::Invalid { code: "search_too_long", message });
        }
        brain::beliefs(&self.store, tenant, q).await
    }
}
