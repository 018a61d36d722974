//! What a hostile review of the fourth wave's surfaces found (issue #47), one black-box test
//! each: the real server on port 0 with a fresh database, spoken to over HTTP as an agent, the
//! company, a human or the operator would. Each test was run against the code before its fix
//! and failed there; the finding's number is in the test's comment.

mod common;

use common::{COMPANY_KEY, OPERATOR_KEY, TestApp, spawn_app};
use serde_json::{Value, json};

/// The `/metrics` exposition, read with the operator key.
async fn scrape(app: &TestApp) -> String {
    let res = app.client.get(format!("{}/metrics", app.base)).bearer_auth(OPERATOR_KEY).send().await.unwrap();
    assert_eq!(res.status(), 200);
    res.text().await.unwrap()
}

/// The sum of the samples of `metric` whose labels contain `label`.
fn sum(exposition: &str, metric: &str, label: &str) -> f64 {
    exposition
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// #1: an action name a caller makes up is never a label value: the call is counted under
/// `other`, and no series names it, however many an agent invents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_actions_are_counted_as_other_and_mint_no_series() {
    let app = spawn_app().await;
    let (p, _, key) = app.new_agent("minter", "Default", None).await;
    let (other, web_read) = (r#"action="other""#, r#"action="web.read""#);
    let before = scrape(&app).await;
    for i in 0..5 {
        let path = format!("/v1/users/{p}/zzmint/v{}", ["a", "b", "c", "d", "e"][i]);
        let (s, _, b) = app.send("POST", &path, Some(&key), Some(json!({})), &[]).await;
        assert!((400..500).contains(&s), "{s} {b}");
    }
    let (s, b) = read(&app, &p, &key).await;
    assert_eq!(s, 200, "{b}");
    let exposition = scrape(&app).await;
    assert!(!exposition.contains("zzmint"), "a caller's words became a label:\n{exposition}");
    let moved = |label: &str| {
        sum(&exposition, "naive_governed_calls_total", label)
            - sum(&before, "naive_governed_calls_total", label)
    };
    assert_eq!((moved(other), moved(web_read)), (5.0, 1.0), "{exposition}");
}

/// A `web.read` the sandbox answers.
async fn read(app: &TestApp, profile: &str, key: &str) -> (u16, Value) {
    let path = format!("/v1/users/{profile}/web/read");
    let (s, _, b) =
        app.send("POST", &path, Some(key), Some(json!({"url": "https://example.com/"})), &[]).await;
    (s, b)
}

/// #10: a justification cannot hide or reorder what an approver reads (a right-to-left override
/// or a zero-width character is refused), and a Slack endpoint gets the agent's words as one
/// plain-text line: not in the notification text, no line break, no bare link, no markup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn justifications_cannot_spoof_what_approvers_read() {
    let app = spawn_app().await;
    let receiver = common::process::start_receiver(&[]);
    let hook =
        json!({"url": format!("{}/hook", receiver.base), "events": ["approval.parked"], "format": "slack"});
    let (s, _, b) = app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(hook), &[]).await;
    assert_eq!(s, 201, "{b}");
    app.put_kit(json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "50"}}}))
        .await;
    let (p, _, key) = app.new_agent("parker", "Parks", None).await;
    let charge = async |why: &str| {
        let path = format!("/v1/users/{p}/cards/charge");
        let args = json!({"amount": "60.00", "merchant": "acme"});
        app.send("POST", &path, Some(&key), Some(args), &[("naive-justification", why)]).await
    };
    // U+202E (right-to-left override) and U+200B (zero-width space), percent-encoded.
    for hidden in ["refund%E2%80%AEexe.pdf", "pay%E2%80%8Bnow", "soft%C2%ADhyphen"] {
        let (s, _, b) = charge(hidden).await;
        assert_eq!((s, b["code"].as_str()), (400, Some("invalid_justification")), "{hidden}: {b}");
    }
    let said = "%2Aurgent%2A%0A%3C%21channel%3E%20see%20https%3A%2F%2Fevil.example%2Fpay";
    let (s, _, b) = charge(said).await;
    assert_eq!(s, 202, "{b}");

    let mut got = Vec::new();
    for _ in 0..300 {
        got = receiver.received().await;
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let body: Value = serde_json::from_str(got[0]["body"].as_str().expect("a message")).unwrap();
    let text = body["text"].as_str().unwrap();
    assert!(
        !text.contains("urgent") && !text.contains("evil"),
        "the agent's words are not the notification: {text}"
    );
    let words = &body["blocks"][1]["elements"][0];
    assert_eq!(words["type"], "plain_text", "{body}");
    assert_eq!(words["text"], "The agent's reason: \"*urgent* <!channel> see https[:]//evil[.]example/pay\"");
}

