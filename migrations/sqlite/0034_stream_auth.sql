-- How a log stream proves itself to its receiver (docs/streams.md): 'signed' (the Standard
-- Webhooks signature with a secret the gateway made) or 'token' (the receiver's own token,
-- given by the admin: `Authorization: Splunk <token>` for Splunk HEC, `Bearer <token>`
-- otherwise). Either is kept in the vault under secret_name.
ALTER TABLE log_streams ADD COLUMN auth TEXT NOT NULL DEFAULT 'signed';

-- Entries a stream skipped because its receiver refused them for good (a single entry it
-- answers 413 to): visible on the stream, sent again one at a time by an admin's retry.
CREATE TABLE log_stream_dead_letters (
    stream_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL REFERENCES tenants(id),
    seq       INTEGER NOT NULL,
    code      TEXT NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (stream_id, seq)
);
