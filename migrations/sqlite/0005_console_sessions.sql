-- Console sign-in: one row per signed-in browser. Only a hash of the session token is kept;
-- the token itself lives in the browser's HttpOnly cookie.
CREATE TABLE console_sessions (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES console_users(id),
    tenant_id  TEXT NOT NULL REFERENCES tenants(id),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions(expires_at);