/// The changed calls of a replay report: (amount, was, would be, its detail).
fn changes(report: &Value) -> Vec<(String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                s(&c["amount"]),
                s(&c["was"]["verdict"]),
                s(&c["would_be"]["verdict"]),
                s(&c["would_be"]["detail"]),
            )
        })
        .collect()
}

/// #0: a call the draft refuses gives back what it spent, so the calls after it are decided
/// on what would have been spent: lowering a cap to $60 over charges of $30, $50, $20 and $10
/// refuses the $50 alone (30 + 20 + 10 = 60), for a lifetime cap and for a day's cap alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_gives_back_what_a_refused_call_would_not_have_spent() {
    let app = spawn_app().await;
    let limits = [
        (json!({"budget": {"hard_cap": "1000"}}), json!({"budget": {"hard_cap": "60"}})),
        (
            json!({"budget": {"periods": [{"every": "day", "hard_cap": "1000"}]}}),
            json!({"budget": {"periods": [{"every": "day", "hard_cap": "60"}]}}),
        ),
    ];
    for (n, (live, draft)) in limits.into_iter().enumerate() {
        let name = format!("Lowered{n}");
        app.put_kit(json!({"name": name, "primitives": ["cards"], "limits": live})).await;
        let (p, _, key) = app.new_agent(&format!("spender{n}"), &name, None).await;
        for amount in ["30.00", "50.00", "20.00", "10.00"] {
            let path = format!("/v1/users/{p}/cards/charge");
            let (s, _, b) = app
                .send("POST", &path, Some(&key), Some(json!({"amount": amount, "merchant": "acme"})), &[])
                .await;
            assert_eq!(s, 200, "{b}");
        }
        let draft = json!({"draft": {"name": name, "primitives": ["cards"], "limits": draft}});
        let path = format!("/v1/kits/{name}/replay");
        let (s, _, r) = app.send("POST", &path, Some(COMPANY_KEY), Some(draft), &[]).await;
        assert_eq!(s, 200, "{r}");
        assert_eq!(
            (r["summary"]["calls"].as_u64(), r["summary"]["changed"].as_u64()),
            (Some(4), Some(1)),
            "{r}"
        );
        let detail = if n == 0 { "hard_cap_exceeded" } else { "period_hard_cap_exceeded" };
        assert_eq!(changes(&r), [("50.00".into(), "allow".into(), "deny".into(), detail.into())], "{r}");
    }
}

/// #15: a promotion names the shadow it read (its `ETag`), and is read and ended in its job: a
/// shadow discarded and started again since is `shadow_changed`, saves nothing and keeps the
/// new one running; promoting the new one saves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promote_saves_the_shadow_it_read_or_nothing() {
    let app = spawn_app().await;
    let kit = |cap: &str| json!({"name": "Promoted", "primitives": ["cards"], "limits": {"budget": {"hard_cap": cap}}});
    app.put_kit(kit("1000")).await;
    let shadow = "/v1/kits/Promoted/shadow";
    let (s, _, b) = app.send("PUT", shadow, Some(COMPANY_KEY), Some(kit("50")), &[]).await;
    assert_eq!(s, 201, "{b}");
    let (s, h, _) = app.send("GET", shadow, Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200);
    let read = h["etag"].to_str().unwrap().to_string();
    assert_eq!(app.send("DELETE", shadow, Some(COMPANY_KEY), None, &[]).await.0, 204);
    assert_eq!(app.send("PUT", shadow, Some(COMPANY_KEY), Some(kit("70")), &[]).await.0, 201);

    let promote = format!("{shadow}/promote");
    let (s, _, b) = app.send("POST", &promote, Some(COMPANY_KEY), None, &[("if-match", &read)]).await;
    assert_eq!((s, b["code"].as_str()), (409, Some("shadow_changed")), "{b}");
    let (_, _, live) = app.send("GET", "/v1/kits/Promoted", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(live["kit"]["version"], 1, "nothing was saved: {live}");
    let (s, h, running) = app.send("GET", shadow, Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(
        (s, &running["shadow"]["kit"]["limits"]["budget"]["hard_cap"]),
        (200, &json!("70.00")),
        "{running}"
    );

    let now = h["etag"].to_str().unwrap().to_string();
    let (s, _, saved) = app.send("POST", &promote, Some(COMPANY_KEY), None, &[("if-match", &now)]).await;
    assert_eq!(s, 200, "{saved}");
    assert_eq!(
        (&saved["kit"]["version"], &saved["kit"]["limits"]["budget"]["hard_cap"]),
        (&json!(2), &json!("70.00"))
    );
    assert_eq!(app.send("GET", shadow, Some(COMPANY_KEY), None, &[]).await.0, 404);
}

/// An MCP `initialize` request (spec 2025-11-25, which opens a session).
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}})
}

