//! Black-box tests of the `/v1` governed-action routes over HTTP, on the real server with a
//! fresh SQLite file.

mod common;

use common::{TestApp, spawn_app};
use gateway::domain::principal::Human;
use serde_json::{Value, json};

/// A profile under the demo tenant with `kit`, and its scoped key.
async fn agent(app: &TestApp, name: &str, kit: &str) -> (gateway::TenantId, gateway::ProfileId, String) {
    let gw = &app.gateway;
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let kit = policy::Kit::from_json(kit).unwrap();
    let kit_name = kit.name.clone();
    if gw.current_kit(&tenant, &kit_name).await.is_err() {
        gw.save_kit(&tenant, kit, None, "test").await.unwrap();
    }
    let p = gw.create_profile(&tenant, name, None, None, &kit_name).await.unwrap();
    let (_, key) = gw.issue_key(&tenant, &p.id, "test").await.unwrap();
    (tenant, p.id, key.token)
}

async fn post(
    app: &TestApp,
    path: &str,
    key: Option<&str>,
    body: Value,
    idem: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = app.client.post(format!("{}{path}", app.base)).json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(i) = idem {
        req = req.header("Idempotency-Key", i);
    }
    let res = req.send().await.unwrap();
    let (status, headers) = (res.status().as_u16(), res.headers().clone());
    (status, headers, res.json().await.unwrap_or(Value::Null))
}

