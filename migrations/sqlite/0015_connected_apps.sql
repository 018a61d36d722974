-- A tenant's connected apps (gateway/src/connectors/apps.rs): upstream MCP servers, each
-- registered under a toolkit name, whose tools the `connections` primitive lists and calls.
-- `spec` is the app's JSON (url, timeout_ms, auth); `secret_name` is the vault secret it
-- names, so a secret in use cannot be deleted.
CREATE TABLE connected_apps (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    toolkit     TEXT NOT NULL,
    spec        TEXT NOT NULL,
    secret_name TEXT,
    updated_by  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, toolkit)
);
CREATE INDEX connected_apps_by_secret ON connected_apps (tenant_id, secret_name);