/// POSTs `body` to `/mcp` with `key`: the status, the session id it opened (if any), the body.
async fn mcp_post(base: &str, key: &str, body: &Value) -> (u16, Option<String>, String) {
    let res = server::http_client()
        .post(format!("{base}/mcp"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .json(body)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .expect("the server answers /mcp");
    let session = res.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    (res.status().as_u16(), session, res.text().await.unwrap())
}

/// #00: a key past its open-session limit is refused before any session exists (the refusal
/// opens none, and a session closed gives its place back), and a flood of refused
/// `initialize` requests leaves `/healthz` and another tenant's calls answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_mcp_sessions_open_nothing_and_block_no_one() {
    use common::process;
    let dir = tempfile::tempdir().unwrap();
    let (db, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let server = process::start_on(&db, &[]);
    process::wait_until_listening(&server.base).await;
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["tenant", "create", "--name", "Bystander", "--credit", "100", "--database-url", &db])
        .output()
        .unwrap();
    let printed = String::from_utf8(made.stdout).unwrap();
    let other_company =
        printed.split_whitespace().find(|w| w.starts_with("nv_")).expect("a company key").to_string();
    let base = server.base.as_str();
    let agent = async |company: &str, name: &str| {
        let (s, p) = process::call(
            base,
            "POST",
            "/v1/agent-profiles",
            company,
            Some(json!({"name": name, "kit": "Default"})),
            None,
        )
        .await;
        assert_eq!(s, 201, "{p}");
        let id = p["id"].as_str().unwrap().to_string();
        let (_, k) =
            process::call(base, "POST", &format!("/v1/agent-profiles/{id}/keys"), company, None, None).await;
        (id, k["secret"].as_str().unwrap().to_string())
    };
    let (_, flooder) = agent(COMPANY_KEY, "flooder").await;
    let (bystander, bystander_key) = agent(&other_company, "bystander").await;

    let mut open = Vec::new();
    for _ in 0..32 {
        let (s, session, b) = mcp_post(base, &flooder, &initialize()).await;
        assert_eq!(s, 200, "{b}");
        open.push(session.expect("an accepted initialize opens a session"));
    }
    for i in 0..300 {
        let (_, session, b) = mcp_post(base, &flooder, &initialize()).await;
        assert!(b.contains("too_many_sessions"), "initialize {i} past the limit: {b}");
        assert_eq!(session, None, "a refused initialize opened a session: {b}");
    }
    let health = server::http_client()
        .get(format!("{base}/healthz"))
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await;
    assert!(health.is_ok_and(|r| r.status() == 200), "/healthz answers after the flood");
    let read = json!({"url": "https://example.com/"});
    let (s, b) = process::call(
        base,
        "POST",
        &format!("/v1/users/{bystander}/web/read"),
        &bystander_key,
        Some(read),
        None,
    )
    .await;
    assert_eq!(s, 200, "another tenant's call answers after the flood: {b}");

    // A closed session gives its place back.
    let closed = server::http_client()
        .delete(format!("{base}/mcp"))
        .bearer_auth(&flooder)
        .header("mcp-session-id", &open[0])
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let (s, session, b) = mcp_post(base, &flooder, &initialize()).await;
    assert_eq!((s, session.is_some()), (200, true), "{b}");
    drop(server);
}

/// `n` governed calls of `path` in a row: their statuses.
async fn statuses(app: &TestApp, profile: &str, key: &str, path: &str, body: Value, n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (s, _, _) = app
            .send("POST", &format!("/v1/users/{profile}/{path}"), Some(key), Some(body.clone()), &[])
            .await;
        out.push(s);
    }
    out
}

