-- Replay and shadow (docs/architecture.md#replay-and-shadow).
-- What the decision engine read to decide a governed call, as JSON: the action's
-- policy-relevant arguments (amount, recipient, merchant, toolkit and tool, effect), the
-- profile chain, the budget, period and rate state, and the decision. Set on the entry that
-- records the call; covered by the entry's hash. NULL for every other entry.
ALTER TABLE activity ADD COLUMN inputs TEXT;
-- The inputs of a call carried out outside the deciding job, until the job that settles its
-- hold moves them onto the call's entry.
CREATE TABLE pending_inputs (
    hold_id TEXT PRIMARY KEY REFERENCES holds(id),
    inputs  TEXT NOT NULL
);
-- At most one draft per kit decides beside the live kit, without effect.
CREATE TABLE kit_shadows (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id),
    kit_name   TEXT NOT NULL,
    document   TEXT NOT NULL,
    based_on   BIGINT NOT NULL,
    -- The log entry that started it: its differences and totals are those after it.
    after_seq  BIGINT NOT NULL,
    started_by TEXT NOT NULL,
    started_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, kit_name)
);
