//! Single sign-on against a real OpenID provider (`oidc-provider` from npm, its own process,
//! through its own login and consent pages), on the real server over HTTP: the connection set
//! over `/v1`, sign-in with PKCE, state and nonce, roles and approval groups from the
//! provider's groups at every sign-in, identities bound to (issuer, subject) and never to an
//! email, and the refusals: a replayed or foreign state, a person whose groups give no role,
//! a tenant that requires single sign-on, the provider down.

mod common;

use std::collections::BTreeMap;

use common::process::{Idp, start_idp};
use common::{COMPANY_KEY, TestApp, spawn_app};
use gateway::audit::activity::Verdict;
use serde_json::{Value, json};

/// A browser: no redirects followed by itself, and a cookie jar for every host it visits.
struct Browser {
    client: reqwest::Client,
    jar: BTreeMap<String, String>,
}

impl Browser {
    fn new() -> Browser {
        let client =
            server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Browser { client, jar: BTreeMap::new() }
    }

    fn cookie_header(&self) -> String {
        self.jar.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep(&mut self, res: &reqwest::Response) {
        for v in res.headers().get_all("set-cookie") {
            let pair = v.to_str().unwrap().split(';').next().unwrap();
            let (k, val) = pair.split_once('=').unwrap();
            if val.is_empty() || v.to_str().unwrap().contains("Max-Age=0") {
                self.jar.remove(k);
            } else {
                self.jar.insert(k.to_string(), val.to_string());
            }
        }
    }

    async fn get(&mut self, url: &str) -> (u16, Option<String>, String) {
        let res = self.client.get(url).header("cookie", self.cookie_header()).send().await.unwrap();
        self.answer(res).await
    }

    async fn post(&mut self, url: &str, form: &[(&str, &str)]) -> (u16, Option<String>, String) {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let res = self
            .client
            .post(url)
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        self.answer(res).await
    }

    async fn answer(&mut self, res: reqwest::Response) -> (u16, Option<String>, String) {
        self.keep(&res);
        let status = res.status().as_u16();
        let location = res.headers().get("location").map(|l| l.to_str().unwrap().to_string());
        (status, location, res.text().await.unwrap())
    }
}

fn by_idp(actor: &gateway::audit::activity::Actor) -> bool {
    matches!(actor, gateway::audit::activity::Actor::User(n) if n.starts_with("sso:"))
}

fn absolute(base: &str, location: &str) -> String {
    url::Url::parse(base).unwrap().join(location).unwrap().to_string()
}

fn form_action(page: &str) -> Option<String> {
    let at = page.find("action=\"")? + "action=\"".len();
    Some(page[at..].split('"').next()?.to_string())
}

/// The hidden inputs of the provider's form, as (name, value).
fn hidden_inputs(page: &str) -> Vec<(String, String)> {
    let attr = |tag: &str, name: &str| {
        let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
        Some(tag[at..].split('"').next()?.to_string())
    };
    page.split("<input")
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
        .filter(|t| t.contains("type=\"hidden\""))
        .filter_map(|t| Some((attr(t, "name")?, attr(t, "value").unwrap_or_default())))
        .collect()
}

/// Starts a sign-in at `start` and goes through the provider's login (as `login`) and consent
/// pages: the callback URL the provider sends the browser back to, not yet opened.
async fn through_provider(b: &mut Browser, start: &str, login: &str) -> String {
    let (status, mut location, _) = b.get(start).await;
    assert_eq!(status, 303, "the sign-in starts with a redirect to the provider");
    let mut current = start.to_string();
    for _ in 0..20 {
        let next = absolute(&current, location.as_deref().expect("a redirect"));
        if next.contains("/login/sso/callback") {
            return next;
        }
        let (status, loc, page) = b.get(&next).await;
        current = next;
        location = loc;
        if status == 200 {
            let action = absolute(&current, &form_action(&page).expect("the provider's page has a form"));
            let mut form = hidden_inputs(&page);
            if page.contains("name=\"login\"") {
                form.extend([("login".to_string(), login.to_string()), ("password".into(), "any".into())]);
            }
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (_, loc, body) = b.post(&action, &form).await;
            assert!(loc.is_some(), "the provider's form answers with a redirect: {body}");
            current = action;
            location = loc;
        }
    }
    panic!("the provider never sent the browser back");
}

/// Signs `login` in through the provider: the callback's status, its page, and the console
/// session cookie (`name=value`) if one was set.
async fn sign_in(app: &TestApp, b: &mut Browser, login: &str) -> (u16, String, Option<String>) {
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let start = format!("{}/login/sso/{tenant}?next=/spend", app.base);
    let callback = through_provider(b, &start, login).await;
    let res = b.client.get(&callback).header("cookie", b.cookie_header()).send().await.unwrap();
    b.keep(&res);
    let status = res.status().as_u16();
    let session = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .find(|c| c.starts_with("naive_session=") && c.len() > "naive_session=".len());
    (status, res.text().await.unwrap(), session)
}

async fn v1(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req =
        app.client.request(method.parse().unwrap(), format!("{}{path}", app.base)).bearer_auth(COMPANY_KEY);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn settings(idp: &Idp) -> Value {
    json!({
        "issuer": idp.issuer,
        "client_id": "naive",
        "client_secret": "naive-sso-secret",
        "scopes": ["email", "profile", "groups"],
        "mapping": [
            { "group": "finance-team", "roles": ["finance", "approver"], "approval_groups": ["finance"] },
            { "group": "reviewers", "roles": ["reviewer"] }
        ],
        "create_users": true,
        "domains": ["example.com"]
    })
}

async fn app_with_idp(groups_in: &str) -> (TestApp, Idp) {
    let app = spawn_app().await;
    let idp = start_idp(&format!("{}/login/sso/callback", app.base), groups_in);
    let (status, _) = v1(&app, "POST", "/v1/groups", Some(json!({ "name": "finance" }))).await;
    assert_eq!(status, 201);
    let (status, conn) = v1(&app, "PUT", "/v1/sso/oidc", Some(settings(&idp))).await;
    assert_eq!(status, 200, "{conn}");
    (app, idp)
}

async fn user(app: &TestApp, username: &str) -> gateway::ConsoleUser {
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    app.gateway.user_named(&tenant, username).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_through_the_provider_with_the_roles_their_groups_map_to() {
    let (app, idp) = app_with_idp("id_token").await;
    // The connection reads back without its secret, which is in the vault.
    let (status, conn) = v1(&app, "GET", "/v1/sso/oidc", None).await;
    assert_eq!(status, 200);
    assert!(!conn.to_string().contains("naive-sso-secret"), "{conn}");
    assert_eq!(conn["client_secret_name"], "sso-oidc-client-secret");
    let (status, probe) = v1(&app, "POST", "/v1/sso/oidc/test", None).await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["redirect_uri"], format!("{}/login/sso/callback", app.base));

    let mut b = Browser::new();
    let (status, page, session) = sign_in(&app, &mut b, "alice").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("url=/spend"), "the page opens where the person was going: {page}");
    let session = session.expect("a console session");
    let (status, html) = app.get_signed_in("/spend", &session).await;
    assert_eq!(status, 200);
    assert!(html.contains("data-testid=\"sign-out\""));
    // alice@example.com: username from the email, roles and approval group from the groups.
    let alice = user(&app, "alice@example.com").await;
    assert_eq!(alice.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(), ["approver", "finance"]);
    let tenant = alice.tenant_id.clone();
    let finance = app.gateway.group(&tenant, "finance").await.unwrap();
    assert!(finance.members.iter().any(|m| m.user_id == alice.id), "{finance:?}");
    // Her password is no password: she signs in only through the provider.
    assert!(app.gateway.verify_login("alice@example.com", "!sso").await.unwrap().is_none());
    let log = app.gateway.log(&tenant, &Default::default()).await.unwrap();
    assert!(log.iter().any(|e| e.verdict == Some(Verdict::UserAdded) && by_idp(&e.actor)));
    assert!(
        log.iter().any(|e| e.verdict == Some(Verdict::SignedIn) && e.detail["sso"] == idp.issuer.as_str())
    );

    // The second sign-in finds her by (issuer, subject) and does not fetch the keys again.
    let fetches = app.gateway.oidc_key_fetches();
    let before = app.gateway.users(&tenant).await.unwrap().len();
    let (status, _, session2) = sign_in(&app, &mut Browser::new(), "alice").await;
    assert_eq!((status, session2.is_some()), (200, true));
    assert_eq!(app.gateway.oidc_key_fetches(), fetches, "the keys are cached");
    assert_eq!(app.gateway.users(&tenant).await.unwrap().len(), before, "alice, once");

    // The email's domain leads to the tenant's provider from the sign-in page.
    let (status, _, page) = b.get(&format!("{}/login/sso?email=someone@Example.com", app.base)).await;
    assert_eq!(status, 200, "a page that opens the provider, which a form may not redirect to");
    assert!(page.contains(&format!("url={}/auth?", idp.issuer)), "{page}");
    let (_, location, _) = b.get(&format!("{}/login/sso?email=someone@elsewhere.test", app.base)).await;
    assert_eq!(location.as_deref(), Some("/login?error=sso_unknown_domain"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_follow_the_groups_at_every_sign_in_and_groups_may_come_from_userinfo() {
    let (app, idp) = app_with_idp("userinfo").await;
    let (status, page, _) = sign_in(&app, &mut Browser::new(), "alice").await;
    assert_eq!(status, 200, "groups read from userinfo: {page}");
    let alice = user(&app, "alice@example.com").await;
    assert_eq!(alice.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(), ["approver", "finance"]);

    // The admin maps finance-team to reviewer only: her next sign-in takes the rest away.
    let mut s = settings(&idp);
    s["mapping"][0] = json!({ "group": "finance-team", "roles": ["reviewer"] });
    s["mapping"][1] = json!({ "group": "unused", "approval_groups": ["finance"] });
    s.as_object_mut().unwrap().remove("client_secret");
    let (status, body) = v1(&app, "PUT", "/v1/sso/oidc", Some(s)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = sign_in(&app, &mut Browser::new(), "alice").await;
    assert_eq!(status, 200);
    let alice = user(&app, "alice@example.com").await;
    assert_eq!(alice.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(), ["reviewer"]);
    let finance = app.gateway.group(&alice.tenant_id, "finance").await.unwrap();
    assert!(finance.members.iter().all(|m| m.user_id != alice.id), "out of the approval group");
    let log = app.gateway.log(&alice.tenant_id, &Default::default()).await.unwrap();
    assert!(log.iter().any(|e| e.verdict == Some(Verdict::RolesChanged) && by_idp(&e.actor)));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_that_matches_a_local_admin_does_not_make_that_admin() {
    let (app, _idp) = app_with_idp("id_token").await;
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let admin = app
        .gateway
        .create_user(&tenant, "admin@example.com", "a-long-password", &[gateway::domain::users::Role::Admin])
        .await
        .unwrap();
    // mallory's email at the provider is admin@example.com.
    let (status, page, session) = sign_in(&app, &mut Browser::new(), "mallory").await;
    assert_eq!(status, 200, "{page}");
    assert!(session.is_some());
    let users = app.gateway.users(&tenant).await.unwrap();
    let mallory = users.iter().find(|u| u.username.starts_with("sso-")).expect("a user of her own");
    assert_eq!(mallory.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(), ["reviewer"]);
    assert_eq!(user(&app, "admin@example.com").await.roles, admin.roles, "the admin is untouched");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_pages_and_write_nothing() {
    let (app, idp) = app_with_idp("id_token").await;
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    let before = app.gateway.users(&tenant).await.unwrap().len();
    // Groups that give no role: refused, no user.
    let (status, page, session) = sign_in(&app, &mut Browser::new(), "nogroup").await;
    assert_eq!((status, session), (403, None));
    assert!(page.contains("give no console role"), "{page}");
    assert_eq!(app.gateway.users(&tenant).await.unwrap().len(), before);

    // A callback opened in another browser: refused, and the state is spent for the first too.
    let start = format!("{}/login/sso/{tenant}", app.base);
    let mut first = Browser::new();
    let callback = through_provider(&mut first, &start, "bob").await;
    let (status, _, page) = Browser::new().get(&callback).await;
    assert_eq!(status, 403);
    assert!(page.contains("another browser"), "{page}");
    let (status, _, page) = first.get(&callback).await;
    assert_eq!(status, 403, "a state is taken once");
    assert!(page.contains("used already"), "{page}");
    // A replayed callback after a good sign-in: refused.
    let mut b = Browser::new();
    let callback = through_provider(&mut b, &start, "bob").await;
    assert_eq!(b.get(&callback).await.0, 200);
    assert_eq!(b.get(&callback).await.0, 403, "the same state and code again");
    assert_eq!(app.gateway.users(&tenant).await.unwrap().len(), before + 1, "bob, once");

    // Without creating users, a person not yet known is refused.
    let mut s = settings(&idp);
    s["create_users"] = json!(false);
    assert_eq!(v1(&app, "PUT", "/v1/sso/oidc", Some(s)).await.0, 200);
    let (status, page, _) = sign_in(&app, &mut Browser::new(), "alice").await;
    assert_eq!(status, 403);
    assert!(page.contains("no console user is bound"), "{page}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_that_requires_single_sign_on_keeps_its_break_glass_admin() {
    let (app, mut idp) = app_with_idp("id_token").await;
    let tenant = app.gateway.tenants().await.unwrap()[0].id.clone();
    app.gateway
        .create_user(&tenant, "carol", "carols-password", &[gateway::domain::users::Role::Approver])
        .await
        .unwrap();
    let mut s = settings(&idp);
    s["required"] = json!(true);
    let (status, body) = v1(&app, "PUT", "/v1/sso/oidc", Some(s.clone())).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("break_glass_needed")));
    s["break_glass"] = json!("carol");
    let (status, body) = v1(&app, "PUT", "/v1/sso/oidc", Some(s.clone())).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_break_glass")), "not an admin");
    s["break_glass"] = json!("admin");
    assert_eq!(v1(&app, "PUT", "/v1/sso/oidc", Some(s)).await.0, 200);

    let login = |user: &'static str, pw: &'static str| {
        let (client, base) = (app.raw_client(), app.base.clone());
        async move {
            let res = client
                .post(format!("{base}/login"))
                .form(&[("username", user), ("password", pw)])
                .send()
                .await
                .unwrap();
            res.headers()["location"].to_str().unwrap().to_string()
        }
    };
    assert!(login("carol", "carols-password").await.starts_with("/login?error=sso_required"));
    assert!(!login("admin", common::ADMIN_PASSWORD).await.starts_with("/login"), "break-glass signs in");
    let log = app.gateway.log(&tenant, &Default::default()).await.unwrap();
    let refused = log.iter().find(|e| e.verdict == Some(gateway::audit::activity::Verdict::SignInFailed));
    let detail = &refused.expect("the refused password sign-in is logged").detail;
    assert_eq!((detail["user"].as_str(), detail["reason"].as_str()), (Some("carol"), Some("sso_required")));

    // The provider down: a clear page, and the break-glass admin still signs in.
    idp.kill();
    app.gateway.forget_oidc_provider(&idp.issuer);
    let (status, _, page) = Browser::new().get(&format!("{}/login/sso/{tenant}", app.base)).await;
    assert_eq!(status, 502);
    assert!(page.contains("discovery at") && page.contains("Back to sign-in"), "{page}");
    assert!(!login("admin", common::ADMIN_PASSWORD).await.starts_with("/login"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_with_codes() {
    let app = spawn_app().await;
    let cases = [
        (json!({ "issuer": "ftp://x", "client_id": "a", "client_secret": "s" }), 400, "invalid_issuer"),
        (json!({ "issuer": "https://idp.example.com", "client_id": "a" }), 400, "client_secret_needed"),
        (
            json!({ "issuer": "https://idp.example.com", "client_id": "a", "client_secret": "s",
                    "mapping": [{ "group": "g", "approval_groups": ["nope"] }] }),
            400,
            "unknown_group",
        ),
        (
            json!({ "issuer": "https://idp.example.com", "client_id": "a", "client_secret": "s", "domains": ["not a domain"] }),
            400,
            "invalid_domains",
        ),
        (json!({ "issuer": "https://idp.example.com", "client_id": "a", "extra": 1 }), 400, "invalid_json"),
    ];
    for (body, status, code) in cases {
        let (s, b) = v1(&app, "PUT", "/v1/sso/oidc", Some(body.clone())).await;
        assert_eq!((s, b["code"].as_str()), (status, Some(code)), "{body}");
    }
    assert_eq!(v1(&app, "GET", "/v1/sso/oidc", None).await.0, 404, "nothing stored");
    app.stop().await;
}
