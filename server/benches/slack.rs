//! Slack approvals' latency on this machine (issue #51), on the path production takes: the
//! real application on port 0 (SQLite), the reference Slack Web API (`server slack`) as its
//! own process, the outbox's delivery worker between them.
//!
//! Prints, for N parked calls made 20 ms apart: from the park's answer to Slack receiving its
//! `chat.postMessage` (target p50 under 100 ms); from a click on Approve in Slack (the signed
//! interaction request leaving, as Slack sends it, by an approver who linked their Slack user)
//! to Slack receiving the `chat.update` that says it was approved (target p50 under 200 ms);
//! and, beside it, from an approval's answer over `/v1` to its `chat.update`. The calls are
//! decided alternately by a click and over `/v1`. Both ends are read from this machine's
//! clock: the bench's when it sends or is answered, the reference's when a call arrives.
//!
//!   cargo bench -p server --bench slack [-- --calls 200]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use chrono::{DateTime, Utc};
use common::process::{Slack, start_slack};
use common::{ADMIN_PASSWORD, COMPANY_KEY, TestApp, spawn_configured};
use serde_json::{Value, json};

fn line(what: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    println!("{what:<48} p50 {:7.1} ms   p90 {:7.1} ms   p99 {:7.1} ms", pct(0.5), pct(0.9), pct(0.99));
}

/// When the reference got each `method` call, by the approval it names.
async fn arrivals(slack: &Slack, method: &str, n: usize) -> Vec<(String, DateTime<Utc>)> {
    loop {
        let calls: Vec<Value> = slack.calls().await.into_iter().filter(|c| c["method"] == method).collect();
        if calls.len() >= n {
            return calls
                .iter()
                .map(|c| {
                    let blocks = c["args"]["blocks"].to_string();
                    let id = blocks.split("?approval=").nth(1).unwrap_or_default();
                    let id = id.split(|ch: char| !ch.is_ascii_alphanumeric() && ch != '_').next().unwrap();
                    (id.to_string(), c["at"].as_str().unwrap().parse().unwrap())
                })
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Milliseconds from each answer to the arrival of its approval's call.
fn gaps(answered: &[(String, DateTime<Utc>)], arrived: &[(String, DateTime<Utc>)]) -> Vec<f64> {
    answered
        .iter()
        .map(|(id, at)| {
            let (_, got) = arrived.iter().find(|(a, _)| a == id).expect("each approval's call arrived");
            (*got - *at).num_microseconds().unwrap() as f64 / 1000.0
        })
        .collect()
}

/// A click on Approve of `approval`'s message by the bench's Slack user, signed as Slack signs,
/// its reply to go to the reference's `/respond/{n}`; when it was sent.
async fn click(app: &TestApp, slack: &Slack, url: &str, approval: &str, n: usize) -> DateTime<Utc> {
    let payload = json!({
        "type": "block_actions", "team": {"id": server::reference::slack::TEAM_ID},
        "user": {"id": "U0BENCH", "username": "bench"}, "channel": {"id": "C0BENCH"},
        "response_url": format!("{}/respond/{n}", slack.base), "trigger_id": format!("{n}.bench"),
        "actions": [{"action_id": "naive_approve", "value": approval}],
    });
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish();
    let at = Utc::now();
    let ts = at.timestamp().to_string();
    let sig = server::reference::slack::sign(server::reference::slack::SIGNING_SECRET, &ts, &body);
    let res = app
        .client
        .post(url)
        .header("x-slack-request-timestamp", ts)
        .header("x-slack-signature", sig)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    at
}

/// Links the bench's Slack user to the approver: the first click is answered with a link,
/// which the approver confirms signed in.
async fn link(app: &TestApp, slack: &Slack, url: &str, approval: &str) {
    click(app, slack, url, approval, 0).await;
    let text = loop {
        if let Some(r) = slack.responses().await.into_iter().find(|r| r["n"] == 0) {
            break r["body"]["text"].as_str().unwrap().to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let code: String =
        text.split("code=").nth(1).unwrap().chars().take_while(char::is_ascii_alphanumeric).collect();
    let cookie = app.sign_in("approver", ADMIN_PASSWORD).await;
    let res = app.post_form(&cookie, "link_slack", "/slack/link", &[("code", &code)]).await;
    assert!(res.headers()["location"].to_str().unwrap().starts_with("/account?done="), "{res:?}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize =
        std::env::args().skip_while(|a| a != "--calls").nth(1).and_then(|v| v.parse().ok()).unwrap_or(200);
    let slack = start_slack(&[]);
    let api = slack.api_url();
    let app = spawn_configured(|c| c.slack_api_url = api).await;
    let put = |path: &str, body: Value| {
        app.client.put(format!("{}{path}", app.base)).bearer_auth(COMPANY_KEY).json(&body)
    };
    let app_body = json!({"bot_token": "xoxb-bench", "signing_secret": server::reference::slack::SIGNING_SECRET, "channels": ["C0BENCH"]});
    let res = put("/v1/slack", app_body).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let url = res.json::<Value>().await.unwrap()["interactions_url"].as_str().unwrap().to_string();
    let kit = json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "50"}}});
    assert!(put("/v1/kits/Parks", kit).send().await.unwrap().status().is_success());
    let (profile, _, key) = app.new_agent("bench-buyer", "Parks", None).await;
    let (_, approver) = app.personal_token("approver", &["approver"]).await;

    let mut parked = Vec::with_capacity(n);
    for _ in 0..n {
        let res = app
            .client
            .post(format!("{}/v1/users/{profile}/cards/charge", app.base))
            .bearer_auth(&key)
            .json(&json!({"amount": "60.00", "merchant": "acme"}))
            .send()
            .await
            .unwrap();
        let at = Utc::now();
        let b: Value = res.json().await.unwrap();
        parked.push((b["recovery"][0]["approval_id"].as_str().unwrap().to_string(), at));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let posts = arrivals(&slack, "chat.postMessage", n).await;
    link(&app, &slack, &url, &parked[0].0).await;
    let (mut clicked, mut decided) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, (id, _)) in parked.iter().enumerate() {
        if i % 2 == 0 {
            clicked.push((id.clone(), click(&app, &slack, &url, id, i + 1).await));
        } else {
            let to = format!("{}/v1/approvals/{id}/approve", app.base);
            let res = app.client.post(to).bearer_auth(&approver).json(&json!({})).send().await.unwrap();
            assert_eq!(res.status(), 200);
            decided.push((id.clone(), Utc::now()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let updates = arrivals(&slack, "chat.update", n).await;
    println!("{n} parked calls, one channel, 20 ms apart (SQLite, reference Slack Web API)");
    line("park answered -> chat.postMessage at Slack", gaps(&parked, &posts));
    line("click on Approve sent -> chat.update at Slack", gaps(&clicked, &updates));
    line("approval answered (/v1) -> chat.update at Slack", gaps(&decided, &updates));
}
