-- SCIM 2.0 provisioning (docs/sso.md#provisioning). A tenant has at most one SCIM token (only
-- its hash is kept). A provisioned user is a console user (`user_id`) with the document the
-- directory sent; a provisioned group is an approval group (`group_name`) with its document;
-- `scim_group_members` is who the directory put in each group.
CREATE TABLE scim_tokens (
    tenant_id  TEXT PRIMARY KEY REFERENCES tenants(id),
    prefix     TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE scim_users (
    user_id       TEXT PRIMARY KEY REFERENCES console_users(id),
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    user_name_key TEXT NOT NULL,
    external_id   TEXT,
    doc           TEXT NOT NULL,
    active        BIGINT NOT NULL,
    version       BIGINT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (tenant_id, user_name_key)
);
CREATE INDEX scim_users_page ON scim_users(tenant_id, created_at, user_id);
CREATE INDEX scim_users_external ON scim_users(tenant_id, external_id);

CREATE TABLE scim_groups (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    display_name TEXT NOT NULL,
    display_key TEXT NOT NULL,
    group_name  TEXT NOT NULL,
    doc         TEXT NOT NULL,
    version     BIGINT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (tenant_id, display_key)
);
CREATE INDEX scim_groups_page ON scim_groups(tenant_id, created_at, id);

CREATE TABLE scim_group_members (
    tenant_id TEXT NOT NULL REFERENCES tenants(id),
    group_id  TEXT NOT NULL REFERENCES scim_groups(id),
    user_id   TEXT NOT NULL REFERENCES console_users(id),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members(tenant_id, user_id);
