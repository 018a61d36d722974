//! Slack approvals (docs/slack.md): a tenant's Slack app posts every parked call to the
//! tenant's channels, posts again when it escalates, and rewrites every message it posted for
//! an approval whenever the approval changes, so a message always says how the approval
//! stands: the approvals it has so far and, once it ended, how and by whom, with its buttons
//! gone.
//!
//! Guarantees:
//! - A message is queued in the transaction of the log entry that reports the change
//!   ([`on_entry`], run by `Gateway::write` for every entry a job appends), through the
//!   outbox, one queue per channel: a channel's posts and updates go out in order, are retried
//!   with backoff (a `429`'s `Retry-After` is respected) and end as dead letters after the
//!   attempt limit, as webhooks do.
//! - A message is rendered from the approval as it stands when it is sent ([`message`]), so a
//!   retried or late message never says what is no longer true.
//! - An agent's words reach Slack only as `plain_text`, which Slack does not read as markup.
//! - The bot token and the signing secret live in the vault ([`BOT_TOKEN`],
//!   [`SIGNING_SECRET`]); no answer shows them.

pub(crate) mod api;
pub mod interact;
pub(crate) mod message;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::audit::activity::{self, Entry, Kind, NewEntry, Transport, Verdict};
use crate::delivery::outbox::{self, NewRow};
use crate::error::{Error, Result};
use crate::ids::TenantId;
use crate::sql::Tx;
use crate::stored;

/// The outbox channel of Slack messages.
pub const CHANNEL: &str = crate::delivery::outbox::SLACK;
/// The vault secret holding the app's bot token (`xoxb-…`).
pub const BOT_TOKEN: &str = "slack-bot-token";
/// The vault secret holding the app's signing secret.
pub const SIGNING_SECRET: &str = "slack-signing-secret";
/// The most channels a tenant posts to.
pub const MAX_CHANNELS: usize = 10;
/// Slack's Web API, unless the operator points elsewhere (`--slack-api-url`).
pub const DEFAULT_API_URL: &str = "https://slack.com/api";

/// What an admin sets. The secrets are needed the first time; later, one left out stays as
/// it is.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SlackSettings {
    /// The app's bot token, `xoxb-…`; write-only.
    #[serde(default)]
    pub bot_token: Option<String>,
    /// The app's signing secret (Basic Information → App Credentials); write-only.
    #[serde(default)]
    pub signing_secret: Option<String>,
    /// The channel ids to post approvals to (`C…`, `G…`), at least one.
    pub channels: Vec<String>,
}

/// A tenant's Slack app as it is shown: never its secrets.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SlackApp {
    /// The workspace the bot token belongs to (from `auth.test`).
    pub team_id: String,
    pub team_name: String,
    /// The app's bot user.
    pub bot_user_id: String,
    pub channels: Vec<String>,
    /// The Request URL to set under the app's Interactivity & Shortcuts.
    pub interactions_url: String,
    /// The vault secrets holding its bot token and signing secret.
    pub bot_token_secret: String,
    pub signing_secret_name: String,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

/// One queued Slack message's delivery state.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SlackDelivery {
    pub message_id: String,
    /// The Slack channel it goes to.
    pub channel: String,
    /// `slack.post` (a new message) or `slack.update` (rewriting the ones posted).
    pub job: String,
    pub status: crate::delivery::outbox::DeliveryStatus,
    pub attempts: i64,
    /// The last failure's code: a transport failure, or Slack's own (`slack_channel_not_found`).
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// `text` as Slack's `mrkdwn` shows it literally: `&`, `<` and `>` escaped, so nothing in it
/// becomes a mention, a link or a channel.
pub fn escaped(text: &str) -> String {
    crate::delivery::webhooks::deliver::slack_escaped(text)
}

/// Who the bot token says it is (`auth.test`).
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    pub team_id: String,
    pub team_name: String,
    pub bot_user_id: String,
}

