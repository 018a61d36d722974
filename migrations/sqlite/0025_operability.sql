-- Connector errors in the last hour, for the console's health figures and the operator's
-- view of them (gateway/src/ops/health.rs): the calls whose connector or egress failed are
-- few, so a partial index on them costs nothing on the calls that ran.
CREATE INDEX activity_unavailable ON activity(tenant_id, at) WHERE verdict = 'unavailable';

-- The W3C trace context of the call that parked (when it was traced), so the span of the
-- human decision links to it (gateway/src/audit/trace.rs). NULL when tracing is off.
ALTER TABLE approvals ADD COLUMN traceparent TEXT;
