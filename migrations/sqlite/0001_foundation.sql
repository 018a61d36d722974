-- Foundation: tenants, console users, company keys, versioned kits and agent profiles.
-- Every row belongs to exactly one tenant (SPEC §3). Money is INTEGER units of $0.0001.

CREATE TABLE tenants (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    credit_units INTEGER NOT NULL DEFAULT 0 CHECK (credit_units >= 0),
    created_at   TEXT NOT NULL
);

CREATE TABLE console_users (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    username      TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    -- comma-separated subset of admin, approver, reviewer, finance
    roles         TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX console_users_tenant ON console_users(tenant_id);

CREATE TABLE company_keys (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    prefix      TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at  TEXT
);
CREATE INDEX company_keys_tenant ON company_keys(tenant_id);

CREATE TABLE kits (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id),
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL CHECK (version >= 1),
    body       TEXT NOT NULL,
    author     TEXT NOT NULL,
    diff       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name, version)
);

CREATE TABLE agent_profiles (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id),
    name           TEXT NOT NULL,
    owner_user_id  TEXT REFERENCES console_users(id),
    parent_id      TEXT REFERENCES agent_profiles(id),
    kit_name       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('active', 'suspended', 'revoked')),
    runtime_state  TEXT NOT NULL CHECK (runtime_state IN ('running', 'stopped')),
    runtime_reason TEXT,
    created_at     TEXT NOT NULL,
    UNIQUE (tenant_id, name)
);
CREATE INDEX agent_profiles_parent ON agent_profiles(tenant_id, parent_id);
