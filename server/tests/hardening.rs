//! What a security and fault review found, one black-box test each: the real server on port 0
//! with a fresh database, spoken to over HTTP as an agent, the company or a human would.
//! Each test was run against the code before its fix and failed there.

mod common;

use std::time::Duration;

use common::{COMPANY_KEY, TestApp, spawn_app};
use serde_json::{Value, json};

const CHARGE: &str = "cards/charge";

/// Parks a charge of `amount` and returns its approval id.
async fn park(app: &TestApp, profile: &str, key: &str, amount: &str) -> String {
    let (s, _, b) = app
        .send(
            "POST",
            &format!("/v1/users/{profile}/{CHARGE}"),
            Some(key),
            Some(json!({"amount": amount, "merchant": "acme"})),
            &[],
        )
        .await;
    assert_eq!(s, 202, "{b}");
    b["recovery"][0]["approval_id"].as_str().unwrap().to_string()
}

async fn approve(app: &TestApp, id: &str, token: &str, body: Value) -> (u16, Value) {
    let (s, _, b) =
        app.send("POST", &format!("/v1/approvals/{id}/approve"), Some(token), Some(body), &[]).await;
    (s, b)
}

async fn budget(app: &TestApp, profile: &str) -> Value {
    let (s, _, b) =
        app.send("GET", &format!("/v1/users/{profile}/budget"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200, "{b}");
    b
}

async fn approval(app: &TestApp, id: &str) -> Value {
    app.send("GET", &format!("/v1/approvals/{id}"), Some(COMPANY_KEY), None, &[]).await.2
}

/// #1: an approval is decided under the kit and caps in force when it is decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_after_the_kit_narrowed_is_refused_and_voids_the_hold() {
    let app = spawn_app().await;
    let (_, approver) = app.personal_token("approver", &["approver"]).await;
    let narrow = |cap: &str, primitives: Value| json!({"name": "Narrowing", "primitives": primitives, "limits": {"budget": {"hard_cap": cap}, "approve": {"above": "5"}}});
    app.put_kit(narrow("10", json!(["cards"]))).await;
    let (p, _, key) = app.new_agent("narrowed-buyer", "Narrowing", None).await;

    let id = park(&app, &p, &key, "6.00").await;
    app.put_kit(narrow("3", json!(["cards"]))).await;
    let (s, b) = approve(&app, &id, &approver, json!({})).await;
    assert_eq!(
        (s, b["reason"].clone(), b["error"]["details"]["reason"].clone()),
        (403, json!("budget_exceeded"), json!("hard_cap_exceeded")),
        "{b}"
    );
    let a = approval(&app, &id).await;
    assert_eq!(a["status"], "denied", "{a}");
    let last = a["trail"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["step"].clone(), last["actor"].clone()), (json!("refused"), json!("approver")), "{a}");
    assert!(last["note"].as_str().unwrap().contains("hard cap of $3.00"), "the approver is told why: {last}");
    let spent = budget(&app, &p).await;
    assert_eq!(
        (spent["totals"]["posted"].clone(), spent["totals"]["pending"].clone()),
        (json!("0.00"), json!("0.00")),
        "the hold is voided"
    );

    // The same when the primitive was switched off in between.
    app.put_kit(narrow("10", json!(["cards"]))).await;
    let id = park(&app, &p, &key, "6.00").await;
    app.put_kit(narrow("10", json!(["web"]))).await;
    let (s, b) = approve(&app, &id, &approver, json!({})).await;
    assert_eq!(
        (s, b["error"]["details"]["reason"].clone()),
        (403, json!("primitive_disabled_by_kit")),
        "{b}"
    );
    assert_eq!(budget(&app, &p).await["totals"]["pending"], "0.00");
    app.stop().await;
}