/// #2: two rate limits on one action pattern and unit (a child's tighter copy of its parent's
/// limit) count each call once, so the tighter bound lets exactly its number through, on both
/// engines; a kit that names one pattern and unit twice is refused with the path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_sharing_a_window_count_each_call_once() {
    let (app, _clock) = common::spawn_clocked("2027-02-01T10:00:05Z").await;
    let rate = |calls: u32| json!({"rate": [{"action": "*", "calls": calls, "per": "minute"}]});
    app.put_kit(json!({"name": "Lead", "primitives": ["web"], "limits": rate(10)})).await;
    app.put_kit(json!({"name": "Helper", "primitives": ["web"], "limits": rate(5)})).await;
    let (lead, _, _) = app.new_agent("lead", "Lead", None).await;
    let body = json!({"name": "helper", "kit": "Helper", "parent": lead});
    let (s, _, p) = app.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(body), &[]).await;
    assert_eq!(s, 201, "{p}");
    let helper = p["id"].as_str().unwrap().to_string();
    let (_, _, k) =
        app.send("POST", &format!("/v1/agent-profiles/{helper}/keys"), Some(COMPANY_KEY), None, &[]).await;
    let key = k["secret"].as_str().unwrap();
    let read = json!({"url": "https://example.com/"});
    assert_eq!(statuses(&app, &helper, key, "web/read", read, 6).await, [200, 200, 200, 200, 200, 429]);

    let twice = json!({"name": "Twice", "primitives": ["web"], "limits": {"rate": [
        {"action": "*", "calls": 3, "per": "minute"}, {"action": "*", "calls": 100, "per": "minute"}]}});
    let (s, _, b) = app.send("PUT", "/v1/kits/Twice", Some(COMPANY_KEY), Some(twice), &[]).await;
    assert_eq!((s, b["code"].as_str()), (400, Some("invalid_kit")), "{b}");
    assert!(b["message"].as_str().unwrap().contains("limits.rate[1]"), "{b}");
}

/// #3: a kit's rate limit counts every governed call, brain writebacks included, over HTTP:
/// under 2 a minute on `brain.*`, the third writeback is refused 429 and leaves no proposal,
/// and a `brain.query` after them finds the window full too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brain_writebacks_are_rate_limited_and_counted() {
    let (app, clock) = common::spawn_clocked("2027-02-01T10:00:05Z").await;
    let kit = json!({"name": "Brainy", "primitives": ["brain"], "limits": {"rate": [{"action": "brain.*", "calls": 2, "per": "minute"}]}});
    app.put_kit(kit).await;
    let (p, _, key) = app.new_agent("scribe", "Brainy", None).await;
    let mut got = Vec::new();
    for i in 0..5 {
        let wb = json!({"run_id": format!("r{i}"), "source": "notes", "claims": [{"object_type": "fact", "content": {"text": format!("x{i}")}}]});
        let (s, h, b) = app.send("POST", "/v1/brain/writebacks", Some(&key), Some(wb), &[]).await;
        if s == 429 {
            assert_eq!(b["error"]["details"]["reason"], "kit_rate_limit", "{b}");
            assert!(h.contains_key("retry-after"), "{h:?}");
        }
        got.push(s);
    }
    assert_eq!(got, [201, 201, 429, 429, 429]);
    let (_, _, list) = app.send("GET", "/v1/brain/writebacks", Some(COMPANY_KEY), None, &[]).await;
    let mine = list["items"].as_array().unwrap().iter().filter(|w| w["profile_id"] == p.as_str()).count();
    assert_eq!(mine, 2, "{list}");
    assert_eq!(statuses(&app, &p, &key, "brain/query", json!({"q": "x"}), 1).await, [429]);
    std::fs::write(&clock, "2027-02-01T10:01:00Z").unwrap();
    let wb = json!({"run_id": "later", "source": "notes", "claims": [{"object_type": "fact", "content": {"text": "y"}}]});
    assert_eq!(app.send("POST", "/v1/brain/writebacks", Some(&key), Some(wb), &[]).await.0, 201);
}

