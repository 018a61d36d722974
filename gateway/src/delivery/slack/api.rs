//! Slack's Web API, the few methods used: `auth.test` (whose workspace a bot token is),
//! `chat.postMessage`, `chat.update` and `views.open`, and the `response_url` an interaction
//! carries ([`tell`]). Every call goes through the gateway's one egress
//! client and its guard.
//!
//! An answer is read the way Slack documents it: `429` with `Retry-After` is a wait, a 5xx or
//! no answer a failed attempt, and `{"ok": false, "error": …}` a refusal with Slack's code
//! (retried only where Slack says it is passing: `ratelimited`, `internal_error`,
//! `fatal_error`, `service_unavailable`, `request_timeout`).

use std::time::Duration;

use serde_json::Value;

use crate::delivery::egress::{EGRESS_REFUSED, Egress, Failed};

/// How long Slack may take to answer.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// Slack asked us to wait this many seconds.
    Wait(u64),
    /// No answer, or one that says to try again: a failed attempt, with its code.
    Failed(String),
    /// Slack refused it for good, with its error code (`channel_not_found`, `invalid_auth`…).
    Refused(String),
}

impl ApiError {
    pub(crate) fn code(&self) -> String {
        match self {
            ApiError::Wait(_) => "slack_rate_limited".into(),
            ApiError::Failed(c) => c.clone(),
            ApiError::Refused(c) => format!("slack_{c}"),
        }
    }
}

/// Calls `method` with a JSON body and the bot token; the answer's JSON when it is `ok`.
pub(crate) async fn call(
    egress: &Egress,
    base: &str,
    token: &str,
    method: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let url = url::Url::parse(&format!("{}/{method}", base.trim_end_matches('/')))
        .map_err(|_| ApiError::Failed("slack_bad_api_url".into()))?;
    egress.check_url(&url).map_err(|_| ApiError::Failed(EGRESS_REFUSED.into()))?;
    let res = crate::audit::trace::carried(egress.client().post(url))
        .timeout(TIMEOUT)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .map_err(|e| {
            ApiError::Failed(
                match crate::delivery::egress::failed(&e) {
                    Failed::Refused => EGRESS_REFUSED,
                    Failed::Timeout => "slack_timeout",
                    Failed::Unreachable => "slack_unreachable",
                }
                .into(),
            )
        })?;
    let status = res.status();
    if status.as_u16() == 429 {
        let secs = res
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1);
        return Err(ApiError::Wait(secs.clamp(1, 600)));
    }
    if !status.is_success() {
        return Err(ApiError::Failed(format!("slack_http_{}", status.as_u16())));
    }
    let v: Value = res.json().await.map_err(|_| ApiError::Failed("slack_bad_answer".into()))?;
    answered(v)
}

/// Answers an interaction through its `response_url` (Slack's, from a signed payload): an
/// ephemeral message only the person who acted sees.
pub(crate) async fn tell(egress: &Egress, response_url: &str, text: &str) -> Result<(), ApiError> {
    let url = url::Url::parse(response_url).map_err(|_| ApiError::Failed("slack_bad_response_url".into()))?;
    egress.check_url(&url).map_err(|_| ApiError::Failed(EGRESS_REFUSED.into()))?;
    let body = serde_json::json!({ "response_type": "ephemeral", "replace_original": false, "text": text });
    let res = egress
        .client()
        .post(url)
        .timeout(TIMEOUT)
        .json(&body)
        .send()
        .await
        .map_err(|_| ApiError::Failed("slack_unreachable".into()))?;
    match res.status().is_success() {
        true => Ok(()),
        false => Err(ApiError::Failed(format!("slack_http_{}", res.status().as_u16()))),
    }
}

/// An answer's meaning: its JSON when `ok`, or Slack's error code.
fn answered(v: Value) -> Result<Value, ApiError> {
    if v["ok"] == true {
        return Ok(v);
    }
    let code = v["error"].as_str().unwrap_or("unknown_error").to_string();
    const PASSING: [&str; 5] =
        ["ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"];
    if PASSING.contains(&code.as_str()) {
        Err(ApiError::Failed(format!("slack_{code}")))
    } else {
        Err(ApiError::Refused(code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slack_answers_are_read_as_slack_documents_them() {
        assert_eq!(answered(json!({"ok": true, "ts": "1.2"})).unwrap()["ts"], "1.2");
        assert_eq!(
            answered(json!({"ok": false, "error": "channel_not_found"})),
            Err(ApiError::Refused("channel_not_found".into()))
        );
        assert_eq!(
            answered(json!({"ok": false, "error": "internal_error"})),
            Err(ApiError::Failed("slack_internal_error".into()))
        );
        assert_eq!(answered(json!({})), Err(ApiError::Refused("unknown_error".into())));
    }
}