impl SlackSettings {
    /// Checks what an admin sets, before anything is called or written.
    pub(crate) fn check(&self) -> Result<()> {
        if self.channels.is_empty() || self.channels.len() > MAX_CHANNELS {
            return Err(Error::invalid(
                "invalid_slack_channels",
                format!("name between 1 and {MAX_CHANNELS} channel ids to post approvals to"),
            ));
        }
        let id = |c: &String| c.len() >= 2 && c.len() <= 32 && c.chars().all(|ch| ch.is_ascii_alphanumeric());
        if let Some(c) = self.channels.iter().find(|c| !id(c)) {
            return Err(Error::invalid(
                "invalid_slack_channel",
                format!("`{c}` is not a channel id: copy it from the channel's details in Slack (C…)"),
            ));
        }
        if let Some((i, c)) = self.channels.iter().enumerate().find(|(i, c)| self.channels[..*i].contains(c))
        {
            return Err(Error::invalid("duplicate_slack_channel", format!("`{c}` is named twice (at {i})")));
        }
        if self.bot_token.as_deref().is_some_and(|t| !t.starts_with("xoxb-") || t.len() > 256) {
            return Err(Error::invalid(
                "invalid_bot_token",
                "the bot token is the app's `xoxb-…` token (OAuth & Permissions → Bot User OAuth Token)",
            ));
        }
        if self.signing_secret.as_deref().is_some_and(|s| s.len() < 16 || s.len() > 256) {
            return Err(Error::invalid(
                "invalid_signing_secret",
                "the signing secret is the app's (Basic Information → App Credentials → Signing Secret)",
            ));
        }
        Ok(())
    }
}

const COLUMNS: &str = "team_id, team_name, bot_user_id, channels, updated_by, updated_at";

impl crate::sql::FromRow for SlackApp {
    fn from_row(r: &crate::sql::Row) -> ::store::Result<SlackApp> {
        Ok(SlackApp {
            team_id: r.get(0)?,
            team_name: r.get(1)?,
            bot_user_id: r.get(2)?,
            channels: stored::decode("Slack channels", &r.get::<String>(3)?)?,
            interactions_url: String::new(),
            bot_token_secret: BOT_TOKEN.into(),
            signing_secret_name: SIGNING_SECRET.into(),
            updated_by: r.get(4)?,
            updated_at: r.get(5)?,
        })
    }
}

/// The tenant's Slack app, if it has one; its Request URL under `public_url`.
pub(crate) async fn get(
    store: &crate::store::Store,
    tenant: &TenantId,
    public_url: &str,
) -> Result<Option<SlackApp>> {
    let sql = format!("SELECT {COLUMNS} FROM slack_apps WHERE tenant_id = ?");
    let app: Option<SlackApp> = store.opt(&sql, &[tenant]).await?;
    Ok(app.map(|a| SlackApp { interactions_url: interactions_url(public_url, tenant), ..a }))
}

/// Where the tenant's Slack app sends clicks and forms.
pub fn interactions_url(public_url: &str, tenant: &TenantId) -> String {
    format!("{}/slack/interactions/{tenant}", public_url.trim_end_matches('/'))
}

/// Sets the tenant's app (its secrets are put in the vault by the caller, in this
/// transaction); the first time, both secrets must be given. An app of another workspace than
/// before forgets every Slack link: its users are other people.
pub(crate) fn put_in(
    c: &dyn Tx,
    t: &TenantId,
    s: &SlackSettings,
    w: &Workspace,
    by: &str,
    via: Transport,
) -> Result<()> {
    activity::lock_tenant(c, t)?;
    let had: Option<String> = match c.row("SELECT team_id FROM slack_apps WHERE tenant_id = ?", &[t])? {
        Some(r) => Some(r.get(0)?),
        None => None,
    };
    if had.as_deref().is_some_and(|team| team != w.team_id) {
        crate::domain::slack_links::forget_all_in(c, t)?;
    }
    if had.is_none() && (s.bot_token.is_none() || s.signing_secret.is_none()) {
        return Err(Error::invalid(
            "slack_secrets_needed",
            "give the app's bot token (`bot_token`) and signing secret (`signing_secret`)",
        ));
    }
    let channels = serde_json::to_string(&s.channels).expect("strings serialize");
    c.exec("DELETE FROM slack_apps WHERE tenant_id = ?", &[t])?;
    c.exec(
        &format!("INSERT INTO slack_apps (tenant_id, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"),
        &[t, &w.team_id, &w.team_name, &w.bot_user_id, &channels, &by, &Utc::now()],
    )?;
    activity::append(
        c,
        NewEntry::new(t, by, Kind::Connector)
            .via(via)
            .verdict(Verdict::SlackConnected)
            .detail(json!({ "team_id": w.team_id, "team_name": w.team_name, "channels": s.channels })),
    )?;
    Ok(())
}

