-- Ledger retention (gateway/src/domain/ledger/retention.rs). Under a tenant's retention the
-- ledger entries of ended holds are deleted in seq order once their day is gone from the log
-- too; what they moved is carried here per account and tenant-local day, so an account's
-- entries plus its carried sums still equal its running totals and its day totals.
CREATE TABLE ledger_carried (
    account_id    TEXT NOT NULL,
    -- the holds' tenant-local day ('' for holds from before periods)
    day           TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    posted_units  INTEGER NOT NULL,
    pending_units INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)
);
-- How far each tenant's ledger has been swept: every entry of the tenant at or below
-- through_seq whose hold had ended when the sweep passed is deleted and carried.
CREATE TABLE ledger_cuts (
    tenant_id   TEXT PRIMARY KEY,
    through_seq INTEGER NOT NULL
);