/// #2: a human decision over `/v1` carries that human's own credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_company_key_cannot_decide_in_a_humans_name() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Parking", "primitives": ["cards"], "limits": {"approve": {"above": "5"}}}))
        .await;
    // The admin owns this agent; the approver does not.
    let (p, _, key) = app.new_agent("owned-buyer", "Parking", Some("admin")).await;
    let id = park(&app, &p, &key, "9").await;

    for user in ["approver", "admin"] {
        let (s, _, b) = app
            .send(
                "POST",
                &format!("/v1/approvals/{id}/approve"),
                Some(COMPANY_KEY),
                Some(json!({})),
                &[("x-naive-user", user)],
            )
            .await;
        assert_eq!((s, b["code"].clone()), (403, json!("human_credential_required")), "{b}");
    }
    let (_, admin) = app.personal_token("admin", &["admin", "approver"]).await;
    let (s, b) = approve(&app, &id, &admin, json!({})).await;
    assert_eq!(
        (s, b["code"].clone()),
        (403, json!("requester_cannot_decide")),
        "the owner never decides: {b}"
    );
    let (_, admin_reviewing) = app.personal_token("admin", &["reviewer"]).await;
    let (s, b) = approve(&app, &id, &admin_reviewing, json!({})).await;
    assert_eq!(
        (s, b["code"].clone()),
        (403, json!("role_required")),
        "a token has only the roles it was given: {b}"
    );
    // A token cannot claim a role its user does not have.
    let cookie = app.sign_in("finance", common::ADMIN_PASSWORD).await;
    let res = app
        .post_form(&cookie, "create_token", "/account", &[("label", "too much"), ("approver", "on")])
        .await;
    let to = res.headers().get("location").unwrap().to_str().unwrap().to_string();
    assert!(to.contains("error=role_not_held"), "{to}");

    let (token_id, approver) = app.personal_token("approver", &["approver"]).await;
    let (s, b) = approve(&app, &id, &approver, json!({"note": "ok"})).await;
    assert_eq!((s, b["ok"].clone()), (200, json!(true)), "{b}");
    let a = approval(&app, &id).await;
    let step = a["trail"].as_array().unwrap().iter().find(|t| t["step"] == "approved").unwrap().clone();
    assert_eq!(step["actor"], "approver");
    assert!(
        step["credential"].as_str().unwrap().contains(&token_id),
        "the trail names the credential: {step}"
    );

    // A revoked token decides nothing.
    let cookie = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    let res = app.post_form(&cookie, "revoke_token", "/account", &[("token_id", token_id.as_str())]).await;
    assert!(res.status().is_redirection(), "{}", res.status());
    let second = park(&app, &p, &key, "8").await;
    let (s, b) = approve(&app, &second, &approver, json!({})).await;
    assert_eq!((s, b["code"].clone()), (401, json!("invalid_key")), "{b}");

    // Proposals too: a reviewer's own token, never the company key acting in their name.
    app.put_kit(json!({"name": "Thinking", "primitives": ["brain"]})).await;
    let (thinker, _, tkey) = app.new_agent("thinker", "Thinking", None).await;
    let (s, _, wb) = app
        .send("POST", "/v1/brain/writebacks", Some(&tkey), Some(json!({"run_id": "r1", "source": "notes", "claims": [{"object_type": "fact", "content": {"text": "x"}}]})), &[])
        .await;
    assert_eq!(s, 201, "{wb} {thinker}");
    let proposal = wb["writeback"]["proposals"][0]["id"].as_str().unwrap().to_string();
    let decision = json!({"decision": "accept", "because": "checked"});
    let path = format!("/v1/brain/proposals/{proposal}/decision");
    let (s, _, b) = app
        .send("POST", &path, Some(COMPANY_KEY), Some(decision.clone()), &[("x-naive-user", "reviewer")])
        .await;
    assert_eq!((s, b["code"].clone()), (403, json!("human_credential_required")), "{b}");
    let (_, reviewer) = app.personal_token("reviewer", &["reviewer"]).await;
    let (s, _, b) = app.send("POST", &path, Some(&reviewer), Some(decision), &[]).await;
    assert_eq!((s, b["proposal"]["status"].clone()), (200, json!("accepted")), "{b}");
    app.stop().await;
}

/// #3: nothing is created under, or acts from, a revoked ancestry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_ancestry_refuses_new_sub_agents_and_every_call() {
    let app = spawn_app().await;
    let (parent, _, _) = app.new_agent("lead", "Default", None).await;
    let (child, _, child_key) = {
        let (s, _, c) = app
            .send(
                "POST",
                "/v1/agent-profiles",
                Some(COMPANY_KEY),
                Some(json!({"name": "helper", "kit": "Default", "parent": parent})),
                &[],
            )
            .await;
        assert_eq!(s, 201);
        let id = c["id"].as_str().unwrap().to_string();
        let (_, _, k) =
            app.send("POST", &format!("/v1/agent-profiles/{id}/keys"), Some(COMPANY_KEY), None, &[]).await;
        (id, (), k["secret"].as_str().unwrap().to_string())
    };
    let (s, _, _) =
        app.send("POST", &format!("/v1/agent-profiles/{parent}/revoke"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200);
    let (s, _, b) = app
        .send(
            "POST",
            "/v1/agent-profiles",
            Some(COMPANY_KEY),
            Some(json!({"name": "late", "kit": "Default", "parent": parent})),
            &[],
        )
        .await;
    assert_eq!((s, b["code"].clone()), (409, json!("parent_not_active")), "{b}");
    let (_, _, tree) = app.send("GET", "/v1/agent-profiles", Some(COMPANY_KEY), None, &[]).await;
    assert!(!tree.to_string().contains("\"late\""), "nothing was created");

    // A database that holds an active profile under a revoked parent (written before this
    // check existed): the child's calls are refused because of its ancestry.
    app.gateway
        .store()
        .exec("UPDATE agent_profiles SET status = 'active' WHERE id = ?", &[&child])
        .await
        .unwrap();
    let (s, b) =
        app.web_read(&gateway::ProfileId::parse(&child).unwrap(), &child_key, "https://x.test").await;
    assert_eq!(s, 403, "{b}");
    let b: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(b["reason"], "agent_profile_revoked");
    let (s, _, b) = app.send("GET", &format!("/v1/users/{child}/budget"), Some(&child_key), None, &[]).await;
    assert_eq!((s, b["reason"].clone()), (403, json!("agent_profile_revoked")), "reads too: {b}");
    app.stop().await;
}

