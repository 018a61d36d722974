-- The derived per-profile index database (gateway/src/deferred.rs), attached as `idx` to
-- every SQLite connection. Created when the store opens; rebuilt from the main database when
-- lost or ahead of it, so it has no migrations of its own.
CREATE TABLE IF NOT EXISTS profile_numbers (
    no         INTEGER PRIMARY KEY,
    profile_id TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS activity_by_profile (
    profile_no INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (profile_no, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_by_account (
    account_no INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (account_no, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spend_by_day (
    account_no   INTEGER NOT NULL,
    day          TEXT NOT NULL,
    posted_units INTEGER NOT NULL,
    PRIMARY KEY (account_no, day)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_days (
    account_no INTEGER NOT NULL,
    day        TEXT NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    PRIMARY KEY (account_no, day)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS index_marks (
    name TEXT PRIMARY KEY CHECK (name IN ('activity', 'ledger')),
    seq  INTEGER NOT NULL
);
INSERT OR IGNORE INTO index_marks (name, seq) VALUES ('activity', 0), ('ledger', 0);
-- How far retention had cut the log and the ledger (the sum of every tenant's checkpoint and
-- ledger cut, which only grows) when the indexer last dropped the pairs of deleted entries
-- (store/src/profile_index.rs).
CREATE TABLE IF NOT EXISTS prune_marks (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    checkpoints INTEGER NOT NULL
);
INSERT OR IGNORE INTO prune_marks (id, checkpoints) VALUES (1, 0);
