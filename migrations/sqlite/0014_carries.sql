-- Calls in flight to a networked connector (gateway/src/recovery.rs): what was sent, so that
-- if the instance carrying a call dies, another can send the same call again with the same
-- action id (the upstream's idempotency key) and settle the hold on the upstream's answer,
-- instead of expiring a hold whose charge the upstream may have made. Written in the job
-- that leases the hold to the carrying instance, deleted in the job that ends the hold.
CREATE TABLE carries (
    hold_id      TEXT PRIMARY KEY REFERENCES holds(id),
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    profile_id   TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    via          TEXT NOT NULL,
    action       TEXT NOT NULL,
    args         TEXT NOT NULL,
    action_id    TEXT NOT NULL,
    cost_units   INTEGER NOT NULL,
    kit_version  INTEGER NOT NULL,
    actor        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_try_at  TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX carries_due ON carries (next_try_at);
