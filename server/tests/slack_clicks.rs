//! Deciding from Slack, black-box: the real server binary and the reference Slack (`server
//! slack`, whose driver signs interaction requests as Slack does) as separate processes, on
//! the engine under test. A click counts exactly as the clicker's vote in the console would,
//! or changes nothing and is answered only to them: unlinked, without the role, the agent's
//! owner, twice, another tenant's approval, a forged, stale or replayed request. A person
//! links their Slack user once, through a single-use, short-lived link.

mod common;

use std::time::Duration;

use common::COMPANY_KEY;
use common::process::{Slack, call, charge, park, session_cookie, start_fresh, start_slack};
use serde_json::{Value, json};

async fn send(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    call(base, method, path, key, body, None).await
}

/// A gateway whose tenant's Slack app is the reference one; (gateway, its Request URL).
async fn with_app(slack: &Slack, envs: &[(&str, &str)]) -> (common::process::Fresh, String) {
    let mut envs = envs.to_vec();
    let api = slack.api_url();
    envs.push(("NAIVE_SLACK_API_URL", &api));
    let s = start_fresh(&envs).await;
    let app = json!({"bot_token": "xoxb-1-reference", "signing_secret": server::reference::slack::SIGNING_SECRET, "channels": ["C0APPROVE"]});
    let (st, b) = send(&s.server.base, "PUT", "/v1/slack", COMPANY_KEY, Some(app)).await;
    assert_eq!(st, 200, "{b}");
    let url = b["interactions_url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&s.server.base) && url.contains("/slack/interactions/ten_"), "{url}");
    (s, url)
}

/// An agent on `kit` (created with `limits`), owned by `owner`, whose charges above $50 park.
async fn agent(base: &str, key: &str, limits: Value, owner: Option<&str>) -> (String, String) {
    let kit = json!({"name": "Parks", "primitives": ["cards"], "limits": limits});
    let (s, b) = send(base, "PUT", "/v1/kits/Parks", key, Some(kit)).await;
    assert_eq!(s, 201, "{b}");
    let (_, p) = send(
        base,
        "POST",
        "/v1/agent-profiles",
        key,
        Some(json!({"name": "buyer", "kit": "Parks", "owner": owner})),
    )
    .await;
    let id = p["id"].as_str().unwrap().to_string();
    let (_, k) = send(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), key, None).await;
    (id, k["secret"].as_str().unwrap().to_string())
}

async fn parked(base: &str, agent: &(String, String)) -> String {
    park(base, agent, "restocking").await
}

/// A click on `button` (`naive_approve`, `naive_deny`) of `approval`'s message by Slack user
/// `who`, driven through the reference Slack; its answer.
async fn click(slack: &Slack, url: &str, who: &str, button: &str, approval: &str) -> Value {
    let payload = json!({
        "type": "block_actions",
        "team": {"id": server::reference::slack::TEAM_ID},
        "user": {"id": who, "username": who.to_lowercase(), "team_id": server::reference::slack::TEAM_ID},
        "channel": {"id": "C0APPROVE"},
        "actions": [{"action_id": button, "value": approval, "type": "button"}],
    });
    drive(slack, json!({"url": url, "payload": payload})).await
}

async fn drive(slack: &Slack, req: Value) -> Value {
    let res = server::http_client().post(format!("{}/interact", slack.base)).json(&req).send().await.unwrap();
    res.json().await.unwrap()
}

