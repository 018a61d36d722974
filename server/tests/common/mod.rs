//! Starts the real application on port 0 with a fresh database, as `main` does.
#![allow(dead_code, reason = "each test file uses a different part of this helper")]

pub mod process;
pub mod token_idp;

use server::config::Config;
use server::startup::Application;
use tokio::sync::oneshot;

pub const ADMIN_PASSWORD: &str = "test-admin-password";
/// The demo tenant's company key in tests.
pub const COMPANY_KEY: &str = "nv_testco01_abcdefghijklmnopqrstuv";
/// The deployment's operator key in tests.
pub const OPERATOR_KEY: &str = "test-operator-key-0123456789";
/// What tests let outbound calls reach: the reference programs on loopback.
pub const TEST_EGRESS_ALLOW: &str = "127.0.0.1/32";
/// The vault's master key in tests: every instance on one database must share it.
pub const MASTER_KEY: &str = "7e57000000000000000000000000000000000000000000000000000000000001";

pub struct TestApp {
    pub base: String,
    /// The database the server runs on, for tests that reach past the API (a fault, a
    /// database written by an older version).
    pub db_url: String,
    /// The running application's own gateway, for setting up state the API cannot create yet.
    pub gateway: gateway::Gateway,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
    _cluster: Option<gateway::testing::Cluster>,
}

pub fn config(db_url: &str) -> Config {
    Config {
        database_url: db_url.to_string(),
        bind: "127.0.0.1:0".parse().unwrap(),
        no_demo: false,
        admin_password: Some(ADMIN_PASSWORD.into()),
        company_key: Some(COMPANY_KEY.into()),
        operator_key: Some(OPERATOR_KEY.into()),
        demo_agent: false,
        demo_upstream: false,
        demo_agent_per_minute: 20,
        secure_cookies: server::config::SecureCookies::Auto,
        approval_ttl_secs: 900,
        hold_lease_secs: gateway::domain::ledger::leases::DEFAULT_LEASE_SECS,
        sandbox_latency_ms: 0,
        drain_secs: 0,
        log_format: server::config::LogFormat::Text,
        metrics: server::config::Switch::On,
        metrics_addr: None,
        outbox_max_attempts: 10,
        outbox_retention_days: 7,
        outbox_dead_retention_days: 30,
        outbox_max_queued: gateway::delivery::outbox::MAX_QUEUED,
        public_url: None,
        outbox_backoff_base_ms: 100,
        outbox_backoff_max_ms: 1_000,
        mcp_allowed_hosts: Vec::new(),
        mcp_allowed_origins: Vec::new(),
        // The reference programs tests start listen on loopback; the egress tests take this away.
        egress_allow: vec![TEST_EGRESS_ALLOW.into()],
        egress_ca: None,
        oauth_access_token_secs: 3600,
        slack_api_url: gateway::delivery::slack::DEFAULT_API_URL.into(),
        master_key: Some(MASTER_KEY.into()),
        master_key_file: None,
        site_root: "target/site".into(),
        // The archive has its own tests (tests/archive.rs), on their own directories.
        archive_url: Some("off".into()),
        archive_every_secs: 60,
        #[cfg(feature = "test-switches")]
        switches: Default::default(),
    }
}

/// The application on a fresh database of the engine under test (a SQLite file, or a new
/// PostgreSQL database with `NAIVE_TEST_ENGINE=postgres`).
pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut app = spawn_with(config(&url)).await;
    app._dir = Some(dir);
    app._cluster = cluster;
    app
}

/// The application on a fresh database, with the tests' settings as `change` leaves them.
pub async fn spawn_configured(change: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut c = config(&url);
    change(&mut c);
    let mut app = spawn_with(c).await;
    app._dir = Some(dir);
    app._cluster = cluster;
    app
}

pub async fn spawn_with(config: Config) -> TestApp {
    let app = Application::build(&config).await.expect("application starts");
    let base = format!("http://{}", app.local_addr());
    let db_url = config.database_url.clone();
    let gateway = app.gateway().clone();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    TestApp {
        base,
        db_url,
        gateway,
        client: server::http_client_builder().timeout(std::time::Duration::from_secs(20)).build().unwrap(),
        stop: Some(tx),
        task: Some(task),
        _dir: None,
        _cluster: None,
    }
}

/// The application on a fresh database, its clock read from a file the test writes
/// (`NAIVE_TEST_CLOCK_FILE`), starting at `at`: the app and that file.
#[cfg(feature = "test-switches")]
pub async fn spawn_clocked(at: &str) -> (TestApp, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, at).unwrap();
    let (url, cluster) = gateway::testing::fresh_url(dir.path()).await;
    let mut app = spawn_with(clocked(&url, &clock)).await;
    app._dir = Some(dir);
    app._cluster = cluster;
    (app, clock)
}

/// The tests' settings on `db_url`, reading "now" from the file `clock`.
#[cfg(feature = "test-switches")]
pub fn clocked(db_url: &str, clock: &std::path::Path) -> Config {
    let mut c = config(db_url);
    c.switches.test_clock_file = Some(clock.to_path_buf());
    c
}

impl TestApp {
    pub async fn get(&self, path: &str) -> (u16, String) {
        let res = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = res.status().as_u16();
        (status, res.text().await.expect("body"))
    }

