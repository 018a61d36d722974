-- Idempotency-Key for every mutating /v1 route other than governed actions (which keep their
-- own claims in `idempotency`, inside the pipeline's transaction). One row per credential and
-- key: in progress while status = 0, then the first response, replayed to any resend.
CREATE TABLE request_idempotency (
    scope          TEXT NOT NULL,
    idem_key       TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    status         INTEGER NOT NULL,
    headers        TEXT NOT NULL DEFAULT '[]',
    body           BLOB NOT NULL DEFAULT x'',
    created_at     TEXT NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX request_idempotency_age ON request_idempotency(created_at);