/// Removes the tenant's app and its secrets, and every Slack link; its queued messages end as
/// dead letters.
pub(crate) fn delete_in(c: &dyn Tx, t: &TenantId, by: &str, via: Transport) -> Result<()> {
    activity::lock_tenant(c, t)?;
    let Some(app) = c.row(&format!("SELECT {COLUMNS} FROM slack_apps WHERE tenant_id = ?"), &[t])? else {
        return Err(Error::NotFound { what: "Slack app" });
    };
    let app: SlackApp = crate::sql::FromRow::from_row(&app)?;
    c.exec("DELETE FROM slack_apps WHERE tenant_id = ?", &[t])?;
    crate::domain::slack_links::forget_all_in(c, t)?;
    for name in [BOT_TOKEN, SIGNING_SECRET] {
        crate::domain::vault::delete_in(c, t, name, by, via)?;
    }
    for channel in &app.channels {
        outbox::queue::bury(c, t, CHANNEL, channel, "slack_app_removed")?;
    }
    activity::append(
        c,
        NewEntry::new(t, by, Kind::Connector)
            .via(via)
            .verdict(Verdict::SlackRemoved)
            .detail(json!({ "team_id": app.team_id })),
    )?;
    Ok(())
}

/// What a queued Slack row asks: post a new message for the approval, or rewrite the ones
/// posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Job {
    Post,
    Update,
}

impl Job {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Job::Post => "slack.post",
            Job::Update => "slack.update",
        }
    }
    pub(crate) fn parse(kind: &str) -> Option<Job> {
        [Job::Post, Job::Update].into_iter().find(|j| j.as_str() == kind)
    }
}

/// What an entry asks of the approval's messages: a park or an escalation posts, every other
/// change of an approval rewrites.
fn job_of(e: &Entry) -> Option<(Job, &str)> {
    let id = e.detail["approval_id"].as_str()?;
    match (e.kind, e.verdict?) {
        (Kind::Park, Verdict::Park) | (Kind::Approval, Verdict::Escalated) => Some((Job::Post, id)),
        (Kind::Approval, _) => Some((Job::Update, id)),
        _ => None,
    }
}

/// Queues what `e` asks of the tenant's Slack messages, one row per channel, in the
/// transaction that appends `e`; whether it queued any.
pub(crate) fn on_entry(c: &dyn Tx, e: &Entry) -> Result<bool> {
    let Some((job, approval)) = job_of(e) else { return Ok(false) };
    let Some(row) = c.row("SELECT channels FROM slack_apps WHERE tenant_id = ?", &[&e.tenant_id])? else {
        return Ok(false);
    };
    let mut queued = false;
    let channels: Vec<String> = stored::decode("Slack channels", &row.get::<String>(0)?)?;
    let payload = json!({ "approval_id": approval, "job": job.as_str() }).to_string();
    for channel in &channels {
        let id = format!("slk_{}", uuid::Uuid::now_v7().simple());
        let row = NewRow {
            id: &id,
            channel: CHANNEL,
            destination: channel,
            key: channel,
            kind: job.as_str(),
            author: e.actor.as_str(),
            payload: &payload,
        };
        // A full channel never fails the approval: the message is kept as a dead letter.
        if outbox::insert(c, &e.tenant_id, &row, outbox::MAX_QUEUED)?.is_err() {
            outbox::insert_dead(c, &e.tenant_id, &row)?;
        } else {
            queued = true;
        }
    }
    Ok(queued)
}

/// What a queued row asks, and of which approval.
pub(crate) fn job_in(payload: &str) -> ::store::Result<(Job, String)> {
    let v: Value = stored::json("Slack message's payload", payload)?;
    let job = v["job"].as_str().and_then(Job::parse);
    match (job, v["approval_id"].as_str()) {
        (Some(job), Some(id)) => Ok((job, id.to_string())),
        _ => Err(stored::corrupt("Slack message's payload", payload)),
    }
}

/// Records a message posted for an approval, so later changes rewrite it.
pub(crate) fn posted_in(c: &dyn Tx, t: &TenantId, approval: &str, channel: &str, ts: &str) -> Result<()> {
    c.exec(
        "INSERT INTO slack_messages (tenant_id, approval_id, channel, ts, posted_at) VALUES (?, ?, ?, ?, ?)",
        &[t, &approval, &channel, &ts, &Utc::now()],
    )?;
    Ok(())
}

/// The messages posted for an approval in a channel, oldest first.
pub(crate) async fn posted(
    store: &crate::store::Store,
    t: &TenantId,
    approval: &str,
    channel: &str,
) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = store
        .all(
            "SELECT ts FROM slack_messages WHERE tenant_id = ? AND approval_id = ? AND channel = ? ORDER BY posted_at, ts",
            &[t, &approval, &channel],
        )
        .await?;
    Ok(rows.into_iter().map(|(ts,)| ts).collect())
}
