//! The Slack message of an approval, rendered from the approval as it stands: what the agent
//! asks, its reason, what releasing it takes and who approved so far, when it expires, and
//! either its Approve and Deny buttons (while it waits) or how it ended and who decided; and
//! the form a Deny click opens, asking the reason.
//!
//! Our own words are `mrkdwn` with `&`, `<` and `>` escaped, so no name becomes a mention or a
//! link; the agent's words are `plain_text` only ([`slack_plain`]).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::delivery::slack::interact::{APPROVE, DENY, REASON};
use crate::delivery::webhooks::deliver::{slack_escaped, slack_plain};
use crate::domain::approvals::{Approval, ApprovalStatus};

/// `{text, blocks}` for `chat.postMessage` and `chat.update`.
pub(crate) fn render(a: &Approval, agent: &str, public_url: &str) -> Value {
    let link = format!("{}/?approval={}", public_url.trim_end_matches('/'), a.id);
    let asks = format!("{} asks to run {}{}", slack_escaped(agent), a.action, amount(a));
    let headline = format!("*{}*", slack_escaped(&asks));
    let mut blocks = vec![json!({ "type": "section", "text": { "type": "mrkdwn", "text": headline } })];
    if let Some(why) = &a.justification {
        let said = format!("The agent's reason: \"{}\"", slack_plain(why));
        blocks.push(json!({ "type": "context", "elements": [{ "type": "plain_text", "text": said, "emoji": false }] }));
    }
    blocks.push(json!({ "type": "section", "fields": [
        { "type": "mrkdwn", "text": format!("*Needs*\n{}", slack_escaped(&needs(a))) },
        { "type": "mrkdwn", "text": format!("*Expires*\n{}", when(a.expires_at)) },
    ] }));
    blocks.push(match a.status {
        ApprovalStatus::Pending => buttons(&a.id, &link),
        _ => json!({ "type": "section", "text": { "type": "mrkdwn",
            "text": format!("{} <{link}|Open in the console>", slack_escaped(&ended(a))) } }),
    });
    let text = match a.status {
        ApprovalStatus::Pending => format!("{asks}: it waits for approval"),
        _ => format!("{asks}: {}", ended(a)),
    };
    json!({ "text": slack_escaped(&text), "blocks": blocks })
}

fn amount(a: &Approval) -> String {
    if a.amount.is_zero() { String::new() } else { format!(" of {}", a.amount) }
}

/// "needs 2, one of them with role finance; approved by carol".
pub(crate) fn needs(a: &Approval) -> String {
    let q = &a.quorum;
    let mut s = format!("{} approver{}", q.required, if q.required == 1 { "" } else { "s" });
    if q.names_someone() {
        s.push_str(&format!(", one of them {}", q.named_words()));
    }
    let by: Vec<&str> = q.votes.iter().map(|v| v.username.as_str()).collect();
    if !by.is_empty() {
        s.push_str(&format!("; approved by {}", by.join(", ")));
    }
    s
}

/// How the approval ended, and who decided.
pub(crate) fn ended(a: &Approval) -> String {
    let by = a.decided_by.as_deref().unwrap_or("someone");
    let why = a.decision_reason.as_deref().filter(|r| !r.is_empty());
    match (a.status, why) {
        (ApprovalStatus::Approved, _) if refused(a) => {
            format!(
                "Approved by {by}, then refused when it ran again: {}",
                why.unwrap_or("the rules changed")
            )
        }
        (ApprovalStatus::Approved, _) => format!("Approved by {by}"),
        (ApprovalStatus::Denied, Some(r)) => format!("Denied by {by}: {r}"),
        (ApprovalStatus::Denied, None) => format!("Denied by {by}"),
        (ApprovalStatus::Expired, _) => "Expired without a decision: the call was refused".to_string(),
        (ApprovalStatus::Pending, _) => "Waiting".to_string(),
    }
}

/// Whether an approved call was refused when it ran again under today's kit and caps.
fn refused(a: &Approval) -> bool {
    a.result.as_ref().is_some_and(|r| r["decision"] == "deny" || r["status"] == "refused")
}

fn when(t: DateTime<Utc>) -> String {
    // Slack shows a date token in the reader's own time zone; the fallback text is UTC.
    format!("<!date^{}^{{date_short_pretty}} {{time}}|{} UTC>", t.timestamp(), t.format("%Y-%m-%d %H:%M"))
}

fn buttons(id: &str, link: &str) -> Value {
    json!({ "type": "actions", "block_id": "naive_decide", "elements": [
        { "type": "button", "action_id": APPROVE, "value": id, "style": "primary",
          "text": { "type": "plain_text", "text": "Approve" } },
        { "type": "button", "action_id": DENY, "value": id, "style": "danger",
          "text": { "type": "plain_text", "text": "Deny" } },
        { "type": "button", "action_id": "naive_open", "url": link,
          "text": { "type": "plain_text", "text": "Open in the console" } },
    ] })
}

/// The form a Deny click opens (`views.open`): the reason, required; the approval and the
/// channel ride along in `private_metadata`, which only this app reads back.
pub(crate) fn deny_form(a: &Approval, channel: &str) -> Value {
    let what = format!("Deny {}{}", a.action, amount(a));
    json!({
        "type": "modal",
        "callback_id": DENY,
        "private_metadata": json!({ "approval_id": a.id, "channel": channel }).to_string(),
        "title": { "type": "plain_text", "text": "Deny" },
        "submit": { "type": "plain_text", "text": "Deny" },
        "close": { "type": "plain_text", "text": "Cancel" },
        "blocks": [
            { "type": "section", "text": { "type": "plain_text", "text": what, "emoji": false } },
            { "type": "input", "block_id": REASON, "label": { "type": "plain_text", "text": "Why? The agent and the trail see it." },
              "element": { "type": "plain_text_input", "action_id": REASON, "multiline": true, "max_length": 500 } },
        ],
    })
}