/// Reads an event stream until it ends; `false` if it is still open after `wait`.
async fn ends_within(mut res: reqwest::Response, wait: Duration) -> bool {
    tokio::time::timeout(wait, async move { while let Ok(Some(_)) = res.chunk().await {} }).await.is_ok()
}

async fn open_stream(app: &TestApp, key: &str) -> reqwest::Response {
    let res =
        server::http_client().get(format!("{}/v1/events", app.base)).bearer_auth(key).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res
}

/// #4: revoking a profile or a key closes the streams it had open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_profile_or_a_key_closes_its_open_streams() {
    let app = spawn_app().await;
    let wait = Duration::from_secs(10);
    let (p, key_id, key) = app.new_agent("watcher", "Default", None).await;
    let stream = open_stream(&app, &key).await;
    let (s, _, _) = app
        .send("DELETE", &format!("/v1/agent-profiles/{p}/keys/{key_id}"), Some(COMPANY_KEY), None, &[])
        .await;
    assert_eq!(s, 200);
    assert!(ends_within(stream, wait).await, "the revoked key's stream is still open");

    let (p, _, key) = app.new_agent("watcher-2", "Default", None).await;
    let stream = open_stream(&app, &key).await;
    let (s, _, _) =
        app.send("POST", &format!("/v1/agent-profiles/{p}/revoke"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200);
    assert!(ends_within(stream, wait).await, "the revoked profile's stream is still open");

    // A company key's stream ends when that company key is revoked.
    let (s, _, made) = app.send("POST", "/v1/company-keys", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 201, "{made}");
    let stream = open_stream(&app, made["secret"].as_str().unwrap()).await;
    let id = made["key"]["id"].as_str().unwrap();
    let (s, _, _) = app.send("DELETE", &format!("/v1/company-keys/{id}"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200);
    assert!(ends_within(stream, wait).await, "the revoked company key's stream is still open");
    app.stop().await;
}

/// #5: arguments are checked against each action's one declaration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_checked_against_the_actions_declaration() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Careful", "primitives": ["cards", "email"],
        "can": [{"action": "email.send", "effect": "allow", "recipients": ["ok@x.test"]}],
        "limits": {"budget": {"hard_cap": "10"}, "approve": {"above": "5"}}}))
        .await;
    let (p, _, key) = app.new_agent("careful", "Careful", None).await;
    let call = |verb: &'static str, args: Value| {
        let (app, p, key) = (&app, p.clone(), key.clone());
        async move { app.send("POST", &format!("/v1/users/{p}/{verb}"), Some(&key), Some(args), &[]).await }
    };
    for (verb, args, code) in [
        (CHARGE, json!({"merchant": "acme"}), "missing_argument"),
        (CHARGE, json!({"amount": 6, "merchant": "acme"}), "invalid_amount"),
        (CHARGE, json!({"amount": "1", "merchant": "acme", "tip": "5"}), "unknown_argument"),
        ("email/send", json!({"to": "ok@x.test", "bcc": "spy@x.test"}), "unknown_argument"),
        ("email/send", json!({"to": ["ok@x.test", "spy@x.test"]}), "invalid_argument"),
    ] {
        let (s, _, b) = call(verb, args.clone()).await;
        assert_eq!((s, b["code"].clone()), (400, json!(code)), "{verb} {args}: {b}");
    }
    let (s, _, b) = app
        .send(
            "POST",
            "/v1/policy/explain",
            Some(&key),
            Some(json!({"action": "cards.charge", "args": {"merchant": "acme"}})),
            &[],
        )
        .await;
    assert_eq!(
        (s, b["code"].clone()),
        (400, json!("missing_argument")),
        "explain checks the same declaration: {b}"
    );
    let (_, _, log) = app.send("GET", &format!("/v1/users/{p}/logs"), Some(COMPANY_KEY), None, &[]).await;
    let calls: Vec<&Value> = log["items"].as_array().unwrap().iter().filter(|e| e["kind"] != "key").collect();
    assert!(calls.is_empty(), "refused input leaves no trace: {calls:?}");
    let spent = budget(&app, &p).await;
    assert_eq!(
        (spent["totals"]["posted"].clone(), spent["totals"]["pending"].clone()),
        (json!("0.00"), json!("0.00"))
    );
    let (s, _, _) = call("email/send", json!({"to": "ok@x.test", "subject": "hi"})).await;
    assert_eq!(s, 200, "declared arguments pass");
    app.stop().await;
}

