-- The outbox keeps one index for a row by its id and a tenant's listing, as on SQLite
-- (migrations/sqlite/0019_outbox_two_indexes_fewer.sql): unique on (tenant_id, channel, id),
-- listings newest first by id. Ids are UUIDv7 behind a prefix fixed per channel, so their
-- order is their creation order.
ALTER TABLE outbox DROP CONSTRAINT outbox_id_key;
DROP INDEX outbox_by_tenant;
DROP INDEX outbox_ended;
CREATE UNIQUE INDEX outbox_by_id ON outbox (tenant_id, channel, id);
CREATE INDEX outbox_ended ON outbox (tenant_id, channel, status, id) WHERE status IN ('dead', 'rejected');
