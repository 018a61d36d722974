-- The beliefs page lists a tenant's beliefs newest first, and each proposal's trail is read by
-- its proposal: both were full scans.
CREATE INDEX beliefs_tenant ON beliefs(tenant_id, created_at);
CREATE INDEX proposal_trail_proposal ON proposal_trail(proposal_id, seq);