/// #6: amounts have an upper bound and no accepted calls make an account unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_amounts_are_refused_and_no_accepted_calls_break_an_account() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Uncapped", "primitives": ["cards"]})).await;
    let (p, _, key) = app.new_agent("big-spender", "Uncapped", None).await;
    let charge = |amount: &'static str| {
        let (app, p, key) = (&app, p.clone(), key.clone());
        async move {
            app.send(
                "POST",
                &format!("/v1/users/{p}/{CHARGE}"),
                Some(&key),
                Some(json!({"amount": amount, "merchant": "acme"})),
                &[],
            )
            .await
        }
    };
    for _ in 0..2 {
        let (s, _, b) = charge("900000000000000").await;
        assert_eq!((s, b["code"].clone()), (400, json!("amount_too_large")), "{b}");
    }
    // The largest action, again and again, until the account's bound refuses it.
    let mut accepted = 0;
    let refusal = loop {
        let (s, _, b) = charge("1000000000").await;
        match s {
            200 => accepted += 1,
            403 => break b,
            _ => panic!("{s} {b}"),
        }
        assert!(accepted <= 1_000, "the balance bound never refused");
    };
    assert_eq!(
        (accepted, refusal["error"]["details"]["reason"].clone()),
        (1_000, json!("balance_limit_reached")),
        "{refusal}"
    );
    let spent = budget(&app, &p).await;
    assert_eq!(spent["totals"]["posted"], "1000000000000.00", "the account still reads: {spent}");
    let (s, _, _) =
        app.send("GET", &format!("/v1/users/{p}/ledger?limit=5"), Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 200);
    app.stop().await;
}

