//! Starts the real application on port 0 with a fresh SQLite file, as `main` does.
#![allow(dead_code, reason = "each test file uses a different part of this helper")]

use server::config::Config;
use server::startup::Application;
use tokio::sync::oneshot;

pub const ADMIN_PASSWORD: &str = "test-admin-password";
/// The demo tenant's company key in tests.
pub const COMPANY_KEY: &str = "nv_testco01_abcdefghijklmnopqrstuv";
/// The deployment's operator key in tests.
pub const OPERATOR_KEY: &str = "test-operator-key-0123456789";

pub struct TestApp {
    pub base: String,
    /// The running application's own gateway, for setting up state the API cannot create yet.
    pub gateway: gateway::Gateway,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
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
        demo_agent_per_minute: 20,
        site_root: "target/site".into(),
    }
}

pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/naive.db", dir.path().display());
    let mut app = spawn_with(config(&url)).await;
    app._dir = Some(dir);
    app
}

pub async fn spawn_with(config: Config) -> TestApp {
    let app = Application::build(&config).await.expect("application starts");
    let base = format!("http://{}", app.local_addr());
    let gateway = app.gateway().clone();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    TestApp {
        base,
        gateway,
        client: reqwest::Client::builder().timeout(std::time::Duration::from_secs(20)).build().unwrap(),
        stop: Some(tx),
        task: Some(task),
        _dir: None,
    }
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
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
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
