//! Connected apps, black-box: the real server on a fresh database and the reference upstream
//! (`server upstream`, whose `/mcp` is a small issue tracker served as an MCP server) as its
//! own process. An admin registers the tracker; an agent lists and calls its tools over `/v1`
//! through the same pipeline as every action.

mod common;

use common::process::{UPSTREAM_SECRET, Upstream, start_upstream};
use common::{COMPANY_KEY, TestApp, spawn_app};
use serde_json::{Value, json};

async fn company(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (s, _, b) = app.send(method, path, Some(COMPANY_KEY), body, &[]).await;
    (s, b)
}

/// Registers the reference tracker as `toolkit`, its credential in the vault.
async fn register(app: &TestApp, up: &Upstream, toolkit: &str) {
    let (s, b) =
        company(app, "PUT", "/v1/vault/secrets/tracker", Some(json!({ "value": UPSTREAM_SECRET }))).await;
    assert!(s == 200 || s == 201, "{s} {b}");
    let spec = json!({"url": format!("{}/mcp", up.base), "auth": {"kind": "bearer", "secret": "tracker"}});
    let (s, b) = company(app, "PUT", &format!("/v1/connected-apps/{toolkit}"), Some(spec)).await;
    assert_eq!(s, 200, "{b}");
}

async fn act(app: &TestApp, profile: &str, key: &str, verb: &str, args: Value) -> (u16, Value) {
    let (s, _, b) = app
        .send("POST", &format!("/v1/users/{profile}/connections/{verb}"), Some(key), Some(args), &[])
        .await;
    (s, b)
}

