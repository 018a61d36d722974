-- Per-profile lookups of the activity log and the ledger, indexed in batches.
--
-- An index keyed by profile takes its inserts at one place per profile, so with many agents
-- acting at once every commit dirtied one leaf page per agent per index, and the writer spent
-- a third of its time writing those pages. These tables hold the same (profile, seq) pairs,
-- filled by the writer once a second in key order, so a page is written once per batch rather
-- than once per commit. Rows above a table's mark in `index_marks` are not indexed yet; reads
-- take them from the table itself (a short rowid range) and the index below the mark.
DROP INDEX activity_profile;
DROP INDEX ledger_account;

-- Small integer keys keep the index rows short: a profile's number, then the row's seq.
CREATE TABLE profile_numbers (
    no         INTEGER PRIMARY KEY,
    profile_id TEXT NOT NULL UNIQUE
);

CREATE TABLE activity_by_profile (
    profile_no INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (profile_no, seq)
) WITHOUT ROWID;

CREATE TABLE ledger_by_account (
    account_no INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (account_no, seq)
) WITHOUT ROWID;

-- The highest seq of each table that the index tables cover. Everything starts unindexed;
-- the writer indexes it on its first pass.
CREATE TABLE index_marks (
    name TEXT PRIMARY KEY CHECK (name IN ('activity', 'ledger')),
    seq  INTEGER NOT NULL
);
INSERT INTO index_marks (name, seq) VALUES ('activity', 0), ('ledger', 0);

-- A tenant's chain head is its newest entry's hash, read through `activity_tenant`; the
-- writer keeps it in memory, so this table only cost a write per entry.
DROP TABLE chain_heads;
