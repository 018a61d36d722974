-- A new secret waiting for the console page that shows it once, on whichever instance that
-- page's request reaches. Sealed with a key derived from the issuing browser's session token,
-- which the database never holds (only its SHA-256, here and in console_sessions): a copy of
-- the database opens none of them. Taken (and so deleted) by the first page that shows it;
-- the sweeper deletes what is left unclaimed.
CREATE TABLE secret_handovers (
    session_hash TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    sealed       BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (session_hash, item_id)
);
