-- The log's archive (docs/archive.md): each closed range of a tenant's log written to the
-- object store, and the claim of the instance writing one. A range is archived once
-- archived_at is set; until then claimed_by holds it until lease_until.
CREATE TABLE archive_ranges (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    first_seq   BIGINT NOT NULL,
    last_seq    BIGINT NOT NULL,
    day         TEXT NOT NULL,
    entries     BIGINT NOT NULL,
    prev_hash   TEXT NOT NULL,
    last_hash   TEXT NOT NULL,
    claimed_by  TEXT NOT NULL,
    lease_until TEXT NOT NULL,
    archived_at TEXT,
    PRIMARY KEY (tenant_id, first_seq)
);

-- How many days a tenant's log entries stay in the database once archived; NULL keeps them.
ALTER TABLE tenants ADD COLUMN log_retention_days BIGINT;

-- Where a tenant's log continues from once its oldest entries were deleted after archiving:
-- the newest deleted entry's sequence number, hash and time. The chain's verification starts
-- from it, and the next entry of an emptied log links to it.
CREATE TABLE log_checkpoints (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),
    seq       BIGINT NOT NULL,
    hash      TEXT NOT NULL,
    at        TEXT NOT NULL
);
