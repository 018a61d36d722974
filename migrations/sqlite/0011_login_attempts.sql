-- Sign-in attempts per username in the current window, counted in the database so every
-- instance on it enforces one limit.
CREATE TABLE login_attempts (
    username     TEXT PRIMARY KEY,
    attempts     INTEGER NOT NULL CHECK (attempts >= 0),
    window_start TEXT NOT NULL
);
