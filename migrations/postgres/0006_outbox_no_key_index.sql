-- The outbox's claim reads queued rows in seq order and blocks a key from its first waiting
-- row on (gateway/src/outbox/mod.rs, `claim`), so it no longer needs an index per key; that
-- index's upkeep, one insertion point per key, was most of what a queued command cost over
-- any other action.
DROP INDEX outbox_queued_by_key;
