//! Slack's interactivity endpoint (docs/slack.md): `POST /slack/interactions/{tenant}`, the
//! Request URL of a tenant's Slack app. Slack sends it a click on a message's Approve or Deny
//! button, and the Deny form's reason.
//!
//! Guarantees:
//! - Nothing is read before the request is shown to be Slack's, fresh and new
//!   ([`gateway::Gateway::slack_interaction`]): a forged, stale or replayed request is a 403
//!   with its code, and changes nothing.
//! - A click counts exactly as the clicker's vote in the console would: it goes through the
//!   same [`gateway::Gateway::approve`] and [`gateway::Gateway::deny`], as the console user
//!   the Slack user linked ([`gateway::Gateway::slack_decider`]). A click by someone not linked,
//!   or who may not decide the item, changes nothing and is answered only to them (an
//!   ephemeral reply): why, and for the unlinked a single-use link to link themselves.
//! - What the clicker is told is `mrkdwn` with every word not ours escaped ([`nothing`],
//!   [`escaped`]): a refusal's text never becomes a link or a mention.
//! - Slack is answered within its three seconds: an approval (which may run the call) is
//!   decided after the answer, and its outcome told to the clicker when it is known.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use gateway::delivery::slack::escaped;
use gateway::delivery::slack::interact::{Button, Interaction, SlackUser};
use gateway::domain::principal::Human;
use gateway::ids::TenantId;
use gateway::ops::approvals::Decided;
use gateway::{Error, Gateway};
use serde_json::json;

use crate::http::problem::Problem;
use crate::state::AppState;

/// The interactivity endpoint's route.
pub fn routes() -> axum::Router<AppState> {
    axum::Router::new().route("/slack/interactions/{tenant}", axum::routing::post(interactions))
}

async fn interactions(
    State(state): State<AppState>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(tenant) = TenantId::parse(&tenant) else {
        return Problem::from(Error::NotFound { what: "Slack app" }).into_response();
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let (ts, sig) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
    let gw = state.gateway.clone();
    let read = match gw.slack_interaction(&tenant, &ts, &sig, &body).await {
        Ok(read) => read,
        Err(e) => return Problem::from(e).into_response(),
    };
    match read {
        Interaction::Click { button: Button::Approve, approval_id, user, channel, response_url, .. } => {
            tokio::spawn(async move {
                let said = approve(&gw, &tenant, &approval_id, &user, &channel).await;
                tell(&gw, &response_url, &said).await;
            });
            StatusCode::OK.into_response()
        }
        Interaction::Click {
            button: Button::Deny,
            approval_id,
            user,
            channel,
            response_url,
            trigger_id,
            ..
        } => {
            if let Err(said) = ask_reason(&gw, &tenant, &approval_id, &user, &channel, &trigger_id).await {
                tell(&gw, &response_url, &said).await;
            }
            StatusCode::OK.into_response()
        }
        Interaction::DenyReason { approval_id, user, channel, reason, .. } => {
            match deny(&gw, &tenant, &approval_id, &user, &channel, &reason).await {
                Ok(()) => StatusCode::OK.into_response(),
                // Slack shows these under the form's reason field, to the person only.
                Err(said) => Json(json!({ "response_action": "errors",
                    "errors": { gateway::delivery::slack::interact::REASON: said } }))
                .into_response(),
            }
        }
        Interaction::Other => StatusCode::OK.into_response(),
    }
}

/// The clicker as a console user, or what to tell them: a link to link themselves.
async fn decider(gw: &Gateway, tenant: &TenantId, user: &SlackUser, channel: &str) -> Result<Human, String> {
    match gw.slack_decider(tenant, user, channel).await {
        Ok(Some(human)) => Ok(human),
        Ok(None) => match gw.slack_link_url(tenant, user).await {
            Ok(url) => Err(format!(
                "Nothing was decided: your Slack user is not linked to a console user yet. <{url}|Link your account> \
                 (this link is yours alone, works once, for {} minutes), then click again.",
                gateway::domain::slack_links::CODE_TTL_MINUTES
            )),
            Err(e) => Err(nothing(e)),
        },
        Err(e) => Err(nothing(e)),
    }
}

/// Approves as the clicker; what to tell them.
async fn approve(gw: &Gateway, tenant: &TenantId, id: &str, user: &SlackUser, channel: &str) -> String {
    let human = match decider(gw, tenant, user, channel).await {
        Ok(h) => h,
        Err(said) => return said,
    };
    match gw.approve(tenant, id, &human, None).await {
        Ok(Decided::Waiting(a)) => format!(
            "Your approval is counted, as {}. It still needs {}.",
            escaped(&human.username),
            escaped(&a.quorum.still_needed())
        ),
        Ok(Decided::Ran(resp)) => match resp.envelope() {
            Some(env) => format!(
                "Approved as {}, but the call was refused when it ran again: {}",
                escaped(&human.username),
                escaped(&env.message)
            ),
            None => format!("Approved as {}: the call ran.", escaped(&human.username)),
        },
        Err(e) => nothing(e),
    }
}

/// Opens the Deny form for a clicker who may decide the item; otherwise what to tell them.
async fn ask_reason(
    gw: &Gateway,
    tenant: &TenantId,
    id: &str,
    user: &SlackUser,
    channel: &str,
    trigger_id: &str,
) -> Result<(), String> {
    let human = decider(gw, tenant, user, channel).await?;
    let a = gw.approval(tenant, id).await.map_err(nothing)?;
    if a.status != gateway::domain::approvals::ApprovalStatus::Pending {
        return Err("Nothing was decided: this approval was already decided or expired.".into());
    }
    gw.may_decide(&a, &human).await.map_err(nothing)?;
    gw.slack_ask_reason(tenant, trigger_id, &a, channel).await.map_err(nothing)
}

/// Denies as the person who submitted the form; what to tell them if it is not done.
async fn deny(
    gw: &Gateway,
    tenant: &TenantId,
    id: &str,
    user: &SlackUser,
    channel: &str,
    reason: &str,
) -> Result<(), String> {
    let human = decider(gw, tenant, user, channel).await?;
    gw.deny(tenant, id, &human, reason).await.map(|_| ()).map_err(nothing)
}

/// Why nothing was decided, in Slack's `mrkdwn` with the error's words escaped: a refusal's
/// text (an upstream's, a name) never becomes a link or a mention.
fn nothing(e: Error) -> String {
    format!("Nothing was decided: {}", escaped(&e.to_string()))
}

/// Tells the clicker, only them; a reply Slack does not take is logged, as nothing else can
/// reach them.
async fn tell(gw: &Gateway, response_url: &str, text: &str) {
    if let Err(e) = gw.slack_tell(response_url, text).await {
        tracing::warn!(error = %e, "a reply to a Slack click was not delivered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusals_words_reach_the_clicker_as_text_not_links() {
        let said =
            nothing(Error::invalid("upstream_refused", "<https://evil.example|Confirm here> <!channel>"));
        assert_eq!(said, "Nothing was decided: &lt;https://evil.example|Confirm here&gt; &lt;!channel&gt;");
    }
}
