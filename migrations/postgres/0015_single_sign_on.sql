-- Single sign-on with the tenant's OpenID provider (docs/sso.md). One connection per tenant;
-- its client secret lives in the vault (`secret_name`), never here. An email domain leads to
-- at most one tenant. A console user signed in through the provider is bound to the
-- provider's (issuer, subject) in that tenant, never to an email. A sign-in in flight is a
-- row until its callback takes it (once), keyed by its `state`'s hash and bound to the
-- browser that started it.
CREATE TABLE sso_connections (
    tenant_id    TEXT PRIMARY KEY REFERENCES tenants(id),
    issuer       TEXT NOT NULL,
    client_id    TEXT NOT NULL,
    secret_name  TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    groups_claim TEXT NOT NULL,
    mapping      TEXT NOT NULL,
    default_role TEXT,
    create_users BIGINT NOT NULL,
    required     BIGINT NOT NULL,
    break_glass  TEXT,
    updated_at   TEXT NOT NULL
);

CREATE TABLE sso_domains (
    domain    TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id)
);
CREATE INDEX sso_domains_tenant ON sso_domains(tenant_id);

CREATE TABLE user_identities (
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    issuer       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    user_id      TEXT NOT NULL REFERENCES console_users(id),
    email        TEXT,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, issuer, subject)
);
CREATE INDEX user_identities_user ON user_identities(user_id);

CREATE TABLE sso_logins (
    state_hash   TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    browser_hash TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    next         TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE INDEX sso_logins_expiry ON sso_logins(expires_at);