/// What reached the tracker: its create and delete records.
async fn tracker_records(up: &Upstream) -> Vec<String> {
    up.records()
        .await
        .iter()
        .map(|r| format!("{} {}", r["action"].as_str().unwrap(), r["party"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn a_connected_apps_tools_are_listed_by_the_kit_and_gated_by_their_annotations() {
    let app = spawn_app().await;
    let up = start_upstream();
    register(&app, &up, "tracker").await;
    // The same server registered again under another toolkit the kit does not permit.
    register(&app, &up, "wiki").await;
    let (s, probe) = company(&app, "POST", "/v1/connected-apps/tracker/test", None).await;
    assert_eq!(s, 200, "{probe}");
    assert_eq!(probe["ok"], true, "{probe}");
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"], "toolkits": {"allow_all": false, "filters": {"tracker": {}}}}))
        .await;
    let (profile, _, key) = app.new_agent("clerk", "Apps", None).await;

    let (s, listed) = act(&app, &profile, &key, "tools", json!({})).await;
    assert_eq!(s, 200, "{listed}");
    assert_eq!(listed["connector"], "mcp");
    let tools = listed["result"]["tools"].as_array().unwrap();
    let effects: Vec<(String, String)> = tools
        .iter()
        .map(|t| {
            (
                format!("{}/{}", t["toolkit"].as_str().unwrap(), t["name"].as_str().unwrap()),
                t["effect"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        effects,
        [
            ("tracker/issues.list".to_string(), "read".to_string()),
            ("tracker/issues.create".to_string(), "write".to_string()),
            ("tracker/issues.delete".to_string(), "destructive".to_string()),
        ],
        "the unannotated tool is a write"
    );
    assert_eq!(listed["result"]["withheld_by_policy"], 3, "the wiki toolkit's three tools: {listed}");

    // The unannotated tool runs as a write; the read-only one reads what it made.
    let (s, made) = act(
        &app,
        &profile,
        &key,
        "execute",
        json!({"toolkit": "tracker", "tool": "issues.create", "arguments": {"title": "printer jam"}}),
    )
    .await;
    assert_eq!(s, 200, "{made}");
    assert_eq!(made["result"]["is_error"], false, "{made}");
    let id = made["result"]["content"]["id"].as_i64().unwrap();
    let (s, read) =
        act(&app, &profile, &key, "execute", json!({"toolkit": "tracker", "tool": "issues.list"})).await;
    assert_eq!(s, 200, "{read}");
    assert_eq!(read["result"]["content"]["issues"][0]["title"], "printer jam");
    assert_eq!(tracker_records(&up).await, ["tracker/issues.create printer jam"]);

    // The destructive tool parks (the kit parks destructive tools by default); nothing
    // reaches the tracker until a human approves.
    let (s, parked) = act(
        &app,
        &profile,
        &key,
        "execute",
        json!({"toolkit": "tracker", "tool": "issues.delete", "arguments": {"id": id}}),
    )
    .await;
    assert_eq!(s, 202, "{parked}");
    assert_eq!(parked["error"]["details"]["reason"], "destructive_effect", "{parked}");
    assert_eq!(tracker_records(&up).await.len(), 1);
    let approval = parked["recovery"][0]["approval_id"].as_str().unwrap();
    let (_, approver) = app.personal_token("approver", &["approver"]).await;
    let (s, _, done) = app
        .send("POST", &format!("/v1/approvals/{approval}/approve"), Some(&approver), Some(json!({})), &[])
        .await;
    assert_eq!(s, 200, "{done}");
    assert_eq!(done["result"]["content"]["deleted"], true, "{done}");
    assert_eq!(tracker_records(&up).await[1], format!("tracker/issues.delete {id}"));

    // A toolkit the kit does not permit is refused with the step that names it.
    let (s, refused) =
        act(&app, &profile, &key, "execute", json!({"toolkit": "wiki", "tool": "issues.list"})).await;
    assert_eq!(s, 403, "{refused}");
    assert_eq!(refused["recovery"][0]["kind"], "request_toolkit", "{refused}");
    assert_eq!(refused["recovery"][0]["toolkit"], "wiki");
    // A tool the app does not have is a 404, not an outage.
    let (s, bad) =
        act(&app, &profile, &key, "execute", json!({"toolkit": "tracker", "tool": "issues.burn"})).await;
    assert_eq!((s, bad["code"].as_str()), (404, Some("not_found")), "{bad}");

    // The tracker's credential reached the tracker (it answered) and never the agent.
    for path in [format!("/v1/users/{profile}/logs"), format!("/v1/users/{profile}/ledger")] {
        let (s, _, b) = app.send("GET", &path, Some(&key), None, &[]).await;
        assert_eq!(s, 200);
        assert!(!b.to_string().contains(UPSTREAM_SECRET), "{path}: {b}");
    }
    for b in [&listed, &made, &read, &parked, &done, &refused, &probe] {
        assert!(!b.to_string().contains(UPSTREAM_SECRET), "{b}");
    }
}

#[tokio::test]
async fn registration_is_checked_and_an_app_that_does_not_answer_degrades() {
    let app = spawn_app().await;
    let spec = |url: &str, auth: Value| json!({"url": url, "auth": auth});
    let (s, b) = company(
        &app,
        "PUT",
        "/v1/connected-apps/Tracker",
        Some(spec("http://127.0.0.1:9/mcp", json!({"kind": "none"}))),
    )
    .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_toolkit")), "{b}");
    let (s, b) = company(
        &app,
        "PUT",
        "/v1/connected-apps/tracker",
        Some(spec("ftp://x/mcp", json!({"kind": "none"}))),
    )
    .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_connector_url")), "{b}");
    let (s, b) = company(
        &app,
        "PUT",
        "/v1/connected-apps/tracker",
        Some(spec("http://127.0.0.1:9/mcp", json!({"kind": "bearer", "secret": "nope"}))),
    )
    .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("unknown_secret")), "{b}");
    let (s, b) = company(
        &app,
        "PUT",
        "/v1/connected-apps/tracker",
        Some(spec("http://127.0.0.1:9/mcp", json!({"kind": "hmac", "secret": "nope"}))),
    )
    .await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_app_auth")), "{b}");
    // Nothing listens on port 9: the listing names the app instead of failing.
    let (s, b) = company(
        &app,
        "PUT",
        "/v1/connected-apps/tracker",
        Some(spec("http://127.0.0.1:9/mcp", json!({"kind": "none"}))),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let (s, probe) = company(&app, "POST", "/v1/connected-apps/tracker/test", None).await;
    assert_eq!((s, &probe["ok"]), (200, &json!(false)), "{probe}");
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"]})).await;
    let (profile, _, key) = app.new_agent("clerk", "Apps", None).await;
    let (s, listed) = act(&app, &profile, &key, "tools", json!({})).await;
    assert_eq!(s, 200, "{listed}");
    assert_eq!(listed["result"]["unavailable"][0]["toolkit"], "tracker", "{listed}");
    let (s, b) = act(&app, &profile, &key, "execute", json!({"toolkit": "nothing", "tool": "x"})).await;
    assert_eq!((s, b["code"].as_str()), (404, Some("not_found")), "{b}");
    let (s, b) = company(&app, "DELETE", "/v1/connected-apps/tracker", None).await;
    assert_eq!((s, b["items"].as_array().map(Vec::len)), (200, Some(0)), "{b}");
    let (s, _) = company(&app, "DELETE", "/v1/connected-apps/tracker", None).await;
    assert_eq!(s, 404);
}
