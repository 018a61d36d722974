-- The inbox reads one status newest first with a tie-break on id; an index that holds both
-- serves that page by walking the index backwards, with no sort of the tenant's approvals,
-- and without the status the tenant's approvals are walked by time through their own index.
DROP INDEX approvals_status;
CREATE INDEX approvals_by_status ON approvals(tenant_id, status, requested_at, id);
CREATE INDEX approvals_by_time ON approvals(tenant_id, requested_at, id);
