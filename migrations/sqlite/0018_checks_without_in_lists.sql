-- SQLite compiles `CHECK (x IN ('a', 'b', 'c', 'd'))` into a temporary B-tree that it builds
-- and drops again on every INSERT of the row (and every UPDATE of the column): `EXPLAIN` shows
-- an `OpenEphemeral` in each. Every charged action writes a hold and a ledger entry, so that
-- was 7-8 % of a governed call's CPU (perf, `make bench-outbox`). The same constraints spelled
-- as comparisons joined by OR admit exactly the same values and compile to plain comparisons.
--
-- A CHECK cannot be altered in place, so both tables are rebuilt the way SQLite documents
-- (https://www.sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema
-- Changes"): copy, drop, rename, the index back, in the migration's transaction, with foreign
-- key enforcement off while migrations run and `foreign_key_check` after them (`Store::open`).
-- Rows, `seq` values and ids are copied unchanged, so every reference to a hold still resolves.
CREATE TABLE holds_rebuilt (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id),
    profile_id   TEXT NOT NULL REFERENCES agent_profiles(id),
    -- the accounts the hold reserved on: the profile, then each ancestor (comma-separated)
    chain        TEXT NOT NULL,
    action       TEXT NOT NULL,
    -- the whole cost held against the caps, and its platform-credit part
    amount_units INTEGER NOT NULL CHECK (amount_units >= 0),
    credit_units INTEGER NOT NULL CHECK (credit_units >= 0),
    kit_version  INTEGER NOT NULL,
    status       TEXT NOT NULL
                 CHECK (status = 'pending' OR status = 'posted' OR status = 'voided' OR status = 'expired'),
    posted_units INTEGER CHECK (posted_units IS NULL OR (posted_units >= 0 AND posted_units <= amount_units)),
    created_at   TEXT NOT NULL,
    ended_at     TEXT,
    -- the instance whose call the hold waits on, and until when (0010_hold_leases.sql)
    lease_owner  TEXT,
    lease_until  TEXT
);
INSERT INTO holds_rebuilt (id, tenant_id, profile_id, chain, action, amount_units, credit_units,
                           kit_version, status, posted_units, created_at, ended_at, lease_owner, lease_until)
    SELECT id, tenant_id, profile_id, chain, action, amount_units, credit_units,
           kit_version, status, posted_units, created_at, ended_at, lease_owner, lease_until
    FROM holds;
DROP TABLE holds;
ALTER TABLE holds_rebuilt RENAME TO holds;
CREATE INDEX holds_pending ON holds(status, created_at) WHERE status = 'pending';

CREATE TABLE ledger_entries_rebuilt (
    seq           INTEGER PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    account_id    TEXT NOT NULL,
    hold_id       TEXT NOT NULL REFERENCES holds(id),
    action        TEXT NOT NULL,
    kit_version   INTEGER NOT NULL,
    kind          TEXT NOT NULL CHECK (kind = 'hold' OR kind = 'post' OR kind = 'void' OR kind = 'expire'),
    pending_delta INTEGER NOT NULL,
    posted_delta  INTEGER NOT NULL,
    created_at    TEXT NOT NULL
);
INSERT INTO ledger_entries_rebuilt (seq, tenant_id, account_id, hold_id, action, kit_version, kind,
                                    pending_delta, posted_delta, created_at)
    SELECT seq, tenant_id, account_id, hold_id, action, kit_version, kind,
           pending_delta, posted_delta, created_at
    FROM ledger_entries;
DROP TABLE ledger_entries;
ALTER TABLE ledger_entries_rebuilt RENAME TO ledger_entries;
-- (its account index lives in the deferred index database since 0003_deferred_indexes.sql)

