-- The outbox by queue (gateway/src/outbox/mod.rs). A claim read every queued row of a channel
-- in `seq` order, a blocked tail included, on the single writer, every 250 ms: one tenant's
-- stuck backlog cost every tenant's claims more, without bound. Now each destination (a
-- tenant's team runtime, one webhook endpoint) has a queue row that says how many of its
-- rows are queued and when its head is next due (its lease's end while a delivery is in
-- flight), and a claim reads only the queues due now and then only their first rows.
--
-- `destination` is the queue a row belongs to: '' for runtime commands (one queue per
-- tenant, delivered in `seq` order, so in order per task too) and the endpoint's id for
-- webhook messages.
ALTER TABLE outbox ADD COLUMN destination TEXT NOT NULL DEFAULT '';
UPDATE outbox SET destination = ordering_key WHERE channel = 'webhook';
DROP INDEX outbox_queued;
-- A queue's rows in order: appended at its end, so an enqueue writes where the last one did.
CREATE INDEX outbox_pending ON outbox (tenant_id, channel, destination, seq) WHERE status = 'queued';

CREATE TABLE outbox_queues (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    channel     TEXT NOT NULL,
    destination TEXT NOT NULL,
    -- Rows of this queue still queued: bounded (`outbox::MAX_QUEUED`), so a tenant cannot
    -- grow it without limit.
    queued      BIGINT NOT NULL CHECK (queued >= 0),
    -- When the queue may next be claimed: now, a failed head's retry, or a lease's end.
    due_at      TEXT NOT NULL,
    -- The delivery that holds the queue's lease, if one does.
    lease_owner TEXT,
    PRIMARY KEY (tenant_id, channel, destination)
);
CREATE INDEX outbox_queues_due ON outbox_queues (channel, due_at);
INSERT INTO outbox_queues (tenant_id, channel, destination, queued, due_at)
    SELECT tenant_id, channel, destination, COUNT(*), MIN(next_attempt_at)
    FROM outbox WHERE status = 'queued' GROUP BY tenant_id, channel, destination;

-- Data migrations the gateway carries out in Rust once, at its next start
-- (`gateway::upgrades`), and then deletes from here.
CREATE TABLE pending_upgrades (
    name TEXT PRIMARY KEY
);
-- Connected apps are closed to agents until a kit names their toolkit: every kit that
-- permitted every toolkit gets a new version naming the apps its tenant has now.
INSERT INTO pending_upgrades (name) VALUES ('kits_name_their_toolkits');
