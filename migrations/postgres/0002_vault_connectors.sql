-- The vault (gateway/src/vault.rs): tenants' provider credentials, encrypted at rest.
-- The master key never enters the database; its fingerprint does, so a gateway started with
-- another key refuses to start. Each tenant's data key is stored wrapped (XChaCha20-Poly1305
-- under the master key, bound to the tenant); each secret is sealed under its tenant's data
-- key, bound to the tenant and name. The fingerprint is a keyed hash, never the value.
CREATE TABLE vault_master (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE vault_keys (
    tenant_id  TEXT PRIMARY KEY REFERENCES tenants(id),
    wrapped    BYTEA NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE vault_secrets (
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    name         TEXT NOT NULL,
    sealed       BYTEA NOT NULL,
    fingerprint  TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    last_used_at TEXT,
    PRIMARY KEY (tenant_id, name)
);

-- Where a tenant's calls of a primitive (`cards`) or one action (`cards.charge`) are carried
-- out (gateway/src/connectors/config.rs). No row means the built-in sandbox. `spec` is the
-- connector's JSON; `secret_name` is the vault secret it names, so a secret in use cannot be
-- deleted.
CREATE TABLE connectors (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    target      TEXT NOT NULL,
    spec        TEXT NOT NULL,
    secret_name TEXT,
    updated_by  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, target)
);
CREATE INDEX connectors_by_secret ON connectors (tenant_id, secret_name);
