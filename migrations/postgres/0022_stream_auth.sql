-- How a log stream proves itself to its receiver (docs/streams.md): 'signed' (the Standard
-- Webhooks signature with a secret the gateway made) or 'token' (the receiver's own token,
-- given by the admin: `Authorization: Splunk <token>` for Splunk HEC, `Bearer <token>`
-- otherwise). Either is kept in the vault under secret_name.
ALTER TABLE log_streams ADD COLUMN auth TEXT NOT NULL DEFAULT 'signed';