const KIT: &str = r#"{"name":"Http","primitives":["cards","web"],"limits":{"budget":{"hard_cap":"50"},"approve":{"above":"25"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_actions_answer_with_the_right_status_and_body() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "http-bot", KIT).await;
    let path = |pv: &str| format!("/v1/users/{p}/{pv}");

    let (s, _, b) = post(&app, &path("web/read"), Some(&key), json!({"url": "https://x.test"}), None).await;
    assert_eq!((s, b["ok"].clone(), b["cost"].clone()), (200, json!(true), json!("0.0025")), "{b}");

    let (s, _, b) =
        post(&app, &path("cards/charge"), Some(&key), json!({"amount": "30", "merchant": "acme"}), None)
            .await;
    assert_eq!(s, 202, "{b}");
    assert_eq!(b["verdict"], "park");
    let approval = b["recovery"][0]["approval_id"].as_str().unwrap().to_string();

    let (s, _, b) =
        post(&app, &path("cards/charge"), Some(&key), json!({"amount": "60", "merchant": "acme"}), None)
            .await;
    assert_eq!((s, b["reason"].clone()), (403, json!("budget_exceeded")), "{b}");

    let (s, _, b) = post(&app, &path("email/send"), Some(&key), json!({"to": "a@x.test"}), None).await;
    assert_eq!((s, b["error"]["details"]["reason"].clone()), (403, json!("primitive_disabled_by_kit")));

    app.gateway.sandbox().fail_next(1);
    let (s, h, b) = post(&app, &path("web/read"), Some(&key), json!({"url": "y"}), None).await;
    assert_eq!((s, b["verdict"].clone()), (503, json!("unavailable")), "{b}");
    assert_eq!(h.get("retry-after").unwrap(), "2");

    // The agent polls its approval; a human approves; the poll shows it executed.
    let poll = |id: String| {
        let (c, base, k) = (app.client.clone(), app.base.clone(), key.clone());
        async move { c.get(format!("{base}/v1/approvals/{id}")).bearer_auth(k).send().await.unwrap() }
    };
    let r = poll(approval.clone()).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "pending");
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let approver = app.gateway.users(&tenant).await.unwrap().remove(0);
    app.gateway.approve(&tenant, &approval, &Human::in_console(&approver), None).await.unwrap();
    let polled: Value = poll(approval).await.json().await.unwrap();
    assert_eq!(polled["status"], "approved");
    assert_eq!(polled["result"]["ok"], true);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keys_bad_bodies_and_other_profiles_get_clear_errors() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "http-bot", KIT).await;
    let (_, other, _) = agent(&app, "other-bot", KIT).await;
    let path = format!("/v1/users/{p}/web/read");

    let (s, _, b) = post(&app, &path, None, json!({}), None).await;
    assert_eq!((s, b["code"].clone()), (401, json!("missing_key")));
    let (s, _, b) = post(&app, &path, Some("nv_aaaaaaaa_bbbbbbbbbbbbbbbbbbbb"), json!({}), None).await;
    assert_eq!((s, b["code"].clone()), (401, json!("invalid_key")));
    let (s, _, b) = post(&app, &format!("/v1/users/{other}/web/read"), Some(&key), json!({}), None).await;
    assert_eq!((s, b["code"].clone()), (404, json!("not_found")), "a key only acts for its own profile");
    let (s, _, b) = post(&app, &format!("/v1/users/{p}/warp/drive"), Some(&key), json!({}), None).await;
    assert_eq!((s, b["code"].clone()), (400, json!("unknown_action")));
    let (s, _, b) = post(
        &app,
        &format!("/v1/users/{p}/cards/charge"),
        Some(&key),
        json!({"amount": "1.00001", "merchant": "acme"}),
        None,
    )
    .await;
    assert_eq!((s, b["code"].clone()), (400, json!("invalid_amount")));
    let res = app
        .client
        .post(format!("{}{path}", app.base))
        .bearer_auth(&key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let res = app
        .client
        .post(format!("{}{path}", app.base))
        .bearer_auth(&key)
        .body(vec![b' '; 70 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 413, "bodies over the limit are refused");
    let problem: serde_json::Value = res.json().await.expect("a problem body, not plain text");
    assert_eq!(problem["code"], "body_too_large", "{problem}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_key_replays_the_first_answer() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "http-bot", KIT).await;
    let path = format!("/v1/users/{p}/cards/charge");
    let body = json!({"amount": "5", "merchant": "acme"});
    let (s1, _, b1) = post(&app, &path, Some(&key), body.clone(), Some("k-1")).await;
    let (s2, h2, b2) = post(&app, &path, Some(&key), body, Some("k-1")).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(b1, b2);
    assert_eq!(h2.get("idempotent-replayed").unwrap(), "true");
    let (s, _, b) =
        post(&app, &path, Some(&key), json!({"amount": "6", "merchant": "acme"}), Some("k-1")).await;
    assert_eq!((s, b["code"].clone()), (409, json!("idempotency_key_reused")));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_is_a_dry_run_and_a_revoked_profile_is_refused_on_every_route() {
    let app = spawn_app().await;
    let (tenant, p, key) = agent(&app, "http-bot", KIT).await;
    let (holds_before,): (i64,) = app.gateway.store().one("SELECT COUNT(*) FROM holds", &[]).await.unwrap();
    let (s, _, b) = post(
        &app,
        "/v1/policy/explain",
        Some(&key),
        json!({"action": "cards.charge", "args": {"amount": "60", "merchant": "acme"}}),
        None,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(b["verdict"], "deny");
    let details: Vec<&str> =
        b["reasons"].as_array().unwrap().iter().map(|r| r["detail"].as_str().unwrap()).collect();
    assert_eq!(details, ["hard_cap_exceeded", "above_approval_threshold"]);
    let (_, _, b) = post(
        &app,
        "/v1/policy/explain",
        Some(&key),
        json!({"action": "cards.charge", "args": {"amount": "30", "merchant": "acme"}}),
        None,
    )
    .await;
    assert_eq!(b["verdict"], "park");
    let (holds_after,): (i64,) = app.gateway.store().one("SELECT COUNT(*) FROM holds", &[]).await.unwrap();
    assert_eq!(holds_before, holds_after, "explain reserves nothing");

    app.gateway.revoke_profile(&tenant, &p, "test", None).await.unwrap();
    let (s, _, b) = post(&app, &format!("/v1/users/{p}/web/read"), Some(&key), json!({}), None).await;
    assert_eq!((s, b["reason"].clone()), (403, json!("agent_profile_revoked")));
    let (s, _, b) = post(&app, "/v1/policy/explain", Some(&key), json!({"action": "web.read"}), None).await;
    assert_eq!((s, b["reason"].clone()), (403, json!("agent_profile_revoked")));
    // A GET too: the source platform let reads through after revoke; we do not.
    let r =
        app.client.get(format!("{}/v1/approvals/apr_x", app.base)).bearer_auth(&key).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(r.json::<Value>().await.unwrap()["reason"], "agent_profile_revoked");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_decided_by_a_named_human_never_by_the_agent() {
    let app = spawn_app().await;
    let roomy = r#"{"name":"Roomy","primitives":["cards"],"limits":{"budget":{"hard_cap":"500"},"approve":{"above":"25"}}}"#;
    let (_, p, key) = agent(&app, "http-bot", roomy).await;
    let charge = format!("/v1/users/{p}/cards/charge");
    let park = |amount: &'static str| {
        let (app, charge, key) = (&app, charge.clone(), key.clone());
        async move {
            let (s, _, b) =
                post(app, &charge, Some(&key), json!({"amount": amount, "merchant": "acme"}), None).await;
            assert_eq!(s, 202, "{b}");
            b["recovery"][0]["approval_id"].as_str().unwrap().to_string()
        }
    };
    let first = park("30").await;
    let company = common::COMPANY_KEY;
    let (_, admin) = app.personal_token("admin", &["admin", "approver"]).await;
    let decide = |id: &str, verb: &str, bearer: &str, body: Value| {
        let req =
            app.client.post(format!("{}/v1/approvals/{id}/{verb}", app.base)).bearer_auth(bearer).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (s, b) = decide(&first, "approve", &key, json!({})).await;
    assert_eq!((s, b["code"].clone()), (403, json!("requester_cannot_decide")));
    let (s, b) = decide(&first, "approve", company, json!({})).await;
    assert_eq!((s, b["code"].clone()), (403, json!("human_credential_required")));
    let (s, b) = decide(&first, "approve", &admin, json!({"note": "fine"})).await;
    assert_eq!((s, b["ok"].clone()), (200, json!(true)), "{b}");
    let (s, b) = decide(&first, "approve", &admin, json!({})).await;
    assert_eq!((s, b["code"].clone()), (409, json!("approval_already_decided")));

    let second = park("26").await;
    let (s, b) = decide(&second, "deny", &admin, json!({})).await;
    assert_eq!((s, b["code"].clone()), (400, json!("reason_required")));
    let (s, b) = decide(&second, "deny", &admin, json!({"reason": "over budget this week"})).await;
    assert_eq!((s, b["status"].clone()), (200, json!("denied")), "{b}");

    let list: Value = app
        .client
        .get(format!("{}/v1/approvals?status=denied", app.base))
        .bearer_auth(company)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second.as_str()]);
    let r = app
        .client
        .get(format!("{}/v1/approvals?status=maybe", app.base))
        .bearer_auth(company)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // Another tenant's company key sees nothing of this tenant.
    let other_key = "nv_otherco1_abcdefghijklmnopqrstuv";
    app.gateway.create_tenant("Other", policy::Money::ZERO, Some(other_key)).await.unwrap();
    let r = app
        .client
        .get(format!("{}/v1/approvals/{first}", app.base))
        .bearer_auth(other_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let list: Value = app
        .client
        .get(format!("{}/v1/approvals", app.base))
        .bearer_auth(other_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"], json!([]));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_logs_and_the_chain_are_readable_only_within_reach() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "http-bot", KIT).await;
    let (_, other, _) = agent(&app, "other-bot", KIT).await;
    for i in 0..3 {
        post(&app, &format!("/v1/users/{p}/web/read"), Some(&key), json!({"url": format!("u{i}")}), None)
            .await;
    }
    let get = |path: String, bearer: &str| {
        let bearer = bearer.to_string();
        let (c, base) = (app.client.clone(), app.base.clone());
        async move {
            let r = c.get(format!("{base}{path}")).bearer_auth(bearer).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let key = key.as_str();
    let (s, b) = get(format!("/v1/users/{p}/budget"), key).await;
    assert_eq!(
        (s, b["totals"]["posted"].clone(), b["hard_cap"].clone()),
        (200, json!("0.0075"), json!("50.00")),
        "{b}"
    );
    let (s, _) = get(format!("/v1/users/{other}/budget"), key).await;
    assert_eq!(s, 404, "an agent reads only its own budget");
    let (s, b) = get(format!("/v1/users/{other}/budget"), common::COMPANY_KEY).await;
    assert_eq!((s, b["totals"]["posted"].clone()), (200, json!("0.00")));

    let (s, b) = get(format!("/v1/users/{p}/logs?limit=2"), key).await;
    assert_eq!(s, 200);
    let page: Vec<i64> = b["items"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(page.len(), 2);
    assert!(page[0] > page[1], "newest first");
    let (_, b2) = get(format!("/v1/users/{p}/logs?limit=2&{}", b["next"].as_str().unwrap()), key).await;
    let older: Vec<i64> =
        b2["items"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(older.iter().all(|s| *s < page[1]), "the next page continues where the first ended");

    let (s, b) = get("/v1/logs/verify".into(), common::COMPANY_KEY).await;
    assert_eq!((s, b["ok"].clone()), (200, json!(true)), "{b}");
    let (s, _) = get("/v1/logs/verify".into(), key).await;
    assert_eq!(s, 403);
    app.stop().await;
}

/// A request with the company key, answering (status, JSON).
async fn company(app: &TestApp, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.request(method, format!("{}{path}", app.base)).bearer_auth(common::COMPANY_KEY);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_and_keys_are_managed_with_the_company_key() {
    use reqwest::Method;
    let app = spawn_app().await;
    let (s, parent) = company(
        &app,
        Method::POST,
        "/v1/agent-profiles",
        Some(json!({"name": "ops", "kit": "Default", "owner": "admin"})),
    )
    .await;
    assert_eq!(s, 201, "{parent}");
    let pid = parent["id"].as_str().unwrap().to_string();
    let (s, child) = company(
        &app,
        Method::POST,
        "/v1/agent-profiles",
        Some(json!({"name": "ops-helper", "kit": "Default", "parent": pid})),
    )
    .await;
    assert_eq!(s, 201, "{child}");
    let cid = child["id"].as_str().unwrap().to_string();
    let (s, b) =
        company(&app, Method::POST, "/v1/agent-profiles", Some(json!({"name": "x", "kit": "Nope"}))).await;
    assert_eq!((s, b["code"].clone()), (404, json!("not_found")));
    let (_, tree) = company(&app, Method::GET, "/v1/agent-profiles", None).await;
    let names: Vec<(&str, u64)> = tree["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["profile"]["name"].as_str().unwrap(), e["depth"].as_u64().unwrap()))
        .collect();
    assert!(names.windows(2).any(|w| w == [("ops", 0), ("ops-helper", 1)]), "{names:?}");

    // A key: the secret is in the creation response only.
    let (s, created) = company(&app, Method::POST, &format!("/v1/agent-profiles/{cid}/keys"), None).await;
    assert_eq!(s, 201);
    let secret = created["secret"].as_str().unwrap().to_string();
    let key_id = created["key"]["id"].as_str().unwrap().to_string();
    let (_, listed) = company(&app, Method::GET, &format!("/v1/agent-profiles/{cid}/keys"), None).await;
    assert!(!listed.to_string().contains(&secret[12..]), "a listing never shows a secret");
    let read = |k: String| {
        let (c, base, cid) = (app.client.clone(), app.base.clone(), cid.clone());
        async move {
            c.post(format!("{base}/v1/users/{cid}/web/read"))
                .bearer_auth(k)
                .json(&json!({"url": "x"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(read(secret.clone()).await, 200);
    let r =
        app.client.get(format!("{}/v1/agent-profiles", app.base)).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 403, "agents cannot administer");

    let rotate = format!("/v1/agent-profiles/{cid}/keys/{key_id}/rotate");
    let (s, b) = company(&app, Method::POST, &rotate, Some(json!({"grace_secs": 0.5}))).await;
    assert_eq!((s, b["code"].clone()), (400, json!("invalid_json")), "a grace is whole seconds");
    // JSON Schema's integer includes 600.0, so the schema-true spelling is accepted too.
    let (s, rotated) = company(&app, Method::POST, &rotate, Some(json!({"grace_secs": 600.0}))).await;
    assert_eq!(s, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap().to_string();
    let new_id = rotated["key"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        (read(secret.clone()).await, read(new_secret.clone()).await),
        (200, 200),
        "the old key works during its grace period"
    );
    let (s, _) =
        company(&app, Method::DELETE, &format!("/v1/agent-profiles/{cid}/keys/{new_id}"), None).await;
    assert_eq!(s, 200);
    assert_eq!(read(new_secret).await, 401);

    let (_, preview) =
        company(&app, Method::GET, &format!("/v1/agent-profiles/{pid}/revoke-preview"), None).await;
    assert_eq!(preview["profiles"], json!([pid, cid]));
    let (s, report) = company(&app, Method::POST, &format!("/v1/agent-profiles/{pid}/revoke"), None).await;
    assert_eq!((s, report["profiles"].clone()), (200, json!([pid, cid])));
    let r = app
        .client
        .post(format!("{}/v1/users/{cid}/web/read", app.base))
        .bearer_auth(&secret)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(r.json::<Value>().await.unwrap()["reason"], "agent_profile_revoked");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kits_save_with_if_match_and_bind_the_next_call() {
    let app = spawn_app().await;
    let (_, p, key) = agent(
        &app,
        "kit-bot",
        r#"{"name":"Edit","primitives":["cards"],"limits":{"budget":{"hard_cap":"100"}}}"#,
    )
    .await;
    let r = app
        .client
        .get(format!("{}/v1/kits/Edit", app.base))
        .bearer_auth(common::COMPANY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers().get("etag").unwrap(), "\"1\"");
    let mut kit: Value = r.json::<Value>().await.unwrap()["kit"].clone();
    kit["limits"]["budget"]["hard_cap"] = json!("10.00");
    let put = |body: String, if_match: Option<&str>| {
        let mut req =
            app.client.put(format!("{}/v1/kits/Edit", app.base)).bearer_auth(common::COMPANY_KEY).body(body);
        if let Some(m) = if_match {
            req = req.header("If-Match", m);
        }
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (s, b) = put(kit.to_string(), Some("\"1\"")).await;
    assert_eq!((s, b["kit"]["version"].clone()), (200, json!(2)), "{b}");
    let (s, b) = put(kit.to_string(), Some("\"1\"")).await;
    assert_eq!((s, b["code"].clone()), (409, json!("kit_version_conflict")));
    let (s, b) = put(r#"{"name":"Edit","primitives":["warp"]}"#.into(), Some("\"2\"")).await;
    assert_eq!((s, b["code"].clone()), (400, json!("invalid_kit")));
    assert!(b["message"].as_str().unwrap().starts_with("primitives:"), "{b}");

    // The next call is decided under the new version.
    let (s, _, b) = post(
        &app,
        &format!("/v1/users/{p}/cards/charge"),
        Some(&key),
        json!({"amount": "20", "merchant": "acme"}),
        None,
    )
    .await;
    assert_eq!((s, b["reason"].clone()), (403, json!("budget_exceeded")), "{b}");

    let (s, d) = company(&app, reqwest::Method::GET, "/v1/kits/Edit/diff?from=1&to=2", None).await;
    assert_eq!(s, 200);
    assert_eq!(d["changes"][0]["text"], "lowers hard cap from $100.00 to $10.00");
    let (s, v) = company(&app, reqwest::Method::GET, "/v1/kits/Edit/versions", None).await;
    assert_eq!((s, v["items"].as_array().unwrap().len()), (200, 2));
    let (s, _) = company(&app, reqwest::Method::GET, "/v1/kits/Edit/versions/7", None).await;
    assert_eq!(s, 404);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brain_writebacks_become_proposals_an_agent_accept_parks_and_a_reviewer_decides() {
    let app = spawn_app().await;
    let (_, _, key) = agent(&app, "scribe", r#"{"name":"Brainy","primitives":["brain"]}"#).await;
    let (_, _, plain) = agent(&app, "plain", "{\"name\":\"NoBrain\",\"primitives\":[\"web\"]}").await;
    let wb = json!({"run_id": "run-7", "source": "standup notes", "claims": [
        {"object_type": "fact", "content": {"text": "Invoices are due net 30"}},
        {"object_type": "preference", "content": {"text": "CFO wants weekly summaries"}}]});
    let (s, _, b) = post(&app, "/v1/brain/writebacks", Some(&plain), wb.clone(), None).await;
    assert_eq!((s, b["error"]["details"]["reason"].clone()), (403, json!("primitive_disabled_by_kit")));
    let (s, _, b) = post(&app, "/v1/brain/writebacks", Some(&key), wb, None).await;
    assert_eq!(s, 201, "{b}");
    let proposals = b["writeback"]["proposals"].as_array().unwrap();
    let fact =
        proposals.iter().find(|p| p["object_type"] == "fact").unwrap()["id"].as_str().unwrap().to_string();
    let pref = proposals.iter().find(|p| p["object_type"] == "preference").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let list: Value = app
        .client
        .get(format!("{}/v1/brain/proposals?run_id=run-7&object_type=fact", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    let (s, _, b) = post(
        &app,
        &format!("/v1/brain/proposals/{fact}/decision"),
        Some(&key),
        json!({"decision": "accept", "because": ""}),
        None,
    )
    .await;
    assert_eq!((s, b["code"].clone()), (400, json!("because_required")));
    let (s, _, b) = post(
        &app,
        &format!("/v1/brain/proposals/{fact}/decision"),
        Some(&key),
        json!({"decision": "accept", "because": "said twice"}),
        None,
    )
    .await;
    assert_eq!((s, b["verdict"].clone()), (202, json!("park")), "an agent's accept parks for a human: {b}");

    let (_, token) = app.personal_token("admin", &["reviewer"]).await;
    let reviewer = |id: String, body: Value| {
        let req = app
            .client
            .post(format!("{}/v1/brain/proposals/{id}/decision", app.base))
            .bearer_auth(&token)
            .json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (s, b) = reviewer(pref.clone(), json!({"decision": "reject", "because": "hearsay"})).await;
    assert_eq!((s, b["proposal"]["status"].clone()), (200, json!("rejected")), "{b}");
    let (s, b) =
        reviewer(fact.clone(), json!({"decision": "accept", "because": "checked the contract"})).await;
    assert_eq!((s, b["proposal"]["status"].clone()), (200, json!("accepted")), "{b}");
    let trail: Vec<&str> =
        b["proposal"]["trail"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(trail, ["proposed", "parked", "accepted"]);

    // The accepted claim is now a belief, with who accepted it and where it came from; the
    // rejected one is not. The agent reads them too, and another tenant sees none.
    let beliefs = |key: String, query: &'static str| {
        let req = app.client.get(format!("{}/v1/brain/beliefs{query}", app.base)).bearer_auth(key);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (s, b) = beliefs(key.clone(), "?q=INVOICES%20ARE%20DUE").await;
    assert_eq!(s, 200, "{b}");
    let items = b["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{b}");
    assert_eq!(items[0]["proposal_id"], json!(fact));
    assert_eq!(items[0]["content"], json!({"text": "Invoices are due net 30"}));
    assert_eq!(
        (items[0]["accepted_by"].clone(), items[0]["because"].clone()),
        (json!("admin"), json!("checked the contract"))
    );
    assert_eq!(
        (items[0]["run_id"].clone(), items[0]["writeback_id"].clone()),
        (json!("run-7"), b["items"][0]["writeback_id"].clone())
    );
    assert_eq!(beliefs(key.clone(), "?object_type=preference").await.1["items"], json!([]));
    assert_eq!(
        beliefs(key.clone(), "?q=weekly").await.1["items"],
        json!([]),
        "a rejected claim is no belief"
    );
    let long = "x".repeat(201);
    let r = app
        .client
        .get(format!("{}/v1/brain/beliefs?q={long}", app.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "search_too_long");
    let (s, b) = beliefs(plain.clone(), "").await;
    assert_eq!((s, b["error"]["details"]["reason"].clone()), (403, json!("primitive_disabled_by_kit")));
    let other = "nv_belief01_abcdefghijklmnopqrstuv";
    app.gateway.create_tenant("Other", policy::Money::ZERO, Some(other)).await.unwrap();
    let (s, b) = beliefs(other.to_string(), "").await;
    assert_eq!((s, b["items"].clone()), (200, json!([])), "no read crosses tenants");
    app.stop().await;
}

/// Reads SSE frames from `res` until one of `kind` arrives; returns its id.
async fn next_event(res: &mut reqwest::Response, buf: &mut String, kind: &str) -> i64 {
    let deadline = std::time::Duration::from_secs(15);
    tokio::time::timeout(deadline, async {
        loop {
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                let field = |name: &str| {
                    frame.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string())
                };
                if field("event:").as_deref() == Some(kind) {
                    return field("id:").expect("events carry an id").parse().unwrap();
                }
            }
            let chunk = res.chunk().await.unwrap().expect("the stream stays open");
            buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no `{kind}` event within {deadline:?}; got so far: {buf}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_is_live_resumes_with_last_event_id_and_ends_on_shutdown() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "sse-bot", KIT).await;
    let read = |url: &'static str| {
        let (app, key, p) = (&app, key.clone(), p.clone());
        async move {
            post(app, &format!("/v1/users/{p}/web/read"), Some(&key), json!({ "url": url }), None).await.0
        }
    };
    let open = |last: Option<i64>| {
        let mut req = app
            .client
            .get(format!("{}/v1/events", app.base))
            .bearer_auth(common::COMPANY_KEY)
            .timeout(std::time::Duration::from_secs(60));
        if let Some(id) = last {
            req = req.header("Last-Event-ID", id.to_string());
        }
        async move {
            let res = req.send().await.unwrap();
            assert_eq!(res.status().as_u16(), 200);
            assert_eq!(res.headers()["content-type"], "text/event-stream");
            res
        }
    };
    let mut live = open(None).await;
    let mut buf = String::new();
    assert_eq!(read("https://x.test/1").await, 200);
    let first = next_event(&mut live, &mut buf, "action").await;
    drop(live);

    // Missed while disconnected: delivered first on resume.
    assert_eq!(read("https://x.test/2").await, 200);
    let mut resumed = open(Some(first)).await;
    let mut buf = String::new();
    let missed = next_event(&mut resumed, &mut buf, "action").await;
    assert!(missed > first, "resume delivers the event after {first}, got {missed}");
    let entry: Value = app
        .gateway
        .log(&app.gateway.tenants().await.unwrap()[0].id, &Default::default())
        .await
        .unwrap()
        .iter()
        .find(|e| e.seq == missed)
        .map(|e| serde_json::to_value(e).unwrap())
        .unwrap();
    assert_eq!(entry["kind"], "action");

    // An open stream does not hold up a graceful shutdown.
    tokio::time::timeout(std::time::Duration::from_secs(15), app.stop())
        .await
        .expect("shutdown finished with a stream open");
    drop(resumed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_pages_filters_by_period_and_exports_exactly_the_filtered_entries_as_csv() {
    let app = spawn_app().await;
    let (_, p, key) = agent(&app, "ledger-bot", KIT).await;
    for i in 0..3 {
        post(
            &app,
            &format!("/v1/users/{p}/cards/charge"),
            Some(&key),
            json!({"amount": format!("{}.50", i + 1), "merchant": "acme", "memo": format!("order {i}")}),
            None,
        )
        .await;
    }
    let get = |query: String, csv: bool| {
        let mut req = app
            .client
            .get(format!("{}/v1/users/{p}/ledger{query}", app.base))
            .bearer_auth(common::COMPANY_KEY);
        if csv {
            req = req.header("Accept", "text/csv");
        }
        async move { req.send().await.unwrap() }
    };
    let page: Value = get("?limit=2".into(), false).await.json().await.unwrap();
    let items = page["items"].as_array().unwrap();
    // Each charge ran in the transaction that decided it: one `post` entry, paged two then one.
    assert_eq!(items.len(), 2);
    assert_eq!(
        (items[0]["kind"].clone(), items[0]["pending_delta"].clone(), items[0]["posted_delta"].clone()),
        (json!("post"), json!("0.00"), json!("1.50"))
    );
    let rest: Value =
        get(format!("?limit=2&{}", page["next"].as_str().unwrap()), false).await.json().await.unwrap();
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);
    assert_eq!(rest["items"][0]["posted_delta"], "3.50");

    let csv = get("".into(), true).await;
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let text = csv.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "seq,created_at,action,kind,pending_delta,posted_delta,hold_id,kit_version,period_day"
    );
    assert_eq!(lines.len(), 4, "every filtered entry, not one page: {text}");
    let posted: i64 = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(5).unwrap().replace('.', "").parse::<i64>().unwrap())
        .sum();
    assert_eq!(posted, 1_50 + 2_50 + 3_50, "posted deltas in the CSV add up to what was spent");

    let future: Value = get("?from=2999-01-01T00:00:00Z".into(), false).await.json().await.unwrap();
    assert_eq!(future["items"], json!([]));
    let r = get("?from=yesterday".into(), false).await;
    assert_eq!(r.status().as_u16(), 400);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_reads_every_tenants_log_and_nobody_else_can() {
    let app = spawn_app().await;
    let (demo, p, key) = agent(&app, "op-read", KIT).await;
    post(&app, &format!("/v1/users/{p}/web/read"), Some(&key), json!({"url": "https://a.test"}), None).await;
    let (other, _) = app.gateway.create_tenant("Other Co", policy::Money::dollars(10), None).await.unwrap();
    let q = app.gateway.create_profile(&other.id, "their-bot", None, None, "Default").await.unwrap();
    app.gateway.issue_key(&other.id, &q.id, "test").await.unwrap();
    let get = |query: &str, token: Option<&str>| {
        let mut req = app.client.get(format!("{}/v1/logs{query}", app.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move {
            let res = req.send().await.unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (status, all) = get("?limit=500", Some(common::OPERATOR_KEY)).await;
    assert_eq!(status, 200, "{all}");
    let tenants: std::collections::BTreeSet<&str> =
        all["items"].as_array().unwrap().iter().map(|e| e["tenant_id"].as_str().unwrap()).collect();
    assert!(tenants.contains(demo.as_str()) && tenants.contains(other.id.as_str()), "{tenants:?}");

    let (_, only) = get(&format!("?tenant={}", other.id), Some(common::OPERATOR_KEY)).await;
    let items = only["items"].as_array().unwrap();
    assert!(!items.is_empty() && items.iter().all(|e| e["tenant_id"] == other.id.as_str()));
    // Newest first, and the cursor continues with older entries only.
    let (_, first) = get("?limit=2", Some(common::OPERATOR_KEY)).await;
    let (_, second) =
        get(&format!("?limit=2&{}", first["next"].as_str().unwrap()), Some(common::OPERATOR_KEY)).await;
    assert!(second["items"][0]["seq"].as_i64().unwrap() < first["items"][1]["seq"].as_i64().unwrap());

    assert_eq!(get("", Some(common::COMPANY_KEY)).await.1["code"], "operator_key_required");
    assert_eq!(get("", Some(&key)).await.0, 403);
    assert_eq!(get("", None).await.0, 401);
    assert_eq!(get("?tenant=nope", Some(common::OPERATOR_KEY)).await.1["code"], "invalid_tenant");
    app.stop().await;
}

/// Idempotency-Key on the mutating routes beyond governed actions: a resend replays the
/// first answer and changes nothing; secrets are never replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutating_route_honours_an_idempotency_key() {
    let app = spawn_app().await;
    let send = |method: reqwest::Method, path: String, body: Option<Value>, key: &'static str| {
        let mut req = app
            .client
            .request(method, format!("{}{path}", app.base))
            .bearer_auth(common::COMPANY_KEY)
            .header("Idempotency-Key", key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let res = req.send().await.unwrap();
            let replayed = res.headers().get("idempotent-replayed").is_some();
            (res.status().as_u16(), replayed, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let create = json!({"name": "idem-bot", "kit": "Default"});
    let (s1, r1, first) =
        send(reqwest::Method::POST, "/v1/agent-profiles".into(), Some(create.clone()), "k-1").await;
    let (s2, r2, again) = send(reqwest::Method::POST, "/v1/agent-profiles".into(), Some(create), "k-1").await;
    assert_eq!((s1, r1), (201, false), "{first}");
    assert_eq!((s2, r2), (201, true));
    assert_eq!(first, again, "the resend gets the first answer");
    let (_, tree) = company(&app, reqwest::Method::GET, "/v1/agent-profiles", None).await;
    let named =
        tree["items"].as_array().unwrap().iter().filter(|e| e["profile"]["name"] == "idem-bot").count();
    assert_eq!(named, 1, "one profile, not two");

    let (s, _, b) = send(
        reqwest::Method::POST,
        "/v1/agent-profiles".into(),
        Some(json!({"name": "other-bot", "kit": "Default"})),
        "k-1",
    )
    .await;
    assert_eq!((s, b["code"].clone()), (409, json!("idempotency_key_reused")));

    // A key's secret is shown once: the resend says it exists and withholds it.
    let pid = first["id"].as_str().unwrap();
    let (s, _, key) =
        send(reqwest::Method::POST, format!("/v1/agent-profiles/{pid}/keys"), None, "k-2").await;
    assert_eq!(s, 201);
    assert!(key["secret"].as_str().unwrap().starts_with("nv_"));
    let (s, replayed, again) =
        send(reqwest::Method::POST, format!("/v1/agent-profiles/{pid}/keys"), None, "k-2").await;
    assert_eq!((s, replayed), (201, true));
    assert_eq!((again["secret"].clone(), again["secret_withheld"].clone()), (Value::Null, json!(true)));
    assert_eq!(again["key"]["id"], key["key"]["id"]);
    let (_, keys) =
        company(&app, reqwest::Method::GET, &format!("/v1/agent-profiles/{pid}/keys"), None).await;
    assert_eq!(keys["items"].as_array().unwrap().len(), 1, "one key issued");
    let stored: Vec<(Vec<u8>,)> =
        app.gateway.store().all("SELECT body FROM request_idempotency", &[]).await.unwrap();
    let stored: Vec<Vec<u8>> = stored.into_iter().map(|(b,)| b).collect();
    let secret = key["secret"].as_str().unwrap();
    assert!(
        stored.iter().all(|b| !String::from_utf8_lossy(b).contains(&secret[12..])),
        "no secret is stored"
    );

    // Deleting twice with one key: the second gets the first answer, not a 404 or 409.
    let kid = key["key"]["id"].as_str().unwrap();
    let (s1, _, _) =
        send(reqwest::Method::DELETE, format!("/v1/agent-profiles/{pid}/keys/{kid}"), None, "k-3").await;
    let (s2, replayed, _) =
        send(reqwest::Method::DELETE, format!("/v1/agent-profiles/{pid}/keys/{kid}"), None, "k-3").await;
    assert_eq!((s1, s2, replayed), (200, 200, true));

    let res = app
        .client
        .post(format!("{}/v1/agent-profiles", app.base))
        .bearer_auth(common::COMPANY_KEY)
        .header("Idempotency-Key", "x".repeat(201))
        .json(&json!({"name": "long", "kit": "Default"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    assert_eq!(res.json::<Value>().await.unwrap()["code"], "invalid_idempotency_key");
    app.stop().await;
}

/// The OpenAPI document covers every route the router serves, with the problem body on
/// every operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_covers_every_route() {
    let app = spawn_app().await;
    let (status, body) = app.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let source = include_str!("../src/v1/mod.rs");
    let mut served: Vec<(String, String)> = Vec::new();
    for line in source.lines().filter(|l| l.trim_start().starts_with(".route(\"")) {
        let path = line.split('"').nth(1).unwrap().to_string();
        for method in ["get", "post", "put", "delete"] {
            if line.contains(&format!("{method}(")) || line.contains(&format!(".{method}(")) {
                served.push((path.clone(), method.to_string()));
            }
        }
    }
    assert!(served.len() > 30, "{served:?}");
    // The governed route is documented once per catalog action, with that action's body.
    let governed = "/v1/users/{user_id}/{primitive}/{verb}".to_string();
    assert!(served.iter().any(|(p, _)| p == &governed));
    served.retain(|(p, _)| p != &governed);
    for decl in policy::args::DECLARATIONS.iter().filter(|d| d.action.contains('.')) {
        let path = format!("/v1/users/{{user_id}}/{}", decl.action.replace('.', "/"));
        let body = &doc["paths"][&path]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body, &decl.json_schema(), "{path} documents what {} declares", decl.action);
        served.push((path, "post".into()));
    }
    for (path, method) in &served {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is served but not documented");
        assert!(
            op["responses"]["400"]["content"]["application/problem+json"].is_object(),
            "{method} {path} lacks the problem body"
        );
    }
    app.stop().await;
}

/// A revoke denies its profiles' pending approvals through the one deny every other path uses:
/// an agent's accept parked on a human goes back to the reviewers' queue, and the proposal's
/// trail says why. It used to stay `parked` for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_returns_a_parked_accept_to_the_reviewers() {
    let app = spawn_app().await;
    let (_, profile, key) = agent(&app, "scribe", r#"{"name":"Brainy","primitives":["brain"]}"#).await;
    let wb = json!({"run_id": "run-9", "source": "notes", "claims": [
        {"object_type": "fact", "content": {"text": "Rent is due on the 1st"}}]});
    let (s, _, b) = post(&app, "/v1/brain/writebacks", Some(&key), wb, None).await;
    assert_eq!(s, 201, "{b}");
    let id = b["writeback"]["proposals"][0]["id"].as_str().unwrap().to_string();
    let decide = json!({"decision": "accept", "because": "the lease says so"});
    let (s, _, parked) =
        post(&app, &format!("/v1/brain/proposals/{id}/decision"), Some(&key), decide, None).await;
    assert_eq!((s, parked["verdict"].clone()), (202, json!("park")), "{parked}");
    let approval = parked["recovery"][0]["approval_id"].as_str().unwrap().to_string();

    let (s, report) =
        company(&app, reqwest::Method::POST, &format!("/v1/agent-profiles/{profile}/revoke"), None).await;
    assert_eq!((s, report["approvals_denied"].clone()), (200, json!([approval])), "{report}");

    let (s, p) = company(&app, reqwest::Method::GET, &format!("/v1/brain/proposals/{id}"), None).await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(p["status"], "pending", "a revoke returns the parked proposal to the reviewers: {p}");
    let steps: Vec<(&str, &str)> = p["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["note"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(steps.last(), Some(&("returned", "agent profile revoked")), "{p}");
    let (s, a) = company(&app, reqwest::Method::GET, &format!("/v1/approvals/{approval}"), None).await;
    assert_eq!((s, a["status"].clone()), (200, json!("denied")), "{a}");
    app.stop().await;
}