/// #7: sign-in sends the browser only to a path on this site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_redirects_only_to_this_site() {
    let app = spawn_app().await;
    let base = url::Url::parse(&app.base).unwrap();
    for next in [
        "/\t/evil.example/",
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "/\n/evil.example",
        " //evil.example",
        "/spend?profile=prf_1#x",
    ] {
        let res = app
            .raw_client()
            .post(format!("{}/login", app.base))
            .form(&[("username", "admin"), ("password", common::ADMIN_PASSWORD), ("next", next)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303, "{next:?}");
        let location = res.headers().get("location").unwrap().to_str().unwrap();
        let target = base.join(location).unwrap();
        assert_eq!(target.origin(), base.origin(), "{next:?} sent the browser to {target}");
    }
    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[
            ("username", "admin"),
            ("password", common::ADMIN_PASSWORD),
            ("next", "/spend?profile=prf_1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers().get("location").unwrap(), "/spend?profile=prf_1", "a same-site path is kept");
    app.stop().await;
}

/// #8: attempts are counted before they are checked, so parallel guesses cannot outrun the
/// limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_wrong_passwords_cannot_outrun_the_login_limit() {
    let app = spawn_app().await;
    let guess = |password: &'static str| {
        let (client, base) = (app.raw_client(), app.base.clone());
        async move {
            client
                .post(format!("{base}/login"))
                .form(&[("username", "finance"), ("password", password), ("next", "/")])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    let statuses = futures_util::future::join_all((0..40).map(|_| guess("not-the-password"))).await;
    let checked = statuses.iter().filter(|s| **s == 303).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((checked, limited), (5, 35), "{statuses:?}");
    assert_eq!(guess(common::ADMIN_PASSWORD).await, 429, "the right password waits out the window too");
    app.stop().await;
}

/// #9: an invalidation wins over a cache fill that read before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_wins_over_a_key_lookup_in_flight() {
    let app = spawn_app().await;
    let (p, key_id, key) = app.new_agent("racer", "Default", None).await;
    let profile = gateway::ProfileId::parse(&p).unwrap();
    // The next lookup that misses the cache waits between its read and its insert.
    app.gateway.pause_cache_fills(Duration::from_millis(500));
    let in_flight = tokio::spawn({
        let (app_base, key, p) = (app.base.clone(), key.clone(), p.clone());
        async move {
            server::http_client()
                .post(format!("{app_base}/v1/users/{p}/web/read"))
                .bearer_auth(key)
                .json(&json!({"url": "https://x.test"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let (s, _, _) = app
        .send("DELETE", &format!("/v1/agent-profiles/{p}/keys/{key_id}"), Some(COMPANY_KEY), None, &[])
        .await;
    assert_eq!(s, 200);
    in_flight.await.unwrap();
    app.gateway.pause_cache_fills(Duration::ZERO);
    let (s, b) = app.web_read(&profile, &key, "https://y.test").await;
    assert_eq!(s, 401, "the revoked key authenticated from a stale cache entry: {b}");
    app.stop().await;
}

/// Makes every commit that includes a write matching `when` (SQL on the row `NEW`) of `table`
/// fail: on SQLite a deferred foreign key that can never hold, on PostgreSQL a deferred
/// constraint trigger that raises, both checked at COMMIT.
async fn fail_commits(app: &TestApp, table: &str, when: &str) {
    let store = app.gateway.store();
    match store.kind() {
        gateway::sql::Engine::Sqlite => {
            store
                .exec(
                    "CREATE TABLE IF NOT EXISTS fault_sink (t TEXT REFERENCES tenants(id) DEFERRABLE INITIALLY DEFERRED)",
                    &[],
                )
                .await
                .unwrap();
            let sql = format!(
                "CREATE TRIGGER fault AFTER INSERT ON {table} WHEN {when} BEGIN INSERT INTO fault_sink VALUES ('no-such-tenant'); END"
            );
            store.exec(&sql, &[]).await.unwrap();
        }
        gateway::sql::Engine::Postgres => {
            store
                .exec(
                    "CREATE OR REPLACE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS \
                     $$ BEGIN RAISE EXCEPTION 'injected commit failure'; END $$",
                    &[],
                )
                .await
                .unwrap();
            let sql = format!(
                "CREATE CONSTRAINT TRIGGER fault AFTER INSERT ON {table} DEFERRABLE INITIALLY DEFERRED \
                 FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION fault()"
            );
            store.exec(&sql, &[]).await.unwrap();
        }
    }
}

async fn heal(app: &TestApp, table: &str) {
    let sql = match app.gateway.store().kind() {
        gateway::sql::Engine::Sqlite => "DROP TRIGGER fault".to_string(),
        gateway::sql::Engine::Postgres => format!("DROP TRIGGER fault ON {table}"),
    };
    app.gateway.store().exec(&sql, &[]).await.unwrap();
}

/// #10: our failures are 5xx and never replayed; claims come after authentication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_failures_are_5xx_and_never_replayed() {
    let app = spawn_app().await;
    let create = json!({"name": "boom", "kit": "Default"});
    let idem = [("idempotency-key", "first-try")];
    fail_commits(&app, "agent_profiles", "NEW.name = 'boom'").await;
    let (s, _, b) =
        app.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(create.clone()), &idem).await;
    assert_eq!((s, b["code"].clone()), (500, json!("commit_failed")), "{b}");
    heal(&app, "agent_profiles").await;
    let (s, h, b) = app.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(create), &idem).await;
    assert_eq!(s, 201, "the retry ran instead of replaying the failure: {b}");
    assert!(h.get("idempotent-replayed").is_none());

    // The governed pipeline keeps its own claims: the same holds there.
    let (p, _, key) = app.new_agent("reader", "Default", None).await;
    fail_commits(&app, "activity", "NEW.action = 'web.read'").await;
    let path = format!("/v1/users/{p}/web/read");
    let (s, _, b) = app.send("POST", &path, Some(&key), Some(json!({"url": "https://x.test"})), &idem).await;
    assert_eq!((s, b["code"].clone()), (500, json!("commit_failed")), "{b}");
    heal(&app, "activity").await;
    let (s, h, _) = app.send("POST", &path, Some(&key), Some(json!({"url": "https://x.test"})), &idem).await;
    assert_eq!((s, h.get("idempotent-replayed").is_none()), (200, true));

    // Bad credentials write nothing.
    let store = app.gateway.store().clone();
    let claims = || {
        let store = store.clone();
        async move { store.one::<(i64,)>("SELECT COUNT(*) FROM request_idempotency", &[]).await.map(|(n,)| n) }
    };
    let before = claims().await.unwrap();
    let (s, _, _) = app
        .send(
            "POST",
            "/v1/agent-profiles",
            Some("nv_nobody00_abcdefghijklmnopqrst"),
            Some(json!({"name": "x", "kit": "Default"})),
            &[("idempotency-key", "k2")],
        )
        .await;
    assert_eq!(s, 401);
    assert_eq!(claims().await.unwrap(), before, "an unauthenticated request claimed a key");

    // A revoked credential is refused, never answered from the store.
    let (s, _, _) = app
        .send("POST", &path, Some(&key), Some(json!({"url": "https://z.test"})), &[("idempotency-key", "k3")])
        .await;
    assert_eq!(s, 200);
    app.send("POST", &format!("/v1/agent-profiles/{p}/revoke"), Some(COMPANY_KEY), None, &[]).await;
    let (s, _, b) = app
        .send("POST", &path, Some(&key), Some(json!({"url": "https://z.test"})), &[("idempotency-key", "k3")])
        .await;
    assert_eq!((s, b["reason"].clone()), (403, json!("agent_profile_revoked")), "{b}");
    let (s, _, made) = app.send("POST", "/v1/company-keys", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 201);
    let second = made["secret"].as_str().unwrap().to_string();
    let body = json!({"name": "by-second-key", "kit": "Default"});
    let (s, _, _) = app
        .send("POST", "/v1/agent-profiles", Some(&second), Some(body.clone()), &[("idempotency-key", "k4")])
        .await;
    assert_eq!(s, 201);
    let id = made["key"]["id"].as_str().unwrap();
    app.send("DELETE", &format!("/v1/company-keys/{id}"), Some(COMPANY_KEY), None, &[]).await;
    let (s, _, _) =
        app.send("POST", "/v1/agent-profiles", Some(&second), Some(body), &[("idempotency-key", "k4")]).await;
    assert_eq!(s, 401, "a revoked company key got a replay");
    app.stop().await;
}

/// #12: an approval's note is bounded like a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_note_is_bounded() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Parking", "primitives": ["cards"], "limits": {"approve": {"above": "5"}}}))
        .await;
    let (p, _, key) = app.new_agent("noted", "Parking", None).await;
    let id = park(&app, &p, &key, "7").await;
    let (_, approver) = app.personal_token("approver", &["approver"]).await;
    let (s, b) = approve(&app, &id, &approver, json!({"note": "x".repeat(2_001)})).await;
    assert_eq!((s, b["code"].clone()), (400, json!("note_too_long")), "{b}");
    assert_eq!(approval(&app, &id).await["status"], "pending", "nothing was decided");
    app.stop().await;
}

/// #12: the console's server functions take bodies as small as `/v1`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_forms_refuse_oversize_bodies() {
    let app = spawn_app().await;
    let cookie = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    let reason = "x".repeat(100 * 1024);
    let res = app
        .raw_client()
        .post(format!("{}/api/deny", app.base))
        .header("cookie", &cookie)
        .form(&[("id", "apr_x"), ("reason", reason.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 413);
    app.stop().await;
}

/// #12: the session cookie is Secure (and `__Host-`) when configured, whatever the address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_follows_the_secure_setting() {
    let app = spawn_app().await;
    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[("username", "admin"), ("password", common::ADMIN_PASSWORD), ("next", "/")])
        .send()
        .await
        .unwrap();
    let set = res.headers().get("set-cookie").unwrap().to_str().unwrap().to_string();
    assert!(set.starts_with("naive_session=") && !set.contains("Secure"), "local development: {set}");
    app.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(&format!("sqlite://{}/naive.db", dir.path().display()));
    config.secure_cookies = server::config::SecureCookies::Always;
    let app = common::spawn_with(config).await;
    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[("username", "admin"), ("password", common::ADMIN_PASSWORD), ("next", "/")])
        .send()
        .await
        .unwrap();
    let set = res.headers().get("set-cookie").unwrap().to_str().unwrap().to_string();
    assert!(
        set.starts_with("__Host-naive_session=") && set.contains("; Secure") && set.contains("Path=/"),
        "{set}"
    );
    let cookie = set.split(';').next().unwrap();
    let (s, _) = app.get_signed_in("/activity", cookie).await;
    assert_eq!(s, 200, "the prefixed cookie signs the browser in");
    let (s, _) = app.get_signed_in("/activity", &cookie.replace("__Host-", "")).await;
    assert_eq!(s, 303, "an unprefixed cookie is not a session when cookies are secure");
    app.stop().await;
}

/// The resident memory of process `pid`.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    kb * 1024
}

