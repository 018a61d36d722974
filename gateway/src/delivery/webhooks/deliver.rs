//! Sending webhook messages: rendering a body in the endpoint's format, signing it, and
//! recording what the endpoint answered.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::Format;
use crate::delivery::egress::{EGRESS_REFUSED, Egress, Failed, failed};

/// How long an endpoint may take to answer.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// How a message proves where it came from.
pub(crate) enum Auth<'a> {
    /// Signed the Standard Webhooks way with this `whsec_` secret.
    Sign(&'a str),
    /// The receiver's own credential, sent as this `Authorization` header's value.
    Authorization(String),
}

/// A message to POST, signed the Standard Webhooks way or with the receiver's credential: `id`
/// is its `webhook-id` (the same on every retry), `prefix` names its failures
/// (`<prefix>_timeout`, `<prefix>_unreachable`).
pub(crate) struct Signed<'a> {
    pub url: &'a str,
    pub auth: Auth<'a>,
    pub id: &'a str,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub prefix: &'static str,
}

/// POSTs `body` as `m` says, through the egress guard: the answer, or a stable code when
/// there was none (`egress_refused` for an address the guard refuses).
pub(crate) async fn signed_post(
    egress: &Egress,
    m: Signed<'_>,
    body: Vec<u8>,
) -> std::result::Result<reqwest::Response, String> {
    let url = url::Url::parse(m.url).map_err(|_| format!("{}_bad_url", m.prefix))?;
    egress.check_url(&url).map_err(|_| EGRESS_REFUSED.to_string())?;
    let t = chrono::Utc::now().timestamp();
    let mut req = crate::audit::trace::carried(egress.client().post(url))
        .timeout(TIMEOUT)
        .header(reqwest::header::CONTENT_TYPE, m.content_type)
        .header("webhook-id", m.id)
        .header("webhook-timestamp", t.to_string());
    req = match m.auth {
        Auth::Sign(secret) => req.header("webhook-signature", super::sign(secret, m.id, t, &body)),
        Auth::Authorization(value) => req.header(reqwest::header::AUTHORIZATION, value),
    };
    for (name, value) in m.headers {
        req = req.header(name, value);
    }
    req.body(body).send().await.map_err(|err| match failed(&err) {
        Failed::Refused => EGRESS_REFUSED.to_string(),
        Failed::Timeout => format!("{}_timeout", m.prefix),
        Failed::Unreachable => format!("{}_unreachable", m.prefix),
    })
}

/// What an endpoint answered a test event.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookProbe {
    pub ok: bool,
    pub status: Option<u16>,
    pub latency_ms: u64,
    /// The start of the body it answered, or why there was none.
    pub answer: String,
}

/// Where a message's event can be seen on the console.
fn link(public_url: &str, event: &str, data: &Value) -> String {
    let base = public_url.trim_end_matches('/');
    match (event, data["approval_id"].as_str()) {
        (e, Some(id)) if e.starts_with("approval.") || e == "budget.soft_cap_crossed" => {
            format!("{base}/?approval={id}")
        }
        ("proposal.created", _) => format!("{base}/proposals"),
        _ => format!("{base}/activity"),
    }
}

/// The body an endpoint receives for a queued payload (`{type, timestamp, data}`);
/// `corrupt_row` for a payload that does not read back.
pub(crate) fn render(format: Format, payload: &str, public_url: &str) -> ::store::Result<Vec<u8>> {
    let mut v = crate::stored::json("message's payload", payload)?;
    let event = v["type"].as_str().unwrap_or_default().to_string();
    let url = link(public_url, &event, &v["data"]);
    v["data"]["link"] = json!(url);
    let body = match format {
        Format::Standard => v,
        Format::Slack => slack(&event, &v["data"], &url),
    };
    Ok(serde_json::to_vec(&body).expect("JSON serializes"))
}

/// A Slack message: our own line (mrkdwn, ending in the link) as the notification text and
/// first block; an agent's words only in a `plain_text` block after it, which Slack never
/// reads as markup ([`slack_plain`]).
fn slack(event: &str, d: &Value, url: &str) -> Value {
    let line = summary(event, d, url);
    let mut blocks = vec![json!({ "type": "section", "text": { "type": "mrkdwn", "text": line } })];
    if let ("approval.parked", Some(why)) = (event, d["justification"].as_str()) {
        let said = format!("The agent's reason: \"{}\"", slack_plain(why));
        blocks.push(json!({ "type": "context", "elements": [{ "type": "plain_text", "text": said, "emoji": false }] }));
    }
    json!({ "text": line, "blocks": blocks })
}

