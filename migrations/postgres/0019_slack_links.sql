-- Who clicked in Slack (docs/slack.md): a Slack user linked, by themselves, to one console
-- user of the tenant, so a click on Approve or Deny is that person's vote.
CREATE TABLE slack_links (
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    slack_user_id TEXT NOT NULL,
    slack_name    TEXT NOT NULL,
    user_id       TEXT NOT NULL REFERENCES console_users(id),
    linked_at     TEXT NOT NULL,
    PRIMARY KEY (tenant_id, slack_user_id)
);
CREATE UNIQUE INDEX slack_links_user ON slack_links(tenant_id, user_id);

-- The single-use, short-lived links an unlinked clicker is sent, by their hash.
CREATE TABLE slack_link_codes (
    code_hash     TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id),
    slack_user_id TEXT NOT NULL,
    slack_name    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    used_at       TEXT
);

-- Signatures of the interaction requests accepted in the last minutes: one sent again is a
-- replay and is refused.
CREATE TABLE slack_requests (
    tenant_id TEXT NOT NULL REFERENCES tenants(id),
    signature TEXT NOT NULL,
    seen_at   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, signature)
);
