-- The gateway core: scoped keys, budget accounts, holds and ledger entries, governed actions,
-- idempotency, refusal repeats, approvals with their trail, brain writebacks and proposals,
-- and the tamper-evident activity log. Money is INTEGER units of $0.0001.

ALTER TABLE tenants ADD COLUMN credit_pending_units INTEGER NOT NULL DEFAULT 0 CHECK (credit_pending_units >= 0);

CREATE TABLE agent_keys (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    profile_id   TEXT NOT NULL REFERENCES agent_profiles(id),
    prefix       TEXT NOT NULL UNIQUE,
    secret_hash  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    -- set when rotated with a grace period: the old key works until then
    expires_at   TEXT,
    revoked_at   TEXT,
    replaced_by  TEXT
);
CREATE INDEX agent_keys_profile ON agent_keys(tenant_id, profile_id);

-- One running total per profile, covering the profile and all of its sub-agents: a parent's
-- account is the pool its sub-agents share. Never computed by summing history on the hot path.
CREATE TABLE budget_accounts (
    profile_id    TEXT PRIMARY KEY REFERENCES agent_profiles(id),
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    posted_units  INTEGER NOT NULL DEFAULT 0 CHECK (posted_units >= 0),
    pending_units INTEGER NOT NULL DEFAULT 0 CHECK (pending_units >= 0)
);

CREATE TABLE holds (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    profile_id   TEXT NOT NULL REFERENCES agent_profiles(id),
    -- the accounts the hold reserved on: the profile, then each ancestor (comma-separated)
    chain        TEXT NOT NULL,
    action       TEXT NOT NULL,
    -- the whole cost held against the caps, and its platform-credit part
    amount_units INTEGER NOT NULL CHECK (amount_units >= 0),
    credit_units INTEGER NOT NULL CHECK (credit_units >= 0),
    kit_version  INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'posted', 'voided', 'expired')),
    posted_units INTEGER CHECK (posted_units IS NULL OR (posted_units >= 0 AND posted_units <= amount_units)),
    created_at   TEXT NOT NULL,
    ended_at     TEXT
);
CREATE INDEX holds_pending ON holds(status, created_at) WHERE status = 'pending';

-- Every change to a budget account: one row per account touched.
CREATE TABLE ledger_entries (
    seq           INTEGER PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    account_id    TEXT NOT NULL,
    hold_id       TEXT NOT NULL REFERENCES holds(id),
    action        TEXT NOT NULL,
    kit_version   INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('hold', 'post', 'void', 'expire')),
    pending_delta INTEGER NOT NULL,
    posted_delta  INTEGER NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX ledger_account ON ledger_entries(tenant_id, account_id, seq);

-- The first response to each (subject, Idempotency-Key): a repeat returns it unchanged.
CREATE TABLE idempotency (
    profile_id      TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_digest  TEXT NOT NULL,
    status          INTEGER NOT NULL,
    response        TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (profile_id, idempotency_key)
);
-- In-flight claims hold their hold id in `response` until the call settles.
CREATE INDEX idempotency_claims ON idempotency(response) WHERE status = 0;

-- Identical refused calls (same subject, action and argument digest).
CREATE TABLE refusal_repeats (
    profile_id  TEXT NOT NULL,
    action      TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    count       INTEGER NOT NULL,
    last_at     TEXT NOT NULL,
    PRIMARY KEY (profile_id, action, args_digest)
);

CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    profile_id      TEXT NOT NULL REFERENCES agent_profiles(id),
    hold_id         TEXT REFERENCES holds(id),
    action          TEXT NOT NULL,
    args            TEXT NOT NULL,
    args_digest     TEXT NOT NULL,
    amount_units    INTEGER NOT NULL,
    kit_name        TEXT NOT NULL,
    kit_version     INTEGER NOT NULL,
    reason          TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    requested_at    TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    decided_by      TEXT,
    decided_at      TEXT,
    decision_reason TEXT,
    result          TEXT
);
CREATE INDEX approvals_status ON approvals(tenant_id, status, requested_at);
CREATE INDEX approvals_expiry ON approvals(expires_at) WHERE status = 'pending';

CREATE TABLE approval_trail (
    seq         INTEGER PRIMARY KEY,
    approval_id TEXT NOT NULL REFERENCES approvals(id),
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    step        TEXT NOT NULL,
    note        TEXT
);
CREATE INDEX approval_trail_by ON approval_trail(approval_id, seq);

CREATE TABLE writebacks (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    profile_id  TEXT NOT NULL REFERENCES agent_profiles(id),
    run_id      TEXT NOT NULL,
    source      TEXT NOT NULL,
    envelope    TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE INDEX writebacks_tenant ON writebacks(tenant_id, received_at);

CREATE TABLE proposals (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    writeback_id TEXT NOT NULL REFERENCES writebacks(id),
    run_id       TEXT NOT NULL,
    object_type  TEXT NOT NULL,
    content      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'parked', 'accepted', 'rejected')),
    approval_id  TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX proposals_filter ON proposals(tenant_id, status, object_type, run_id);

CREATE TABLE proposal_trail (
    seq         INTEGER PRIMARY KEY,
    proposal_id TEXT NOT NULL REFERENCES proposals(id),
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    step        TEXT NOT NULL,
    because     TEXT
);

CREATE TABLE beliefs (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    proposal_id TEXT NOT NULL UNIQUE REFERENCES proposals(id),
    object_type TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

-- The activity log: append-only, each entry hashing the previous one in its tenant's chain.
-- Rows are never deleted, so `seq` (the rowid) only ever increases: it is the event id.
CREATE TABLE activity (
    seq         INTEGER PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    profile_id  TEXT,
    kind        TEXT NOT NULL,
    action      TEXT,
    verdict     TEXT,
    amount_units INTEGER,
    kit_version INTEGER,
    detail      TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE INDEX activity_tenant ON activity(tenant_id, seq);
CREATE INDEX activity_profile ON activity(tenant_id, profile_id, seq);

CREATE TABLE chain_heads (
    tenant_id TEXT PRIMARY KEY,
    hash      TEXT NOT NULL
);

INSERT INTO budget_accounts (profile_id, tenant_id) SELECT id, tenant_id FROM agent_profiles;
