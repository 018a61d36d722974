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
    // The kit opens the tracker and pins its unannotated `issues.create` as the write it is.
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"],
        "toolkits": {"filters": {"tracker": {"effects": {"issues.create": "write"}}}}}))
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
            ("tracker/issues.export".to_string(), "read".to_string()),
        ],
        "the unannotated tool is what the kit pins"
    );
    assert_eq!(listed["result"]["withheld_by_policy"], 4, "the wiki toolkit's four tools: {listed}");

    // The pinned tool runs as a write; the read-only one reads what it made.
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
    // A toolkit no kit names is refused with the step that asks for it, registered or not.
    let (s, b) = act(&app, &profile, &key, "execute", json!({"toolkit": "nothing", "tool": "x"})).await;
    assert_eq!((s, b["recovery"][0]["kind"].as_str()), (403, Some("request_toolkit")), "{b}");
    let (s, b) = company(&app, "DELETE", "/v1/connected-apps/tracker", None).await;
    assert_eq!((s, b["items"].as_array().map(Vec::len)), (200, Some(0)), "{b}");
    let (s, _) = company(&app, "DELETE", "/v1/connected-apps/tracker", None).await;
    assert_eq!(s, 404);
}

/// #30 finding 4: a new app is closed to agents until a kit names its toolkit; a tool without
/// annotations is destructive; a pin is the least a tool is gated as, whatever the app says.
#[tokio::test]
async fn a_new_app_is_closed_until_a_kit_names_it_and_a_pin_outranks_its_annotations() {
    let app = spawn_app().await;
    let up = start_upstream();
    register(&app, &up, "tracker").await;
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"]})).await;
    let (profile, _, key) = app.new_agent("clerk", "Apps", None).await;
    let (s, listed) = act(&app, &profile, &key, "tools", json!({})).await;
    assert_eq!(s, 200, "{listed}");
    assert_eq!(
        (listed["result"]["tools"].as_array().map(Vec::len), &listed["result"]["withheld_by_policy"]),
        (Some(0), &json!(4))
    );
    let create = json!({"toolkit": "tracker", "tool": "issues.create", "arguments": {"title": "x"}});
    let (s, refused) = act(&app, &profile, &key, "execute", create.clone()).await;
    assert_eq!((s, refused["recovery"][0]["kind"].as_str()), (403, Some("request_toolkit")), "{refused}");

    // Named without pins: the tool that declares nothing parks as destructive.
    app.put_kit(
        json!({"name": "Apps", "primitives": ["connections"], "toolkits": {"filters": {"tracker": {}}}}),
    )
    .await;
    let (s, parked) = act(&app, &profile, &key, "execute", create).await;
    assert_eq!(
        (s, parked["error"]["details"]["reason"].as_str()),
        (202, Some("destructive_effect")),
        "{parked}"
    );

    // Pinned destructive, the read-only `issues.list` parks too: the app cannot lower a pin.
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"],
        "toolkits": {"filters": {"tracker": {"effects": {"issues.list": "destructive"}}}}}))
        .await;
    let (s, parked) =
        act(&app, &profile, &key, "execute", json!({"toolkit": "tracker", "tool": "issues.list"})).await;
    assert_eq!(
        (s, parked["error"]["details"]["reason"].as_str()),
        (202, Some("destructive_effect")),
        "{parked}"
    );
    assert!(tracker_records(&up).await.is_empty(), "nothing reached the tracker");
}

/// #30 finding 5: an app's answers are bounded, in bytes and in tools, with a code that says
/// which bound was passed.
#[tokio::test]
async fn an_app_answer_past_its_bounds_fails_with_a_code_that_says_which() {
    let app = spawn_app().await;
    let up = start_upstream();
    register(&app, &up, "tracker").await;
    let spec =
        json!({"url": format!("{}/mcp-sprawling", up.base), "auth": {"kind": "bearer", "secret": "tracker"}});
    assert_eq!(company(&app, "PUT", "/v1/connected-apps/reports", Some(spec)).await.0, 200);
    app.put_kit(json!({"name": "Apps", "primitives": ["connections"], "toolkits": {"allow_all": true}}))
        .await;
    let (profile, _, key) = app.new_agent("clerk", "Apps", None).await;
    let big = json!({"toolkit": "tracker", "tool": "issues.export", "arguments": {"bytes": 2_000_000}});
    let (s, b) = act(&app, &profile, &key, "execute", big).await;
    assert_eq!(
        (s, b["error"]["details"]["reason"].as_str()),
        (503, Some("connected_app_answer_too_large")),
        "{b}"
    );
    let small = json!({"toolkit": "tracker", "tool": "issues.export", "arguments": {"bytes": 1_000}});
    assert_eq!(act(&app, &profile, &key, "execute", small).await.0, 200);
    let (s, listed) = act(&app, &profile, &key, "tools", json!({})).await;
    assert_eq!(s, 200, "{listed}");
    assert_eq!(
        listed["result"]["unavailable"],
        json!([{"toolkit": "reports", "reason": "connected_app_too_many_tools"}])
    );
    assert_eq!(listed["result"]["tools"].as_array().map(Vec::len), Some(4), "the tracker still lists");
    let (s, probe) = company(&app, "POST", "/v1/connected-apps/reports/test", None).await;
    assert_eq!((s, probe["error"].as_str()), (200, Some("connected_app_too_many_tools")), "{probe}");
}

/// #30 finding 6: a secret that cannot travel in a header, named by one app, fails only the
/// calls of that app, with a step for a person, and the console's list says which app.
#[tokio::test]
async fn one_broken_setting_fails_only_the_calls_that_use_it() {
    let app = spawn_app().await;
    let up = start_upstream();
    let (s, b) =
        company(&app, "PUT", "/v1/vault/secrets/broken", Some(json!({ "value": "line one\nline two" })))
            .await;
    assert!(s == 200 || s == 201, "{s} {b}");
    let spec = json!({"url": format!("{}/mcp", up.base), "auth": {"kind": "bearer", "secret": "broken"}});
    assert_eq!(company(&app, "PUT", "/v1/connected-apps/tracker", Some(spec)).await.0, 200);
    app.put_kit(json!({"name": "Apps", "primitives": ["connections", "web"], "toolkits": {"filters": {"tracker": {}}}})).await;
    let (profile, _, key) = app.new_agent("clerk", "Apps", None).await;
    let (s, read) =
        app.web_read(&gateway::ProfileId::parse(&profile).unwrap(), &key, "https://x.test/").await;
    assert_eq!(s, 200, "a sandbox read is untouched by the broken app: {read}");
    let (s, b) =
        act(&app, &profile, &key, "execute", json!({"toolkit": "tracker", "tool": "issues.list"})).await;
    assert_eq!((s, b["verdict"].as_str()), (503, Some("unavailable")), "{b}");
    assert_eq!(b["error"]["details"]["reason"], "connected_app_secret_unusable", "{b}");
    assert!(b["recovery"].as_array().unwrap().iter().any(|r| r["kind"] == "escalate_to_human"), "{b}");
    assert!(!b.to_string().contains("broken"), "no configuration detail reaches the agent: {b}");
    let (s, listed) = act(&app, &profile, &key, "tools", json!({})).await;
    assert_eq!(
        (s, &listed["result"]["unavailable"][0]["reason"]),
        (200, &json!("connected_app_secret_unusable"))
    );
    let (_, apps) = company(&app, "GET", "/v1/connected-apps", None).await;
    assert_eq!(apps["items"][0]["problem"], "connected_app_secret_unusable", "{apps}");
}