/// #8: a child kit's pin never gates a connected app's tool below its parent: the parent
/// leaves the unannotated `issues.create` unpinned (gated `destructive`, so it parks), the
/// child pins it `read`, and the child's call parks too and reaches nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_pin_never_gates_a_tool_below_its_parent() {
    use common::process::{UPSTREAM_SECRET, start_upstream};
    let app = spawn_app().await;
    let up = start_upstream();
    let secret = json!({ "value": UPSTREAM_SECRET });
    assert!(app.send("PUT", "/v1/vault/secrets/tracker", Some(COMPANY_KEY), Some(secret), &[]).await.0 < 300);
    let spec = json!({"url": format!("{}/mcp", up.base), "auth": {"kind": "bearer", "secret": "tracker"}});
    assert_eq!(
        app.send("PUT", "/v1/connected-apps/tracker", Some(COMPANY_KEY), Some(spec), &[]).await.0,
        200
    );
    let pins = |effects: Value| json!({"filters": {"tracker": {"effects": effects}}});
    app.put_kit(json!({"name": "AppsLead", "primitives": ["connections"], "toolkits": pins(json!({}))}))
        .await;
    app.put_kit(json!({"name": "AppsHelper", "primitives": ["connections"], "toolkits": pins(json!({"issues.create": "read"}))})).await;
    let (lead, _, _) = app.new_agent("lead", "AppsLead", None).await;
    let body = json!({"name": "helper", "kit": "AppsHelper", "parent": lead});
    let (_, _, p) = app.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(body), &[]).await;
    let helper = p["id"].as_str().unwrap().to_string();
    let (_, _, k) =
        app.send("POST", &format!("/v1/agent-profiles/{helper}/keys"), Some(COMPANY_KEY), None, &[]).await;
    let key = k["secret"].as_str().unwrap();

    let path = format!("/v1/users/{helper}/connections/tools");
    let (s, _, listed) = app.send("POST", &path, Some(key), Some(json!({})), &[]).await;
    assert_eq!(s, 200, "{listed}");
    let create =
        listed["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "issues.create").cloned();
    assert_eq!(create.map(|t| t["effect"].clone()), Some(json!("destructive")), "{listed}");
    let call = json!({"toolkit": "tracker", "tool": "issues.create", "arguments": {"title": "b"}});
    let path = format!("/v1/users/{helper}/connections/execute");
    let (s, _, b) = app.send("POST", &path, Some(key), Some(call), &[]).await;
    assert_eq!((s, b["error"]["details"]["reason"].as_str()), (202, Some("destructive_effect")), "{b}");
    assert!(up.records().await.is_empty(), "nothing reached the tracker");
}

/// The names of the events on `/v1/events` (from the start of the log) seen with `key` until
/// one named `until` arrives.
async fn events_until(app: &TestApp, key: &str, until: &str) -> Vec<String> {
    let mut res = app
        .client
        .get(format!("{}/v1/events", app.base))
        .bearer_auth(key)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (mut names, mut buf) = (Vec::new(), String::new());
    let read = async {
        while let Ok(Some(chunk)) = res.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                if let Some(name) = frame.lines().find_map(|l| l.strip_prefix("event: ")) {
                    names.push(name.to_string());
                    if name == until {
                        return;
                    }
                }
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read).await.expect("the event arrives");
    names
}

/// #14: a shadow's verdicts are for the tenant's humans: the company's stream carries the
/// `shadow` entry of a call the draft decides otherwise, and the calling agent's own stream
/// and log never do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadows_verdicts_never_reach_the_governed_agent() {
    let app = spawn_app().await;
    let kit = |cap: &str| json!({"name": "Watched", "primitives": ["cards"], "limits": {"budget": {"hard_cap": cap}}});
    app.put_kit(kit("1000")).await;
    let (p, _, key) = app.new_agent("watched", "Watched", None).await;
    assert_eq!(
        app.send("PUT", "/v1/kits/Watched/shadow", Some(COMPANY_KEY), Some(kit("1")), &[]).await.0,
        201
    );
    let path = format!("/v1/users/{p}/cards/charge");
    let (s, _, b) =
        app.send("POST", &path, Some(&key), Some(json!({"amount": "10.00", "merchant": "acme"})), &[]).await;
    assert_eq!(s, 200, "{b}");
    let tenant = events_until(&app, COMPANY_KEY, "shadow").await;
    assert!(tenant.contains(&"shadow".to_string()), "{tenant:?}");
    // A marker after the shadow entry, so the agent's stream is read past it.
    let (s, _, _) = app
        .send(
            "POST",
            &format!("/v1/users/{p}/cards/charge"),
            Some(&key),
            Some(json!({"amount": "1.00", "merchant": "acme"})),
            &[],
        )
        .await;
    assert_eq!(s, 200);
    let own = events_until(&app, &key, "action").await;
    assert!(!own.contains(&"shadow".to_string()), "{own:?}");
    let (_, _, logs) = app.send("GET", &format!("/v1/users/{p}/logs?limit=200"), Some(&key), None, &[]).await;
    let kinds: Vec<&str> =
        logs["items"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(!kinds.contains(&"shadow") && kinds.contains(&"action"), "{kinds:?}");
}

