//! The reference Slack as a page a person uses (`make run`): `GET /` shows each message the
//! gateway posted, as it stands, with working Approve and Deny buttons; the replies only the
//! clicker sees (with the link to link their Slack user); and the Deny forms opened, each
//! asking the reason. A click is sent to the app's Request URL (`POST /request-url`, as an
//! admin pastes it into the app's settings) the way Slack sends it, signed, by the Slack user
//! named in the page's field.

use axum::Form;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::slack::{Shared, TEAM_ID, drive};

/// The page's routes, served beside the Web API ([`super::slack::serve`]).
pub fn routes() -> axum::Router<Shared> {
    axum::Router::new()
        .route("/", get(page))
        .route("/request-url", post(request_url))
        .route("/click", post(click))
        .route("/submit", post(submit))
}

async fn request_url(State(s): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    s.lock().expect("the workspace lock").request_url = body["url"].as_str().map(str::to_string);
    axum::Json(json!({ "ok": true })).into_response()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Slack's `<url|label>` links as anchors; everything else escaped.
fn linked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("<http") {
        let Some(close) = rest[open..].find('>') else { break };
        let inner = &rest[open + 1..open + close];
        let (url, label) = inner.split_once('|').unwrap_or((inner, inner));
        out.push_str(&esc(&rest[..open]));
        out.push_str(&format!(r#"<a href="{}">{}</a>"#, esc(url), esc(label)));
        rest = &rest[open + close + 1..];
    }
    out.push_str(&esc(rest));
    out
}

const USER_FIELD: &str = r#"<label>as Slack user <input name="user" value="U0DEMO" size="10"></label>"#;

fn message_html(m: &Value) -> String {
    let blocks = m["blocks"].as_array().cloned().unwrap_or_default();
    let approval =
        blocks.iter().flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default()).find_map(|e| {
            (e["action_id"] == "naive_approve").then(|| e["value"].as_str().unwrap_or_default().to_string())
        });
    let reason = blocks.iter().find(|b| b["type"] == "context").map(|b| b["elements"][0]["text"].clone());
    let mut html = format!("<li><p>{}</p>", linked(m["text"].as_str().unwrap_or_default()));
    if let Some(r) = reason.as_ref().and_then(Value::as_str) {
        html.push_str(&format!("<p><small>{}</small></p>", esc(r)));
    }
    if let Some(id) = approval {
        for (action, label) in [("naive_approve", "Approve"), ("naive_deny", "Deny")] {
            html.push_str(&format!(
                r#"<form method="post" action="/click" style="display:inline"><input type="hidden" name="action" value="{action}"><input type="hidden" name="approval" value="{}"><input type="hidden" name="channel" value="{}"> {USER_FIELD} <button>{label}</button></form> "#,
                esc(&id),
                esc(m["channel"].as_str().unwrap_or_default())
            ));
        }
    }
    html + "</li>"
}

fn view_html(v: &Value) -> String {
    let meta = v["view"]["private_metadata"].as_str().unwrap_or_default();
    format!(
        r#"<li><form method="post" action="/submit"><input type="hidden" name="metadata" value="{}"><input type="hidden" name="trigger" value="{}"> {USER_FIELD} <label>Why? <input name="reason" required></label> <button>Deny</button></form></li>"#,
        esc(meta),
        esc(v["trigger_id"].as_str().unwrap_or_default())
    )
}

async fn page(State(s): State<Shared>) -> Html<String> {
    let w = s.lock().expect("the workspace lock");
    let messages: String = w.messages.iter().rev().map(message_html).collect();
    let replies: String = w
        .responses
        .iter()
        .rev()
        .map(|r| format!("<li>{}</li>", linked(r["body"]["text"].as_str().unwrap_or_default())))
        .collect();
    let views: String = w.views.iter().rev().map(view_html).collect();
    let to = w.request_url.as_deref().map_or("no Request URL set yet".to_string(), esc);
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Reference Slack</title></head><body>\
         <h1>Reference Slack workspace</h1><p>Clicks go to <code>{to}</code>.</p>\
         <h2>Deny forms</h2><ul>{views}</ul><h2>Only you can see these</h2><ul>{replies}</ul>\
         <h2>Messages</h2><ul>{messages}</ul></body></html>"
    ))
}

/// The Slack user the page clicks as: its name is its id, in lower case.
fn who(user: &str) -> Value {
    json!({ "id": user, "username": user.to_lowercase(), "team_id": TEAM_ID })
}

#[derive(Deserialize)]
struct Click {
    action: String,
    approval: String,
    channel: String,
    user: String,
}

async fn click(State(s): State<Shared>, Form(c): Form<Click>) -> Redirect {
    let payload = json!({
        "type": "block_actions", "team": {"id": TEAM_ID},
        "user": who(&c.user), "channel": {"id": c.channel}, "actions": [{"action_id": c.action, "value": c.approval, "type": "button"}],
    });
    send(&s, payload).await;
    Redirect::to("/")
}

#[derive(Deserialize)]
struct Submit {
    metadata: String,
    trigger: String,
    reason: String,
    user: String,
}

async fn submit(State(s): State<Shared>, Form(f): Form<Submit>) -> Redirect {
    let payload = json!({
        "type": "view_submission", "team": {"id": TEAM_ID},
        "user": who(&f.user), "view": {"callback_id": "naive_deny", "private_metadata": f.metadata,
                 "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": f.reason}}}}},
    });
    let answer = send(&s, payload).await;
    let mut w = s.lock().expect("the workspace lock");
    if answer["status"] == 200 && answer["body"] == "" {
        // A form the gateway accepted closes, as Slack closes it.
        w.views.retain(|v| v["trigger_id"] != f.trigger.as_str());
    } else {
        // As Slack shows a form's errors under its field, to the person only.
        let said: Value = serde_json::from_str(answer["body"].as_str().unwrap_or("{}")).unwrap_or_default();
        let text =
            format!("The Deny form says: {}", said["errors"]["reason"].as_str().unwrap_or("it was not sent"));
        w.responses.push(json!({ "n": 0, "body": { "response_type": "ephemeral", "text": text } }));
    }
    Redirect::to("/")
}

async fn send(s: &Shared, payload: Value) -> Value {
    let url = s.lock().expect("the workspace lock").request_url.clone().unwrap_or_default();
    drive(s, &json!({ "url": url, "payload": payload })).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_links_become_anchors_and_everything_else_is_escaped() {
        assert_eq!(
            linked("<b> <http://x.test/slack/link?code=a&b|Link your account>, then click"),
            r#"&lt;b&gt; <a href="http://x.test/slack/link?code=a&amp;b">Link your account</a>, then click"#
        );
        assert_eq!(linked("no link <here"), "no link &lt;here");
    }
}