/// #12: resuming from event 0 reads the log page by page, not all at once. The server is its
/// own process, so what grows is its memory alone: measured in this test process, the other
/// tests of this file running beside it moved the figure by tens of MB either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_from_the_first_event_does_not_load_the_whole_log() {
    let fresh = common::process::start_fresh(&[]).await;
    let server = &fresh.server;
    // 40,000 entries of 2 KB each, written beside the server: about 80 MB if a stream held them all.
    let seeding = gateway::Gateway::open(&fresh.db).await.unwrap();
    let store = seeding.store();
    let (tenant,): (String,) = store.one("SELECT id FROM tenants", &[]).await.unwrap();
    let detail = json!({ "note": "x".repeat(2_000) }).to_string();
    store
        .exec(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000) \
             INSERT INTO activity (tenant_id, at, actor, kind, detail, prev_hash, hash) \
             SELECT ?, '2026-01-01T00:00:00Z', 'seed', 'action', ?, '', 'h' || i FROM n",
            &[&tenant, &detail],
        )
        .await
        .unwrap();
    store.close().await;
    let before = rss_bytes(server.child.id());
    let mut res = server::http_client()
        .get(format!("{}/v1/events", server.base))
        .bearer_auth(COMPANY_KEY)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    let first = res.chunk().await.unwrap().expect("the first event arrives");
    let grown = rss_bytes(server.child.id()).saturating_sub(before);
    assert!(grown < 30 << 20, "the stream holds {} MB", grown >> 20);
    // It still delivers the log in order across its pages.
    let mut text = String::from_utf8_lossy(&first).to_string();
    let mut last = 0;
    while last < 1_200 {
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            if let Some(id) = frame.lines().find_map(|l| l.strip_prefix("id: ")) {
                let id: i64 = id.parse().unwrap();
                assert_eq!(id, last + 1, "events arrive once each, in order");
                last = id;
            }
        }
        let chunk = res.chunk().await.unwrap().expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(res);
}