/// What we put in a mrkdwn line: `&`, `<` and `>` escaped as Slack's format asks, so nothing
/// becomes a link or a mention.
pub(crate) fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An agent's words for a `plain_text` object: one line (line breaks and runs of spaces are one
/// space) and no bare link a client could make clickable (`https://x.y` reads
/// `https[:]//x[.]y`, `x.y` reads `x[.]y`). Formatting (`*bold*`, `<!channel>`, `:emoji:`) is
/// not parsed in plain text; [`crate::domain::approvals::justification`] already refused
/// control and invisible formatting characters.
pub(crate) fn slack_plain(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ").replace("://", "[:]//");
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        let between =
            i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c == '.' && between { out.push_str("[.]") } else { out.push(c) }
    }
    out
}

/// One line a person reads, ending in the link.
fn summary(event: &str, d: &Value, url: &str) -> String {
    let action = d["action"].as_str().unwrap_or("a call");
    let who = d["profile_id"].as_str().unwrap_or("an agent");
    let amount = d["amount"].as_str().map(|a| format!(" of ${a}")).unwrap_or_default();
    let what = match event {
        "approval.parked" => format!("{who} asks to run {action}{amount}: it waits for your approval"),
        "approval.decided" => {
            format!("{action}{amount} for {who} was {}", d["decision"].as_str().unwrap_or("decided"))
        }
        "approval.escalated" => format!(
            "{who}'s {action}{amount} still waits for approval ({})",
            d["progress"].as_str().unwrap_or("not yet approved")
        ),
        "approval.expired" => {
            format!("the approval of {action}{amount} for {who} expired and became a refusal")
        }
        "proposal.created" => "new proposed beliefs wait for review".to_string(),
        "budget.soft_cap_crossed" => format!("{who} crossed a soft cap with {action}{amount}"),
        "budget.exhausted" => format!("{who} exhausted its budget and was stopped"),
        "runtime.stopped" => {
            format!("{who}'s runtime stopped ({})", d["reason"].as_str().unwrap_or("stopped"))
        }
        "profile.revoked" => format!("{who} was revoked"),
        _ => format!("{event} from the Naïve gateway"),
    };
    format!("{} <{url}>", slack_escaped(&what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_events_link_to_their_inbox_item_and_slack_bodies_are_text() {
        let payload = json!({ "type": "approval.parked", "timestamp": "t",
            "data": { "approval_id": "apr_1", "action": "cards.charge", "amount": "60.00", "profile_id": "agt_1" } });
        let standard: Value =
            serde_json::from_slice(&render(Format::Standard, &payload.to_string(), "http://h:1/").unwrap())
                .unwrap();
        assert_eq!(standard["data"]["link"], "http://h:1/?approval=apr_1");
        assert_eq!(standard["type"], "approval.parked");
        let slack: Value =
            serde_json::from_slice(&render(Format::Slack, &payload.to_string(), "http://h:1").unwrap())
                .unwrap();
        let text = slack["text"].as_str().unwrap();
        assert!(
            text.contains("cards.charge of $60.00") && text.ends_with("<http://h:1/?approval=apr_1>"),
            "{text}"
        );
    }

    #[test]
    fn an_agents_words_reach_slack_as_one_plain_line_without_links() {
        let said = "*urgent*\n<!channel> pay https://evil.example/x or evil.example now";
        let payload = json!({ "type": "approval.parked", "timestamp": "t",
            "data": { "approval_id": "apr_1", "action": "cards.charge", "profile_id": "agt_1", "justification": said } });
        let slack: Value =
            serde_json::from_slice(&render(Format::Slack, &payload.to_string(), "http://h:1").unwrap())
                .unwrap();
        assert!(!slack["text"].as_str().unwrap().contains("urgent"), "{slack}");
        let block = &slack["blocks"][1]["elements"][0];
        assert_eq!(block["type"], "plain_text");
        assert_eq!(
            block["text"],
            "The agent's reason: \"*urgent* <!channel> pay https[:]//evil[.]example/x or evil[.]example now\""
        );
    }

    #[test]
    fn a_payload_that_does_not_read_back_is_corrupt_not_a_null_body() {
        let err = render(Format::Standard, "{not json", "http://h:1/").unwrap_err();
        assert_eq!(err.code(), "corrupt_row", "{err}");
    }
}
