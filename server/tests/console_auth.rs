//! Console sign-in, roles, sessions and CSRF over HTTP, on the real server.

mod common;

use common::spawn_app;
use gateway::audit::activity::Verdict;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_sets_a_strict_http_only_cookie_and_sign_out_ends_the_session() {
    let app = spawn_app().await;
    // Signed out: a page sends the browser to sign in, and comes back after.
    let res = app.raw_client().get(format!("{}/kits", app.base)).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/login?next=/kits");
    // Every view of the navigation does so (#30: /connectors and /runtime did not).
    for path in ["/connectors", "/runtime", "/users", "/overview"] {
        let res = app.raw_client().get(format!("{}{path}", app.base)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 303, "{path}");
        assert_eq!(res.headers()["location"], format!("/login?next={path}").as_str());
    }

    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[("username", "admin"), ("password", common::ADMIN_PASSWORD), ("next", "/kits")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()["location"], "/kits");
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(flag), "{set} lacks {flag}");
    }
    assert!(!set.contains("Secure"), "plain HTTP on loopback is local development");
    let cookie = set.split(';').next().unwrap().to_string();
    let (status, html) = app.get_signed_in("/kits", &cookie).await;
    assert_eq!(status, 200);
    assert!(html.contains(">Kits</h1>") && html.contains("data-testid=\"sign-out\""));

    // A next that leaves the site is ignored.
    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[("username", "admin"), ("password", common::ADMIN_PASSWORD), ("next", "//evil.test/x")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/overview", "the admin's own start instead");

    let res =
        app.raw_client().post(format!("{}/logout", app.base)).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 303);
    assert!(res.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    let (status, _) = app.get_signed_in("/kits", &cookie).await;
    assert_eq!(status, 303, "the ended session no longer opens pages");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_are_refused_and_then_rate_limited() {
    let app = spawn_app().await;
    let attempt = |pw: &'static str| {
        let client = app.raw_client();
        let url = format!("{}/login", app.base);
        async move { client.post(url).form(&[("username", "admin"), ("password", pw)]).send().await.unwrap() }
    };
    for _ in 0..5 {
        let res = attempt("wrong").await;
        assert_eq!(res.status().as_u16(), 303);
        assert!(res.headers()["location"].to_str().unwrap().starts_with("/login?error=invalid"));
        assert!(res.headers().get("set-cookie").is_none());
    }
    // Past the limit even the right password waits.
    let res = attempt(common::ADMIN_PASSWORD).await;
    assert_eq!(res.status().as_u16(), 429);
    assert!(res.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() > 0);
    assert!(res.headers().get("set-cookie").is_none());
    let (status, html) = app.get("/login?error=invalid").await;
    assert_eq!(status, 200);
    assert!(html.contains("do not match"));
    // Each refused password is in the user's tenant's log, by the gateway (whoever tried is not
    // known to be the admin), naming the user and why; the rate-limited attempt is not, and a
    // name nobody has leaves no entry anywhere.
    let res = app
        .raw_client()
        .post(format!("{}/login", app.base))
        .form(&[("username", "nobody"), ("password", "x")]);
    assert_eq!(res.send().await.unwrap().status().as_u16(), 303);
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let log = app.gateway.log(&tenant, &Default::default()).await.unwrap();
    let failed: Vec<_> = log.iter().filter(|e| e.verdict == Some(Verdict::SignInFailed)).collect();
    assert_eq!(failed.len(), 5, "{failed:?}");
    for e in failed {
        assert_eq!(e.actor, gateway::audit::activity::Actor::System);
        assert_eq!(
            (e.detail["user"].as_str(), e.detail["reason"].as_str()),
            (Some("admin"), Some("password"))
        );
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_opens_its_views_and_gets_a_403_page_elsewhere() {
    let app = spawn_app().await;
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    for (name, role) in
        [("fin", gateway::Role::Finance), ("appr", gateway::Role::Approver), ("rev", gateway::Role::Reviewer)]
    {
        app.gateway.create_user(&tenant, name, "a-long-test-password", &[role]).await.unwrap();
    }
    let expectations = [
        (
            "fin",
            [
                ("/", 200),
                ("/proposals", 200),
                ("/kits", 200),
                ("/spend", 200),
                ("/activity", 200),
                ("/profiles", 200),
            ],
        ),
        (
            "appr",
            [
                ("/", 200),
                ("/proposals", 403),
                ("/kits", 403),
                ("/spend", 403),
                ("/activity", 200),
                ("/profiles", 403),
            ],
        ),
        (
            "rev",
            [
                ("/", 403),
                ("/proposals", 200),
                ("/kits", 403),
                ("/spend", 403),
                ("/activity", 200),
                ("/profiles", 403),
            ],
        ),
    ];
    for (user, pages) in expectations {
        let cookie = app.sign_in(user, "a-long-test-password").await;
        for (path, want) in pages {
            let (status, html) = app.get_signed_in(path, &cookie).await;
            assert_eq!(status, want, "{user} {path}");
            if want == 403 {
                assert!(
                    html.contains("data-testid=\"forbidden\""),
                    "{user} {path}: a 403 page, not an empty one"
                );
                assert!(html.contains("needs one of these roles"), "{user} {path}: the page says why");
            }
        }
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_post_to_the_console_is_refused() {
    let app = spawn_app().await;
    let cookie = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let post = |headers: &'static [(&'static str, &'static str)]| {
        let mut req = app.raw_client().post(format!("{}/logout", app.base)).header("cookie", cookie.clone());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        async move { req.send().await.unwrap() }
    };
    let res = post(&[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(res.status().as_u16(), 403);
    assert_eq!(res.json::<serde_json::Value>().await.unwrap()["code"], "cross_site_request");
    let res = post(&[("origin", "http://evil.test")]).await;
    assert_eq!(res.status().as_u16(), 403);
    // The session survived both attempts.
    assert_eq!(app.get_signed_in("/activity", &cookie).await.0, 200);
    // A server function, too.
    let res = app
        .raw_client()
        .post(format!("{}/api/inbox", app.base))
        .header("cookie", &cookie)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
    let res = post(&[("sec-fetch-site", "same-origin")]).await;
    assert_eq!(res.status().as_u16(), 303, "the console's own form signs out");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_carry_a_content_security_policy_with_the_scripts_nonce() {
    let app = spawn_app().await;
    let cookie = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let res = app
            .raw_client()
            .get(format!("{}/activity", app.base))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        let csp = res.headers()["content-security-policy"].to_str().unwrap().to_string();
        let html = res.text().await.unwrap();
        let nonce =
            csp.split("'nonce-").nth(1).and_then(|r| r.split('\'').next()).expect("a nonce").to_string();
        assert!(html.contains(&format!("nonce=\"{nonce}\"")), "the page's scripts carry the header's nonce");
        for directive in
            ["default-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "'wasm-unsafe-eval'"]
        {
            assert!(csp.contains(directive), "{csp} lacks {directive}");
        }
        let script_src = csp.split(';').find(|d| d.trim().starts_with("script-src")).unwrap();
        assert!(!script_src.contains("unsafe-inline"), "inline scripts need the nonce: {csp}");
        nonces.push(nonce);
    }
    assert_ne!(nonces[0], nonces[1], "a fresh nonce per request");
    app.stop().await;
}

/// The inbox's decisions are plain form posts to server functions, checked on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_decides_from_the_inbox_and_the_owner_cannot() {
    use gateway::domain::approvals::{ApprovalQuery, ApprovalStatus};
    let app = spawn_app().await;
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let pending = |app: &common::TestApp| {
        let (gw, t) = (app.gateway.clone(), tenant.clone());
        async move {
            gw.approvals(&t, &ApprovalQuery { status: Some(ApprovalStatus::Pending), ..Default::default() })
                .await
                .unwrap()
        }
    };
    let parked = pending(&app).await.remove(0);
    let decide = |endpoint: &'static str, cookie: String, fields: Vec<(&'static str, String)>| {
        let req = app
            .raw_client()
            .post(format!("{}/api/{endpoint}", app.base))
            .header("cookie", cookie)
            .header("sec-fetch-site", "same-origin")
            .header("referer", format!("{}/", app.base))
            .header("accept", "text/html,application/xhtml+xml")
            .form(&fields);
        async move { req.send().await.unwrap() }
    };

    // The admin owns the demo's procurement bot: the page says so, and the server refuses.
    let admin = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let (_, html) = app.get_signed_in("/", &admin).await;
    assert!(html.contains("You own this agent"), "the owner is told why they cannot decide");
    decide("approve", admin.clone(), vec![("id", parked.id.clone())]).await;
    assert_eq!(pending(&app).await.len(), 1, "the owner's approval did not go through");

    // Finance reads the inbox but cannot decide.
    let finance = app.sign_in("finance", common::ADMIN_PASSWORD).await;
    let (_, html) = app.get_signed_in("/", &finance).await;
    assert!(html.contains("needs the approver or admin role"));
    decide("deny", finance, vec![("id", parked.id.clone()), ("reason", "no".into())]).await;
    assert_eq!(pending(&app).await.len(), 1);

    let approver = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    let (_, html) = app.get_signed_in("/", &approver).await;
    assert!(html.contains("data-testid=\"approve\"") && html.contains("data-testid=\"countdown\""));
    // A denial needs a reason.
    decide("deny", approver.clone(), vec![("id", parked.id.clone()), ("reason", "  ".into())]).await;
    assert_eq!(pending(&app).await.len(), 1, "no reason, no denial");
    let res = decide(
        "approve",
        approver.clone(),
        vec![("id", parked.id.clone()), ("note", "ok for servos".into())],
    )
    .await;
    assert!(res.status().is_redirection(), "a form post goes back to the page: {}", res.status());
    let done = app.gateway.approval(&tenant, &parked.id).await.unwrap();
    assert_eq!(done.status, ApprovalStatus::Approved);
    assert_eq!(done.decided_by.as_deref(), Some("approver"));
    let hold = done.hold_id.clone().unwrap();
    let ledger =
        app.gateway.ledger_entries(&tenant, &done.profile_id, &Default::default(), 1000).await.unwrap();
    assert!(ledger.iter().any(|e| e.hold_id == hold && e.kind == "post"), "the hold posted");
    let (_, html) = app.get_signed_in("/", &approver).await;
    assert!(!html.contains(&parked.id), "the decided item left the inbox");
    // The decided filter, kept in the URL, shows it with who decided and why.
    let (status, html) = app.get_signed_in("/?status=approved", &approver).await;
    assert_eq!(status, 200);
    assert!(html.contains(&parked.id) && html.contains("approved by approver: ok for servos"));
    assert!(!html.contains("data-testid=\"approve\""), "a decided item cannot be decided again");
    assert_eq!(app.get_signed_in("/?status=bogus", &approver).await.0, 200);
    app.stop().await;
}

/// The proposal queue: filters in the URL, a detail page with the trail, and a reviewer's
/// accept and reject (each with a required `because`) growing the trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_accepts_and_rejects_proposals_and_the_trail_grows() {
    use gateway::domain::brain::{ProposalQuery, ProposalStatus};
    let app = spawn_app().await;
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let pending = ProposalQuery { status: Some(ProposalStatus::Pending), ..Default::default() };
    let proposals = app.gateway.proposals(&tenant, &pending).await.unwrap();
    assert_eq!(proposals.len(), 2, "the demo's research run proposed three claims; one is accepted");
    let fact = proposals.iter().find(|p| p.object_type == "fact").unwrap().id.clone();
    let pref = proposals.iter().find(|p| p.object_type == "preference").unwrap().id.clone();
    let reviewer = app.sign_in("reviewer", common::ADMIN_PASSWORD).await;

    let (status, html) = app.get_signed_in("/proposals?object_type=fact", &reviewer).await;
    assert_eq!(status, 200);
    assert!(html.contains(&fact) && !html.contains(&pref), "the filter in the URL narrows the queue");
    let (_, html) = app.get_signed_in("/proposals?status=accepted", &reviewer).await;
    assert!(html.contains("Invoices from acme-supplies are due net 30") && !html.contains(&fact));
    let (_, html) = app.get_signed_in("/proposals?status=rejected", &reviewer).await;
    assert!(html.contains("No proposals match"));
    let (status, html) = app.get_signed_in(&format!("/proposals/{fact}"), &reviewer).await;
    assert_eq!(status, 200);
    assert!(html.contains("data-testid=\"trail\"") && html.contains("data-testid=\"envelope\""));
    assert!(html.contains("demo-run-1"), "the writeback envelope is shown");

    let decide = |id: String, decision: &'static str, because: &'static str| {
        let req = app
            .raw_client()
            .post(format!("{}/api/decide_proposal", app.base))
            .header("cookie", reviewer.clone())
            .header("sec-fetch-site", "same-origin")
            .header("accept", "text/html")
            .header("referer", format!("{}/proposals/{id}", app.base))
            .form(&[("id", id.as_str()), ("decision", decision), ("because", because)]);
        async move { req.send().await.unwrap() }
    };
    decide(fact.clone(), "accept", " ").await;
    assert_eq!(
        app.gateway.proposal(&tenant, &fact).await.unwrap().status,
        ProposalStatus::Pending,
        "no because, no decision"
    );
    let res = decide(fact.clone(), "accept", "confirmed on the supplier's site").await;
    assert!(res.status().is_redirection());
    let p = app.gateway.proposal(&tenant, &fact).await.unwrap();
    assert_eq!(p.status, ProposalStatus::Accepted);
    let last = p.trail.last().unwrap();
    assert_eq!(
        (last.actor.as_str(), last.note.as_deref()),
        ("reviewer", Some("confirmed on the supplier's site"))
    );
    decide(pref.clone(), "reject", "not a company policy").await;
    assert_eq!(app.gateway.proposal(&tenant, &pref).await.unwrap().status, ProposalStatus::Rejected);
    let (_, html) = app.get_signed_in(&format!("/proposals/{fact}"), &reviewer).await;
    assert!(html.contains("confirmed on the supplier") && html.contains("Already accepted"));

    // An approver may not open the queue, nor decide.
    let approver = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    assert_eq!(app.get_signed_in(&format!("/proposals/{fact}"), &approver).await.0, 403);
    app.stop().await;
}

/// Finance: the bar shows posted and pending, moves after an action, and the CSV export has
/// exactly the entries the filtered ledger shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finance_sees_spend_move_and_exports_exactly_the_filtered_ledger() {
    let app = spawn_app().await;
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let bot = app
        .gateway
        .profiles(&tenant)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == "research-crawler")
        .unwrap();
    let finance = app.sign_in("finance", common::ADMIN_PASSWORD).await;
    let posted = |html: &str| -> String {
        let row = html.split("data-profile=\"research-crawler\"").nth(1).unwrap();
        row.split("data-posted=\"").nth(1).unwrap().split('"').next().unwrap().to_string()
    };
    let (status, html) = app.get_signed_in("/spend", &finance).await;
    assert_eq!(status, 200);
    let before = posted(&html);
    let pending = html
        .split("data-profile=\"procurement-bot\"")
        .nth(1)
        .unwrap()
        .split("data-pending=\"")
        .nth(1)
        .unwrap();
    assert!(pending.starts_with("30.00"), "the parked charge is pending: {}", &pending[..20]);

    let (_, key) = app.gateway.issue_key(&tenant, &bot.id, "test").await.unwrap();
    let (status, body) = app.web_read(&bot.id, &key.token, "https://docs.example.test/new").await;
    assert_eq!(status, 200, "{body}");
    let (_, html) = app.get_signed_in("/spend", &finance).await;
    let after = posted(&html);
    assert_ne!(before, after, "the bar moved");
    let diff = after.parse::<f64>().unwrap() - before.parse::<f64>().unwrap();
    assert!((diff - 0.0025).abs() < 1e-9, "posted grew by the read's price: {before} -> {after}");

    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let (status, html) =
        app.get_signed_in(&format!("/spend?profile={}&from={today}", bot.id), &finance).await;
    assert_eq!(status, 200);
    let shown: Vec<String> =
        html.split("data-seq=\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect();
    assert!(shown.len() >= 3, "{shown:?}");
    let csv = app
        .raw_client()
        .get(format!("{}/spend/export.csv?profile={}&from={today}&to=", app.base, bot.id))
        .header("cookie", &finance)
        .send()
        .await
        .unwrap();
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let text = csv.text().await.unwrap();
    let exported: Vec<String> =
        text.lines().skip(1).map(|l| l.split(',').next().unwrap().to_string()).collect();
    assert_eq!(exported, shown, "the CSV is exactly the filtered table");
    // A period with nothing in it exports only the header; a reviewer may not export.
    let empty = app
        .raw_client()
        .get(format!("{}/spend/export.csv?profile={}&from=2999-01-01", app.base, bot.id))
        .header("cookie", &finance)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(empty.lines().count(), 1);
    let reviewer = app.sign_in("reviewer", common::ADMIN_PASSWORD).await;
    let res = app
        .raw_client()
        .get(format!("{}/spend/export.csv?profile={}", app.base, bot.id))
        .header("cookie", &reviewer)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
    let res = app
        .raw_client()
        .get(format!("{}/spend/export.csv?profile={}", app.base, bot.id))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_adds_console_users_and_sets_roles_and_errors_say_why() {
    let app = spawn_app().await;
    let admin = app.sign_in("admin", common::ADMIN_PASSWORD).await;
    let (status, html) = app.get_signed_in("/users", &admin).await;
    assert_eq!(status, 200);
    assert!(html.contains("data-user=\"approver\""));

    let res = app
        .post_form(
            &admin,
            "add_user",
            "/users",
            &[("username", "dana"), ("password", "dana-password-1"), ("approver", "on"), ("finance", "on")],
        )
        .await;
    let loc = res.headers()["location"].to_str().unwrap().to_string();
    assert!(
        !loc.contains("error="),
        "success goes back to the page: {loc} {}",
        res.text().await.unwrap_or_default()
    );
    let dana = app.sign_in("dana", "dana-password-1").await;
    assert_eq!(app.get_signed_in("/spend", &dana).await.0, 200, "finance opens spend");
    assert_eq!(app.get_signed_in("/users", &dana).await.0, 403, "only admins manage users");

    // A weak password comes back with the reason in the page.
    let res = app
        .post_form(
            &admin,
            "add_user",
            "/users",
            &[("username", "eve"), ("password", "short"), ("approver", "on")],
        )
        .await;
    let back = res.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with("/users?error=weak_password"), "{back}");
    let (_, html) = app.get_signed_in(&back, &admin).await;
    assert!(html.contains("data-testid=\"form-error\"") && html.contains("at least 8 characters"));

    // Roles change at once; the last admin cannot lose the role.
    let tenant = app.gateway.tenants().await.unwrap().remove(0).id;
    let users = app.gateway.users(&tenant).await.unwrap();
    let dana_id = users.iter().find(|u| u.username == "dana").unwrap().id.to_string();
    app.post_form(&admin, "set_roles", "/users", &[("user_id", &dana_id), ("reviewer", "on")]).await;
    assert_eq!(app.get_signed_in("/spend", &dana).await.0, 403, "finance was taken away");
    assert_eq!(app.get_signed_in("/proposals", &dana).await.0, 200, "reviewer was given");
    let admin_id = users.iter().find(|u| u.username == "admin").unwrap().id.to_string();
    let res =
        app.post_form(&admin, "set_roles", "/users", &[("user_id", &admin_id), ("finance", "on")]).await;
    assert!(res.headers()["location"].to_str().unwrap().contains("error=last_admin"));
    assert!(
        app.gateway
            .user(&tenant, &users.iter().find(|u| u.username == "admin").unwrap().id)
            .await
            .unwrap()
            .has(gateway::Role::Admin)
    );
    let log = app.gateway.log(&tenant, &Default::default()).await.unwrap();
    let by_admin = gateway::audit::activity::Actor::User("admin".into());
    assert!(log.iter().any(|e| e.verdict == Some(Verdict::UserAdded) && e.actor == by_admin));
    assert!(log.iter().any(|e| e.verdict == Some(Verdict::RolesChanged)));

    // The inbox's refused approval says why, too.
    let parked = app
        .gateway
        .approvals(
            &tenant,
            &gateway::domain::approvals::ApprovalQuery {
                status: Some(gateway::domain::approvals::ApprovalStatus::Pending),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .remove(0);
    let res = app.post_form(&admin, "approve", "/", &[("id", &parked.id)]).await;
    let back = res.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with("/?error="), "{back}");
    let (_, html) = app.get_signed_in(&back, &admin).await;
    assert!(html.contains("data-testid=\"form-error\""));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_feed_filters_by_agent_kind_and_verdict_in_the_url() {
    let app = spawn_app().await;
    let cookie = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    let kinds = |html: &str| -> Vec<String> {
        html.split("data-kind=\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
    };
    let (_, all) = app.get_signed_in("/activity", &cookie).await;
    let every = kinds(&all);
    assert!(every.iter().any(|k| k == "refusal") && every.iter().any(|k| k == "action"), "{every:?}");
    let (status, html) = app.get_signed_in("/activity?kind=refusal", &cookie).await;
    assert_eq!(status, 200);
    let only = kinds(&html);
    assert!(!only.is_empty() && only.iter().all(|k| k == "refusal"), "{only:?}");
    let (_, html) = app.get_signed_in("/activity?verdict=park", &cookie).await;
    assert!(html.split("data-verdict=\"").skip(1).all(|s| s.starts_with("park\"")));
    let (_, html) = app.get_signed_in("/activity?agent=support-mailer", &cookie).await;
    let rows = html.matches("data-kind=\"").count();
    assert!(rows >= 2 && rows < every.len(), "the mailer's entries only: {rows}");
    assert!(html.contains("chain verified"));
    // The filters offer every verdict the log records, and a value outside them says so
    // instead of showing an empty page.
    for verdict in ["signed_in", "saved", "issued", "dead_letter"] {
        assert!(all.contains(&format!("<option value=\"{verdict}\"")), "no {verdict} in the verdict filter");
    }
    let (_, html) = app.get_signed_in("/activity?kind=bogus", &cookie).await;
    assert!(html.contains("bad_filter") && !html.contains("data-kind=\""), "an unknown kind is refused");
    app.stop().await;
}

/// The console's live stream: only for a signed-in session, scoped to its tenant, and each
/// event is the activity row the console shows (agent names resolved), not the raw entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_stream_needs_a_session_and_carries_console_rows() {
    let app = spawn_app().await;
    let res = app.raw_client().get(format!("{}/console/events", app.base)).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 401);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["code"], "signed_out");

    let cookie = app.sign_in("finance", common::ADMIN_PASSWORD).await;
    let mut stream = app
        .raw_client()
        .get(format!("{}/console/events", app.base))
        .header("cookie", &cookie)
        .timeout(std::time::Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");

    // A new profile acts: its name, not its id, is on the row.
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let p = app.gateway.create_profile(&tenant, "stream-reader", None, None, "Default").await.unwrap();
    let (_, key) = app.gateway.issue_key(&tenant, &p.id, "test").await.unwrap();
    let (status, body) = app.web_read(&p.id, &key.token, "https://x.test/console").await;
    assert_eq!(status, 200, "{body}");

    let mut buf = String::new();
    let row = tokio::time::timeout(std::time::Duration::from_secs(15), async {
        loop {
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                let data = frame.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim);
                if let Some(row) = data.and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
                    && row["kind"] == "action"
                {
                    assert!(frame.lines().any(|l| l.starts_with("id:")), "events carry an id to resume from");
                    assert!(
                        !frame.lines().any(|l| l.starts_with("event:")),
                        "console rows are plain messages"
                    );
                    return row;
                }
            }
            let chunk = stream.chunk().await.unwrap().expect("the stream stays open");
            buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("an action row within 15 s");
    assert_eq!(row["agent"], "stream-reader");
    assert_eq!(row["action"], "web.read");
    assert!(
        row.get("tenant_id").is_none() && row.get("hash").is_none(),
        "a console row, not the raw entry: {row}"
    );
    drop(stream);
    app.stop().await;
}

/// Someone who owns a profile above the one that asked may not decide it, and the inbox says so
/// before they try: the page asks the gateway, which checks the whole chain of owners.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_tells_the_owner_of_a_parent_profile_that_they_cannot_decide() {
    let app = spawn_app().await;
    let gw = &app.gateway;
    let tenant = gw.tenants().await.unwrap().remove(0).id;
    let approver = gw.user_named(&tenant, "approver").await.unwrap();
    let kit = r#"{"name":"Parking","primitives":["cards"],"limits":{"approve":{"above":"25"}}}"#;
    gw.save_kit(&tenant, policy::Kit::from_json(kit).unwrap(), None, "test").await.unwrap();
    let lead = gw.create_profile(&tenant, "lead", Some(&approver.id), None, "Parking").await.unwrap();
    let helper = gw.create_profile(&tenant, "helper", None, Some(&lead.id), "Parking").await.unwrap();
    let (_, key) = gw.issue_key(&tenant, &helper.id, "test").await.unwrap();
    let r = app
        .client
        .post(format!("{}/v1/users/{}/cards/charge", app.base, helper.id))
        .bearer_auth(&key.token)
        .json(&serde_json::json!({"amount": "30", "merchant": "acme"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202, "the helper's charge parks");

    let session = app.sign_in("approver", common::ADMIN_PASSWORD).await;
    let (_, html) = app.get_signed_in("/", &session).await;
    assert!(
        html.contains("You own this agent"),
        "the lead's owner is told they cannot decide the helper's call"
    );
    app.stop().await;
}