    /// Signs in through the form, as a browser does; returns the `Cookie` header to send.
    pub async fn sign_in(&self, username: &str, password: &str) -> String {
        let res = self
            .raw_client()
            .post(format!("{}/login", self.base))
            .form(&[("username", username), ("password", password), ("next", "/")])
            .send()
            .await
            .expect("POST /login");
        assert_eq!(res.status().as_u16(), 303, "sign-in redirects");
        let set = res
            .headers()
            .get("set-cookie")
            .unwrap_or_else(|| {
                panic!("no session cookie for {username}; went to {:?}", res.headers().get("location"))
            })
            .to_str()
            .unwrap()
            .to_string();
        set.split(';').next().unwrap().to_string()
    }

    /// A client that shows redirects instead of following them.
    pub fn raw_client(&self) -> reqwest::Client {
        server::http_client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
    }

    /// GET with a session cookie, not following redirects.
    pub async fn get_signed_in(&self, path: &str, cookie: &str) -> (u16, String) {
        let res = self
            .raw_client()
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = res.status().as_u16();
        (status, res.text().await.expect("body"))
    }

    /// An agent reads a page over `/v1` with its key; returns the status and body.
    pub async fn web_read(&self, profile: &gateway::ProfileId, token: &str, url: &str) -> (u16, String) {
        let res = self
            .client
            .post(format!("{}/v1/users/{profile}/web/read", self.base))
            .bearer_auth(token)
            .json(&serde_json::json!({ "url": url }))
            .send()
            .await
            .expect("web.read");
        let status = res.status().as_u16();
        (status, res.text().await.expect("body"))
    }

    /// Sends `method path` with a bearer key (if any), a JSON body (if any) and extra headers;
    /// answers the status, the headers and the JSON body (`Null` when it is not JSON).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<serde_json::Value>,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
        let (status, headers) = (res.status().as_u16(), res.headers().clone());
        (status, headers, res.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// Creates or replaces a kit over `/v1` with the company key.
    pub async fn put_kit(&self, kit: serde_json::Value) {
        let name = kit["name"].as_str().unwrap().to_string();
        let (s, h, _) = self.send("GET", &format!("/v1/kits/{name}"), Some(COMPANY_KEY), None, &[]).await;
        let etag = (s == 200).then(|| h.get("etag").unwrap().to_str().unwrap().to_string());
        let if_match: Vec<(&str, &str)> = etag.iter().map(|e| ("if-match", e.as_str())).collect();
        let (s, _, b) =
            self.send("PUT", &format!("/v1/kits/{name}"), Some(COMPANY_KEY), Some(kit), &if_match).await;
        assert!(s == 200 || s == 201, "saving kit {name}: {s} {b}");
    }

    /// A new agent profile on `kit` (optionally owned by a console user) and a scoped key for
    /// it, made over `/v1` with the company key: (profile id, key id, key).
    pub async fn new_agent(&self, name: &str, kit: &str, owner: Option<&str>) -> (String, String, String) {
        let mut body = serde_json::json!({ "name": name, "kit": kit });
        if let Some(o) = owner {
            body["owner"] = o.into();
        }
        let (s, _, p) = self.send("POST", "/v1/agent-profiles", Some(COMPANY_KEY), Some(body), &[]).await;
        assert_eq!(s, 201, "creating {name}: {p}");
        let id = p["id"].as_str().unwrap().to_string();
        let (s, _, k) =
            self.send("POST", &format!("/v1/agent-profiles/{id}/keys"), Some(COMPANY_KEY), None, &[]).await;
        assert_eq!(s, 201, "a key for {name}: {k}");
        (id, k["key"]["id"].as_str().unwrap().to_string(), k["secret"].as_str().unwrap().to_string())
    }

    /// A console user's personal API token with `roles`, created as that user does it: signed
    /// in, on their account page, where the secret is shown once. Returns (token id, token).
    pub async fn personal_token(&self, username: &str, roles: &[&str]) -> (String, String) {
        let cookie = self.sign_in(username, ADMIN_PASSWORD).await;
        let label = format!("{username} tests");
        let mut form = vec![("label", label.as_str())];
        form.extend(roles.iter().map(|r| (*r, "on")));
        let res = self.post_form(&cookie, "create_token", "/account", &form).await;
        let location = res.headers().get("location").map(|l| l.to_str().unwrap().to_string());
        let location =
            location.unwrap_or_else(|| panic!("creating a token for {username}: {}", res.status()));
        let id = location.split("issued=").nth(1).expect("the page names the new token").to_string();
        let (status, page) = self.get_signed_in(&location, &cookie).await;
        assert_eq!(status, 200, "{page}");
        (id, shown_secret(&page).expect("the new token is shown once"))
    }

    /// A console form posted as the browser posts it: signed in, from `referer` on this site,
    /// wanting the page back (so an error returns to that page with `?error=…`).
    pub async fn post_form(
        &self,
        cookie: &str,
        endpoint: &str,
        referer: &str,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        self.raw_client()
            .post(format!("{}/api/{endpoint}", self.base))
            .header("cookie", cookie)
            .header("sec-fetch-site", "same-origin")
            .header("accept", "text/html")
            .header("referer", format!("{}{referer}", self.base))
            .form(fields)
            .send()
            .await
            .unwrap()
    }

    /// A direct connection to the server's database.
    pub async fn database(&self) -> sqlx::SqlitePool {
        sqlx::SqlitePool::connect(&self.db_url).await.unwrap()
    }

    /// Tells the server to stop, without waiting: it drains as configured.
    pub fn begin_stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Stops the server and waits for it to drain.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap().unwrap();
        }
    }
}

/// The secret a page shows once, if it shows one.
pub fn shown_secret(page: &str) -> Option<String> {
    let start = page.find("data-testid=\"new-secret\"")?;
    let rest = &page[start..];
    let text = &rest[rest.find('>')? + 1..];
    Some(text[..text.find("</code>")?].to_string())
}
