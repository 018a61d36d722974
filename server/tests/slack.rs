//! Slack approvals end to end: the real server binary and the reference Slack Web API
//! (`server slack`) as separate processes, on the engine under test. An admin sets the app
//! (checked with `auth.test`, its secrets never shown again); a parked call is posted to each
//! channel with the agent's words as inert text; when the approval ends, every message posted
//! for it is rewritten to say how and by whom, without its button; a `429` is waited out.

mod common;

use std::time::Duration;

use common::COMPANY_KEY;
use common::process::{Slack, approver_token, call, park, start_fresh, start_slack};
use serde_json::{Value, json};

async fn send(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    call(base, method, path, key, body, None).await
}

/// An agent whose charges above $50 park: (profile, key).
async fn parking_agent(base: &str) -> (String, String) {
    let kit = json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "50"}}});
    let (s, b) = send(base, "PUT", "/v1/kits/Parks", COMPANY_KEY, Some(kit)).await;
    assert_eq!(s, 201, "{b}");
    let body = json!({"name": "buyer", "kit": "Parks"});
    let (_, p) = send(base, "POST", "/v1/agent-profiles", COMPANY_KEY, Some(body)).await;
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), COMPANY_KEY, None).await;
    (id, k["secret"].as_str().unwrap().to_string())
}

