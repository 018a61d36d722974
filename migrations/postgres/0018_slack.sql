-- A tenant's Slack app (docs/slack.md): the channels its approvals are posted to, and the
-- workspace its bot token belongs to. The bot token and the signing secret are in the vault
-- (`slack-bot-token`, `slack-signing-secret`), never here.
CREATE TABLE slack_apps (
    tenant_id   TEXT PRIMARY KEY REFERENCES tenants(id),
    team_id     TEXT NOT NULL,
    team_name   TEXT NOT NULL,
    bot_user_id TEXT NOT NULL,
    channels    TEXT NOT NULL,
    updated_by  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- Every message posted for an approval, so each can be updated when the approval ends.
CREATE TABLE slack_messages (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    approval_id TEXT NOT NULL,
    channel     TEXT NOT NULL,
    ts          TEXT NOT NULL,
    posted_at   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, channel, ts)
);
CREATE INDEX slack_messages_approval ON slack_messages(tenant_id, approval_id);