/// #9: caller input never overflows a date: a replay whose `to` is at the calendar's first
/// day is refused `invalid_range` (it used to panic the request), for the company and an agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_range_at_the_calendars_edge_is_refused_not_a_panic() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Edge", "primitives": ["cards"], "limits": {}})).await;
    let (_, _, key) = app.new_agent("edgy", "Edge", None).await;
    for who in [COMPANY_KEY, key.as_str()] {
        for to in ["-262143-01-01T00:00:00Z", "-262143-01-03T00:00:00Z"] {
            let (s, _, b) =
                app.send("POST", "/v1/kits/Edge/replay", Some(who), Some(json!({"to": to})), &[]).await;
            assert_eq!((s, b["code"].as_str()), (400, Some("invalid_range")), "{to}: {b}");
        }
    }
}

/// #12: `/readyz` answers anyone, so a flood of it costs the writer at most one probe a
/// second: 300 requests at once are all answered ready, with a handful of writer jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_readiness_probes_costs_the_writer_nothing_more() {
    let app = spawn_app().await;
    let (_, before) = app.gateway.writer_stats();
    let started = std::time::Instant::now();
    let probes = (0..300).map(|_| {
        let (client, url) = (app.client.clone(), format!("{}/readyz", app.base));
        tokio::spawn(async move { client.get(url).send().await.unwrap().status().as_u16() })
    });
    for p in futures_util::future::join_all(probes).await {
        assert_eq!(p.unwrap(), 200);
    }
    let (_, after) = app.gateway.writer_stats();
    let seconds = started.elapsed().as_secs();
    // One probe a second, and whatever the server's own background work wrote meanwhile.
    assert!(after - before <= seconds + 10, "{} writer jobs for 300 probes in {seconds} s", after - before);
}

/// How many webhook dead letters the company lists.
async fn dead_letters(app: &TestApp) -> usize {
    let (_, _, list) =
        app.send("GET", "/v1/webhooks/deliveries?status=dead", Some(COMPANY_KEY), None, &[]).await;
    list["items"].as_array().unwrap().len()
}

