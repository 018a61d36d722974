-- A queued command cost a third more CPU than any other governed call (`make bench-outbox`),
-- and most of the difference was its outbox row's upkeep: the table, four indexes and, for
-- AUTOINCREMENT, a read and a rewrite of `sqlite_sequence` on every insert. This rebuild
-- drops two of those writes:
-- - `seq` is a plain INTEGER PRIMARY KEY. AUTOINCREMENT only differs when the row with the
--   largest `seq` is deleted, and outbox rows are never deleted, so `seq` still only grows.
-- - One index, unique on (tenant_id, channel, id), serves both what `UNIQUE (id)` and
--   `outbox_by_tenant (tenant_id, channel, seq)` served: a row by its id (every lookup names
--   the tenant) and a tenant's listing, newest first by id. Ids are UUIDv7 behind a prefix
--   fixed per channel (`cmd_`, `msg_`), so their order is their creation order.
-- Rows and `seq` values are copied unchanged.
CREATE TABLE outbox_rebuilt (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id),
    channel         TEXT NOT NULL,
    ordering_key    TEXT NOT NULL,
    kind            TEXT NOT NULL,
    author          TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    delivered_at    TEXT
);
INSERT INTO outbox_rebuilt (seq, id, tenant_id, channel, ordering_key, kind, author, payload, status,
                            attempts, next_attempt_at, lease_until, last_error, created_at, delivered_at)
    SELECT seq, id, tenant_id, channel, ordering_key, kind, author, payload, status,
           attempts, next_attempt_at, lease_until, last_error, created_at, delivered_at
    FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;
CREATE INDEX outbox_queued ON outbox (channel, seq) WHERE status = 'queued';
CREATE UNIQUE INDEX outbox_by_id ON outbox (tenant_id, channel, id);
-- Dead letters and rejections, for their listing; a row enters it only when it fails for good.
CREATE INDEX outbox_ended ON outbox (tenant_id, channel, status, id) WHERE status IN ('dead', 'rejected');
