//! Sending webhook messages: rendering a body in the endpoint's format, signing it, and
//! recording what the endpoint answered.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::Format;

/// How long an endpoint may take to answer.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

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
        Format::Slack => json!({ "text": summary(&event, &v["data"], &url) }),
    };
    Ok(serde_json::to_vec(&body).expect("JSON serializes"))
}

/// An agent's words as Slack shows them, never as markup: Slack reads `<…>` as links and
/// mentions, so `&`, `<` and `>` are escaped as its format asks.
fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// One line a person reads, ending in the link.
fn summary(event: &str, d: &Value, url: &str) -> String {
    let action = d["action"].as_str().unwrap_or("a call");
    let who = d["profile_id"].as_str().unwrap_or("an agent");
    let amount = d["amount"].as_str().map(|a| format!(" of ${a}")).unwrap_or_default();
    let what = match event {
        "approval.parked" => {
            let why = d["justification"]
                .as_str()
                .map(|j| format!(" (\"{}\")", slack_escaped(j)))
                .unwrap_or_default();
            format!("{who} asks to run {action}{amount}{why}: it waits for your approval")
        }
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
    format!("{what} <{url}>")
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
    fn a_payload_that_does_not_read_back_is_corrupt_not_a_null_body() {
        let err = render(Format::Standard, "{not json", "http://h:1/").unwrap_err();
        assert_eq!(err.code(), "corrupt_row", "{err}");
    }
}
