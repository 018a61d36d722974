-- An Idempotency-Key's call still in flight (status 0) named its hold in `response`, the
-- column that otherwise holds the first answer's JSON. Each now has its own column: `response`
-- is the answer once there is one, `hold_id` the hold while the call runs, and a check says
-- that a row holds exactly one of them. SQLite cannot drop a NOT NULL, so the table is rebuilt.
CREATE TABLE idempotency_rebuilt (
    profile_id      TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_digest  TEXT NOT NULL,
    status          INTEGER NOT NULL,
    response        TEXT,
    hold_id         TEXT,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (profile_id, idempotency_key),
    CHECK ((status = 0 AND hold_id IS NOT NULL AND response IS NULL)
        OR (status <> 0 AND hold_id IS NULL AND response IS NOT NULL))
);
INSERT INTO idempotency_rebuilt (profile_id, idempotency_key, request_digest, status, response, hold_id, created_at)
SELECT profile_id, idempotency_key, request_digest, status,
       CASE WHEN status = 0 THEN NULL ELSE response END,
       CASE WHEN status = 0 THEN response END,
       created_at
FROM idempotency;
DROP TABLE idempotency;
ALTER TABLE idempotency_rebuilt RENAME TO idempotency;
-- A settle finds its call's claim by hold.
CREATE INDEX idempotency_claims ON idempotency(hold_id) WHERE status = 0;
