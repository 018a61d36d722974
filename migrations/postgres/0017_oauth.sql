-- MCP clients connected through OAuth 2.1 (docs/mcp.md#connecting-with-oauth). A connection
-- is one client acting as one agent profile, made when a person consents; it is established
-- when its code is exchanged. Its access tokens are rows of `agent_keys` carrying its id;
-- codes and refresh tokens are kept as hashes, each taken once (`used_at`).
CREATE TABLE oauth_connections (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants(id),
    profile_id     TEXT NOT NULL REFERENCES agent_profiles(id),
    client_id      TEXT NOT NULL,
    client_name    TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    connected_by   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    established_at TEXT,
    revoked_at     TEXT
);
CREATE INDEX oauth_connections_profile ON oauth_connections(tenant_id, profile_id);

CREATE TABLE oauth_codes (
    code_hash      TEXT PRIMARY KEY,
    connection_id  TEXT NOT NULL REFERENCES oauth_connections(id),
    code_challenge TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    used_at        TEXT
);

CREATE TABLE oauth_refresh_tokens (
    token_hash    TEXT PRIMARY KEY,
    connection_id TEXT NOT NULL REFERENCES oauth_connections(id),
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    used_at       TEXT
);
CREATE INDEX oauth_refresh_connection ON oauth_refresh_tokens(connection_id);

ALTER TABLE agent_keys ADD COLUMN connection_id TEXT REFERENCES oauth_connections(id);
CREATE INDEX agent_keys_connection ON agent_keys(connection_id) WHERE connection_id IS NOT NULL;

-- Clients that registered themselves (RFC 7591), accepted only by tenants that turned it on
-- (`oauth_settings.dynamic_clients`, off by default).
CREATE TABLE oauth_clients (
    client_id     TEXT PRIMARY KEY,
    client_name   TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    created_at    TEXT NOT NULL
);

CREATE TABLE oauth_settings (
    tenant_id       TEXT PRIMARY KEY REFERENCES tenants(id),
    dynamic_clients BIGINT NOT NULL DEFAULT 0
);

-- People an admin allowed to connect MCP clients besides the admins.
CREATE TABLE oauth_connectors (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id),
    user_id    TEXT NOT NULL REFERENCES console_users(id),
    allowed_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
