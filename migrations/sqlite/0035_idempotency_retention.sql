-- A governed call's stored answer to its Idempotency-Key is kept for 24 hours, as every other
-- stored response (docs/api.md): the sweeper deletes older answered claims in created_at
-- order, in bounded chunks (gateway/src/domain/reserve/claims.rs).
CREATE INDEX idempotency_created ON idempotency (created_at);
