-- An Idempotency-Key's call still in flight (status 0) named its hold in `response`, the
-- column that otherwise holds the first answer's JSON. Each now has its own column: `response`
-- is the answer once there is one, `hold_id` the hold while the call runs, and a check says
-- that a row holds exactly one of them.
ALTER TABLE idempotency ADD COLUMN hold_id TEXT;
ALTER TABLE idempotency ALTER COLUMN response DROP NOT NULL;
UPDATE idempotency SET hold_id = response, response = NULL WHERE status = 0;
ALTER TABLE idempotency ADD CONSTRAINT idempotency_answer_or_hold CHECK (
    (status = 0 AND hold_id IS NOT NULL AND response IS NULL)
    OR (status <> 0 AND hold_id IS NULL AND response IS NOT NULL));
DROP INDEX idempotency_claims;
-- A settle finds its call's claim by hold.
CREATE INDEX idempotency_claims ON idempotency(hold_id) WHERE status = 0;
