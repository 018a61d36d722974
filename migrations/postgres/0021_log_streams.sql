-- A tenant's log streams (docs/streams.md): where its activity log is sent as it grows. Each
-- stream is a cursor over the log: acked_seq is the newest entry its receiver acknowledged,
-- and the delivery worker that holds lease_owner until due_at sends what follows it. A
-- failing stream waits until due_at; retention deletes no entry a stream has not sent.
CREATE TABLE log_streams (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    kind          TEXT NOT NULL,
    url           TEXT NOT NULL,
    format        TEXT NOT NULL,
    secret_name   TEXT NOT NULL,
    max_entries   BIGINT NOT NULL,
    batch_entries BIGINT NOT NULL,
    acked_seq     BIGINT NOT NULL,
    acked_at      TEXT,
    sent          BIGINT NOT NULL DEFAULT 0,
    attempts      BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT,
    last_error_at TEXT,
    due_at        TEXT NOT NULL,
    lease_owner   TEXT,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX log_streams_due ON log_streams (due_at);
CREATE INDEX log_streams_by_tenant ON log_streams (tenant_id, id);
