-- Approvals for teams (docs/architecture.md#approvals): what releasing a parked call takes.
-- `required` distinct people approve; when need_role or need_group is set, one of them holds
-- that role or is in that group (or, once escalated, the fallback's). escalate_at is when the
-- approvers are notified again, escalated_at when that happened (at most once).
ALTER TABLE approvals ADD COLUMN required INTEGER NOT NULL DEFAULT 1 CHECK (required BETWEEN 1 AND 10);
ALTER TABLE approvals ADD COLUMN need_role TEXT;
ALTER TABLE approvals ADD COLUMN need_group TEXT;
ALTER TABLE approvals ADD COLUMN rule_index INTEGER;
ALTER TABLE approvals ADD COLUMN escalate_at TEXT;
ALTER TABLE approvals ADD COLUMN escalated_at TEXT;
ALTER TABLE approvals ADD COLUMN fallback_role TEXT;
ALTER TABLE approvals ADD COLUMN fallback_group TEXT;
-- The agent's own words on why it asks: plain text, shown, never rendered as HTML.
ALTER TABLE approvals ADD COLUMN justification TEXT;
CREATE INDEX approvals_escalation ON approvals(escalate_at) WHERE status = 'pending' AND escalated_at IS NULL;
-- One vote per person per approval, whatever credential they used.
CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL REFERENCES approvals(id),
    user_id     TEXT NOT NULL,
    username    TEXT NOT NULL,
    credential  TEXT NOT NULL,
    at          TEXT NOT NULL,
    note        TEXT,
    -- Whether this voter met the approval's named role or group.
    named       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (approval_id, user_id)
);
-- Named groups of console users, for approval rules.
CREATE TABLE user_groups (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id),
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE TABLE group_members (
    tenant_id  TEXT NOT NULL,
    group_name TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES console_users(id),
    PRIMARY KEY (tenant_id, group_name, user_id),
    FOREIGN KEY (tenant_id, group_name) REFERENCES user_groups(tenant_id, name)
);
CREATE INDEX group_members_user ON group_members(user_id);