/// What the clicker was told through the click's `response_url`.
async fn told(slack: &Slack, clicked: &Value) -> String {
    let n: u64 =
        clicked["payload"]["response_url"].as_str().unwrap().rsplit('/').next().unwrap().parse().unwrap();
    for _ in 0..300 {
        let all = slack.responses().await;
        if let Some(r) = all.iter().find(|r| r["n"] == n) {
            assert_eq!(r["body"]["response_type"], "ephemeral", "only the clicker sees it: {r}");
            return r["body"]["text"].as_str().unwrap().to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the clicker was never told anything: {clicked}");
}

async fn status_of(base: &str, approval: &str) -> Value {
    let (st, a) = send(base, "GET", &format!("/v1/approvals/{approval}"), COMPANY_KEY, None).await;
    assert_eq!(st, 200, "{a}");
    a
}

/// Confirms the link page of `code` as `cookie`'s person: where the browser is sent.
async fn confirm(base: &str, cookie: &str, code: &str) -> String {
    let raw = server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let res = raw
        .post(format!("{base}/api/link_slack"))
        .header("cookie", cookie)
        .header("accept", "text/html")
        .header("referer", format!("{base}/slack/link?code={code}"))
        .form(&[("code", code)])
        .send()
        .await
        .unwrap();
    let to = res.headers().get("location").map(|l| l.to_str().unwrap().to_string());
    to.unwrap_or_else(|| panic!("no redirect: {}", res.status()))
}

/// The link code in what an unlinked clicker was told.
fn code_in(text: &str) -> String {
    let at = text.find("/slack/link?code=").unwrap_or_else(|| panic!("no link in: {text}"));
    text[at + "/slack/link?code=".len()..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect()
}

/// Links Slack user `who` to console user `user` through the link a click sends them.
async fn link(slack: &Slack, base: &str, url: &str, who: &str, user: &str, approval: &str) {
    let c = click(slack, url, who, "naive_approve", approval).await;
    let code = code_in(&told(slack, &c).await);
    let to = confirm(base, &session_cookie(base, user).await, &code).await;
    assert!(to.starts_with("/account?done=Linked"), "{to}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlinked_click_decides_nothing_until_the_person_links_once_then_it_is_their_vote() {
    let slack = start_slack(&[]);
    let (s, url) = with_app(&slack, &[]).await;
    let base = &s.server.base;
    let buyer = agent(base, COMPANY_KEY, json!({"approve": {"above": "50"}}), None).await;
    let approval = parked(base, &buyer).await;

    let first = click(&slack, &url, "U0APPROVER", "naive_approve", &approval).await;
    assert_eq!(first["status"], 200, "{first}");
    let said = told(&slack, &first).await;
    assert!(said.starts_with("Nothing was decided: your Slack user is not linked"), "{said}");
    assert_eq!(status_of(base, &approval).await["status"], "pending");

    // The link page shows whose Slack user it links; only its form post links it.
    let code = code_in(&said);
    let cookie = session_cookie(base, "approver").await;
    let page = server::http_client()
        .get(format!("{base}/slack/link?code={code}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("u0approver") && page.contains("Link my Slack user"), "{page}");
    let to = confirm(base, &cookie, &code).await;
    assert!(to.starts_with("/account?done=Linked"), "{to}");
    // A link works once, for anyone.
    let again = confirm(base, &session_cookie(base, "finance").await, &code).await;
    assert!(again.contains("error=") && again.contains("slack_link_used"), "{again}");
    let (_, links) = send(base, "GET", "/v1/slack/links", COMPANY_KEY, None).await;
    let linked: Vec<(&str, &str)> = links["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["slack_user_id"].as_str().unwrap(), l["username"].as_str().unwrap()))
        .collect();
    assert_eq!(linked, [("U0APPROVER", "approver")]);

    let second = click(&slack, &url, "U0APPROVER", "naive_approve", &approval).await;
    assert_eq!(told(&slack, &second).await, "Approved as approver: the call ran.");
    let a = status_of(base, &approval).await;
    assert_eq!((a["status"].as_str(), a["decided_by"].as_str()), (Some("approved"), Some("approver")), "{a}");
    let step = a["trail"].as_array().unwrap().iter().find(|t| t["step"] == "approved").unwrap().clone();
    assert_eq!(step["credential"], "Slack @u0approver (U0APPROVER) in C0APPROVE", "{step}");
    let (_, logs) = send(base, "GET", &format!("/v1/users/{}/logs", buyer.0), COMPANY_KEY, None).await;
    let entries = logs["items"].as_array().unwrap_or_else(|| panic!("{logs}"));
    let entry =
        entries.iter().find(|e| e["verdict"] == "approved").unwrap_or_else(|| panic!("{logs}")).clone();
    assert_eq!(entry["transport"], "slack", "{entry}");
    // The message now says who approved it, and its buttons are gone.
    let mut rewritten = false;
    for _ in 0..300 {
        let m = slack.messages().await;
        if m.len() == 1 && m[0]["blocks"].to_string().contains("Approved by approver") {
            assert!(!m[0]["blocks"].to_string().contains("naive_approve"), "{m:?}");
            rewritten = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(rewritten, "the message never said who approved: {:?}", slack.messages().await);
    // An admin removes the link: the next click asks to link again.
    let (st, _) = send(base, "DELETE", "/v1/slack/links/U0APPROVER", COMPANY_KEY, None).await;
    assert_eq!(st, 204);
    let next = parked(base, &buyer).await;
    let c = click(&slack, &url, "U0APPROVER", "naive_approve", &next).await;
    assert!(told(&slack, &c).await.contains("not linked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicks_that_may_not_decide_change_nothing_and_tell_only_the_clicker_why() {
    let slack = start_slack(&[]);
    let (s, url) = with_app(&slack, &[]).await;
    let base = &s.server.base;
    let rule = json!({"approve": {"rules": [{"above": "50", "approvers": 2, "role": "finance"}]}});
    let buyer = agent(base, COMPANY_KEY, rule, Some("admin")).await;
    let approval = parked(base, &buyer).await;
    let refused = |said: &str, why: &str| {
        assert!(said.starts_with("Nothing was decided") && said.contains(why), "{said}")
    };
    for (who, user) in [("U0REVIEWER", "reviewer"), ("U0ADMIN", "admin"), ("U0APPROVER", "approver")] {
        link(&slack, base, &url, who, user, &approval).await;
    }
    // Without the approver role or the rule's role; the agent's owner.
    let c = click(&slack, &url, "U0REVIEWER", "naive_approve", &approval).await;
    refused(&told(&slack, &c).await, "needs one of these roles");
    let c = click(&slack, &url, "U0ADMIN", "naive_approve", &approval).await;
    refused(&told(&slack, &c).await, "own");
    // One person counts once: a second click is refused and the quorum still needs another.
    let c = click(&slack, &url, "U0APPROVER", "naive_approve", &approval).await;
    assert!(told(&slack, &c).await.starts_with("Your approval is counted, as approver."));
    let c = click(&slack, &url, "U0APPROVER", "naive_approve", &approval).await;
    assert_eq!(
        told(&slack, &c).await,
        "Nothing was decided: approver has approved this already; it still needs 1 more approver, \
         one of them with role finance, from someone else"
    );
    let a = status_of(base, &approval).await;
    assert_eq!(
        (a["status"].as_str(), a["quorum"]["votes"].as_array().unwrap().len()),
        (Some("pending"), 1),
        "{a}"
    );
    // Deny asks a person who may not decide nothing: no form opens.
    let c = click(&slack, &url, "U0REVIEWER", "naive_deny", &approval).await;
    refused(&told(&slack, &c).await, "needs one of these roles");
    assert!(slack.views().await.is_empty());

    // Another tenant's approval does not exist here.
    let other = other_tenant_approval(&s.db, base).await;
    let c = click(&slack, &url, "U0APPROVER", "naive_approve", &other).await;
    refused(&told(&slack, &c).await, "not found");
    // Words that would reorder what an approver reads never reach Slack.
    let (st, b) = charge(base, &buyer, "pay%E2%80%AEnow").await;
    assert_eq!((st, b["code"].as_str()), (400, Some("invalid_justification")), "{b}");
}

/// An approval parked in a second tenant made with `server tenant create`.
async fn other_tenant_approval(db: &str, base: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["--database-url", db, "tenant", "create", "--name", "Other Co", "--credit", "500"])
        .env("NAIVE_MASTER_KEY", common::MASTER_KEY)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let key = text
        .split("company key: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{text}"));
    let theirs = agent(base, key, json!({"approve": {"above": "50"}}), None).await;
    parked(base, &theirs).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_stale_replayed_and_foreign_requests_are_refused_and_decide_nothing() {
    let slack = start_slack(&[]);
    let (s, url) = with_app(&slack, &[]).await;
    let base = &s.server.base;
    let buyer = agent(base, COMPANY_KEY, json!({"approve": {"above": "50"}}), None).await;
    let approval = parked(base, &buyer).await;
    link(&slack, base, &url, "U0APPROVER", "approver", &approval).await;
    let payload = |team: &str| {
        json!({
            "type": "block_actions", "team": {"id": team}, "user": {"id": "U0APPROVER", "username": "u0approver"},
            "channel": {"id": "C0APPROVE"}, "actions": [{"action_id": "naive_approve", "value": approval}],
        })
    };
    let stale = (chrono::Utc::now().timestamp() - 400).to_string();
    let cases = [
        (
            json!({"url": url, "payload": payload("T0REFERENCE"), "signature": "v0=00ff"}),
            "slack_signature_invalid",
        ),
        (json!({"url": url, "payload": payload("T0REFERENCE"), "timestamp": stale}), "slack_request_stale"),
        (json!({"url": url, "payload": payload("T0ELSEWHERE")}), "slack_wrong_workspace"),
    ];
    for (req, code) in cases {
        let r = drive(&slack, req).await;
        let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
        assert_eq!((r["status"].as_u64(), body["code"].as_str()), (Some(403), Some(code)), "{r}");
    }
    // The same signed request sent twice: the second is a replay.
    let good = drive(&slack, json!({"url": url, "payload": {"type": "block_actions", "team": {"id": "T0REFERENCE"}, "user": {"id": "U0X"}, "actions": [{"action_id": "naive_open"}]}})).await;
    assert_eq!(good["status"], 200, "{good}");
    let sent = &good["sent"];
    let again = server::http_client()
        .post(&url)
        .header("x-slack-request-timestamp", sent["timestamp"].as_str().unwrap())
        .header("x-slack-signature", sent["signature"].as_str().unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(sent["body"].as_str().unwrap().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 403);
    assert_eq!(again.json::<Value>().await.unwrap()["code"], "slack_request_replayed");
    assert_eq!(status_of(base, &approval).await["status"], "pending");
    // Removing the app forgets who linked: a later app may be another workspace's.
    let (_, links) = send(base, "GET", "/v1/slack/links", COMPANY_KEY, None).await;
    assert_eq!(links["items"].as_array().unwrap().len(), 1, "{links}");
    assert_eq!(send(base, "DELETE", "/v1/slack", COMPANY_KEY, None).await.0, 204);
    let (_, links) = send(base, "GET", "/v1/slack/links", COMPANY_KEY, None).await;
    assert_eq!(links["items"], json!([]), "{links}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_asks_the_reason_in_a_form_and_a_link_expires_unused() {
    let slack = start_slack(&[]);
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, chrono::Utc::now().to_rfc3339()).unwrap();
    let (s, url) = with_app(&slack, &[("NAIVE_TEST_CLOCK_FILE", clock.to_str().unwrap())]).await;
    let base = &s.server.base;
    let buyer = agent(base, COMPANY_KEY, json!({"approve": {"above": "50"}}), None).await;
    let approval = parked(base, &buyer).await;
    link(&slack, base, &url, "U0APPROVER", "approver", &approval).await;

    let c = click(&slack, &url, "U0APPROVER", "naive_deny", &approval).await;
    assert_eq!(c["status"], 200, "{c}");
    let views = slack.views().await;
    assert_eq!(views.len(), 1, "{views:?}");
    let view = &views[0]["view"];
    assert_eq!(
        (views[0]["trigger_id"].clone(), view["callback_id"].as_str()),
        (c["payload"]["trigger_id"].clone(), Some("naive_deny"))
    );
    let submit = |reason: &str| {
        json!({"url": url, "payload": {
            "type": "view_submission", "team": {"id": "T0REFERENCE"}, "user": {"id": "U0APPROVER", "username": "u0approver"},
            "view": {"callback_id": "naive_deny", "private_metadata": view["private_metadata"],
                     "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}}},
        }})
    };
    // No reason: the form says so under its field, and nothing is decided.
    let r = drive(&slack, submit("  ")).await;
    let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["response_action"], "errors", "{r}");
    assert_eq!(status_of(base, &approval).await["status"], "pending");
    let r = drive(&slack, submit("not this vendor")).await;
    assert_eq!((r["status"].as_u64(), r["body"].as_str()), (Some(200), Some("")), "{r}");
    let a = status_of(base, &approval).await;
    assert_eq!(
        (a["status"].as_str(), a["decision_reason"].as_str()),
        (Some("denied"), Some("not this vendor")),
        "{a}"
    );

    // A link not used within its ten minutes does not link.
    let next = parked(base, &buyer).await;
    let c = click(&slack, &url, "U0FINANCE", "naive_approve", &next).await;
    let code = code_in(&told(&slack, &c).await);
    std::fs::write(&clock, (chrono::Utc::now() + chrono::Duration::minutes(11)).to_rfc3339()).unwrap();
    let to = confirm(base, &session_cookie(base, "finance").await, &code).await;
    assert!(to.contains("error=") && to.contains("slack_link_expired"), "{to}");
    let (_, links) = send(base, "GET", "/v1/slack/links", COMPANY_KEY, None).await;
    assert_eq!(links["items"].as_array().unwrap().len(), 1, "{links}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_posts_its_parked_calls_to_the_reference_slack_it_starts() {
    // As `make run` starts it: the demo tenant's Slack app is the reference Slack.
    let s = start_fresh(&[("NAIVE_DEMO_UPSTREAM", "1")]).await;
    let base = &s.server.base;
    let (st, app) = send(base, "GET", "/v1/slack", COMPANY_KEY, None).await;
    assert_eq!((st, app["team_id"].as_str()), (200, Some(server::reference::slack::TEAM_ID)), "{app}");
    let buyer = agent(base, COMPANY_KEY, json!({"approve": {"above": "50"}}), None).await;
    parked(base, &buyer).await;
    for _ in 0..300 {
        let (_, list) = send(base, "GET", "/v1/slack/deliveries", COMPANY_KEY, None).await;
        if list["items"].as_array().unwrap().iter().any(|d| d["status"] == "delivered") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the parked call never reached the demo's Slack");
}
