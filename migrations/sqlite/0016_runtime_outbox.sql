-- A tenant's team runtime (gateway/src/runtime/registry.rs): where its control wire answers
-- and what was last seen of it. The shared secret is in the vault under `secret_name`.
CREATE TABLE runtimes (
    tenant_id    TEXT PRIMARY KEY REFERENCES tenants(id),
    url          TEXT NOT NULL,
    secret_name  TEXT NOT NULL,
    claimed      INTEGER NOT NULL DEFAULT 0,
    reachable    INTEGER,
    last_seen_at TEXT,
    last_error   TEXT,
    updated_by   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

-- The outbox (gateway/src/runtime/outbox.rs): what leaves the gateway asynchronously, held
-- until delivered. Rows of one (tenant, channel, ordering_key) are delivered in `seq` order.
CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    channel         TEXT NOT NULL,
    ordering_key    TEXT NOT NULL,
    kind            TEXT NOT NULL,
    author          TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    delivered_at    TEXT
);
CREATE INDEX outbox_queued ON outbox (channel, seq) WHERE status = 'queued';
CREATE INDEX outbox_queued_by_key ON outbox (tenant_id, channel, ordering_key, seq) WHERE status = 'queued';
CREATE INDEX outbox_by_tenant ON outbox (tenant_id, channel, seq);
-- Dead letters and rejections, for their listing; a row enters it only when it fails for good.
CREATE INDEX outbox_ended ON outbox (tenant_id, channel, status, seq) WHERE status IN ('dead', 'rejected');

-- A tenant's webhook endpoints (gateway/src/webhooks): where notifications go, which events
-- each wants, and the body format. The signing secret is in the vault under `secret_name`.
CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    format      TEXT NOT NULL,
    secret_name TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints (tenant_id, id);