/// #12: the activity page verifies only what was appended since it last looked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_page_verifies_each_entry_once() {
    let app = spawn_app().await;
    let cookie = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let checked = |page: &str| -> (u64, bool) {
        let at = page.find("data-chain-checked=\"").expect("the page states what it checked") + 20;
        let n = page[at..page[at..].find('"').unwrap() + at].parse().unwrap();
        (n, page.contains("data-chain-ok=\"true\""))
    };
    let (_, first) = app.get_signed_in("/activity", &cookie).await;
    let (n, ok) = checked(&first);
    assert!(n > 0 && ok);
    let (_, second) = app.get_signed_in("/activity", &cookie).await;
    assert_eq!(checked(&second), (0, true), "nothing new, nothing re-hashed");
    let (p, _, key) = app.new_agent("chained", "Default", None).await;
    app.web_read(&gateway::ProfileId::parse(&p).unwrap(), &key, "https://x.test").await;
    let (_, third) = app.get_signed_in("/activity", &cookie).await;
    let (n, ok) = checked(&third);
    assert!((1..10).contains(&n) && ok, "{n}");
    // Tampering with what was already verified is still found.
    app.gateway
        .store()
        .exec("UPDATE activity SET actor = 'mallory' WHERE seq = (SELECT MAX(seq) FROM activity)", &[])
        .await
        .unwrap();
    let (_, fourth) = app.get_signed_in("/activity", &cookie).await;
    assert!(!checked(&fourth).1, "a changed entry must break the chain");
    app.stop().await;
}