/// Waits until `ok` holds of the reference workspace's messages; them.
async fn until(slack: &Slack, what: &str, ok: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..300 {
        let m = slack.messages().await;
        if ok(&m) {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: {:#?}", slack.messages().await);
}

fn text_of(m: &Value) -> String {
    m["blocks"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_is_posted_to_each_channel_and_every_message_ends_saying_who_decided() {
    let slack = start_slack(&[]);
    let s = start_fresh(&[("NAIVE_SLACK_API_URL", &slack.api_url())]).await;
    let base = &s.server.base;
    let app = json!({"bot_token": "xoxb-1-reference", "signing_secret": "0123456789abcdef0123", "channels": ["C0APPROVE", "C0FINANCE"]});
    let (st, b) = send(base, "PUT", "/v1/slack", COMPANY_KEY, Some(app)).await;
    assert_eq!(st, 200, "{b}");
    assert_eq!((b["team_id"].as_str(), b["bot_user_id"].as_str()), (Some("T0REFERENCE"), Some("U0NAIVEBOT")));
    let (_, shown) = send(base, "GET", "/v1/slack", COMPANY_KEY, None).await;
    assert!(
        !shown.to_string().contains("xoxb-") && !shown.to_string().contains("0123456789abcdef"),
        "{shown}"
    );
    // The vault keeps the secrets while the app uses them.
    let (st, b) = send(base, "DELETE", "/v1/vault/secrets/slack-bot-token", COMPANY_KEY, None).await;
    assert_eq!((st, b["code"].as_str()), (409, Some("secret_in_use")), "{b}");

    let agent = parking_agent(base).await;
    let approval = park(base, &agent, "<!channel> *urgent* pay https://evil.example now").await;
    let posted = until(&slack, "each channel gets the parked call", |m| m.len() == 2).await;
    // Each channel is its own queue, so the two posts may arrive in either order.
    let mut channels: Vec<&str> = posted.iter().map(|m| m["channel"].as_str().unwrap()).collect();
    channels.sort_unstable();
    assert_eq!(channels, ["C0APPROVE", "C0FINANCE"]);
    let blocks = text_of(&posted[0]);
    assert!(blocks.contains("buyer asks to run cards.charge of $60.00"), "{blocks}");
    assert!(blocks.contains(&format!("?approval={approval}")), "the message links to the item: {blocks}");
    assert!(blocks.contains("naive_approve") && blocks.contains("naive_deny"), "{blocks}");
    // The agent's words are plain text with their link defused, never mrkdwn.
    let reason = posted[0]["blocks"][1]["elements"][0].clone();
    assert_eq!(reason["type"], "plain_text", "{reason}");
    assert_eq!(
        reason["text"],
        "The agent's reason: \"<!channel> *urgent* pay https[:]//evil[.]example now\""
    );
    assert!(!posted[0]["blocks"][0].to_string().contains("<!channel>"));

    let token = approver_token(base).await;
    let (st, b) =
        send(base, "POST", &format!("/v1/approvals/{approval}/approve"), &token, Some(json!({}))).await;
    assert_eq!(st, 200, "{b}");
    let ended = until(&slack, "both messages say it was approved", |m| {
        m.len() == 2 && m.iter().all(|m| text_of(m).contains("Approved by approver"))
    })
    .await;
    for m in &ended {
        assert!(!text_of(m).contains("naive_approve"), "an ended approval has no button: {m}");
        assert_eq!(m["updates"], 1, "{m}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_answering_429_is_waited_out_and_a_denial_names_its_reason() {
    let slack = start_slack(&["--rate-limit-first", "1"]);
    let s = start_fresh(&[("NAIVE_SLACK_API_URL", &slack.api_url())]).await;
    let base = &s.server.base;
    let app = json!({"bot_token": "xoxb-1-reference", "signing_secret": "0123456789abcdef0123", "channels": ["C0APPROVE"]});
    let (st, b) = send(base, "PUT", "/v1/slack", COMPANY_KEY, Some(app)).await;
    assert_eq!(st, 200, "{b}");

    let agent = parking_agent(base).await;
    let approval = park(base, &agent, "restocking").await;
    until(&slack, "the parked call is posted", |m| m.len() == 1).await;
    // Slack said to wait a second: the post was tried again no sooner.
    let posts: Vec<Value> =
        slack.calls().await.into_iter().filter(|c| c["method"] == "chat.postMessage").collect();
    assert_eq!(posts.iter().map(|c| c["limited"] == true).collect::<Vec<_>>(), [true, false], "{posts:#?}");
    let at = |c: &Value| chrono::DateTime::parse_from_rfc3339(c["at"].as_str().unwrap()).unwrap();
    assert!(at(&posts[1]) - at(&posts[0]) >= chrono::Duration::milliseconds(1000), "{posts:#?}");
    let token = approver_token(base).await;
    let deny = json!({"reason": "not this vendor"});
    let (st, b) = send(base, "POST", &format!("/v1/approvals/{approval}/deny"), &token, Some(deny)).await;
    assert_eq!(st, 200, "{b}");
    until(&slack, "the message says who denied it and why", |m| {
        m.len() == 1 && text_of(&m[0]).contains("Denied by approver: not this vendor")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_slack_refuses_or_that_is_incomplete_is_not_kept() {
    let slack = start_slack(&[]);
    let s = start_fresh(&[("NAIVE_SLACK_API_URL", &slack.api_url())]).await;
    let base = &s.server.base;
    let cases = [
        (json!({"channels": ["C0APPROVE"]}), "slack_secrets_needed"),
        (
            json!({"bot_token": "xoxp-user-token", "signing_secret": "0123456789abcdef", "channels": ["C1"]}),
            "invalid_bot_token",
        ),
        (
            json!({"bot_token": "xoxb-revoked", "signing_secret": "0123456789abcdef", "channels": ["C1"]}),
            "slack_token_refused",
        ),
        (
            json!({"bot_token": "xoxb-1", "signing_secret": "short", "channels": ["C1"]}),
            "invalid_signing_secret",
        ),
        (
            json!({"bot_token": "xoxb-1", "signing_secret": "0123456789abcdef", "channels": []}),
            "invalid_slack_channels",
        ),
        (
            json!({"bot_token": "xoxb-1", "signing_secret": "0123456789abcdef", "channels": ["#general"]}),
            "invalid_slack_channel",
        ),
        (
            json!({"bot_token": "xoxb-1", "signing_secret": "0123456789abcdef", "channels": ["C1", "C1"]}),
            "duplicate_slack_channel",
        ),
    ];
    for (body, code) in cases {
        let (st, b) = send(base, "PUT", "/v1/slack", COMPANY_KEY, Some(body.clone())).await;
        assert_eq!((st, b["code"].as_str()), (400, Some(code)), "{body}: {b}");
    }
    let (st, _) = send(base, "GET", "/v1/slack", COMPANY_KEY, None).await;
    assert_eq!(st, 404);
    let (st, vault) = send(base, "GET", "/v1/vault/secrets", COMPANY_KEY, None).await;
    assert_eq!(st, 200);
    assert!(!vault.to_string().contains("slack-"), "no secret was kept: {vault}");
    let (st, _) = send(base, "DELETE", "/v1/slack", COMPANY_KEY, None).await;
    assert_eq!(st, 404);
}

/// Waits until the gateway lists `n` Slack deliveries none of which is still queued; them.
async fn until_settled(base: &str, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let (_, list) = send(base, "GET", "/v1/slack/deliveries", COMPANY_KEY, None).await;
        let items = list["items"].as_array().unwrap().clone();
        if items.len() >= n && items.iter().all(|d| d["status"] != "queued") {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the gateway never settled {n} Slack deliveries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_slack_does_not_know_rejects_its_message_and_holds_up_no_other() {
    let slack = start_slack(&[]);
    let s = start_fresh(&[("NAIVE_SLACK_API_URL", &slack.api_url())]).await;
    let base = &s.server.base;
    let app = json!({"bot_token": "xoxb-1-reference", "signing_secret": "0123456789abcdef0123", "channels": ["X0GONE", "C0APPROVE"]});
    let (st, b) = send(base, "PUT", "/v1/slack", COMPANY_KEY, Some(app)).await;
    assert_eq!(st, 200, "{b}");
    let agent = parking_agent(base).await;
    park(base, &agent, "restocking").await;
    let posted = until(&slack, "the known channel gets the post", |m| m.len() == 1).await;
    assert_eq!(posted[0]["channel"], "C0APPROVE");
    let mut items = until_settled(base, 2).await;
    items.sort_by_key(|d| d["channel"].as_str().unwrap().to_string());
    let seen: Vec<(Value, Value, Value)> =
        items.iter().map(|d| (d["channel"].clone(), d["status"].clone(), d["last_error"].clone())).collect();
    assert_eq!(
        seen,
        [
            (json!("C0APPROVE"), json!("delivered"), Value::Null),
            (json!("X0GONE"), json!("rejected"), json!("slack_channel_not_found")),
        ],
        "{items:#?}"
    );
    assert!(items.iter().all(|d| d["job"] == "slack.post"), "{items:#?}");
}