/// #16: dead letters do not grow without end: a full endpoint's events are dead letters,
/// its purge ends them with its backlog (and says how many), and dead letters older than
/// their retention are swept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_endpoints_dead_letters_are_purged_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let app = common::spawn_with(common::config(&url)).await;
    let receiver = common::process::start_receiver(&[]);
    let hook = json!({"url": format!("{}/hook", receiver.base), "events": ["approval.parked"]});
    let (_, _, b) = app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(hook), &[]).await;
    let endpoint = b["endpoint"]["id"].as_str().unwrap().to_string();
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let full = gateway::delivery::outbox::MAX_QUEUED as usize;
    let later = chrono::Utc::now() + chrono::Duration::days(1);
    app.gateway.seed_stuck_queue(&tenant, "webhook", &endpoint, full, later).await.unwrap();
    app.put_kit(json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "50"}}}))
        .await;
    let (p, _, key) = app.new_agent("parker", "Parks", None).await;
    let park = async |n: usize| {
        for _ in 0..n {
            let args = json!({"amount": "60.00", "merchant": "acme"});
            assert_eq!(
                app.send("POST", &format!("/v1/users/{p}/cards/charge"), Some(&key), Some(args), &[]).await.0,
                202
            );
        }
    };
    park(3).await;
    assert_eq!(dead_letters(&app).await, 3, "a full endpoint's events are dead letters");
    let (s, _, purged) =
        app.send("POST", &format!("/v1/webhooks/{endpoint}/purge"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!((s, &purged), (200, &json!({"purged": full, "dead_letters": 3})), "{purged}");
    assert_eq!(dead_letters(&app).await, 0, "the purge ended the dead letters too");

    app.gateway.seed_stuck_queue(&tenant, "webhook", &endpoint, full, later).await.unwrap();
    park(2).await;
    assert_eq!(dead_letters(&app).await, 2);
    app.stop().await;
    let app =
        common::spawn_with(server::config::Config { outbox_dead_retention_days: 0, ..common::config(&url) })
            .await;
    app.gateway.sweep_outbox_now().await;
    assert_eq!(dead_letters(&app).await, 0, "dead letters past their retention were swept");
}

/// The database's deadlock count on PostgreSQL (`None` on SQLite, which has none), read after
/// the statistics of the server's sessions have had time to arrive.
async fn deadlocks(url: &str) -> Option<i64> {
    if !url.starts_with("postgres") {
        return None;
    }
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    sqlx::query("SELECT pg_stat_clear_snapshot()").execute(&pool).await.unwrap();
    let n: i64 =
        sqlx::query_scalar("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            .fetch_one(&pool)
            .await
            .unwrap();
    Some(n)
}

/// #6: the outbox takes a tenant's lock before its queue's row, as every writer of the
/// tenant does: parked calls notifying a failing endpoint, deliveries dying and being
/// settled, purges and retries, all at once, close no circle of locks (PostgreSQL counts no
/// deadlock), and every call is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_settles_purges_and_retries_beside_calls_without_a_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _cluster) = gateway::testing::fresh_url(dir.path()).await;
    let config = server::config::Config {
        outbox_max_attempts: 1,
        outbox_backoff_base_ms: 1,
        outbox_backoff_max_ms: 1,
        ..common::config(&url)
    };
    let app = std::sync::Arc::new(common::spawn_with(config).await);
    let receiver = common::process::start_receiver(&["--always-fail"]);
    let hook = json!({"url": format!("{}/hook", receiver.base), "events": ["approval.parked"]});
    let (_, _, b) = app.send("POST", "/v1/webhooks", Some(COMPANY_KEY), Some(hook), &[]).await;
    let endpoint = b["endpoint"]["id"].as_str().unwrap().to_string();
    app.put_kit(json!({"name": "Parks", "primitives": ["cards"], "limits": {"approve": {"above": "1"}}}))
        .await;
    let (p, _, key) = app.new_agent("parker", "Parks", None).await;
    let before = deadlocks(&url).await;

    let callers = (0..8).map(|_| {
        let (app, p, key) = (app.clone(), p.clone(), key.clone());
        tokio::spawn(async move {
            for _ in 0..25 {
                let args = json!({"amount": "5.00", "merchant": "acme"});
                let (s, _, b) = app
                    .send("POST", &format!("/v1/users/{p}/cards/charge"), Some(&key), Some(args), &[])
                    .await;
                assert_eq!(s, 202, "{b}");
            }
        })
    });
    let callers: Vec<_> = callers.collect();
    let admin = {
        let (app, endpoint) = (app.clone(), endpoint.clone());
        tokio::spawn(async move {
            for round in 0..30 {
                let (_, _, dead) = app
                    .send("GET", "/v1/webhooks/deliveries?status=dead", Some(COMPANY_KEY), None, &[])
                    .await;
                let items = dead["items"].as_array().cloned().unwrap_or_default();
                for d in items.iter().take(3) {
                    let retry =
                        format!("/v1/webhooks/deliveries/{}/retry", d["message_id"].as_str().unwrap());
                    let (s, _, b) = app.send("POST", &retry, Some(COMPANY_KEY), None, &[]).await;
                    assert!(s < 500, "retrying a dead letter: {s} {b}");
                }
                if round % 3 == 2 {
                    let purge = format!("/v1/webhooks/{endpoint}/purge");
                    let (s, _, b) = app.send("POST", &purge, Some(COMPANY_KEY), None, &[]).await;
                    assert_eq!(s, 200, "purging: {b}");
                }
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            }
        })
    };
    for c in callers {
        c.await.unwrap();
    }
    admin.await.unwrap();
    assert_eq!(deadlocks(&url).await, before, "PostgreSQL found a circle of locks");
}

/// #4: replay and shadow decide a sub-agent's calls under its kit as its parent narrows it,
/// a parent kit's draft reaches its descendants' calls, and a rate limit only a shadow has
/// counts the calls it would have let through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_and_shadow_decide_under_the_narrowed_chain() {
    let (app, _clock) = common::spawn_clocked("2027-02-01T10:00:05Z").await;
    let parent = |merchant: &str| {
        json!({"name": "Parent", "primitives": ["cards"],
        "can": [{"action": "cards.charge", "effect": "allow", "merchants": [merchant]}], "limits": {}})
    };
    app.put_kit(parent("acme")).await;
    app.put_kit(
        json!({"name": "Child", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "1000"}}}),
    )
    .await;
    let (lead, _, _) = app.new_agent("lead", "Parent", None).await;
    let body = json!({"name": "child", "kit": "Child", "parent": lead});
    let (_, _, p) = app.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(body), &[]).await;
    let child = p["id"].as_str().unwrap().to_string();
    let (_, _, k) =
        app.send("POST", &format!("/v1/agent-profiles/{child}/keys"), Some(COMPANY_KEY), None, &[]).await;
    let key = k["secret"].as_str().unwrap().to_string();
    let charge = async |merchant: &str| {
        let args = json!({"amount": "10.00", "merchant": merchant});
        app.send("POST", &format!("/v1/users/{child}/cards/charge"), Some(&key), Some(args), &[]).await.0
    };
    assert_eq!((charge("acme").await, charge("globex").await), (200, 403));

    let replay = async |kit: &str, body: Value| {
        let (s, _, r) =
            app.send("POST", &format!("/v1/kits/{kit}/replay"), Some(COMPANY_KEY), Some(body), &[]).await;
        assert_eq!(s, 200, "{r}");
        (r["summary"]["calls"].as_u64().unwrap(), r["summary"]["changed"].as_u64().unwrap())
    };
    assert_eq!(replay("Child", json!({})).await, (2, 0), "the live kits change nothing");
    assert_eq!(
        replay("Parent", json!({"draft": parent("globex")})).await,
        (2, 2),
        "a parent's draft reaches its sub-agent"
    );

    let (s, _, b) =
        app.send("PUT", "/v1/kits/Parent/shadow", Some(COMPANY_KEY), Some(parent("globex")), &[]).await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(charge("acme").await, 200);
    let (_, _, view) = app.send("GET", "/v1/kits/Parent/shadow", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(
        (view["totals"]["calls"].as_u64(), view["totals"]["differed"].as_u64()),
        (Some(1), Some(1)),
        "{view}"
    );

    let limited = json!({"name": "Child", "primitives": ["cards"], "limits": {"budget": {"hard_cap": "1000"},
        "rate": [{"action": "cards.charge", "calls": 1, "per": "hour"}]}});
    assert_eq!(app.send("PUT", "/v1/kits/Child/shadow", Some(COMPANY_KEY), Some(limited), &[]).await.0, 201);
    assert_eq!((charge("acme").await, charge("acme").await), (200, 200), "a shadow refuses nothing live");
    let (_, _, view) = app.send("GET", "/v1/kits/Child/shadow", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(view["totals"]["differed"].as_u64(), Some(1), "{view}");
    assert_eq!(view["totals"]["recent"][0]["would_be"]["detail"], "kit_rate_limit", "{view}");
}

/// #5: a replay reads its range, from the first call in it to the last, and is metered: an
/// agent replaying again and again is refused `replay_rate_limited` with when to ask again,
/// and the company's own replays still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_read_their_range_and_are_metered() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Metered", "primitives": ["cards"], "limits": {}})).await;
    let (p, _, key) = app.new_agent("metered", "Metered", None).await;
    let charge = async || {
        let args = json!({"amount": "1.00", "merchant": "acme"});
        assert_eq!(
            app.send("POST", &format!("/v1/users/{p}/cards/charge"), Some(&key), Some(args), &[]).await.0,
            200
        );
    };
    charge().await;
    charge().await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let from = chrono::Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    for _ in 0..3 {
        charge().await;
    }
    let body = json!({"from": from.to_rfc3339()});
    let (s, _, r) = app.send("POST", "/v1/kits/Metered/replay", Some(COMPANY_KEY), Some(body), &[]).await;
    assert_eq!((s, r["summary"]["calls"].as_u64()), (200, Some(3)), "{r}");

    let mut refused = None;
    for _ in 0..12 {
        let (s, h, b) = app.send("POST", "/v1/kits/Metered/replay", Some(&key), Some(json!({})), &[]).await;
        if s == 429 {
            refused = Some((b["code"].clone(), h.get("retry-after").is_some()));
            break;
        }
        assert_eq!(s, 200, "{b}");
    }
    assert_eq!(refused, Some((json!("replay_rate_limited"), true)));
    let (s, _, r) =
        app.send("POST", "/v1/kits/Metered/replay", Some(COMPANY_KEY), Some(json!({})), &[]).await;
    assert_eq!(s, 200, "an agent's replays spend its own budget, not the company's: {r}");
}