/// #12: expired console sessions are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_sessions_are_deleted() {
    let app = spawn_app().await;
    app.sign_in("finance", common::ADMIN_PASSWORD).await;
    let store = app.gateway.store().clone();
    store.exec("UPDATE console_sessions SET expires_at = '2000-01-01T00:00:00Z'", &[]).await.unwrap();
    let count = || {
        let store = store.clone();
        async move { store.one::<(i64,)>("SELECT COUNT(*) FROM console_sessions", &[]).await.map(|(n,)| n) }
    };
    for _ in 0..100 {
        if count().await.unwrap() == 0 {
            return app.stop().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("an expired session is still stored after ten seconds");
}

/// #12: company keys are listed, created, rotated and revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn company_keys_rotate_and_revoke() {
    let app = spawn_app().await;
    let (s, _, list) = app.send("GET", "/v1/company-keys", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!((s, list["items"].as_array().unwrap().len()), (200, 1), "{list}");
    assert!(!list.to_string().contains(COMPANY_KEY), "secrets are never listed");
    let first = list["items"][0]["id"].as_str().unwrap().to_string();
    let (s, _, rotated) = app
        .send(
            "POST",
            &format!("/v1/company-keys/{first}/rotate"),
            Some(COMPANY_KEY),
            Some(json!({"grace_secs": 0})),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{rotated}");
    let new = rotated["secret"].as_str().unwrap().to_string();
    let (s, _, _) = app.send("GET", "/v1/kits", Some(COMPANY_KEY), None, &[]).await;
    assert_eq!(s, 401, "the rotated key stopped at once");
    let (s, _, _) = app.send("GET", "/v1/kits", Some(&new), None, &[]).await;
    assert_eq!(s, 200);
    let new_id = rotated["key"]["id"].as_str().unwrap();
    let (s, _, b) = app.send("DELETE", &format!("/v1/company-keys/{new_id}"), Some(&new), None, &[]).await;
    assert_eq!((s, b["code"].clone()), (409, json!("last_company_key")), "a tenant keeps one key: {b}");
    app.stop().await;
}

/// #12: names that render as something they are not are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_control_or_bidi_characters_are_refused() {
    let app = spawn_app().await;
    for name in ["pay\u{202E}gnp.exe", "tab\tbot", "zero\u{200B}width", "nul\u{0}"] {
        let (s, _, b) = app
            .send(
                "POST",
                "/v1/agent-profiles",
                Some(COMPANY_KEY),
                Some(json!({"name": name, "kit": "Default"})),
                &[],
            )
            .await;
        assert_eq!((s, b["code"].clone()), (400, json!("invalid_profile_name")), "{name:?}: {b}");
    }
    let kit = json!({"name": "Ki\u{202E}t", "primitives": ["web"]});
    let (s, _, b) = app.send("PUT", "/v1/kits/Ki%E2%80%AEt", Some(COMPANY_KEY), Some(kit), &[]).await;
    assert_eq!((s, b["code"].clone()), (400, json!("invalid_kit")), "{b}");
    app.stop().await;
}

/// #12: an agent decides only its own proposals, and nobody reviews their own agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_are_decided_by_neither_strangers_nor_owners() {
    let app = spawn_app().await;
    app.put_kit(json!({"name": "Thinking", "primitives": ["brain"]})).await;
    // The reviewer owns the agent that proposes.
    let (_, _, author) = app.new_agent("author", "Thinking", Some("reviewer")).await;
    let (_, _, stranger) = app.new_agent("stranger", "Thinking", None).await;
    let (s, _, wb) = app
        .send("POST", "/v1/brain/writebacks", Some(&author), Some(json!({"run_id": "r1", "source": "notes", "claims": [{"object_type": "fact", "content": {"text": "x"}}]})), &[])
        .await;
    assert_eq!(s, 201, "{wb}");
    let id = wb["writeback"]["proposals"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/v1/brain/proposals/{id}/decision");
    let (s, _, b) = app
        .send("POST", &path, Some(&stranger), Some(json!({"decision": "reject", "because": "mine now"})), &[])
        .await;
    assert_eq!((s, b["code"].clone()), (403, json!("not_the_proposer")), "{b}");
    let (_, reviewer) = app.personal_token("reviewer", &["reviewer"]).await;
    let (s, _, b) = app
        .send(
            "POST",
            &path,
            Some(&reviewer),
            Some(json!({"decision": "accept", "because": "looks right"})),
            &[],
        )
        .await;
    assert_eq!((s, b["code"].clone()), (403, json!("requester_cannot_decide")), "{b}");
    let (s, _, b) = app
        .send(
            "POST",
            &path,
            Some(&author),
            Some(json!({"decision": "reject", "because": "wrong after all"})),
            &[],
        )
        .await;
    assert_eq!(
        (s, b["proposal"]["status"].clone()),
        (200, json!("rejected")),
        "its own agent may withdraw it: {b}"
    );
    app.stop().await;
}

/// #12: a revoked agent is told it is revoked, whatever else is wrong with its request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_agent_is_refused_as_revoked_before_its_input_is_read() {
    let app = spawn_app().await;
    let (p, _, key) = app.new_agent("gone", "Default", None).await;
    app.send("POST", &format!("/v1/agent-profiles/{p}/revoke"), Some(COMPANY_KEY), None, &[]).await;
    let raw = |path: String, body: &'static str| {
        let (client, base, key) = (app.client.clone(), app.base.clone(), key.clone());
        async move {
            let r = client.post(format!("{base}{path}")).bearer_auth(key).body(body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    for (path, body) in [
        (format!("/v1/users/{p}/web/read"), "{not json"),
        (format!("/v1/users/{p}/warp/drive"), "{}"),
        (format!("/v1/users/{p}/cards/charge"), r#"{"amount": "x"}"#),
        ("/v1/policy/explain".to_string(), "[]"),
        ("/v1/brain/writebacks".to_string(), "{}"),
    ] {
        let (s, b) = raw(path.clone(), body).await;
        assert_eq!((s, b["reason"].clone()), (403, json!("agent_profile_revoked")), "{path}: {b}");
    }
    app.stop().await;
}
