-- Personal API tokens: a console user's own credential for deciding over HTTP. Only a hash of
-- the token is kept; `roles` is the subset of the user's roles the token was given.
CREATE TABLE user_tokens (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    user_id      TEXT NOT NULL REFERENCES console_users(id),
    label        TEXT NOT NULL,
    prefix       TEXT NOT NULL UNIQUE,
    secret_hash  TEXT NOT NULL,
    roles        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT
);
CREATE INDEX user_tokens_user ON user_tokens(tenant_id, user_id);

-- Company keys rotate like agent keys: the old one works until `expires_at`, if given.
ALTER TABLE company_keys ADD COLUMN expires_at TEXT;
ALTER TABLE company_keys ADD COLUMN replaced_by TEXT;

-- Which credential a human decided with (the console session, or a token by id).
ALTER TABLE approval_trail ADD COLUMN credential TEXT;
ALTER TABLE proposal_trail ADD COLUMN credential TEXT;

-- The sweeper finds the approval that keeps or released a hold.
CREATE INDEX approvals_hold ON approvals(hold_id);
