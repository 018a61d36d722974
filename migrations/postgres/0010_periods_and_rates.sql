-- Limits over time (docs/architecture.md#periods-and-rate-limits).
-- A tenant's calendar is its IANA time zone; a change waits for the old zone's next midnight
-- (next_time_zone from time_zone_from). Its own call-rate limit, if it sets one.
ALTER TABLE tenants ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE tenants ADD COLUMN next_time_zone TEXT;
ALTER TABLE tenants ADD COLUMN time_zone_from TEXT;
ALTER TABLE tenants ADD COLUMN rate_calls BIGINT CHECK (rate_calls IS NULL OR rate_calls > 0);
ALTER TABLE tenants ADD COLUMN rate_per TEXT CHECK (rate_per IS NULL OR rate_per IN ('second', 'minute', 'hour'));
-- The tenant-local day a hold was reserved on: it counts toward that day's periods wherever
-- it settles. NULL for holds made before periods existed, which count toward no period.
ALTER TABLE holds ADD COLUMN day TEXT;
ALTER TABLE ledger_entries ADD COLUMN day TEXT;
-- Each account's totals per tenant-local day, moved with its running totals by the same
-- entries: a week or a month is the sum of its days.
CREATE TABLE budget_days (
    profile_id    TEXT NOT NULL,
    day           TEXT NOT NULL,
    posted_units  BIGINT NOT NULL DEFAULT 0 CHECK (posted_units >= 0),
    pending_units BIGINT NOT NULL DEFAULT 0 CHECK (pending_units >= 0),
    PRIMARY KEY (profile_id, day)
);
-- Calls counted per rate window: key is scope, unit and window number. Rows of windows that
-- have ended are swept.
CREATE TABLE rate_counts (
    tenant_id  TEXT NOT NULL,
    window_key TEXT NOT NULL,
    calls      BIGINT NOT NULL CHECK (calls > 0),
    ends_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, window_key)
);
CREATE INDEX rate_counts_ended ON rate_counts(ends_at);
