-- Per-profile lookups of the activity log and the ledger move out of the write path.
--
-- An index keyed by profile takes its inserts at one place per profile, so with many agents
-- acting at once every commit dirtied one leaf page per agent per index, and the writer spent
-- a third of its time writing those pages. The same (profile, seq) pairs now live in a
-- derived index database beside this one, filled in batches by its own thread (see
-- gateway/src/deferred.rs).
DROP INDEX activity_profile;
DROP INDEX ledger_account;

-- A tenant's chain head is its newest entry's hash, read through `activity_tenant`; the
-- writer keeps it in memory, so this table only cost a write per entry.
DROP TABLE chain_heads;
