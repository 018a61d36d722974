//! What Slack sends when someone clicks a message's button or submits its Deny form: the
//! request's signature checked the way Slack documents it (`v0`, HMAC-SHA256 over
//! `v0:{timestamp}:{body}` with the app's signing secret, a timestamp within five minutes),
//! then the payload read into an [`Interaction`].
//!
//! Guarantees: nothing in a payload is read before its signature is checked; a payload this
//! module does not understand is [`Interaction::Other`], never an error Slack would show.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::error::{Error, Result};

/// How far a request's timestamp may be from now, in seconds (Slack's own advice).
pub const MAX_SKEW_SECS: i64 = 300;
/// The Approve button's action.
pub const APPROVE: &str = "naive_approve";
/// The Deny button's action, and the callback of the form asking the reason.
pub const DENY: &str = "naive_deny";
/// The reason field of the Deny form (its block and its input).
pub const REASON: &str = "reason";

/// The Slack user who acted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlackUser {
    pub id: String,
    pub name: String,
}

impl SlackUser {
    /// How a trail step names them: `@alice (U0ALICE)`.
    pub fn shown(&self) -> String {
        format!("@{} ({})", self.name, self.id)
    }
}

/// Which button.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Button {
    Approve,
    Deny,
}

/// A checked request, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interaction {
    /// Approve or Deny clicked on the message of `approval_id`.
    Click {
        button: Button,
        approval_id: String,
        user: SlackUser,
        team_id: String,
        channel: String,
        response_url: String,
        trigger_id: String,
    },
    /// The Deny form submitted with a reason.
    DenyReason { approval_id: String, user: SlackUser, team_id: String, channel: String, reason: String },
    /// Anything else (the button that opens the console, a form closed): nothing to do.
    Other,
}

/// The `v0` signature of `body` sent at `timestamp`.
pub fn signature(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// Checks a request's timestamp and signature against `secret`.
pub(crate) fn verify(
    secret: &str,
    timestamp: &str,
    sig: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<()> {
    let refused = |code, why: &str| Error::Forbidden { code, message: why.to_string() };
    let at: i64 = timestamp.trim().parse().map_err(|_| {
        refused("slack_signature_missing", "X-Slack-Request-Timestamp is not a number of seconds")
    })?;
    // `abs_diff`: a timestamp at the edge of `i64` is stale, not an overflow.
    if now.timestamp().abs_diff(at) > MAX_SKEW_SECS.unsigned_abs() {
        return Err(refused(
            "slack_request_stale",
            "the request's timestamp is more than five minutes from now: a stale or replayed request",
        ));
    }
    let expected = signature(secret, timestamp.trim(), body);
    if !crate::secrets::digest_eq(&expected, sig.trim()) {
        return Err(refused(
            "slack_signature_invalid",
            "X-Slack-Signature does not match the app's signing secret (Basic Information → App Credentials)",
        ));
    }
    Ok(())
}

/// Reads a checked request's body (`payload=<json>`, form-encoded).
pub(crate) fn read(body: &[u8]) -> Result<Interaction> {
    let payload =
        url::form_urlencoded::parse(body).find(|(k, _)| k == "payload").map(|(_, v)| v.into_owned());
    let v: Value = payload.and_then(|p| serde_json::from_str(&p).ok()).ok_or_else(|| {
        Error::invalid("invalid_slack_payload", "the body is not Slack's `payload=<json>` form")
    })?;
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let user = SlackUser {
        id: s(&v["user"]["id"]),
        name: v["user"]["username"].as_str().or(v["user"]["name"].as_str()).unwrap_or_default().to_string(),
    };
    let team_id = v["team"]["id"].as_str().or(v["user"]["team_id"].as_str()).unwrap_or_default().to_string();
    Ok(match v["type"].as_str() {
        Some("block_actions") => {
            let action = &v["actions"][0];
            let button = match action["action_id"].as_str() {
                Some(APPROVE) => Button::Approve,
                Some(DENY) => Button::Deny,
                _ => return Ok(Interaction::Other),
            };
            Interaction::Click {
                button,
                approval_id: s(&action["value"]),
                user,
                team_id,
                channel: s(&v["channel"]["id"]),
                response_url: s(&v["response_url"]),
                trigger_id: s(&v["trigger_id"]),
            }
        }
        Some("view_submission") if v["view"]["callback_id"] == DENY => {
            let meta: Value = serde_json::from_str(v["view"]["private_metadata"].as_str().unwrap_or("{}"))
                .unwrap_or(Value::Null);
            Interaction::DenyReason {
                approval_id: s(&meta["approval_id"]),
                channel: s(&meta["channel"]),
                reason: s(&v["view"]["state"]["values"][REASON][REASON]["value"]),
                user,
                team_id,
            }
        }
        _ => Interaction::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_documented_example_signature_matches() {
        // The example of api.slack.com/authentication/verifying-requests-from-slack.
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        assert_eq!(
            signature(secret, "1531420618", body),
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
        let at = DateTime::from_timestamp(1531420618 + 60, 0).unwrap();
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert!(verify(secret, "1531420618", sig, body, at).is_ok());
        let late = DateTime::from_timestamp(1531420618 + 301, 0).unwrap();
        assert!(verify(secret, "1531420618", sig, body, late).is_err());
        assert!(verify("another-secret-entirely", "1531420618", sig, body, at).is_err());
    }
}
