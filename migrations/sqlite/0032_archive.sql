-- The log's archive (docs/archive.md): each closed range of a tenant's log written to the
-- object store, and the claim of the instance writing one. A range is archived once
-- archived_at is set; until then claimed_by holds it until lease_until.
CREATE TABLE archive_ranges (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    day         TEXT NOT NULL,
    entries     INTEGER NOT NULL,
    prev_hash   TEXT NOT NULL,
    last_hash   TEXT NOT NULL,
    claimed_by  TEXT NOT NULL,
    lease_until TEXT NOT NULL,
    archived_at TEXT,
    PRIMARY KEY (tenant_id, first_seq)
);
